// class: control (k split across two streams with events, partial products combined: a legal reassociation)
// wrong for: nothing (honest control)
// against: gemm.c
// expect: accept
#include <cuda_runtime.h>

__global__ void partial(int ni, int nj, int nk, int k0, int k1, const double *A, const double *B, double *P)
{
  int i = blockIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= ni || j >= nj) return;
  double s = 0.0;
  for (int k = k1 - 1; k >= k0; --k) s += A[i * nk + k] * B[k * nj + j];  // backwards
  P[i * nj + j] = s;
}

__global__ void combine(int n, double alpha, double beta, const double *P0, const double *P1, double *C)
{
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) C[t] = alpha * (P1[t] + P0[t]) + beta * C[t];
}

extern "C" void gemm(int ni, int nj, int nk, double alpha, double beta, double *C, double *A, double *B)
{
  const int n = ni * nj, half = nk / 2;
  double *dA, *dB, *dC, *P0, *P1;  // one allocation per stream's partials
  cudaMalloc(&dA, sizeof(double) * ni * nk + 8);
  cudaMalloc(&dB, sizeof(double) * nk * nj + 8);
  cudaMalloc(&dC, sizeof(double) * n + 8);
  cudaMalloc(&P0, sizeof(double) * n + 8);
  cudaMalloc(&P1, sizeof(double) * n + 8);
  cudaMemcpy(dA, A, sizeof(double) * ni * nk, cudaMemcpyHostToDevice);
  cudaMemcpy(dB, B, sizeof(double) * nk * nj, cudaMemcpyHostToDevice);
  cudaMemcpy(dC, C, sizeof(double) * n, cudaMemcpyHostToDevice);
  cudaStream_t s0, s1;
  cudaEvent_t done1;
  cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
  cudaEventCreateWithFlags(&done1, cudaEventDisableTiming);
  if (n > 0) {
    dim3 g((nj + 31) / 32, ni);
    partial<<<g, 32, 0, s0>>>(ni, nj, nk, 0, half, dA, dB, P0);
    partial<<<g, 32, 0, s1>>>(ni, nj, nk, half, nk, dA, dB, P1);
    cudaEventRecord(done1, s1);
    cudaStreamWaitEvent(s0, done1, 0);
    combine<<<(n + 127) / 128, 128, 0, s0>>>(n, alpha, beta, P0, P1, dC);
  }
  cudaStreamSynchronize(s0);
  cudaMemcpy(C, dC, sizeof(double) * n, cudaMemcpyDeviceToHost);
  cudaEventDestroy(done1);
  cudaStreamDestroy(s0);
  cudaStreamDestroy(s1);
  cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(P0); cudaFree(P1);
}
