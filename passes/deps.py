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
test over the integer points of the two iteration domains (answers are memoised
on the text of the question, see ``_dependences``).  Where a subscript
or a bound is not affine (array reads, products of variables), that
constraint is dropped, which over-approximates the dependence: the test stays
sound.  Scalars are 0-dimensional arrays; a scalar declared inside a loop's
body is a fresh instance per iteration, so no dependence on it is carried by
that loop or any loop outside it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import islpy as isl
import networkx as nx

from passes import accesses as acc_mod
from passes import budget
from passes.accesses import Access, Affine, StmtInfo
from transpile import ir


def analyze(kernel: ir.Kernel) -> nx.MultiDiGraph:
    """The dependence graph of ``kernel`` (see the module docstring); frozen (``nx.freeze``): the
    graph of one kernel object is remembered (:func:`passes.accesses.per_kernel`) and shared."""
    if not _cache_enabled:
        return _analyze(kernel)
    return acc_mod.per_kernel("deps", kernel, _analyze)


def _analyze(kernel: ir.Kernel) -> nx.MultiDiGraph:
    stmts = acc_mod.analyze(kernel)
    loop_ids = _loop_ids(stmts)
    decl_depth = _decl_depth(stmts)
    g = nx.MultiDiGraph()
    for s in stmts:
        g.add_node(s.id, kind=s.kind, depth=s.depth, loops=tuple(loop_ids[id(lp)] for lp in s.loops))
    params = sorted(acc_mod.parameters(kernel))
    facts = parameter_facts(kernel, frozenset(params))
    domains: dict[tuple[int, str], _Domain] = {}
    for src, dst in _conflicting_pairs(stmts):
        budget.check()
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
                for dep in _dependences(src, a, dst, b, params, decl_depth.get(a.name, 0), domains, facts):
                    level = dep.level
                    attrs = dict(name=a.name, kind=_kind(a, b), level=level,
                                 loop=loop_ids[id(src.loops[level - 1])] if level else None,
                                 direction=dep.direction, distance=dep.distance)
                    edge = tuple(sorted(attrs.items()))
                    if edge not in seen:
                        seen.add(edge)
                        g.add_edge(src.id, dst.id, **attrs)
    return nx.freeze(g)


def _conflicting_pairs(stmts: list[StmtInfo]) -> Iterator[tuple[StmtInfo, StmtInfo]]:
    """The pairs ``(src, dst)`` of ``stmts`` with an access of one name in each, one of them a write,
    in the order of ``itertools.product(stmts, stmts)`` (so the graph's edges keep their order).

    Grouping the statements by the names they touch makes the work grow with the pairs that may
    conflict, not with the square of the statements (a long chain of statements, each touching
    its own arrays, has a linear number of such pairs)."""
    touching: dict[str, list[int]] = {}
    writing: dict[str, list[int]] = {}
    for k, s in enumerate(stmts):
        for a in s.accesses:
            for table in (touching, writing) if a.write else (touching,):
                where = table.setdefault(a.name, [])
                if not where or where[-1] != k:
                    where.append(k)
    for src in stmts:
        names_w = {a.name for a in src.accesses if a.write}
        names_r = {a.name for a in src.accesses if not a.write} - names_w
        lists = [touching[x] for x in names_w] + [writing[x] for x in names_r if x in writing]
        if not lists:
            continue
        dsts = lists[0] if len(lists) == 1 else sorted(set().union(*lists))
        for k in dsts:
            yield src, stmts[k]


def _decl_depth(stmts: list[StmtInfo]) -> dict[str, int]:
    return {s.node.name: s.depth for s in stmts if isinstance(s.node, ir.Decl)}


@dataclass(frozen=True)
class Context:
    """What a question about part of a kernel needs from the whole kernel (see :func:`carried_across`):
    its parameters (sorted) and the depth of each scalar's declaration (the last one of a name)."""

    params: list[str]
    param_set: frozenset[str]
    decl_depth: Mapping[str, int]
    facts: tuple[str, ...] = ()


def context(kernel: ir.Kernel) -> Context:
    """``kernel``'s :class:`Context`."""
    params = acc_mod.parameters(kernel)
    return Context(sorted(params), params, _decl_depth(acc_mod.analyze(kernel)), parameter_facts(kernel, params))


def carried_across(first: list[StmtInfo], second: list[StmtInfo], ctx: Context, levels: range) -> bool:
    """Whether a dependence between a statement of ``first`` and one of ``second`` (either way) is
    carried at one of ``levels`` (1-based), as :func:`analyze` of the kernel they belong to would
    find it.  Both lists come from one :func:`passes.accesses.analyze_body` (their numbers give the
    statements' textual order); ``ctx`` is the kernel's.  Raises ``isl.Error`` as :func:`analyze`
    does.

    A transform that joins two parts of a nest (fusion) asks this of the pairs it reorders
    instead of analysing the whole kernel again: the other pairs' questions do not change."""
    by_name: dict[str, list[int]] = {}
    for k, t in enumerate(second):
        for b in t.accesses:
            where = by_name.setdefault(b.name, [])
            if not where or where[-1] != k:
                where.append(k)
    domains: dict[tuple[int, str], _Domain] = {}
    for s in first:
        budget.check()
        near = sorted({k for a in s.accesses for k in by_name.get(a.name, ())})
        for t in (second[k] for k in near):
            for src, dst in ((s, t), (t, s)):
                for a in src.accesses:
                    for b in dst.accesses:
                        if a.name != b.name or not (a.write or b.write):
                            continue
                        found = _dependences(src, a, dst, b, ctx.params, ctx.decl_depth.get(a.name, 0), domains,
                                             ctx.facts)
                        if any(d.level in levels for d in found):
                            return True
    return False


def entry_reads(kernel: ir.Kernel) -> dict[str, list[ir.Index]]:
    """Per array the kernel writes, its element reads that only ever see the array's values at entry.

    A read is listed when no instance of any write to that array, anywhere in
    ``kernel``, precedes an instance of the read and touches its element (no
    flow dependence into it, loop-carried or not).  Exact for affine subscripts
    and bounds; where the test over-approximates (a non-affine subscript) a
    flow is assumed, so a listed read is always one.  The reads are the IR
    nodes themselves (compare by identity).
    """
    stmts = acc_mod.analyze(kernel)
    params = sorted(acc_mod.parameters(kernel))
    writes: dict[str, list[tuple[StmtInfo, Access]]] = {}
    for s in stmts:
        for a in s.writes():
            if not a.is_scalar:
                writes.setdefault(a.name, []).append((s, a))
    written = writes.keys()
    domains: dict[tuple[int, str], _Domain] = {}
    out: dict[str, list[ir.Index]] = {}
    seen: set[int] = set()  # ids of nodes with a read that is not an entry read
    for t in stmts:
        for b in t.reads():
            if b.is_scalar or b.name not in written or not isinstance(b.node, ir.Index):
                continue
            if all(not _dependences(s, a, t, b, params, 0, domains) for s, a in writes[b.name]):
                out.setdefault(b.name, []).append(b.node)
            else:
                seen.add(id(b.node))
    # NOTE: one node object may stand in several places (a transform may share a subtree); a caller
    # replaces reads by identity, so a node that is not an entry read somewhere is not listed at all.
    return {name: kept for name, nodes in out.items() if (kept := [n for n in nodes if id(n) not in seen])}


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


# Every question about a pair of accesses is a pure function of its isl
# formulation, written over positional names (i0.. for the source's loops, j0..
# for the sink's, p_<name> for parameters), so answers are memoised on that
# text.  Transforms rebuild loops and renumber statements, but a pair of
# accesses whose subscripts and loop bounds did not change renders to the same
# system and is not solved again.  The memo holds plain Python answers, is
# bounded, and is right across kernels because the key is the whole problem
# (:func:`set_cache` turns it off; tests/test_deps_cache.py checks both agree).
CACHE_SIZE = 1 << 14
_cache_enabled = True


def set_cache(enabled: bool) -> None:
    """Turn the memo of dependence questions on or off (off: every question is solved afresh)."""
    global _cache_enabled
    _cache_enabled = enabled


def clear_cache() -> None:
    """Forget every memoised answer."""
    _solve_cached.cache_clear()
    _nonempty_cached.cache_clear()
    _parse.cache_clear()
    acc_mod.clear_recent()  # and the remembered graphs


def _dependences(src: StmtInfo, a: Access, dst: StmtInfo, b: Access, params: list[str],
                 private_depth: int, domains: dict[tuple[int, str], _Domain],
                 facts: tuple[str, ...] = ()) -> tuple[_Dep, ...]:
    """The levels at which instances of access ``a`` precede conflicting instances of ``b`` (``facts``:
    :func:`parameter_facts`)."""
    m = common_depth(src, dst)
    # A scalar declared inside the first k common loops is private to them.
    first = private_depth + 1 if a.is_scalar else 1
    question = (_system(src, a, dst, b, params, domains, facts), m, first, src.seq < dst.seq)
    return _solve_cached(*question) if _cache_enabled else _solve(*question)


# _System(params, iv, jv, dom, eqs, signs): the conflict of two accesses as isl
# constraints over the source's iteration vector iv, the sink's jv and the
# parameters: dom bounds both iteration domains, eqs equates the subscripts;
# signs[k] is +1 for an upward source loop at level k+1, -1 downward.
@dataclass(frozen=True)
class _System:
    params: tuple[str, ...]
    iv: tuple[str, ...]
    jv: tuple[str, ...]
    dom: tuple[str, ...]
    eqs: tuple[str, ...]
    signs: tuple[int, ...]


# One statement's part of its questions, as source (prefix "i") or sink ("j"): loop variable -> isl
# name, the domain constraints, the loop variables' isl names, the loops' signs, and the rendered
# subscripts of its accesses (by the access's id: the statement holds its accesses while the memo
# lives, for one analysis).
_Domain = tuple[dict[str, str], tuple[str, ...], tuple[str, ...], tuple[int, ...], dict[int, tuple[str | None, ...]]]


def _system(src: StmtInfo, a: Access, dst: StmtInfo, b: Access, params: list[str],
            domains: dict[tuple[int, str], _Domain] | None = None, facts: tuple[str, ...] = ()) -> _System:
    """The isl problem of a pair of accesses; ``domains`` memoises each statement's domain for one kernel."""
    domains = {} if domains is None else domains
    names_s, dom_s, iv, signs, subs_s = _stmt_domain(src, "i", params, domains)
    names_t, dom_t, jv, _, subs_t = _stmt_domain(dst, "j", params, domains)
    ra = subs_s.get(id(a)) or _render_subscripts(a, names_s, subs_s)
    rb = subs_t.get(id(b)) or _render_subscripts(b, names_t, subs_t)
    eqs = tuple(f"{x} = {y}" for x, y in zip(ra, rb) if x is not None and y is not None)
    return _System(tuple(param_name(p) for p in params), iv, jv, dom_s + dom_t + facts, eqs, signs)


def _render_subscripts(a: Access, names: dict[str, str], memo: dict[int, tuple[str | None, ...]]) -> tuple[str | None, ...]:
    out = memo[id(a)] = tuple(None if x is None else render_affine(x, names) for x in a.subscripts)
    return out


def _stmt_domain(s: StmtInfo, prefix: str, params: list[str],
                 domains: dict[tuple[int, str], _Domain]) -> _Domain:
    key = (s.seq, prefix)
    found = domains.get(key)
    if found is None:
        names = {lp.var: f"{prefix}{k}" for k, lp in enumerate(s.loops)}
        found = domains[key] = (names, tuple(domain_constraints(s.loops, names, frozenset(params))),
                                tuple(f"{prefix}{k}" for k in range(s.depth)),
                                tuple(1 if lp.step > 0 else -1 for lp in s.loops), {})
    return found


def _solve(system: _System, m: int, first: int, ordered: bool) -> tuple[_Dep, ...]:
    """Dependences at levels ``first..m`` (carried) and 0 (if ``ordered``: source before sink)."""
    p = _Sets(system)
    found = [level for level in range(first, m + 1) if not p.carried(level).is_empty()]
    if ordered and not p.prefix(m).is_empty():
        found.append(0)
    return tuple(_Dep(level, *p.vectors(level, m)) for level in found)


_solve_cached = functools.lru_cache(maxsize=CACHE_SIZE)(_solve)


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> isl.Set:
    # Parsing costs far more than intersecting.  islpy never modifies an
    # operand (it copies what isl consumes), so parsed sets can be shared.
    return isl.Set(text)


class _Sets:
    """The isl sets of one :class:`_System`: the domain is parsed once and narrowed by intersection."""

    def __init__(self, s: _System) -> None:
        self.s = s
        self.head = f"[{', '.join(s.params)}] -> {{ [{', '.join(s.iv + s.jv)}] : "
        # The domains part is shared by every pair of accesses of two statements: parse it once.
        dom = _parse(self.head + (" and ".join(s.dom) or "true") + " }")
        self._prefix = [dom.intersect(_parse(self.head + " and ".join(s.eqs) + " }")) if s.eqs else dom]

    def with_(self, base: isl.Set, cond: str) -> isl.Set:
        return base.intersect(_parse(self.head + cond + " }"))

    def diff(self, k: int) -> str:
        # Execution-order distance at level k+1: positive when the sink runs later.
        return f"{self.s.signs[k]} * ({self.s.jv[k]} - {self.s.iv[k]})"

    def prefix(self, n: int) -> isl.Set:
        """Instance pairs with equal iteration vectors on the first ``n`` levels."""
        while len(self._prefix) <= n:
            k = len(self._prefix) - 1
            self._prefix.append(self.with_(self._prefix[k], f"{self.s.iv[k]} = {self.s.jv[k]}"))
        return self._prefix[n]

    def carried(self, level: int) -> isl.Set:
        """Instance pairs ordered by loop ``level`` (equal outside it, sink later in it)."""
        return self.with_(self.prefix(level - 1), f"{self.diff(level - 1)} > 0")

    def vectors(self, level: int, m: int) -> tuple[tuple[str, ...], tuple[int | None, ...]]:
        """Direction and constant distance at each common level, for a (nonempty) dependence at ``level``."""
        fixed = self.carried(level) if level else self.prefix(m)
        dirs: list[str] = []
        dists: list[int | None] = []
        for k in range(m):
            if level == 0 or k < level - 1:
                signs = ["="]  # equal by construction
            elif k == level - 1:
                signs = ["<"]  # positive by construction
            else:
                d = self.diff(k)
                signs = [sym for sym, c in (("<", ">"), ("=", "="), (">", "<"))
                         if not self.with_(fixed, f"{d} {c} 0").is_empty()]
            dirs.append(signs[0] if len(signs) == 1 else "*")
            dists.append(None if len(signs) != 1 else 0 if signs == ["="] else self._constant(fixed, k))
        return tuple(dirs), tuple(dists)

    def _constant(self, fixed: isl.Set, k: int) -> int | None:
        """The distance at level k+1 if it has one value for every pair in ``fixed`` and all parameters."""
        pt = fixed.sample_point()
        i, j = (pt.get_coordinate_val(isl.dim_type.set, x).to_python() for x in (k, len(self.s.iv) + k))
        c = self.s.signs[k] * (int(j) - int(i))
        d = self.diff(k)
        same = all(self.with_(fixed, f"{d} {op} {c}").is_empty() for op in (">", "<"))
        return c if same else None


class _Problem:
    """One pair of accesses as constraint text, for passes that pose their own questions.

    ``nonempty(carried(level) + [extra constraint])`` asks whether some pair of
    instances ordered by ``level`` also satisfies the extra constraint (written
    over ``iv``, ``jv``, ``_diff(k)`` and the parameters).  Answers are memoised
    like :func:`analyze`'s.
    """

    def __init__(self, src: StmtInfo, a: Access, dst: StmtInfo, b: Access, params: list[str]) -> None:
        self.system = _system(src, a, dst, b, params)
        self.iv, self.jv = list(self.system.iv), list(self.system.jv)
        self.params = list(self.system.params)
        self.base = list(self.system.dom + self.system.eqs)
        self.steps = [lp.step for lp in src.loops]

    def _diff(self, k: int) -> str:
        return f"{self.system.signs[k]} * ({self.jv[k]} - {self.iv[k]})"

    def equal_prefix(self, n: int) -> list[str]:
        return [f"{self.iv[k]} = {self.jv[k]}" for k in range(n)]

    def carried(self, level: int) -> list[str]:
        return self.equal_prefix(level - 1) + [f"{self._diff(level - 1)} > 0"]

    def nonempty(self, extra: list[str]) -> bool:
        question = (self.system, " and ".join(extra))
        return _nonempty_cached(*question) if _cache_enabled else _nonempty(*question)


def _nonempty(system: _System, extra: str) -> bool:
    sets = _Sets(system)
    return not (sets.with_(sets.prefix(0), extra) if extra else sets.prefix(0)).is_empty()


_nonempty_cached = functools.lru_cache(maxsize=CACHE_SIZE)(_nonempty)


def param_name(p: str) -> str:
    """The isl name of kernel parameter ``p`` (shared with :mod:`passes.footprint`)."""
    return f"p_{p}"


def parameter_facts(kernel: ir.Kernel, params: frozenset[str]) -> tuple[str, ...]:
    """What the parameters defined by a division tell about each other, as isl constraints over the
    parameters: a top-level ``i32 h = q / c;`` (``q`` affine in the other parameters, ``c`` a positive
    constant; passes/hoist.py names ``n / 2`` so) has ``q = c * h + r`` with ``0 <= r < c`` where
    ``q >= 0`` and ``-c < r <= 0`` where ``q < 0`` (C's division truncates), exactly.  Without it ``h`` is
    any value, and an in-place reversal ``a[i] <-> a[n - 1 - i]`` over ``i < n / 2`` looks like it could
    meet itself."""
    facts: list[str] = []
    for s in kernel.body:
        if not (isinstance(s, ir.Decl) and s.name in params and s.init is not None):
            continue
        e = s.init
        while isinstance(e, ir.Cast) and e.ty.is_int and e.operand.ty.is_int and e.ty.bits >= e.operand.ty.bits:
            e = e.operand
        if not (isinstance(e, ir.Binary) and e.op == "/" and e.ty.is_int and isinstance(e.rhs, ir.Const)
                and e.rhs.value > 0):
            continue
        q = acc_mod.affine(e.lhs, params - {s.name})
        if q is None:
            continue
        c, h, qs = e.rhs.value, param_name(s.name), render_affine(q, {})
        r = f"({qs} - {c} * {h})"
        facts.append(f"(({qs} >= 0 and {r} >= 0 and {r} <= {c - 1}) or ({qs} < 0 and {r} <= 0 and {r} >= {1 - c}))")
    return tuple(facts)


def render_affine(e: Affine, names: Mapping[str, str]) -> str:
    """``e`` in isl syntax, loop variables renamed by ``names``, parameters by :func:`param_name`."""
    terms = [f"{c} * {names.get(v, param_name(v))}" for v, c in e.coeffs]
    return " + ".join([*terms, str(e.const)])


def domain_constraints(loops: tuple[ir.For, ...], names: dict[str, str], params: frozenset[str]) -> list[str]:
    """Constraints of the iteration domain of ``loops`` (affine parts only)."""
    cons: list[str] = []
    outer: set[str] = set()
    for lp in loops:
        v = names[lp.var]
        allowed = params | outer
        lo, hi = acc_mod.affine(lp.lo, allowed), acc_mod.affine(lp.hi, allowed)
        if lo is not None:
            cons.append(f"{v} >= {render_affine(lo, names)}")
        if hi is not None:
            cons.append(f"{v} < {render_affine(hi, names)}")
        if abs(lp.step) != 1:
            # Only every step-th value is visited, counted from the start.
            start = lo if lp.step > 0 else hi
            if start is not None:
                off = 0 if lp.step > 0 else -1
                cons.append(f"exists (e_{v} : {v} = {render_affine(start, names)} + {off} + {lp.step} * e_{v})")
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
    of the body it rewrites.  ``max_steps`` bounds the work (each step runs isl), and so does the
    pass budget (:mod:`passes.budget`): past it, the last complete step's kernel is returned.
    """
    if ir.is_mapped(kernel):
        return kernel
    for _ in range(max_steps):
        try:
            graph = analyze_or_none(kernel)
            if graph is None:
                break
            body = step(kernel.body, graph)
        except budget.BudgetExceeded:
            break  # out of budget (passes/budget.py): the last complete step's kernel
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


def proven_parallel(kernel: ir.Kernel, loops: list[ir.For]) -> bool:
    """Whether every loop of ``loops`` (nodes of ``kernel``) carries no dependence; False where isl
    cannot answer."""
    graph = analyze_or_none(kernel)
    if graph is None:
        return False
    ids = loop_ids(kernel)
    par = parallel_loops(kernel, graph)
    return all(ids[id(lp)] in par for lp in loops)


def parallel_count(kernel: ir.Kernel) -> int | None:
    """How many loops of ``kernel`` carry no dependence (None: isl cannot tell); what a transform that
    must free loops compares before and after."""
    graph = analyze_or_none(kernel)
    return None if graph is None else len(parallel_loops(kernel, graph))


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


def access_levels(src: StmtInfo, a: Access, dst: StmtInfo, b: Access, params: list[str]) -> set[int]:
    """The levels (0: loop-independent) at which instances of access ``a`` of ``src``
    precede conflicting instances of access ``b`` of ``dst`` (exact, as :func:`analyze`).

    One pair of accesses, for analyses that must tell apart two accesses of
    the same array in one statement (reduction recognition).  Array accesses
    only (no scalar privatisation is applied).
    """
    assert a.name == b.name and not a.is_scalar, f"access_levels on {a!r}, {b!r}"
    return {d.level for d in _dependences(src, a, dst, b, sorted(params), 0, {})}
