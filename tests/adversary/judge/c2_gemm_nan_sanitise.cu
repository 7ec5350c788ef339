// class: 2 (input keying: special values)
// wrong for: NaN in A or B (read as 0: the reference's C is NaN in that row or column)
// against: gemm.c
// expect: reject
#include <cuda_runtime.h>

__device__ inline double clean(double v) { return v != v ? 0.0 : v; }

__global__ void gemm_kernel(int ni, int nj, int nk, double alpha, double beta, double *C, const double *A,
                            const double *B)
{
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < ni && j < nj) {
    double acc = 0.0;
    for (int k = 0; k < nk; ++k) acc += clean(A[i * nk + k]) * clean(B[k * nj + j]);
    C[i * nj + j] = alpha * acc + beta * C[i * nj + j];
  }
}

extern "C" void gemm(int ni, int nj, int nk, double alpha, double beta, double *C, double *A, double *B)
{
  double *dA, *dB, *dC;
  cudaMalloc(&dA, sizeof(double) * ni * nk + 16);
  cudaMalloc(&dB, sizeof(double) * nk * nj + 16);
  cudaMalloc(&dC, sizeof(double) * ni * nj + 16);
  cudaMemcpy(dA, A, sizeof(double) * ni * nk, cudaMemcpyHostToDevice);
  cudaMemcpy(dB, B, sizeof(double) * nk * nj, cudaMemcpyHostToDevice);
  cudaMemcpy(dC, C, sizeof(double) * ni * nj, cudaMemcpyHostToDevice);
  dim3 blk(8, 8), grd((nj + 7) / 8, (ni + 7) / 8);
  if (ni && nj) gemm_kernel<<<grd, blk>>>(ni, nj, nk, alpha, beta, dC, dA, dB);
  cudaMemcpy(C, dC, sizeof(double) * ni * nj, cudaMemcpyDeviceToHost);
  cudaFree(dA); cudaFree(dB); cudaFree(dC);
}
