"""CUDA for a tiled matmul-like launch: renders a :class:`passes.tile.Plan`.

:func:`launch` prints the ``tiled`` and ``mma`` forms (:mod:`transpile.cuda.forms`: where
:func:`passes.tile.plan` found a plan); it returns the ``__global__``
function's qualifiers and body lines (rendered by
``templates/tiled_matmul.cu.j2``) and the host launch configuration (grid of
``bm x bn`` tiles, capped and covered by grid-stride loops over tiles; block
of ``(bn/tn, bm/tm)`` threads).  The design and the exactness argument are in
``passes/tile.py`` and ``docs/tiling.md``.

Python prepares every expression (the user's subscripts and the update ``f``
through the module's :class:`~transpile.cuda.ExprPrinter`); the template only
places them.  The loop variables ``i``, ``j``, ``k`` are redeclared as locals
of their C types wherever a user expression is printed, so the user's index
expressions are printed unchanged.
"""

from __future__ import annotations

from passes.tile import Plan, substitute
from transpile import ir
from transpile.cuda import mma as cuda_mma
from transpile.cuda import printer as cu
from transpile.cuda import regions
from transpile.cuda.mma import Fit
from transpile.cuda.tiles import row_bound, scalar_form, tile_grid

TEMPLATE = "tiled_matmul.cu.j2"
#: CUDA spellings used by the template.
CUDA = {"tid_x": "threadIdx.x", "tid_y": "threadIdx.y", "bid_x": "blockIdx.x", "bid_y": "blockIdx.y",
        "grid_x": "gridDim.x", "grid_y": "gridDim.y", "barrier": "__syncthreads();"}
PRAGMA_UNROLL = "#pragma unroll"


def launch(plan: Plan, fitted: Fit | None, expr: cu.ExprPrinter, namer: cu.Namer, loads: list[str],
           config: dict[str, object]) -> tuple[str, list[str], dict[str, object]]:
    """``(qualifiers, body lines, launch config)`` of the tiled kernel.

    A tensor-core kernel (:mod:`transpile.cuda.mma`) carries its fallback in the
    config's ``fallback`` entry (qualifiers, body, grid, block): the FMA kernel,
    launched where the tensor-core instructions were not compiled in
    (docs/architectures.md).  ``expr`` is the kernel's expression printer (extents, renames), ``namer``
    the launch's :class:`~transpile.cuda.Namer`, ``loads`` the device-scalar
    loads that open the body, ``config`` the plain launch configuration (trip
    counts and guard), whose grid and block are replaced.
    """
    if fitted is None:  # no tensor cores (not allowed, not bilinear, no fit: cuda_mma.fit)
        return fma_launch(plan, expr, namer, loads, config)
    before = cu.Namer(namer.taken)  # the fallback's names: those the FMA kernel has without the tensor cores
    shaped = cuda_mma.launch(plan, fitted, expr, namer, loads, config)
    if plan.arch:  # --arch: one target, the tensor-core kernel alone where it has one
        return shaped
    # The tensor-core kernel's body exists only where its instructions do (cuda_mma.arch_guard); the
    # exact-order FMA kernel of the same plan is the fallback the host launches elsewhere.
    quals, body, cfg = shaped
    fb_quals, fb_body, fb_cfg = fma_launch(plan, expr, before, loads, config)
    cfg["fallback"] = {"qualifiers": fb_quals, "body": fb_body, "grid": fb_cfg["grid"], "block": fb_cfg["block"]}
    return quals, body, cfg


def fma_launch(plan: Plan, expr: cu.ExprPrinter, namer: cu.Namer, loads: list[str], config: dict[str, object]
               ) -> tuple[str, list[str], dict[str, object]]:
    """``(qualifiers, body lines, launch config)`` of the exact-order FMA tiled kernel (any architecture)."""
    printer = cu.StmtPrinter(expr, namer, depth=0)
    p = expr
    fresh = namer.fresh
    names = {b: fresh(b) for b in (
        "tx", "ty", "tid", "ib", "jb", "acc", "m", "n", "gi", "gj", "kb", "t", "r", "kk", "gr", "gk", "kn", "q",
        "jmin", "jmax", "rlo", "rhi", "l", "h", "kmin", "kmax", "klo", "khi")}
    for loop, key in ((plan.row, "i"), (plan.col, "j"), (plan.red, "k")):
        names[f"{key}_lo"] = fresh(f"{loop.var}_lo")
        names[f"{key}_hi"] = fresh(f"{loop.var}_hi")
    bounds = []
    for loop, key in ((plan.row, "i"), (plan.col, "j"), (plan.red, "k")):
        if (key == "j" and plan.triangular) or (key == "k" and plan.k_tri):
            continue  # the bounds read i: evaluated per row (row_j_lo/hi, row_k_lo/hi)
        bounds.append({"name": names[f"{key}_lo"], "expr": p.cast_to(loop.lo, "long long")})
        bounds.append({"name": names[f"{key}_hi"], "expr": p.cast_to(loop.hi, "long long")})
    nx, ny = plan.threads
    m_ = names["m"]
    names["in_ij"] = f"{names['gj']} >= {names['rlo']}[{m_}] && {names['gj']} < {names['rhi']}[{m_}]"

    row_j_lo = {g: row_bound(plan, p, plan.col.lo, names[g]) for g in ("gi", "gr")}
    row_j_hi = {g: row_bound(plan, p, plan.col.hi, names[g]) for g in ("gi", "gr")}
    row_k_lo = {g: row_bound(plan, p, plan.red.lo, names[g]) for g in ("gi", "gr")}
    row_k_hi = {g: row_bound(plan, p, plan.red.hi, names[g]) for g in ("gi", "gr")}
    if plan.k_tri:  # the k loops run over the block's union of its rows' k ranges (computed per row tile)
        names["k_lo"], names["k_hi"] = names["kmin"], names["kmax"]

    def decl(loop: ir.For, value: str) -> str:
        t = cu.ctype(loop.ty)
        return f"const {t} {p.ident(loop.var)} = ({t}){value};"

    i_decl, j_decl = decl(plan.row, names["gi"]), decl(plan.col, names["gj"])
    operands, table = [], {}
    for n, o in enumerate(plan.operands):
        row = o.side == "row"
        loop = plan.row if row else plan.col
        width = plan.bm if row else plan.bn
        reg = fresh(f"r{o.index.array}{n}")
        smem = fresh(f"s{o.index.array}{n}")
        count = plan.tm if row else plan.tn
        lane, stride = (names["ty"], ny) if row else (names["tx"], nx)
        table[o.index] = ir.Var(f"{reg}[{names['m' if row else 'n']}]", o.index.ty)
        in_rows = (f"{names['gr']} < {names['i_hi']} && {row_j_lo['gr']} < {row_j_hi['gr']}" if row
                   else f"{names['gr']} < {names['jmax']}")
        in_k = f"{names['gk']} < {names['k_hi']}"
        in_rows_direct = in_rows
        if plan.k_tri and row:  # only inside this row's own k range: an element outside it need not exist
            in_k = f"{names['gk']} >= {row_k_lo['gr']} && {names['gk']} < {row_k_hi['gr']}"
            in_rows_direct = f"{in_rows} && {names['kb']} >= {row_k_lo['gr']} && {names['kb']} < {row_k_hi['gr']}"
        t = names["t"]
        operands.append({
            "ctype": cu.ctype(o.index.ty), "smem": smem, "reg": reg, "count": count,
            "width_padded": width + 1, "elems": plan.bk * width,
            # The contiguous global dimension runs along the thread index: coalesced loads.
            "r_of_t": f"{t} / {plan.bk}" if o.k_last else f"{t} % {width}",
            "kk_of_t": f"{t} % {plan.bk}" if o.k_last else f"{t} / {width}",
            "base": names["ib" if row else "jb"], "lane": lane, "stride": stride,
            "in_range": f"{in_rows} && {in_k}",
            "in_rows": in_rows_direct,
            "decls": [decl(loop, names["gr"]), decl(plan.red, names["gk"])],
            "decls_direct": [decl(loop, names["gr"])],
            "load": p(o.index),
        })
    out = plan.output
    acc_ty = plan.scalar.ty if plan.scalar is not None else out.ty
    acc_ref = ir.Var(f"{names['acc']}[{names['m']}][{names['n']}]", acc_ty)
    table[out] = acc_ref
    update, epilogue, acc_init = scalar_form(plan, p, printer, acc_ref)
    value = substitute(update, table)
    uses_k = any(isinstance(x, ir.Var) and x.name == plan.red.var for x in ir.walk(value))

    def micro(stmts: tuple[ir.Assign, ...], row_guard: str | None = None) -> list[str]:
        """``stmts`` on every accumulator of the micro-tile (unrolled loops); ``row_guard``: only on
        the rows where it holds (it may use ``m``)."""
        if not stmts:
            return []
        printer.lines = []
        printer.emit(ir.Assign(acc_ref, substitute(s.value, table)) for s in stmts)
        m, n = names["m"], names["n"]
        pad = "  " if row_guard is None else "    "
        inner = [PRAGMA_UNROLL, f"{pad}for (int {n} = 0; {n} < {plan.tn}; ++{n}) {{",
                 *(f"{pad}  {line}" for line in printer.lines), f"{pad}}}"]
        if row_guard is not None:
            inner = [f"  if ({regions.mark('guard', row_guard)}) {{", *inner, "  }"]
        return [PRAGMA_UNROLL, f"for (int {m} = 0; {m} < {plan.tm}; ++{m}) {{", *inner, "}"]
    zero = p(ir.Const(0.0, out.ty))
    k_now = f"{names['kb']} + {names['kk']}" if plan.shared else names["kb"]  # the k of the update
    ctx = {
        "shared": plan.shared, "triangular": plan.triangular, "row_j_lo": row_j_lo, "row_j_hi": row_j_hi,
        "loads": loads, "operands": operands, "bounds": bounds, "n": names,
        "c": {"bm": plan.bm, "bn": plan.bn, "bk": plan.bk, "tm": plan.tm, "tn": plan.tn,
              "nx": nx, "ny": ny, "threads": nx * ny},
        "cuda": CUDA, "acc_type": cu.ctype(acc_ty),
        "ij_decls": [i_decl, j_decl], "target": p(out), "zero": zero,
        "acc_init": acc_init, "epilogue": epilogue,
        "diag": _lines(cu.StmtPrinter(expr, namer, depth=0), plan.diag),
        "diag_decl": decl(plan.row, names["gr"]),
        "mirror": p(ir.Index(out.array, out.indices[::-1], out.ty)) if plan.mirror else "",
        "k_decls": [decl(plan.red, f"{names['kb']} + {names['kk']}")] if uses_k else [],
        "k_decls_direct": [decl(plan.red, names["kb"])],
        # With a triangular k, each row takes only the terms of its own k range (passes/tile.py).
        "update": micro((ir.Assign(out, value),),
                        None if not plan.k_tri else
                        f"{k_now} >= {names['klo']}[{names['m']}] && {k_now} < {names['khi']}[{names['m']}]"),
        "k_tri": plan.k_tri, "row_k_lo": row_k_lo, "row_k_hi": row_k_hi,
        "pre": micro(plan.pre), "post": micro(plan.post),
    }
    body = cu.environment().get_template(TEMPLATE).render(**ctx).splitlines()
    cfg = dict(config)
    cfg["grid"] = tile_grid(config, plan.triangular, plan.bm, plan.bn)
    cfg["shape"] = "tiled"
    cfg["block"] = [f"{nx}u", f"{ny}u", "1u"]
    qualifiers = f"{cu.GLOBAL} void {cu.LAUNCH_BOUNDS}({nx * ny})"
    return qualifiers, body, cfg


def _lines(printer: cu.StmtPrinter, stmts: tuple[ir.Assign, ...]) -> list[str]:
    """``stmts`` rendered as unindented C lines."""
    return printer.emit(stmts) if stmts else []


