// Work on two streams: what the stream-order check must accept (waits through
// events, host synchronisation, readers on two streams) and what it must report
// (a kernel, a copy or a free that is not ordered after a write it depends on).
#include "common.cuh"

__global__ void scale_kernel(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i];
}

// The same with a non-const input pointer it only reads (as much hand-written CUDA declares it).
__global__ void scale_nonconst(float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i];
}

// Copies `host` in on stream a, doubles it on stream b into a second buffer, and copies that back
// on stream a.  which: 0 ordered by events, 1 the kernel does not wait for the copy-in, 2 the
// copy-out does not wait for the kernel, 3 the input is freed on stream a while the kernel on b
// may still read it, 4 ordered by host synchronisation instead of events, 5 two kernels on a and b
// read the same input (no race) and write different outputs, 6 the same through non-const pointers
// (only a launch that changes an allocation writes it), 7 the kernel on b through a non-const
// pointer without waiting for the copy-in (still a race: it reads what the copy writes), 8 the
// host reads the result after synchronising b, which waited for the copy on a.
extern "C" int two_streams(float* host, int n, int which) {
  cudaStream_t a, b;
  cudaEvent_t in_done, kernel_done;
  CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&in_done, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&kernel_done, cudaEventDisableTiming));
  float *pinned, *in, *out, *out2 = nullptr;
  const size_t bytes = n * sizeof(float);
  CHECK(cudaMallocHost(&pinned, bytes));
  memcpy(pinned, host, bytes);
  CHECK(cudaMallocAsync(&in, bytes, a));
  CHECK(cudaMallocAsync(&out, bytes, a));
  CHECK(cudaMemcpyAsync(in, pinned, bytes, cudaMemcpyHostToDevice, a));
  CHECK(cudaEventRecord(in_done, a));
  if (which == 4) {
    CHECK(cudaStreamSynchronize(a));
  } else if (which != 1 && which != 7) {
    CHECK(cudaStreamWaitEvent(b, in_done, 0));
  }
  if (which >= 6) {
    scale_nonconst<<<(n + 31) / 32, 32, 0, b>>>(in, out, n);
  } else {
    scale_kernel<<<(n + 31) / 32, 32, 0, b>>>(in, out, n);
  }
  CHECK(cudaGetLastError());
  if (which == 5 || which == 6) {
    CHECK(cudaMallocAsync(&out2, bytes, a));
    if (which == 5) {
      scale_kernel<<<(n + 31) / 32, 32, 0, a>>>(in, out2, n);
    } else {
      scale_nonconst<<<(n + 31) / 32, 32, 0, a>>>(in, out2, n);
    }
    CHECK(cudaGetLastError());
  }
  CHECK(cudaEventRecord(kernel_done, b));
  if (which == 3) {
    CHECK(cudaFreeAsync(in, a));
    in = nullptr;
  }
  if (which == 4) {
    CHECK(cudaStreamSynchronize(b));
  } else if (which != 2) {
    CHECK(cudaStreamWaitEvent(a, kernel_done, 0));
  }
  CHECK(cudaMemcpyAsync(pinned, out, bytes, cudaMemcpyDeviceToHost, a));
  if (which == 8) {  // the host waits for b, which waited for the copy on a: the bytes are there
    CHECK(cudaEventRecord(in_done, a));
    CHECK(cudaStreamWaitEvent(b, in_done, 0));
    CHECK(cudaStreamSynchronize(b));
    memcpy(host, pinned, bytes);
  }
  CHECK(cudaStreamSynchronize(a));
  if (which != 8) memcpy(host, pinned, bytes);
  CHECK(cudaFreeAsync(out, a));
  if (in) CHECK(cudaFreeAsync(in, a));
  if (out2) CHECK(cudaFreeAsync(out2, a));
  CHECK(cudaStreamSynchronize(a));
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaEventDestroy(in_done));
  CHECK(cudaEventDestroy(kernel_done));
  CHECK(cudaStreamDestroy(a));
  CHECK(cudaStreamDestroy(b));
  return 0;
}
