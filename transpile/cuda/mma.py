"""CUDA for a tiled matmul-like launch on fp64 tensor cores (DMMA, ``mma.sync`` f64: m16n8k8 by default).

:func:`fit` decides, before printing (:mod:`transpile.cuda.forms`), whether a tiling plan runs
here: the plan allows it (``Plan.mma``: tile option ``mma`` not False, shared staging on), a block
shape fits, and the update is *bilinear* (:func:`terms`); otherwise the exact-order FMA kernel
(:mod:`transpile.cuda.tiled`) runs alone::

    X[i][j] = X[i][j] + R1 * Q1 (+ R2 * Q2 ...)     # all f64

where each ``R`` reads only row operands (``A[i][k]``, ``A[k][i]``) and
scalars, each ``Q`` only column operands and scalars (either order of the
two factors: f64 multiplication commutes exactly).  gemm's ``alpha * A[i][k]
* B[k][j]`` parses as ``(alpha * A[i][k]) * B[k][j]``: ``R = alpha *
A[i][k]`` is evaluated by the same expression (from the staged element), so
every product is the source's; only the summation order changes (the hardware
adds four products per instruction), which is why the path needs
``reassociate``.

The kernel (``templates/mma_matmul.cu.j2``; docs/tiling.md, "Tensor cores"):
a block of ``(bm/wm) * (bn/wn)`` warps computes a ``bm x bn`` output tile,
each warp a ``wm x wn`` tile of 8x8 fragments whose accumulators (two doubles
per lane and fragment) start from ``X`` after the pre statements.  Per ``k``
step of ``bk`` the operands are staged into shared memory, loads coalesced
along the contiguous global dimension, rows padded by 4 doubles so the
fragment reads (lane ``l`` reads row ``l/4``, ``k`` ``l%4``) hit 16 distinct
8-byte banks per half-warp.  With ``buffers >= 2`` (``mma_shape[5]``, the
default) the operand elements go through a ``cp.async`` pipeline of that
many buffers (one barrier per step); with 1, each factor is computed while
staging into one buffer and the next step is prefetched into registers.
Guards, the triangular column interval, the mirror and diagonal statements
are those of :mod:`transpile.cuda.tiled` (same exactness argument for what is
loaded and stored; zero fill for the rest).  A triangular ``k`` (trmm, symm's
second launch) runs the pipelined MMAs over the range every row of the block
tile takes (the intersection of their ranges; empty when they share none) and
then the rest of the union of the rows' ranges in *edge steps* (``Plan.mma_edge``):
staged with plain loads, each row factor outside its own row's range an exact
zero at the fragment, on the tensor cores when every column factor the warp
meets in the step is finite, else one term at a time, ``k`` outermost, every row
guarded to its own range, from global memory (the only form with ``mma_edge``
off): no term outside a row's range is ever multiplied into a result
(``tests/test_mma.py`` puts inf and NaN where it would show).  :func:`_fit` shrinks the shape
until it fits 48 KB of static shared memory.

Architectures (docs/architectures.md): the body is compiled only where its
instructions exist (``__CUDA_ARCH__ >= 10 * arch(inst)``, :func:`arch`; else a
``__trap()``); :func:`transpile.cuda.tiled.launch` pairs the kernel with the FMA
kernel of the same plan, which the host launches instead when the file's code
for the device was compiled for an older architecture (``cfg["arch"]``).

The instruction (:func:`instruction`: ``Plan.mma_inst``, one of
``passes.tile.MMA_INSTRUCTIONS``) sits in a lambda at the top of the kernel:
inline PTX under ``__CUDA_ARCH__``, else an emulation with ``__shfl_sync``
following the same fragment layout, which the CPU simulator runs (so stage (c)
checks our fragment indexing against the PTX layout).  Every shape reads the
same 8x4 pieces from shared memory: lane ``l`` holds ``A[l/4][l%4]`` of an
8-row, 4-``k`` piece and ``B[l%4][l/4]`` of a 4-``k``, 8-column one; an
``m16n8kK`` instruction takes the pieces of two 8-row halves ``h`` and ``K/4``
``k`` quarters ``s`` (``a[2s + h]``, ``b[s]``) and its accumulators are those
of the two 8x8 fragments (``d[2h]``, ``d[2h + 1]``), so the accumulator
layout, the guards and the stores are those of m8n8k4.  On the H200 m8n8k4
runs at half the fp64 tensor rate (33 of 66 TFLOP/s, ``passes.tile.DEFAULT_MMA_INST``).
"""

from __future__ import annotations

from dataclasses import dataclass

from passes.tile import SHARED_LIMIT, Operand, Plan, mma_instruction, substitute
from transpile import ir
from transpile.cuda import printer as cu
from transpile.cuda.tiles import row_bound, scalar_form, tile_grid

TEMPLATE = "mma_matmul.cu.j2"
#: Set to 0 in the environment, the host launches the FMA kernels in place of the tensor-core ones
#: (templates/module.cu.j2, ``transpile_mma_ok``): the verifier's stage (c) runs both.
ENV = "TRANSPILE_MMA"
#: The instruction D = A * B + C on f64 fragments (A row-major, B column-major): operands
#: ``%0..`` are the accumulators (read and written), then A's and B's registers.
PTX_DMMA = "mma.sync.aligned.m{m}n8k{k}.row.col.f64.f64.f64.f64 {{{d}}}, {{{a}}}, {{{b}}}, {{{d}}};"


@dataclass(frozen=True, slots=True)
class Instruction:
    """One f64 ``mma.sync`` shape: ``rows`` (8 or 16) x 8 outputs, ``k`` (4, 8 or 16) terms each."""

    rows: int
    k: int

    @property
    def halves(self) -> int:
        """8-row fragments per instruction."""
        return self.rows // 8

    @property
    def quarters(self) -> int:
        """4-``k`` pieces per instruction."""
        return self.k // 4

    @property
    def counts(self) -> tuple[int, int, int]:
        """Registers (doubles) per lane: accumulators, A, B."""
        return 2 * self.halves, self.halves * self.quarters, self.quarters

    def ptx(self) -> str:
        nd, na, nb = self.counts
        regs = [", ".join(f"%{i}" for i in range(lo, lo + n)) for lo, n in ((0, nd), (nd, na), (nd + na, nb))]
        return PTX_DMMA.format(m=self.rows, k=self.k, d=regs[0], a=regs[1], b=regs[2])


def arch(inst: Instruction) -> int:
    """The compute capability (``10 * major + minor``) the kernel needs: f64 ``mma.sync`` m8n8k4 and
    ``cp.async`` came with sm_80, the other f64 shapes with sm_90 (ptxas: "Feature '.m16n8k8 with
    double types' requires .target sm_90 or higher")."""
    return 80 if (inst.rows, inst.k) == (8, 4) else 90


def instruction(inst: tuple[int, int], wm: int, bk: int) -> Instruction:
    """The instruction a warp tile of ``wm`` rows and a ``k`` step of ``bk`` can use (:func:`passes.tile.mma_instruction`)."""
    return Instruction(*mma_instruction(inst, wm, bk))


CUDA = {"tid": "threadIdx.x", "bid_x": "blockIdx.x", "bid_y": "blockIdx.y", "grid_x": "gridDim.x",
        "grid_y": "gridDim.y", "barrier": "__syncthreads();", "smem": "__shared__ __align__(16) ",
        "arch": "defined(__CUDA_ARCH__)", "full_mask": "0xffffffffu", "shfl": "__shfl_sync", "fma": "fma"}
#: Shared-memory row pad in doubles: a row stride of 4 (mod 8) spreads a half-warp's fragment
#: read (4 rows x 4 consecutive elements) over the 16 eight-byte banks.
PAD = 4
PRAGMA_UNROLL = "#pragma unroll"
#: 32-bit registers per SM (sm_90).
REGISTERS = 65536
#: Registers a pipelined kernel's thread needs besides its accumulators and fragments (addresses,
#: bounds, loop state): ptxas gave gemm's 32x32 warp tile 149 (m8n8k4) and 159 (m16n8k8) registers,
#: 63 of them beyond the 96 of its fragments.  :func:`_min_blocks` sizes ``__launch_bounds__`` from it.
REG_BASE = 64


# Term(row, col, row_klast, col_klast): one product R * Q of the update;
# *_klast: the factor's first operand has k in its last subscript (k contiguous).
@dataclass(frozen=True, slots=True)
class Term:
    """One bilinear term ``row * col`` of the update."""

    row: ir.Expr
    col: ir.Expr
    row_klast: bool
    col_klast: bool


def terms(plan: Plan) -> tuple[Term, ...] | None:
    """The terms of ``plan``'s update ``X = X + sum R*Q`` (f64 throughout), or None if it is not of that form."""
    target, value = plan.update.target, plan.update.value
    if target.ty != ir.F64 or not isinstance(value, ir.Binary) or value.op != "+" or value.ty != ir.F64:
        return None
    if value.lhs == target:
        rest = value.rhs
    elif value.rhs == target:
        rest = value.lhs
    else:
        return None
    sides = {o.index: o for o in plan.operands}
    out: list[Term] = []
    for prod in _summands(rest):
        if not (isinstance(prod, ir.Binary) and prod.op == "*" and prod.ty == ir.F64):
            return None
        a, b = _side(prod.lhs, sides), _side(prod.rhs, sides)
        if a is None or b is None or {a[0], b[0]} != {"row", "col"}:
            return None
        (_, r, rk), (_, c, ck) = (a, b) if a[0] == "row" else (b, a)
        out.append(Term(r, c, rk, ck))
    return tuple(out)


def _summands(e: ir.Expr) -> list[ir.Expr]:
    if isinstance(e, ir.Binary) and e.op == "+" and e.ty == ir.F64:
        return _summands(e.lhs) + _summands(e.rhs)
    return [e]


def _side(e: ir.Expr, sides: dict[ir.Index, Operand]) -> tuple[str, ir.Expr, bool] | None:
    """``(side, e, k_last)`` of a factor reading operands of one side only (f64 arithmetic), else None."""
    refs = [n for n in ir.walk(e) if isinstance(n, ir.Index)]
    if not refs or any(n not in sides for n in refs):
        return None  # no operand, or the target
    found = {sides[n].side for n in refs}
    if len(found) != 1 or any(n.ty != ir.F64 for n in ir.walk(e) if isinstance(n, (ir.Binary, ir.Unary, ir.Index))):
        return None
    return found.pop(), e, sides[refs[0]].k_last


# Fit(terms, k_last, shape, inst): a plan's tensor-core form: its bilinear terms, whether each
# operand reads k last, the block shape (bm, bn, bk, wm, wn, buffers) and the instruction.
@dataclass(frozen=True)
class Fit:
    """How a tiling plan runs on the tensor cores (:func:`fit`)."""

    terms: tuple[Term, ...]
    k_last: dict[ir.Index, bool]
    shape: tuple[int, int, int, int, int, int]
    inst: Instruction


def fit(plan: Plan) -> Fit | None:
    """The tensor-core form of ``plan`` (decided before printing: :mod:`transpile.cuda.forms`), or None:
    tensor cores not allowed (``plan.mma``), an update that is not bilinear in f64, no block shape that
    fits, or an ``--arch`` target without the instruction (the FMA kernel alone)."""
    found = terms(plan) if plan.mma is not None else None
    if not found:
        return None
    k_last = {o.index: o.k_last for o in plan.operands}
    shape = _fit(found, k_last, plan.mma, plan.red.var, (plan.row.var, plan.col.var))  # type: ignore[arg-type]
    if shape is None:
        return None
    inst = instruction(plan.mma_inst, shape[3], shape[2])
    if plan.arch and plan.arch < arch(inst):
        return None
    return Fit(found, k_last, shape, inst)


def launch(plan: Plan, fitted: Fit, expr: cu.ExprPrinter, namer: cu.Namer, loads: list[str],
           config: dict[str, object]) -> tuple[str, list[str], dict[str, object]]:
    """``(qualifiers, body lines, launch config)`` of the tensor-core kernel of ``plan`` in the form ``fitted``.

    Same contract as :func:`transpile.cuda.tiled.launch`.
    """
    found, k_last, inst = fitted.terms, fitted.k_last, fitted.inst
    bm, bn, bk, wm, wn, nbuf = fitted.shape
    warps_c = bn // wn
    threads = (bm // wm) * warps_c * 32
    copy = nbuf >= 2  # cp.async into nbuf buffers; else one buffer and register prefetch
    staged = _staged(found, copy, k_last)
    p = expr
    fresh = namer.fresh
    names = {b: fresh(b) for b in (
        "dmma", "el", "s", "hx", "av", "bv", "dv", "as", "bl", "bh", "kx", "sx", "tid", "lane", "warp", "wr", "wc", "g", "q",
        "ib", "jb", "acc", "fm", "fn", "h", "gi", "gj", "lo", "hi", "kb", "kn", "kk", "t", "r", "c", "gr", "gk",
        "jmin", "jmax", "l", "u", "fa", "fb", "cp", "dst", "src", "ok", "kt", "cur", "nxt", "p0")}
    for loop, key in ((plan.row, "i"), (plan.col, "j"), (plan.red, "k")):
        names[f"{key}_lo"] = fresh(f"{loop.var}_lo")
        names[f"{key}_hi"] = fresh(f"{loop.var}_hi")
    if plan.k_tri:
        names.update({b: fresh(b) for b in ("kl", "ku", "kq")})  # only here: other kernels' names stay
        if plan.mma_edge:
            names.update({b: fresh(b) for b in ("kmn", "kmx", "ke", "kf", "fin", "v")})
    bounds = []
    for loop, key in ((plan.row, "i"), (plan.col, "j"), (plan.red, "k")):
        if (key == "j" and plan.triangular) or (key == "k" and plan.k_tri):
            continue  # read i: per row (k: the block's common range, per row tile)
        bounds.append({"name": names[f"{key}_lo"], "expr": p.cast_to(loop.lo, "long long")})
        bounds.append({"name": names[f"{key}_hi"], "expr": p.cast_to(loop.hi, "long long")})

    def decl(loop: ir.For, value: str) -> str:
        t = cu.ctype(loop.ty)
        return f"const {t} {p.ident(loop.var)} = ({t}){value};"

    row_j = {g: (row_bound(plan, p, plan.col.lo, names[g]), row_bound(plan, p, plan.col.hi, names[g]))
             for g in ("gi", "gr")}
    row_k = {g: (row_bound(plan, p, plan.red.lo, names[g]), row_bound(plan, p, plan.red.hi, names[g]))
             for g in ("gi", "gr")}
    t_, r_, kk_, kx_, g_, q_ = names["t"], names["r"], names["kk"], names["kx"], names["g"], names["q"]
    stages: list[dict[str, object]] = []
    reads: dict[tuple[str, ir.Expr], str] = {}
    for (side, e), contiguous in staged.items():
        row = side == "row"
        width = bm if row else bn
        smem, reg = fresh(f"s{side[0]}{len(stages)}"), fresh(f"p{side[0]}{len(stages)}")
        loop = plan.row if row else plan.col
        in_rows = (f"{names['gr']} < {names['i_hi']} && {row_j['gr'][0]} < {row_j['gr'][1]}" if row
                   else f"{names['gr']} < {names['jmax']}")
        dims = _dims(width, bk, contiguous)
        rmajor = dims[0] == width  # [width][bk + PAD]: k contiguous in shared memory too
        buf = f"[{names['cur']}]" if copy else ""
        rr = f"{names['wr' if row else 'wc']} + 8 * {names['fm' if row else 'fn']} + {g_}"
        reads[(side, e)] = f"{smem}{buf}[{rr}][{kx_} + {q_}]" if rmajor else f"{smem}{buf}[{kx_} + {q_}][{rr}]"
        stages.append({
            # k contiguous in memory: tile [width][bk + PAD], else [bk][width + PAD]; either way
            # consecutive threads load consecutive addresses and store to consecutive banks.
            "decl": f"{CUDA['smem']}double {smem}{f'[{nbuf}]' if copy else ''}[{dims[0]}][{dims[1]}];",
            "reg": reg, "count": width * bk // threads,
            "r_of_t": f"{t_} / {bk}" if contiguous else f"{t_} % {width}",
            "kk_of_t": f"{t_} % {bk}" if contiguous else f"{t_} / {width}",
            "at": f"{smem}[{r_}][{kk_}]" if rmajor else f"{smem}[{kk_}][{r_}]",
            "at_buf": f"{smem}[{names['nxt']}][{r_}][{kk_}]" if rmajor else f"{smem}[{names['nxt']}][{kk_}][{r_}]",
            "base": names["ib" if row else "jb"],
            "in_range": f"{in_rows} && {names['gk']} < {names['k_hi']}",
            "decls": [decl(loop, names["gr"]), decl(plan.red, names["gk"])],
            "value": p(e),
            "in_rows": in_rows,
            # The edge steps (triangular k): k in [kb, kb + kn), a row operand only inside its row's range.
            "in_edge": f"{in_rows} && {names['gk']} < {names['kb']} + {names['kn']}" + (
                f" && {names['gk']} >= {row_k['gr'][0]} && {names['gk']} < {row_k['gr'][1]}" if row else ""),
            # cp.async: per element a running source pointer, advanced by bk * (elements per unit of k).
            "ptr": fresh(f"g{side[0]}{len(stages)}"), "rowok": fresh(f"v{side[0]}{len(stages)}"),
            "stride": fresh(f"d{side[0]}{len(stages)}"), "cstride": fresh(f"e{side[0]}{len(stages)}"),
        })
        st = stages[-1]
        st["at_edge"] = st["at_buf"] if copy else st["at"]  # the edge steps stage into buffer 0
        k0 = f"{names['k_lo']} + {kk_}"
        st["probes"] = [  # element 0 at k_lo; the same at k_lo + 1; element 1 at k_lo
            {"t": names["tid"], "k": k0, "set": f"{st['ptr']} = ", "end": ""},
            {"t": names["tid"], "k": f"{k0} + 1", "set": f"{st['stride']} = (", "end": f" - {st['ptr']}) * {bk}"},
            {"t": f"{names['tid']} + {threads}", "k": k0, "set": f"{st['cstride']} = ", "end": f" - {st['ptr']}"},
        ]

    def read(side: str, factor: ir.Expr) -> str:
        """The factor's value for this lane's fragment element, from the staged tiles."""
        if (side, factor) in reads:
            return reads[(side, factor)]
        table = {o: ir.Var(reads[(side, o)], o.ty) for o in _refs(factor)}
        return p(substitute(factor, table))

    steps = [{"a": read("row", t.row), "b": read("col", t.col)} for t in found]
    fm, fn, h = names["fm"], names["fn"], names["h"]
    acc_ref = ir.Var(f"{names['acc']}[{fm}][{fn}][{h}]", plan.update.target.ty)
    table: dict[ir.Index, ir.Expr] = {plan.update.target: acc_ref}  # type: ignore[dict-item]
    printer = cu.StmtPrinter(expr, namer, depth=0)

    def micro(stmts: tuple[ir.Assign, ...]) -> list[str]:
        """``stmts`` on every accumulator of the thread (unrolled loops)."""
        if not stmts:
            return []
        printer.lines = []
        printer.emit(ir.Assign(acc_ref, substitute(s.value, table)) for s in stmts)
        loops = [(fm, wm // 8), (fn, wn // 8), (h, 2)]
        head = [x for d, (v, n) in enumerate(loops)
                for x in (PRAGMA_UNROLL, f"{'  ' * d}for (int {v} = 0; {v} < {n}; ++{v}) {{")]
        body = [f"{'  ' * len(loops)}{line}" for line in printer.lines]
        return head + body + [f"{'  ' * d}}}" for d in reversed(range(len(loops)))]

    # The scalar form (symm's first launch): the fragments start at the scalar's init and the
    # epilogue is evaluated from them at the store.
    update, epilogue, acc_init = scalar_form(plan, p, printer, acc_ref)
    edge: list[str] = []
    if plan.k_tri:  # one row's terms outside the block's common k range, from global memory
        printer.lines = []
        printer.emit([ir.Assign(acc_ref, substitute(update, table))])
        edge = printer.lines
    ctx = {
        "loads": loads, "stages": stages, "steps": steps, "bounds": bounds, "n": names, "cuda": CUDA,
        "inst": inst, "mma": _lambda(inst, names, fresh), "arch": arch(inst), "fallback": not plan.arch, "triangular": plan.triangular, "row_j": row_j,
        "k_tri": plan.k_tri, "row_k": row_k, "edge": edge, "edge_mma": plan.k_tri and plan.mma_edge,
        "edge_k": decl(plan.red, names["kq"]) if plan.k_tri else "",
        "c": {"bm": bm, "bn": bn, "bk": bk, "wm": wm, "wn": wn, "fm": wm // 8, "fn": wn // 8,
              "warps_c": warps_c, "threads": threads, "nbuf": nbuf, "last": nbuf - 1, "wait": nbuf - 2},
        "copy": copy,
        "prologue": [{"buf": b, "k": f"{names['k_lo']} + {b * bk}"} for b in range(nbuf - 1)],
        "ahead": f"{names['kb']} + {(nbuf - 1) * bk}",
        "ij_decls": [decl(plan.row, names["gi"]), decl(plan.col, names["gj"])],
        "target": p(plan.update.target), "zero": p(ir.Const(0.0, ir.F64)),
        "acc_init": acc_init, "epilogue": epilogue,
        "pre": micro(plan.pre), "post": micro(plan.post),
        "diag": cu.StmtPrinter(expr, namer, depth=0).emit(plan.diag) if plan.diag else [],
        "diag_decl": decl(plan.row, names["gr"]),
        "mirror": p(ir.Index(plan.update.target.array, plan.update.target.indices[::-1],  # type: ignore[union-attr]
                             plan.update.target.ty)) if plan.mirror else "",
    }
    body = cu.environment().get_template(TEMPLATE).render(**ctx).splitlines()
    cfg = dict(config)
    cfg["grid"] = tile_grid(config, plan.triangular, bm, bn)
    cfg["shape"] = "mma"
    cfg["arch"] = arch(inst)
    cfg["block"] = [f"{threads}u", "1u", "1u"]
    blocks = _min_blocks(threads, wm, wn, inst, edge=plan.k_tri and plan.mma_edge) if copy else 0
    bounds_arg = f"{threads}, {blocks}" if blocks > 1 else f"{threads}"
    return f"{cu.GLOBAL} void {cu.LAUNCH_BOUNDS}({bounds_arg})", body, cfg



def _min_blocks(threads: int, wm: int, wn: int, inst: Instruction, *, edge: bool = False) -> int:
    """Blocks per SM ``__launch_bounds__`` asks for: as many as the registers allow when each thread
    keeps its accumulators, one k step's fragments and :data:`REG_BASE` more; with the edge steps of a
    triangular k (``edge``), also its rows' k ranges and the block's (64-bit bounds).

    NOTE: a tighter cap spills inside the k loop: gemm's 32x32 warp tile at 128 threads and a cap of
    128 registers (4 blocks) measured 0.47 of cuBLAS on the H200 against 0.50 with 3 blocks
    (bench/results/h200_mma.md); 64x32 warp tiles spilled 344 bytes under the old fixed cap of 168.
    symm and trmm's 32x32 warp tiles with edge steps spilled 528 bytes at 3 blocks (168 registers);
    at 2 they ran 1.22x (symm) and 1.11x (trmm) faster on the H200 (bench/results/h200_run25b.md).
    """
    need = 2 * (wm * wn // 32) + 2 * inst.quarters * (wm // 8 + wn // 8) + REG_BASE
    if edge:
        need += 2 * 2 * (wm // 8) + 8  # kl/ku per fragment row; k_lo, k_hi, kmn, kmx
    return REGISTERS // (threads * need)


def _lambda(inst: Instruction, n: dict[str, str], fresh) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """The instruction lambda's parameters, its asm operands, and the call of one instruction at
    fragment ``(fm, fn)`` (``fm`` counting instructions' rows) from the staged pieces ``fa``/``fb``."""
    nd, na, nb = inst.counts
    d, a, b = ([fresh(f"{x}{i}") for i in range(cnt)] for x, cnt in (("d", nd), ("a", na), ("b", nb)))
    fm, fn, halves = n["fm"], n["fn"], inst.halves
    row = [f"{fm}" if halves == 1 else f"{halves} * {fm} + {h}" for h in range(halves)]
    call = ([f"{n['acc']}[{row[h]}][{fn}][{c}]" for h in range(halves) for c in range(2)]
            + [f"{n['fa']}[{q}][{row[h]}]" for q in range(inst.quarters) for h in range(halves)]
            + [f"{n['fb']}[{q}][{fn}]" for q in range(inst.quarters)])
    return {
        "params": ", ".join([f"double &{x}" for x in d] + [f"const double {x}" for x in a + b]),
        "ptx": inst.ptx(), "outs": ", ".join(f'"+d"({x})' for x in d), "ins": ", ".join(f'"d"({x})' for x in a + b),
        "nd": nd, "na": na, "nb": nb, "a": ", ".join(a), "b": ", ".join(b), "dptrs": ", ".join(f"&{x}" for x in d),
        "call": ", ".join(call),
    }


def _fit(found: tuple[Term, ...], k_last: dict[ir.Index, bool], shape: tuple[int, int, int, int, int, int],
         k: str, loops: tuple[str, str]) -> tuple[int, int, int, int, int, int] | None:
    """The first variant of ``shape`` whose staged tiles fit the static shared memory (syr2k stages four).

    In order: the k step halved down to 8, buffers dropped down to 2, the block rows halved
    (keeping the pipeline), and last one buffer with register prefetch.
    """
    bm, bn, bk, wm, wn, nbuf = shape
    steps = [bk >> n for n in range(8) if bk >> n >= 8 or n == 0]
    # cp.async addresses element c at step s as one pointer + c * stride + s * stride': the subscripts
    # must be affine in the loop variables (unit coefficients, checked syntactically).
    refs = [e for _, e in _staged(found, True, k_last) if isinstance(e, ir.Index)]
    pipelined = nbuf >= 2 and all(_unit_in(x, v) for o in refs for x in o.indices for v in (k, *loops))
    tries = [(bm, bn, st, b) for b in range(nbuf, 1, -1) for st in steps] if pipelined else []
    tries += [(m, bn, 8, 2) for m in (bm // 2, bm // 4) if m >= wm and m % wm == 0] if pipelined else []
    tries += [(bm, bn, st, 1) for st in steps]
    for m, n, kstep, b in tries:
        threads = (m // wm) * (n // wn) * 32
        if any((w * kstep) % threads for w in (m, n)):
            continue  # every thread stages the same number of elements
        if b >= 2 and (threads % kstep or any(threads % w and w % threads for w in (m, n))
                       or any(w * kstep // threads > 32 for w in (m, n))):
            continue  # cp.async: element c + 1 is a fixed distance from c; a 32-bit row mask
        if _shared_bytes(_staged(found, b >= 2, k_last), m, n, kstep) * b <= SHARED_LIMIT:
            return m, n, kstep, wm, wn, b
    return None


def _unit_in(e: ir.Expr, k: str) -> bool:
    """``e`` does not read ``k``, or is ``k``, ``k +- invariant`` or ``invariant + k`` (widening casts allowed)."""
    if k not in ir.var_names(e) or isinstance(e, ir.Var):
        return True
    if isinstance(e, ir.Cast):
        return e.ty.is_int and e.operand.ty.is_int and e.ty.bits >= e.operand.ty.bits and _unit_in(e.operand, k)
    if isinstance(e, ir.Binary) and e.op == "-":
        return k not in ir.var_names(e.rhs) and _unit_in(e.lhs, k)
    if isinstance(e, ir.Binary) and e.op == "+":
        return (k not in ir.var_names(e.lhs) and _unit_in(e.rhs, k)) or (k not in ir.var_names(e.rhs) and _unit_in(e.lhs, k))
    return False


def _staged(found: tuple[Term, ...], copy: bool, k_last: dict[ir.Index, bool]) -> dict[tuple[str, ir.Expr], bool]:
    """What is staged, ``(side, expr) -> k_last``: each factor (computed while staging), or with
    ``copy`` (cp.async moves raw elements) each operand reference of the factors."""
    out: dict[tuple[str, ir.Expr], bool] = {}
    for t in found:
        for side, f, contiguous in (("row", t.row, t.row_klast), ("col", t.col, t.col_klast)):
            if not copy:
                out.setdefault((side, f), contiguous)
            for o in _refs(f) if copy else ():
                out.setdefault((side, o), k_last[o])
    return out


def _refs(e: ir.Expr) -> list[ir.Index]:
    return [n for n in ir.walk(e) if isinstance(n, ir.Index)]


def _dims(width: int, bk: int, k_last: bool) -> tuple[int, int]:
    """A staged tile's extents: ``[width][bk + PAD]`` when k is contiguous in memory and ``bk >= 16``, else
    ``[bk][width + PAD]``.

    Loads run along the contiguous global dimension either way.  With ``k`` contiguous and ``bk >= 16`` a
    half-warp stores one row of ``[width][bk + PAD]``: conflict-free.  At ``bk = 8`` it stores two rows,
    which conflict 2-way in either orientation, so the smaller ``[bk][width + PAD]`` (padding 4 per ``k``,
    not per row) is used: more buffers fit the 48 KB.
    """
    return (width, bk + PAD) if k_last and bk >= 16 else (bk, width + PAD)


def _shared_bytes(factors: dict[tuple[str, ir.Expr], bool], bm: int, bn: int, bk: int) -> int:
    """Static shared memory of one buffer of the staged tiles (``(side, expr) -> k_last``) at k step ``bk``."""
    total = 0
    for (side, _), k_last in factors.items():
        rows, cols = _dims(bm if side == "row" else bn, bk, k_last)
        total += rows * cols * 8
    return total
