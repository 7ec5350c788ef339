"""Tiling analysis: a block/micro-tile plan for matmul-like launches (or None).

An analysis, not a transform: :func:`plan` looks at one mapped ``Launch`` and
returns a :class:`Plan` that :mod:`transpile.cuda.tiled` renders with
``templates/tiled_matmul.cu.j2``; ``None`` leaves the launch to the plain
one-thread-per-iteration emission of :mod:`transpile.cuda`.

**Precondition**: ``launch`` comes from ``passes.map_gpu`` (its ``par`` loops
carry no dependence).

**Shape recognised** (anything else: ``None``)::

    launch {
      for i in LO_I..HI_I par(y) {          # rectangular: bounds read no loop variable
        for j in LO_J..HI_J par(x) {
          X[i][j] = g(X[i][j], scalars);    # any number of these before and after the k loop
          for k in LO_K..HI_K {             # sequential, step 1, bounds read neither i nor j
            X[i][j] = f(X[i][j], R[..i..k..], Q[..k..j..], k, scalars);
          }
        }
      }
    }

``X`` is written only there and read only as ``X[i][j]``; ``g`` reads no
other array; ``i`` and ``j`` appear only in subscripts; every other array
read in ``f`` (an *operand*) is a floating-point array not
written by the launch whose subscripts use ``{i, k}`` (a *row* operand, e.g.
``A[i][k]``, ``A[k][i]``) or ``{j, k}`` (a *column* operand, ``B[k][j]``,
``A[j][k]``) and no array element; ``f`` has floating-point type and no
integer division.  Then every instance ``(i, j)`` touches only ``X[i][j]``
among written data: all instances are independent.

*Triangular form*: ``for i par(x) { for j in LO_J(i)..HI_J(i) { ... } }``
with ``LO_J``/``HI_J`` each ``invariant`` or ``i + invariant`` (the ``j``
loop need not have been proven parallel: the argument above proves it), plus
an optional last ``X[j][i] = X[i][j]`` (*mirror*, needs ``j >= i``) and
statements ``X[i][i] = e`` before the ``j`` loop (*diag*, need ``j >= i + 1``).
gemm, 2mm, 3mm, syrk, syr2k, covariance and correlation match; trmm and
symm match in the triangular-k form below (symm's first launch also in the
scalar form); doitgen's 3-D launch matches once :mod:`passes.collapse` merges its
two outer loops (at emission and in the cost model).

*Scalar accumulator* (rectangular form): the ``j`` body may instead be
``Decl t = init`` (``init`` reads no array and no loop variable), the ``k``
loop ``t = f(t, R, Q, k, scalars)`` (``f`` does not read ``X``), and one
statement ``X[i][j] = h(...)`` whose reads are ``X[i][j]``, ``t``, scalars
and elements of other arrays at subscripts over ``i``, ``j`` and invariants
(symm: ``C[i][j] = beta * C[i][j] + alpha * B[i][j] * A[i][i] + alpha * temp2``).
The accumulators start at ``init``; after the ``k`` loop each in-range output
evaluates ``h`` once, with ``t`` its accumulator: the same operations in the
same order.  The launch writes only ``X``, so the other arrays ``h`` reads
are unchanged by it.  On tensor cores (f64, a bilinear ``f``) the fragments start at
``init`` and ``h`` is evaluated from them at the store (:mod:`transpile.cuda.mma`).

*Triangular k*: in the rectangular form, ``LO_K``/``HI_K`` may each be
``invariant`` or ``i + invariant`` (trmm after :mod:`passes.snapshot`:
``for k in i + 1..m``).  Each micro-tile row then applies ``f`` only for the
``k`` of its own range (a guard per row and ``k``), in increasing order as
before; a block's ``k`` loop covers the union of its rows' ranges, one
interval (see :func:`_unit_affine`); a row operand element is loaded only
inside its own row's range (an element outside it need not exist), a column
operand's ``k`` lies in some row's range.  On tensor cores (a bilinear update,
:mod:`transpile.cuda.mma`) the ``k`` range common to all of a block's rows
goes through the pipelined MMAs; an MMA cannot skip a row's terms, and a zero
operand is not a skipped term (0 * inf is NaN), so each row's other terms go
through masked MMA steps only where the column factors they meet are finite,
else one by one, guarded to its own range (``mma_edge``; reassociation, like
every MMA sum).

**The plan.**  A block computes a ``bm x bn`` tile of the ``(i, j)`` space
with ``(bm/tm) x (bn/tn)`` threads; each thread owns a ``tm x tn`` micro-tile
(rows ``ty + m*(bm/tm)``, columns ``tx + n*(bn/tn)``: strided, so a warp's
stores and shared reads are contiguous) whose accumulators live in registers
(unrolled loops, compile-time indices).  With ``shared``, ``k`` advances in
steps of ``bk``: each operand's ``bk x bm`` (or ``bk x bn``) slice is loaded
into shared memory cooperatively (the contiguous global dimension along the
thread index, coalesced), then every thread reads its ``tm``/``tn`` values
into registers per ``k``.  Without ``shared`` (``--no-shared``) each thread
loads its operand values straight from global memory (plain coarsening).

**Exactness.**  Every output ``X[i][j]`` is computed by one thread as the same
sequence of the same expression ``f`` over the same ``k`` values, in the
original increasing order: no reassociation, no change of the
floating-point result (FMA contraction is nvcc's, as for the naive code).
Loads outside ``[LO_I, HI_I) x [LO_K, HI_K)`` (resp. ``j``) are never issued:
they fill zeros, which only reach outputs outside the iteration space, and
those are never stored; the per-``k`` loop stops at ``HI_K``, so a partial
last ``k`` tile adds nothing.

**Defaults** (a simple model for f64 on sm_90): ``bm = bn = 64``,
``tm = tn = 4`` (256 threads; 16 accumulators + 8 operands = 48 of the
registers, ~100 with addresses, so two blocks of 256 fit the 64K-register
file), ``bk = 16`` (two operands take 16 x 65 x 8 x 2 = 16.6 KB of shared
memory per block; two blocks per SM fit easily, and each thread does
``tm*tn*bk = 256`` FMAs per barrier pair).  ``bk`` halves until the operand
tiles fit the 48 KB of static shared memory.  Each operand tile row is
padded by one element against bank conflicts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from passes import accesses
from transpile import ir

#: Default output tile (rows x columns), micro-tile and ``k`` step.
DEFAULT_TILE = (64, 64)
DEFAULT_COARSEN = (4, 4)
DEFAULT_BK = 16
#: Threads per block (x, y, z) of a plain launch with 1, 2 and 3 ``par`` loops (``Options.blocks``).
DEFAULT_BLOCKS = ((256, 1, 1), (32, 8, 1), (32, 4, 2))
#: Static shared memory a block may use without an opt-in (bytes).
SHARED_LIMIT = 48 * 1024
MAX_THREADS = 1024
#: Default fp64 tensor-core (DMMA) tile: block rows, columns, ``k`` step, warp rows, columns,
#: shared buffers (1: register prefetch; >= 2: cp.async pipeline) (``transpile/cuda/mma.py``;
#: docs/tiling.md, "Tensor cores").
#: Measured on the H200 (gemm at EXTRALARGE, bench/results/h200_mma.md): 64x64x8, 4 warps, 4 buffers,
#: 3 blocks per SM reached 0.50 of cuBLAS; 128x64x8 with 3 buffers and 2 blocks per SM 0.40.
DEFAULT_MMA = (64, 64, 8, 32, 32, 4)
#: ... and for the triangular form (the same shape: half the tiles astride the diagonal).
DEFAULT_MMA_TRIANGULAR = DEFAULT_MMA
#: ... and when k's bounds read i (symm, trmm) with ``Options.mma_edge`` off: each row's terms outside
#: the block's common k range then go through the FMA pipes one by one, so fewer rows per block.
#: Measured on the H200 against the default (bench/results/h200_run21_mma.md, EXTRALARGE): symm
#: 1.40 -> 1.12 ms, trmm 0.610 -> 0.585 ms.  With the edge terms on the tensor cores (the default) the
#: default shape is the fastest measured (bench/results/h200_run25b.md: symm 0.835 ms against 0.910 for
#: 32x128x8x16x32x3 and 1.016 for this one; trmm 0.403 against 0.445).
DEFAULT_MMA_K_TRI = (32, 64, 8, 16, 32, 4)
#: The f64 ``mma.sync`` instructions, as (rows, k) of an ``m{rows}n8k{k}`` fragment product:
#: m8n8k4 (sm_80 and later) and the sm_90 shapes m16n8k4, m16n8k8 and m16n8k16.
MMA_INSTRUCTIONS = ((8, 4), (16, 4), (16, 8), (16, 16))
#: Default instruction.  Measured on the H200 (.gpu/dmma_shapes.cu, independent chains, 2026-12-04):
#: m8n8k4 peaks at 33 TFLOP/s, half the fp64 tensor rate; m16n8k4 reaches 52 (16 warps per SM)
#: to 66 (32 warps), m16n8k8 and m16n8k16 66 with 16 warps per SM.
DEFAULT_MMA_INST = (16, 8)


def mma_instruction(inst: tuple[int, int], wm: int, bk: int) -> tuple[int, int]:
    """The instruction (rows, k) a warp tile of ``wm`` rows and a ``k`` step of ``bk`` can use, from the
    requested ``inst``: 16 rows need ``wm % 16 == 0`` (else m8n8k4, the only 8-row f64 shape) and ``k``
    must divide ``bk`` (halved until it does, down to 4)."""
    rows, k = inst
    if wm % rows or rows == 8:
        return 8, 4
    while bk % k and k > 4:
        k //= 2
    return rows, k


#: Threads per block of chain launches (:mod:`transpile.cuda.chain`).  Measured on the H200, atax
#: at 12288x12289, same process (bench/results/h200_run30.md): 1024 threads 0.514 ms, 512 0.613,
#: 256 1.39; 1024 with one block per SM 0.597 (two fit: 32 registers, 2 x 98 KB of partials).
DEFAULT_CHAIN = 1024
#: Default sweep shape (:mod:`transpile.cuda.sweep`): columns per lane, warps per block, rows a
#: warp loads before it folds them, blocks the host aims for per SM.  Measured on the H200 against
#: 4x8x1x16 in the same process (bench/results/h200_run18b.md, 12288^2 and EXTRALARGE): bicg 1.18x
#: and 1.05x, mvt 0.99x and 1.02x, gemver 1.04x and 1.05x; no other of the 11 shapes timed was
#: ahead on all three.
DEFAULT_SWEEP = (4, 16, 2, 8)


@dataclass(frozen=True, slots=True)
class Options:
    """User overrides: ``tile`` = (bm, bn), ``coarsen`` = (tm, tn), ``shared`` staging on/off.

    ``enabled=False`` turns the tiled path off altogether.  ``mma``: fp64
    tensor cores for bilinear updates (None: auto, i.e. on with ``shared``;
    False: the exact-order FMA kernel, as ``--no-mma``/``--no-reassociate``
    need), with ``mma_shape`` = (block rows, columns, k step, warp rows, columns, buffers)
    (left at the default, triangular launches take ``DEFAULT_MMA_TRIANGULAR``).
    """

    tile: tuple[int, int] = DEFAULT_TILE
    coarsen: tuple[int, int] = DEFAULT_COARSEN
    shared: bool = True
    enabled: bool = True
    mma: bool | None = None
    mma_shape: tuple[int, int, int, int, int, int] = DEFAULT_MMA
    mma_inst: tuple[int, int] = DEFAULT_MMA_INST  # (rows, k) of the f64 mma.sync instruction
    mma_edge: bool = True  # triangular k: the rows' terms outside the common range on the tensor cores too
    blocks: tuple[tuple[int, int, int], ...] = DEFAULT_BLOCKS
    rows: int = 0  # plain launches: consecutive iterations of the y par loop per thread (0: launch_rows decides)
    stream: int = 0  # 3-D plain launches: iterations of the z par loop per thread, a serial loop (0: launch_stream)
    sweep: tuple[int, int, int, int] = DEFAULT_SWEEP  # sweep launches: (vec, warps, unroll, blocks per SM)
    chain: int = DEFAULT_CHAIN  # chain launches: threads per block
    steps: bool = True  # host loops of stencil launches: one fused kernel a step (transpile/cuda/steps.py)
    arch: int = 0  # the one target (10 * major + minor; --arch), or 0: every architecture (docs/architectures.md)
    reassociate: bool = True  # float sums in another order (off: --no-reassociate); the host path's sums too

    def problem(self) -> str | None:
        """Why these options are impossible (a message), or None when they are valid."""
        (bm, bn), (tm, tn) = self.tile, self.coarsen
        if min(bm, bn, tm, tn) < 1:
            return "tile and coarsening factors must be positive"
        if tm > 16 or tn > 16 or tm * tn > 64:
            return f"micro-tile {tm}x{tn} is too large (at most 16 per side and 64 outputs per thread)"
        if bm % tm or bn % tn:
            return f"tile {bm}x{bn} is not a multiple of the micro-tile {tm}x{tn}"
        threads = (bm // tm) * (bn // tn)
        if not 32 <= threads <= MAX_THREADS:
            return f"tile {bm}x{bn} with micro-tile {tm}x{tn} gives {threads} threads per block (need 32..1024)"
        if (bm + 1) * 8 > SHARED_LIMIT // 2 or (bn + 1) * 8 > SHARED_LIMIT // 2:
            return f"tile {bm}x{bn} is too large for shared memory"
        if not 0 <= self.rows <= 16:
            return f"rows per thread {self.rows} must be 1..16 (0: automatic)"
        if not 0 <= self.stream <= 64:
            return f"planes per thread {self.stream} must be 1..64 (0: automatic)"
        if len(self.blocks) != 3 or any(len(b) != 3 or min(b) < 1 for b in self.blocks):
            return f"block shapes {self.blocks} must be three positive (x, y, z) triples"
        for dims, b in enumerate(self.blocks, 1):
            if b[dims:] != (1,) * (3 - dims) or not 32 <= b[0] * b[1] * b[2] <= MAX_THREADS or b[2] > 64:
                return (f"block {'x'.join(map(str, b))} for {dims} parallel loop(s): needs 32..{MAX_THREADS} threads, "
                        f"z <= 64, and 1 in the dimensions beyond {dims}")
        vec, warps, unroll, per_sm = self.sweep
        if not (1 <= vec <= 8 and 1 <= warps <= MAX_THREADS // 32 and 1 <= unroll <= 8 and 1 <= per_sm <= 64) \
                or warps * 32 * vec * 8 > 16384:
            return (f"sweep shape {'x'.join(map(str, self.sweep))} needs 1..8 columns per lane, 1..32 warps, "
                    f"1..8 rows per step, 1..64 blocks per SM, and at most 16 KiB of column partials per block")
        if self.chain not in (128, 256, 512, 1024):
            return f"chain launches need 128, 256, 512 or 1024 threads per block, not {self.chain}"
        mbm, mbn, mbk, wm, wn, _ = self.mma_shape
        if min(self.mma_shape) < 1 or wm % 8 or wn % 8 or mbk % 4 or mbm % wm or mbn % wn \
                or not 1 <= (mbm // wm) * (mbn // wn) <= MAX_THREADS // 32 \
                or (mbm * mbk) % (mbm // wm * mbn // wn * 32) or (mbn * mbk) % (mbm // wm * mbn // wn * 32):
            return f"tensor-core shape {self.mma_shape} is not a grid of 8x8 warp fragments with even staging"
        if tuple(self.mma_inst) not in MMA_INSTRUCTIONS:
            return (f"tensor-core instruction m{self.mma_inst[0]}n8k{self.mma_inst[1]} is not one of "
                    + ", ".join(f"m{m}n8k{k}" for m, k in MMA_INSTRUCTIONS))
        return None


# Operand(index, side, k_last): an array read staged per block.  side 'row'
# (subscripts use i and k) or 'col' (j and k); k_last: the last subscript
# reads k, so consecutive k are contiguous in memory.
@dataclass(frozen=True, slots=True)
class Operand:
    """One staged operand reference."""

    index: ir.Index
    side: str
    k_last: bool


@dataclass(frozen=True, slots=True)
class Plan:
    """How to emit one matmul-like launch (see the module docstring)."""

    row: ir.For  # i, par(y)
    col: ir.For  # j, par(x)
    red: ir.For  # k, sequential
    update: ir.Assign  # X[i][j] = f(...)
    pre: tuple[ir.Assign, ...]  # X[i][j] = g(...) before the k loop
    post: tuple[ir.Assign, ...]  # ... and after it
    operands: tuple[Operand, ...]
    bm: int
    bn: int
    bk: int
    tm: int
    tn: int
    shared: bool
    triangular: bool  # j's bounds read i (j was sequential); else both loops are par and rectangular
    mirror: bool = False  # also store X[j][i] = X[i][j] at the end
    diag: tuple[ir.Assign, ...] = ()  # X[i][i] = e before the j loop (triangular, j >= i + 1)
    mma: tuple[int, int, int, int, int, int] | None = None  # tensor-core shape, if allowed (Options.mma)
    mma_inst: tuple[int, int] = DEFAULT_MMA_INST  # its instruction (Options.mma_inst)
    k_tri: bool = False  # k's bounds read i (rectangular form only): each row's k range is its own
    # The scalar form (*Scalar accumulator*): ``Decl t = init`` before the k loop, ``t = f(t, ...)`` in
    # it (``update``), and ``X[i][j] = h(X[i][j], t, ...)`` after it (``epilogue``); else None.
    scalar: ir.Decl | None = None
    epilogue: ir.Assign | None = None
    mma_edge: bool = True  # k_tri on tensor cores: the edge terms too, masked (Options.mma_edge)
    arch: int = 0  # Options.arch: the one target, or 0 (every architecture: the FMA kernel beside the MMA one)

    @property
    def output(self) -> ir.Index:
        """``X[i][j]``: the element each instance writes."""
        target = self.epilogue.target if self.epilogue is not None else self.update.target
        assert isinstance(target, ir.Index)
        return target

    @property
    def threads(self) -> tuple[int, int]:
        """Threads per block (x, y)."""
        return self.bn // self.tn, self.bm // self.tm

    @property
    def shared_bytes(self) -> int:
        """Static shared memory of one block (operand tiles, one padding element per row)."""
        if not self.shared:
            return 0
        return sum(self.bk * ((self.bm if o.side == "row" else self.bn) + 1) * o.index.ty.bits // 8
                   for o in self.operands)


def plan(launch: ir.Launch, options: Options | None = None) -> Plan | None:
    """The tiling plan of ``launch``, or None when its shape is not the one recognised."""
    opts = options or Options()
    if not opts.enabled or opts.problem() is not None:
        return None
    if len(launch.body) != 1:
        return None
    row = launch.body[0]
    if not (isinstance(row, ir.For) and row.par in ("x", "y") and row.step == 1 and row.body):
        return None
    col, diag = row.body[-1], row.body[:-1]
    # (i par(y), j par(x)) rectangular, or (i par(x), j sequential) triangular.
    triangular = row.par == "x"
    if not (isinstance(col, ir.For) and col.par == (None if triangular else "x") and col.step == 1):
        return None
    loops = [n for n, s in enumerate(col.body) if isinstance(s, ir.For)]
    if len(loops) != 1:
        return None
    red = col.body[loops[0]]
    pre, post = col.body[:loops[0]], col.body[loops[0] + 1:]
    if not (isinstance(red, ir.For) and red.par is None and red.step == 1 and len(red.body) == 1):
        return None
    update = red.body[0]
    i, j, k = row.var, col.var, red.var
    if len({i, j, k}) != 3 or not all(v.ty.is_int for v in (row, col, red)):
        return None
    # Bounds read no array and no loop variable, except that a triangular j's
    # bounds may be i + invariant (unit coefficient: see _unit_affine).
    # (or, in the rectangular form, k's bounds: trmm's k in i + 1..m, see *Triangular k*).
    for b in (row.lo, row.hi, col.lo, col.hi, red.lo, red.hi):
        if _reads(b) or ir.var_names(b) & {j, k}:
            return None
        if i in ir.var_names(b) and not (b in (col.lo, col.hi) if triangular else b in (red.lo, red.hi)):
            return None
    if triangular and not (_unit_affine(col.lo, i) and _unit_affine(col.hi, i)):
        return None
    k_tri = not triangular and bool(i in ir.var_names(red.lo) or i in ir.var_names(red.hi))
    if k_tri and not (_unit_affine(red.lo, i) and _unit_affine(red.hi, i)):
        return None
    if not isinstance(update, ir.Assign):
        return None
    # *Scalar accumulator* (symm's first launch): the k loop accumulates into a scalar declared just
    # before it, and one statement after it writes X[i][j] from it.
    scalar = epilogue = None
    if isinstance(update.target, ir.Var):
        if not (len(pre) == 1 and isinstance(pre[0], ir.Decl) and pre[0].name == update.target.name
                and pre[0].init is not None and len(post) == 1 and isinstance(post[0], ir.Assign)
                and isinstance(post[0].target, ir.Index) and not triangular):
            return None
        scalar, epilogue = pre[0], post[0]
        if not scalar.ty.is_float or _reads(scalar.init) or ir.var_names(scalar.init) & {i, j, k}:
            return None
        pre, post = (), ()
        target = epilogue.target
        assert isinstance(target, ir.Index)
    elif isinstance(update.target, ir.Index):
        target = update.target
    else:
        return None
    if len(target.indices) != 2 or not target.ty.is_float:
        return None
    if not (_is_var(target.indices[0], i) and _is_var(target.indices[1], j)):
        return None
    operands = _operands(update.value, target, i, j, k)
    if operands is None or not operands or not update.value.ty.is_float:
        return None
    if scalar is not None:
        # f reads the accumulator, never the output; the epilogue reads X[i][j] and elements of arrays the
        # launch does not write whose subscripts use only i and j (symm: B[i][j], A[i][i]), evaluated
        # once per output after the k loop as in the original.
        assert epilogue is not None
        if any(isinstance(n, ir.Index) and n.array == target.array for n in ir.walk(update.value)):
            return None
        if not _epilogue_ok(epilogue, target, scalar.name, i, j, k):
            return None
    if not all(loop.ty.is_signed for loop in (row, col, red)):
        return None  # bounds are compared in long long
    # i and j may appear only inside operand subscripts and the target: the
    # micro-tile evaluates f for out-of-range rows too (discarded), which must
    # not compute with out-of-range loop variables.
    rest = _strip(update.value, {o.index for o in operands} | {target})
    if scalar is not None:
        rest = ir.substitute(rest, {scalar.name: ir.Const(0.0, scalar.ty)})
    if ir.var_names(rest) & {i, j}:
        return None
    # A last ``X[j][i] = X[i][j]`` (covariance's mirror store) is legal when
    # j >= i throughout: it writes only the strict lower triangle (or the
    # element itself), which no instance reads or writes otherwise.
    mirror = bool(post) and post[-1] == ir.Assign(ir.Index(target.array, target.indices[::-1], target.ty), target)
    if mirror:
        if not (triangular and _at_least(col.lo, i)):
            return None
        post = post[:-1]
    # Statements before the j loop (correlation's ``X[i][i] = 1.0``) must write
    # only the diagonal, which j >= i + 1 keeps every instance away from, and
    # read no array: then their order relative to the j loop does not matter.
    for s in diag:
        if not (triangular and _at_least(col.lo, i, strict=True) and isinstance(s, ir.Assign)
                and s.target == ir.Index(target.array, (target.indices[0],) * 2, target.ty)
                and not _reads(s.value) and not ir.var_names(s.value) & {j, k}):
            return None
    for s in pre + post:
        if not (isinstance(s, ir.Assign) and s.target == target and s.value.ty == target.ty):
            return None
        if any(isinstance(n, ir.Index) and n != target for n in ir.walk(s.value)):
            return None
        if ir.var_names(_strip(s.value, {target})) & {i, j, k}:
            return None
    (bm, bn), (tm, tn) = opts.tile, opts.coarsen
    bk = DEFAULT_BK
    p = Plan(row, col, red, update, pre, post, operands, bm, bn, bk, tm, tn, opts.shared,  # type: ignore[arg-type]
             triangular, mirror, diag,  # type: ignore[arg-type]
             # NOTE: with a triangular k, the pipelined MMAs take only the k range common to all of a
             # block's rows (an MMA cannot skip a row's terms, and a zero operand is not a skipped
             # term: 0 * inf is NaN); each row's other terms follow in masked steps where the column
             # factors are finite, else one by one (cuda_mma, mma_edge).
             # A scalar accumulator: the f64 fragments start from its initial value (always present:
             # see the scalar form's conditions above).
             None if opts.mma is False or not opts.shared or (scalar is not None and scalar.ty != ir.F64)
             else DEFAULT_MMA_TRIANGULAR if triangular and opts.mma_shape == DEFAULT_MMA
             else DEFAULT_MMA_K_TRI if k_tri and not opts.mma_edge and opts.mma_shape == DEFAULT_MMA
             else opts.mma_shape,
             opts.mma_inst, k_tri, scalar, epilogue, opts.mma_edge, opts.arch)
    while p.shared_bytes > SHARED_LIMIT and p.bk > 1:
        p = dataclasses.replace(p, bk=p.bk // 2)
    return p if p.shared_bytes <= SHARED_LIMIT else None


def _epilogue_ok(s: ir.Assign, target: ir.Index, acc: str, i: str, j: str, k: str) -> bool:
    """``s`` may end a scalar-form plan: ``X[i][j] = h(...)`` reading ``X`` only as ``X[i][j]``, other
    arrays only at subscripts over ``i``, ``j`` and invariants, ``k`` nowhere, and the scalar ``acc``."""
    if s.value.ty != target.ty:
        return False
    for n in ir.walk(s.value):
        if isinstance(n, ir.Index):
            if n.array == target.array and n != target:
                return False
            if any(_reads(x) or k in ir.var_names(x) for x in n.indices):
                return False
    # i and j only inside subscripts (the epilogue runs only for in-range outputs, but keep the rule).
    stripped = _strip(s.value, {n for n in ir.walk(s.value) if isinstance(n, ir.Index)})
    return not ir.var_names(stripped) & {i, j, k} and acc in ir.var_names(s.value)


def _operands(value: ir.Expr, target: ir.Index, i: str, j: str, k: str) -> tuple[Operand, ...] | None:
    """The operand references of ``value`` (deduplicated, in first-use order), or None if one does not fit."""
    out: list[Operand] = []
    for n in ir.walk(value):
        if isinstance(n, ir.Binary) and n.op in ("/", "%") and n.ty.is_int:
            return None  # would divide by the zero fill of an out-of-range element
        if not isinstance(n, ir.Index):
            continue
        if n.array == target.array:
            if n != target:
                return None  # another element of the output: a dependence we do not model
            continue
        if not n.ty.is_float or any(_reads(x) for x in n.indices):
            return None
        used = set().union(*(ir.var_names(x) for x in n.indices)) & {i, j, k}
        if used == {i, k}:
            side = "row"
        elif used == {j, k}:
            side = "col"
        else:
            return None
        op = Operand(n, side, k in ir.var_names(n.indices[-1]))
        if op not in out:
            out.append(op)
    return tuple(out)


def substitute(e: ir.Expr, table: Mapping[ir.Index, ir.Expr]) -> ir.Expr:
    """``e`` with every array reference found in ``table`` replaced by its entry."""
    return _Subst(table).transform(e)


class _Subst(ir.Transformer):
    def __init__(self, table: Mapping[ir.Index, ir.Expr]) -> None:
        self.table = table

    def visit_Index(self, e: ir.Index) -> ir.Expr:
        return self.table.get(e, e)


def _unit_affine(e: ir.Expr, i: str) -> bool:
    """``e`` is ``invariant`` or ``i + invariant`` (``i - invariant``, widening casts).

    With coefficients 0 or 1 in ``i`` for both bounds of ``j``, the rows with a
    non-empty ``j`` range form an interval and the union of their ``j`` ranges
    over consecutive rows is one interval (each end moves by at most one per
    row), so a block's column range is ``[min lo, max hi)`` over its rows.
    """
    if i not in ir.var_names(e):
        return True
    if isinstance(e, ir.Var):
        return True
    if isinstance(e, ir.Cast):
        return e.ty.is_int and e.operand.ty.is_int and e.ty.bits >= e.operand.ty.bits \
            and (e.ty.is_signed or not e.operand.ty.is_signed) and _unit_affine(e.operand, i)
    if isinstance(e, ir.Binary) and e.op == "+":
        return (i not in ir.var_names(e.lhs) and _unit_affine(e.rhs, i)) or (i not in ir.var_names(e.rhs) and _unit_affine(e.lhs, i))
    if isinstance(e, ir.Binary) and e.op == "-":
        return i not in ir.var_names(e.rhs) and _unit_affine(e.lhs, i)
    return False


def _at_least(lo: ir.Expr, i: str, *, strict: bool = False) -> bool:
    """``lo`` is ``i`` or ``i + c`` with a constant ``c >= 0`` (``> 0`` if ``strict``): ``j >= lo`` implies ``j >= i``."""
    if isinstance(lo, ir.Var):
        return lo.name == i and not strict
    if isinstance(lo, ir.Binary) and lo.op == "+":
        for a, b in ((lo.lhs, lo.rhs), (lo.rhs, lo.lhs)):
            if isinstance(a, ir.Var) and a.name == i and isinstance(b, ir.Const) and b.value >= int(strict):
                return True
    return False


def _strip(e: ir.Expr, refs: set[ir.Index]) -> ir.Expr:
    return substitute(e, {r: ir.Const(0.0, r.ty) for r in refs})


def _reads(e: ir.Node) -> bool:
    return any(isinstance(n, ir.Index) for n in ir.walk(e))


def _is_var(e: ir.Expr, name: str) -> bool:
    return isinstance(e, ir.Var) and e.name == name


#: Rows per thread that :func:`launch_rows` gives a launch reading one array at several ``y``
#: offsets (a stencil).  Measured on the H200 against 1 (bench/results/h200_stencil_candidates.md,
#: same-process baseline): jacobi-2d 1.24x, heat-3d 1.19x, fdtd-2d 1.09x; 4 and 8 won on one
#: stencil and lost on another.
AUTO_ROWS = 2
#: Planes per thread that :func:`launch_stream` gives a 3-D launch reading one array at several ``z``
#: offsets.  Measured on the H200 (heat-3d at 320^3, hand-written kernels of the emitted form against
#: the emitted 2-row kernel, .gpu/prof in the session of 2026-12-04): 8 planes per thread 3.22 ms
#: (3257 GB/s), 32 planes 3.49 ms, the 2-row kernel 5.33 ms (64 registers, 39% occupancy).
AUTO_STREAM = 8


def launch_stream(options: Options | None, chain: Sequence[ir.For]) -> int:
    """Iterations of the ``z`` par loop per thread in a 3-D plain launch whose par loops are ``chain``,
    run as a serial loop inside the x loop (the thread streams through its planes): ``options.stream``
    when set; left automatic (0), :data:`AUTO_STREAM` when consecutive planes share loads
    (:func:`shared_rows`), else 1.  Always 1 without a ``z`` loop or with tiling off, and left
    automatic, 1 when ``options.rows`` is set (the user asked for row coarsening instead)."""
    z = next((loop for loop in chain if loop.par == "z"), None)
    if options is None or not options.enabled or z is None or _dependent(chain):
        return 1
    if options.stream or options.rows:
        return options.stream or 1
    return AUTO_STREAM if shared_rows(chain[-1].body, z.var, AUTO_STREAM) else 1


def launch_rows(options: Options | None, chain: Sequence[ir.For]) -> int:
    """Iterations of the ``y`` par loop per thread in a plain launch whose par loops are ``chain``:
    ``options.rows`` when set; left automatic (0), :data:`AUTO_ROWS` when the unrolled iterations
    share loads (:func:`shared_rows`), else 1.  Always 1 without a ``y`` loop, with tiling off
    (the naive mapping), or when the launch streams along ``z`` (:func:`launch_stream`)."""
    y = next((loop for loop in chain if loop.par == "y"), None)
    if options is None or not options.enabled or y is None or launch_stream(options, chain) > 1 \
            or _dependent(chain):
        return 1
    if options.rows:
        return options.rows
    return AUTO_ROWS if shared_rows(chain[-1].body, y.var, AUTO_ROWS) else 1


def _dependent(chain: Sequence[ir.For]) -> bool:
    """Whether a par loop's bounds read an outer par loop's variable (``passes.map_gpu.triangular``):
    a coarsened thread's rows would each need their own inner bounds, so such launches take one row."""
    return any(var_names(b) & {o.var for o in chain[:n]} for n, lp in enumerate(chain) for b in (lp.lo, lp.hi))


def shared_rows(body: Sequence[ir.Stmt], y: str, rows: int) -> list[tuple[ir.Index, float]]:
    """The reads a ``rows``-coarsened thread no longer issues: ``(read, loads saved per output)``.

    Reads of one array whose subscripts differ only in the constant of the positions that use the
    ``y`` loop variable (``A[i-1][j]``, ``A[i][j]``, ``A[i+1][j]``: ``g`` offsets spanning ``s``
    rows) cost ``g`` loads per output uncoarsened and ``(rows + s) / rows`` coarsened, the
    unrolled iterations sharing the rest.
    """
    groups: dict[tuple[object, ...], list[tuple[ir.Index, int]]] = {}
    for st in body:
        for x in ir.walk(st):
            if not isinstance(x, ir.Index):
                continue
            forms = [accesses.affine(sub, var_names(sub)) for sub in x.indices]
            if any(f is None for f in forms):
                continue
            ys = [f for f in forms if f is not None and f.coeff(y) != 0]
            if len(ys) != 1 or abs(ys[0].coeff(y)) != 1:
                continue
            key = (x.array, tuple((f.coeffs, f.const if f.coeff(y) == 0 else None) for f in forms if f is not None))
            groups.setdefault(key, []).append((x, ys[0].const * ys[0].coeff(y)))
    saved: list[tuple[ir.Index, float]] = []
    for reads in groups.values():
        offsets = {c for _, c in reads}
        span = max(offsets) - min(offsets)
        share = len(offsets) - (rows + span) / rows
        if share > 0:
            saved.append((reads[0][0], share))
    return saved


var_names = ir.var_names  # passes that read tile's helpers take it from here
