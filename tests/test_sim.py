"""The CUDA simulator (transpile/sim): rewriting, building, and running the
hand-written kernels of tests/sim/*.cu on the CPU against numpy."""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from transpile.sim import (
    SimBuild,
    SimBuildError,
    SimCrash,
    SimLibrary,
    SimTimeout,
    SimUnsupported,
    build,
    known_api,
    run_isolated,
)
from transpile.sim.rewrite import find_launches, kernel_names, mask, rewrite, unsupported

SIM_DIR = Path(__file__).resolve().parent / "sim"
CU_FILES = sorted(SIM_DIR.glob("*.cu"))
RUNNABLE = [f for f in CU_FILES if f.name != "inline_asm.cu"]
WORKERS = max(2, os.cpu_count() or 2)

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")

# cudaError_t values
SUCCESS, INVALID_VALUE, INVALID_CONFIGURATION = 0, 1, 9
ILLEGAL_ADDRESS, ASSERT, LAUNCH_FAILURE = 700, 710, 719


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.environ.get("PYTEST_XDIST_WORKER"):  # one build cache for all xdist workers
        shared = tmp_path_factory.getbasetemp().parent / "sim-cache"
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp("sim")


@pytest.fixture(scope="module")
def builds(out_dir: Path) -> dict[str, SimBuild]:
    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(zip((f.stem for f in RUNNABLE), pool.map(lambda f: build(f, out_dir), RUNNABLE)))


@pytest.fixture(scope="module")
def libs(builds: dict[str, SimBuild]) -> dict[str, SimLibrary]:
    return {name: SimLibrary(b) for name, b in builds.items()}


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


# ---------------------------------------------------------------- rewriting (no compiler)

def test_mask_blanks_comments_and_literals() -> None:
    src = 'a /* <<< */ b // ) x\n"(<<<" \'(\' 1\'000 R"d(")\n)d" c'
    m = mask(src)
    assert len(m) == len(src) and m.count("\n") == src.count("\n")
    assert "<<<" not in m and "(" not in m.replace("1'000", "")
    assert m.split() == ["a", "b", '"', '"', "'", "'", "1'000", 'R"', '"', "c"]


def test_rewrite_launch_forms_keep_lines() -> None:
    src = (
        "void f() {  // k<<<1, 1>>>(not a launch)\n"
        '  ns::k<float, 4> <<< dim3((n + 1) / 2, g(a, b)), 256, 0, s >>>(x, h(y, "<<<)"), z);\n'
        "  ::k<<<1,\n"
        "     2>>>();\n"
        "  (*fp)<<<1, 1>>>(a);\n"
        "  obj.ptr<<<1, 1>>>(a);\n"
        "}\n"
    )
    out = rewrite(src)
    lines = out.splitlines()
    assert len(lines) == len(src.splitlines())
    assert lines[0] == src.splitlines()[0]
    assert lines[1] == ('  __sim_launch(ns::k<float, 4>, __sim::LaunchConfig( dim3((n + 1) / 2, g(a, b)), 256, 0, s )'
                        '.at("ns::k<float, 4>", __FILE__, 2), x, h(y, "<<<)"), z);')
    assert lines[2:4] == ["  __sim_launch(::k, __sim::LaunchConfig(1,", '     2).at("::k", __FILE__, 3));']
    assert lines[4] == '  __sim_launch((*fp), __sim::LaunchConfig(1, 1).at("(*fp)", __FILE__, 5), a);'
    assert lines[5] == '  __sim_launch(obj.ptr, __sim::LaunchConfig(1, 1).at("obj.ptr", __FILE__, 6), a);'
    assert [ln.line for ln in find_launches(src)] == [2, 3, 5, 6]


def test_rewrite_shared_declarations() -> None:
    src = (
        "extern __shared__ __align__(16) unsigned char smem[];\n"
        "__global__ void k() {\n"
        "  extern __shared__ float tile[][33];\n"
        "  extern volatile __shared__ int\n    v[];\n"
        "  static __shared__ int q[4];\n"
        "}\n"
        "__device__ __noinline__ int f();\n"
        "cudaLaunchKernel((const void*)k, g, b, args);\n"
    )
    out = rewrite(src).splitlines()
    assert len(out) == len(src.splitlines())
    assert out[0] == "unsigned char * const smem = reinterpret_cast<unsigned char (*)>(__sim::dyn_smem);"
    assert out[2].strip() == "float (* const tile)[33] = reinterpret_cast<float (*)[33]>(__sim::dyn_smem);"
    assert out[3].strip() == "volatile int * const v = reinterpret_cast<volatile int (*)>(__sim::dyn_smem);"
    assert out[5].split()[:3] == ["__shared__", "int", "q[4];"]  # and registered for poisoning:
    assert out[5].endswith('__sim::register_shared((void*)&q, sizeof(q), "q");')  # named in race reports
    assert out[7] == "__device__ __attribute__((noinline)) int f();"
    assert out[8].replace(" ", "") == "cudaLaunchKernel(k,g,b,args);"


def test_kernel_names() -> None:
    src = ("template <int B> __global__ void __launch_bounds__(256, 2) tiled(float* x);\n"
           'extern "C" __global__ void plain(int n) {}\n// __global__ void commented() {}\n')
    assert kernel_names(src) == ("tiled", "plain")


@pytest.mark.parametrize(("snippet", "feature"), [
    ("__global__ void k() { asm volatile(\"trap;\"); }", "inline PTX assembly (asm)"),
    ("#include <cooperative_groups.h>\n", "cooperative groups"),
    ("__global__ void k() { cooperative_groups::this_grid().sync(); }", "cooperative groups"),
    ("#include <mma.h>\nusing namespace nvcuda;\n", "tensor cores (wmma)"),
    ("__global__ void k(cudaTextureObject_t t) {}", "texture/surface objects"),
    ("__global__ void k(__half* h) {}", "half/bfloat16/fp8 types"),
    ("__global__ void c() {}\n__global__ void p() { c<<<1, 1>>>(); }", "dynamic parallelism (kernel launch in device code)"),
    ("void h() { cudaGraphLaunch(g, 0); }", "CUDA graphs"),
    ("void h() { cudaMemcpy3D(&p); }", "CUDA runtime API cudaMemcpy3D()"),
])
def test_unsupported_features_are_named(snippet: str, feature: str) -> None:
    found = unsupported(snippet, "x.cu", known_api=known_api())
    assert feature in [f for f, _ in found]


def test_supported_code_is_not_flagged() -> None:
    src = ('#define cudaCheck(x) x\nint cudaHelper(int a) { return a; }\n'
           'extern "C" { namespace ns { void host() { k<<<1, 1>>>(); cudaCheck(cudaMalloc(&p, 4)); } } }\n'
           '// asm("trap;") in a comment\nconst char* s = "asm";\n')
    assert unsupported(src, "x.cu", known_api=known_api()) == []


# ---------------------------------------------------------------- building

@needs_gxx
def test_inline_asm_reported_by_build(out_dir: Path) -> None:
    with pytest.raises(SimUnsupported) as info:
        build(SIM_DIR / "inline_asm.cu", out_dir)
    assert info.value.feature == "inline PTX assembly (asm)"
    assert info.value.loc is not None
    assert (info.value.loc.file, info.value.loc.line) == (str(SIM_DIR / "inline_asm.cu"), 6)
    assert "error: unsupported by the CUDA simulator: inline PTX assembly (asm)" in str(info.value)


@needs_gxx
def test_compile_error_points_into_the_cu_file(tmp_path: Path) -> None:
    cu = tmp_path / "broken.cu"
    cu.write_text("#include <cuda_runtime.h>\n__global__ void k(float* x) {\n  x[0] = undefined_name;\n}\n")
    with pytest.raises(SimBuildError) as info:
        build(cu, tmp_path / "out")
    assert info.value.loc is not None and (info.value.loc.file, info.value.loc.line) == (str(cu), 3)
    assert "undefined_name" in str(info.value)


@needs_gxx
def test_unbalanced_launch_is_a_build_error(tmp_path: Path) -> None:
    cu = tmp_path / "bad.cu"
    cu.write_text("__global__ void k() {}\nvoid f() {\n  k<<<1, 1>>>(;\n}\n")
    with pytest.raises(SimBuildError) as info:
        build(cu, tmp_path / "out")
    assert info.value.loc is not None and info.value.loc.line == 3


@needs_gxx
def test_build_exports_and_caches(builds: dict[str, SimBuild], out_dir: Path) -> None:
    assert builds["gemm_tiled"].symbols == ("gemm_tiled",)
    assert builds["gemm_tiled"].kernels == ("gemm_tiled_kernel",)
    assert builds["dynamic_smem"].symbols == ("big_smem", "carve", "reverse_chunks")
    # A cudaError_t result and a cudaStream_t parameter must not hide the function.
    assert builds["grid_stride"].symbols == ("saxpy", "saxpy_device")
    again = build(SIM_DIR / "gemm_tiled.cu", out_dir)
    assert again.library == builds["gemm_tiled"].library


def test_declarations_cut_sim_rt_bodies_and_keep_lines() -> None:
    from transpile.sim.build import declarations

    text = ("inline int small() { return 1; }\n"
            "SIM_RT int big(int a,\n"
            "               int b = 2) {\n"
            "  if (a) {\n"
            "    return b;\n"
            "  }\n"
            "  return a;\n"
            "}\n"
            "SIM_RT std::string format(const char* f, ...) __attribute__((format(printf, 1, 2)));\n"
            "int after;\n")
    cut = declarations(text)
    assert cut.split("\n") == ["inline int small() { return 1; }", "SIM_RT int big(int a,", "               int b = 2);",
                                "", "", "", "", "",
                                "SIM_RT std::string format(const char* f, ...) __attribute__((format(printf, 1, 2)));",
                                "int after;", ""]
    # The brace on a line of its own (the drop-in runtime's style): the same number of lines.
    assert declarations("SIM_RT int g(int a,\n         int b)\n{\n  return a;\n}\nint x;").split("\n") == [
        "SIM_RT int g(int a,", "         int b);", "", "", "", "int x;"]


@pytest.mark.parametrize("header", ["transpile/sim/include/cuda_sim.h", "transpile/verify/include/verify_audit.h"])
def test_headers_keep_the_sim_rt_convention(header: str) -> None:
    # build.py cuts a SIM_RT body at the first line that is exactly "}": a definition whose body
    # closed elsewhere would swallow what follows it.
    from transpile.sim.build import declarations

    lines = (Path(__file__).resolve().parent.parent / header).read_text().split("\n")
    starts = [k for k, ln in enumerate(lines) if ln.startswith("SIM_RT ") and not ln.rstrip().endswith(";")]
    assert starts
    for k in starts:
        end = lines.index("}", k)
        inner = lines[k + 1:end]
        stray = [ln for ln in inner if ln and not ln[0].isspace() and not ln.startswith("#")]
        assert not stray, f"{header}:{k + 1}: a line at column 0 inside the body: {stray[0]!r}"
    assert "{" not in "".join(ln for ln in declarations("\n".join(lines)).split("\n") if ln.startswith("SIM_RT "))


def test_the_c_api_declared_for_split_builds_is_the_one_defined() -> None:
    # cuda_sim.h declares its extern "C" API for a split build's own translation unit and defines it
    # (once, in the runtime object) in the #else branch: the two lists must name the same functions.
    import re

    text = (Path(__file__).resolve().parent.parent / "transpile/sim/include/cuda_sim.h").read_text()
    start = text.index("#ifdef CUDA_SIM_RUNTIME_EXTERN  // defined once")
    middle = text.index("#else", start)
    end = text.index("#endif  // CUDA_SIM_RUNTIME_EXTERN", middle)
    name = r"^[\w ]*?\*?\s*(__sim_\w+)\("
    declared = set(re.findall(name, text[start:middle], re.M))
    defined = set(re.findall(name, text[middle:end], re.M))
    assert declared and declared == defined


@needs_gxx
def test_the_precompiled_header_is_taken(tmp_path: Path) -> None:
    # g++ -H marks a precompiled header it uses with '!' (and one it rejects with 'x'): the split
    # build's flags must match the ones the .gch was made with, or every build parses the header.
    from transpile.sim.build import BASE_FLAGS, INCLUDE_DIR, _extern_flags, precompiled_header

    flags = [*BASE_FLAGS, f"-I{INCLUDE_DIR}", "-iquote", str(tmp_path), "-include", "cuda_sim.h", "-U_FORTIFY_SOURCE"]
    extern = _extern_flags(tmp_path, flags)
    pch = precompiled_header(tmp_path, extern)
    assert len(pch) == 1 and (Path(pch[0][2:]) / "cuda_sim.h.gch").is_file()
    assert precompiled_header(tmp_path, extern) == pch  # made once
    src = tmp_path / "empty.cpp"
    src.write_text('extern "C" int f(void) { return 0; }\n')
    compile_flags = [f for f in extern if f != "-shared" and not f.startswith("-Wl,")]
    proc = subprocess.run(["g++", *pch, *compile_flags, "-DCUDA_SIM_RUNTIME_EXTERN", "-H", "-c", "-x", "c++", str(src),
                           "-o", str(tmp_path / "empty.o")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith("! ") and first.endswith("cuda_sim.h.gch"), first


@needs_gxx
def test_split_and_single_builds_run_alike(builds: dict[str, SimBuild], tmp_path: Path) -> None:
    # The library linked with the runtime object (the default) and the file compiled alone with
    # the whole simulator: the same exports, results and diagnostics.  Both are loaded in this
    # process: two libraries of one template kernel, whose __shared__ arrays were one object in
    # the process (STB_GNU_UNIQUE) until build.py passed -fno-gnu-unique; the second library then
    # never poisoned them, and the racy variant below read stale tiles instead of NaN.
    single = build(SIM_DIR / "gemm_tiled.cu", tmp_path, split=False)
    split = builds["gemm_tiled"]
    assert single.library != split.library and single.symbols == split.symbols
    from transpile.sim.build import objects_dir

    assert any(p.name.startswith("cuda_sim_rt-") for p in objects_dir(split.library.parent).iterdir())
    rng = np.random.default_rng(3)
    M, N, K = 37, 29, 23
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    outs = []
    for b in (single, split):
        C = np.zeros((M, N), dtype=np.float32)
        run = SimLibrary(b).run("gemm_tiled", 1, M, N, K, A, B, C, seed=5)
        assert run.ret == SUCCESS and run.ok
        outs.append((C, run.launches, run.diagnostics))
    np.testing.assert_allclose(outs[0][0], A @ B, rtol=1e-5, atol=1e-5)
    assert np.array_equal(outs[0][0], outs[1][0]) and outs[0][1:] == outs[1][1:]
    # The variant without its barriers: the same wrong result (poisoned shared memory, seeded schedule).
    wrong = []
    for b in (single, split):
        C = np.zeros((M, N), dtype=np.float32)
        assert SimLibrary(b).run("gemm_tiled", 0, M, N, K, A, B, C, seed=5).ret == SUCCESS
        wrong.append(C)
    assert not np.allclose(wrong[0], A @ B, rtol=1e-4) and np.array_equal(wrong[0], wrong[1], equal_nan=True)


# ---------------------------------------------------------------- kernels vs numpy

@needs_gxx
@pytest.mark.parametrize("seed", [0, 7])
def test_gemm_naive(libs: dict[str, SimLibrary], rng: np.random.Generator, seed: int) -> None:
    M, N, K = 37, 29, 23
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    C = rng.standard_normal((M, N), dtype=np.float32)
    expected = 1.5 * (A @ B) + 0.5 * C
    run = libs["gemm_naive"].run("gemm_naive", M, N, K, np.float32(1.5), A, B, np.float32(0.5), C, seed=seed)
    assert run.ret == SUCCESS and run.ok and run.launches == 1 and run.live_allocations == 0
    np.testing.assert_allclose(C, expected, rtol=1e-5, atol=1e-5)


@needs_gxx
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_gemm_tiled(libs: dict[str, SimLibrary], rng: np.random.Generator, seed: int) -> None:
    M, N, K = 37, 29, 23  # not multiples of the 16x16 tile
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    C = np.zeros((M, N), np.float32)
    run = libs["gemm_tiled"].run("gemm_tiled", 1, M, N, K, A, B, C, seed=seed)
    assert run.ret == SUCCESS and run.ok
    np.testing.assert_allclose(C, A @ B, rtol=1e-5, atol=1e-5)


def _mappings() -> int:
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


@needs_gxx
@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc/self/maps")
def test_fiber_stacks_are_unmapped_after_each_call(libs: dict[str, SimLibrary], rng: np.random.Generator) -> None:
    """A 256-thread launch maps a stack and a guard page per thread (512 mappings); a call leaves none of
    them behind, and the next call maps them again and gives the same bits."""
    M, N, K = 37, 29, 23
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    lib = libs["gemm_tiled"]
    before = _mappings()
    results = []
    for _ in range(2):
        C = np.zeros((M, N), np.float32)
        assert lib.run("gemm_tiled", 1, M, N, K, A, B, C).ok
        assert _mappings() < before + 64
        results.append(C)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], A @ B, rtol=1e-5, atol=1e-5)


@needs_gxx
def test_swapcontext_fallback(rng: np.random.Generator, out_dir: Path) -> None:
    lib = SimLibrary(build(SIM_DIR / "gemm_tiled.cu", out_dir, extra_flags=("-DCUDA_SIM_SWAPCONTEXT",)))
    A = rng.standard_normal((20, 18), dtype=np.float32)
    B = rng.standard_normal((18, 33), dtype=np.float32)
    C = np.zeros((20, 33), np.float32)
    assert lib.run("gemm_tiled", 1, 20, 33, 18, A, B, C, seed=5).ok
    np.testing.assert_allclose(C, A @ B, rtol=1e-5, atol=1e-5)


@needs_gxx
def test_block_reduction_with_atomic_add(libs: dict[str, SimLibrary], rng: np.random.Generator) -> None:
    x = rng.standard_normal(10000)
    out = np.zeros(1)
    run = libs["reduce_sum"].run("reduce_sum", x, len(x), out, seed=3)
    assert run.ret == SUCCESS and run.ok
    assert out[0] == pytest.approx(x.sum(), rel=1e-12, abs=1e-9)


@needs_gxx
@pytest.mark.parametrize("seed", [0, 9])
def test_warp_shuffle_reduction(libs: dict[str, SimLibrary], rng: np.random.Generator, seed: int) -> None:
    x = rng.standard_normal(1000).astype(np.float32)
    total = np.zeros(1, np.float32)
    positives = np.zeros(1, np.int32)
    run = libs["warp_ops"].run("warp_reduce", x, len(x), total, positives, seed=seed)
    assert run.ret == SUCCESS and run.ok
    assert total[0] == pytest.approx(float(x.sum(dtype=np.float64)), abs=1e-3)
    assert positives[0] == (x > 0).sum()


@needs_gxx
def test_warp_scan(libs: dict[str, SimLibrary], rng: np.random.Generator) -> None:
    x = rng.integers(-50, 50, 1000).astype(np.int32)
    y = np.zeros_like(x)
    assert libs["warp_ops"].run("warp_scan", x, y, len(x), seed=4).ok
    expected = np.concatenate([np.cumsum(x[i:i + 32]) for i in range(0, len(x), 32)])
    np.testing.assert_array_equal(y, expected)


@needs_gxx
def test_grid_stride_loop(libs: dict[str, SimLibrary], rng: np.random.Generator) -> None:
    n = 10007  # far more elements than the 4x64 threads of the grid
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    expected = np.float32(2.5) * x + y
    run = libs["grid_stride"].run("saxpy", n, np.float32(2.5), x, y, seed=2)
    assert run.ret == SUCCESS and run.ok and run.live_allocations == 0
    np.testing.assert_allclose(y, expected, rtol=1e-6)


@needs_gxx
def test_entry_point_on_device_pointers(libs: dict[str, SimLibrary], rng: np.random.Generator) -> None:
    lib = libs["grid_stride"]
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    lib.reset()
    dx, dy = lib.to_device(x), lib.to_device(y)
    assert lib.call("saxpy_device", n, np.float32(-1.0), dx, dy, None) == SUCCESS
    result = lib.from_device(dy, np.empty_like(y))
    assert lib.device_free(dx) == lib.device_free(dy) == SUCCESS
    np.testing.assert_allclose(result, y - x, rtol=1e-6)
    assert lib.findings().ok and lib.live_allocations() == 0


@needs_gxx
@pytest.mark.parametrize("block", [128, 96])
def test_dynamic_shared_memory(libs: dict[str, SimLibrary], rng: np.random.Generator, block: int) -> None:
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = np.zeros_like(x)
    assert libs["dynamic_smem"].run("reverse_chunks", x, y, n, block, seed=1).ok
    np.testing.assert_array_equal(y, np.concatenate([x[i:i + block][::-1] for i in range(0, n, block)]))


@needs_gxx
def test_dynamic_shared_memory_carved(libs: dict[str, SimLibrary], rng: np.random.Generator) -> None:
    n = 1000
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    y = np.zeros_like(x)
    assert libs["dynamic_smem"].run("carve", x, y, n, seed=6).ok
    padded = np.concatenate([x, np.zeros(-n % 64, np.int32)]).reshape(-1, 64)
    np.testing.assert_array_equal(y, (3 * np.roll(padded, -1, axis=1)).reshape(-1)[:n])


@needs_gxx
def test_large_dynamic_shared_memory_needs_opt_in(libs: dict[str, SimLibrary]) -> None:
    lib = libs["dynamic_smem"]
    run = lib.run("big_smem", 0)
    assert run.ret == INVALID_VALUE and "cudaFuncAttributeMaxDynamicSharedMemorySize" in run.diagnostics
    assert lib.run("big_smem", 1).ret == SUCCESS


@needs_gxx
@pytest.mark.parametrize("seed", [0, 11])
def test_misc_features(libs: dict[str, SimLibrary], rng: np.random.Generator, seed: int) -> None:
    n = 64
    x = rng.standard_normal((n, 4)).astype(np.float32)
    coef = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    out = np.zeros(n, np.float32)
    info = np.zeros(3 + n + n // 32, np.int32)
    counts = np.zeros(2, np.int32)
    query = np.zeros(4, np.int32)
    run = libs["features"].run("features", x, coef, out, info, counts, query, seed=seed)
    assert run.ret == SUCCESS and run.ok
    np.testing.assert_allclose(out, x @ coef, rtol=1e-5, atol=1e-6)
    assert list(info[:3]) == [22, 1, 1]  # __syncthreads_count / _or / _and
    assert (info[3:3 + n] == 8).all()  # __match_any_sync on t % 4
    assert list(info[3 + n:]) == [sum(range(32)), sum(range(32, 64))]  # __reduce_add_sync
    assert list(counts) == [n, n]  # atomicAdd on a __device__ int; spin-locked increments
    assert list(query) == [132, 32, 1024, 9]


# ---------------------------------------------------------------- races and schedules

def _shift_reference(x: np.ndarray) -> np.ndarray:
    return np.concatenate([np.diff(x[i:i + 128], prepend=0) for i in range(0, len(x), 128)])


@needs_gxx
def test_missing_syncthreads_in_tiled_gemm_is_exposed(libs: dict[str, SimLibrary],
                                                     rng: np.random.Generator) -> None:
    M, N, K = 37, 29, 23
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    results = []
    for _ in range(2):
        C = np.zeros((M, N), np.float32)
        assert libs["gemm_tiled"].run("gemm_tiled", 0, M, N, K, A, B, C, seed=1).ret == SUCCESS
        results.append(C)
    # Threads read tile entries their block has not written yet: shared memory
    # is poisoned (0xFF bytes: NaN) at the start of every block, so the result
    # is wrong in the same way on every run with a fixed seed.
    assert (~np.isclose(results[0], A @ B, rtol=1e-4)).sum() > results[0].size // 2
    np.testing.assert_array_equal(results[0], results[1])


@needs_gxx
def test_shuffled_schedule_exposes_race_hidden_by_thread_order(libs: dict[str, SimLibrary],
                                                                 rng: np.random.Generator) -> None:
    lib = libs["race"]
    x = rng.integers(-100, 100, 1000).astype(np.int32)
    expected = _shift_reference(x)

    def shift(sync: int, seed: int) -> np.ndarray:
        y = np.zeros_like(x)
        assert lib.run("shift_diff", sync, x, y, len(x), seed=seed).ret == SUCCESS
        return y

    # In thread order each thread's left neighbour has already written: correct by luck.
    np.testing.assert_array_equal(shift(0, seed=0), expected)
    racy = shift(0, seed=1)
    assert (racy != expected).sum() > 100
    np.testing.assert_array_equal(shift(0, seed=1), racy)
    for seed in (0, 1, 2):  # with the barrier every schedule agrees
        np.testing.assert_array_equal(shift(1, seed=seed), expected)


@needs_gxx
def test_block_order_is_shuffled_by_seed(libs: dict[str, SimLibrary]) -> None:
    out = np.zeros(1, np.int32)

    def last(seed: int) -> int:
        libs["race"].run("last_block", out, seed=seed)
        return int(out[0])

    assert last(0) == 63  # blocks run in order by default
    winners = [last(seed) for seed in range(1, 6)]
    assert len(set(winners)) > 1 and winners == [last(seed) for seed in range(1, 6)]


# ---------------------------------------------------------------- errors the simulator reports

@needs_gxx
@pytest.mark.parametrize(("which", "message"), [
    (0, "barrier divergence in kernel barrier_in_branch_kernel, block (0,0,0): 16 thread(s) wait at "
        "__syncthreads()"),
    (1, "barrier divergence in kernel early_return_kernel, block (0,0,0): 40 thread(s) wait"),
    (2, "barrier divergence in kernel two_barriers_kernel, block (0,0,0): threads wait at different barriers"),
    (3, "warp divergence in kernel shfl_after_exit_kernel, block (0,0,0): thread (0,0,0) waits in "
        f"__shfl_down_sync ({SIM_DIR / 'divergence.cu'}:34) with mask 0xffffffff, but lane 16, thread (16,0,0), "
        "has exited"),
])
def test_divergence_is_reported_not_hung(builds: dict[str, SimBuild], which: int, message: str) -> None:
    run = run_isolated(builds["divergence"], "divergent", which, timeout=30)
    assert run.ret == LAUNCH_FAILURE and run.last_error == LAUNCH_FAILURE
    assert message in run.diagnostics
    assert "divergence.cu:" in run.diagnostics


@needs_gxx
def test_spinning_on_another_block_times_out(builds: dict[str, SimBuild]) -> None:
    with pytest.raises(SimTimeout):
        run_isolated(builds["divergence"], "wait_for_other_block", timeout=3)


@needs_gxx
@pytest.mark.parametrize(("count", "offset", "corrupted", "where"), [
    (32, 0, 0, None),
    (33, 0, 4, "offsets 128..131"),  # one float past the end
    (32, -1, 4, "offsets -4..-1"),  # one float before the start
])
def test_guard_zones_catch_out_of_bounds_writes(builds: dict[str, SimBuild], count: int, offset: int,
                                                corrupted: int, where: str | None) -> None:
    host = np.zeros(32, np.float32)
    run = run_isolated(builds["memory_errors"], "fill", host, 32, count, offset)
    assert run.ret == SUCCESS and run.guard_violations == corrupted
    if where:
        assert f"out-of-bounds write by kernel fill_kernel: 4 guard byte(s) of device allocation #1 (128 bytes) " \
               f"corrupted at {where}" in run.diagnostics


@needs_gxx
@pytest.mark.parametrize(("which", "error", "message"), [
    (0, INVALID_VALUE, "cudaMemcpy: destination"),
    (1, INVALID_VALUE, "range of 132 bytes at offset 0 overruns device allocation"),
    (2, ILLEGAL_ADDRESS, "argument 0"),
    (3, INVALID_VALUE, "double free"),
    (4, INVALID_VALUE, "cudaMemcpy: source"),
    (5, ILLEGAL_ADDRESS, "illegal address in kernel fill_kernel, block (0,0,0), thread (0,0,0)"),
    (7, ILLEGAL_ADDRESS, "stack overflow in kernel big_locals_kernel, block (0,0,0), thread (0,0,0)"),
])
def test_memory_misuse_is_reported(builds: dict[str, SimBuild], which: int, error: int, message: str) -> None:
    run = run_isolated(builds["memory_errors"], "misuse", np.ones(32, np.float32), 32, which)
    assert run.ret == error
    assert message in run.diagnostics


@needs_gxx
@pytest.mark.parametrize(("which", "race"), [
    (0, None),
    (1, "the launch of scale_kernel at "),
    (2, "cudaMemcpyAsync from "),
    (3, "cudaFreeAsync on stream #1 is not ordered after the launch of scale_kernel at "),
    (4, None),
    (5, None),
    (6, None),
    (7, "the launch of scale_nonconst at "),
    (8, None),
])
def test_stream_order_races_are_reported(builds: dict[str, SimBuild], which: int, race: str | None) -> None:
    host = np.arange(40, dtype=np.float32)
    run = run_isolated(builds["streams"], "two_streams", host, len(host), which)
    assert run.ret == SUCCESS
    np.testing.assert_array_equal(host, 2.0 * np.arange(40, dtype=np.float32))  # the data is right regardless
    races = [line for line in run.diagnostics.splitlines() if line.startswith("race on device allocation")]
    if race is None:
        assert races == [], run.diagnostics
    else:
        assert races and race in races[0], run.diagnostics
        assert "make one stream wait for the other" in races[0]


@needs_gxx
def test_host_crash_is_a_sim_crash(builds: dict[str, SimBuild]) -> None:
    with pytest.raises(SimCrash) as info:
        run_isolated(builds["memory_errors"], "misuse", np.ones(32, np.float32), 32, 6)
    assert info.value.exitcode is not None and info.value.exitcode < 0


@needs_gxx
def test_device_assert_is_sticky(builds: dict[str, SimBuild]) -> None:
    x = np.ones(40, np.float32)
    x[37] = -1.0
    run = run_isolated(builds["memory_errors"], "device_assert", x, len(x))
    assert run.ret == ASSERT
    assert "block (1,0,0), thread (5,0,0): Assertion `x[i] > 0.0f' failed." in run.diagnostics


@needs_gxx
@pytest.mark.parametrize(("which", "error", "ran"), [
    (0, INVALID_CONFIGURATION, 0),  # 2048 threads per block
    (1, INVALID_CONFIGURATION, 0),  # 32x32x2 threads per block
    (2, INVALID_CONFIGURATION, 0),  # a zero grid dimension
    (3, SUCCESS, 1),
])
def test_invalid_launch_configuration(libs: dict[str, SimLibrary], which: int, error: int, ran: int) -> None:
    flag = np.zeros(1, np.int32)
    run = libs["bad_launch"].run("bad_launch", which, flag)
    assert (run.ret, int(flag[0])) == (error, ran)


# ---------------------------------------------------------------- the test kernels are real CUDA

@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_kernels_compile_with_nvcc(tmp_path: Path) -> None:
    def nvcc(cu: Path) -> subprocess.CompletedProcess[str]:
        cmd = ["nvcc", "-arch=sm_90", "-c", str(cu), "-o", str(tmp_path / f"{cu.stem}.o")]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300)

    with ThreadPoolExecutor(WORKERS) as pool:
        procs = list(pool.map(nvcc, CU_FILES))
    failures = {cu.name: p.stderr for cu, p in zip(CU_FILES, procs) if p.returncode != 0}
    assert not failures

