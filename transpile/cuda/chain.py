"""CUDA for chain nests: the ``chain`` launch shape (``passes.reduce_gpu`` rule (e)).

The launch is one nest ``for r reduce(ops) { Z[r] = e; ...; for c reduce(ops) { X[r] op= f };
for c { Y[c] op= g } }`` (:func:`passes.reduce_gpu.chain_shape`: atax's ``tmp[i] = 0``, ``tmp[i]
+= A[i][j] * x[j]`` and ``y[j] += A[i][j] * tmp[i]``).  A row launch for ``X`` and a column launch
for ``Y`` would each stream the whole matrix from memory (atax at 12288^2: each at 67-70% of the
DRAM peak, so the pair at 37% of the copy bandwidth); here a block finishes row ``r``'s ``X`` and
adds the row's ``Y`` terms right after, so the second read of the row hits the cache:

* **Chain kernel.**  ``threads`` threads a block (:data:`passes.tile.DEFAULT_CHAIN`, 1024), one block a
  *band* of consecutive rows (``blockIdx.x``), the rows one after another.  Per row: thread 0 runs
  the ``Z[r] = e`` statements; every thread adds the terms of the columns ``t, t + threads, ...`` of
  each ``X`` statement into a register; the warps fold their lanes with ``__shfl_down_sync`` (a fixed
  tree), thread 0 folds the warps' totals in warp order and applies ``X[r] = X[r] op total``; a
  barrier; then every thread adds row ``r``'s term of each of its columns into its ``Y`` partials.
  A thread owns the same columns in every row, so the partials need no barrier: they live in dynamic
  shared memory (``c_n`` elements per ``Y`` statement).  At the end they go to ``Y_part[band][c]``.
* **Rows too wide for shared memory** (more than :data:`SMEM_MAX` bytes of partials): the chain
  kernel computes ``X`` alone, and a *column kernel* adds the ``Y`` terms: a thread a column, a block
  :data:`COL_THREADS` consecutive columns and a band of rows, its partial in a register, stored to
  ``Y_part[band][c]``.  The matrix is then read twice, as by a row and a column launch (keeping
  the partials in the scratch instead, read and written every row through L2, took 1.29 ms against
  0.75 for two launches on the H200 at 12288 x 12289; this form 0.715 ms: runs 37, 38).
* **Fold kernel.**  Thread ``t`` sums ``Y_part[0..bands)[t]`` in band order and applies
  ``Y[c] = Y[c] op total`` (the values ``Y`` held before are kept).

The host aims for as many bands as fit on the device at once (blocks per SM from
``cudaOccupancyMaxActiveBlocksPerMultiprocessor``: registers, threads and shared memory), at least
:data:`MIN_BAND` rows a band: a band's
partials cost ``c_n`` elements of scratch written and read once, against ``band x c_n`` elements of
the matrix read.  Every scratch element is written by one thread; results are deterministic (fixed
trees, fixed orders), with ``Y``'s sums reassociated over the rows as the ``reduce`` mark permits.

Measured on the H200, atax at 12288 x 12289 (bench/results/h200_run29-31.md): two launches 0.756 ms;
this kernel at 512 threads 0.613 ms, at 1024 threads (two blocks per SM: 32 registers, 2 x 98 KB of
partials) 0.514 ms, 56% of the copy bandwidth.  Tried and dropped: prefetching the next row into L2
(``prefetch.global.L2``, one per line; 0.78 ms at 1024 threads: the L2 then holds two rows a block),
one block per SM (0.597 ms), and a software pipeline that reads row ``r``'s ``X`` terms and row
``r - 1``'s ``Y`` terms in one loop (44 registers, one block per SM: 0.87 ms; 0.80 ms forced to two
blocks with spills).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
from transpile.cuda.reduce import WARP, _ReducePrinter
from transpile.ir import accum

if TYPE_CHECKING:
    from passes.reduce_gpu import Chain
    from passes.tile import Options
    from transpile.cuda.forms import Emitted, LaunchContext, LaunchPlan

FOLD_THREADS = 256
MIN_BAND = 8
"""Fewest rows a band (the band's partials are one row of scratch)."""
SMEM_MAX = 200 * 1024
"""Most dynamic shared memory a block takes for its ``Y`` partials (sm_90 allows 227 KiB a block);
the emitted code's ``TRANSPILE_CHAIN_SMEM_MAX``, which ``-D`` overrides."""
MAX_THREADS_PER_SM = 2048
COL_THREADS = 256
"""Threads (columns) a block of the column launch (partials too wide for shared memory)."""
COL_MIN_BAND = 32
"""Fewest rows a band of the column launch."""
SM_SMEM = 233472
"""Shared memory per SM on sm_90 (the host asks the device; this is the cost model's figure, which
leaves registers out)."""
BLOCK_RESERVE = 1024
"""Shared memory the runtime reserves per block on sm_90."""


def threads_of(tiling: Options | None) -> int:
    """Threads per block of a chain launch (``tile.Options.chain``)."""
    from passes.tile import DEFAULT_CHAIN

    return tiling.chain if tiling is not None else DEFAULT_CHAIN


def smem_bytes(chain: Chain, cols: int) -> int:
    """Dynamic shared memory of a block for ``cols`` columns: each ``Y`` statement's partials, each
    array starting at a multiple of 8 bytes."""
    total = 0
    for st in chain.cols.body:
        a = accum.accumulation(st)
        assert a is not None, st
        total += (cols * (a.target.ty.bits // 8) + 7) // 8 * 8
    return total


def grid(rows: int, cols: int, chain: Chain, threads: int, sms: int = 132) -> tuple[int, int, bool]:
    """``(bands, band, in_smem)`` of the chain launch for a ``rows x cols`` chain on ``sms`` SMs: what
    the emitted host code computes when registers do not limit the blocks per SM (it asks
    ``cudaOccupancyMaxActiveBlocksPerMultiprocessor``; this model of it, for the cost model and the
    tests, counts threads and shared memory).  Without ``in_smem`` the column launch and the fold use
    bands of their own (at least :data:`COL_MIN_BAND` rows)."""
    smem = smem_bytes(chain, cols)
    in_smem = smem <= SMEM_MAX
    per_sm = MAX_THREADS_PER_SM // threads
    if in_smem:
        per_sm = max(1, min(per_sm, SM_SMEM // (smem + _static_bytes(chain, threads) + BLOCK_RESERVE)))
    bands = max(1, min(per_sm * sms, (rows + MIN_BAND - 1) // MIN_BAND, GRID_CAPS[0]))
    band = (rows + bands - 1) // bands
    return (rows + band - 1) // band, band, in_smem


def _static_bytes(chain: Chain, threads: int) -> int:
    """The block's static shared memory: one slot per warp and ``X`` statement."""
    return sum(threads // WARP * (accum.accumulation(st).target.ty.bits // 8)  # type: ignore[union-attr]
               for st in chain.rows.body)


def launch(plan: LaunchPlan, ctx: LaunchContext) -> Emitted:
    """The chain kernel of ``plan.launch`` and the host step (scratch, the launches); the column and fold
    kernels are registered with the emitter (:data:`transpile.cuda.forms.Emit`)."""
    emitter, lp, name, namer = ctx.emitter, plan.launch, ctx.name, ctx.namer
    params, args, loads = ctx.params, ctx.args, ctx.loads
    (outer,) = lp.body
    assert isinstance(outer, ir.For), lp
    ch = plan.nest
    assert ch is not None and outer.reduce and ch.rows.reduce, f"not a chain launch: {outer!r}"
    assert not ctx.stores and not plan.host_locals, f"chain launch writes device scalars or sits in a host loop: {lp!r}"
    expr, hn = emitter.expr, emitter.host_namer
    parts = []  # (Y accumulation, op, scratch pointer name)
    for st, op in zip(ch.cols.body, outer.reduce):
        a = accum.accumulation(st)
        assert a is not None, ch
        ptr = emitter.namer.fresh(f"{a.name}_part")
        emitter.scratch.append((f"{ctype(a.target.ty)} *{ptr}", ptr))
        namer.taken.add(ptr)  # the launch's and the host function's namers were made before it
        emitter.host_namer.taken.add(ptr)
        parts.append((a, op, ptr))
    r_n, c_n, bands, band, smem, per_sm, fit = (hn.fresh(f"{outer.var}_n"), hn.fresh(f"{ch.cols.var}_n"),
                                                hn.fresh("bands"), hn.fresh("band"), hn.fresh("smem"),
                                                hn.fresh("per_sm"), hn.fresh("fit"))
    dev = {x: namer.fresh(x) for x in ("r_n", "c_n", "band", "bands", "in_smem")}
    out = [KernelParam(ctype(a.target.ty), p, pointer=True, restrict=True) for a, _o, p in parts]
    sizes = [KernelParam(INDEX_TYPE, dev[x]) for x in ("r_n", "c_n", "band")]
    kparams = params + out + sizes + [KernelParam("int", dev["in_smem"])]
    fparams = params + [KernelParam(ctype(a.target.ty), p, pointer=True, const=True, restrict=True)
                        for a, _o, p in parts] + [KernelParam(INDEX_TYPE, dev["c_n"]), KernelParam(INDEX_TYPE, dev["bands"])]
    ptrs = [p for _a, _o, p in parts]

    threads = plan.shape
    assert isinstance(threads, int), plan
    body = _ChainPrinter(expr, namer, dev, threads)
    body.chain(ch, parts)
    kernel: dict[str, object] = {"name": name, "params": kparams, "body": body.shared + loads + body.lines,
                                 "qualifiers": f"{GLOBAL} void {LAUNCH_BOUNDS}({threads})"}
    cols = _ChainPrinter(expr, namer.child(), dev, COL_THREADS)
    cols.columns(ch, parts)
    cols_name = emitter.namer.fresh(f"{name}_cols")
    cparams = params + out + sizes
    fold = _ChainPrinter(expr, namer.child(), dev, threads)
    fold.fold(ch, parts)
    fold_name = emitter.namer.fresh(f"{name}_fold")
    emitter.folds[name] = [{"name": cols_name, "params": cparams, "body": cols.shared + loads + cols.lines,
                            "qualifiers": f"{GLOBAL} void {LAUNCH_BOUNDS}({COL_THREADS})"},
                           {"name": fold_name, "params": fparams, "body": loads + fold.lines,
                            "qualifiers": f"{GLOBAL} void {LAUNCH_BOUNDS}({FOLD_THREADS})"}]

    # Host side: trip counts, the band choice, scratch, the chain launch, the column launch (rows too
    # wide for shared memory) and the fold.
    err, stream = emitter.names["err"], emitter.names["stream"]
    m = expr.mark

    def check(pad: str) -> list[str]:
        return break_on_error(err, pad)

    p4, p6, p8 = "    ", "      ", "        "
    sizes = []
    for a, _op, _p in parts:
        bytes_ = a.target.ty.bits // 8
        sizes.append(f"(((size_t){c_n} * {bytes_} + 7) / 8 * 8)")
    lines = ["#ifndef TRANSPILE_CHAIN_SMEM_MAX  // -D to move the partials to the scratch sooner (tests) or later",
             f"#define TRANSPILE_CHAIN_SMEM_MAX {SMEM_MAX}",
             "#endif",
             "#ifndef TRANSPILE_CHAIN_PER_SM  // -D to cap the blocks per SM",
             f"#define TRANSPILE_CHAIN_PER_SM {MAX_THREADS_PER_SM // threads}",
             "#endif",
             p4 + m("launch", f"const {INDEX_TYPE} {r_n} = {emitter.trip_count(outer)};"),
             p4 + m("launch", f"const {INDEX_TYPE} {c_n} = {emitter.trip_count(ch.cols)} > 0 ? "
                              f"{emitter.trip_count(ch.cols)} : 0;"),
             f"{p4}if ({m('guard', f'{r_n} > 0')}) {{",
             p6 + "// The Y partials in shared memory when they fit TRANSPILE_CHAIN_SMEM_MAX bytes; else this launch",
             p6 + "// computes X alone and a column launch the Y partials.",
             p6 + m("launch", f"const size_t {smem} = {' + '.join(sizes)};"),
             p6 + m("launch", f"const int {dev['in_smem']} = {smem} <= (size_t)TRANSPILE_CHAIN_SMEM_MAX;"),
             f"{p6}if ({dev['in_smem']}) {{",
             p8 + m("launch", f"{err} = cudaFuncSetAttribute({name}, cudaFuncAttributeMaxDynamicSharedMemorySize, "
                              f"(int){smem});"),
             *check(p8),
             f"{p6}}}",
             p6 + "// Bands of rows: the blocks that fit on the device at once (registers, shared memory),",
             p6 + f"// at least {MIN_BAND} rows a band.",
             p6 + f"int {fit} = 0;",
             p6 + m("launch", f"{err} = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&{fit}, {name}, {threads}, "
                              f"{dev['in_smem']} ? {smem} : 0);"),
             *check(p6),
             p6 + m("launch", f"const {INDEX_TYPE} {per_sm} = {fit} < 1 ? 1 : {fit} < TRANSPILE_CHAIN_PER_SM ? "
                              f"{fit} : TRANSPILE_CHAIN_PER_SM;"),
             p6 + m("launch", f"{INDEX_TYPE} {bands} = {per_sm} * transpile_sm_count();"),
             p6 + m("launch", f"if ({bands} > ({r_n} + {MIN_BAND - 1}) / {MIN_BAND}) "
                              f"{bands} = ({r_n} + {MIN_BAND - 1}) / {MIN_BAND};"),
             p6 + m("launch", f"if ({bands} > {GRID_CAPS[0]}LL) {bands} = {GRID_CAPS[0]}LL;"),
             p6 + m("launch", f"const {INDEX_TYPE} {band} = ({r_n} + {bands} - 1) / {bands};"),
             p6 + m("launch", f"{bands} = ({r_n} + {band} - 1) / {band};")]
    # Too wide for shared memory: this launch computes X alone, the column launch the Y partials
    # (a thread a column, bands of rows), in as many bands as fill the device.
    flag = dev["in_smem"]
    tiles, band2, nparts, cb = hn.fresh("tiles"), hn.fresh("col_band"), hn.fresh("parts"), hn.fresh("col_bands")
    lines += [p6 + m("launch", f"{INDEX_TYPE} {nparts} = {bands};  // partials a column: one a band"),
              p6 + f"{INDEX_TYPE} {tiles} = 0, {band2} = 1;",
              f"{p6}if ({m('guard', f'!{flag}')}) {{",
              p8 + m("launch", f"{tiles} = ({c_n} + {COL_THREADS - 1}) / {COL_THREADS};"),
              p8 + m("launch", f"{INDEX_TYPE} {cb} = {tiles} > 0 ? ({MAX_THREADS_PER_SM // COL_THREADS}LL * "
                               f"transpile_sm_count() + {tiles} - 1) / {tiles} : 1;"),
              p8 + m("launch", f"if ({cb} > ({r_n} + {COL_MIN_BAND - 1}) / {COL_MIN_BAND}) "
                               f"{cb} = ({r_n} + {COL_MIN_BAND - 1}) / {COL_MIN_BAND};"),
              p8 + m("launch", f"if ({cb} > {GRID_CAPS[1]}LL) {cb} = {GRID_CAPS[1]}LL;"),
              p8 + m("launch", f"{band2} = ({r_n} + {cb} - 1) / {cb};"),
              p8 + m("launch", f"{nparts} = ({r_n} + {band2} - 1) / {band2};"),
              f"{p6}}}"]
    for a, _op, ptr in parts:
        lines.append(p6 + m("transfer", f"{err} = transpile_scratch((void **)&{ptr}, (size_t){nparts} * "
                                        f"(size_t)({c_n} > 0 ? {c_n} : 1) * sizeof({ctype(a.target.ty)}), {stream});"))
        lines += check(p6)
    launch_chain = launch_call(name, f"(unsigned int){bands}, 1u, 1u", f"{threads}u, 1u, 1u", f"{flag} ? {smem} : 0",
                               stream, args + ptrs + [r_n, c_n, band, flag])
    launch_cols = launch_call(cols_name, f"(unsigned int){tiles}, (unsigned int){nparts}, 1u", f"{COL_THREADS}u, 1u, 1u",
                              "0", stream, args + ptrs + [r_n, c_n, band2])
    launch_fold = launch_call(fold_name, f"{GRID_FN}({c_n}, {FOLD_THREADS}u, {GRID_CAPS[0]}u), 1u, 1u",
                              f"{FOLD_THREADS}u, 1u, 1u", "0", stream, args + ptrs + [c_n, nparts])
    lines += checked_launch(launch_chain, err, p6)
    lines.append(f"{p6}if ({m('guard', f'{c_n} > 0')}) {{")
    lines.append(f"{p8}if ({m('guard', '!' + flag)}) {{")
    lines += checked_launch(launch_cols, err, p8 + "  ")
    lines.append(f"{p8}}}")
    lines += checked_launch(launch_fold, err, p8)
    lines.append(f"{p6}}}")
    lines.append(p4 + "}")
    step: dict[str, object] = {"kind": "sweep", "lines": lines, "shape": "chain",
                               "block": [f"{threads}u", "1u", "1u"], "kernel": name, "args": args}
    return kernel, step


class _ChainPrinter(_ReducePrinter):
    """Renders the bodies of the chain kernel and of its fold kernel."""

    def __init__(self, expr: ExprPrinter, namer: Namer, dev: dict[str, str], threads: int) -> None:
        super().__init__(expr, namer, threads)
        self.n = dev  # the size parameters' names: r_n, c_n, band, in_smem (chain), bands (fold)

    def chain(self, ch: Chain, parts: list[tuple[accum.Accumulation, str, str]]) -> None:
        """The chain kernel's body (see the module docstring)."""
        tid = self._tid()
        warps = self.threads // WARP
        lane, warp = self.namer.fresh("lane"), self.namer.fresh("warp")
        self.shared.append("  " + self.mark("index", f"const int {lane} = {tid.name} % {WARP};"))
        self.shared.append("  " + self.mark("index", f"const int {warp} = {tid.name} / {WARP};"))
        dyn = self.namer.fresh("chain_smem")
        self.shared.append("  " + self.mark("shared", f"extern {SMEM_PREFIX}double {dyn}[];"))
        xs = []
        for op, st in zip(ch.rows.reduce, ch.rows.body):
            a = accum.accumulation(st)
            assert a is not None, st
            buf = self.namer.fresh(f"{a.name}_warps")
            self.shared.append("  " + self.mark("shared", f"{SMEM_PREFIX}{ctype(a.target.ty)} {buf}[{warps}];"))
            xs.append((a, op, buf))
        lo, hi = self.namer.fresh("r_lo"), self.namer.fresh("r_hi")
        band, r_n, c_n = self.n["band"], self.n["r_n"], self.n["c_n"]
        self.line(self.mark("index", f"const {INDEX_TYPE} {lo} = ({INDEX_TYPE}){BLOCK_IDX}.x * {band};"))
        self.line(self.mark("index", f"const {INDEX_TYPE} {hi} = {lo} + {band} < {r_n} ? {lo} + {band} : {r_n};"))
        # Each Y statement's partials: its slice of shared memory (with in_smem; else this launch
        # computes X alone and the column launch adds the Y terms).
        ys = []
        offset = 0
        for a, op, ptr in parts:
            ty = ctype(a.target.ty)
            part = self.namer.fresh(f"{a.name}_cols")
            smem = f"({ty} *)((char *){dyn} + {offset})" if offset else f"({ty} *){dyn}"
            self.line(self.mark("shared", f"{ty} *const {part} = {smem};"))
            offset_expr = f"(({c_n} * {a.target.ty.bits // 8} + 7) / 8 * 8)"
            offset = f"{offset} + {offset_expr}" if offset else offset_expr
            ys.append((a, op, ptr, part))
        ct = self.namer.fresh("ct")
        self.line(f"if ({self.n['in_smem']}) {{")
        self.line("  " + self._strided(INDEX_TYPE, ct, f"({INDEX_TYPE}){tid.name}", c_n, str(self.threads)))
        for a, op, _ptr, part in ys:
            self.line("    " + self.mark("reduce", f"{part}[{ct}] = {literal(accum.identity(op, a.target.ty), a.target.ty)[0]};"))
        self.line("  }")
        self.line("}")
        rt = self.namer.fresh("rt")
        self.line(self._strided(INDEX_TYPE, rt, lo, hi, "1"))
        self.depth += 1
        self._var(ch.outer, rt)
        if ch.pre:
            self.line(f"if ({tid.name} == 0) {{")
            self.block(ch.pre)
            self.line("}")
        # The row's X: strided partials, a shuffle tree per warp, the warps' totals in warp order.
        parts_x = self._declare_partials(ch.rows)
        self.line("#pragma unroll 4")
        self._strided_partials(ch.rows, parts_x, tid.name, str(self.threads))
        self._fold_warps(parts_x, [buf for _a, _op, buf in xs], tid.name, lane, warp)
        self.line(self.mark("barrier", BARRIER))  # the row's X (and Z) are final and visible to every thread
        # The row's Y terms, into the partials of the thread's own columns.
        cols = ch.cols
        counter = self.namer.fresh(f"{cols.var}_t")
        self.line(f"if ({self.n['in_smem']}) {{")
        self.line("#pragma unroll 4")
        self.line(self._strided(INDEX_TYPE, counter, f"({INDEX_TYPE}){tid.name}", c_n, str(self.threads)))
        self.depth += 1
        self._var(cols, counter)
        with self.region("reduce"):
            for a, op, _ptr, part in ys:
                elem = ir.Var(f"{part}[{counter}]", a.target.ty)  # printed verbatim
                self.visit(ir.Assign(elem, accum.combine(a, op, elem, a.term)))
        self.depth -= 1
        self.line("}")
        self.line("}")
        self.depth -= 1
        self.line("}")
        # The band's partials out of shared memory.
        self.line(f"if ({self.n['in_smem']}) {{")
        self.depth += 1
        self.line(self._strided(INDEX_TYPE, ct, f"({INDEX_TYPE}){tid.name}", c_n, str(self.threads)))
        for _a, _op, ptr, part in ys:
            at = self.mark("index", f"({INDEX_TYPE}){BLOCK_IDX}.x * {c_n} + {ct}")
            self.line("  " + self.mark("reduce", f"{ptr}[{at}] = {part}[{ct}];"))
        self.line("}")
        self.depth -= 1
        self.line("}")

    def columns(self, ch: Chain, parts: list[tuple[accum.Accumulation, str, str]]) -> None:
        """The column kernel's body (partials too wide for shared memory; ``X`` is final): a block of
        ``COL_THREADS`` threads over as many consecutive columns (``blockIdx.x``) and a band of rows
        (``blockIdx.y``), each thread one column, its ``Y`` terms in registers in row order, stored
        to ``Y_part[band][c]``."""
        tid = self._tid()
        c_n, r_n, band = self.n["c_n"], self.n["r_n"], self.n["band"]
        ct, lo, hi = self.namer.fresh("ct"), self.namer.fresh("r_lo"), self.namer.fresh("r_hi")
        self.line(self.mark("index", f"const {INDEX_TYPE} {ct} = ({INDEX_TYPE}){BLOCK_IDX}.x * {COL_THREADS} + {tid.name};"))
        self.line(self.mark("index", f"const {INDEX_TYPE} {lo} = ({INDEX_TYPE}){BLOCK_IDX}.y * {band};"))
        self.line(self.mark("index", f"const {INDEX_TYPE} {hi} = {lo} + {band} < {r_n} ? {lo} + {band} : {r_n};"))
        self.line(f"if ({self.mark('guard', f'{ct} < {c_n}')}) {{")
        self.depth += 1
        self._var(ch.cols, ct)
        accs = []
        for a, op, _ptr in parts:
            acc = ir.Var(self.namer.fresh(f"{a.name}_acc"), a.target.ty)
            self.line(self.mark("reduce", f"{ctype(acc.ty)} {acc.name} = {literal(accum.identity(op, acc.ty), acc.ty)[0]};"))
            accs.append(acc)
        rt = self.namer.fresh("rt")
        self.line("#pragma unroll 4")
        self.line(self._strided(INDEX_TYPE, rt, lo, hi, "1"))
        self.depth += 1
        self._var(ch.outer, rt)
        with self.region("reduce"):
            for (a, op, _ptr), acc in zip(parts, accs):
                self.visit(ir.Assign(acc, accum.combine(a, op, acc, a.term)))
        self.depth -= 1
        self.line("}")
        for (_a, _op, ptr), acc in zip(parts, accs):
            at = self.mark("index", f"({INDEX_TYPE}){BLOCK_IDX}.y * {c_n} + {ct}")
            self.line(self.mark("reduce", f"{ptr}[{at}] = {acc.name};"))
        self.depth -= 1
        self.line("}")

    def fold(self, ch: Chain, parts: list[tuple[accum.Accumulation, str, str]]) -> None:
        """The fold kernel's body: each column's band partials in band order, applied to ``Y[c]``."""
        t = self.namer.fresh("t")
        c_n, bands = self.n["c_n"], self.n["bands"]
        self.line(self._strided(INDEX_TYPE, t, f"({INDEX_TYPE}){BLOCK_IDX}.x * {FOLD_THREADS} + {THREAD_IDX}.x",
                                c_n, f"({INDEX_TYPE}){GRID_DIM}.x * {FOLD_THREADS}"))
        self.depth += 1
        self._var(ch.cols, t)
        self._fold_parts(parts, t, c_n, bands)  # in band order
        self.depth -= 1
        self.line("}")
