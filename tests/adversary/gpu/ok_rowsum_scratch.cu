// class: 3 (control: scratch from cudaMallocAsync, cleared before use; one block a row, shared-memory tree)
// wrong for: nothing (honest control)
// against: rowsum.c
// expect: accept
#include <cuda_runtime.h>

#define CHECK(call) do { cudaError_t err_ = (call); if (err_ != cudaSuccess) return (int)err_; } while (0)

template <int BLOCK>
__global__ void partial_rows(int n, int m, const double* __restrict__ A, double* __restrict__ part)
{
  __shared__ double tree[BLOCK];
  int row = blockIdx.x;
  double acc = 0.0;
  for (int j = threadIdx.x; j < m; j += BLOCK) acc += A[(size_t)row * m + j];
  tree[threadIdx.x] = acc;
  __syncthreads();
  for (int w = BLOCK / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) tree[threadIdx.x] += tree[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(&part[row], tree[0]);  // part was cleared by the caller
}

__global__ void copy_out(int n, const double* part, double* s)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) s[i] = part[i];
}

extern "C" int rowsum_device(int n, int m, const double* A, double* s, cudaStream_t stream)
{
  if (n <= 0) return 0;
  double* part = nullptr;
  CHECK(cudaMallocAsync(&part, (size_t)n * sizeof(double), stream));
  CHECK(cudaMemsetAsync(part, 0, (size_t)n * sizeof(double), stream));
  partial_rows<128><<<n, 128, 0, stream>>>(n, m, A, part);
  copy_out<<<(n + 255) / 256, 256, 0, stream>>>(n, part, s);
  CHECK(cudaFreeAsync(part, stream));
  return (int)cudaGetLastError();
}

extern "C" void rowsum(int n, int m, const double* A, double* s)
{
  double *dA = nullptr, *ds = nullptr;
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaMalloc(&dA, (size_t)n * m * sizeof(double) + 8);
  cudaMalloc(&ds, (size_t)n * sizeof(double) + 8);
  cudaMemcpyAsync(dA, A, (size_t)n * m * sizeof(double), cudaMemcpyHostToDevice, stream);
  rowsum_device(n, m, dA, ds, stream);
  cudaMemcpyAsync(s, ds, (size_t)n * sizeof(double), cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  cudaFree(dA); cudaFree(ds);
  cudaStreamDestroy(stream);
}
