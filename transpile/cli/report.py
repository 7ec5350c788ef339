"""``transpile compile --report FILE.html``: what the compiler made of each loop, and what it costs.

A self-contained HTML page (inline CSS, no script, nothing fetched) for one compiled file, built
from the compiler's own records, never from the emitted text:

* **Loops**: each loop of the C source (``file:line`` from the IR's ``loc``, and the line's text)
  next to what it became: a GPU kernel (its name and, for the loops the grid spreads, the grid axis),
  a loop inside each thread, a host loop of launches (one by one, one block for the whole loop, or
  fused time steps: :class:`transpile.cuda.HostLoopInfo`), or sequential code in one GPU thread;
* **Kernels**: each launch's form, block and grid (:class:`transpile.cuda.forms.LaunchPlan`, as the
  emitter recorded it: :func:`transpile.cuda.emit_with_facts`);
* **Transfers**: per array parameter, the element ranges the drop-in copies in and out, why
  (:func:`transpile.cuda.host.arrays`), and the array's size in bytes;
* **Resources**: ptxas's registers, shared memory, stack and spills per kernel for the target
  architecture (sm_90, or ``--arch``'s), and the theoretical occupancy they allow
  (:func:`transpile.cuda.arches.occupancy`);
* **Verification**: the verifier's verdict line and its stages; with ``--evolve``, how the search
  ranked the chosen schedule.

Times, bandwidth and the roofline need a GPU: ``bench/gpu.py`` measures them.
"""

from __future__ import annotations

import html
import math
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transpile import ir, toolchain
from transpile.cuda import arches


@dataclass
class KernelResources:
    """ptxas's report for one entry function."""

    name: str
    registers: int = 0
    smem: int = 0
    stack: int = 0
    spill_stores: int = 0
    spill_loads: int = 0


def kernel_resources(text: str) -> list[KernelResources]:
    """Per-entry resources from ``nvcc -Xptxas -v`` output (:func:`transpile.toolchain.parse_ptxas`)."""
    return [_resources(r) for r in toolchain.parse_ptxas(text)]


def _resources(r: Mapping[str, Any]) -> KernelResources:
    return KernelResources(r["kernel"], r.get("registers", 0), r.get("smem", 0), r.get("stack", 0),
                           r.get("spill_stores", 0), r.get("spill_loads", 0))


def ptxas(cu_text: str, arch: int, *, nvcc: str | None = None) -> tuple[str, str]:
    """``nvcc -arch=sm_ARCH -cubin -Xptxas -v`` on ``cu_text`` (the verifier's stage (b) command):
    ptxas's output, and an error ("" when it compiled)."""
    exe = nvcc or toolchain.nvcc()
    if exe is None:
        return "", "nvcc not found: no resource report"
    with tempfile.TemporaryDirectory() as d:
        cu = Path(d) / "k.cu"
        cu.write_text(cu_text)
        proc = subprocess.run([exe, f"-arch=sm_{arch}", "-cubin", "-Xptxas", "-v", "-o", str(Path(d) / "k.cubin"),
                               str(cu)], capture_output=True, text=True, timeout=600)
    out = (proc.stdout + proc.stderr).strip()
    return out, "" if proc.returncode == 0 else "nvcc failed: " + out[-500:]


# ---------------------------------------------------------------------------
# The page's facts


@dataclass
class LoopRow:
    """One source loop and what it became."""

    loc: str
    line: int
    text: str
    became: list[str]


@dataclass
class KernelRow:
    """One launch: its ``__global__`` function, form, block and grid, and the source lines it runs."""

    function: str
    name: str
    form: str
    block: str
    grid: str
    lines: str
    also: str = ""


@dataclass
class CopyRow:
    """One array parameter's transfers."""

    function: str
    array: str
    declared: str
    size: str
    copy_in: str
    copy_out: str
    why: str


@dataclass
class ResourceRow:
    """ptxas's report for one kernel and the occupancy it allows."""

    name: str
    registers: int
    smem: int
    stack: int
    spills: int
    threads: int | None
    occupancy: arches.Occupancy | None
    note: str = ""


@dataclass
class StageRow:
    """One verifier stage."""

    key: str
    title: str
    status: str
    message: str


@dataclass
class Verification:
    """One verifier report: the verdict line the compile printed, its stages, stage (c)'s shapes."""

    kernel: str
    verdict: str
    line: str
    stages: list[StageRow]
    shapes: list[str]
    notes: list[str]


@dataclass
class Page:
    """Everything the page shows."""

    source: str
    arch: int
    loops: list[LoopRow] = field(default_factory=list)
    kernels: list[KernelRow] = field(default_factory=list)
    copies: list[CopyRow] = field(default_factory=list)
    resources: list[ResourceRow] = field(default_factory=list)
    verification: list[Verification] = field(default_factory=list)
    verify_note: str = ""
    evolve: list[str] = field(default_factory=list)
    evolve_table: str = ""
    notes: list[str] = field(default_factory=list)
    ptxas: str = ""


def gather(*, source: Path, module: ir.Module, lowered: ir.Module, text: str, tiling: Any = None,
           reports: Sequence[tuple[str, Any]] = (), verify_note: str = "", arch: int = 0,
           evolve: Mapping[str, Any] | None = None, nvcc: str | None = None) -> Page:
    """The page of a compile: ``module`` the front end's, ``lowered`` the mapped module, ``text``
    the CUDA written, ``tiling`` the emitter's options it was emitted with; ``reports``: the
    verifier's reports, each with the verdict line the compile printed (``verify_note`` says why
    there are none); ``arch``: ``--arch`` (0: every architecture, reported at sm_90); ``evolve``:
    the search's ``measure``, ``summary``, ``table``, ``cache_hit`` and ``edited``."""
    from transpile import cuda

    target = arch or 90
    page = Page(source.name, target, verify_note=verify_note)
    emitted, facts = cuda.emit_with_facts(lowered, source=source.name, tiling=tiling, host=module)
    if emitted != text:
        page.notes.append("The CUDA written is not the schedule's own emission (an LLM's verified edit "
                          "under --evolve): the loops, kernels and transfers below are the schedule's.")
    lines = _SourceLines(source)
    threads: dict[str, tuple[int | None, str]] = {}
    for k, lk in zip(module.kernels, lowered.kernels):
        kf = facts[k.name]
        page.kernels += _kernels(k.name, kf, threads)
        page.loops += _loops(k, lk, kf, lines)
        page.copies += _copies(k, kf)
    _resources_of(page, text, target, reports, threads, nvcc)
    page.verification = [_verification(line, r) for line, r in reports]
    if evolve is not None:
        page.evolve, page.evolve_table = _evolve(evolve)
    return page


class _SourceLines:
    """The text of source lines, by ``Loc`` (files read once; the input's name as a fallback)."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.files: dict[str, list[str]] = {}

    def __call__(self, loc: ir.Loc) -> str:
        if loc.file not in self.files:
            path = Path(loc.file)
            if not path.is_file() and path.name == self.source.name:
                path = self.source
            try:
                self.files[loc.file] = path.read_text(errors="replace").splitlines()
            except OSError:
                self.files[loc.file] = []
        text = self.files[loc.file]
        return text[loc.line - 1].strip() if 0 < loc.line <= len(text) else ""


def _locs(node: ir.Node) -> set[tuple[str, int, int]]:
    """The positions of the statements under ``node`` (loops and launches aside)."""
    return {(n.loc.file, n.loc.line, n.loc.col) for n in ir.walk(node)
            if isinstance(n, (ir.Assign, ir.Decl, ir.Return, ir.If)) and n.loc is not None}


def _key(loc: ir.Loc | None) -> tuple[str, int, int] | None:
    return None if loc is None else (loc.file, loc.line, loc.col)


def _loops(k: ir.Kernel, lk: ir.Kernel, kf: Any, lines: _SourceLines) -> list[LoopRow]:
    """Each loop of the front end's kernel ``k`` and what it became in the lowered kernel ``lk``."""
    from transpile.cuda.forms import Form

    targets: list[tuple[str, set[tuple[str, int, int]], dict[tuple[str, int, int] | None, str]]] = []
    for li in kf.launches:
        roles: dict[tuple[str, int, int] | None, str] = {}
        serial = li.plan is not None and li.plan.form is Form.SERIAL
        for n in ir.walk(li.launch):
            if isinstance(n, ir.For) and n.loc is not None and _key(n.loc) not in roles:
                if serial:
                    roles[_key(n.loc)] = "sequential code in one GPU thread"
                elif n.par in ("x", "y", "z") and not n.reduce:
                    roles[_key(n.loc)] = f"grid axis {n.par}"
                elif n.reduce:
                    roles[_key(n.loc)] = f"parallel reduction ({li.shape})"
                else:
                    roles[_key(n.loc)] = "a loop inside each thread"
        targets.append((f"GPU kernel {li.kernel} ({li.shape})", _locs(li.launch), roles))
    for hl in kf.loops:
        loop = hl.plan.loop
        how = ["its kernels launched once per iteration"]
        if hl.oneblock is not None:
            how.insert(0, f"one block for the whole loop ({hl.oneblock}) when the sizes fit")
        if hl.steps is not None:
            how.insert(0, f"several time steps a launch ({hl.steps}) when the sizes allow")
        # Only the loop itself: the statements under it belong to its launches.
        targets.append(("host loop: " + "; else ".join(how), set(), {_key(loop.loc): ""}))
    rows = []
    for loop in (n for n in ir.walk(k) if isinstance(n, ir.For) and n.loc is not None):
        mine, key = _locs(loop), _key(loop.loc)
        inner = {_key(n.loc) for n in ir.walk(loop) if isinstance(n, ir.For) and n is not loop}
        became = []
        for name, locs, roles in targets:
            if key in roles:
                became.append(f"{name}: {roles[key]}" if roles[key] else name)
            elif mine & locs and not inner & set(roles):  # its statements, none of its inner loops
                became.append(f"{name}: merged into another loop (fused, interchanged or distributed)")
        if not became:
            became.append("no code of its own left (its statements were folded into others or removed)")
        assert loop.loc is not None
        rows.append(LoopRow(str(loop.loc), loop.loc.line, lines(loop.loc), became))
    return rows


def _trip(loop: ir.For, params: frozenset[str]) -> tuple[str, int | None]:
    """The trip count of a step-1 loop as C text over the parameters, and its value when constant."""
    from passes.accesses import affine
    from transpile.cuda.printer import ExprPrinter

    lo, hi = affine(loop.lo, params), affine(loop.hi, params)
    if lo is None or hi is None:
        p = ExprPrinter()
        zero = isinstance(loop.lo, ir.Const) and loop.lo.value == 0
        return (p(loop.hi) if zero else f"{p(loop.hi)} - ({p(loop.lo)})"), None
    coeffs = dict(hi.coeffs)
    for v, c in lo.coeffs:
        coeffs[v] = coeffs.get(v, 0) - c
    const = hi.const - lo.const
    terms = [(v if c == 1 else f"-{v}" if c == -1 else f"{c}*{v}") for v, c in sorted(coeffs.items()) if c]
    if not terms:
        return str(const), const
    text = " + ".join(terms).replace("+ -", "- ")
    if const:
        text += f" + {const}" if const > 0 else f" - {-const}"
    return text, None


def _blocks(trip: tuple[str, int | None], per: int) -> str:
    text, value = trip
    if value is not None:
        return str(max(0, math.ceil(value / per)))
    text = f"({text})" if " " in text else text
    return f"⌈{text} / {per or 'block'}⌉" if per != 1 else text


def _geometry(plan: Any) -> tuple[str, str]:
    """A launch's block and grid as its plan decides them (``×`` between axes, x first)."""
    from transpile.cuda import cols as cuda_cols
    from transpile.cuda import reduce as cuda_reduce
    from transpile.cuda.forms import Form, block_threads
    from transpile.cuda.printer import var_names

    block = "×".join(str(b) for b in block_threads(plan))
    chain = plan.chain
    trips = [_trip(loop, frozenset(var_names(loop.lo) | var_names(loop.hi))) for loop in chain]
    form = plan.form
    if form is Form.SERIAL or (form is Form.BLOCK and not chain):
        return block, "1"
    if form is Form.PLAIN:
        axes = {}
        for loop, t in zip(chain, trips):
            a = "xyz".index(loop.par)
            axes[a] = _blocks(t, plan.block[a] * (plan.rows if loop.par == "y" else plan.stream if loop.par == "z" else 1))
        grid = " × ".join(axes[a] for a in sorted(axes))
        if len(chain) == 1 and plan.block[0] % 64 == 0:
            block += " (halved, down to 32, while the grid has fewer blocks than the GPU has multiprocessors)"
            grid = _blocks(trips[0], 0) if trips[0][1] is None else grid
        if any(o.var in var_names(loop.lo) | var_names(loop.hi) for loop in chain for o in chain):
            grid += " (the largest over the outer loop's range: a triangle's bounding box)"
        return block, grid
    if form in (Form.TILED, Form.MMA):
        bm, bn = (plan.mma.shape[0], plan.mma.shape[1]) if form is Form.MMA else (plan.tile.bm, plan.tile.bn)
        return block, f"{_blocks(trips[-1], bn)} × {_blocks(trips[0], bm)} tiles of {bm}×{bn}"
    if form is Form.COLS:
        return block, _blocks(trips[0], cuda_cols.COLS)
    rows = " * ".join(f"({t})" if len(trips) > 1 else t for t, _ in trips)
    if form is Form.ROWS:
        return block, f"⌈{rows} / {cuda_reduce.THREADS['rows'] // cuda_reduce.WARP}⌉ (a warp a row)"
    if form is Form.ROWPROG:
        return block, (f"⌈{rows} / {cuda_reduce.THREADS['rowprog'] // cuda_reduce.WARP}⌉ (a warp a row) or {rows} "
                       "(a block a row, for few or long rows): chosen at run time")
    return block, "chosen at run time from the sizes and the number of multiprocessors"


def _kernels(function: str, kf: Any, threads: dict[str, tuple[int | None, str]]) -> list[KernelRow]:
    """Each launch of one C function as a kernel row; ``threads`` gets each ``__global__`` function's
    block size (None: set at run time) and a note."""
    from transpile.cuda.forms import Form

    out = []
    for li in kf.launches:
        plan = li.plan
        block, grid = _geometry(plan)
        srcs = sorted({n.loc.line for n in ir.walk(li.launch) if isinstance(n, ir.For) and n.loc is not None}
                      or {line for _, line, _ in _locs(li.launch)})
        folds = kf.folds.get(li.kernel, ())
        also = []
        threads[li.kernel] = (math.prod(li.block), "")
        for f in folds:
            if f.endswith("_fma") and plan.tile is not None:
                tx, ty = plan.tile.threads
                threads[f] = (tx * ty, "")
                also.append(f"{f}: the FMA kernel the host launches where tensor cores are not compiled in "
                            f"(block {tx}×{ty})")
            else:
                threads[f] = (None, "a further kernel of its launch's form")
                also.append(f"{f}: a further kernel of the {li.shape} form, launched after it")
        if plan.form is Form.CHAIN or plan.private is not None:
            threads[li.kernel] = (math.prod(li.block), "plus dynamic shared memory sized at run time")
        out.append(KernelRow(function, li.kernel, li.shape, block, grid,
                             ", ".join(f"line {n}" for n in srcs) or "-", "; ".join(also)))
    for hl in kf.loops:
        line = hl.plan.loop.loc.line if hl.plan.loop.loc is not None else 0
        if hl.oneblock is not None:
            threads[hl.oneblock] = (hl.oneblock_threads, "")
            out.append(KernelRow(function, hl.oneblock, "one-block loop", str(hl.oneblock_threads), "1",
                                 f"host loop at line {line}", "used when the sizes fit one block"))
        if hl.steps is not None:
            threads[hl.steps] = (None, "block set by the fused steps' tile")
            out.append(KernelRow(function, hl.steps, "fused time steps", "tile of the plan", "tiles of the domain",
                                 f"host loop at line {line}", "used when the sizes allow"))
    return out


_BYTES = {"bool": 1}


def _elem_bytes(t: ir.Scalar) -> int:
    digits = "".join(c for c in t.name if c.isdigit())
    return _BYTES.get(t.name, int(digits) // 8 if digits else 8)


def _copies(k: ir.Kernel, kf: Any) -> list[CopyRow]:
    """Each array parameter's transfers (the drop-in's copies)."""
    from transpile.cuda.printer import ExprPrinter, ctype

    out = []
    p = ExprPrinter()
    for param in k.params:
        if not isinstance(param.ty, ir.ArrayType) or param.name not in kf.copies:
            continue
        c = kf.copies[param.name]
        esize = _elem_bytes(param.ty.elem)
        dims = [d.value if isinstance(d, ir.Const) else None for d in param.ty.dims]
        declared = f"{ctype(param.ty.elem)} {param.name}" + "".join(f"[{p(d)}]" for d in param.ty.dims)
        if all(isinstance(d, int) for d in dims):
            size = f"{math.prod(dims) * esize:,} bytes"  # type: ignore[arg-type]
        else:
            size = " × ".join([*(f"({p(d)})" if not isinstance(d, ir.Var) else p(d) for d in param.ty.dims),
                               str(esize)]) + " bytes"

        out.append(CopyRow(k.name, param.name, declared, size,
                           _span(c["in_lo"], c["in_hi"], c.get("in_at", 0), size, esize),
                           _span(c["out_lo"], c["out_hi"], c.get("out_after", 0), size, esize), str(c["why"])))
    return out


def _span(lo: object, hi: object, at: object, size: str, esize: int) -> str:
    """One copy of an array: nothing, the whole array, or an element range ``[lo, hi)`` (C text), and
    its point (:func:`transpile.cuda.host.plan`; a C condition where the sizes may skip it)."""
    from transpile.cuda import host as cuda_host

    if (str(lo), str(hi)) == cuda_host.NOTHING or at == -1:
        return "nothing"
    where = f" (at point {at})" if isinstance(at, int) else f" (point: {at})"
    if (str(lo), str(hi)) == cuda_host.WHOLE:
        return f"the whole array: {size}" + where
    return f"elements [{lo}, {hi}) × {esize} bytes" + where


def _resources_of(page: Page, text: str, arch: int, reports: Sequence[tuple[str, Any]],
                  threads: Mapping[str, tuple[int | None, str]], nvcc: str | None) -> None:
    """ptxas's resources of every kernel for ``arch`` (the verifier's stage (b) record at sm_90 when
    it ran, else a compile of our own) and the occupancy they allow."""
    records = next((r.resources for _, r in reports if getattr(r, "resources", None)), None) if arch == 90 else None
    if records is None:
        page.ptxas, error = ptxas(text, arch, nvcc=nvcc)
        if error:
            page.notes.append(error)
        records = toolchain.parse_ptxas(page.ptxas)
    else:
        page.ptxas = "(from the verifier's stage (b): nvcc -arch=sm_90 -cubin -Xptxas -v)"
    order = {name: n for n, name in enumerate(threads)}
    for r in sorted(map(_resources, records), key=lambda r: (order.get(r.name, len(order)), r.name)):
        n, note = threads.get(r.name, (None, "not launched by this file's kernels' plans"))
        occ = arches.occupancy(arch, threads=n, registers=r.registers, smem=r.smem) if n else None
        page.resources.append(ResourceRow(r.name, r.registers, r.smem, r.stack, r.spill_stores + r.spill_loads,
                                          n, occ, note))


def _verification(line: str, r: Any) -> Verification:
    stages = [StageRow(s.key, s.title, s.status, s.message) for s in r.stages.values()]
    shapes = [f"{s['shape']} ({', '.join(f'{k}={v}' for k, v in s.get('sizes', {}).items())})"
              if s.get("sizes") else str(s["shape"]) for s in r.shapes if s.get("stage") == "c"]
    return Verification(r.kernel, r.verdict, line, stages, shapes, list(r.notes))


def _evolve(ev: Mapping[str, Any]) -> tuple[list[str], str]:
    how = ("measured: each candidate timed on this machine's GPU (verifier stage (f))" if ev.get("measure") == "gpu"
           else "estimated: no GPU here, candidates ranked by the structural cost model "
                "(transpile/search/costmodel.py)")
    lines = [str(ev.get("summary", "")), "Ranking: " + how]
    if ev.get("cache_hit"):
        lines.append("The choice came from the search cache (no search ran in this compile).")
    if ev.get("edited"):
        lines.append("The CUDA written is an LLM's verified edit of the chosen schedule's.")
    return lines, str(ev.get("table", ""))


# ---------------------------------------------------------------------------
# HTML

_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:90em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:3px 7px;vertical-align:top;text-align:left}
th{background:#f0f0f0}code,pre{font-family:ui-monospace,monospace;font-size:.92em}
td.num{text-align:right}.pass{color:#176f2c}.fail{color:#b00020}.other{color:#8a5a00}
ul.tight{margin:0;padding-left:1.2em}p.note{color:#555}"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], *, numeric: frozenset[int] = frozenset()) -> str:
    """A table; cells are HTML already (escaped by the caller)."""
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td class=\"num\">{c}</td>" if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>\n" for row in rows)
    return f"<table>\n<tr>{th}</tr>\n{body}</table>\n"


def _status(status: str) -> str:
    cls = "pass" if status == "pass" else "fail" if status == "fail" else "other"
    return f"<span class=\"{cls}\">{_e(status)}</span>"


def render(page: Page) -> str:
    """The HTML page of ``page``: self-contained, every text escaped."""
    out = ["<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
           f"<title>transpile report: {_e(page.source)}</title><style>{_CSS}</style></head><body>\n",
           f"<h1>transpile report: <code>{_e(page.source)}</code></h1>\n"]
    out += [f"<p class=\"note\">{_e(n)}</p>\n" for n in page.notes]
    out.append("<h2 id=\"loops\">Loops</h2>\n")
    out.append(_table(["source", "line", "what it became"], [
        [f"<code>{_e(r.loc)}</code>", f"<code>{_e(r.text)}</code>",
         "<ul class=\"tight\">" + "".join(f"<li>{_e(b)}</li>" for b in r.became) + "</ul>"] for r in page.loops]))
    out.append("<h2 id=\"kernels\">Kernels</h2>\n")
    out.append(_table(["function", "kernel", "launch form", "block (threads)", "grid (blocks)", "source", "also"], [
        [_e(k.function), f"<code>{_e(k.name)}</code>", _e(k.form), _e(k.block), f"<code>{_e(k.grid)}</code>",
         _e(k.lines), _e(k.also)] for k in page.kernels]))
    out.append("<h2 id=\"transfers\">Transfers</h2>\n<p>What the drop-in copies between host and GPU for each "
               "array parameter, per call (points: 0 before the first kernel, higher points between the "
               "kernels' phases: docs/dropin.md).</p>\n")
    out.append(_table(["function", "array", "declared", "size", "copied in", "copied out", "why"], [
        [_e(c.function), f"<code>{_e(c.array)}</code>", f"<code>{_e(c.declared)}</code>", _e(c.size),
         f"<code>{_e(c.copy_in)}</code>", f"<code>{_e(c.copy_out)}</code>", _e(c.why)] for c in page.copies]))
    out.append(f"<h2 id=\"resources\">Resources and occupancy, sm_{page.arch}</h2>\n")
    lim = arches.LIMITS[page.arch]
    out.append(f"<p>ptxas's report (<code>nvcc -arch=sm_{page.arch} -Xptxas -v</code>) and the theoretical "
               f"occupancy: resident warps over the {lim.threads // arches.WARP} an sm_{page.arch} multiprocessor "
               f"holds, from the registers ({lim.registers} a multiprocessor, allocated per warp in units of "
               f"{arches.REGISTER_UNIT}), the static shared memory ({lim.smem // 1024} KB a multiprocessor, "
               f"{lim.reserved_smem} bytes reserved a block), the block size and {lim.blocks} blocks at most.</p>\n")
    out.append(_table(["kernel", "registers", "shared bytes", "stack bytes", "spill bytes", "threads a block",
                       "occupancy", "bound by"], [
        [f"<code>{_e(r.name)}</code>", str(r.registers), str(r.smem), str(r.stack),
         str(r.spills) + (" <b>(spills)</b>" if r.spills else ""), "-" if r.threads is None else str(r.threads),
         "-" if r.occupancy is None else f"{r.occupancy.percent} ({r.occupancy.blocks} blocks)",
         _e(r.occupancy.limiter if r.occupancy is not None else "") + (f" {_e(r.note)}" if r.note else "")]
        for r in page.resources], numeric=frozenset({1, 2, 3, 4, 5})))
    out.append("<h2 id=\"verification\">Verification</h2>\n")
    if page.verify_note:
        out.append(f"<p>{_e(page.verify_note)}</p>\n")
    for v in page.verification:
        out.append(f"<p class=\"verdict\"><b>{_status(v.verdict)}</b>: <code>{_e(v.line)}</code></p>\n")
        out.append(_table(["stage", "", "status", "message"], [
            [f"({_e(s.key)})", _e(s.title), _status(s.status), _e(s.message)] for s in v.stages]))
        if v.shapes:
            out.append("<p>Shapes stage (c) tested: " + _e("; ".join(v.shapes)) + "</p>\n")
        out += [f"<p class=\"note\">note: {_e(n)}</p>\n" for n in v.notes]
    out.append("<h2 id=\"performance\">Performance</h2>\n")
    if page.evolve:
        out.append("<p>" + "<br>\n".join(_e(x) for x in page.evolve if x) + "</p>\n")
        if page.evolve_table:
            out.append(f"<details><summary>the search's candidates</summary><pre>{_e(page.evolve_table)}</pre>"
                       "</details>\n")
    out.append("<p>Measured times, bandwidth and the roofline: needs a GPU: bench/gpu.py (<code>python bench/gpu.py "
               "--kernels NAME --plot</code> times the kernel with CUDA events, checks it against gcc and draws "
               "it on the roofline of the measured copy bandwidth and DGEMM rate).</p>\n")
    out.append(f"<details><summary>ptxas output</summary><pre>{_e(page.ptxas)}</pre></details>\n")
    out.append("</body></html>\n")
    return "".join(out)
