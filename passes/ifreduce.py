"""If-conversion of reductions: accumulations written with ``if``, ternaries and temporaries.

:mod:`passes.reductions` recognises a loop whose carried dependences are accumulations ``x = x op e``.
People write many of those another way (docs/ordinary_c.md); inside a loop body this pass rewrites

* a conditional accumulation ``if (c) x = x op e;`` (``op`` ``+ - *``; ``c`` not reading ``x``) as
  ``x = x op (c ? e : 0)`` (``1`` for ``*``; ``-0.0`` for a float ``+``, so a ``-0.0`` left alone stays
  ``-0.0``), and ``if (c) x = x op e1; else x = x op e2;`` as
  ``x = x op (c ? e1 : e2)``: the same value, the term chosen instead of the statement;
* an integer maximum or minimum by comparison, ``if (e > m) m = e;`` (also ``m < e``, ``>=``; ``<`` for a
  minimum; ``m`` a scalar or an element not read by ``e``), as the conditional ``m = e > m ? e : m``, which
  :mod:`transpile.ir.accum` reads as an exact ``max`` (``min``) accumulation, with or without ``reassociate``;
* a floating-point maximum or minimum by comparison, ``if (e > m) m = e;`` (also ``m < e``, ``>=``, and the ternary
  ``m = e > m ? e : m``; ``<`` for a minimum), ``m`` a float scalar not read by ``e``, as a ``fmaxf``
  reduction (``fminf``; ``fmax``/``fmin`` for double) that keeps C's result when ``m`` starts out NaN
  (C's comparisons then never hold, so ``m`` stays NaN; ``fmaxf`` would skip it).  Where ``m``'s value at
  the outermost loop that touches it only through such statements is a non-NaN constant (``m = -INFINITY``
  just before), the statement becomes ``m = fmaxf(m, e)``; otherwise a fresh ``r`` from ``-inf``
  accumulates ``r = fmaxf(r, e)`` in that loop and ``if (r > m) m = r;`` follows it (the same
  comparison: a NaN ``m`` fails it, and NaN elements are skipped by both).  A statement whose ``m`` is
  read elsewhere in its own loop stays an ``if``.  Only the sign of a zero among equal elements may
  differ from C, which is why this is done only with ``reassociate`` (off with ``--no-reassociate``,
  like leaving out ``-ffast-math``, under which gcc vectorises this form too);
* a call of a helper that returns one expression (``max_score(table[i][j], e)``, PolyBench's nussinov
  written with a function instead of its macro), inlined where that makes the statement one of the
  above or an accumulation;
* a temporary: ``T t = e;`` right before the statement that is its only use, when inlining it makes that
  statement one of the above (``float t = a[i] * b[i]; s = s + t;``, a switch's selector).

Nothing else changes; a loop whose accumulation is not recognised afterwards stays as it was found
by the later passes (sequential).  Top-level statements are left alone: only loop bodies matter.

**Precondition**: valid IR without ``Launch`` regions.

**Postcondition**: valid IR computing the same values (for max/min up to the sign of a zero).

Before::

    for i in 0..n {
      if (c[i] > 0.0f) {
        s += a[i];
      }
    }

After::

    for i in 0..n {
      s += c[i] > 0.0f ? a[i] : 0.0f;
    }
"""

from __future__ import annotations

import dataclasses

from passes.builders import fresh_name
from transpile import ir
from transpile.ir import accum

_MAX = {">": "max", ">=": "max", "<": "min", "<=": "min"}
_FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">="}


def run(kernel: ir.Kernel, *, reassociate: bool = True, funcs: tuple[ir.Func, ...] = ()) -> ir.Kernel:
    """``kernel`` with its loop bodies' conditional accumulations in accumulation form; ``funcs``: the
    module's helper functions (a call of one that returns one expression is inlined where that makes
    the statement an accumulation)."""
    if ir.is_mapped(kernel):
        return kernel
    got = _Rewrite(reassociate, _expression_helpers(funcs)).transform(kernel)
    assert isinstance(got, ir.Kernel)
    if got is kernel or not any(_mark(s) for s in ir.statements(got)):
        return got
    return dataclasses.replace(got, body=_Settle(ir.identifiers(got)).block(got.body))


#: A max/min by comparison between the two phases: ``m = $if<op>(m, e)`` stands for ``if (e <op> m) m = e;``
#: until :class:`_Settle` decides its final form.  Never left in the IR.
_MARK = "$if"


def _expression_helpers(funcs: tuple[ir.Func, ...]) -> dict[str, ir.Func]:
    """The helpers whose body is one ``return e;`` over scalar parameters (``max_score(s1, s2)``)."""
    return {f.name: f for f in funcs if f.ret is not None and len(f.body) == 1 and isinstance(f.body[0], ir.Return)
            and f.body[0].value is not None and all(isinstance(p.ty, ir.Scalar) for p in f.params)}


class _Rewrite(ir.Transformer):
    def __init__(self, reassociate: bool, helpers: dict[str, ir.Func] | None = None) -> None:
        self.reassociate = reassociate
        self.helpers = helpers or {}

    def visit_For(self, loop: ir.For) -> ir.Node:
        new = self.generic_visit(loop)
        assert isinstance(new, ir.For)
        body = self._body(new.body)
        if len(body) == len(new.body) and all(a is b for a, b in zip(body, new.body)):
            return new
        return dataclasses.replace(new, body=body)

    def _body(self, body: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        k = 0
        while k < len(body):
            s = body[k]
            nxt = body[k + 1] if k + 1 < len(body) else None
            if isinstance(s, ir.Decl) and s.init is not None and nxt is not None:
                inlined = self._inline(s, nxt, body[k + 2:])
                if inlined is not None:
                    out.append(inlined)
                    k += 2
                    continue
            out.append(self._stmt(s) or s)
            k += 1
        return tuple(out)

    def _inline(self, d: ir.Decl, s: ir.Stmt, rest: tuple[ir.Stmt, ...]) -> ir.Stmt | None:
        """``s`` with the temporary ``d`` inlined, if ``d``'s only use is in ``s`` and that makes it an
        accumulation."""
        assert d.init is not None
        if any(d.name in ir.identifiers(r) for r in rest) or d.name in ir.scalars_written(s):
            return None
        if d.name not in ir.identifiers(s):
            return None
        got = ir.substitute(s, {d.name: d.init})
        return self._stmt(got) or (got if accum.accumulation(got) is not None else None)

    def _stmt(self, s: ir.Stmt) -> ir.Stmt | None:
        """``s`` in accumulation form, or None."""
        if isinstance(s, ir.Assign) and isinstance(s.value, ir.Call) and s.value.fn in self.helpers:
            got = dataclasses.replace(s, value=self._inlined(s.value))
            return self._stmt(got) or (got if accum.accumulation(got) is not None else None)
        if isinstance(s, ir.If):
            return self._cond_accumulation(s) or self._compare(s)
        if isinstance(s, ir.Assign) and isinstance(s.value, ir.Select):
            sel = s.value
            return self._minmax(s.target, sel.cond, sel.then, sel.orelse, s.loc)
        return None

    def _inlined(self, call: ir.Call) -> ir.Expr:
        """``call``'s value as its helper's returned expression over the arguments: the same value (the
        IR's expressions have no side effects, so an argument named twice is computed twice, not changed)."""
        f = self.helpers[call.fn]
        ret = f.body[0]
        assert isinstance(ret, ir.Return) and ret.value is not None and len(call.args) == len(f.params), call
        args = {p.name: ir.cast(a, p.ty) for p, a in zip(f.params, call.args)}  # type: ignore[arg-type]
        return ir.cast(ir.substitute(ret.value, args), call.ty)

    def _cond_accumulation(self, s: ir.If) -> ir.Stmt | None:
        if len(s.then) != 1 or len(s.orelse) > 1:
            return None
        a = accum.accumulation(s.then[0])
        if a is None or a.op not in ("+", "*") or a.fn is not None or _reads(s.cond, a.target):
            return None
        if _reads(a.term, a.target):
            return None
        if s.orelse:
            b = accum.accumulation(s.orelse[0])
            if b is None or b.target != a.target or b.fn is not None or not _same_shape(a, b):
                return None
            other = b.term
        else:
            other = ir.const(_neutral(a), a.term.ty, loc=s.loc)
        return accum.apply(a, ir.select(s.cond, a.term, other, loc=s.loc))

    def _compare(self, s: ir.If) -> ir.Stmt | None:
        if s.orelse or len(s.then) != 1 or not isinstance(s.then[0], ir.Assign):
            return None
        a = s.then[0]
        if a.target.ty.is_int:
            # ``if (e > m) m = e;`` on integers: the conditional ``m = e > m ? e : m``, exactly a maximum
            # (no NaN; equal values are the same value), for a scalar or an element alike.
            if _reads(a.value, a.target) or a.value.ty != a.target.ty:
                return None
            got = ir.Assign(a.target, ir.Select(s.cond, a.value, a.target, a.target.ty), loc=s.loc)
            found = accum.accumulation(got)
            return got if found is not None and found.op in ("min", "max") else None
        return self._minmax(a.target, s.cond, a.value, a.target, s.loc)

    def _minmax(self, target: ir.LValue, cond: ir.Expr, then: ir.Expr, orelse: ir.Expr,
                loc: object) -> ir.Stmt | None:
        """``target = cond ? then : orelse`` as ``target = fmax(target, e)`` when it is one."""
        if not self.reassociate or not isinstance(target, ir.Var) or not target.ty.is_float:
            return None
        if orelse != target or _reads(then, target) or not isinstance(cond, ir.Binary) or cond.op not in _MAX:
            return None
        if (cond.lhs, cond.rhs) not in ((then, target), (target, then)) or then.ty != target.ty:
            return None
        # the comparison as ``e <cmp> m``: what the final ``if (r <cmp> m)`` repeats
        cmp = cond.op if cond.lhs == then else _FLIP[cond.op]
        value = ir.Call(_MARK + cmp, (target, then), target.ty, loc=loc)  # type: ignore[arg-type]
        return ir.Assign(target, value, loc=loc)  # type: ignore[arg-type]


class _Settle:
    """The second phase: each marked max/min takes its final form at the outermost loop whose only
    references to ``m`` are marked statements of the same kind (see the module's docstring)."""

    def __init__(self, used: set[str]) -> None:
        self.used = used

    def block(self, stmts: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        for k, s in enumerate(stmts):
            if not any(_mark(n) for n in ir.statements(s)):
                out.append(s)
            elif isinstance(s, ir.For):
                out.extend(self.loop(s, stmts[:k]))
            elif isinstance(s, ir.If):
                out.append(dataclasses.replace(s, then=self.block(s.then), orelse=self.block(s.orelse)))
            else:  # a mark directly in the body of a loop that reads its ``m`` elsewhere
                out.append(_revert(s))
        return tuple(out)

    def loop(self, loop: ir.For, before: tuple[ir.Stmt, ...]) -> list[ir.Stmt]:
        marks: dict[str, list[ir.Assign]] = {}
        for n in ir.statements(loop):
            if _mark(n):
                assert isinstance(n, ir.Assign) and isinstance(n.target, ir.Var)
                marks.setdefault(n.target.name, []).append(n)
        pre: list[ir.Stmt] = []
        post: list[ir.Stmt] = []
        table: dict[int, ir.Stmt] = {}
        for name, ms in marks.items():
            if len({_MAX[_mark(a)[0]] for a in ms}) != 1 or not _only_marks_touch(loop, name, len(ms)):  # type: ignore[index]
                continue
            m = ms[0].target
            assert isinstance(m, ir.Var)
            cmp = _mark(ms[0])[0]  # type: ignore[index]
            op = _MAX[cmp]
            fn = ("fmax" if op == "max" else "fmin") + ("f" if m.ty == ir.F32 else "")
            acc = m
            if not _starts_not_nan(name, before):
                loc = loop.loc
                acc = ir.Var(fresh_name(f"{name}_{op}", self.used), m.ty, loc=loc)
                self.used.add(acc.name)
                pre.append(ir.Decl(acc.name, m.ty, ir.const(accum.identity(op, m.ty), m.ty, loc=loc), loc=loc))
                post.append(ir.If(ir.binary(cmp, acc, m, loc=loc), (ir.Assign(m, acc, loc=loc),), (), loc=loc))
            for a in ms:
                e = a.value.args[1]  # type: ignore[union-attr]
                table[id(a)] = ir.Assign(acc, ir.Call(fn, (acc, e), m.ty, loc=a.loc), loc=a.loc)
        body = _Replace(table).transform(loop) if table else loop
        assert isinstance(body, ir.For)
        if any(_mark(n) for n in ir.statements(body)):
            body = dataclasses.replace(body, body=self.block(body.body))
        return [*pre, body, *post]


class _Replace(ir.Transformer):
    """Statements replaced by identity (``id``) from a table."""

    def __init__(self, table: dict[int, ir.Stmt]) -> None:
        self.table = table

    def visit_Assign(self, s: ir.Assign) -> ir.Node:
        return self.table.get(id(s), s)


def _mark(s: ir.Stmt) -> tuple[str, ir.Expr] | None:
    """``(cmp, e)`` of a marked ``m = $if<cmp>(m, e)``, else None."""
    if isinstance(s, ir.Assign) and isinstance(s.value, ir.Call) and s.value.fn.startswith(_MARK):
        return s.value.fn[len(_MARK):], s.value.args[1]
    return None


def _revert(s: ir.Stmt) -> ir.Stmt:
    """A mark as the ``if`` it came from."""
    got = _mark(s)
    assert got is not None and isinstance(s, ir.Assign)
    cmp, e = got
    return ir.If(ir.binary(cmp, e, s.target, loc=s.loc), (ir.Assign(s.target, e, loc=s.loc),), (), loc=s.loc)


def _only_marks_touch(loop: ir.For, name: str, count: int) -> bool:
    """Are ``count`` marks (two ``Var`` nodes each: the target and the first argument) all of ``loop``'s
    references to the scalar ``name``, which it does not declare?"""
    refs = sum(1 for n in ir.walk(loop) if isinstance(n, ir.Var) and n.name == name)
    declared = any(isinstance(n, ir.Decl) and n.name == name for n in ir.statements(loop))
    return refs == 2 * count and not declared and loop.var != name


def _starts_not_nan(name: str, before: tuple[ir.Stmt, ...]) -> bool:
    """Is ``name``'s value after ``before`` (the statements of the same block) a constant that is not NaN?"""
    for s in reversed(before):
        if isinstance(s, ir.Decl) and s.name == name:
            return s.init is not None and _not_nan_constant(s.init)
        if isinstance(s, ir.Assign) and isinstance(s.target, ir.Var) and s.target.name == name:
            return _not_nan_constant(s.value)
        if name in ir.scalars_written(s):
            return False
    return False


def _not_nan_constant(e: ir.Expr) -> bool:
    while isinstance(e, (ir.Unary, ir.Cast)) and (not isinstance(e, ir.Unary) or e.op == "-"):
        e = e.operand
    return isinstance(e, ir.Const) and e.value == e.value


def _neutral(a: accum.Accumulation) -> int | float:
    """The term that leaves ``x`` exactly as it is in ``a``'s statement: ``x + -0.0`` (``x + 0.0`` turns a
    ``-0.0`` into ``+0.0``, which C's untaken ``if`` would have kept), ``x - 0.0``, ``x * 1``."""
    v = a.stmt.value
    if a.op == "+" and a.target.ty.is_float and isinstance(v, ir.Binary) and v.op == "+":
        return -0.0
    return accum.identity(a.op, a.target.ty)


def _same_shape(a: accum.Accumulation, b: accum.Accumulation) -> bool:
    """Do ``a`` and ``b`` combine their terms with the same operator, on the same side?"""
    va, vb = a.stmt.value, b.stmt.value
    return (isinstance(va, ir.Binary) and isinstance(vb, ir.Binary) and va.op == vb.op
            and (va.lhs == a.target) == (vb.lhs == b.target))


def _reads(e: ir.Node, target: ir.LValue) -> bool:
    name = target.name if isinstance(target, ir.Var) else target.array
    return any((isinstance(n, ir.Var) and n.name == name) or (isinstance(n, ir.Index) and n.array == name)
               for n in ir.walk(e))
