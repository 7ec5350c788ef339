"""Min-plus closure (floyd-warshall): each ``k`` step in parallel where its pivot row and column hold still.

``for k { for i { for j { X[i][j] = X[i][j] < X[i][k] + X[k][j] ? X[i][j] : X[i][k] + X[k][j]; } } }``
carries dependences on ``i`` and ``j`` through row and column ``k``: the step at ``(i, k)`` writes
``X[i][k]``, which later ``(i, j)`` read.  No dependence test can free them, so
:mod:`passes.wavefront` skews the nest (2n - 1 launches per ``k``).  But the value argument is
simple: when the update leaves an element unchanged, writing it is a no-op.

**Argument.**  Write ``upd(a, b)`` for the update's value at ``(a, b)`` read at the start of step
``k``, and ``inv(a, b)`` for ``upd(a, b) == X[a][b]``.  If ``inv(k, k)`` and ``inv(i, k)`` hold,
``X[i][k]`` keeps its value throughout step ``k`` (its update reads ``X[i][k]`` and ``X[k][k]``,
both unchanged); likewise ``X[k][j]`` under ``inv(k, k)`` and ``inv(k, j)``.  So an instance
``(i, j)`` with ``ok(i, j) = inv(k, k) && inv(i, k) && inv(k, j)`` reads the same operands in any
order, and computes what the sequential step computes.  The parallel launch runs exactly those,
storing only when the value goes down (``if (S < X[i][j]) X[i][j] = S;``, the same value as the
select for integers); an element of row or column ``k`` it could store is one whose ``inv``
holds, so it stores none of them: no instance writes what another reads.  A second launch counts
the failing ``inv`` over row and column ``k`` (a sum reduction over the threads of one block, where
one thread checking the 2n elements in turn made every step wait on 2n global loads), and a third,
one-thread launch, if the count is not zero, runs step ``k`` again in program order.  That is exact
too: an instance the parallel launch did is ``min(X, S)`` with the same
``S`` (its operands are unchanged), and ``min(min(X, S), S) = min(X, S)``; the others read their
operands in program order as before.  Integers only: ``==`` on floats does not see ``-0.0`` and
``+0.0`` apart.  Wrap-around in ``X[i][k] + X[k][j]`` is covered: ``inv`` is computed with the same
arithmetic as the update.

**Precondition**: valid IR without ``Launch``; the kernel's body is the nest alone (the pass maps
the kernel itself, and a kernel holding a ``Launch`` is taken as mapped by later passes).

**Postcondition**: the body is the counter's declaration and a host loop over ``k`` with the three
launches; unchanged otherwise.

Before::

    for k in 0..n { for i in 0..n { for j in 0..n {
      paths[i][j] = paths[i][j] < paths[i][k] + paths[k][j] ? paths[i][j] : paths[i][k] + paths[k][j];
    } } }

After::

    i32 moved;
    for k in 0..n {
      launch { for i in 0..n par(y) { for j in 0..n par(x) {
        if (inv(k, k) && inv(i, k) && inv(k, j)) {
          if (paths[i][k] + paths[k][j] < paths[i][j]) { paths[i][j] = paths[i][k] + paths[k][j]; }
        }
      } } }
      launch {
        moved = !inv(k, k);
        for x in 0..n reduce(+) { moved += !inv(x, k) + !inv(k, x); }
      }
      launch { if (moved) { for i in 0..n { for j in 0..n { <the original update> } } } }
    }
"""

from __future__ import annotations

import dataclasses

from passes.builders import fresh_name
from transpile import ir


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` mapped as in the module docstring when its body is a min-plus closure; else itself."""
    if ir.is_mapped(kernel) or len(kernel.body) != 1:
        return kernel
    shape = _match(kernel, kernel.body[0])
    if shape is None:
        return kernel
    kl, il, jl, update = shape
    k, i, j = (ir.Var(loop.var, loop.ty) for loop in (kl, il, jl))
    target = update.target
    assert isinstance(target, ir.Index)
    used = ir.identifiers(kernel)
    x_name = fresh_name("x", used)
    moved_name = fresh_name("moved", used | {x_name})

    def inv(a: ir.Expr, b: ir.Expr) -> ir.Expr:
        at = {il.var: a, jl.var: b}
        return ir.binary("==", ir.substitute(update.value, at), ir.substitute(target, at))

    ok = ir.binary("&&", ir.binary("&&", inv(k, k), inv(i, k)), inv(k, j))
    s = update.value.orelse  # type: ignore[union-attr]
    lower = ir.If(ir.binary("<", s, target), (ir.Assign(target, s, loc=update.loc),), loc=update.loc)
    par_j = dataclasses.replace(jl, body=(ir.If(ok, (lower,), loc=update.loc),), par="x")
    par_i = dataclasses.replace(il, body=(par_j,), par="y")
    xv = ir.Var(x_name, il.ty)
    moved = ir.Var(moved_name, ir.I32)
    # The check counts the failing inv over row and column k (at most 2n + 1, so i32 for any n the
    # i32 loops allow): a sum reduction, spread over the threads of its launch.
    failing = ir.binary("+", ir.unary("!", inv(xv, k)), ir.unary("!", inv(k, xv)))
    scan = ir.For(x_name, il.ty, il.lo, il.hi, 1, (ir.Assign(moved, ir.binary("+", moved, failing)),),
                  reduce=("+",), loc=kl.loc)
    check = ir.Launch((ir.Assign(moved, ir.unary("!", inv(k, k))), scan), loc=kl.loc)
    again = ir.Launch((ir.If(moved, (dataclasses.replace(il, body=(dataclasses.replace(jl, body=(update,)),)),)),),
                      loc=kl.loc)
    host = dataclasses.replace(kl, body=(ir.Launch((par_i,), loc=kl.loc), check, again))
    return dataclasses.replace(kernel, body=(ir.Decl(moved_name, ir.I32, loc=kl.loc), host))


def _match(kernel: ir.Kernel, s: ir.Stmt) -> tuple[ir.For, ir.For, ir.For, ir.Assign] | None:
    """``(k loop, i loop, j loop, update)`` of the closure nest, or None."""
    if not (isinstance(s, ir.For) and len(s.body) == 1 and isinstance(s.body[0], ir.For)):
        return None
    kl, il = s, s.body[0]
    if not (len(il.body) == 1 and isinstance(il.body[0], ir.For)):
        return None
    jl = il.body[0]
    if not (len(jl.body) == 1 and isinstance(jl.body[0], ir.Assign)):
        return None
    update = jl.body[0]
    loops = (kl, il, jl)
    if len({lp.var for lp in loops}) != 3 or any(lp.step != 1 or lp.par or lp.reduce for lp in loops):
        return None
    # One extent n: every loop runs 0..n (so X[k][..] and X[..][k] are elements the nest touches).
    n = il.hi
    if not all(isinstance(lp.lo, ir.Const) and lp.lo.value == 0 and lp.hi == n for lp in loops):
        return None
    if any(isinstance(x, ir.Index) for x in ir.walk(n)) or ir.identifiers(n) & {lp.var for lp in loops}:
        return None
    k, i, j = (ir.Var(lp.var, lp.ty) for lp in loops)
    t = update.target
    if not (isinstance(t, ir.Index) and t.indices == (i, j) and t.ty.is_int):
        return None
    # X's extents need not be n: the launches touch X[a][b] for a, b in 0..n only, elements the
    # nest itself touches for every n > 0 (so over fixed extents, int X[N][N] with n <= N, as well).
    param = kernel.param(t.array)
    if param is None or not isinstance(param.ty, ir.ArrayType) or len(param.ty.dims) != 2:
        return None
    v = update.value
    if not (isinstance(v, ir.Select) and v.then == t and isinstance(v.cond, ir.Binary) and v.cond.op == "<"
            and v.cond.lhs == t and v.cond.rhs == v.orelse):
        return None
    s = v.orelse
    row, col = ir.Index(t.array, (i, k), t.ty), ir.Index(t.array, (k, j), t.ty)
    if not (isinstance(s, ir.Binary) and s.op == "+" and s.ty == t.ty and {s.lhs, s.rhs} == {row, col}):
        return None
    return kl, il, jl, update
