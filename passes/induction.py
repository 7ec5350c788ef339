"""Induction-variable substitution: a counter stepped by a constant in a loop, read as a subscript.

``j = 0; for (i ...) { a[j] = ...; j++; }`` carries ``j`` from one iteration to the next, so the loop
is sequential and ``a[j]`` opaque to the dependence test.  But ``j`` is a function of the iteration
number: where each iteration adds the same loop-invariant amounts to ``j`` in top-level statements of
the body (``j++``, ``j += 2``, ``k -= c``), its value at any point of iteration ``t`` is its value on
entry plus ``t`` times the sum of the steps plus the steps already taken in this iteration (Allen &
Kennedy, induction-variable substitution).  This pass

* copies ``j`` on entry into a fresh ``j_base`` before the loop,
* reads ``j_base + S * t + (steps so far)`` for ``j`` in the body, the increments dropped, where ``S``
  is the sum of the steps and ``t`` the iteration number (``i - lo`` upward, ``hi - 1 - i`` downward;
  unit steps only),
* and assigns ``j`` its exit value ``j_base + S * trip`` after the loop (a later read sees it).

A counter also written anywhere else in the body (a conditional increment: packing) is left alone, as
is every loop of non-unit step; a step both branches of an ``if`` take first or last is taken out of
the ``if`` first (:func:`_hoist_steps`, TSVC's s124).  Innermost loops go first.  Afterwards :mod:`passes.constprop` runs
again so that ``j_base`` copies of constants and loop-invariant values reach the subscripts.

**Precondition**: valid IR without ``Launch`` regions.

**Postcondition**: valid IR computing the same values (integer arithmetic: exact).

Before::

    i32 j = 0;
    for i in 0..n {
      a[j] = b[i];
      j += 1;
    }

After (and constprop)::

    for i in 0..n {
      a[i] = b[i];
    }
"""

from __future__ import annotations

import dataclasses

from passes import accesses, constprop
from passes.builders import fresh_name
from transpile import ir


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with the induction variables of its unit-step loops substituted."""
    if ir.is_mapped(kernel):
        return kernel
    sub = _Substitute(kernel)
    body = sub.block(kernel.body)
    if not sub.changed:
        return kernel
    return constprop.run(dataclasses.replace(kernel, body=body))


class _Substitute:
    def __init__(self, kernel: ir.Kernel) -> None:
        self.kernel = kernel
        self.used = ir.identifiers(kernel)
        self.params = accesses.parameters(kernel)
        self.changed = False

    def block(self, stmts: tuple[ir.Stmt, ...], loops: tuple[ir.For, ...] = ()) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        for s in stmts:
            if isinstance(s, ir.For):
                loop = dataclasses.replace(s, body=_restep(_hoist_steps(self.block(s.body, loops + (s,)))))
                out.extend(self.loop(loop, out, loops))
            elif isinstance(s, ir.If):
                out.append(dataclasses.replace(s, then=self.block(s.then, loops), orelse=self.block(s.orelse, loops)))
            else:
                out.append(s)
        return tuple(out)

    def entry(self, name: str, ty: ir.Scalar, earlier: list[ir.Stmt], loc: object) -> ir.Expr:
        """The counter's value on entry to the loop: its declaration's initialiser where that is an earlier
        statement of the same block, constant until the loop (reads no array, and nothing after it writes
        the counter or a scalar the initialiser reads): two pointers into one array stay comparable.
        Else the counter itself."""
        for k in range(len(earlier) - 1, -1, -1):
            d = earlier[k]
            if isinstance(d, ir.Decl) and d.name == name:
                init = d.init
                if init is None or any(isinstance(n, (ir.Index, ir.Call)) for n in ir.walk(init)):
                    break
                reads = ir.var_names(init)
                if any((reads | {name}) & ir.scalars_written(t) for t in earlier[k + 1:]):
                    break
                return init
        return ir.Var(name, ty, loc=loc)  # type: ignore[arg-type]

    def loop(self, loop: ir.For, earlier: list[ir.Stmt], outer: tuple[ir.For, ...] = ()) -> list[ir.Stmt]:
        if abs(loop.step) != 1:
            return [loop]
        before: list[ir.Stmt] = []
        after: list[ir.Stmt] = []
        for name, ty in _candidates(loop).items():
            steps = [s for s in loop.body if _step(s, name) is not None]
            base = fresh_name(f"{name}_base", self.used)
            self.used.add(base)
            before.append(ir.Decl(base, ty, self.entry(name, ty, earlier + before, loop.loc), loc=loop.loc))
            total: ir.Expr = ir.const(0, ty, loc=loop.loc)
            for s in steps:
                total = ir.binary("+", total, _step(s, name), loc=loop.loc)  # type: ignore[arg-type]
            t = ir.Var(loop.var, loop.ty, loc=loop.loc)
            count = ir.binary("-", t, loop.lo, loc=loop.loc) if loop.step > 0 else \
                ir.binary("-", ir.binary("-", loop.hi, ir.const(1, loop.ty, loc=loop.loc), loc=loop.loc), t,
                          loc=loop.loc)
            start = ir.binary("+", ir.Var(base, ty, loc=loop.loc),
                              ir.binary("*", ir.cast(count, ty), _unguarded(total, name, loop.body), loc=loop.loc),
                              loc=loop.loc)
            body: list[ir.Stmt] = []
            sofar: ir.Expr = ir.const(0, ty, loc=loop.loc)
            for s in loop.body:
                inc = _step(s, name)
                if inc is not None:
                    sofar = ir.binary("+", sofar, inc, loc=loop.loc)
                    continue
                now = ir.cast(ir.binary("+", start, sofar, loc=loop.loc), ty)
                body.append(ir.substitute(s, {name: now}))
            loop = dataclasses.replace(loop, body=tuple(body))
            trip = ir.binary("-", loop.hi, loop.lo, loc=loop.loc)
            if not _nonempty_range(loop, outer, self.params):  # else hi - lo >= 0 wherever the loop runs
                trip = ir.select(ir.binary(">", loop.hi, loop.lo, loc=loop.loc), trip,
                                 ir.const(0, trip.ty, loc=loop.loc), loc=loop.loc)
            exit_value = ir.binary("+", ir.Var(base, ty, loc=loop.loc),
                                   ir.binary("*", ir.cast(trip, ty), total, loc=loop.loc), loc=loop.loc)
            after.append(ir.Assign(ir.Var(name, ty, loc=loop.loc), ir.cast(exit_value, ty), loc=loop.loc))
            self.changed = True
        return [*before, loop, *after]


def _nonempty_range(loop: ir.For, outer: tuple[ir.For, ...], params: frozenset[str]) -> bool:
    """``loop.hi - loop.lo >= 0`` at every iteration of the loops ``outer`` around it (isl): then its trip
    count is ``hi - lo``, affine, where ``max(hi - lo, 0)`` would hide a nest's counter from the test."""
    import islpy as isl

    from passes import deps

    names = {lp.var: f"v{k}" for k, lp in enumerate(outer)}
    allowed = params | set(names)
    lo, hi = accesses.affine(loop.lo, allowed), accesses.affine(loop.hi, allowed)
    if lo is None or hi is None or not loop.ty.is_signed:
        return False
    cons = deps.domain_constraints(outer, names, params)
    if not all(accesses.affine(e, params | {lp.var for lp in outer[:k]}) is not None
               for k, lp in enumerate(outer) for e in (lp.lo, lp.hi)):
        return False  # a bound the constraints leave out: nothing is known
    head = f"[{', '.join(deps.param_name(p) for p in sorted(params))}] -> {{ [{', '.join(names.values())}] : "
    text = head + " and ".join([*cons, f"{deps.render_affine(hi, names)} < {deps.render_affine(lo, names)}"]) + " }"
    try:
        return bool(isl.Set(text).is_empty())
    except isl.Error:
        return False


def _unguarded(total: ir.Expr, name: str, body: tuple[ir.Stmt, ...]) -> ir.Expr:
    """``total`` with each inner loop's trip count ``hi > lo ? hi - lo : 0`` read as ``hi - lo`` where the
    counter ``name`` is observed only inside that loop's body (directly, or through a copy ``i32 b =
    name;`` read only there): wherever it is observed the loop runs, so ``hi > lo``, and the count is
    the same in every iteration of this loop (a step reads nothing the loop changes), so every earlier
    iteration added ``hi - lo`` too.  Exact there, and affine for the dependence test."""
    sels = [n for n in ir.walk(total) if isinstance(n, ir.Select) and isinstance(n.cond, ir.Binary)
            and n.cond.op == ">" and isinstance(n.orelse, ir.Const) and n.orelse.value == 0
            and n.then == ir.binary("-", n.cond.lhs, n.cond.rhs, loc=n.loc)]
    if not sels:
        return total
    copies = {d.name for d in body if isinstance(d, ir.Decl) and d.init == ir.Var(name, d.ty)}
    table: dict[int, ir.Expr] = {}
    for sel in sels:
        assert isinstance(sel.cond, ir.Binary)
        hi, lo = sel.cond.lhs, sel.cond.rhs
        inside = [s for s in body if isinstance(s, ir.For) and s.lo == lo and s.hi == hi]
        outside = [s for s in body if not any(s is t for t in inside)
                   and not (isinstance(s, ir.Decl) and s.name in copies) and _step(s, name) is None]
        watched = copies | {name}
        if any(_names(s) & watched for s in outside):
            continue
        if any(isinstance(n, ir.Var) and n.name in watched for s in inside for e in (s.lo, s.hi) for n in ir.walk(e)):
            continue  # a bound reading the counter observes it where the loop may not run
        table[id(sel)] = sel.then
    if not table:
        return total
    got = _Replace(table).transform(total)
    assert isinstance(got, (ir.Const, ir.Var, ir.Index, ir.Unary, ir.Binary, ir.Select, ir.Cast, ir.Call))
    return got


class _Replace(ir.Transformer):
    def __init__(self, table: dict[int, ir.Expr]) -> None:
        self.table = table

    def transform(self, node: ir.Node) -> ir.Node:
        return self.table.get(id(node)) or super().transform(node)


def _restep(body: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
    """``body`` with ``k = b + c`` written ``k = k + c`` where ``b`` is a copy of ``k`` declared earlier in
    it (``i32 b = k;``), neither written in between: an inner loop's counter substituted, its exit value
    a step of the counter in this loop, which can then be substituted in turn."""
    out = list(body)
    for d_at, d in enumerate(body):
        if not (isinstance(d, ir.Decl) and isinstance(d.init, ir.Var) and d.ty == d.init.ty and d.ty.is_int):
            continue
        k = d.init
        for at in range(d_at + 1, len(body)):
            s = body[at]
            step = None
            if isinstance(s, ir.Assign) and isinstance(s.target, ir.Var) and s.target.name == k.name:
                step = _step(ir.Assign(s.target, _rebase(s.value, d.name, k), loc=s.loc), k.name)
            if isinstance(s, ir.Assign) and step is not None and d.name not in _names(step):
                out[at] = dataclasses.replace(s, value=ir.binary("+", k, step, loc=s.loc))
                break
            if ({k.name, d.name} & ir.scalars_written(s)):
                break
    return tuple(out) if any(a is not b for a, b in zip(out, body)) else body


def _hoist_steps(body: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
    """``body`` with a counter's step that both branches of an ``if`` take first (or last) taken before
    (after) the ``if``: ``if (c) { j++; a[j] = x; } else { j++; a[j] = y; }`` steps ``j`` in every
    iteration (TSVC's s124).  A step moves before the ``if`` only where the condition does not read
    its counter (the condition was evaluated before it)."""
    out: list[ir.Stmt] = []
    for s in body:
        after: list[ir.Stmt] = []
        while isinstance(s, ir.If) and s.then and s.orelse:
            first, last = s.then[0], s.then[-1]
            if first == s.orelse[0] and _is_step(first) and not (ir.scalars_written(first) & _names(s.cond)):
                out.append(first)
                s = dataclasses.replace(s, then=s.then[1:], orelse=s.orelse[1:])
            elif last == s.orelse[-1] and _is_step(last):
                after.insert(0, last)
                s = dataclasses.replace(s, then=s.then[:-1], orelse=s.orelse[:-1])
            else:
                break
        if not (isinstance(s, ir.If) and not s.then and not s.orelse):
            out.append(s)
        out.extend(after)
    return tuple(out) if len(out) != len(body) or any(a is not b for a, b in zip(out, body)) else body


def _is_step(s: ir.Stmt) -> bool:
    """``s`` steps an integer scalar by an amount that does not read it (``j++``, ``k -= c``)."""
    return isinstance(s, ir.Assign) and isinstance(s.target, ir.Var) and s.target.ty.is_int and \
        _step(s, s.target.name) is not None


def _rebase(e: ir.Expr, base: str, k: ir.Var) -> ir.Expr:
    """``e`` with its top-level operand ``base`` (of ``base + c``) read as ``k``."""
    if isinstance(e, ir.Binary) and e.op in ("+", "-"):
        if isinstance(e.lhs, ir.Var) and e.lhs.name == base:
            return dataclasses.replace(e, lhs=k)
        if e.op == "+" and isinstance(e.rhs, ir.Var) and e.rhs.name == base:
            return dataclasses.replace(e, rhs=k)
    return e


def _candidates(loop: ir.For) -> dict[str, ir.Scalar]:
    """Integer scalars that ``loop``'s body steps only in top-level statements by loop-invariant amounts."""
    written_top: dict[str, ir.Scalar] = {}
    nested: set[str] = set()
    for s in loop.body:
        if isinstance(s, ir.Assign) and isinstance(s.target, ir.Var):
            written_top.setdefault(s.target.name, s.target.ty)
        else:
            nested |= ir.scalars_written(s)
    declared = {s.name for s in ir.statements(loop) if isinstance(s, ir.Decl)}
    variant = ir.scalars_written(loop) | {loop.var}
    out: dict[str, ir.Scalar] = {}
    for name, ty in written_top.items():
        if not ty.is_int or name in nested or name in declared:
            continue
        tops = [s for s in loop.body if isinstance(s, ir.Assign) and isinstance(s.target, ir.Var)
                and s.target.name == name]
        incs = [_step(s, name) for s in tops]
        if all(inc is not None and not (_names(inc) & variant) for inc in incs):
            out[name] = ty
    return out


def _step(s: ir.Stmt, name: str) -> ir.Expr | None:
    """``c`` for ``name = name + c`` (``-c`` for ``name - c``), ``c`` not reading ``name``; else None."""
    if not isinstance(s, ir.Assign) or not isinstance(s.target, ir.Var) or s.target.name != name:
        return None
    v = s.value
    if not isinstance(v, ir.Binary) or v.op not in ("+", "-") or v.ty != s.target.ty:
        return None
    if v.lhs == s.target and name not in _names(v.rhs):
        return v.rhs if v.op == "+" else ir.unary("-", v.rhs, loc=s.loc)
    if v.op == "+" and v.rhs == s.target and name not in _names(v.lhs):
        return v.lhs
    return None


def _names(e: ir.Node) -> set[str]:
    return {n.name for n in ir.walk(e) if isinstance(n, ir.Var)} | \
        {n.array for n in ir.walk(e) if isinstance(n, ir.Index)}
