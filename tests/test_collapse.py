"""Merging two outer par loops (passes/collapse.py): doitgen's batched matmul becomes a tiled 2-D matmul.

The collapsed launch, run by the interpreter on arrays whose first two extents are merged, gives the
same results as the original on the original arrays (random launches, shuffled par loops); every
condition of the module docstring refuses when broken; the emitted doitgen is tiled and matches the
C reference in the CPU simulation at sizes whose rows straddle tiles.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from passes import collapse, tile
from transpile import cuda, frontend, ir, pipeline
from transpile.ir import check as ircheck
from transpile.ir import interp, text
from transpile.verify import Options, simstage, verify_module

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "tests" / "kernels"


needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None,
                               reason="the simulator and the reference need g++ and gcc")

HEAD = ("kernel k(i32 nr, i32 nq, i32 np, inout f64 W[nr][nq][np], in f64 A[nr][nq][np], in f64 B[nr][nq],\n"
        "         in f64 C[np][np], in f64 D[nq][nr], in f64 E[nr][np][np],\n         in f64 G[nr][nq + 1]) {\n")


def _launch(body: str) -> tuple[ir.Kernel, ir.Launch]:
    """A kernel whose one launch is ``for r par(z) { for q par(y) { for p par(x) { body } } }``."""
    src = (HEAD + "  launch {\n    for r in 0..nr par(z) {\n      for q in 0..nq par(y) {\n"
           "        for p in 0..np par(x) {\n" + body + "        }\n      }\n    }\n  }\n}\n")
    (k,) = text.parse(src).kernels
    (lp,) = [s for s in k.body if isinstance(s, ir.Launch)]
    return k, lp


def _arrays(k: ir.Kernel) -> dict[str, ir.ArrayType]:
    return {p.name: p.ty for p in k.params if isinstance(p.ty, ir.ArrayType)}


def _collapse(k: ir.Kernel, lp: ir.Launch) -> collapse.Collapsed | None:
    return collapse.collapse(lp, _arrays(k), ir.identifiers(k))


MATMUL = "          W[r][q][p] = 0.0;\n          for s in 0..np {\n            W[r][q][p] += A[r][q][s] * C[s][p];\n          }\n"


def test_doitgen_is_collapsed_and_planned() -> None:
    module = pipeline.lower(frontend.load(KERNELS / "doitgen.c"))
    (k,) = module.kernels
    launches = [s for s in k.body if isinstance(s, ir.Launch)]
    arrays = _arrays(k) | {s.name: s.ty for s in k.body if isinstance(s, ir.Alloc)}
    flat = collapse.collapse(launches[0], arrays, ir.identifiers(k))
    assert flat is not None and flat.arrays == {"A", "sum_x"} and flat.var == "rq"
    (loop,) = flat.launch.body
    assert isinstance(loop, ir.For) and loop.par == "y" and loop.ty == ir.I64
    assert [o.var for o in flat.outer] == ["r", "q"]
    plan = tile.plan(flat.launch)
    assert plan is not None and plan.row.var == "rq" and plan.col.var == "p" and plan.red.var == "s"
    assert {(o.index.array, o.side) for o in plan.operands} == {("A", "row"), ("C4", "col")}
    assert tile.plan(launches[0]) is None  # three par loops: only through the collapse
    planned = collapse.plan(launches[0], None, arrays, ir.identifiers(k))
    assert planned is not None and planned[1] is not None and planned[0].row.var == "rq"
    assert collapse.plan(launches[1], None, arrays, ir.identifiers(k)) is None  # the copy back: no matmul
    (gemm,) = [s for s in pipeline.lower(frontend.load(KERNELS / "gemm.c")).kernels[0].body
               if isinstance(s, ir.Launch)]
    direct = collapse.plan(gemm, None, {}, set())
    assert direct is not None and direct[1] is None  # planned as it is: no collapse needed


def test_collapsed_subscripts_and_guarded_trip_count() -> None:
    k, lp = _launch(MATMUL)
    flat = _collapse(k, lp)
    assert flat is not None and flat.arrays == {"W", "A"}
    shown = text.show(ir.Kernel("k", k.params, (flat.launch,)))
    assert "W[rq][p] += A[rq][s] * C[s][p];" in shown
    assert "for rq: i64 in 0L..nr > 0 && nq > 0 ? i64(nr) * i64(nq) : 0L par(y) {" in shown


@pytest.mark.parametrize("body", [
    "          W[r][q][p] = D[q][r];\n",  # the other order
    "          W[r][q][p] = A[r][0][p];\n",  # q not the second subscript
    "          W[r][q][p] = A[r][q][p] + (f64)r;\n",  # r outside a subscript
    "          W[r][q][p] = A[r][q][q];\n",  # q in the rest of a subscript
    "          W[r][q][p] = E[r][p][q];\n",  # second extent np, not nq
    "          W[r][q][p] = A[r][q][p];\n          W[0][0][p] = 1.0;\n",  # W also indexed otherwise
    "          for s in 0..q {\n            W[r][q][p] += C[s][p];\n          }\n",  # q in a bound
])
def test_refusals(body: str) -> None:
    k, lp = _launch(body)
    assert _collapse(k, lp) is None


def test_refuses_loops_not_from_zero_and_extents_that_differ() -> None:
    k, lp = _launch(MATMUL)
    (r,) = lp.body
    assert isinstance(r, ir.For) and isinstance(r.body[0], ir.For)
    q = r.body[0]
    shifted = dataclasses.replace(lp, body=(dataclasses.replace(r, lo=ir.Const(1, ir.I32)),))
    assert _collapse(k, shifted) is None
    short_q = dataclasses.replace(q, hi=ir.binary("-", q.hi, ir.Const(1, ir.I32)))
    assert _collapse(k, dataclasses.replace(lp, body=(dataclasses.replace(r, body=(short_q,)),))) is None
    two = dataclasses.replace(lp, body=q.body)
    assert _collapse(k, two) is None  # fewer than three par loops


def test_new_name_avoids_the_kernels_names() -> None:
    k, lp = _launch(MATMUL)
    flat = collapse.collapse(lp, _arrays(k), ir.identifiers(k) | {"rq"})
    assert flat is not None and flat.var == "rq1"


# ---------------------------------------------------------------------------
# Random launches: the collapsed launch on merged arrays computes what the original does


def _merged_kernel(k: ir.Kernel, flat: collapse.Collapsed) -> ir.Kernel:
    """``k`` with its launch replaced by the collapsed one and the merged arrays' first extents merged."""
    params = []
    for p in k.params:
        if isinstance(p.ty, ir.ArrayType) and p.name in flat.arrays:
            d0, d1 = (d if d.ty == ir.I64 else ir.Cast(d, ir.I64) for d in p.ty.dims[:2])
            p = dataclasses.replace(p, ty=ir.ArrayType(p.ty.elem, (ir.binary("*", d0, d1), *p.ty.dims[2:])))
        params.append(p)
    return ir.Kernel(k.name, tuple(params), (flat.launch,))


_READS = ["A[r][q][p]", "A[r][q][s]", "A[r][q][np - 1 - p]", "B[r][q]", "C[s][p]", "C[p][p]",
          "D[q][r]", "E[r][p][q]", "B[r][0]", "G[r][q]", "(f64)r", "(f64)s", "W[r][q][p]"]


@st.composite
def _bodies(draw: st.DrawFn) -> str:
    """Bodies that write only ``W[r][q][p]`` (so the par loops stay independent), some collapsible."""
    first = [r for r in _READS if "s" not in r.replace("(f64)", "")]
    lines = [f"          W[r][q][p] = {draw(st.sampled_from(first))};\n"]
    if draw(st.booleans()):
        hi = draw(st.sampled_from(["np", "p + 1"]))
        terms = " * ".join(draw(st.lists(st.sampled_from(_READS), min_size=1, max_size=2)))
        lines.append(f"          for s in 0..{hi} {{\n            W[r][q][p] += {terms};\n          }}\n")
    return "".join(lines)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_bodies(), st.integers(0, 4), st.integers(0, 4), st.integers(1, 4), st.integers(0, 2**16))
def test_random_launches_keep_their_meaning(body: str, nr: int, nq: int, np_: int, seed: int) -> None:
    k, lp = _launch(body)
    flat = _collapse(k, lp)
    event("collapsed" if flat is not None else "refused")
    if flat is None:
        return
    merged = _merged_kernel(k, flat)
    ircheck.check(ir.Module((), (merged,)))
    rng = np.random.default_rng(seed)
    shapes = {"W": (nr, nq, np_), "A": (nr, nq, np_), "B": (nr, nq), "C": (np_, np_), "D": (nq, nr),
              "E": (nr, np_, np_), "G": (nr, nq + 1)}
    args: dict[str, object] = {"nr": nr, "nq": nq, "np": np_}
    args |= {a: rng.normal(size=s) for a, s in shapes.items()}
    want = interp.run(ir.Module((), (k,)), "k", args)
    flat_args = {a: (v.reshape(nr * nq, *v.shape[2:]) if a in flat.arrays else v)  # type: ignore[union-attr]
                 for a, v in args.items()}
    got = interp.run(ir.Module((), (merged,)), "k", flat_args, shuffle=seed)
    for a in shapes:
        assert np.array_equal(got[a].reshape(shapes[a]), want[a]), a


def test_random_launches_are_sometimes_collapsed() -> None:
    from hypothesis import find

    body = find(_bodies(), lambda b: _collapse(*_launch(b)) is not None, settings=settings(max_examples=300))
    assert _collapse(*_launch(body)) is not None


def test_negative_extents_give_no_iterations() -> None:
    """Two negative extents: the original runs nothing, so the merged loop must not run their product."""
    src = ("kernel k(i32 nr, i32 nq, i32 np, inout f64 W[nr][nq][np], in f64 C[np][np]) {\n  launch {\n"
           "    for r in 0..nr par(z) {\n      for q in 0..nq par(y) {\n        for p in 0..np par(x) {\n"
           "          W[r][q][p] = C[p][p];\n        }\n      }\n    }\n  }\n}\n")
    (k,) = text.parse(src).kernels
    (lp,) = k.body
    assert isinstance(lp, ir.Launch)
    flat = _collapse(k, lp)
    assert flat is not None
    merged = _merged_kernel(k, flat)  # W: [(i64)nr * (i64)nq][np], 6 x 2 for nr = -2, nq = -3
    out = interp.run(ir.Module((), (merged,)), "k", {"nr": -2, "nq": -3, "np": 2, "W": np.zeros((6, 2)),
                                                        "C": np.ones((2, 2))})
    assert not out["W"].any()  # without the guard, rows 0..5 would be written


# ---------------------------------------------------------------------------
# Emission


def _emit(options: tile.Options | None = None) -> tuple[ir.Module, ir.Module, str]:
    path = KERNELS / "doitgen.c"
    module = frontend.load(path)
    lowered = pipeline.lower(module)
    return module, lowered, cuda.emit(lowered, source=path.name, tiling=options)


def test_doitgen_emits_a_tiled_kernel() -> None:
    _, _, out = _emit()
    assert "mma.sync.aligned.m16n8k8" in out and "rq_hi" in out
    assert "A[rq * np + s]" in out  # the merged row, one multiply per address
    _, _, fma = _emit(tile.Options(mma=False))
    assert "Block tiles" in fma and "mma.sync" not in fma
    _, _, off = _emit(tile.Options(enabled=False))
    assert "rq" not in off  # no plan, no collapse: the plain 3-D launch


@needs_gxx
@pytest.mark.parametrize("opts", ["mma", "fma", "no-shared"])
def test_doitgen_matches_the_reference(opts: str) -> None:
    options = {"mma": None, "fma": tile.Options(mma=False), "no-shared": tile.Options(shared=False)}[opts]
    module, lowered, out = _emit(options)
    sizes = {"nr": 3, "nq": 23, "np": 37}  # 69 rows of 37: tiles of 64 rows straddle r
    (report,) = verify_module(module, out, source=KERNELS / "doitgen.c", lowered=lowered,
                              options=Options(seed=5, mode="full", sizes=sizes, stages="abc", gpu=False,
                                              sim_work=simstage.SMALL_WORK))
    assert report.ok and report.stage("c").status == "pass", report.summary()
