"""Dependence analysis: the statement dependence graph of a kernel, exact via isl.

``analyze(kernel) -> networkx.MultiDiGraph``.  Nodes are the statement ids of
:mod:`passes.accesses` (``S0, S1, ...``, pre-order) with attributes ``kind``,
``depth`` and ``loops`` (the ids of the enclosing loops, outermost first; a
loop's id is the id of its bounds statement).  One edge per dependence
``source -> sink`` with attributes:

* ``name``: the array or scalar; ``kind``: ``flow`` | ``anti`` | ``output``;
* ``level``: the 1-based loop level that carries it, or ``0`` for a
  loop-independent dependence; ``loop``: the carrying loop's id (or None);
* ``direction``: one of ``< = > *`` per common loop level;
  ``distance``: the constant distance per common level, or None where it is
  not constant.  Both are in execution order (a downward loop's next
  iteration is at distance +1).

The test is exact for affine subscripts and affine loop bounds (including
coupled subscripts and triangular bounds): each question "is there a pair of
instances, ordered like this, touching the same element?" is an isl emptiness
test over the integer points of the two iteration domains.  Where a subscript
or a bound is not affine (array reads, products of variables), that
constraint is dropped, which over-approximates the dependence: the test stays
sound.  Scalars are 0-dimensional arrays; a scalar declared inside a loop's
body is a fresh instance per iteration, so no dependence on it is carried by
that loop or any loop outside it.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from dataclasses import dataclass

import islpy as isl
import networkx as nx

from passes import accesses as acc_mod
from passes.accesses import Access, Affine, StmtInfo
from transpile import ir


def analyze(kernel: ir.Kernel) -> nx.MultiDiGraph:
    """The dependence graph of ``kernel`` (see the module docstring)."""
    stmts = acc_mod.analyze(kernel)
    loop_ids = _loop_ids(stmts)
    decl_depth = {s.node.name: s.depth for s in stmts if isinstance(s.node, ir.Decl)}
    g = nx.MultiDiGraph()
    for s in stmts:
        g.add_node(s.id, kind=s.kind, depth=s.depth, loops=tuple(loop_ids[id(lp)] for lp in s.loops))
    params = sorted(acc_mod.parameters(kernel))
    for src, dst in itertools.product(stmts, stmts):
        # Accesses with the same subscripts give the same answer: test each pair once,
        # and keep one edge per distinct (name, kind, level, direction, distance).
        seen: set[tuple[object, ...]] = set()
        for a in src.accesses:
            for b in dst.accesses:
                if a.name != b.name or not (a.write or b.write):
                    continue
                key = (a.name, a.write, a.subscripts, b.write, b.subscripts)
                if key in seen:
                    continue
                seen.add(key)
                for dep in _dependences(src, a, dst, b, params, decl_depth.get(a.name, 0)):
                    level = dep.level
                    attrs = dict(name=a.name, kind=_kind(a, b), level=level,
                                 loop=loop_ids[id(src.loops[level - 1])] if level else None,
                                 direction=dep.direction, distance=dep.distance)
                    edge = tuple(sorted(attrs.items()))
                    if edge not in seen:
                        seen.add(edge)
                        g.add_edge(src.id, dst.id, **attrs)
    return g


def _loop_ids(stmts: list[StmtInfo]) -> dict[int, str]:
    return {id(s.node): s.id for s in stmts if s.kind == "bounds"}


def loop_ids(kernel: ir.Kernel) -> dict[int, str]:
    """``id(for_node) -> loop id`` for every loop of ``kernel`` (ids as in :func:`analyze`)."""
    return _loop_ids(acc_mod.analyze(kernel))


def _kind(a: Access, b: Access) -> str:
    if a.write and b.write:
        return "output"
    return "flow" if a.write else "anti"


@dataclass(frozen=True)
class _Dep:
    level: int
    direction: tuple[str, ...]
    distance: tuple[int | None, ...]


def common_depth(s: StmtInfo, t: StmtInfo) -> int:
    """How many enclosing loops ``s`` and ``t`` share."""
    n = 0
    for a, b in zip(s.loops, t.loops):
        if a is not b:
            break
        n += 1
    return n


def _dependences(src: StmtInfo, a: Access, dst: StmtInfo, b: Access, params: list[str],
                 private_depth: int) -> list[_Dep]:
    """The levels at which instances of access ``a`` precede conflicting instances of ``b``."""
    m = common_depth(src, dst)
    base = _Problem(src, a, dst, b, params)
    found = []
    # A scalar declared inside the first k common loops is private to them.
    first = private_depth + 1 if a.is_scalar else 1
    for level in range(first, m + 1):
        if base.nonempty(base.carried(level)):
            found.append(level)
    if src.seq < dst.seq and base.nonempty(base.equal_prefix(m)):
        found.append(0)
    return [_Dep(lv, *base.vectors(lv, m)) for lv in found]


class _Problem:
    """The isl formulation of one pair of accesses."""

    def __init__(self, src: StmtInfo, a: Access, dst: StmtInfo, b: Access, params: list[str]) -> None:
        self.src, self.dst = src, dst
        self.iv = [f"i{k}" for k in range(src.depth)]
        self.jv = [f"j{k}" for k in range(dst.depth)]
        self.params = [_pname(p) for p in params]
        names_s = {lp.var: v for lp, v in zip(src.loops, self.iv)}
        names_t = {lp.var: v for lp, v in zip(dst.loops, self.jv)}
        pset = frozenset(params)
        cons = _domain(src.loops, names_s, pset) + _domain(dst.loops, names_t, pset)
        for sa, sb in zip(a.subscripts, b.subscripts):
            if sa is not None and sb is not None:
                cons.append(f"{_render(sa, names_s)} = {_render(sb, names_t)}")
        self.base = cons
        self.steps = [lp.step for lp in src.loops]

    def _diff(self, k: int) -> str:
        # Execution-order distance at level k+1: positive when dst runs later.
        sign = 1 if self.steps[k] > 0 else -1
        return f"{sign} * ({self.jv[k]} - {self.iv[k]})"

    def equal_prefix(self, n: int) -> list[str]:
        return [f"{self.iv[k]} = {self.jv[k]}" for k in range(n)]

    def carried(self, level: int) -> list[str]:
        return self.equal_prefix(level - 1) + [f"{self._diff(level - 1)} > 0"]

    def _set(self, extra: list[str], out: str = "") -> isl.Set:
        cons = " and ".join(self.base + extra) or "true"
        dims = ", ".join(self.iv + self.jv)
        p = ", ".join(self.params)
        if out:
            return isl.Set(f"[{p}] -> {{ [{out}] : exists ({dims} : {cons}) }}")
        return isl.Set(f"[{p}] -> {{ [{dims}] : {cons} }}")

    def nonempty(self, extra: list[str]) -> bool:
        return not self._set(extra).is_empty()

    def vectors(self, level: int, m: int) -> tuple[tuple[str, ...], tuple[int | None, ...]]:
        """Direction and constant distance at each common level, for a dependence at ``level``."""
        fixed = self.carried(level) if level else self.equal_prefix(m)
        dirs: list[str] = []
        dists: list[int | None] = []
        for k in range(m):
            d = self._set(fixed + [f"d = {self._diff(k)}"], out="d")
            signs = [sym for sym, c in (("<", "d > 0"), ("=", "d = 0"), (">", "d < 0"))
                     if not d.intersect(isl.Set(f"[{', '.join(self.params)}] -> {{ [d] : {c} }}")).is_empty()]
            dirs.append(signs[0] if len(signs) == 1 else "*")
            dists.append(_constant(d))
        return tuple(dirs), tuple(dists)


def _constant(s: isl.Set) -> int | None:
    """The single value of a 1-d set, if it has exactly one for all parameters."""
    if s.is_empty() or not s.is_bounded():
        return None
    try:
        lo, hi = s.lexmin(), s.lexmax()
    except isl.Error:  # e.g. an unbounded optimum for some parameter values
        return None
    if not lo.is_equal(hi):
        return None
    try:
        pt = lo.sample_point()
        v = pt.get_coordinate_val(isl.dim_type.set, 0)
    except isl.Error:
        return None
    c = int(v.to_python())
    probe = isl.Set(f"{{ [d] : d = {c} }}").align_params(s.get_space())
    return c if s.is_subset(probe) else None


def _pname(p: str) -> str:
    return f"p_{p}"


def _render(e: Affine, names: dict[str, str]) -> str:
    terms = [f"{c} * {names.get(v, _pname(v))}" for v, c in e.coeffs]
    return " + ".join([*terms, str(e.const)])


def _domain(loops: tuple[ir.For, ...], names: dict[str, str], params: frozenset[str]) -> list[str]:
    """Constraints of the iteration domain of ``loops`` (affine parts only)."""
    cons: list[str] = []
    outer: set[str] = set()
    for lp in loops:
        v = names[lp.var]
        allowed = params | outer
        lo, hi = acc_mod.affine(lp.lo, allowed), acc_mod.affine(lp.hi, allowed)
        if lo is not None:
            cons.append(f"{v} >= {_render(lo, names)}")
        if hi is not None:
            cons.append(f"{v} < {_render(hi, names)}")
        if abs(lp.step) != 1:
            # Only every step-th value is visited, counted from the start.
            start = lo if lp.step > 0 else hi
            if start is not None:
                off = 0 if lp.step > 0 else -1
                cons.append(f"exists (e_{v} : {v} = {_render(start, names)} + {off} + {lp.step} * e_{v})")
        outer.add(lp.var)
    return cons


def analyze_or_none(kernel: ir.Kernel) -> nx.MultiDiGraph | None:
    """:func:`analyze`, or None when isl cannot answer (e.g. an unbounded domain).

    Transforms treat None as "every loop may carry a dependence": they do nothing.
    """
    try:
        return analyze(kernel)
    except isl.Error:
        return None


def rewrite_to_fixpoint(kernel: ir.Kernel,
                        step: Callable[[tuple[ir.Stmt, ...], nx.MultiDiGraph], tuple[ir.Stmt, ...] | None],
                        *, max_steps: int = 64) -> ir.Kernel:
    """Apply ``step(body, graph)`` until it returns None, re-analysing after every change.

    Graphs are never reused across a transform: each step sees the dependences
    of the body it rewrites.  ``max_steps`` bounds the work (each step runs isl).
    """
    if any(isinstance(n, ir.Launch) for n in ir.walk(kernel)):
        return kernel
    for _ in range(max_steps):
        graph = analyze_or_none(kernel)
        if graph is None:
            break
        body = step(kernel.body, graph)
        if body is None:
            break
        kernel = dataclasses.replace(kernel, body=body)
    return kernel


def carried_loops(graph: nx.MultiDiGraph) -> set[str]:
    """Ids of the loops that carry at least one dependence in ``graph``."""
    return {d["loop"] for _, _, d in graph.edges(data=True) if d["level"]}


def parallel_loops(kernel: ir.Kernel, graph: nx.MultiDiGraph | None = None) -> set[str]:
    """Ids of the loops of ``kernel`` that carry no dependence: their iterations may run in any order."""
    g = analyze(kernel) if graph is None else graph
    loops = {n for n, d in g.nodes(data=True) if d["kind"] == "bounds"}
    return loops - carried_loops(g)


def format_graph(graph: nx.MultiDiGraph) -> str:
    """A readable, deterministic dump: one line per dependence."""
    lines = []
    for u, v, d in sorted(graph.edges(data=True), key=lambda e: (_seq(e[0]), _seq(e[1]), e[2]["name"],
                                                                 e[2]["kind"], e[2]["level"])):
        where = f"carried by loop {d['loop']} (level {d['level']})" if d["level"] else "loop-independent"
        dist = ",".join("*" if x is None else str(x) for x in d["distance"])
        lines.append(f"{u} -> {v}  {d['kind']:<6} {d['name']:<8} {where}  "
                     f"dir ({','.join(d['direction'])}) dist ({dist})")
    return "\n".join(lines)


def _seq(node: str) -> int:
    return int(node[1:])
