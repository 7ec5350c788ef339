"""Loop fusion: merge adjacent parallel loop nests back together where that keeps them parallel.

Distribution (:mod:`passes.distribute`) splits a loop over every strongly
connected component of its body, which exposes perfect nests but also splits
pieces that could just as well run in one kernel (adi's column sweep became
seven ``for i`` launches).  This pass undoes the needless splits.

**Precondition**: valid IR (``ircheck.check``) without ``Launch`` regions (it runs
after ``interchange`` and before ``map-gpu``); a kernel that already contains a
``Launch`` is returned unchanged.

**Postcondition**: the same program in which some adjacent loop nests ``L1;
L2`` (in a block reachable from the top level through loop bodies alone)
became one nest.  Two nests are fused, ``P`` levels deep, when

* *profitable*: both have the same *parallel depth* ``P >= 1`` (the number
  of outermost perfectly nested loops, at most 3, that carry no dependence
  and have side-effect-free bounds reading no loop variable of the nest:
  what ``map-gpu`` maps to z/y/x, once ``normalize`` has given the
  outermost loop of an upward step other than 1, an unrolled ``i += 4``,
  unit step), and their first ``P``
  loop headers (variable, type, bounds, step) are equal; the fused nest
  ``for l1..lP { B1; B2 }`` then has parallel depth ``P`` too, so fusion
  removes a launch and never a mapped dimension (a depth-2 nest is never
  fused into a depth-1 one); nor a parallel GPU reduction: the fused kernel
  must have at least as many loops that ``reduce-gpu`` would mark as the
  unfused one (mvt's two row sweeps stay apart);
* *legal*: the bounds read no scalar that ``B1`` or ``B2`` writes (they
  are evaluated once per fused iteration instead of once per nest), no
  scalar declared directly in ``B1`` is named in ``B2`` or declared in
  ``B2`` (scopes), and in the dependence graph of the *fused candidate*
  (:func:`passes.deps.analyze`, exact) no dependence is carried by any of
  the ``P`` fused loops.

Before that, *sweep fusion* (:func:`_sweeps`): two top-level 2-D nests of
accumulations, each put in the orientation in which its matrix reads run
along the inner loop (interchanged if needed), become one nest
``for r { for c { B1; B2 } }`` when that is a sweep nest reduce-gpu marks
(its rule (d): one pass over the matrix for row and column reductions;
bicg, mvt, gemver's update with its ``x`` sweep).  Exact (see :func:`_sweeps`); the mark is set here, because
wavefront runs before reduce-gpu and would skew an unmarked sweep.

Why the last condition suffices.  Fusion changes the relative order of only
one kind of instance pair: ``x`` of ``B1`` at fused iteration ``I`` and ``y``
of ``B2`` at ``J`` (same iteration of the enclosing loops, which fusion does
not touch).  Before, ``x`` always ran first; after, ``x`` runs first iff
``I <= J`` lexicographically (at ``I == J``, ``B1`` precedes ``B2`` in the
body).  Pairs inside ``B1`` or inside ``B2`` keep their order.  So fusion is
legal iff no conflicting pair has ``I > J``: such a pair is, in the fused
program, a dependence ``y -> x`` carried by the first fused loop at which
``J`` and ``I`` differ (the classic *fusion-preventing* backward
dependence).  Requiring that the fused loops carry nothing at all rules
these out and also keeps every fused loop parallel, which is the point of
fusing.  After every fusion only the questions it changes are asked again
(:class:`_Search`).

Before::

    for i in 1..n - 1 {
      p[i][0] = 0.0;
    }
    for i in 1..n - 1 {
      for j in 1..n - 1 {
        p[i][j] = -c / (a * p[i][j - 1] + b);
      }
    }

After::

    for i in 1..n - 1 {
      p[i][0] = 0.0;
      for j in 1..n - 1 {
        p[i][j] = -c / (a * p[i][j - 1] + b);
      }
    }
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import islpy as isl
import networkx as nx

from passes import accesses as acc_mod
from passes import budget, deps, reductions
from passes.distribute import count
from passes.interchange import plain_bounds
from transpile import ir
from transpile.ir import accum

_MAX_DEPTH = 3  # map-gpu maps at most three loops (z, y, x)


_MAX_FUSIONS = 256  # each fusion removes a loop; the bound keeps the work of one kernel bounded
_CHECK_INCREMENTAL = False  # tests: compare the kept loop facts with a fresh analysis after each fusion


def run(kernel: ir.Kernel, *, reassociate: bool = True) -> ir.Kernel:
    """``kernel`` with adjacent parallel nests fused where that is legal and keeps their parallel depth.

    ``reassociate``: what reduce-gpu will be run with (its choice is the oracle of which fusions
    would lose a GPU reduction; without reassociation float reductions are never marked).
    """
    if ir.is_mapped(kernel):
        return kernel
    kernel = _sweeps(kernel, reassociate)
    graph = deps.analyze_or_none(kernel)
    if graph is not None:
        search = _Search(kernel, graph, reassociate)
        kernel = search.run()
        if search.stopped:
            return kernel  # out of budget (passes/budget.py): the fusions done so far, each legal
    return _chains(kernel, reassociate)


class _Search:
    """The fusions of one kernel: again and again, the first legal, profitable pair of adjacent
    loops in pre-order is fused, up to :data:`_MAX_FUSIONS` times.

    The result is what re-analysing the whole kernel and rescanning it from the start after every
    fusion gives, at a cost that grows with the fused nests rather than with the kernel:

    * *what a loop carries* is kept per loop object (``carried``).  A fusion creates the fused
      loops, which the legality test proves carry nothing, and copies of the loops around them
      (a path copy), which carry what the originals carried: fusion reorders instances within
      one iteration of each enclosing loop only, and every other pair of statements keeps its
      loops, subscripts and domains, hence its dependence questions.
    * *legality* asks only the questions fusion changes: those between a statement of the first
      nest (its body and the fused loops' bounds) and one of the second's body
      (:func:`passes.deps.carried_across`); each nest alone carried nothing at the fused levels.
    * *the reduction oracle* (:func:`_gpu_reductions`) is a sum over top-level statements, each
      term a function of that statement alone; where neither the replaced statements nor the new
      one holds an accumulation or a ``reduce`` mark the terms are all 0, and it is not run.
    * *the scan* resumes one top-level statement before the last fusion (the earliest pair that
      can be new) and skips loops whose inner pairs were all rejected (``clean``); ``rejected``
      holds rejected pairs by value, as before, with their identities as a fast path.
    """

    def __init__(self, kernel: ir.Kernel, graph: nx.MultiDiGraph, reassociate: bool) -> None:
        self.kernel = kernel
        self.reassociate = reassociate
        self.ctx = deps.context(kernel)
        self.alive: list[object] = []  # every object whose id is a key below (ids are not reused)
        self.carried: dict[int, bool] = {}
        loops = deps.loop_ids(kernel)
        carried = deps.carried_loops(graph)
        for lp in ir.statements(kernel):
            if isinstance(lp, ir.For):
                self._know(lp, loops[id(lp)] in carried)
        self.rejected: set[tuple[ir.For, ir.For]] = set()
        self.rejected_ids: set[tuple[int, int]] = set()
        self.clean: set[int] = set()
        self.holds_reduction: dict[int, bool] = {}
        self.reductions: int | None = None  # _gpu_reductions of self.kernel, once asked
        self.stopped = False  # by the pass budget

    def _know(self, lp: ir.For, carried: bool) -> None:
        self.alive.append(lp)
        self.carried[id(lp)] = carried

    def is_carried(self, lp: ir.For) -> bool:
        return self.carried[id(lp)]

    def run(self) -> ir.Kernel:
        start = 0
        for _ in range(_MAX_FUSIONS):
            body = self.kernel.body
            try:
                fused = next((n for n in range(start, len(body)) if self._visit(body, n, [])), None)
            except budget.BudgetExceeded:
                self.stopped = True  # self.kernel is the last complete fusion's
                break
            if fused is None:
                break
            start = max(fused - 1, 0)
        return self.kernel

    def _visit(self, body: tuple[ir.Stmt, ...], n: int, path: list[int]) -> bool:
        """Try the pair starting at ``body[n]``, then the pairs inside it (pre-order); True once one fused."""
        s = body[n]
        if not isinstance(s, ir.For):
            return False
        nxt = body[n + 1] if n + 1 < len(body) else None
        if isinstance(nxt, ir.For) and self._try(path + [n], s, nxt):
            return True
        if id(s) in self.clean:
            return False
        inner = path + [n]
        if any(self._visit(s.body, m, inner) for m in range(len(s.body))):
            return True
        self.clean.add(id(s))
        self.alive.append(s)
        return False

    def _try(self, path: list[int], l1: ir.For, l2: ir.For) -> bool:
        budget.check()
        key = (id(l1), id(l2))
        if key in self.rejected_ids:
            return False
        pair = (l1, l2)
        if pair not in self.rejected:
            cand = _candidate(l1, l2, self.is_carried)
            if cand is not None:
                nest, depth = cand
                ancestors = self._ancestors(path)
                if self._legal(nest, depth, len(_chain(l2)[depth - 1].body), ancestors) and \
                        self._keeps_reductions(path, nest):
                    self._fuse(path, nest, depth)
                    return True
            self.rejected.add(pair)
        self.rejected_ids.add(key)
        self.alive.append(pair)
        return False

    def _ancestors(self, path: list[int]) -> tuple[ir.For, ...]:
        out: list[ir.For] = []
        body = self.kernel.body
        for n in path[:-1]:
            lp = body[n]
            assert isinstance(lp, ir.For)
            out.append(lp)
            body = lp.body
        return tuple(out)

    def _legal(self, nest: ir.For, depth: int, second_len: int, ancestors: tuple[ir.For, ...]) -> bool:
        """No dependence between the two nests' statements is carried by the fused loops (exact)."""
        infos = acc_mod.analyze_body((nest,), ancestors, self.ctx.param_set)
        inner = _chain(nest)[depth - 1].body
        tail = sum(count(s) for s in inner[len(inner) - second_len:])
        first, second = infos[:len(infos) - tail], infos[len(infos) - tail:]
        levels = range(len(ancestors) + 1, len(ancestors) + depth + 1)
        try:
            return not deps.carried_across(first, second, self.ctx, levels)
        except isl.Error:
            return False  # as the analysis of the whole fused kernel would fail

    def _keeps_reductions(self, path: list[int], nest: ir.For) -> bool:
        """The fused kernel has at least as many loops that reduce-gpu would mark (see the class)."""
        body = self.kernel.body
        old = body[path[0]:path[0] + 2] if len(path) == 1 else body[path[0]:path[0] + 1]
        new_top = nest if len(path) == 1 else _put(body, path, nest, {})[path[0]]
        if not any(self._holds_reduction(s) for s in (*old, new_top)):
            return True
        if self.reductions is None:
            self.reductions = _gpu_reductions(self.kernel, self.reassociate)
        new = dataclasses.replace(self.kernel, body=_put(body, path, nest, {}))
        return _gpu_reductions(new, self.reassociate) >= self.reductions

    def _holds_reduction(self, s: ir.Stmt) -> bool:
        if id(s) not in self.holds_reduction:
            self.alive.append(s)
            self.holds_reduction[id(s)] = any(
                (isinstance(x, ir.For) and bool(x.reduce)) or (isinstance(x, ir.Assign) and
                                                                reductions.reduction_op(x) is not None)
                for x in ir.statements(s))
        return self.holds_reduction[id(s)]

    def _fuse(self, path: list[int], nest: ir.For, depth: int) -> None:
        copies: dict[int, tuple[ir.For, ir.For]] = {}
        body = _put(self.kernel.body, path, nest, copies)
        for old, new in copies.values():
            self._know(new, self.is_carried(old))
        for lp in _chain(nest)[:depth]:
            self._know(lp, False)
        self.kernel = dataclasses.replace(self.kernel, body=body)
        self.reductions = None
        if _CHECK_INCREMENTAL:
            ids, carried = deps.loop_ids(self.kernel), deps.carried_loops(deps.analyze(self.kernel))
            for lp in ir.statements(self.kernel):
                if isinstance(lp, ir.For):
                    assert self.is_carried(lp) == (ids[id(lp)] in carried), f"carried facts differ at {lp.var}"


def _put(body: tuple[ir.Stmt, ...], path: list[int], nest: ir.For,
         copies: dict[int, tuple[ir.For, ir.For]]) -> tuple[ir.Stmt, ...]:
    """``body`` with the two loops at ``path`` replaced by ``nest``; ``copies`` gets each enclosing
    loop's (original, copy)."""
    n = path[0]
    if len(path) == 1:
        return body[:n] + (nest,) + body[n + 2:]
    loop = body[n]
    assert isinstance(loop, ir.For), f"path through a non-loop: {loop!r}"
    copy = dataclasses.replace(loop, body=_put(loop.body, path[1:], nest, copies))
    copies[id(loop)] = (loop, copy)
    return body[:n] + (copy,) + body[n + 1:]


def _sweeps(kernel: ir.Kernel, reassociate: bool) -> ir.Kernel:
    """``kernel`` with adjacent top-level accumulation nests joined into sweep nests (see below).

    Two perfect 2-D nests ``L1; L2`` at the top level whose bodies are only
    accumulations into one-dimensional arrays subscripted by a bare loop
    variable, or maps ``M[a][b] = e`` (gemver's update), become one nest
    ``for r { for c { B1; B2 } }`` when the result is a sweep that reduce-gpu
    marks (rule (d), :func:`passes.reduce_gpu.sweep_shape`):
    each nest is first put in the orientation in which its matrix reads run
    along ``c`` (mvt's ``x2[i] += A[j][i] * y2[j]`` becomes ``j`` outer),
    and ``L2``'s loop variables are renamed to ``L1``'s.  Exact, not a
    reassociation: the sweep shape makes every accumulator array distinct and
    read by no term, so each element receives the same terms in the same order
    in the fused, interchanged nest as before (its own loop still runs
    upward inside or around the other one); a mapped element is read only at
    its own point, where its update precedes (or follows) the read as before.
    """
    from passes import reduce_gpu

    n = 0
    names = _Names()
    while n < len(kernel.body):
        body = kernel.body
        if _oriented(body[n]) is None:  # no pair with it is a sweep: nothing below changes
            n += 1
            continue
        for k in range(n + 1, len(body)):
            fused = _sweep_pair(body[n], body[k])
            if fused is not None:
                # L1 moves down past the statements between, which touch nothing it touches.
                new = dataclasses.replace(kernel, body=body[:n] + body[n + 1:k] + (fused,) + body[k + 1:])
                marked = reduce_gpu.run(new, reassociate=reassociate).body[k - 1]
                if isinstance(marked, ir.For) and marked.reduce and reduce_gpu.sweep_shape(marked) is not None:
                    # NOTE: marked here, not only by reduce-gpu: wavefront (which runs in between) would
                    # skew the nest (both loops carry a dependence); it leaves a marked loop alone.
                    kernel = dataclasses.replace(new, body=body[:n] + body[n + 1:k] + (marked,) + body[k + 1:])
                    break
            if names.touches(body[k]) & names.touches(body[n]) & (names.stores(body[k]) | names.stores(body[n])):
                break
        else:
            n += 1
            continue
        if kernel.body is body:
            n += 1
    return kernel


def _chains(kernel: ir.Kernel, reassociate: bool) -> ir.Kernel:
    """``kernel`` with row-reduction nests and the column nests that read their results joined
    into chain nests (see below).

    ``L1 = for r { Z[r] = e; ...; for c { X[r] op= f } }`` (the row reductions, once the
    fusion above has put their initialisations back with them) and a later top-level
    2-D accumulation nest ``L2`` with nothing in between that conflicts with either,
    put in the orientation in which its matrix reads run along its inner loop
    (atax's ``for j { for i { y[j] += A[i][j] * tmp[i] } }`` becomes ``i`` outer),
    become ``for r { Z[r] = e; ...; for c { X[r] op= f }; for c { Y[c] op= g } }``
    when that is a chain nest reduce-gpu marks (its rule (e),
    :func:`passes.reduce_gpu.chain_shape`).  Exact but for the reassociation the
    marks permit: the chain shape lets ``L2``'s terms read the arrays ``L1``
    writes only at ``[r]``, where row ``r``'s values are final when its ``cols`` loop
    runs, and lets ``L1`` read nothing ``L2`` writes; each ``Y[c]`` then receives
    the same terms as before, in row order within the nest (reordered only by the
    ``reduce`` mark on the outer loop, which the exact analysis proves).
    """
    from passes import reduce_gpu

    n = 0
    names = _Names()
    while n < len(kernel.body):
        body = kernel.body
        l1 = body[n]
        if not isinstance(l1, ir.For) or l1.reduce or not l1.body or not isinstance(l1.body[-1], ir.For):
            n += 1  # _chain_pair(l1, ...) is None for every statement after it
            continue
        for k in range(n + 1, len(body)):
            fused = _chain_pair(l1, body[k])
            if fused is not None:
                # L2 moves up past the statements between, which touch nothing it touches.
                new = dataclasses.replace(kernel, body=body[:n] + (fused,) + body[n + 1:k] + body[k + 1:])
                marked = reduce_gpu.run(new, reassociate=reassociate).body[n]
                if isinstance(marked, ir.For) and marked.reduce and reduce_gpu.chain_shape(marked) is not None:
                    # Marked here, as sweeps are: wavefront, which runs in between, leaves marked loops alone.
                    kernel = dataclasses.replace(new, body=body[:n] + (marked,) + body[n + 1:k] + body[k + 1:])
                    break
            if names.touches(body[k]) & names.touches(l1) & (names.stores(body[k]) | names.stores(l1)):
                break
        n += 1
    return kernel


def _chain_pair(l1: ir.Stmt, l2: ir.Stmt) -> ir.For | None:
    """``l1``'s loop with ``l2`` (oriented, renamed to ``l1``'s row variable) appended to its body,
    if ``l1`` ends in a loop and ``l2`` is an accumulation nest with ``l1``'s row header in that
    orientation; else None (chain_shape decides the rest)."""
    if not isinstance(l1, ir.For) or l1.reduce or not l1.body or not isinstance(l1.body[-1], ir.For):
        return None
    o2 = _oriented(l2)
    if o2 is None:
        return None
    r2, c2 = o2
    if _header(l1) != dataclasses.replace(_header(r2), var=l1.var):
        return None
    if l1.var in _names(c2.body) - {r2.var, c2.var} or c2.var == l1.var:
        return None  # renaming would capture a name l2's terms read
    cols = _RenameVars({r2.var: l1.var}).transform(c2)
    return dataclasses.replace(l1, body=l1.body + (cols,))


class _Names:
    """:func:`_touches` and :func:`_stores` of statements, each computed once (the scans of
    :func:`_sweeps` and :func:`_chains` ask them of every later statement)."""

    def __init__(self) -> None:
        self.memo: dict[tuple[int, bool], tuple[ir.Stmt, set[str]]] = {}

    def touches(self, s: ir.Stmt) -> set[str]:
        return self._get(s, False)

    def stores(self, s: ir.Stmt) -> set[str]:
        return self._get(s, True)

    def _get(self, s: ir.Stmt, stores: bool) -> set[str]:
        key = (id(s), stores)
        if key not in self.memo:
            self.memo[key] = s, (_stores(s) if stores else _touches(s))  # s kept: its id is not reused
        return self.memo[key][1]


def _touches(s: ir.Stmt) -> set[str]:
    """Every array and scalar ``s`` reads or writes."""
    return {x.name for x in ir.walk(s) if isinstance(x, (ir.Var, ir.Decl))} | \
        {x.array for x in ir.walk(s) if isinstance(x, ir.Index)}


def _stores(s: ir.Stmt) -> set[str]:
    """Every array and scalar ``s`` writes (or declares)."""
    out = _written((s,))
    return out | {x.target.array for x in ir.walk(s) if isinstance(x, ir.Assign) and isinstance(x.target, ir.Index)}


def _sweep_pair(l1: ir.Stmt, l2: ir.Stmt) -> ir.For | None:
    """The sweep nest of ``l1`` and ``l2`` (each oriented, ``l2`` renamed), if both are accumulation
    nests with equal headers in that orientation; else None (reduce-gpu then decides)."""
    o1, o2 = _oriented(l1), _oriented(l2)
    if o1 is None or o2 is None:
        return None
    (r1, c1), (r2, c2) = o1, o2
    if _header(r1) != dataclasses.replace(_header(r2), var=r1.var) or \
            _header(c1) != dataclasses.replace(_header(c2), var=c1.var):
        return None
    free2 = _names(c2.body) - {r2.var, c2.var}
    if {r1.var, c1.var} & free2:
        return None  # renaming would capture a name l2's terms read
    body2 = tuple(_RenameVars({r2.var: r1.var, c2.var: c1.var}).transform(x) for x in c2.body)
    return dataclasses.replace(r1, body=(dataclasses.replace(c1, body=c1.body + body2),))


def _oriented(nest: ir.Stmt) -> tuple[ir.For, ir.For] | None:
    """A perfect 2-D nest of accumulations into ``X[a]``/``X[b]`` and maps of ``M[a][b]`` (or
    ``M[b][a]``) as ``(outer, inner)`` with its matrix accesses running along the inner loop
    (interchanged if they ran along the outer one; sweep_shape checks the rest)."""
    if not (isinstance(nest, ir.For) and len(nest.body) == 1 and isinstance(nest.body[0], ir.For)):
        return None
    from passes.reduce_gpu import sweep_shape

    a, b = nest, nest.body[0]
    if a.reduce and sweep_shape(a) is not None:
        a = dataclasses.replace(a, reduce=())  # a sweep made earlier takes more statements (remarked)
    if a.reduce or b.reduce or a.par or b.par or not b.body or not plain_bounds(b, {a.var}):
        return None
    va, vb = ir.Var(a.var, a.ty), ir.Var(b.var, b.ty)
    last: set[str] = set()
    for s in b.body:
        if isinstance(s, ir.Assign) and isinstance(s.target, ir.Index) and s.target.indices in ((va, vb), (vb, va)):
            read: ir.Node = s  # a map M[a][b] = e (gemver's update): the target counts as a matrix access
        else:
            acc = accum.accumulation(s)
            if acc is None or not isinstance(acc.target, ir.Index) or len(acc.target.indices) != 1 or \
                    acc.target.indices[0] not in (va, vb):
                return None
            read = acc.term
        for x in ir.walk(read):
            if isinstance(x, ir.Index) and len(x.indices) >= 2:
                last |= {v.name for v in ir.walk(x.indices[-1]) if isinstance(v, ir.Var)}
    if b.var in last and a.var not in last:
        return a, b
    if a.var in last and b.var not in last:  # interchange: rectangular, pure accumulations (see _sweeps)
        inner = dataclasses.replace(a, body=b.body)
        return dataclasses.replace(b, body=(inner,)), inner
    return None


class _RenameVars(ir.Transformer):
    """Simultaneous renaming of variables (``{old: new}``)."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Var(self, e: ir.Var) -> ir.Node:
        return dataclasses.replace(e, name=self.names[e.name]) if e.name in self.names else e


def _gpu_reductions(kernel: ir.Kernel, reassociate: bool = True) -> int:
    """How many loops reduce-gpu would run as parallel GPU reductions in ``kernel``.

    NOTE: reduce-gpu runs later in the pipeline; its choice is the oracle here
    because fusing can spoil it (mvt: a row reduction over ``A[i][j]`` fused
    with one over ``A[j][i]`` is left sequential, uncoalesced, by reduce-gpu).
    """
    from passes import reduce_gpu

    marked = reduce_gpu.run(kernel, reassociate=reassociate)
    # A sweep (one mark on its outer loop) parallelises both of its loops' reductions.
    return sum(1 + (reduce_gpu.sweep_shape(n) is not None)
               for n in ir.walk(marked) if isinstance(n, ir.For) and n.reduce)


def _chain(loop: ir.For) -> list[ir.For]:
    """The outermost perfectly nested loops of ``loop`` (at most three)."""
    chain = [loop]
    while len(chain) < _MAX_DEPTH and len(chain[-1].body) == 1 and isinstance(chain[-1].body[0], ir.For):
        chain.append(chain[-1].body[0])
    return chain


def _parallel_depth(loop: ir.For, carried: Callable[[ir.For], bool]) -> int:
    """How many outermost loops of ``loop`` map-gpu could map: see the module docstring."""
    depth = 0
    chain_vars: set[str] = set()
    for lp in _chain(loop):
        # a step other than 1 only on the outermost loop, upward (an unrolled 'i += 4'): an inner or
        # downward one keeps the nest whole for the back end's row programs, as before
        if carried(lp) or (lp.step != 1 and (depth > 0 or lp.step < 0)) or not plain_bounds(lp, chain_vars):
            break
        chain_vars.add(lp.var)
        depth += 1
    return depth


def _header(lp: ir.For) -> ir.For:
    """Everything of ``lp`` but its body (variable, type, bounds, step, marks)."""
    return dataclasses.replace(lp, body=())


def _candidate(l1: ir.For, l2: ir.For, carried: Callable[[ir.For], bool]) -> tuple[ir.For, int] | None:
    """The fused nest of ``l1`` and ``l2`` and its depth, if profitable and scope-safe (``carried``:
    whether a loop carries a dependence)."""
    depth = _parallel_depth(l1, carried)
    if depth == 0 or depth != _parallel_depth(l2, carried):
        return None
    c1, c2 = _chain(l1)[:depth], _chain(l2)[:depth]
    if any(_header(a) != _header(b) for a, b in zip(c1, c2)):
        return None
    b1, b2 = c1[-1].body, c2[-1].body
    written = _written(b1) | _written(b2)
    if any(x.name in written for lp in c1 for bd in (lp.lo, lp.hi) for x in ir.walk(bd) if isinstance(x, ir.Var)):
        return None
    decls1 = {s.name for s in b1 if isinstance(s, ir.Decl)}
    decls2 = {s.name for s in b2 if isinstance(s, ir.Decl)}
    if decls1 & (_names(b2) | decls2) or decls2 & _names(b1):
        return None
    nest: ir.Stmt = dataclasses.replace(c1[-1], body=b1 + b2)
    for lp in reversed(c1[:-1]):
        nest = dataclasses.replace(lp, body=(nest,))
    assert isinstance(nest, ir.For)
    return nest, depth


def _written(body: tuple[ir.Stmt, ...]) -> set[str]:
    out: set[str] = set()
    for s in body:
        for x in ir.walk(s):
            if isinstance(x, ir.Assign) and isinstance(x.target, ir.Var):
                out.add(x.target.name)
            elif isinstance(x, ir.Decl):
                out.add(x.name)
    return out


def _names(body: tuple[ir.Stmt, ...]) -> set[str]:
    return {x.name for s in body for x in ir.walk(s) if isinstance(x, (ir.Var, ir.Decl))}
