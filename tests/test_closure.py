"""Min-plus closure (passes/closure.py): floyd-warshall's k step in parallel where row and column k hold
still, and in program order again where they do not; the same results as the sequential nest on any
integers (negative cycles and wrap-around included), in any order of the parallel instances."""

from __future__ import annotations

import numpy as np
import pytest

from passes import REGISTRY, closure
from tests import polybench
from transpile import frontend, ir, pipeline
from transpile.ir import check as ircheck
from transpile.ir import interp, text

FW = """kernel fw(i32 n, inout i32 p[n][n]) {
  for k in 0..n {
    for i in 0..n {
      for j in 0..n {
        p[i][j] = p[i][j] < p[i][k] + p[k][j] ? p[i][j] : p[i][k] + p[k][j];
      }
    }
  }
}
"""


def _kernel(src: str = FW) -> ir.Kernel:
    (k,) = text.parse(src).kernels
    return k


def test_registered() -> None:
    assert REGISTRY["closure"] is closure


def test_floyd_warshall_is_a_host_loop_of_three_launches() -> None:
    lowered = pipeline.lower(frontend.load(polybench.spec("floyd-warshall").path))
    (k,) = lowered.kernels
    decl, host = k.body
    assert isinstance(decl, ir.Decl) and isinstance(host, ir.For) and host.par is None
    par, check, serial = host.body
    assert all(isinstance(s, ir.Launch) for s in (par, check, serial))
    (i,) = par.body
    assert isinstance(i, ir.For) and i.par == "y" and isinstance(i.body[0], ir.For) and i.body[0].par == "x"
    # The check of row and column k is a reduction over the block's threads, not one thread's loop.
    (scan,) = [n for n in check.body if isinstance(n, ir.For)]
    assert scan.reduce == ("+",)
    assert not any(isinstance(n, ir.For) and (n.par or n.reduce) for n in ir.walk(serial))
    naive = pipeline.lower(frontend.load(polybench.spec("floyd-warshall").path), naive=True)
    assert not any(isinstance(n, ir.If) for n in ir.walk(naive))  # the baseline does not get it


def _matrices(n: int, rng: np.random.Generator) -> list[np.ndarray]:
    big = np.iinfo(np.int32).max
    return [
        rng.integers(0, 20, (n, n)),  # non-negative: every step in parallel
        rng.integers(-3, 20, (n, n)),  # negative cycles: some steps again in order
        rng.integers(big - 40, big, (n, n)),  # sums wrap around
        np.where(rng.random((n, n)) < 0.5, rng.integers(-5, 5, (n, n)), rng.integers(big - 9, big, (n, n))),
    ]


#: The extents need not be n x n: the launches touch the elements the nest touches.  Fixed extents
#: (``int path[N][N]`` with ``n <= N``, as the real PolyBench file declares them) and a wider row.
SHAPES = {"n x n": FW, "fixed 8 x 8": FW.replace("p[n][n]", "p[8][8]"),
          "n x (n + 1)": FW.replace("p[n][n]", "p[n][n + 1]")}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("seed", range(4))
def test_same_results_as_the_sequential_nest(shape: str, n: int, seed: int) -> None:
    k = _kernel(SHAPES[shape])
    out = closure.run(k)
    assert out is not k
    m, got_m = ir.Module((), (k,)), ir.Module((), (out,))
    ircheck.check(got_m)
    rng = np.random.default_rng(seed)
    rows, cols = {"n x n": (n, n), "fixed 8 x 8": (8, 8), "n x (n + 1)": (n, n + 1)}[shape]
    for p in _matrices(max(rows, cols), rng):
        args = {"n": n, "p": p[:rows, :cols].astype(np.int32)}
        want = interp.run(m, "fw", args)["p"]
        for shuffle in (None, seed, seed + 100):
            assert np.array_equal(interp.run(got_m, "fw", args, shuffle=shuffle)["p"], want)


BIG = int(np.iinfo(np.int32).max)
#: Row or column 0 changes at k = 0 only through wrap-around (p[0][0] = 10 >= 0): the parallel step
#: must leave the instances reading it alone, and the second launch must see it.
WRAPS = [
    [[10, BIG - 5, 0], [0, 0, 0], [0, 0, 0]],  # p[0][1] + p[0][0] wraps: row 0 moves
    [[10, 10, 0], [BIG - 5, 50, 0], [0, 0, 0]],  # p[1][0] + p[0][0] wraps: column 0 moves
]


@pytest.mark.parametrize("p", WRAPS, ids=["row", "column"])
def test_wrap_around_in_the_pivot_row_or_column(p: list[list[int]]) -> None:
    k = _kernel()
    out = closure.run(k)
    args = {"n": 3, "p": np.array(p, dtype=np.int32)}
    want = interp.run(ir.Module((), (k,)), "fw", args)["p"]
    for shuffle in (None, 0, 1, 2, 3):
        assert np.array_equal(interp.run(ir.Module((), (out,)), "fw", args, shuffle=shuffle)["p"], want)


def test_the_parallel_step_alone_would_be_wrong_with_a_negative_cycle() -> None:
    """The check and the step again in order matter: without them, a negative diagonal gives other
    results (the test above can fail)."""
    k = _kernel()
    out = closure.run(k)
    _, host = out.body
    assert isinstance(host, ir.For)
    par_only = ir.Kernel(out.name, out.params, (ir.For(host.var, host.ty, host.lo, host.hi, 1, host.body[:1]),))
    args = {"n": 4, "p": np.array([[-1, 3, 4, 5], [2, 0, 1, 1], [3, 2, -2, 0], [1, 1, 1, 0]], dtype=np.int32)}
    want = interp.run(ir.Module((), (k,)), "fw", args)["p"]
    assert not np.array_equal(interp.run(ir.Module((), (par_only,)), "fw", args)["p"], want)
    assert np.array_equal(interp.run(ir.Module((), (out,)), "fw", args)["p"], want)


@pytest.mark.parametrize("src", [
    FW.replace("i32 p", "f64 p"),  # floats: == does not tell -0.0 from +0.0
    FW.replace("p[i][j] < p[i][k]", "p[i][j] > p[i][k]"),  # not a min
    FW.replace("for k in 0..n", "for k in 1..n"),  # k not over all of 0..n
    FW.replace("? p[i][j] : p[i][k] + p[k][j]", "? p[i][j] : p[i][k] + p[k][j] + 1"),  # another value
    FW.replace("  for k in 0..n {", "  p[0][0] = 0;\n  for k in 0..n {"),  # not the whole kernel
])
def test_refusals(src: str) -> None:
    k = _kernel(src)
    assert closure.run(k) is k


def test_the_passes_after_it_leave_the_mapped_kernel_alone() -> None:
    """closure runs before forward, reschedule, distribute and interchange: each returns its result as is."""
    from passes import distribute, forward, interchange, reschedule

    out = closure.run(_kernel())
    for p in (forward, reschedule, distribute, interchange):
        assert p.run(out) is out, p.__name__
