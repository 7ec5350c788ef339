"""``for``-loop normalisation and the checks that keep it exact.

C's ``for (init; cond; next)`` becomes ``For(var, ty, lo, hi, step, body)``
(docs/ir.md).  Accepted forms: init ``i = a`` or ``int i = a``; condition
``i OP b`` or ``b OP i`` with OP in ``< <= > >= !=``; increment ``i++``,
``++i``, ``i--``, ``--i``, ``i += c``, ``i -= c``, ``i = i + c``, ``i = c + i``,
``i = i - c`` with a constant nonzero ``c``.  Upward loops: ``lo = a`` and
``hi = b`` (``b + 1`` for ``<=``); downward loops start at their C initial
value, so ``hi = a + 1`` and ``lo = b + 1`` (``b`` for ``>=``).  ``!=`` needs
``|step| == 1``.  Bounds are converted to the loop variable's type.

A declared variable a loop counts gets C's exit value after the loop where it
is read there (:func:`exit_values`); ``for (; i < n; i++)`` counts on from
the variable's value.  What the normalised form cannot express is rejected
with a located error: the loop variable assigned in the body, a variable or
array read by the bounds written in the body, the exit value of a loop with a
run-time step read after it, missing parts.

A step known only at run time (``i += inc``, ``i -= inc``: a signed integer expression the body does
not change, not reading ``i``) is not a constant of the IR: the loop runs over every ``i`` of its
range by one, and the body runs where ``i`` is one of C's values (:func:`strided_body`).  The
condition gives the direction (``i < n`` up, ``i >= 0`` down), so ``i += inc`` with ``i >= 0`` needs
``inc < 0``.  A step of the wrong sign (zero included) where the loop runs at all is C's endless or
overflowing loop: the function stops with a run-time error (:func:`step_check`, an ``ir.Trap`` at the
top level: :func:`hoist_step_checks`).
"""

from __future__ import annotations

import dataclasses

from pycparser import c_ast

from transpile import ir
from transpile.diagnostics import Loc, TranspileError, warn
from transpile.ir.cscalars import const_of, fold

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "!=": "!="}
_INC = {"p++": 1, "++": 1, "p--": -1, "--": -1}


def is_var(node: c_ast.Node | None, name: str) -> bool:
    """Is ``node`` the identifier ``name``?"""
    return isinstance(node, c_ast.ID) and node.name == name


def split_cond(cond: c_ast.Node, var: str, loc: Loc) -> tuple[str, c_ast.Node]:
    """``(op, bound)`` such that the condition reads ``var op bound``.

    Besides ``var OP b`` and ``b OP var``: ``var + e OP b`` and ``var - e OP b`` (``e`` free of
    ``var``) compare ``var`` with ``b - e`` and ``b + e``; two comparisons joined by ``&&`` that bound
    ``var`` from the same side (``i < m && i < n``) compare it with the nearer bound."""
    if isinstance(cond, c_ast.BinaryOp) and cond.op == "&&":
        (op1, b1), (op2, b2) = split_cond(cond.left, var, loc), split_cond(cond.right, var, loc)
        side1, side2 = op1 in ("<", "<="), op2 in ("<", "<=")
        if side1 == side2 and "!=" not in (op1, op2):
            strict = "<" if side1 else ">"
            b1, b2 = (_strict(op, b) for op, b in ((op1, b1), (op2, b2)))
            nearer = c_ast.BinaryOp(strict, b1, b2, coord=cond.coord)
            return strict, c_ast.TernaryOp(nearer, b1, b2, coord=cond.coord)
    if isinstance(cond, c_ast.BinaryOp) and cond.op in _FLIP:
        lhs_var, rhs_var = _offset(cond.left, var), _offset(cond.right, var)
        if lhs_var is not None and rhs_var is None and not _mentions(cond.right, var):
            return cond.op, _shift(cond.right, lhs_var)
        if rhs_var is not None and lhs_var is None and not _mentions(cond.left, var):
            return _FLIP[cond.op], _shift(cond.left, rhs_var)
    raise TranspileError(loc, f"loop condition is not supported: it must compare the loop variable "
                              f"'{var}' with a bound ('{var} < n', '{var} >= 0', ...)")


def _offset(node: c_ast.Node, var: str) -> tuple[str, c_ast.Node | None] | None:
    """For ``var``: ``("+", None)``; for ``var + e``/``e + var``: ``("+", e)``; for ``var - e``:
    ``("-", e)`` (``e`` free of ``var``); else None."""
    if is_var(node, var):
        return "+", None
    if isinstance(node, c_ast.BinaryOp) and node.op in ("+", "-"):
        if is_var(node.left, var) and not _mentions(node.right, var):
            return node.op, node.right
        if node.op == "+" and is_var(node.right, var) and not _mentions(node.left, var):
            return "+", node.left
    return None


def _shift(bound: c_ast.Node, offset: tuple[str, c_ast.Node | None]) -> c_ast.Node:
    """The bound of ``var`` itself when ``var + e`` (or ``var - e``) is compared with ``bound``."""
    op, e = offset
    if e is None:
        return bound
    return c_ast.BinaryOp("-" if op == "+" else "+", bound, e, coord=bound.coord)


def _strict(op: str, bound: c_ast.Node) -> c_ast.Node:
    """``bound`` as a strict bound: ``i <= b`` is ``i < b + 1``, ``i >= b`` is ``i > b - 1``."""
    if op in ("<", ">"):
        return bound
    one = c_ast.Constant("int", "1", coord=bound.coord)
    return c_ast.BinaryOp("+" if op == "<=" else "-", bound, one, coord=bound.coord)


def _mentions(node: c_ast.Node, var: str) -> bool:
    if is_var(node, var):
        return True
    return any(_mentions(c, var) for _, c in node.children())


def step_expr(nxt: c_ast.Node, var: str, loc: Loc) -> tuple[int, c_ast.Node | None]:
    """``(sign, c)``: the step is ``sign * c`` (``c`` None means 1)."""
    if isinstance(nxt, c_ast.UnaryOp) and nxt.op in _INC and is_var(nxt.expr, var):
        return _INC[nxt.op], None
    if isinstance(nxt, c_ast.Assignment) and is_var(nxt.lvalue, var):
        if nxt.op in ("+=", "-="):
            return (1 if nxt.op == "+=" else -1), nxt.rvalue
        rv = nxt.rvalue
        if nxt.op == "=" and isinstance(rv, c_ast.BinaryOp) and rv.op in ("+", "-"):
            if is_var(rv.left, var):
                return (1 if rv.op == "+" else -1), rv.right
            if rv.op == "+" and is_var(rv.right, var):
                return 1, rv.left
    raise TranspileError(loc, f"loop increment is not supported: it must be '{var}++', '{var}--', "
                              f"'{var} += c' or '{var} -= c' with a constant c")


def add_const(e: ir.Expr, k: int, loc: Loc | None) -> ir.Expr:
    """``e + k`` with the constant folded into ``e`` where possible (``(n - 1) + 1`` is ``n``)."""
    t = ir.promote(e.ty)
    v = fold(e)
    if isinstance(v, int):
        return const_of(v + k, t, loc)
    if isinstance(e, ir.Binary) and e.op in ("+", "-") and e.ty == t:
        c = fold(e.rhs)
        if isinstance(c, int):
            total = (c if e.op == "+" else -c) + k
            if total == 0:
                return e.lhs
            if total > 0 or t.is_signed:
                return ir.Binary("+" if total > 0 else "-", e.lhs, const_of(abs(total), t, loc), t,
                                 loc=loc)
    return ir.binary("+" if k >= 0 else "-", e, ir.const(abs(k), ir.I32, loc=loc), loc=loc)


def normalise(op: str, step: int, start: ir.Expr, bound: ir.Expr, var: str,
              ty: ir.Scalar, loc: Loc) -> tuple[ir.Expr, ir.Expr]:
    """``(lo, hi)`` of ``for (var = start; var op bound; var += step)``."""
    if op == "!=" and abs(step) != 1:
        raise TranspileError(loc, f"loop condition '{var} != ...' with step {step} is not supported: "
                                  "the loop could step over its bound; use '<' or '>'")
    if step > 0 and op in (">", ">="):
        raise TranspileError(loc, f"loop condition '{var} {op} ...' with an increasing '{var}' is not "
                                  "supported: the loop runs zero times or forever")
    if step < 0 and op in ("<", "<="):
        raise TranspileError(loc, f"loop condition '{var} {op} ...' with a decreasing '{var}' is not "
                                  "supported: the loop runs zero times or forever")
    if step < 0 and op == ">=" and not ty.is_signed and fold(bound) == 0:
        raise TranspileError(loc, f"loop condition '{var} >= 0' is always true for unsigned '{var}': "
                                  "the loop would never end")
    if step > 0:
        lo, hi = start, (add_const(bound, 1, loc) if op == "<=" else bound)
    else:
        lo, hi = (bound if op == ">=" else add_const(bound, 1, loc)), add_const(start, 1, loc)
    return _fit(lo, ty, loc), _fit(hi, ty, loc)


def _fit(e: ir.Expr, ty: ir.Scalar, loc: Loc) -> ir.Expr:
    """``e`` converted to the loop type; converted constants stay plain literals (``0``, not ``(long)0``)."""
    e = ir.cast(e, ty)
    v = fold(e)
    if isinstance(e, ir.Cast) and isinstance(v, int):
        return const_of(v, ty, e.loc or loc)
    return e


def runtime_step(step: ir.Expr, name: str, cname: str, ty: ir.Scalar, loc: Loc) -> ir.Expr:
    """The run-time step ``step`` of loop variable ``name`` (C ``cname``, type ``ty``), checked: a signed
    integer no wider than ``ty`` (so ``i += step`` computes in ``ty``'s range), not reading ``i``."""
    if not (step.ty.is_int and step.ty.is_signed and step.ty.bits <= ty.bits):
        raise TranspileError(loc, f"loop step of type {step.ty} is not supported: a run-time step must be a "
                                  f"signed integer no wider than '{cname}'")
    if any(isinstance(n, ir.Var) and n.name == name for n in ir.walk(step)):
        raise TranspileError(loc, f"loop step reads the loop variable '{cname}', which is not supported: "
                                  "the step must be the same in every iteration")
    return ir.cast(step, ty)


def strided_body(body: tuple[ir.Stmt, ...], stride: ir.Expr, name: str, ty: ir.Scalar, lo: ir.Expr,
                 hi: ir.Expr, sign: int, loc: Loc | None, *, against: bool = False) -> tuple[ir.Stmt, ...]:
    """The body of an upward (``sign`` 1) or downward (``sign`` -1) loop that C steps by ``stride``
    (``i += s`` up, ``i -= s`` down; with ``against``, ``s`` must be negative: ``i -= s`` up, ``i += s``
    down) over the unit-step range ``lo..hi``: run where ``i`` is C's first value plus a multiple of ``s``.

    C visits ``lo, lo + |s|, ...`` (downward ``hi - 1, hi - 1 - |s|, ...``) while inside the range.
    Every one of those values is in the range, and the guard ``s > 0 && (i - lo) % s == 0`` (``s < 0``
    with ``against``; ``hi - 1 - i`` downward) holds exactly there, so the same iterations run in the
    same order.  The trip count is a run-time value; the dependence test sees the unit-step range, a
    superset of C's iterations, so a loop it proves parallel is parallel (distinct ``i`` at any step).
    A step of the wrong sign with a non-empty range never ends in C (a zero step) or overflows ``i``
    (undefined behaviour, C11 6.8.5p6, 6.5p5): :func:`step_check` stops the function first."""
    i = ir.Var(name, ty, loc=loc)
    offset = ir.binary("-", i, lo, loc=loc) if sign > 0 else ir.binary("-", add_const(hi, -1, loc), i, loc=loc)
    zero = ir.const(0, ty, loc=loc)
    on_step = ir.binary("==", ir.binary("%", ir.cast(offset, ty), stride, loc=loc), zero, loc=loc)
    guard = ir.binary("&&", ir.binary("<" if against else ">", stride, zero, loc=loc), on_step, loc=loc)
    return (ir.If(guard, body, (), loc=loc),)


def c_text(node: c_ast.Node) -> str:
    """The C text of ``node``, for messages."""
    from pycparser import c_generator

    return str(c_generator.CGenerator().visit(node))


def step_check(stride: ir.Expr, lo: ir.Expr, hi: ir.Expr, against: bool, step_text: str, cname: str,
               loc: Loc | None) -> ir.If:
    """``if (lo < hi && s <= 0) trap`` (``s >= 0`` with ``against``): the run-time step ``s`` of a loop
    over ``lo..hi`` (:func:`strided_body`) of the wrong sign where the loop runs at all, on which C's loop
    never ends or overflows its variable; placed before the loop, moved to the top level by
    :func:`hoist_step_checks`."""
    zero = ir.const(0, stride.ty, loc=loc)
    wrong = ir.binary(">=" if against else "<=", stride, zero, loc=loc)
    cond = ir.binary("&&", ir.binary("<", lo, hi, loc=loc), wrong, loc=loc)
    sign = "positive" if against else "negative"
    message = (f"the step '{step_text}' of the loop over '{cname}' is zero or {sign} at run time: the loop "
               "would not end (undefined behaviour in C)")
    return ir.If(cond, (ir.Trap(message, loc=loc),), (), loc=loc)


def hoist_step_checks(body: tuple[ir.Stmt, ...], cnames: dict[str, str], *, in_func: bool
                      ) -> tuple[ir.Stmt, ...]:
    """``body`` with every :func:`step_check` moved to the top level, before the statement holding it.

    The check of a loop inside other loops and ``if`` statements holds when those reach it: its
    condition, the enclosing loops' ranges non-empty and the enclosing conditions (negated in an
    ``else``).  That is exact where all of them read only scalars the statement neither writes nor
    declares (the loop variables included): they have the same value before the statement as
    wherever C would reach the check.  What the function wrote before a trap is unspecified
    (``ir.Trap``), so the check may come first.  Otherwise, and in a helper function (no host code to
    stop it), the check is dropped with a warning (``-Wunchecked-step``): the loop's guard still runs no
    iteration at a step of the wrong sign."""
    out: list[ir.Stmt] = []
    for s in body:
        if not any(isinstance(n, ir.Trap) for n in ir.statements(s)):
            out.append(s)
            continue
        local = ir.scalars_written(s) | {n.name for n in ir.statements(s) if isinstance(n, ir.Decl)} | {
            n.var for n in ir.statements(s) if isinstance(n, ir.For)}
        found: list[ir.Stmt] = []
        kept = _pull(s, (), local, found, cnames, in_func)
        out.extend(found)
        if kept is not None:
            out.append(kept)
    return tuple(out)


def _is_check(s: ir.Stmt) -> bool:
    return isinstance(s, ir.If) and len(s.then) == 1 and isinstance(s.then[0], ir.Trap) and not s.orelse


def _unchecked(check: ir.If, where: str, name: str | None) -> None:
    """Warn that ``check`` cannot run before the function's loops: the loop then runs no iteration at a
    step of the wrong sign (its guard, :func:`strided_body`), where C's loop would not end."""
    trap = check.then[0]
    assert isinstance(trap, ir.Trap), check
    what = (f"in {where}" if name is None else
            f"in a loop whose range, or an enclosing loop's or 'if', reads {name}, which {where}")
    warn("unchecked-step", trap.loc, f"a loop step known only at run time {what}, is not checked before the "
                                     "loops run: a step of zero or the wrong sign runs no iteration here (C's "
                                     "loop would not end)")


def _pull(s: ir.Stmt, path: tuple[ir.Expr, ...], local: set[str], found: list[ir.Stmt],
          cnames: dict[str, str], in_func: bool) -> ir.Stmt | None:
    """``s`` without its checks, which go to ``found`` under the conditions ``path`` that reach them."""
    if _is_check(s):
        assert isinstance(s, ir.If)
        if in_func:
            _unchecked(s, "a helper function", None)
            return None
        cond = s.cond
        for c in reversed(path):
            cond = ir.binary("&&", c, cond, loc=s.loc)
        bad = sorted(ir.var_names(cond) & local)
        if bad:
            _unchecked(s, "the function changes or a loop counts", f"'{cnames.get(bad[0], bad[0])}'")
            return None
        arrays = sorted({n.array for n in ir.walk(cond) if isinstance(n, ir.Index)})
        if arrays:
            _unchecked(s, "is an array element, not read before the loops run", f"'{arrays[0]}[...]'")
            return None
        found.append(ir.If(cond, s.then, (), loc=s.loc))
        return None
    if isinstance(s, ir.For):
        inner = (*path, ir.binary("<", s.lo, s.hi, loc=s.loc))
        body = tuple(k for c in s.body if (k := _pull(c, inner, local, found, cnames, in_func)) is not None)
        return s if body == s.body else dataclasses.replace(s, body=body)
    if isinstance(s, ir.If):
        then = tuple(k for c in s.then if (k := _pull(c, (*path, s.cond), local, found, cnames, in_func))
                     is not None)
        orelse = tuple(k for c in s.orelse if (k := _pull(c, (*path, ir.unary("!", s.cond, loc=s.loc)), local,
                                                             found, cnames, in_func)) is not None)
        return s if (then, orelse) == (s.then, s.orelse) else dataclasses.replace(s, then=then, orelse=orelse)
    return s


def check_bounds_invariant(lo: ir.Expr, hi: ir.Expr, body: tuple[ir.Stmt, ...],
                           cnames: dict[str, str]) -> None:
    """Reject writes in ``body`` to anything the loop bounds read."""
    vars_read = ir.var_names(lo) | ir.var_names(hi)
    arrays_read = {n.array for e in (lo, hi) for n in ir.walk(e) if isinstance(n, ir.Index)}
    for s in body:
        for n in ir.walk(s):
            if not isinstance(n, ir.Assign):
                continue
            t = n.target
            if isinstance(t, ir.Var) and t.name in vars_read:
                what = f"'{cnames.get(t.name, t.name)}'"
            elif isinstance(t, ir.Index) and t.array in arrays_read:
                what = f"array '{t.array}'"
            else:
                continue
            raise TranspileError(n.loc, f"{what} is written in the body of a loop whose bounds read it, "
                                        "which is not supported: loop bounds are evaluated once, on entry")


def exit_value(lo: ir.Expr, hi: ir.Expr, step: int, ty: ir.Scalar, loc: Loc | None) -> ir.Expr:
    """The value C's loop variable holds when ``For(var, ty, lo, hi, step)`` ends (it ran to completion:
    the IR has no ``break``; the structured ones keep counting, docs/ordinary_c.md).

    Upward, the first value of ``lo, lo + s, ...`` not below ``hi`` (``lo`` itself on an empty range);
    downward, the first of ``hi - 1, hi - 1 - s, ...`` below ``lo`` (``hi - 1``, C's start, on an empty
    range).  A step other than 1 counts the trips in ``u64``, where ``hi - lo`` cannot overflow, and the
    result wraps back to ``ty``: that is C's value wherever C's last increment did not overflow."""
    nonempty = ir.binary("<", lo, hi, loc=loc)
    start, empty = (lo, lo) if step > 0 else (add_const(hi, -1, loc), add_const(hi, -1, loc))
    s = abs(step)
    if s == 1:
        end = hi if step > 0 else add_const(lo, -1, loc)
    else:
        u = ir.U64

        def wide(e: ir.Expr) -> ir.Expr:
            v = fold(e)
            return const_of(v % (1 << 64), u, loc) if isinstance(v, int) else ir.cast(e, u)

        d = ir.binary("-", wide(hi), wide(lo), loc=loc) if fold(lo) != 0 else wide(hi)
        k = ir.const(s, u, loc=loc)
        trips = ir.binary("+", ir.binary("/", d, k, loc=loc),
                          ir.binary("!=", ir.binary("%", d, k, loc=loc), ir.const(0, u, loc=loc), loc=loc),
                          loc=loc)
        moved = ir.binary("*", trips, k, loc=loc)
        end = (moved if step > 0 and fold(start) == 0
               else ir.binary("+" if step > 0 else "-", wide(start), moved, loc=loc))
    return ir.select(nonempty, ir.cast(end, ty), ir.cast(empty, ty), loc=loc)


@dataclasses.dataclass(frozen=True)
class Exit:
    """What a C loop leaves in the variable it counted: ``var`` (the IR name of the declared
    variable), its ``value`` (:func:`exit_value`), or ``None`` where the IR cannot give it (a
    run-time step), with the C name for the message."""

    var: str
    ty: ir.Scalar
    value: ir.Expr | None
    cname: str


def exit_values(body: tuple[ir.Stmt, ...], exits: dict[int, Exit]) -> tuple[ir.Stmt, ...]:
    """``body`` with C's exit value assigned to the counted variable after every loop of ``exits`` (by
    ``id(For)``) where the variable is read before it is written again (``for (; i < n; i++)`` after an
    unrolled loop, ``n_used = i``); nothing where it is not, so loops whose counter is dead after them
    lower as before.

    The IR scopes a loop variable to its loop (the loop counts a fresh name), so the declared variable
    keeps its value from before the loop unless it is given the exit value.  Liveness is the usual
    backward analysis on the structured body (a loop's body live-in flows back to its live-out until it
    is stable).  A read of an exit value the IR cannot compute (a loop with a run-time step) is a located
    error."""
    if not exits:
        return body
    placed: dict[int, Exit] = {}

    def place(stmts: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        for s in stmts:
            e = exits.get(id(s)) if isinstance(s, ir.For) else None
            if isinstance(s, ir.For):
                s = dataclasses.replace(s, body=place(s.body))
            elif isinstance(s, ir.If):
                s = dataclasses.replace(s, then=place(s.then), orelse=place(s.orelse))
            out.append(s)
            if e is not None:
                value = e.value if e.value is not None else ir.Var(e.var, e.ty, loc=s.loc)
                a = ir.Assign(ir.Var(e.var, e.ty, loc=s.loc), value, loc=s.loc)
                placed[id(a)] = e
                out.append(a)
        return tuple(out)

    def reads(e: ir.Node | None) -> frozenset[str]:
        return frozenset() if e is None else frozenset(ir.var_names(e))

    def prune(stmts: tuple[ir.Stmt, ...], live: frozenset[str]) -> tuple[tuple[ir.Stmt, ...], frozenset[str]]:
        out: list[ir.Stmt] = []
        for s in reversed(stmts):
            e = placed.get(id(s))
            if e is not None:
                assert isinstance(s, ir.Assign)
                if e.var not in live:
                    continue
                if e.value is None:
                    raise TranspileError(s.loc, f"'{e.cname}' is read after this loop, which counts it with a "
                                                "step known only at run time: not supported (its exit value); "
                                                f"assign '{e.cname}' before reading it")
                out.append(s)
                live = (live - {e.var}) | reads(s.value)
                continue
            if isinstance(s, ir.Assign):
                if isinstance(s.target, ir.Var):
                    live = (live - {s.target.name}) | reads(s.value)
                else:
                    live = live | reads(s.target) | reads(s.value)
            elif isinstance(s, ir.Decl):
                live = (live - {s.name}) | reads(s.init)
            elif isinstance(s, ir.If):
                then, lt = prune(s.then, live)
                orelse, le = prune(s.orelse, live)
                s = dataclasses.replace(s, then=then, orelse=orelse)
                live = lt | le | reads(s.cond)
            elif isinstance(s, ir.For):
                out_body = live
                while True:  # the next iteration reads what the body's start reads
                    new_body, into = prune(s.body, out_body)
                    grown = live | (into - {s.var})
                    if grown == out_body:
                        break
                    out_body = grown
                s = dataclasses.replace(s, body=new_body)
                live = out_body | reads(s.lo) | reads(s.hi)
            elif isinstance(s, ir.Return):
                live = reads(s.value)
            elif isinstance(s, ir.Trap):
                live = frozenset()
            else:
                live = live | reads(s)
            out.append(s)
        return tuple(reversed(out)), live

    return prune(place(body), frozenset())[0]
