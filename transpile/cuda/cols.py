"""CUDA for column reductions: the ``cols`` launch shape (``passes.reduce_gpu`` rule (c)).

The launch is one ``par(x)`` loop over columns whose body holds one ``reduce``
loop over rows reading a matrix down each column (atax ``for j par(x) { for i
reduce(+) { y[j] += A[i][j] * tmp[i]; } }``, :func:`passes.reduce_gpu.column_shape`).
One thread per column reads coalesced but leaves the GPU mostly idle (8192
columns are 32 blocks); here a block of ``COLS x ROWS`` (32 x 32) threads
takes 32 consecutive columns (``threadIdx.x``: a warp reads 32 consecutive
elements of a row) and splits each column's rows over ``threadIdx.y``
(thread ``y`` takes rows ``lo + y, lo + y + 32, ...``).  Each thread keeps its
partial in a register; the 32 partials of a column meet in shared memory and
thread ``y == 0`` folds them in the fixed order ``y = 0, 1, ..., 31`` and
applies the total (``x = x op total``): deterministic, reassociated as the
``reduce`` mark permits.  The par loop's other statements run on the
``y == 0`` thread of their column, those before the reduction followed by a
barrier (a term may read what they wrote).  Column tiles are a grid-stride
loop, so every thread of a block reaches every barrier.
"""

from __future__ import annotations

from passes.launch_forms import accumulations
from transpile import ir
from transpile.cuda.printer import (
    BARRIER,
    BLOCK_IDX,
    GLOBAL,
    GRID_CAPS,
    GRID_DIM,
    GRID_FN,
    INDEX_TYPE,
    LAUNCH_BOUNDS,
    SMEM_PREFIX,
    THREAD_IDX,
    UINDEX_TYPE,
    ExprPrinter,
    Namer,
    ctype,
)
from transpile.cuda.reduce import _ReducePrinter
from transpile.ir import accum

COLS, ROWS = 32, 32
"""Block shape: columns per block (one warp wide) x threads down each column."""


def launch(lp: ir.Launch, expr: ExprPrinter, namer: Namer, loads: list[str], stores: list[str],
           config: dict[str, object]) -> tuple[str, list[str], dict[str, object]]:
    """(qualifiers, body lines, host launch config) of ``cols`` launch ``lp``.

    ``config``: the host configuration of the launch's par chain (trip counts, guard).
    """
    from passes.reduce_gpu import column_shape

    (par,) = lp.body
    assert isinstance(par, ir.For) and par.par == "x", par
    loop = column_shape(par)
    assert loop is not None and loop.reduce, f"not a column reduction launch: {par!r}"
    printer = _ColsPrinter(expr, namer, COLS * ROWS)
    printer.cols(par, loop)
    body = printer.lines
    if stores:  # only thread (0, 0) holds the final value of a device scalar
        body = body + [f"  if ({THREAD_IDX}.x == 0 && {THREAD_IDX}.y == 0) {{", *("  " + s for s in stores), "  }"]
    config = dict(config)
    trips: list[dict[str, str]] = config["trips"]  # type: ignore[assignment]
    assert len(trips) == 1, f"cols launch with {len(trips)} par loops"
    config["grid"] = [f"{GRID_FN}({trips[0]['name']}, {COLS}u, {GRID_CAPS[0]}u)", "1u", "1u"]
    config["block"] = [f"{COLS}u", f"{ROWS}u", "1u"]
    config["shape"] = "cols"
    quals = f"{GLOBAL} void {LAUNCH_BOUNDS}({COLS * ROWS})"
    return quals, printer.shared + loads + body, config


class _ColsPrinter(_ReducePrinter):
    """Renders the body of a ``cols`` launch."""

    def cols(self, par: ir.For, loop: ir.For) -> None:
        x, y = self.namer.fresh("col"), self.namer.fresh("row")
        self.shared.append("  " + self.mark("index", f"const int {x} = (int){THREAD_IDX}.x;"))
        self.shared.append("  " + self.mark("index", f"const int {y} = (int){THREAD_IDX}.y;"))
        accs = list(zip(loop.reduce, accumulations(loop)))
        bufs = []
        for _op, a in accs:
            buf = self.namer.fresh(f"{a.name}_rows")
            self.shared.append("  " + self.mark("shared", f"{SMEM_PREFIX}{ctype(a.target.ty)} {buf}[{ROWS} * {COLS + 1}];"))
            bufs.append(buf)
        counter_t = UINDEX_TYPE if par.ty == ir.U64 else INDEX_TYPE
        v = self.expr.ident(par.var)
        lo = self.bound(par.lo, f"{par.var}_lo")
        hi = self.bound(par.hi, f"{par.var}_hi")
        base, t, trips = (self.namer.fresh(f"{par.var}_base"), self.namer.fresh(f"{par.var}_t"),
                          self.namer.fresh(f"{par.var}_trips"))
        zero = isinstance(par.lo, ir.Const) and par.lo.value == 0
        if zero:
            self.line(self.mark("index", f"const {counter_t} {trips} = {hi} > 0 ? ({counter_t}){hi} : 0;"))
        else:
            self.line(self.mark(
                "index", f"const {counter_t} {trips} = {hi} > {lo} ? ({counter_t}){hi} - ({counter_t}){lo} : 0;"))
        self.line(self._strided(counter_t, base, f"({counter_t}){BLOCK_IDX}.x * {COLS}", trips,
                                f"({counter_t}){GRID_DIM}.x * {COLS}"))
        self.depth += 1
        self.line(self.mark("index", f"const {counter_t} {t} = {base} + {x};"))
        active = self.namer.fresh("active")
        self.line(f"const bool {active} = {self.mark('guard', f'{t} < {trips}')};")
        value = t if zero else f"({counter_t}){lo} + {t}"
        i = par.body.index(loop)
        before, after = par.body[:i], par.body[i + 1:]
        if before:
            self.line(f"if ({self.mark('guard', active)} && {y} == 0) {{")
            self.line("  " + self.mark("index", f"const {ctype(par.ty)} {v} = ({ctype(par.ty)})({value});"))
            self.block(before)
            self.line("}")
            self.line(self.mark("barrier", BARRIER))  # terms may read what the column's thread 0 wrote
        parts = self._declare_partials(loop)  # outside the guard: inactive threads contribute the identity
        self.line(f"if ({self.mark('guard', active)}) {{")
        self.depth += 1
        self.line(self.mark("index", f"const {ctype(par.ty)} {v} = ({ctype(par.ty)})({value});"))
        self._strided_partials(loop, parts, y, str(ROWS))
        self.depth -= 1
        self.line("}")
        for buf, (_a, _op, p) in zip(bufs, parts):
            self.line(self.mark("shared", f"{buf}[{y} * {COLS + 1} + {x}] = {p.name};"))
        self.line(self.mark("barrier", BARRIER))
        self.line(f"if ({self.mark('guard', active)} && {y} == 0) {{")
        self.depth += 1
        self.line(self.mark("index", f"const {ctype(par.ty)} {v} = ({ctype(par.ty)})({value});"))
        r = ir.Var(self.namer.fresh("r"), ir.I32)
        totals = []
        for (op, a), buf in zip(accs, bufs):
            total = ir.Var(self.namer.fresh(f"{a.name}_total"), a.target.ty)
            self.line(self.mark("reduce", f"{ctype(total.ty)} {total.name} = {buf}[{x}];"))
            totals.append((op, a, total, buf))
        with self.region("reduce"):
            self.line(f"for (int {r.name} = 1; {r.name} < {ROWS}; ++{r.name}) {{")
            self.depth += 1
            for op, a, total, buf in totals:
                at = ir.Binary("+", ir.Binary("*", r, ir.Const(COLS + 1, ir.I32), ir.I32), ir.Var(x, ir.I32),
                               ir.I32)
                row = ir.Index(buf, (at,), total.ty)
                self.line(f"{total.name} = {self.expr(accum.combine(a, op, total, row))};")
            self.depth -= 1
            self.line("}")
        for _op, a, total, _buf in totals:
            with self.region("reduce"):
                self.visit(accum.apply(a, total))
        self.block(after)
        self.depth -= 1
        self.line("}")
        self.line(self.mark("barrier", BARRIER))  # the buffers are reused by the next column tile
        self.depth -= 1
        self.line("}")
