"""Parallel search: a loop left at the first iteration where a condition holds finds that iteration
with a parallel minimum, then runs the work before it as a map.

A ``break`` (or an early ``return``, or a ``goto`` out of the loop) is structured by the front end into a
flag (transpile/frontend/structure.py)::

    i32 f = 0;
    for i in lo..hi {
      if (!f) {
        P(i)                          // the iterations' work, up to and including the one that stops
        if (c(i)) { Q(i); f = 1; }    // the stop: Q runs once, at the first i where c holds
        if (!f) { R(i) }              // work after the test (absent when the break is the last statement)
      }
    }

The flag is read and written in every iteration, so the loop runs in one thread.  When ``c`` depends
on nothing the loop writes (or on what ``P(i)`` writes at ``i`` itself, substituted), the first ``i`` is
``min{i : c(i)}``, a minimum reduction, and every iteration before it runs ``P`` and ``R`` as the
sequential loop would::

    i32 first = hi;
    for i in lo..hi { first = (c(i) ? i : hi) < first ? (c(i) ? i : hi) : first; }   // reduce(min)
    for i in lo..hi { if (i <= first) { P(i) } }
    for i in lo..hi { if (i < first) { R(i) } }
    if (first < hi) { Q(first); f = 1; }

**Last matches.**  ``if (c(i)) j = i;`` in an upward loop of at most 32 bits, ``j`` an integer scalar read
and written nowhere else in it, ``c`` reading nothing the loop writes: ``j`` ends as the last ``i`` where
``c`` holds, ``max{i : c(i)}``, or keeps its value where none does (TSVC's s331)::

    i64 last = lo - 1;
    for i in lo..hi { last = e > last ? e : last; }     // e = c(i) ? i : lo - 1; reduce(max)
    for i in lo..hi { the rest of the body }
    if (last > lo - 1) { j = last; }

**Precondition**: valid IR without ``Launch`` regions.

**Rule.**  A top-level loop of step 1 whose body is ``if (!f) { B }``, ``f`` a scalar declared at the
top level with the value 0 and written nowhere between its declaration and the loop, ``B`` as above:
``Q`` (any statements, ``f = 1`` among them, no other write of ``f``), ``P`` and ``R`` not touching ``f``.
``c`` reads no scalar the loop writes and no array the loop writes, except elements ``X[s]`` that ``P``
writes unconditionally at the same subscript ``s`` with a value reading nothing the loop writes (the
value replaces the element in ``c``).  ``Q`` reads no array that ``R`` writes.  The rewrite is kept only
if the dependence test proves the ``P`` and ``R`` loops parallel (with ``first`` a value, not a
dependence): if ``P(i)`` fed ``P(i + 1)`` the prefix would not be a map.
"""

from __future__ import annotations

import dataclasses

from passes import deps
from passes.builders import each_top_loop, fresh_name, loop_invariant
from transpile import ir


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with its search loops made parallel searches, and its last matches maximums (see the
    module docstring)."""
    if any(isinstance(n, (ir.Launch, ir.Return)) for n in ir.walk(kernel)):
        return kernel
    return each_top_loop(each_top_loop(kernel, _search), _last_match)


def _last_match(kernel: ir.Kernel, position: int, loop: ir.For) -> ir.Kernel | None:
    """``if (c(i)) j = i;`` in an upward loop, ``j`` read nowhere else in it: the last ``i`` where ``c``
    holds, ``max{i : c(i)}`` (TSVC's s331), as an exact integer maximum in ``i64`` from ``lo - 1`` (no
    ``i`` of a loop of at most 32 bits is that small), then ``j`` set after the loop where one was found.
    ``c`` must read nothing the loop writes: it is evaluated in a loop of its own, before the rest."""
    if loop.step != 1 or loop.par is not None or loop.reduce or loop.ty.bits > 32:
        return None
    picks = [k for k, st in enumerate(loop.body) if isinstance(st, ir.If) and not st.orelse and len(st.then) == 1
             and isinstance(a := st.then[0], ir.Assign) and isinstance(a.target, ir.Var) and a.target.ty.is_int
             and _the_counter(a.value, loop.var)]
    if len(picks) != 1:
        return None
    pick = loop.body[picks[0]]
    assert isinstance(pick, ir.If) and isinstance(pick.then[0], ir.Assign)
    assign = pick.then[0]
    j = assign.target
    assert isinstance(j, ir.Var)
    rest = tuple(st for k, st in enumerate(loop.body) if k != picks[0])
    declared = {n.name for n in ir.statements(loop) if isinstance(n, ir.Decl)}
    written = ir.scalars_written(loop)
    if j.name in declared or any(j.name in ir.var_names(st) for st in rest) or j.name in ir.var_names(pick.cond):
        return None
    if not loop_invariant(pick.cond, loop):
        return None
    if (written - declared) & (ir.var_names(loop.lo) | ir.var_names(loop.hi)):
        return None
    loc = loop.loc
    last = ir.Var(fresh_name("last", ir.identifiers(kernel)), ir.I64, loc=loc)
    none = ir.binary("-", ir.cast(loop.lo, ir.I64), ir.const(1, ir.I64, loc=loc), loc=loc)
    # 'last = e > last ? e : last', e = c ? i : lo - 1: an exact integer max accumulation (transpile/ir/accum.py)
    e = ir.select(pick.cond, ir.cast(ir.Var(loop.var, loop.ty, loc=loc), ir.I64), none, loc=loc)
    find = ir.For(loop.var, loop.ty, loop.lo, loop.hi, 1, (
        ir.Assign(last, ir.select(ir.binary(">", e, last, loc=loc), e, last, loc=loc), loc=loc),), loc=loc)
    found = ir.If(ir.binary(">", last, none, loc=loc), (
        dataclasses.replace(assign, value=ir.substitute(assign.value, {loop.var: ir.cast(last, loop.ty)})),), (),
        loc=loc)
    out: list[ir.Stmt] = [ir.Decl(last.name, ir.I64, none, loc=loc), find]
    if rest:
        out.append(dataclasses.replace(loop, body=rest))
    out.append(found)
    return dataclasses.replace(kernel, body=(*kernel.body[:position], *out, *kernel.body[position + 1:]))


def _the_counter(e: ir.Expr, var: str) -> bool:
    """``e`` is the loop counter ``var``, possibly converted."""
    while isinstance(e, ir.Cast):
        e = e.operand
    return isinstance(e, ir.Var) and e.name == var


@dataclasses.dataclass(frozen=True)
class _Shape:
    flag: str
    before: tuple[ir.Stmt, ...]  # P
    cond: ir.Expr  # c, what P writes at i substituted
    stop: tuple[ir.Stmt, ...]  # Q, the flag's assignment included
    after: tuple[ir.Stmt, ...]  # R


def _search(kernel: ir.Kernel, position: int, loop: ir.For) -> ir.Kernel | None:
    if loop.step != 1 or loop.par is not None or loop.reduce:
        return None
    shape = _shape(loop)
    if shape is None or not _flag_clear(kernel.body[:position], shape.flag):
        return None
    loc = loop.loc
    used = ir.identifiers(kernel)
    first = ir.Var(fresh_name("first", used), loop.ty, loc=loc)
    i = ir.Var(loop.var, loop.ty, loc=loc)
    hi = loop.hi
    # 'first = e < first ? e : first', e = c ? i : hi: an integer min accumulation
    # (transpile/ir/accum.py), exact, which reduce-gpu marks without reassociation
    e = ir.select(shape.cond, i, ir.cast(hi, loop.ty), loc=loc)
    find = ir.For(loop.var, loop.ty, loop.lo, hi, 1, (
        ir.Assign(first, ir.select(ir.binary("<", e, first, loc=loc), e, first, loc=loc), loc=loc),), loc=loc)
    stops = ir.binary("<", first, hi, loc=loc)
    out: list[ir.Stmt] = [ir.Decl(first.name, loop.ty, ir.cast(hi, loop.ty), loc=loc), find]
    # the maps run over the whole range under a guard: 'first' is computed on the GPU, so a bound reading
    # it would keep the loop off the grid (its launch is sized on the host)
    maps: list[ir.For] = []
    if shape.before:
        maps.append(ir.For(loop.var, loop.ty, loop.lo, hi, 1, (
            ir.If(ir.binary("<=", i, first, loc=loc), shape.before, (), loc=loc),), loc=loc))
    if shape.after:
        maps.append(ir.For(loop.var, loop.ty, loop.lo, hi, 1, (
            ir.If(ir.binary("<", i, first, loc=loc), shape.after, (), loc=loc),), loc=loc))
    out += maps
    out.append(ir.If(stops, tuple(ir.substitute(s, {loop.var: first}) for s in shape.stop), (), loc=loc))
    trial = dataclasses.replace(kernel, body=(*kernel.body[:position], *out, *kernel.body[position + 1:]))
    return trial if not maps or deps.proven_parallel(trial, maps) else None


def _shape(loop: ir.For) -> _Shape | None:
    """The loop's parts (module docstring), or None."""
    if len(loop.body) != 1 or not isinstance(guard := loop.body[0], ir.If) or guard.orelse:
        return None
    flag = _not_var(guard.cond)
    if flag is None:
        return None
    body = guard.then
    stops = [k for k, s in enumerate(body) if isinstance(s, ir.If) and not s.orelse
             and any(_sets(t, flag) for t in s.then)]
    if len(stops) != 1:
        return None
    k = stops[0]
    stop = body[k]
    assert isinstance(stop, ir.If)
    before, rest = body[:k], body[k + 1:]
    after: tuple[ir.Stmt, ...] = ()
    if rest:
        if len(rest) != 1 or not isinstance(r := rest[0], ir.If) or r.orelse or _not_var(r.cond) != flag:
            return None
        after = r.then
    # the flag: written only by the stop, read only by the guards
    if any(flag in ir.var_names(s) for s in (*before, *after)):
        return None
    if any(flag in ir.scalars_written(s) and not _sets(s, flag) for s in stop.then):
        return None
    if flag in ir.var_names(stop.cond) or any(flag in ir.var_names(s) and not _sets(s, flag) for s in stop.then):
        return None
    cond = _substituted(stop.cond, before, loop)
    if cond is None:
        return None
    # the stop runs after the loops, and R in a loop of its own: neither may read a scalar P declares
    p_declared = {n.name for s in before for n in ir.statements(s) if isinstance(n, ir.Decl)}
    if any(p_declared & ir.var_names(s) for s in (*stop.then, *after)):
        return None
    # Q runs after every P and R of the iterations before it: it may read what P wrote, but R's writes
    # of iterations after the stop never happen, so Q must not read them (nor can R read what Q writes)
    r_writes = _arrays_written(after)
    if any(isinstance(n, ir.Index) and n.array in r_writes for s in stop.then for n in ir.walk(s)):
        return None
    scalars = ir.scalars_written(loop) - {flag}
    declared = {n.name for n in ir.statements(loop) if isinstance(n, ir.Decl)}
    if (scalars - declared) & (ir.var_names(loop.lo) | ir.var_names(loop.hi)):
        return None
    # P and R write no scalar that lives on after them (their loops would carry it): locals only
    if any(s not in declared for s in ir.scalars_written(ir.For(loop.var, loop.ty, loop.lo, loop.hi, 1,
                                                                 (*before, *after)))):
        return None
    return _Shape(flag, before, cond, stop.then, after)


def _not_var(e: ir.Expr) -> str | None:
    """``f`` for ``!f`` (``f`` an integer scalar), else None."""
    if isinstance(e, ir.Unary) and e.op == "!" and isinstance(e.operand, ir.Var) and e.operand.ty.is_int:
        return e.operand.name
    return None


def _sets(s: ir.Stmt, flag: str) -> bool:
    """``s`` is ``flag = <nonzero constant>``."""
    return (isinstance(s, ir.Assign) and isinstance(s.target, ir.Var) and s.target.name == flag
            and isinstance(s.value, ir.Const) and s.value.value != 0)


def _flag_clear(before: tuple[ir.Stmt, ...], flag: str) -> bool:
    """Whether ``flag`` is declared among ``before`` with the value 0 and not written after that."""
    for n, s in enumerate(before):
        if isinstance(s, ir.Decl) and s.name == flag:
            return (isinstance(s.init, ir.Const) and s.init.value == 0
                    and not any(flag in ir.scalars_written(t) for t in before[n + 1:]))
    return False


def _arrays_written(stmts: tuple[ir.Stmt, ...]) -> set[str]:
    return {n.target.array for s in stmts for n in ir.walk(s)
            if isinstance(n, ir.Assign) and isinstance(n.target, ir.Index)}


def _substituted(cond: ir.Expr, before: tuple[ir.Stmt, ...], loop: ir.For) -> ir.Expr | None:
    """``cond`` reading nothing the loop writes: each element ``X[s]`` that ``before`` writes at the top
    level, once, at the same subscript, replaced by the value written (which must read nothing the loop
    writes); None if ``cond`` reads anything else the loop writes."""
    writes = _arrays_written(loop.body)
    scalars = ir.scalars_written(loop)
    declared = {n.name for n in ir.statements(loop) if isinstance(n, ir.Decl)}
    values: dict[ir.Index, ir.Expr] = {}
    for s in before:
        if isinstance(s, ir.Assign) and isinstance(s.target, ir.Index):
            t = s.target
            if any(isinstance(n, ir.Index) and n.array in writes for n in ir.walk(s.value)) or (
                    ir.var_names(s.value) & (scalars | declared)):
                continue
            if sum(1 for u in before for n in ir.walk(u) if isinstance(n, ir.Assign)
                   and isinstance(n.target, ir.Index) and n.target.array == t.array) == 1:
                values[t] = s.value

    class _Sub(ir.Transformer):
        def visit_Index(self, e: ir.Index) -> ir.Node:
            return values.get(e, e)

    got = _Sub().transform(cond)
    if ir.var_names(got) & (scalars | declared):
        return None
    if any(isinstance(n, ir.Index) and n.array in writes for n in ir.walk(got)):
        return None
    if any(isinstance(n, ir.Call) and n.fn not in ir.MATH_FUNCS for n in ir.walk(got)):
        return None
    return got
