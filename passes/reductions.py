"""Reduction recognition: loops whose only carried dependences are one accumulation.

An analysis: ``analyze(kernel) -> list[Reduction]``.  A statement ``S`` of the
form ``x = x op e`` (or ``x = e op x``, or ``x = fmin/fmax(x, e)``), where
``x`` is a scalar or an array element ``A[f]``, is a *reduction over loop L* when

* every dependence carried by ``L`` is a dependence of ``S`` on itself
  through ``x``'s variable (so ``L`` would be parallel but for the
  accumulation), and
* no other statement inside ``L`` touches ``x``'s variable (no one observes
  the partial sums);
* ``x``'s subscripts read neither ``L``'s variable nor a scalar written in
  ``L`` (one accumulator for the whole loop);
* ``e`` does not read ``x`` itself.  A scalar ``x`` must not appear in ``e``
  at all; for an array element, ``e`` may read *other* elements of the same
  array (trisolv's ``x[i] -= L[i][j] * x[j]``, lu's ``A[i][j] -= A[i][k] *
  A[k][j]``) provided the exact test (:func:`passes.deps.access_levels`, isl)
  finds no dependence carried by ``L`` between the accumulator's write and
  that read, in either direction: the read never sees a partial sum.

Then the iterations of ``L`` may run in any order provided the combinations
with ``op`` are reassociated (exact for integer ``+ * min max``; for floats
this changes rounding, which is why code generation only uses it when
reassociation is allowed).  Operators: ``+``, ``*``, ``min``, ``max``.

Before (gemm's inner loop)::

    for k in 0..nk {
      C[i][j] += alpha * A[i][k] * B[k][j];
    }

Result: ``Reduction(loop='S5', stmt='S6', name='C', op='+')``.
"""

from __future__ import annotations

from dataclasses import dataclass

from passes import accesses, deps
from transpile import ir
from transpile.ir import accum


@dataclass(frozen=True, slots=True)
class Reduction:
    """Statement ``stmt`` accumulates into ``name`` with ``op`` across loop ``loop``."""

    loop: str
    loop_var: str
    stmt: str
    name: str
    op: str


def reduction_op(s: ir.Stmt) -> str | None:
    """The combining operator if ``s`` is ``x = x op e`` with ``e`` not reading ``x`` itself, else None.

    ``e`` may read other elements of ``x``'s array; :func:`analyze` decides
    with the exact dependence test whether those reads are harmless.
    """
    a = accum.accumulation(s)
    if a is None:
        return None
    for n in ir.walk(a.term):
        if n == a.target or (isinstance(a.target, ir.Var) and _names(n) == a.name):
            return None
    return a.op


def _names(n: ir.Node) -> str | None:
    if isinstance(n, ir.Var):
        return n.name
    if isinstance(n, ir.Index):
        return n.array
    return None


def analyze(kernel: ir.Kernel) -> list[Reduction]:
    """The reductions of ``kernel``, one per (loop, statement), in program order.

    Several reductions may share a loop (gesummv accumulates two sums over
    ``j``): the loop qualifies when each of its carried dependences is the
    self-dependence of one of them.
    """
    stmts = accesses.analyze(kernel)
    params = sorted(accesses.parameters(kernel))
    graph = deps.analyze(kernel)
    ids = deps.loop_ids(kernel)
    carried: dict[str, list[tuple[str, str, str]]] = {}
    for u, v, d in graph.edges(data=True):
        if d["level"]:
            carried.setdefault(d["loop"], []).append((u, v, d["name"]))
    candidates: dict[str, tuple[str, str]] = {}  # stmt id -> (variable, op)
    for s in stmts:
        op = reduction_op(s.node)  # type: ignore[arg-type]
        if op is not None:
            target = s.node.target  # type: ignore[attr-defined]
            candidates[s.id] = (target.name if isinstance(target, ir.Var) else target.array, op)
    found: list[Reduction] = []
    for s in stmts:
        if s.id not in candidates:
            continue
        name, op = candidates[s.id]
        for loop in s.loops:
            lid = ids[id(loop)]
            edges = carried.get(lid, [])
            if not any(u == v == s.id for u, v, _ in edges):
                continue  # nothing carried through s here: not a reduction over this loop
            if not all(u == v and u in candidates and candidates[u][0] == x for u, v, x in edges):
                continue
            others = [t for t in stmts if t.id != s.id and any(lp is loop for lp in t.loops)]
            if any(a.name == name for t in others for a in t.accesses):
                continue
            if not _invariant_target(s.node, loop) or not _reads_are_disjoint(s, loop, params):  # type: ignore[arg-type]
                continue
            found.append(Reduction(lid, loop.var, s.id, name, op))
    return found


def _invariant_target(s: ir.Assign, loop: ir.For) -> bool:
    """Whether ``s``'s accumulator is one element for all of ``loop``: its subscripts
    read neither ``loop``'s variable nor a scalar assigned inside ``loop``."""
    t = s.target
    if isinstance(t, ir.Var):
        return True
    written = {n.target.name for n in ir.walk(loop) if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var)}
    written |= {n.name for n in ir.walk(loop) if isinstance(n, ir.Decl)}
    written.add(loop.var)
    return not any(isinstance(n, ir.Var) and n.name in written for ix in t.indices for n in ir.walk(ix))


def _reads_are_disjoint(s: accesses.StmtInfo, loop: ir.For, params: list[str]) -> bool:
    """No dependence carried by ``loop`` between the accumulator's write and the term's
    reads of other elements of the same array (exact, isl)."""
    node = s.node
    assert isinstance(node, ir.Assign), f"not an assignment: {node!r}"
    if isinstance(node.target, ir.Var):
        return True  # reduction_op already excluded every read of a scalar accumulator
    level = next(n for n, lp in enumerate(s.loops, 1) if lp is loop)
    write = next(a for a in s.accesses if a.write and a.node is node.target)
    for a in s.accesses:
        if a.write or a.name != write.name or a.node == node.target:
            continue
        if level in deps.access_levels(s, write, s, a, params) | deps.access_levels(s, a, s, write, params):
            return False
    return True


class Proven:
    """A kernel's proven reductions (:func:`analyze`, or ``found``), asked by loop and statement node:
    the one lookup reduce-gpu's marking and the verifier's reassociated reference share."""

    def __init__(self, kernel: ir.Kernel, found: list[Reduction] | None = None) -> None:
        found = analyze(kernel) if found is None else found
        self._loops = deps.loop_ids(kernel)
        self._stmts = {id(s.node): s.id for s in accesses.analyze(kernel)}
        self._ops = {(r.loop, r.stmt): r.op for r in found}

    def op(self, loop: ir.For, stmt: ir.Stmt) -> str | None:
        """The operator with which ``stmt`` (an accumulation by it) is proven a reduction over
        ``loop``, else None."""
        op = self._ops.get((self._loops[id(loop)], self._stmts.get(id(stmt), "")))
        a = accum.accumulation(stmt)
        return op if op is not None and a is not None and a.op == op else None

    def body_ops(self, loop: ir.For) -> tuple[str, ...] | None:
        """The operators of ``loop``'s statements if its body is not empty and every statement is
        proven a reduction over it (the loop may then be marked ``reduce``), else None."""
        ops = tuple(self.op(loop, s) for s in loop.body)
        return ops if ops and all(ops) else None  # type: ignore[return-value]
