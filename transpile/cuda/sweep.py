"""CUDA for sweep nests: the ``sweep`` launch shape (``passes.reduce_gpu`` rule (d)).

The launch is one nest ``for r reduce(ops) { for c { X[r] op= f; Y[c] op= g; ... } }``
(:func:`passes.reduce_gpu.sweep_shape`: bicg's ``s`` and ``q``, mvt's ``x1`` and
``x2``; maps ``M[r][c] = e`` may sit among them: gemver's update of ``A`` with ``x``).  A row launch and a column launch would each stream the whole
matrix; this shape reads every element once, coalesced along ``c``, and
produces both reductions, deterministically (no atomics):

* **Sweep kernel.**  A block of ``32 x warps`` (32 x 8) threads owns a
  *tile* of ``32 x vec`` (128) consecutive columns (``blockIdx.x``) and a *band*
  of rows (``blockIdx.y``).  Lane ``l`` takes the columns ``l, l + 32, l +
  64, l + 96`` of the tile (``vec`` independent coalesced loads per row: a
  warp reads 32 consecutive elements per load); warp ``w`` takes rows ``w, w
  + 8, ...`` of the band.  Per row, a thread adds its ``vec`` terms of each
  ``X[r]`` statement into a register, the warp folds the 32 lanes with
  ``__shfl_down_sync`` (a fixed tree) and lane 0 stores the tile's partial
  in ``X_part[tile][r]``.  A map runs at its point in program order.  The ``Y[c]`` terms stay in ``vec`` registers per
  thread for the whole band; at the end the 8 warps' partials of each column
  meet in shared memory, are folded in warp order and stored in
  ``Y_part[band][c]``.  Every scratch element is written by exactly one thread.
* **Fold kernel.**  Thread ``t`` sums ``X_part[0..tiles)[t]`` in tile order
  and applies ``X[r] = X[r] op total`` (so the values ``X`` held before are
  kept, as in the ``rows`` and ``cols`` shapes), and likewise
  ``Y_part[0..bands)[t]`` into ``Y[c]``.

Scratch: ``tiles x R`` elements per ``X`` statement and ``bands x C`` per
``Y`` statement, from the module's scratch pool (``transpile_scratch``: a pool
that keeps freed memory, so a call does not map memory again) on the stream,
freed at the end of ``NAME_device``.  The host picks ``bands`` at run time:
about ``per_sm`` blocks per SM (``transpile_sm_count()`` asked once per
process), at least ``8 x warps`` rows a band, at most 65535 bands.

The shape is ``tile.Options.sweep`` (``--sweep VxWxUxS``, a knob of
``--evolve``; :class:`Shape`): ``vec`` columns per lane (the tile is ``32 x
vec`` columns), ``warps`` per block, ``unroll`` rows a warp loads before it
folds their row partials, ``per_sm`` blocks per SM; the figures above are for
4 x 8 x 1 x 16, the first default; the default is now 4 x 16 x 2 x 8
(``tile.DEFAULT_SWEEP``; 512 threads, two rows per warp step).  When the column
statements' partials would overflow a block's static shared memory, the warps
(then the columns per lane) are halved (:meth:`Shape.fitted`).  A block whose tile lies inside the columns runs its
rows without column guards (and ``unroll`` rows at a time while they all lie in
the band); the others run one guarded row at a time.  Both versions add each
row's terms in the same order.  With the default shape and one statement of
each kind, at 2000 x 2000 that is 16 tiles x 32 bands of 63 rows (512 blocks;
scratch 96000 elements, 2.4% of the matrix); at 12288 x 12288, 96 tiles x 22
bands of 559 rows (2112 blocks; scratch 1449984 elements, 0.96%).  The partials
change the rounding order as ``rows``/``cols`` do; the reduce mark permits it.

Measured on the H200 (bench/results/h200_run18a.md, code of this commit): the
scratch pool took bicg at EXTRALARGE from 0.183 ms (scratch from the default
pool) to 0.044 ms, mvt from 0.146 to 0.069 ms, gemver from 0.290 to 0.155 ms;
at 12288^2, mvt reaches 87.6% of the copy bandwidth, gemver 87.1%, bicg 66.1%
(its rows of 12289 elements start off the 128-byte lines).  The shape
4 x 16 x 2 x 8 then measured, against 4 x 8 x 1 x 16 in the same process
(h200_run18b.md): bicg 1.18x at 12288^2 and 1.05x at EXTRALARGE, mvt 0.99x and
1.02x, gemver 1.04x and 1.05x.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from passes.tile import DEFAULT_SWEEP, SHARED_LIMIT, Options
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
    ExprPrinter,
    KernelParam,
    Namer,
    break_on_error,
    checked_launch,
    ctype,
    launch_call,
    literal,
)
from transpile.cuda.reduce import FULL_MASK, SHFL_DOWN, WARP, _ReducePrinter, combine_shuffled
from transpile.ir import accum

if TYPE_CHECKING:
    from transpile.cuda.forms import Emitted, LaunchContext, LaunchPlan

LANES = WARP
"""Threads along the columns of a block (one warp)."""
FOLD_THREADS = 256
MAX_BANDS = GRID_CAPS[1]


@dataclass(frozen=True)
class Shape:
    """The sweep's knobs (``tile.Options.sweep``): ``vec`` columns per lane, ``warps`` per block,
    ``unroll`` rows a warp loads before it folds their row partials (more loads in flight), and
    ``per_sm`` blocks the host aims for per SM."""

    vec: int = DEFAULT_SWEEP[0]
    warps: int = DEFAULT_SWEEP[1]
    unroll: int = DEFAULT_SWEEP[2]
    per_sm: int = DEFAULT_SWEEP[3]

    @staticmethod
    def of(tiling: Options | None) -> Shape:
        return Shape(*(tiling.sweep if tiling is not None else DEFAULT_SWEEP))

    @property
    def tile(self) -> int:
        """Columns per block."""
        return LANES * self.vec

    @property
    def threads(self) -> int:
        return LANES * self.warps

    def fitted(self, col_bytes: int) -> Shape:
        """This shape with its warps halved (then its columns per lane) until the column partials,
        ``col_bytes`` per (warp, column) slot over all ``Y`` statements, fit the static shared
        memory of a block."""
        shape = self
        while shape.warps * shape.tile * col_bytes > SHARED_LIMIT and (shape.warps > 1 or shape.vec > 1):
            shape = (dataclasses.replace(shape, warps=shape.warps // 2) if shape.warps > 1
                     else dataclasses.replace(shape, vec=shape.vec // 2))
        return shape

    @property
    def min_band(self) -> int:
        """Fewest rows per band (8 per warp)."""
        return 8 * self.warps


def shape_for(tiling: Options | None, sw: object) -> Shape:
    """The shape a sweep nest ``sw`` (:class:`passes.reduce_gpu.Sweep`) is emitted with: the
    options' shape, :meth:`Shape.fitted` to its column statements."""
    col_bytes = 0
    for st, along in zip(sw.inner.body, sw.along):  # type: ignore[attr-defined]
        if along == "c":
            a = accum.accumulation(st)
            assert a is not None, st
            col_bytes += a.target.ty.bits // 8
    return Shape.of(tiling).fitted(col_bytes)


def grid(rows: int, cols: int, sms: int = 132, shape: Shape = Shape()) -> tuple[int, int, int]:
    """``(tiles, bands, band)`` for a ``rows x cols`` sweep on ``sms`` SMs: what the emitted host
    code computes."""
    tiles = (cols + shape.tile - 1) // shape.tile
    bands = min((shape.per_sm * sms + tiles - 1) // tiles, (rows + shape.min_band - 1) // shape.min_band, MAX_BANDS)
    band = (rows + bands - 1) // bands
    return tiles, (rows + band - 1) // band, band


def launch(plan: LaunchPlan, ctx: LaunchContext) -> Emitted:
    """The sweep kernel of ``plan.launch`` and the host step (scratch, both launches); the fold kernel
    is registered with the emitter (:data:`transpile.cuda.forms.Emit`)."""
    emitter, lp, name, namer = ctx.emitter, plan.launch, ctx.name, ctx.namer
    params, args, loads = ctx.params, ctx.args, ctx.loads
    (outer,) = lp.body
    assert isinstance(outer, ir.For), lp
    sw = plan.nest
    assert sw is not None and outer.reduce, f"not a sweep launch: {outer!r}"
    assert not ctx.stores and not plan.host_locals, f"sweep launch writes device scalars or sits in a host loop: {lp!r}"
    expr, hn = emitter.expr, emitter.host_namer
    parts = []  # (accumulation, op, along, scratch pointer name), in program order
    ops = iter(outer.reduce)  # one per accumulation (maps have none)
    for st, along in zip(sw.inner.body, sw.along):
        if along == "map":
            continue
        a, op = accum.accumulation(st), next(ops)
        assert a is not None, sw
        ptr = emitter.namer.fresh(f"{a.name}_part")
        emitter.scratch.append((f"{ctype(a.target.ty)} *{ptr}", ptr))
        namer.taken.add(ptr)  # the launch's and the host function's namers were made before it
        emitter.host_namer.taken.add(ptr)
        parts.append((a, op, along, ptr))
    r_n, c_n, tiles, bands, band = (hn.fresh(f"{outer.var}_n"), hn.fresh(f"{sw.inner.var}_n"),
                                    hn.fresh("tiles"), hn.fresh("bands"), hn.fresh("band"))
    # The kernels' own size parameters (fresh: a kernel may use these names itself).
    dev = {x: namer.fresh(x) for x in ("r_n", "c_n", "band", "tiles", "bands")}
    sizes = [KernelParam(INDEX_TYPE, dev["r_n"]), KernelParam(INDEX_TYPE, dev["c_n"])]
    kparams = params + [KernelParam(ctype(a.target.ty), p, pointer=True, restrict=True)
                        for a, _o, _w, p in parts] + sizes + [KernelParam(INDEX_TYPE, dev["band"])]
    fparams = params + [KernelParam(ctype(a.target.ty), p, pointer=True, const=True, restrict=True)
                        for a, _o, _w, p in parts] + sizes + [KernelParam(INDEX_TYPE, dev["tiles"]),
                                                              KernelParam(INDEX_TYPE, dev["bands"])]
    ptrs = [p for _a, _o, _w, p in parts]

    shape = plan.shape
    assert isinstance(shape, Shape), plan
    sweep = _SweepPrinter(expr, namer, dev, shape)
    sweep.sweep(sw, parts)
    kernel: dict[str, object] = {"name": name, "params": kparams, "body": sweep.shared + loads + sweep.lines,
              "qualifiers": f"{GLOBAL} void {LAUNCH_BOUNDS}({shape.threads})"}
    fold = _SweepPrinter(expr, namer.child(), dev, shape)
    fold.fold(sw, parts)
    fold_name = emitter.namer.fresh(f"{name}_fold")
    emitter.folds[name] = [{"name": fold_name, "params": fparams, "body": loads + fold.lines,
                            "qualifiers": f"{GLOBAL} void {LAUNCH_BOUNDS}({FOLD_THREADS})"}]

    # Host side: trip counts, the band choice, scratch, the two launches.
    err, stream = emitter.names["err"], emitter.names["stream"]
    m = expr.mark

    def check(pad: str) -> list[str]:
        return break_on_error(err, pad)

    p4, p6 = "    ", "      "
    tile_, min_band = shape.tile, shape.min_band
    lines = [p4 + m("launch", f"const {INDEX_TYPE} {r_n} = {emitter.trip_count(outer)};"),
             p4 + m("launch", f"const {INDEX_TYPE} {c_n} = {emitter.trip_count(sw.inner)};"),
             f"{p4}if ({m('guard', f'{r_n} > 0 && {c_n} > 0')}) {{",
             p6 + m("launch", f"const {INDEX_TYPE} {tiles} = ({c_n} + {tile_ - 1}) / {tile_};"),
             p6 + f"// Bands of rows: about {shape.per_sm} blocks per SM, at least {min_band} rows a band.",
             p6 + m("launch", f"{INDEX_TYPE} {bands} = ({shape.per_sm}LL * transpile_sm_count() + {tiles} - 1) / {tiles};"),
             p6 + m("launch", f"if ({bands} > ({r_n} + {min_band - 1}) / {min_band}) "
                              f"{bands} = ({r_n} + {min_band - 1}) / {min_band};"),
             p6 + m("launch", f"if ({bands} > {MAX_BANDS}) {bands} = {MAX_BANDS};"),
             p6 + m("launch", f"const {INDEX_TYPE} {band} = ({r_n} + {bands} - 1) / {bands};"),
             p6 + m("launch", f"{bands} = ({r_n} + {band} - 1) / {band};")]
    for a, _op, along, ptr in parts:
        count = f"(size_t){tiles} * (size_t){r_n}" if along == "r" else f"(size_t){bands} * (size_t){c_n}"
        lines.append(p6 + m("transfer", f"{err} = transpile_scratch((void **)&{ptr}, {count} * "
                                        f"sizeof({ctype(a.target.ty)}), {stream});"))
        lines += check(p6)
    most = f"{r_n} > {c_n} ? {r_n} : {c_n}"
    lines += checked_launch(launch_call(name, f"(unsigned int){tiles}, (unsigned int){bands}, 1u",
                                        f"{LANES}u, {shape.warps}u, 1u", "0", stream, args + ptrs + [r_n, c_n, band]),
                            err, p6)
    lines += checked_launch(launch_call(fold_name, f"{GRID_FN}({most}, {FOLD_THREADS}u, {GRID_CAPS[0]}u), 1u, 1u",
                                        f"{FOLD_THREADS}u, 1u, 1u", "0", stream, args + ptrs + [r_n, c_n, tiles, bands]),
                            err, p6)
    lines.append(p4 + "}")
    step: dict[str, object] = {"kind": "sweep", "lines": lines, "shape": "sweep",
                               "block": [f"{LANES}u", f"{shape.warps}u", "1u"], "kernel": name, "args": args}
    return kernel, step


class _SweepPrinter(_ReducePrinter):
    """Renders the bodies of the sweep kernel and of its fold kernel."""

    def __init__(self, expr: ExprPrinter, namer: Namer, dev: dict[str, str], shape: Shape) -> None:
        super().__init__(expr, namer, shape.threads)
        self.n = dev  # the size parameters' names: r_n, c_n, band (sweep), tiles, bands (fold)
        self.shape = shape

    def sweep(self, sw: object, parts: list[tuple[accum.Accumulation, str, str, str]]) -> None:
        """The sweep kernel's body.  A warp steps through its rows ``unroll`` at a time.  When the
        block's tile lies wholly inside the columns and all ``unroll`` rows inside the band, the rows
        run unguarded (``unroll x vec`` independent loads per lane before the first use of one);
        otherwise each row runs alone, its columns guarded.  Either way every row's terms are added
        in the same order, so the two versions give the same bits."""
        from passes.reduce_gpu import Sweep

        assert isinstance(sw, Sweep)
        sh = self.shape
        lane, warp = self.namer.fresh("lane"), self.namer.fresh("warp")
        self.shared.append("  " + self.mark("index", f"const int {lane} = (int){THREAD_IDX}.x;"))
        self.shared.append("  " + self.mark("index", f"const int {warp} = (int){THREAD_IDX}.y;"))
        cols = {}
        for a, _op, along, _p in parts:
            if along == "c":
                buf = self.namer.fresh(f"{a.name}_cols")
                self.shared.append("  " + self.mark("shared", f"{SMEM_PREFIX}{ctype(a.target.ty)} {buf}[{sh.warps * sh.tile}];"))
                cols[a.name] = buf
        base, lo, hi = self.namer.fresh("c_base"), self.namer.fresh("r_lo"), self.namer.fresh("r_hi")
        full = self.namer.fresh("full")
        self.line(self.mark("index", f"const {INDEX_TYPE} {base} = ({INDEX_TYPE}){BLOCK_IDX}.x * {sh.tile};"))
        self.line(self.mark("index", f"const {INDEX_TYPE} {lo} = ({INDEX_TYPE}){BLOCK_IDX}.y * {self.n['band']};"))
        self.line(self.mark("index", f"const {INDEX_TYPE} {hi} = {lo} + {self.n['band']} < {self.n['r_n']} ? {lo} + {self.n['band']} : {self.n['r_n']};"))
        self.line(self.mark("index", f"const bool {full} = {base} + {sh.tile} <= {self.n['c_n']};") + "  // no column guards")
        ycols: dict[str, list[ir.Var]] = {}
        for a, op, along, _p in parts:
            if along == "c":
                ty = a.target.ty
                ycols[a.name] = [ir.Var(self.namer.fresh(f"{a.name}_part"), ty) for _ in range(sh.vec)]
                for v in ycols[a.name]:
                    self.line(self.mark("reduce", f"{ctype(ty)} {v.name} = {literal(accum.identity(op, ty), ty)[0]};"))
        rt = self.namer.fresh("rt")
        self.line(self._strided(INDEX_TYPE, rt, f"{lo} + {warp}", hi, str(sh.warps * sh.unroll)))
        self.depth += 1
        rows = [rt] + [f"{rt} + {u * sh.warps}" for u in range(1, sh.unroll)]
        fast = full if sh.unroll == 1 else f"{full} && {rows[-1]} < {hi}"
        self.line(f"if ({self.mark('guard', fast)}) {{")
        self.depth += 1
        self._rows(sw, parts, ycols, lane, base, rows, guarded=False)
        self.depth -= 1
        self.line("} else {")
        self.depth += 1
        for u, r in enumerate(rows):
            if u:
                self.line(f"if ({self.mark('guard', f'{r} < {hi}')}) {{")
                self.depth += 1
            self._rows(sw, parts, ycols, lane, base, [r], guarded=True)
            if u:
                self.depth -= 1
                self.line("}")
        self.depth -= 1
        self.line("}")
        self.depth -= 1
        self.line("}")
        if ycols:
            self._cols_out(parts, ycols, cols, lane, warp, base)

    def _rows(self, sw: object, parts: list[tuple[accum.Accumulation, str, str, str]],
              ycols: dict[str, list[ir.Var]], lane: str, base: str, rows: list[str], guarded: bool) -> None:
        """The tile's points of ``rows`` (row counters): each row in a scope of its own, its ``vec``
        columns in program order; then the rows' ``X`` partials folded and stored."""
        from passes.reduce_gpu import Sweep

        assert isinstance(sw, Sweep)
        xs: list[dict[str, ir.Var]] = []
        by_stmt = {id(a.stmt): (a, op, along) for a, op, along, _p in parts}
        for r in rows:
            x: dict[str, ir.Var] = {}
            for a, op, along, _p in parts:
                if along == "r":
                    ty = a.target.ty
                    x[a.name] = ir.Var(self.namer.fresh(f"{a.name}_part"), ty)
                    self.line(self.mark("reduce", f"{ctype(ty)} {x[a.name].name} = {literal(accum.identity(op, ty), ty)[0]};"))
            xs.append(x)
            self.line("{")
            self.depth += 1
            self._var(sw.outer, r)
            for k in range(self.shape.vec):  # vec independent loads per row, each coalesced over the warp
                ct = self.namer.fresh("ct")
                self.line("{")
                self.depth += 1
                self.line(self.mark("index", f"const {INDEX_TYPE} {ct} = {self._col(base, lane, k)};"))
                if guarded:
                    test = self.mark("guard", f"{ct} < {self.n['c_n']}")
                    self.line(f"if ({test}) {{")
                    self.depth += 1
                self._var(sw.inner, ct)
                for st in sw.inner.body:  # the point's statements in program order
                    if id(st) not in by_stmt:
                        self.visit(st)  # a map M[r][c] = e
                        continue
                    a, op, along = by_stmt[id(st)]
                    p = x[a.name] if along == "r" else ycols[a.name][k]
                    with self.region("reduce"):
                        self.visit(ir.Assign(p, accum.combine(a, op, p, a.term)))
                if guarded:
                    self.depth -= 1
                    self.line("}")
                self.depth -= 1
                self.line("}")
            self.depth -= 1
            self.line("}")
        if any(xs):
            self._rows_out(parts, xs, lane, rows)

    def _col(self, base: str, lane: str, k: int) -> str:
        """Column counter of a lane's ``k``-th column of the tile starting at ``base``."""
        return f"{base} + {lane}" + (f" + {k * LANES}" if k else "")

    def _rows_out(self, parts: list[tuple[accum.Accumulation, str, str, str]], xs: list[dict[str, ir.Var]],
                  lane: str, rows: list[str]) -> None:
        """The rows' ``X`` partials: each folded over the warp's lanes (one shuffle tree, the rows'
        steps interleaved), stored by lane 0 for this tile."""
        off = self.namer.fresh("off")
        with self.region("reduce"):  # the warp's lanes: a fixed shuffle tree
            self.line(f"for (int {off} = {LANES // 2}; {off} > 0; {off} >>= 1) {{")
            self.depth += 1
            for x in xs:
                for a, op, along, _p in parts:
                    if along == "r":
                        p = x[a.name]
                        for st in combine_shuffled(a, op, p, ir.Call(SHFL_DOWN, (FULL_MASK, p, ir.Var(off, ir.I32)),
                                                                     p.ty), self.namer):
                            self.visit(st)
            self.depth -= 1
            self.line("}")
        self.line(f"if ({lane} == 0) {{")
        for x, r in zip(xs, rows):
            for a, _op, along, ptr in parts:
                if along == "r":
                    at = self.mark("index", f"({INDEX_TYPE}){BLOCK_IDX}.x * {self.n['r_n']} + {r}")
                    self.line("  " + self.mark("reduce", f"{ptr}[{at}] = {x[a.name].name};"))
        self.line("}")

    def _cols_out(self, parts: list[tuple[accum.Accumulation, str, str, str]], ycols: dict[str, list[ir.Var]],
                  cols: dict[str, str], lane: str, warp: str, base: str) -> None:
        """The band's ``Y`` partials: one per warp in shared memory, folded in warp order, stored."""
        sh = self.shape
        for a, _op, along, _p in parts:
            if along == "c":
                for k, v in enumerate(ycols[a.name]):
                    at = f"{warp} * {sh.tile} + {lane}" + (f" + {k * LANES}" if k else "")
                    self.line(self.mark("shared", f"{cols[a.name]}[{at}] = {v.name};"))
        self.line(self.mark("barrier", BARRIER))
        tid, ct = self.namer.fresh("tid"), self.namer.fresh("ct")
        # The block's threads over the tile's columns (more than one column each when vec > warps).
        self.line(self._strided("int", tid, f"{warp} * {LANES} + {lane}", str(sh.tile), str(sh.threads)))
        self.depth += 1
        self.line(self.mark("index", f"const {INDEX_TYPE} {ct} = {base} + {tid};"))
        test = self.mark("guard", f"{ct} < {self.n['c_n']}")
        self.line(f"if ({test}) {{")
        self.depth += 1
        w = ir.Var(self.namer.fresh("w"), ir.I32)
        for a, op, along, ptr in parts:
            if along != "c":
                continue
            total = ir.Var(self.namer.fresh(f"{a.name}_total"), a.target.ty)
            buf = cols[a.name]
            self.line(self.mark("reduce", f"{ctype(total.ty)} {total.name} = {buf}[{tid}];"))
            with self.region("reduce"):
                self.line(f"for (int {w.name} = 1; {w.name} < {sh.warps}; ++{w.name}) {{")
                slot = ir.Binary("+", ir.Binary("*", w, ir.Const(sh.tile, ir.I32), ir.I32), ir.Var(tid, ir.I32), ir.I32)
                elem = ir.Index(buf, (slot,), total.ty)
                self.line(f"  {total.name} = {self.expr(accum.combine(a, op, total, elem))};")
                self.line("}")
            at = self.mark("index", f"({INDEX_TYPE}){BLOCK_IDX}.y * {self.n['c_n']} + {ct}")
            self.line(self.mark("reduce", f"{ptr}[{at}] = {total.name};"))
        self.depth -= 1
        self.line("}")
        self.depth -= 1
        self.line("}")

    def fold(self, sw: object, parts: list[tuple[accum.Accumulation, str, str, str]]) -> None:
        from passes.reduce_gpu import Sweep

        assert isinstance(sw, Sweep)
        t = self.namer.fresh("t")
        self.line(self._strided(INDEX_TYPE, t, f"({INDEX_TYPE}){BLOCK_IDX}.x * {FOLD_THREADS} + {THREAD_IDX}.x",
                                f"({self.n['r_n']} > {self.n['c_n']} ? {self.n['r_n']} : {self.n['c_n']})", f"({INDEX_TYPE}){GRID_DIM}.x * {FOLD_THREADS}"))
        self.depth += 1
        for along, n, count, loop in (("r", self.n["r_n"], self.n["tiles"], sw.outer),
                                      ("c", self.n["c_n"], self.n["bands"], sw.inner)):
            if along not in sw.along:
                continue
            self.line(f"if ({self.mark('guard', f'{t} < {n}')}) {{")
            self.depth += 1
            self._var(loop, t)
            self._fold_parts([(a, op, ptr) for a, op, w, ptr in parts if w == along], t, n, count)  # tile (band) order
            self.depth -= 1
            self.line("}")
        self.depth -= 1
        self.line("}")
