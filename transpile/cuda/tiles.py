"""What the tiled launches share (:mod:`transpile.cuda.tiled`, FMA micro-tiles, and
:mod:`transpile.cuda.mma`, tensor cores): row bounds, the scalar form of the update, the tile grid."""

from __future__ import annotations

from passes.tile import Plan
from transpile import ir
from transpile.cuda import printer as cu


def row_bound(plan: Plan, p: cu.ExprPrinter, bound: ir.Expr, g: str) -> str:
    """``bound`` (j's or k's lo or hi) for row ``i = g`` (a long long in range), as long long."""
    i_at = ir.Var(f"(({cu.ctype(plan.row.ty)}){g})", plan.row.ty)
    return p.cast_to(ir.substitute(bound, {plan.row.var: i_at}), "long long")


def scalar_form(plan: Plan, p: cu.ExprPrinter, printer: cu.StmtPrinter, acc_ref: ir.Expr
                ) -> tuple[ir.Expr, list[str], str]:
    """``(update value, epilogue lines, accumulator init)`` with ``acc_ref`` for the accumulator.

    In the scalar form (passes/tile.py, *Scalar accumulator*) the accumulator stands for the
    scalar in the update, starts at its init, and ``X[i][j] = h(X[i][j], t, ...)`` is written once
    per output after the k loop (the epilogue).  Otherwise: the update as it is, no epilogue, and
    no init (the accumulator starts from ``X[i][j]``).
    """
    if plan.scalar is None:
        return plan.update.value, [], ""
    assert plan.epilogue is not None and plan.scalar.init is not None
    name = plan.scalar.name
    printer.lines = []
    printer.emit([ir.Assign(plan.output, ir.substitute(plan.epilogue.value, {name: acc_ref}))])
    return ir.substitute(plan.update.value, {name: acc_ref}), list(printer.lines), p(plan.scalar.init)


def tile_grid(config: dict[str, object], triangular: bool, bm: int, bn: int) -> list[str]:
    """The grid of a tiled launch (this module's and :mod:`transpile.cuda.mma`'s): ``bm x bn`` tiles.

    ``config``: the plain launch configuration, whose trip counts follow the chain order,
    row (y) then column (x).  A triangular launch has only the row loop's trip count; its
    column span is at most about as wide for the shapes seen (syrk: j < i + 1), and the
    kernel's grid-stride loop over column tiles covers the rest whatever the grid, so this
    only sizes the grid.
    """
    trips = [t["name"] for t in config["trips"]]  # type: ignore[attr-defined]
    assert len(trips) == (1 if triangular else 2), f"tiled launch with par loops {config!r}"
    ti, tj = trips[0], trips[-1]
    return [f"{cu.GRID_FN}({tj}, {bn}u, {cu.GRID_CAPS[0]}u)", f"{cu.GRID_FN}({ti}, {bm}u, {cu.GRID_CAPS[1]}u)", "1u"]
