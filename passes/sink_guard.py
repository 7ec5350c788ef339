"""Guard sinking: a loop-invariant ``if`` around loops moves into them, so the loops can be launched.

``if (!flag) { for i .. { a[i] = b[i]; } }`` (a ``goto skip`` over a loop, a ``switch`` choosing
between loops) is one statement with a loop inside: map-gpu would run all of it in one GPU thread,
since it launches only top-level loops and host loops.  When the condition ``c`` is invariant (it
reads no scalar and no array the guarded statements write, and no name a guarded loop declares),
``if (c) { S1; S2 } else { E1 }`` is ``if (c) S1; if (c) S2; if (!c) E1`` (``c`` keeps its value
across them), and ``if (c) for v in lo..hi { B }`` is ``for v in lo..hi { if (c) B }`` when the
bounds can be evaluated whatever ``c`` is (they read no array and divide only by nonzero constants,
so evaluating them cannot fault, and read no scalar the guarded code assigns, so they have the value C
would give them) and ``c`` does not mention ``v``.  A condition that reads what the branches write (the
flag of an early return, ``if (!done) { ...; done = 1; }``) is evaluated once into a fresh scalar,
which then guards every piece: the value C tests on entry.  A scalar declared in a branch is declared
before the ``if`` and assigned in it (names are unique in a kernel, so nothing else meets it).  The guard is pushed through loop
nests down to the first block that is not a loop (a block declaring a scalar is guarded whole, so
no declaration leaves its scope).  The inverse of loop unswitching (Allen & Kennedy, ch. 7): each
iteration tests ``c`` again, and a loop whose iterations are independent stays independent (the
condition reads only what no iteration writes), so the dependence test decides alone.

**Precondition**: valid IR without ``Launch`` regions.

**Postcondition**: valid IR computing the same values; no ``if`` with a loop inside it whose
condition is invariant and whose loops have safe bounds.

Before::

    if (!flag) {
      for i in 0..n {
        a[i] = b[i];
      }
    }

After::

    for i in 0..n {
      if (!flag) {
        a[i] = b[i];
      }
    }
"""

from __future__ import annotations

import dataclasses

from passes.builders import fresh_name
from transpile import ir
from transpile.ir.cscalars import const_of


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with its invariant guards around loops sunk into them (the same object if none)."""
    if ir.is_mapped(kernel):
        return kernel
    if not any(isinstance(n, ir.If) and _has_loop(n) for n in ir.statements(kernel)):
        return kernel
    names = _Names(ir.identifiers(kernel))
    body = _block(kernel.body, names)
    return kernel if body is kernel.body else dataclasses.replace(kernel, body=body)


@dataclasses.dataclass
class _Names:
    """The kernel's identifiers, which fresh names are made against."""

    used: set[str]



def _has_loop(s: ir.If) -> bool:
    return any(isinstance(n, ir.For) for n in ir.statements(s) if n is not s)


def _block(stmts: tuple[ir.Stmt, ...], names: _Names) -> tuple[ir.Stmt, ...]:
    out: list[ir.Stmt] = []
    changed = False
    for s in stmts:
        new: tuple[ir.Stmt, ...] = (s,)
        if isinstance(s, ir.For):
            body = _block(s.body, names)
            if body is not s.body:
                new = (dataclasses.replace(s, body=body),)
        elif isinstance(s, ir.If) and _has_loop(s):
            then, orelse = _block(s.then, names), _block(s.orelse, names)
            s2 = s if then is s.then and orelse is s.orelse else dataclasses.replace(s, then=then, orelse=orelse)
            new = _sink(s2, names) or (s2,)
        changed = changed or len(new) != 1 or new[0] is not s
        out.extend(new)
    return tuple(out) if changed else stmts


def _sink(s: ir.If, names: _Names) -> tuple[ir.Stmt, ...] | None:
    """``s`` as guarded statements with the guard inside its loops, or None where that is not exact."""
    reads = _reads(s.cond)
    written: set[str] = set()
    for part in (*s.then, *s.orelse):
        for n in ir.statements(part):
            if isinstance(n, ir.Assign):
                written.add(n.target.name if isinstance(n.target, ir.Var) else n.target.array)
            elif isinstance(n, ir.Decl):
                written.add(n.name)
            elif isinstance(n, ir.For):
                written.add(n.var)
            elif isinstance(n, (ir.Alloc, ir.Return)):
                return None
    decls = [p for p in (*s.then, *s.orelse) if isinstance(p, ir.Decl)]
    before: list[ir.Stmt] = []
    if decls:  # names are unique in a kernel (ircheck): declared before the if, assigned in its branch
        # (zero first: a reduction the guard made conditional adds to it where the guard is false)
        before += [ir.Decl(d.name, d.ty, const_of(0, d.ty, d.loc), loc=d.loc) for d in decls]
        s = dataclasses.replace(s, then=_undeclared(s.then), orelse=_undeclared(s.orelse))
    if reads & written:
        # the branches change what the condition reads ('if (!done) { ...; done = 1; }'): its value on
        # entry, kept in a fresh scalar, guards every piece
        if _has_call(s.cond):
            return None
        g = fresh_name("guard", names.used)
        names.used.add(g)
        # (a narrow condition, a u8 element, is compared as C promotes it: no literal of a narrow type)
        before.append(ir.Decl(g, ir.I32, ir.binary("!=", s.cond, const_of(0, ir.promote(s.cond.ty), s.loc), loc=s.loc)
                              if s.cond.ty != ir.I32 else s.cond, loc=s.loc))
        s = dataclasses.replace(s, cond=ir.Var(g, ir.I32, loc=s.loc))
    # A bound reading a scalar the guarded code assigns would be evaluated with its old value where
    # the condition is false: such a loop keeps the guard outside.
    assigned = {n.target.name for p in (*s.then, *s.orelse) for n in ir.statements(p)
                if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var)}
    loc = s.loc
    out = _guarded(s.then, s.cond, loc, assigned)
    if s.orelse:
        out += _guarded(s.orelse, ir.unary("!", s.cond, loc=loc), loc, assigned)
    if not any(isinstance(p, ir.For) for p in out):
        return None  # no loop took the guard
    return (*before, *out)


def _undeclared(block: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
    """``block`` with its declarations as assignments of their values (declared before it)."""
    return tuple(ir.Assign(ir.Var(p.name, p.ty, loc=p.loc), p.init, loc=p.loc) if isinstance(p, ir.Decl)
                 and p.init is not None else p for p in block if not (isinstance(p, ir.Decl) and p.init is None))


def _has_call(e: ir.Expr) -> bool:
    return any(isinstance(n, ir.Call) for n in ir.walk(e))


def _guarded(block: tuple[ir.Stmt, ...], cond: ir.Expr, loc: ir.Loc | None,
             assigned: set[str]) -> tuple[ir.Stmt, ...]:
    """``if (cond) block`` with ``cond`` pushed into the loops of ``block`` that allow it (bounds that
    cannot fault and read no scalar of ``assigned``)."""
    if any(isinstance(p, ir.Decl) for p in block):
        return (ir.If(cond, block, (), loc=loc),)
    out: list[ir.Stmt] = []
    group: list[ir.Stmt] = []
    for s in block:
        if isinstance(s, ir.For) and _safe(s.lo) and _safe(s.hi) and not (_reads(s.lo) | _reads(s.hi)) & assigned:
            if group:
                out.append(ir.If(cond, tuple(group), (), loc=loc))
                group = []
            out.append(dataclasses.replace(s, body=_guarded(s.body, cond, loc, assigned)))
        else:
            group.append(s)
    if group:
        out.append(ir.If(cond, tuple(group), (), loc=loc))
    return tuple(out)


def _safe(e: ir.Expr) -> bool:
    """Evaluating ``e`` cannot fault: no array read, division only by a constant other than 0 and -1."""
    for n in ir.walk(e):
        if isinstance(n, (ir.Index, ir.Call)):
            return False
        if isinstance(n, ir.Binary) and n.op in ("/", "%"):
            if not (isinstance(n.rhs, ir.Const) and n.rhs.value not in (0, -1)):
                return False
    return True


def _reads(e: ir.Expr) -> set[str]:
    return {n.name if isinstance(n, ir.Var) else n.array for n in ir.walk(e) if isinstance(n, (ir.Var, ir.Index))}
