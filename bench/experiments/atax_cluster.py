"""atax with thread-block clusters: candidates for bench/gpu.py (an experiment; run 62 on an H100: correct, all slower).

    python bench/gpu.py --generate bench/cu-atax --kernels atax
    python bench/experiments/atax_cluster.py bench/cu-atax/atax.cu bench/cu-atax
    python3 bench/gpu.py --cu-dir bench/cu-atax --kernels atax --skip-naive --budget 150   # on the GPU

writes ``atax.cand-<label>.cu`` beside the generated ``atax.cu``: the same file with the chain launch
(``kernel_atax_kernel1``) preceded by a cluster form, taken when a thread's share of a row fits its
registers (else the committed chain kernel runs, as before).

The hypothesis (docs/decisions.md, "atax as one chain launch"): the committed kernel reaches 55.9% of
the copy bandwidth at 12288 x 12289 because the ``Y`` half of each row is a phase with no loads in
flight, and every way of overlapping it tried so far needed more registers than two 1024-thread
blocks an SM allow.  Here the row is split over the ``C`` blocks of a cluster (Hopper's distributed
shared memory): block ``rank`` owns ``ceil(n / C)`` columns, each thread ``K`` of them, so ``x`` and
the ``Y`` partials stay in registers for the whole band of rows, each element of ``A`` is loaded once
into a register and used for both halves, and a row's sum crosses the cluster through one
``cluster.sync()`` (``R`` rows a barrier; ``PF`` loads the next ``R`` rows before the barrier).
Per-cluster ``Y`` partials go to the scratch and the existing fold kernel adds them to ``y``.
Every block sums the ``C`` block sums in rank order, so all of them use the same ``tmp[i]``.

The simulator cannot run it (``__shared__`` arrays are per kernel there, not per block, and blocks
run one at a time), so the GPU checks of ``bench/gpu.py`` (EX, off1, off2, BIG) are its only test.
"""

from __future__ import annotations

import argparse
from pathlib import Path

KERNEL = r'''
#include <cooperative_groups.h>
namespace atax_cg = cooperative_groups;

// Cluster form: the cluster's C blocks share a band of rows; block `rank` owns columns
// [rank*W, rank*W+W); a thread owns K of them (stride T), x and its Y partials in registers.
// R rows a step.  A row's sum: warp shuffles, the block's warps in shared memory, then the C
// block sums read through distributed shared memory in rank order (every block gets the same total).
template <int K, int T, int R, int PF>
__global__ void __launch_bounds__(T) atax_cluster_kernel(int m, int n, const double *__restrict__ A, const double *__restrict__ x, double *__restrict__ tmp, double *__restrict__ y_part, long long band, long long W)
{
  atax_cg::cluster_group cl = atax_cg::this_cluster();
  const int rank = (int)cl.block_rank();
  const int C = (int)cl.num_blocks();
  const long long cid = blockIdx.x / C;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  __shared__ double wsum[R][T / 32];
  __shared__ double slot[2][R];
  const long long c0 = (long long)rank * W;
  const long long c1 = c0 + W < n ? c0 + W : n;
  double xr[K], yr[K], a[R][K], an[PF ? R : 1][K];
  #pragma unroll
  for (int k = 0; k < K; ++k) {
    const long long j = c0 + tid + (long long)k * T;
    xr[k] = j < c1 ? x[j] : 0.0;
    yr[k] = 0.0;
  }
  const long long r_lo = cid * band;
  const long long r_hi = r_lo + band < m ? r_lo + band : m;
  #pragma unroll
  for (int q = 0; q < R; ++q) {
    #pragma unroll
    for (int k = 0; k < K; ++k) {
      const long long j = c0 + tid + (long long)k * T;
      a[q][k] = (j < c1 && r_lo + q < r_hi) ? A[(r_lo + q) * n + j] : 0.0;
    }
  }
  int par = 0;
  for (long long r = r_lo; r < r_hi; r += R, par ^= 1) {
    if (PF) {
      #pragma unroll
      for (int q = 0; q < R; ++q) {
        #pragma unroll
        for (int k = 0; k < K; ++k) {
          const long long j = c0 + tid + (long long)k * T;
          an[PF ? q : 0][k] = (j < c1 && r + R + q < r_hi) ? A[(r + R + q) * n + j] : 0.0;
        }
      }
    }
    #pragma unroll
    for (int q = 0; q < R; ++q) {
      double s = 0.0;
      #pragma unroll
      for (int k = 0; k < K; ++k) s += a[q][k] * xr[k];
      for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
      if (lane == 0) wsum[q][warp] = s;
    }
    __syncthreads();
    if (tid < R) {
      double b = wsum[tid][0];
      for (int w = 1; w < T / 32; ++w) b += wsum[tid][w];
      slot[par][tid] = b;
    }
    cl.sync();
    #pragma unroll
    for (int q = 0; q < R; ++q) {
      double t = 0.0;
      for (int c = 0; c < C; ++c) t += cl.map_shared_rank(&slot[par][0], c)[q];
      if (rank == 0 && tid == 0 && r + q < r_hi) tmp[r + q] = t;
      #pragma unroll
      for (int k = 0; k < K; ++k) yr[k] += a[q][k] * t;
    }
    #pragma unroll
    for (int q = 0; q < R; ++q) {
      #pragma unroll
      for (int k = 0; k < K; ++k) {
        if (PF) {
          a[q][k] = an[PF ? q : 0][k];
        } else {
          const long long j = c0 + tid + (long long)k * T;
          a[q][k] = (j < c1 && r + R + q < r_hi) ? A[(r + R + q) * n + j] : 0.0;
        }
      }
    }
  }
  #pragma unroll
  for (int k = 0; k < K; ++k) {
    const long long j = c0 + tid + (long long)k * T;
    if (j < c1) y_part[cid * n + j] = yr[k];
  }
  cl.sync();  // no block leaves while another may still read its slots
}
'''

LAUNCH = r'''
    if (m > 0 && n > 0) {
      const int C = ATAX_C, T = ATAX_T, K = ATAX_K;
      const long long W = ((long long)n + C - 1) / C;
      if ((W + T - 1) / T <= K) {
        auto kern = atax_cluster_kernel<ATAX_K, ATAX_T, ATAX_R, ATAX_PF>;
        if (C > 8) {
          err = cudaFuncSetAttribute(kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
          if (err != cudaSuccess) break;
        }
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = C;
        attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        cfg.blockDim = dim3(T, 1, 1);
        cfg.dynamicSmemBytes = 0;
        cfg.stream = stream;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        cfg.gridDim = dim3(C * 1024, 1, 1);
        int clusters = 0;
        err = cudaOccupancyMaxActiveClusters(&clusters, kern, &cfg);
        if (err != cudaSuccess) break;
        if (clusters < 1) clusters = 1;
        clusters *= ATAX_WAVES;
        if (clusters > m) clusters = m;
        const long long band = ((long long)m + clusters - 1) / clusters;
        clusters = (int)(((long long)m + band - 1) / band);
        cfg.gridDim = dim3((unsigned)(C * clusters), 1, 1);
        err = transpile_scratch((void **)&y_part, (size_t)clusters * (size_t)n * sizeof(double), stream);
        if (err != cudaSuccess) break;
        err = cudaLaunchKernelEx(&cfg, kern, m, n, A, x, tmp, y_part, band, W);
        if (err != cudaSuccess) break;
        kernel_atax_kernel1_fold<<<dim3(transpile_grid(n, 256u, 2147483647u), 1u, 1u), dim3(256u, 1u, 1u), 0, stream>>>(m, n, A, x, y, tmp, y_part, (long long)n, (long long)clusters);
        err = cudaGetLastError();
        break;
      }
    }
'''
ANCHOR_KERNEL = "// Runs kernel_atax on device arrays, asynchronously on `stream`; returns the first CUDA error.\n// `hook`"
ANCHOR_LAUNCH = "#ifndef TRANSPILE_CHAIN_SMEM_MAX"

# label: (cluster blocks C, threads T, columns a thread K, rows a barrier R, prefetch PF, clusters per fit)
CANDIDATES = {
    "c16t256k4r1pf": (16, 256, 4, 1, 1, 1),
    "c16t256k4r2": (16, 256, 4, 2, 0, 1),
    "c16t256k4r4": (16, 256, 4, 4, 0, 1),
    "c16t256k4r2pf": (16, 256, 4, 2, 1, 1),
    "c8t256k7r2": (8, 256, 7, 2, 0, 1),
    "c8t512k4r2": (8, 512, 4, 2, 0, 1),
}


def candidate(src: str, C: int, T: int, K: int, R: int, PF: int, WAVES: int) -> str:
    if src.count(ANCHOR_KERNEL) != 1 or src.count(ANCHOR_LAUNCH) != 1:
        raise SystemExit("atax_cluster: not the chain form of atax.cu this script knows")
    defs = (f"#define ATAX_C {C}\n#define ATAX_T {T}\n#define ATAX_K {K}\n#define ATAX_PF {PF}\n"
            f"#define ATAX_R {R}\n#define ATAX_WAVES {WAVES}\n")
    return src.replace(ANCHOR_KERNEL, defs + KERNEL + "\n" + ANCHOR_KERNEL).replace(ANCHOR_LAUNCH,
                                                                                   LAUNCH + ANCHOR_LAUNCH)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("atax_cu", type=Path)
    ap.add_argument("out_dir", type=Path)
    args = ap.parse_args()
    src = args.atax_cu.read_text()
    for label, params in CANDIDATES.items():
        path = args.out_dir / f"atax.cand-{label}.cu"
        path.write_text(candidate(src, *params))
        print(path)


if __name__ == "__main__":
    main()
