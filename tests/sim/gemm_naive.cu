// Naive SGEMM on a 2-D grid: C = alpha * A(MxK) * B(KxN) + beta * C.
#include "common.cuh"

__global__ void gemm_naive_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                                  const float* __restrict__ B, float beta, float* __restrict__ C) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = alpha * acc + beta * C[row * N + col];
  }
}

extern "C" int gemm_naive(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C) {
  float *dA, *dB, *dC;
  CHECK(cudaMalloc(&dA, sizeof(float) * M * K));
  CHECK(cudaMalloc(&dB, sizeof(float) * K * N));
  CHECK(cudaMalloc(&dC, sizeof(float) * M * N));
  CHECK(cudaMemcpy(dA, A, sizeof(float) * M * K, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dB, B, sizeof(float) * K * N, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dC, C, sizeof(float) * M * N, cudaMemcpyHostToDevice));
  dim3 block(16, 16);
  dim3 grid((N + block.x - 1) / block.x, (M + block.y - 1) / block.y);
  gemm_naive_kernel<<<grid, block>>>(M, N, K, alpha, dA, dB, beta, dC);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(C, dC, sizeof(float) * M * N, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dA));
  CHECK(cudaFree(dB));
  CHECK(cudaFree(dC));
  return 0;
}
