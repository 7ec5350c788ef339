"""The memoised dependence analysis gives the same graphs as solving every question afresh.

``passes.deps`` memoises each isl question on its text (see ``_dependences``).
A wrong key would silently reuse an answer for a different problem, so every
kernel the pipeline analyses (the input and each intermediate form of
distribute, interchange, wavefront and map-gpu) is analysed again with the
cache off and the graphs must be identical: for the 30 PolyBench kernels and
for random affine nests, with one warm cache shared by all of them.  The
direction/distance computation is also checked against a direct isl
formulation (projection onto the distance, then lexmin/lexmax), the one
``deps`` used before it was made fast.

Cost: on random nests an example is one run of the pipeline (most of it the
passes themselves) plus the analysis with the cache off.  The latter solves
each distinct question once per example (see :func:`assert_same_uncached`),
and the pipeline runs without ``verify_each`` (see the property).
"""

from __future__ import annotations

import dataclasses
import os

import islpy as isl
import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings

from passes import deps
from tests import affine_nests, polybench
from transpile import ir, pipeline
from transpile.frontend import c as cfront


def dump(g: nx.MultiDiGraph) -> str:
    nodes = sorted((n, sorted(d.items())) for n, d in g.nodes(data=True))
    return f"{nodes}\n{deps.format_graph(g)}"


def analysed(module: ir.Module, monkeypatch: pytest.MonkeyPatch, *,
             verify_each: bool = True) -> list[tuple[ir.Kernel, str]]:
    """Every kernel the pipeline analyses while lowering ``module``, with its (cached) graph."""
    seen: list[tuple[ir.Kernel, str]] = []
    real = deps.analyze

    def record(k: ir.Kernel) -> nx.MultiDiGraph:
        g = real(k)
        seen.append((k, dump(g)))
        return g

    with monkeypatch.context() as m:
        m.setattr(deps, "analyze", record)
        pipeline.lower(module, verify_each=verify_each)
    return seen


def assert_same_uncached(seen: list[tuple[ir.Kernel, str]]) -> None:
    """Every recorded graph equals its kernel's graph with the cache off.

    The pipeline analyses an unchanged kernel again in the next pass, and
    consecutive forms of one kernel share most of their pairs of accesses:
    each distinct kernel is analysed once, and each distinct question once.
    The questions are told apart by their full text (``repr``, every field),
    not by deps' memo key, and the answers live for this call only: nothing
    is carried over from the pipeline's run or from another example.
    """
    answers: dict[str, tuple[deps._Dep, ...]] = {}
    solve = deps._solve

    def solve_once(*question: object) -> tuple[deps._Dep, ...]:
        key = repr(question)
        if key not in answers:
            answers[key] = solve(*question)  # type: ignore[arg-type]
        return answers[key]

    fresh: dict[ir.Kernel, str] = {}
    deps.set_cache(False)
    try:
        with pytest.MonkeyPatch.context() as m:
            m.setattr(deps, "_solve", solve_once)
            for k, want in seen:
                if k not in fresh:
                    fresh[k] = dump(deps.analyze(k))
                assert fresh[k] == want, f"cache changed the graph of\n{k}"
    finally:
        deps.set_cache(True)


@pytest.mark.parametrize("name", polybench.NAMES)
def test_polybench_graphs_same_with_and_without_cache(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = polybench.spec(name)
    module = cfront.parse_file(str(spec.path), function=spec.function)
    seen = analysed(module, monkeypatch)
    if not seen:  # passes/closure.py maps floyd-warshall before any pass asks for its graph
        assert name == "floyd-warshall"
        seen = [(k, dump(deps.analyze(k))) for k in module.kernels]
    assert_same_uncached(seen)


@settings(max_examples=int(os.environ.get("TRANSPILE_FUZZ_EXAMPLES", "100")), deadline=None,
          suppress_health_check=list(HealthCheck))
@pytest.mark.slow
@given(affine_nests.kernels())
def test_random_nests_graphs_same_with_and_without_cache(k: ir.Kernel) -> None:
    # The cache stays warm across examples: answers must not leak between kernels.
    # NOTE: verify_each=False: the pipeline is only the source of the kernels to analyse here.
    # IR checks after every pass on the same random nests are test_parallel_semantics' job;
    # here they were a ninth of an example's time.
    with pytest.MonkeyPatch.context() as mp:
        seen = analysed(ir.Module((), (k,)), mp, verify_each=False)
    assert_same_uncached(seen)


def test_set_cache_off_solves_afresh() -> None:
    n, i = ir.Var("n", ir.I32), ir.Var("i", ir.I32)
    a = ir.ArrayType(ir.F64, (ir.binary("+", n, ir.Const(1, ir.I32)),))
    shifted = ir.Index("A", (ir.binary("+", i, ir.Const(1, ir.I32)),), ir.F64)
    copy = ir.assign(shifted, ir.Index("A", (i,), ir.F64))
    body = (ir.For("i", ir.I32, ir.Const(0, ir.I32), n, 1, (copy,)),)
    k = ir.Kernel("k", (ir.Param("n", ir.I32), ir.Param("A", a, "inout")), body)
    deps.set_cache(True)
    want = dump(deps.analyze(k))
    hits = deps._solve_cached.cache_info().hits
    assert dump(deps.analyze(dataclasses.replace(k))) == want  # an equal kernel, not the remembered object
    assert deps._solve_cached.cache_info().hits > hits
    deps.clear_cache()
    deps.set_cache(False)
    try:
        assert dump(deps.analyze(k)) == want
        assert deps._solve_cached.cache_info().currsize == 0
    finally:
        deps.set_cache(True)


def test_one_kernel_object_is_analysed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The graph of a kernel object is remembered (IR nodes are immutable): asking again poses no
    question and gives the same frozen graph; an equal kernel built anew is analysed on its own."""
    n, i = ir.Var("n", ir.I32), ir.Var("i", ir.I32)
    a = ir.ArrayType(ir.F64, (ir.binary("+", n, ir.Const(1, ir.I32)),))
    shifted = ir.Index("A", (ir.binary("+", i, ir.Const(1, ir.I32)),), ir.F64)
    body = (ir.For("i", ir.I32, ir.Const(0, ir.I32), n, 1, (ir.assign(shifted, ir.Index("A", (i,), ir.F64)),)),)
    k = ir.Kernel("k", (ir.Param("n", ir.I32), ir.Param("A", a, "inout")), body)
    asked = [0]
    real = deps._dependences

    def counted(*args: object) -> object:
        asked[0] += 1
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(deps, "_dependences", counted)
    g = deps.analyze(k)
    first = asked[0]
    assert first > 0 and deps.analyze(k) is g and asked[0] == first
    with pytest.raises(nx.NetworkXError):  # shared: no caller may change it
        g.add_edge("S0", "S1")
    again = dataclasses.replace(k)
    assert dump(deps.analyze(again)) == dump(g) and asked[0] == 2 * first


# --- the direction/distance vectors against a direct formulation -------------------------


def reference_vectors(s: deps._System, level: int,
                      m: int) -> tuple[tuple[str, ...], tuple[int | None, ...]]:
    """Project the dependence onto each level's distance ``d`` and read sign and constancy off it."""
    dims, params = ", ".join(s.iv + s.jv), ", ".join(s.params)

    def diff(k: int) -> str:
        return f"{s.signs[k]} * ({s.jv[k]} - {s.iv[k]})"

    prefix = [f"{s.iv[k]} = {s.jv[k]}" for k in range(level - 1 if level else m)]
    fixed = list(s.dom + s.eqs) + prefix + ([f"{diff(level - 1)} > 0"] if level else [])
    dirs, dists = [], []
    for k in range(m):
        d = isl.Set(f"[{params}] -> {{ [d] : exists ({dims} : {' and '.join(fixed + [f'd = {diff(k)}'])}) }}")
        signs = [sym for sym, c in (("<", "d > 0"), ("=", "d = 0"), (">", "d < 0"))
                 if not d.intersect(isl.Set(f"[{params}] -> {{ [d] : {c} }}")).is_empty()]
        dirs.append(signs[0] if len(signs) == 1 else "*")
        dists.append(_constant(d))
    return tuple(dirs), tuple(dists)


def _constant(s: isl.Set) -> int | None:
    if s.is_empty() or not s.is_bounded():
        return None
    try:
        lo, hi = s.lexmin(), s.lexmax()
    except isl.Error:
        return None
    if not lo.is_equal(hi):
        return None
    c = int(lo.sample_point().get_coordinate_val(isl.dim_type.set, 0).to_python())
    return c if s.is_subset(isl.Set(f"{{ [d] : d = {c} }}").align_params(s.get_space())) else None


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(affine_nests.kernels())
def test_vectors_match_direct_projection(k: ir.Kernel) -> None:
    questions: list[tuple[deps._System, int, tuple[deps._Dep, ...]]] = []
    real = deps._solve

    def record(system: deps._System, m: int, first: int, ordered: bool) -> tuple[deps._Dep, ...]:
        out = real(system, m, first, ordered)
        questions.append((system, m, out))
        return out

    deps.set_cache(False)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(deps, "_solve", record)
            deps.analyze(k)
    finally:
        deps.set_cache(True)
    for system, m, found in questions:
        for dep in found:
            assert (dep.direction, dep.distance) == reference_vectors(system, dep.level, m), system
