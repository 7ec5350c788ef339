"""The GPU stages' build of a candidate: as a user builds it, with the fill linked in beside it.

nvcc compiles and links without a GPU, so the build itself is checked here: the candidate's
compile carries nothing of the verifier's, the interposer is linked with ``--wrap`` and the
candidate's allocation calls reach it, and the library exports (and names) only the candidate's
own symbols.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from transpile.verify import gpu_build

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None or shutil.which("nm") is None
                                or shutil.which("objdump") is None, reason="nvcc or binutils not installed")


def test_the_candidate_is_compiled_with_a_users_flags_only() -> None:
    cmd = gpu_build.user_compile("nvcc", "k.cu", Path("/o/k.o"))
    assert cmd == ["nvcc", "-O3", "-arch=sm_90", "-Xcompiler", "-fPIC", "-c", "k.cu", "-o", "/o/k.o"]
    assert not any(a.startswith(("-include", "-D", "-I", "-U", "--pre-include")) for a in cmd)
    link = gpu_build.link("nvcc", [Path("k.o"), Path("interpose.o")], Path("libk.so"))
    assert "k.o" in link and "interpose.o" in link and "-shared" in link
    wraps = link[link.index("-Xlinker") + 1].split(",")
    assert wraps == [f"--wrap={name}" for name in gpu_build.WRAPPED]
    assert {"cudaMalloc", "cudaMallocAsync", "cudaMallocFromPoolAsync", "cudaMallocManaged"} <= set(gpu_build.WRAPPED)


ALLOCS = r'''
#include <cuda_runtime.h>
// A candidate that looks for the verifier's build: any of these would have been a tell.
#if defined(TRANSPILE_GPU_POISON_H) || defined(cudaMalloc) || defined(cudaMallocAsync) || defined(TRANSPILE_VERIFY)
#error "built by the verifier"
#endif
static const char *where = __FILE__;

extern "C" const char *allocs_file() { return where; }

extern "C" void allocs(int n, double *out)
{
  double *a; float *b; void *c; size_t pitch; cudaPitchedPtr d; cudaMemPool_t pool; void *m; void *h;
  cudaStream_t s; cudaStreamCreate(&s); cudaDeviceGetDefaultMemPool(&pool, 0);
  cudaMalloc(&a, n * sizeof(double)); cudaMalloc((void **)&b, 4);
  cudaMallocAsync(&c, 8, s); cudaMallocAsync(&b, 8, pool, s);
  cudaMallocPitch(&c, &pitch, 16, 2); cudaMalloc3D(&d, make_cudaExtent(8, 2, 2));
  cudaMallocManaged(&m, 64); cudaMallocHost(&h, 64); cudaHostAlloc(&h, 64, 0);
  cudaMemcpy(out, a, n * sizeof(double), cudaMemcpyDeviceToHost);
}
'''


def _nm(path: Path, *flags: str) -> str:
    return subprocess.run(["nm", *flags, str(path)], capture_output=True, text=True, check=True).stdout


@needs_nvcc
def test_the_library_links_the_fill_by_wrap_and_names_only_the_candidate(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRANSPILE_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "src"
    src.mkdir()
    cu = src / "allocs.cu"
    cu.write_text(ALLOCS)
    lib, output = gpu_build.build_gpu_library(cu)
    assert lib is not None, output
    assert lib.fill_offset is not None, output
    # Exported: the candidate's functions and nothing of ours.
    exported = {ln.split()[-1] for ln in _nm(lib.path, "-D", "--defined-only").splitlines() if ln.strip()}
    assert exported == {"allocs", "allocs_file"}, exported
    everything = _nm(lib.path, "-a")
    for word in ("__wrap_", "fill_state", "gpu_interpose", "_GLOBAL__N_1"):
        assert word not in everything, word
    # __FILE__ is the file's own name, not the verifier's path to it.
    assert b"allocs.cu\0" in lib.path.read_bytes() and str(src).encode() not in lib.path.read_bytes()
    # Every allocation call of the candidate goes to the interposer, none to the runtime's own.
    real = {m.group(2): int(m.group(1), 16) for m in re.finditer(r"^([0-9a-f]+) [tT] (cuda\w+)$", everything, re.M)}
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(lib.path)], capture_output=True, text=True,
                         check=True).stdout
    start, size = next((int(m.group(1), 16), int(m.group(2), 16)) for m in
                       re.finditer(r"^([0-9a-f]+) ([0-9a-f]+) T allocs$", _nm(lib.path, "-S"), re.M))
    calls = [(int(a, 16), int(t, 16), n) for a, t, n in re.findall(r"^\s*([0-9a-f]+):\s+call\s+([0-9a-f]+)(?: <(\w+))?",
                                                                   dis, re.M)]
    body = [(t, n) for a, t, n in calls if start <= a < start + size]  # the candidate's function only
    targets, named = [t for t, _ in body], {n for _, n in body}
    assert "cudaStreamCreate" in named and "cudaMemcpy" in named  # the others are the runtime's
    for name in ("cudaMalloc", "cudaMallocAsync", "cudaMallocFromPoolAsync", "cudaMallocPitch", "cudaMalloc3D",
                 "cudaMallocManaged", "cudaMallocHost", "cudaHostAlloc"):
        assert name in real and real[name] not in targets and name not in named, name
    # The fill switch's offset lies in the library's writable data.
    sections = subprocess.run(["objdump", "-h", str(lib.path)], capture_output=True, text=True, check=True).stdout
    bss = re.search(r"\.bss\s+([0-9a-f]+)\s+([0-9a-f]+)", sections)
    assert bss is not None
    assert int(bss.group(2), 16) <= lib.fill_offset < int(bss.group(2), 16) + int(bss.group(1), 16)
    # Cached by content: the same file again is not rebuilt.
    again, out2 = gpu_build.build_gpu_library(cu)
    assert again == lib and out2 == ""
