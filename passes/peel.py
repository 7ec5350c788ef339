"""First-iteration peeling: ``a[i] = a[0] + b[i]`` runs iteration 0 alone, and the rest in parallel.

A loop that reads one element ``X[c]`` in every iteration (``c`` does not change in the loop) and
writes that element in its first iteration only (a write ``X[f(i)]`` with ``f(lo) = c``) carries a
flow dependence from the first iteration to all the others, and nothing else may: once the first
iteration runs on its own, the remaining ones read the value it left (Allen & Kennedy, ch. 5: loop
peeling).  This pass rewrites such a loop ``for i in lo..hi`` (unit step) as

* ``if (lo < hi) { body with lo for i }`` (its locals renamed), then
* ``for i in lo + 1..hi { body }``,

which runs the same iterations in the same order (peeling is always exact), and keeps the rewrite only
where the dependence test (:mod:`passes.deps`) finds the remaining loop carrying no dependence while
the original carried one: where it frees the loop.

**Precondition**: valid IR without ``Launch`` regions.

**Postcondition**: valid IR computing the same values; each peeled loop is parallel.

Before::

    for i in 0..n {
      a[i] = a[0] + b[i];
    }

After::

    if (0 < n) {
      a[0] = a[0] + b[0];
    }
    for i in 0 + 1..n {
      a[i] = a[0] + b[i];
    }
"""

from __future__ import annotations

import dataclasses

from passes import accesses, deps
from passes.builders import rename_decls
from passes.tile import var_names
from transpile import ir

_MAX_TRIES = 8  # dependence analyses per kernel: candidates are rare, and each costs one


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with the loops that peeling frees peeled (the same object if there is none)."""
    if ir.is_mapped(kernel):
        return kernel
    tried: list[ir.For] = []  # held, so that their ids stay theirs
    for _ in range(_MAX_TRIES):
        loops = [n for n in ir.walk(kernel) if isinstance(n, ir.For) and _candidate(n)]
        if not loops:
            return kernel
        graph = deps.analyze_or_none(kernel)
        if graph is None:
            return kernel
        ids = deps.loop_ids(kernel)
        free = deps.parallel_loops(kernel, graph)
        pending = [lp for lp in loops if ids[id(lp)] not in free and not any(lp is t for t in tried)]
        if not pending:
            return kernel
        loop = pending[0]
        tried.append(loop)
        first, rest = _split(loop, ir.identifiers(kernel))
        new = _Replace(loop, (first, rest)).transform(kernel)
        if deps.loop_ids(new).get(id(rest)) in deps.parallel_loops(new):
            kernel = new
    return kernel


def _split(loop: ir.For, used: set[str]) -> tuple[ir.If, ir.For]:
    loc, ty = loop.loc, loop.ty
    body = rename_decls(tuple(ir.substitute(s, {loop.var: loop.lo}) for s in loop.body), "_first", used)
    first = ir.If(ir.binary("<", loop.lo, loop.hi, loc=loc), body, (), loc=loc)
    rest = dataclasses.replace(loop, lo=ir.binary("+", loop.lo, ir.const(1, ty, loc=loc), loc=loc))
    return first, rest


def _candidate(loop: ir.For) -> bool:
    """``loop`` (unit step) reads an element ``X[c]``, ``c`` invariant in it, that a write ``X[f(i)]``
    of it hits at ``i = lo``."""
    if loop.step != 1:
        return False
    changed = ir.scalars_written(loop) | {n.var for n in ir.statements(loop) if isinstance(n, ir.For)}
    writes: dict[str, list[ir.Index]] = {}
    for s in ir.statements(loop):
        if isinstance(s, ir.Assign) and isinstance(s.target, ir.Index):
            writes.setdefault(s.target.array, []).append(s.target)
    if not writes:
        return False
    names = ir.identifiers(loop) | var_names(loop.lo)
    for s in ir.statements(loop):
        for n in _read_indices(s):
            if n.array not in writes or any(var_names(x) & changed for x in n.indices):
                continue
            read = [accesses.affine(x, names) for x in n.indices]
            if None in read:
                continue
            for w in writes[n.array]:
                at_lo = [accesses.affine(ir.substitute(x, {loop.var: loop.lo}), names) for x in w.indices]
                if at_lo == read:
                    return True
    return False


def _read_indices(s: ir.Stmt) -> list[ir.Index]:
    exprs: list[ir.Expr] = []
    if isinstance(s, ir.Assign):
        exprs.append(s.value)
        if isinstance(s.target, ir.Index):
            exprs.extend(s.target.indices)
    elif isinstance(s, ir.Decl) and s.init is not None:
        exprs.append(s.init)
    elif isinstance(s, ir.If):
        exprs.append(s.cond)
    return [n for e in exprs for n in ir.walk(e) if isinstance(n, ir.Index)]


class _Replace(ir.Transformer):
    def __init__(self, old: ir.For, new: tuple[ir.Stmt, ...]) -> None:
        self.old, self.new = old, new

    def _value(self, value: object) -> object:
        if isinstance(value, tuple) and any(v is self.old for v in value):
            return tuple(x for v in value for x in (self.new if v is self.old else (self.transform(v),)))
        return super()._value(value)
