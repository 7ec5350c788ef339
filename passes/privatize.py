"""Scalar privatisation: move a scalar's declaration into the loop body that defines it afresh every iteration.

C code in PolyBench style declares temporaries once at the top of the
function (symm's ``double temp2;``) and reassigns them inside a loop nest.
As a single variable, the scalar carries output and anti dependences on
every enclosing loop (:mod:`passes.deps` treats it as a 0-d array), so those
loops look sequential.  A scalar declared *inside* a loop body is a fresh
instance per iteration, which carries nothing.  This pass makes that move
when it preserves the program's meaning.

**Precondition**: valid IR without ``Launch`` (runs before distribution; a
mapped kernel is returned unchanged).

**Rule.**  A ``Decl x`` (no initialiser, or one whose value is dead as shown
below) in a block ``B`` moves into loop ``L`` when:

* every use of ``x`` after the declaration in ``B`` lies inside one statement
  of ``B``, and following single statements that contain every use we reach
  ``L``, a ``For`` (the innermost such loop: below it the uses spread over
  several statements of ``L``'s body, or the chain stops at a non-loop);
* the first statement of ``L``'s body that mentions ``x`` is an
  unconditional top-level ``x = e`` with ``e`` not reading ``x``: every
  iteration writes ``x`` before anything reads it, so no value flows between
  iterations, or from before the loop into it;
* ``x`` is not read after ``L`` (all uses are inside it), so the last
  iteration's value is dead.

Then the declaration is removed from ``B`` and that first assignment becomes
``Decl x = e`` in ``L``'s body, if that makes more loops parallel (see :func:`run`).  Nothing else changes: the same statements
compute the same values in the same order.

**Live ranges.**  A scalar reused by several loop nests (deriche's ``ym1``: the row pass, then
the column pass, each starting with ``ym1 = 0.0``) has several users in ``B``, so the rule above
does not apply to it as one variable.  But a user loop ``L_k`` whose every iteration writes ``x``
before reading it (the condition above) never reads the value ``x`` had on entry, and when the
next user ``L_{k+1}`` (if any) does not read its entry value either, nothing reads the value
``L_k`` leaves.  Such an ``L_k`` (``k`` >= 2) gets a variable of its own, a fresh name for every
mention of ``x`` in it, declared inside it by the rule above; the first user keeps ``x``, and moves
too once it is the only user left.  This is the classic split of a variable into its webs: each
value is still written and read by the same statements in the same order.

Before::

    f64 temp2;
    for i in 0..m {
      for j in 0..n {
        temp2 = f64(0);
        for k in 0..i { temp2 += B[k][j] * A[i][k]; }
        C[i][j] = ... + alpha * temp2;
      }
    }

After::

    for i in 0..m {
      for j in 0..n {
        f64 temp2 = f64(0);
        for k in 0..i { temp2 += B[k][j] * A[i][k]; }
        C[i][j] = ... + alpha * temp2;
      }
    }
"""

from __future__ import annotations

import dataclasses

from passes import deps
from passes.builders import fresh_name
from transpile import ir


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with its privatisable scalar declarations moved inward (see the module docstring).

    Only moves that pay are made: one that makes more loops parallel
    (:func:`passes.deps.parallel_loops`).  A move that frees no loop is left
    alone: a scalar at the top may be a device scalar of a host loop (durbin's
    ``sum``), which map-gpu handles and a loop-local one would not.
    """
    if ir.is_mapped(kernel):
        return kernel
    names = sorted({s.name for s in ir.walk(kernel) if isinstance(s, ir.Decl)})
    made: dict[tuple[int, tuple[str, ...]], tuple[ir.Kernel, ir.Kernel]] = {}

    def apply(kernel: ir.Kernel, names: list[str]) -> ir.Kernel:  # the same object for the same moves
        key = (id(kernel), tuple(names))  # (the kernel is held in the value: its id stays its own)
        if key not in made:
            made[key] = kernel, _apply_moves(kernel, names)
        return made[key][1]

    for name in names:
        moved = apply(kernel, [name])
        if moved is kernel:
            continue
        before, after = deps.parallel_count(kernel), deps.parallel_count(moved)
        if before is not None and after is not None and after > before:
            kernel = moved
    # Scalars that free a loop only together (deriche's row pass carries ym1, ym2 and xm1): all the
    # remaining moves at once, then without each one the gain does not need.
    rest = [n for n in names if apply(kernel, [n]) is not kernel]
    if not rest:
        return kernel
    before, joint = deps.parallel_count(kernel), deps.parallel_count(apply(kernel, rest))
    if before is None or joint is None or joint <= before:
        return kernel
    for name in list(rest):
        fewer = [n for n in rest if n != name]
        count = deps.parallel_count(apply(kernel, fewer))
        if count is not None and count >= joint:
            rest = fewer
    return apply(kernel, rest)


def _apply_moves(kernel: ir.Kernel, names: list[str]) -> ir.Kernel:
    """``kernel`` with the moves of ``names``' declarations made, one name after another (itself if none)."""
    for name in names:
        body = _block(kernel.body, name, ir.identifiers(kernel))
        if body != kernel.body:
            kernel = dataclasses.replace(kernel, body=body)
    return kernel


def _block(body: tuple[ir.Stmt, ...], name: str, used: set[str]) -> tuple[ir.Stmt, ...]:
    """``body`` with its declarations of ``name`` moved inward, then its children's blocks.

    ``used``: every identifier of the kernel; names made for split live ranges are added to it.
    """
    out = list(body)
    n = 0
    while n < len(out):
        s = out[n]
        if isinstance(s, ir.Decl) and s.name == name and _pure(s.init):
            rest = _split(s, out[n + 1:], used)
            moved = _move(s, rest)
            if moved is not None:
                out[n:] = moved
                continue  # the statement now at n is the next one
            out[n + 1:] = rest
        n += 1
    return tuple(_children(s, name, used) for s in out)


def _children(s: ir.Stmt, name: str, used: set[str]) -> ir.Stmt:
    """``s`` with its blocks' moves made (``s`` itself where nothing moved)."""
    if isinstance(s, ir.For):
        body = _block(s.body, name, used)
        return s if _same(body, s.body) else dataclasses.replace(s, body=body)
    if isinstance(s, ir.If):
        then, orelse = _block(s.then, name, used), _block(s.orelse, name, used)
        return s if _same(then, s.then) and _same(orelse, s.orelse) else \
            dataclasses.replace(s, then=then, orelse=orelse)
    return s


def _same(a: tuple[ir.Stmt, ...], b: tuple[ir.Stmt, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _split(decl: ir.Decl, rest: list[ir.Stmt], used: set[str]) -> list[ir.Stmt]:
    """``rest`` with the user loops of ``decl``'s variable after the first given variables of their own
    (declared inside them), where their live ranges are separate (the module docstring, *Live ranges*)."""
    users = [k for k, s in enumerate(rest) if _mentions(s, decl.name)]
    # A user that never reads the value the variable has on entry (a loop that writes it first on
    # every iteration: _into's condition; zero iterations read nothing).
    fresh = [isinstance(rest[k], ir.For) and _into(rest[k], decl) is not None for k in users]  # type: ignore[arg-type]
    out = list(rest)
    for n in range(1, len(users)):
        if not (fresh[n] and (n + 1 == len(users) or fresh[n + 1])):
            continue
        name = fresh_name(f"{decl.name}_{n}", used)
        used.add(name)
        renamed = ir.substitute(rest[users[n]], {decl.name: ir.Var(name, decl.ty)})
        own = _into(renamed, ir.Decl(name, decl.ty, None, loc=decl.loc))  # type: ignore[arg-type]
        assert own is not None, f"renaming changed _into's verdict on {rest[users[n]]!r}"
        out[users[n]] = own
    return out


def _move(decl: ir.Decl, rest: list[ir.Stmt]) -> list[ir.Stmt] | None:
    """``rest`` with ``decl`` moved into a loop (the declaration itself dropped), or None."""
    users = [k for k, s in enumerate(rest) if _mentions(s, decl.name)]
    if len(users) != 1 or not isinstance(rest[users[0]], ir.For):
        return None
    k = users[0]
    new = _into(rest[k], decl)  # type: ignore[arg-type]
    if new is None:
        return None
    return rest[:k] + [new] + rest[k + 1:]


def _into(loop: ir.For, decl: ir.Decl) -> ir.For | None:
    """``loop`` with ``decl`` declared in the innermost loop holding every use, or None."""
    users = [k for k, s in enumerate(loop.body) if _mentions(s, decl.name)]
    if not users:
        return None  # only the loop's own bounds read it: they need its value from before the loop
    if len(users) == 1 and isinstance(loop.body[users[0]], ir.For):
        inner = _into(loop.body[users[0]], decl)  # type: ignore[arg-type]
        if inner is not None:
            body = list(loop.body)
            body[users[0]] = inner
            return dataclasses.replace(loop, body=tuple(body))
    first = loop.body[users[0]]
    if not (isinstance(first, ir.Assign) and isinstance(first.target, ir.Var)
            and first.target.name == decl.name and not _mentions_expr(first.value, decl.name)):
        return None
    if any(isinstance(s, ir.Decl) and s.name == decl.name for s in ir.statements(loop)):
        return None  # a shadowing declaration inside: leave the scopes alone
    body = list(loop.body)
    body[users[0]] = ir.Decl(decl.name, decl.ty, first.value, loc=first.loc)
    return dataclasses.replace(loop, body=tuple(body))


def _mentions(s: ir.Node, name: str) -> bool:
    return any(isinstance(n, (ir.Var, ir.Decl)) and n.name == name for n in ir.walk(s))


def _mentions_expr(e: ir.Expr, name: str) -> bool:
    return any(isinstance(n, ir.Var) and n.name == name for n in ir.walk(e))


def _pure(e: ir.Expr | None) -> bool:
    """An initialiser that may be dropped: none, or one without calls (which could have effects)."""
    return e is None or not any(isinstance(n, ir.Call) for n in ir.walk(e))
