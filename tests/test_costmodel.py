"""The structural cost model (transpile/search/costmodel.py): its terms move the right way, and it never fails."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passes import tile
from tests import strategies
from transpile import cuda, frontend, ir, pipeline
from transpile.cuda import reduce as cuda_reduce
from transpile.ir import text
from transpile.search import costmodel

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "tests" / "kernels"

COPY_ROWS = """kernel copy(i32 n, in f64 A[n][n], out f64 B[n][n]) {
  for i in 0..n {
    for j in 0..n {
      B[i][j] = A[i][j];
    }
  }
}
"""
# The same copy with the subscripts swapped: threadIdx.x (the inner par loop, j) walks down a column.
COPY_COLS = COPY_ROWS.replace("B[i][j] = A[i][j]", "B[j][i] = A[j][i]")


def estimate(module: ir.Module, sizes: dict[str, int], *, opts: tile.Options | None = None,
             resources: dict[str, costmodel.Resources] | None = None, naive: bool = False) -> costmodel.Estimate:
    lowered = pipeline.lower(module, naive=naive)
    k = lowered.kernels[0]
    return costmodel.estimate(k, cuda.launches(lowered, tiling=opts), sizes, tiling=opts, resources=resources)


def c_kernel(name: str) -> ir.Module:
    return frontend.load(KERNELS / f"{name}.c")


def test_coalesced_access_is_cheaper_than_strided() -> None:
    rows = estimate(text.parse(COPY_ROWS), {"n": 8192}, naive=True)
    cols = estimate(text.parse(COPY_COLS), {"n": 8192}, naive=True)
    assert [c.shape for c in rows.launches] == ["plain"] == [c.shape for c in cols.launches]
    assert rows.launches[0].cache_bytes * 3 < cols.launches[0].cache_bytes
    assert rows.seconds < cols.seconds
    # The DRAM floor is the same: both move 2 x 512 MiB once.
    assert rows.launches[0].dram_bytes == cols.launches[0].dram_bytes == 2 * 8 * 8192 ** 2
    assert rows.ideal_seconds == pytest.approx(2 * 8 * 8192 ** 2 / costmodel.H200.dram_bw)


def test_host_loop_repetitions_scale_the_estimate() -> None:
    m = c_kernel("jacobi_1d")
    one = estimate(m, {"tsteps": 10, "n": 4000})
    two = estimate(m, {"tsteps": 20, "n": 4000})
    assert sum(c.count for c in two.launches) == 2 * sum(c.count for c in one.launches) > 0
    assert two.seconds == pytest.approx(2 * one.seconds, rel=1e-9)


def test_triangular_host_loop_is_priced_by_its_average_iteration() -> None:
    # nussinov's wavefront: a host loop over diagonals, a launch per diagonal whose width shrinks.
    m = c_kernel("nussinov")
    small, big = estimate(m, {"n": 500}), estimate(m, {"n": 1000})
    counts = [c.count for c in big.launches]
    assert counts and all(c > 0 for c in counts)
    assert 1.5 < big.seconds / small.seconds < 16


def test_registers_lower_occupancy_and_never_speed_up() -> None:
    m = c_kernel("gemm")
    lowered = pipeline.lower(m)
    name = cuda.launches(lowered)[0].kernel
    sizes = {"ni": 2000, "nj": 2300, "nk": 2600}
    lean = estimate(m, sizes, resources={name: costmodel.Resources(registers=32)})
    fat = estimate(m, sizes, resources={name: costmodel.Resources(registers=255)})
    spilled = estimate(m, sizes, resources={name: costmodel.Resources(registers=255, spill_bytes=256)})
    assert fat.launches[0].occupancy < lean.launches[0].occupancy
    assert lean.seconds <= fat.seconds < spilled.seconds


def test_tensor_cores_beat_the_fma_tiles_and_the_naive_mapping() -> None:
    m = c_kernel("gemm")
    sizes = {"ni": 2000, "nj": 2300, "nk": 2600}
    mma = estimate(m, sizes)
    fma = estimate(m, sizes, opts=tile.Options(mma=False))
    naive = estimate(m, sizes, opts=tile.Options(enabled=False), naive=True)
    assert [c.shape for c in mma.launches] == ["mma"] and [c.shape for c in fma.launches] == ["tiled"]
    assert mma.seconds < fma.seconds < naive.seconds
    mnk = 2000 * 2300 * 2600
    assert 2 * mnk <= mma.launches[0].flops <= 3 * mnk  # the source's operations: alpha * A * B, +=
    assert 0 < mma.efficiency <= 1


def test_m8n8k4_is_priced_at_half_the_tensor_rate() -> None:
    # Measured on the H200: m8n8k4 sustains half the f64 tensor-core rate of m16n8k8 (passes/tile.py).
    m = c_kernel("gemm")
    sizes = {"ni": 2000, "nj": 2300, "nk": 2600}
    m16 = estimate(m, sizes)
    m8 = estimate(m, sizes, opts=tile.Options(mma_inst=(8, 4)))
    narrow = estimate(m, sizes, opts=tile.Options(mma_shape=(32, 32, 8, 8, 16, 2)))  # 8-row warp tiles: m8n8k4
    assert m16.launches[0].compute_s * 1.9 < m8.launches[0].compute_s
    assert m8.launches[0].compute_s <= narrow.launches[0].compute_s
    assert m16.seconds < m8.seconds



@pytest.mark.parametrize("name, sizes", [("trmm", {"m": 2000, "n": 2600}), ("symm", {"m": 2000, "n": 2600})])
def test_triangular_k_edge_terms_are_cheaper_on_the_tensor_cores(name: str, sizes: dict[str, int]) -> None:
    # The terms outside a tile's common k range: masked steps on the tensor cores (the default) against
    # one by one on the FMA pipes (mma_edge=False), measured faster on the H200 (docs/tiling.md).
    m = c_kernel(name)
    on = estimate(m, sizes)
    off = estimate(m, sizes, opts=tile.Options(mma_edge=False))
    assert [c.shape for c in on.launches] == [c.shape for c in off.launches] and "mma" in [c.shape for c in on.launches]
    assert on.seconds < off.seconds
    assert sum(c.flops for c in on.launches) == sum(c.flops for c in off.launches)


@pytest.mark.parametrize("name, on_res, off_res", [
    ("trmm", {"kernel_trmm_kernel1": (190, 34816)}, {"kernel_trmm_kernel1": (117, 26624)}),
    ("symm", {"kernel_symm_kernel0": (176, 34816), "kernel_symm_kernel1": (203, 34816)},
     {"kernel_symm_kernel0": (120, 26624), "kernel_symm_kernel1": (114, 26624)})])
def test_tensor_core_edges_stay_ahead_with_ptxas_resources(name: str, on_res: dict[str, tuple[int, int]],
                                                           off_res: dict[str, tuple[int, int]]) -> None:
    # ptxas's figures for the H200 builds of run 46: the tensor-core edges take 176-203 registers (one
    # block of 8 warps per SM), the FMA edges 114-120 (two).  Measured: 0.393 against 0.580 ms (trmm),
    # 0.787 against 1.122 ms (symm).  The 3-buffer cp.async pipeline hides latency at 8 warps, and the
    # FMA edges' operands come through L1, one load each.
    m, sizes = c_kernel(name), {"m": 2000, "n": 2600}

    def res(r: dict[str, tuple[int, int]]) -> dict[str, costmodel.Resources]:
        return {k: costmodel.Resources(registers=g, smem=b) for k, (g, b) in r.items()}

    on = estimate(m, sizes, resources=res(on_res))
    off = estimate(m, sizes, opts=tile.Options(mma_edge=False), resources=res(off_res))
    assert on.seconds < off.seconds

def test_serial_chain_is_latency_bound() -> None:
    m = c_kernel("durbin")
    est = estimate(m, {"n": 4000})
    serial = [c for c in est.launches if c.shape == "serial"]
    assert serial and all(c.bound in ("latency", "launch") for c in serial)


@pytest.mark.parametrize("path", sorted(KERNELS.glob("*.c")), ids=lambda p: p.stem)
def test_every_kernel_gets_a_finite_positive_estimate(path: Path) -> None:
    m = frontend.load(path)
    lowered = pipeline.lower(m)
    sizes = {p.name: 64 for k in m.kernels for p in k.params if isinstance(p.ty, ir.Scalar) and p.ty.is_int}
    infos = cuda.launches(lowered)
    assert infos, "every test kernel launches something"
    est = costmodel.estimate(lowered.kernels[0], infos, sizes)
    assert math.isfinite(est.seconds) and est.seconds > 0
    assert {c.kernel for c in est.launches} <= {li.kernel for li in infos}
    assert "total" in est.table()
    # The search prices what it emitted: one rendering gives the text and the same launches.
    for tiling in (None, tile.Options(shared=False, mma=False, rows=2, blocks=((64, 1, 1), (32, 4, 1), (8, 8, 4)))):
        text, by_kernel = cuda.emit_with_launches(lowered, source=path.name, tiling=tiling)
        assert text == cuda.emit(lowered, source=path.name, tiling=tiling)
        assert by_kernel == cuda.launches_by_kernel(lowered, tiling=tiling)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.kernels(), st.integers(1, 300))
def test_random_kernels_never_break_the_model(kernel: ir.Kernel, n: int) -> None:
    module = ir.Module((), (kernel,))
    lowered = pipeline.lower(module)
    sizes = {p.name: n for p in kernel.params if isinstance(p.ty, ir.Scalar) and p.ty.is_int}
    est = costmodel.estimate(lowered.kernels[0], cuda.launches(lowered), sizes)
    assert math.isfinite(est.seconds) and est.seconds >= 0


@given(st.integers(-1000, 1000), st.integers(-1000, 1000).filter(lambda b: b != 0))
def test_value_follows_c_integer_arithmetic(a: int, b: int) -> None:
    def op(o: str) -> ir.Expr:
        return ir.Binary(o, ir.Var("a", ir.I32), ir.Var("b", ir.I32), ir.I32)

    env = {"a": float(a), "b": float(b)}
    assert costmodel.value(op("+"), env) == a + b
    assert costmodel.value(op("*"), env) == a * b
    assert costmodel.value(op("/"), env) == int(a / b)  # C truncates toward zero
    assert costmodel.value(op("%"), env) == a - b * int(a / b)
    assert costmodel.value(ir.Var("c", ir.I32), env) is None


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=3, max_size=30, unique=True))
def test_spearman_is_rank_based(xs: list[float]) -> None:
    ys = [x * 3 for x in xs]  # strictly increasing in x, exactly (no rounding to ties)
    assert costmodel.spearman(xs, ys) == pytest.approx(1.0)
    assert costmodel.spearman(xs, [-y for y in ys]) == pytest.approx(-1.0)


def test_spearman_known_values_and_ties() -> None:
    assert costmodel.spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(0.8207826816681233)
    assert costmodel.spearman([1, 2], [1, 2]) is None  # too few
    assert costmodel.spearman([1, 1, 1], [1, 2, 3]) is None  # constant side


def test_row_coarsening_prices_the_rows_a_stencil_shares() -> None:
    m = c_kernel("jacobi_2d")
    (k,) = pipeline.lower(m).kernels
    launch = next(s for s in ir.walk(k) if isinstance(s, ir.Launch))
    # A read at rows i-1, i, i+1 (3 loads an output): rows=2 loads 4 rows for 2 outputs, rows=8 10 for 8.
    for rows, share in ((2, 1.0), (8, 1.75)):
        (saved,) = tile.shared_rows(launch.body, "i", rows)
        assert saved[0].array in ("A", "B") and saved[1] == pytest.approx(share)
    (g,) = pipeline.lower(c_kernel("gemm")).kernels
    assert tile.shared_rows([s for s in ir.walk(g) if isinstance(s, ir.Launch)][0].body, "i", 4) == []
    sizes = {"tsteps": 10, "n": 2800}
    cache = [sum(c.cache_bytes for c in estimate(m, sizes, opts=tile.Options(rows=r)).launches) for r in (1, 2, 8)]
    assert cache[0] > cache[1] > cache[2]


def test_reduction_launches_are_priced_for_all_their_bytes() -> None:
    # A warp-per-row launch reads its matrix once: the bytes of every lane, not of one thread a row
    # (it was priced at 1/32 of them).
    src = ("kernel rowsum(i32 n, in f64 X[n][n], out f64 y[n]) {\n  for i in 0..n {\n    f64 s = 0.0;\n"
           "    for j in 0..n {\n      s += X[i][j];\n    }\n    y[i] = s;\n  }\n}\n")
    est = estimate(text.parse(src), {"n": 4096})
    assert [c.shape for c in est.launches] == ["rows"]
    assert est.launches[0].dram_bytes >= 8 * 4096 ** 2


def test_few_long_rows_are_priced_a_block_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    # 256 rows of a row program: the host runs a block a row, priced as 256 busy blocks; a warp a row
    # would be 32 blocks of 8 warps, a quarter of the SMs.  Many short rows: a warp a row either way.
    src = ("kernel rownorm(i32 n, i32 m, in f64 X[n][m], out f64 Y[n][m]) {\n  for i in 0..n {\n    f64 s = 0.0;\n"
           "    for j in 0..m {\n      s += X[i][j] * X[i][j];\n    }\n    for j in 0..m {\n"
           "      Y[i][j] = X[i][j] / sqrt(s);\n    }\n  }\n}\n")
    module = text.parse(src)
    few, many = {"n": 256, "m": 32768}, {"n": 65536, "m": 1024}
    block, many_default = estimate(module, few), estimate(module, many)
    assert [c.shape for c in block.launches] == ["rowprog"]
    monkeypatch.setattr(cuda_reduce, "ROWPROG_SM_ROWS", 0)  # never a block a row
    monkeypatch.setattr(cuda_reduce, "ROWPROG_BLOCK_COLS", 1 << 62)
    warp = estimate(module, few)
    assert block.launches[0].dram_bytes == pytest.approx(warp.launches[0].dram_bytes)
    assert block.seconds < 0.5 * warp.seconds, (block.table(), warp.table())
    assert estimate(module, many).seconds == pytest.approx(many_default.seconds)
