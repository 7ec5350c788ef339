"""Cheats of classes 6 (concurrency) and 1 (environment detection) against the CPU verifier.

Each ``.cu`` file under ``tests/adversary/races`` and ``tests/adversary/env`` starts with a header::

    // class: N (<name>)
    // wrong for: <legitimate input or call sequence where it is wrong>
    // [gpu-only: <why only a GPU exposes it>]
    // against: <ref>.c
    // expect: reject | accept

    [// check: <the check id that must reject it>]

and is verified with stages (a)-(c) (``transpile verify X.cu --against REF.c --no-gpu``, through
the Python API) against the C reference in its folder.  A cheat must be rejected (and its
``check:`` line, when present, names the check that must reject it); an honest control must be
accepted.  Files marked ``gpu-only`` are skipped here: the simulator cannot expose them (their
reason is in the header and in docs/verify.md), the GPU stages do.

The simulator's race detector itself (transpile/sim/include/cuda_sim_race.h) is also tested on
small kernels, without the verifier: a racy kernel is reported, the same kernel with its barrier
is not.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
FOLDERS = (HERE / "adversary" / "races", HERE / "adversary" / "env")
CASES = sorted(p for folder in FOLDERS for p in folder.glob("*.cu"))

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="the CPU simulator needs g++")


def header(path: Path) -> dict[str, str]:
    """The ``// key: value`` lines at the top of ``path``, and a ``// check:`` line after them (apart,
    after an empty line, so that a reader of the four keys alone sees it as code)."""
    fields: dict[str, str] = {}
    lines = path.read_text().splitlines()
    for k, line in enumerate(lines):
        m = re.match(r"//\s*([a-z][a-z -]*?):\s*(.*)", line)
        if not m:
            check = next((ln for ln in lines[k:k + 3] if ln.startswith("// check:")), None)
            if check:
                fields["check"] = check.split(":", 1)[1].strip()
            break
        fields[m.group(1)] = m.group(2).strip()
    return fields


def test_headers_are_complete() -> None:
    assert len([p for p in CASES if p.parent.name == "races" and header(p)["expect"] == "reject"]) >= 6
    assert len([p for p in CASES if p.parent.name == "races" and header(p)["expect"] == "accept"]) >= 3
    assert len([p for p in CASES if p.parent.name == "env" and header(p)["expect"] == "reject"]) >= 5
    for p in CASES:
        h = header(p)
        assert {"class", "wrong for", "against", "expect"} <= h.keys(), p.name
        assert h["expect"] in ("reject", "accept"), p.name
        assert (p.parent / h["against"]).is_file(), p.name
        assert h["class"].split()[0] == ("6" if p.parent.name == "races" else "1"), p.name


def _verify(cu: Path, ref: Path, seed: int) -> Any:
    from transpile.verify import Options, verify_file

    # Quick mode (the compile-time check's few small shapes) keeps the 20 files within CI's budget;
    # the checks that reject these cheats do not depend on the shape.
    return verify_file(cu, ref, options=Options(seed=seed, mode="quick", stages="abc", gpu=False))


@pytest.mark.sample(2)
@pytest.mark.slow  # 19 files through stages (a)-(c): about 150 s of CPU
@needs_gxx
@pytest.mark.parametrize("cu", CASES, ids=[p.stem for p in CASES])
def test_cheat(cu: Path) -> None:
    h = header(cu)
    if "gpu-only" in h:
        pytest.skip(f"gpu-only: {h['gpu-only']}")
    report = _verify(cu, cu.parent / h["against"], seed=11)
    if h["expect"] == "accept":
        assert report.verdict == "pass", f"{cu.name}: {report.reason}"
    else:
        assert report.verdict == "fail", f"{cu.name} was not rejected: {report.verdict}: {report.reason}"
        failed = next(s for s in report.stages.values() if s.status == "fail")
        assert failed.key in ("a", "b", "c"), failed
        if "check" in h:
            assert failed.check == h["check"], f"{cu.name}: {failed.check}: {failed.message}"


# ---------------------------------------------------------------- the detector on its own

_KERNELS = r"""
#include <cuda_runtime.h>
__global__ void plain(float* sum) { *sum += 1.0f; }
__global__ void atomic(float* sum) { atomicAdd(sum, 1.0f); }
__global__ void barrier(float* out) {
  __shared__ float s[64];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x + 1) % 64];
}
__global__ void no_barrier(float* out) {
  __shared__ float s[64];
  s[threadIdx.x] = threadIdx.x;
  out[threadIdx.x] = s[(threadIdx.x + 1) % 64];
}
__global__ void warp_sync(float* out) {
  __shared__ float s[32];
  s[threadIdx.x] = threadIdx.x;
  __syncwarp();
  out[threadIdx.x] = s[threadIdx.x ^ 1];
}
__global__ void warp_no_sync(float* out) {
  __shared__ float s[32];
  s[threadIdx.x] = threadIdx.x;
  out[threadIdx.x] = s[threadIdx.x ^ 1];
}
__global__ void other_block(float* out) {  // block b reads what block b-1 wrote in this launch
  out[blockIdx.x] = 1.0f + (blockIdx.x ? out[blockIdx.x - 1] : 0.0f);
}
__global__ void own_elements(float* out) { out[blockIdx.x] += 1.0f; }
__global__ void lock(int* mutex, float* sum) {  // a spin lock: the critical sections are ordered
  while (atomicCAS(mutex, 0, 1) != 0) {}
  *sum += 1.0f;
  __threadfence();
  atomicExch(mutex, 0);
}
__global__ void flag(float* out) { out[0] = 1.0f; }  // every thread stores one value: harmless
__global__ void flag_then_read(float* out) {  // ...but reading it in the same interval is a race
  out[0] = 1.0f;
  if (threadIdx.x == 5) out[1] = ((volatile float*)out)[0];  // volatile: a load g++ cannot forward
}
extern "C" int run(int which, int blocks, int threads, float* host) {
  float* d;
  int* m;
  cudaMalloc(&d, 64 * sizeof(float));
  cudaMalloc(&m, sizeof(int));
  cudaMemset(d, 0, 64 * sizeof(float));
  cudaMemset(m, 0, sizeof(int));
  switch (which) {
    case 0: plain<<<blocks, threads>>>(d); break;
    case 1: atomic<<<blocks, threads>>>(d); break;
    case 2: barrier<<<blocks, threads>>>(d); break;
    case 3: no_barrier<<<blocks, threads>>>(d); break;
    case 4: warp_sync<<<blocks, threads>>>(d); break;
    case 5: warp_no_sync<<<blocks, threads>>>(d); break;
    case 6: other_block<<<blocks, threads>>>(d); break;
    case 7: own_elements<<<blocks, threads>>>(d); break;
    case 8: lock<<<blocks, threads>>>(m, d); break;
    case 9: flag<<<blocks, threads>>>(d); break;
    case 10: flag_then_read<<<blocks, threads>>>(d); break;
  }
  cudaMemcpy(host, d, 64 * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(d);
  cudaFree(m);
  return 0;
}
"""

_EXPECT = [  # (kernel, blocks, threads, diagnostic start or None)
    (0, 1, 64, "data race in kernel plain"),
    (1, 1, 64, None),
    (2, 1, 64, None),
    (3, 1, 64, "data race in kernel no_barrier"),
    (4, 1, 32, None),
    (5, 1, 32, "data race in kernel warp_no_sync"),
    (6, 8, 1, "data race between blocks in kernel other_block"),
    (7, 8, 1, None),
    (8, 1, 32, None),
    (0, 4, 1, "data race between blocks in kernel plain"),
    (9, 4, 32, None),
    (10, 1, 32, "data race in kernel flag_then_read"),
]


@pytest.fixture(scope="module")
def race_lib(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from transpile.sim import build

    d = tmp_path_factory.mktemp("races")
    (d / "k.cu").write_text(_KERNELS)
    return build(d / "k.cu", d / "out")


@pytest.mark.sample(2)
@needs_gxx
@pytest.mark.parametrize(("which", "blocks", "threads", "expect"), _EXPECT)
@pytest.mark.parametrize("seed", [0, 5])
def test_detector(race_lib: Any, which: int, blocks: int, threads: int, expect: str | None, seed: int) -> None:
    from transpile.sim import run_isolated

    host = np.zeros(64, np.float32)
    run = run_isolated(race_lib, "run", which, blocks, threads, host, seed=seed)
    races = [ln for ln in run.diagnostics.splitlines() if ln.startswith("data race")]
    if expect is None:
        assert not races, races
    else:
        assert races and races[0].startswith(expect), run.diagnostics
        assert "thread (" in races[0] and "byte " in races[0]


@needs_gxx
def test_fill_and_clocks(tmp_path: Path) -> None:
    """Fresh memory's fill follows the schedule seed; an empty launch looks like a GPU's."""
    from transpile.sim import build, run_isolated

    src = tmp_path / "f.cu"
    src.write_text(r"""
#include <cuda_runtime.h>
#include <chrono>
__global__ void nothing() {}
extern "C" int probe(double* out) {
  double* d;
  cudaMalloc(&d, sizeof(double));
  cudaMemcpy(out, d, sizeof(double), cudaMemcpyDeviceToHost);
  auto t0 = std::chrono::steady_clock::now();
  nothing<<<64, 256>>>();
  cudaDeviceSynchronize();
  out[1] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  cudaFree(d);
  return 0;
}
""")
    lib = build(src, tmp_path / "out")
    fills = []
    for seed in (0, 1, 2, 3):
        out = np.zeros(2)
        run_isolated(lib, "probe", out, seed=seed)
        fills.append(out[0])
        assert out[1] < 1e-3, out[1]  # virtual time: 3 us plus 1 ns a thread
    assert np.isnan(fills[0])  # seed 0: the NaN poison
    assert any(f == 0.0 for f in fills[1:]) and any(np.isfinite(f) and f != 0.0 for f in fills[1:]), fills


@needs_gxx
def test_neutral_process() -> None:
    """The simulator's child looks like ./a.out in an ordinary environment."""
    import multiprocessing

    from transpile.sim import neutral_process

    def child(conn: Any) -> None:
        import os

        neutral_process({"KNOB": "1"})
        cmdline = Path("/proc/self/cmdline").read_bytes().split(b"\0")[0]
        comm = Path("/proc/self/comm").read_text().strip()
        environ = Path("/proc/self/environ").read_bytes()
        conn.send((cmdline, comm, b"PYTHON" in environ, dict(os.environ)))

    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    p = ctx.Process(target=child, args=(send,))
    p.start()
    cmdline, comm, python_in_block, env = recv.recv()
    p.join()
    assert cmdline == b"./a.out" and comm == "a.out"
    assert not python_in_block
    assert env.get("KNOB") == "1" and not any(k.startswith(("PYTHON", "TRANSPILE", "PYTEST")) for k in env)
