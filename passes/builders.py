"""IR construction helpers shared by the transforms (:mod:`passes.snapshot`, :mod:`passes.expand`,
:mod:`passes.reschedule`, :mod:`passes.tile`)."""

from __future__ import annotations

from collections.abc import Callable

from passes import budget
from transpile import ir


def fresh_name(base: str, used: set[str]) -> str:
    """``base``, or ``base1``, ``base2``, ...: the first not in ``used`` (the caller adds it)."""
    name, k = base, 1
    while name in used:
        name, k = f"{base}{k}", k + 1
    return name


def each_top_loop(kernel: ir.Kernel, rewrite: Callable[[ir.Kernel, int, ir.For], ir.Kernel | None]) -> ir.Kernel:
    """``kernel`` after ``rewrite(kernel, position, loop)`` of each of its top-level loops as given, by
    identity (the loops a rewrite builds are not visited), the result replacing the kernel where it is
    not None; the kernel so far once the pass budget (passes/budget.py) is spent."""
    for loop in [s for s in kernel.body if isinstance(s, ir.For)]:
        position = next(k for k, s in enumerate(kernel.body) if s is loop)
        try:
            budget.check()
            got = rewrite(kernel, position, loop)
        except budget.BudgetExceeded:
            return kernel
        if got is not None:
            kernel = got
    return kernel


def copy_nest(dst: str, dst_lead: tuple[ir.Expr, ...], src: str, src_lead: tuple[ir.Expr, ...],
              ty: ir.ArrayType, prefix: str, used: set[str], loc: ir.Loc | None) -> ir.Stmt:
    """``for v0 .. { for v1 .. { dst[dst_lead][v0][v1] = src[src_lead][v0][v1]; } }`` over ``ty``'s extents.

    The loop variables are fresh names ``prefix0``, ``prefix1``, ... (added to ``used``); they are
    64-bit when an extent is.
    """
    index = ir.I64 if any(d.ty.bits > 32 for d in ty.dims) else ir.I32
    names: list[str] = []
    for _ in ty.dims:
        names.append(fresh_name(f"{prefix}{len(names)}", used))
        used.add(names[-1])
    subs = tuple(ir.Var(v, index, loc=loc) for v in names)
    stmt: ir.Stmt = ir.Assign(ir.Index(dst, (*dst_lead, *subs), ty.elem, loc=loc),
                              ir.Index(src, (*src_lead, *subs), ty.elem, loc=loc), loc=loc)
    for v, d in reversed(list(zip(names, ty.dims))):
        hi = d if d.ty == index else ir.Cast(d, index, loc=loc)
        stmt = ir.For(v, index, ir.Const(0, index, loc=loc), hi, 1, (stmt,), loc=loc)
    return stmt


def rename_decls(stmts: tuple[ir.Stmt, ...], suffix: str, used: set[str]) -> tuple[ir.Stmt, ...]:
    """``stmts`` with every scalar they declare renamed ``NAME<suffix>`` (made fresh against ``used``, to
    which the new names are added): a copy of a loop body placed beside it declares nothing twice."""
    table: dict[str, str] = {}
    for s in stmts:
        for n in ir.statements(s):
            if isinstance(n, ir.Decl):
                table[n.name] = fresh_name(f"{n.name}{suffix}", used)
                used.add(table[n.name])
    if not table:
        return stmts
    return tuple(_Rename(table).transform(s) for s in stmts)


class _Rename(ir.Transformer):
    def __init__(self, table: dict[str, str]) -> None:
        self.table = table

    def visit_Var(self, e: ir.Var) -> ir.Node:
        return ir.Var(self.table[e.name], e.ty, loc=e.loc) if e.name in self.table else e

    def visit_Decl(self, d: ir.Decl) -> ir.Node:
        new = self.generic_visit(d)
        return ir.Decl(self.table.get(new.name, new.name), new.ty, new.init, loc=new.loc)


def loop_invariant(e: ir.Expr, loop: ir.For, store: ir.Index | None = None) -> bool:
    """Whether ``e`` reads nothing ``loop`` writes but its counter and the element ``store`` (a
    recurrence's own, whose entry value it is until the iteration writes it), and calls no helper (not
    known here to be free of effects)."""
    written_scalars = ir.scalars_written(loop)
    declared = {n.name for n in ir.statements(loop) if isinstance(n, ir.Decl)}
    written_arrays = {n.target.array for n in ir.walk(loop) if isinstance(n, ir.Assign)
                      and isinstance(n.target, ir.Index)}
    for n in ir.walk(e):
        if isinstance(n, ir.Var) and n.name != loop.var and (n.name in written_scalars or n.name in declared):
            return False
        if isinstance(n, ir.Index) and n.array in written_arrays and n != store:
            return False
        if isinstance(n, ir.Call) and n.fn not in ir.MATH_FUNCS:
            return False
    return True
