"""The drop-in's host path: the C function as written, run on the host where the GPU cannot win.

A drop-in call pays the GPU's fixed costs (the first call's setup, the copies over the link, one
launch overhead per launch) before any kernel runs; for a small problem, or an inherently sequential
one (a host loop of thousands of tiny launches: durbin, trisolv), one CPU core is faster (issue 39:
jacobi-1d at LARGE took 18.1 ms through the drop-in and 0.48 ms on one core).  So, like OpenACC's
``if`` clause, each drop-in ``NAME`` holds the original function compiled as host code
(``static void NAME_host(...)``, printed from the front end's IR, before any pass), and decides at
every call, from the call's sizes, which path to take:

``gpu_s = setup + bytes / link + launches * launch + par_work / gpu_rate + serial_work / serial_rate``
``host_s = host_work / host_rate``

* ``bytes``: the call's copy-in and copy-out element ranges (the drop-in's own, clamped to the
  arrays) times the element size;
* ``setup``: :attr:`Model.first_call_s` on a call that creates the drop-in's state, else
  :attr:`Model.call_s`;
* ``launches``: the launches the mapped kernel makes (each ``Launch`` once per iteration of the host
  loops around it);
* ``par_work`` / ``serial_work``: statement executions inside launches, in parallel or (a launch the
  emitter made one thread: ``LaunchInfo.shape == "serial"``) one thread's chain;
* a host loop the emitter runs as one block (:mod:`transpile.cuda.oneblock`: durbin, trisolv,
  jacobi-1d) costs, where every launch in it has at most the cap's iterations at the loop's first
  and last iteration (the emitted test, in C), one launch, :attr:`Model.barrier_s` per launch per
  iteration and its statements at :attr:`Model.block_stmt_per_s`; otherwise launch by launch as
  above (before this, every one-block loop was priced launch by launch: thousands of launches that
  never happen, and trisolv and durbin went to the host at LARGE);
* ``host_work``: statement executions of the original function.

Both branches of an ``if`` count, except a data-dependent branch in a one-thread launch, which
counts as not taken: such a branch is a fallback (the min-plus closure's re-run of a step whose pivot
row or column moved, :mod:`passes.closure`), and counting it as always taken (n^3 statements on one
GPU thread) would send floyd-warshall to the host at every size.
Counts are C expressions in the scalar parameters: a loop's trip count, with every loop variable
around it at its midpoint (a triangular nest counts its average row), times the trips of the loops
around it.  Where a loop bound reads an array or a scalar the function assigns, there is no count
and no host path (the call always takes the GPU).  The constants are :data:`MODEL`, rendered as
``-D``-overridable macros (``TRANSPILE_HOST_*``) once per file; ``bench/side_by_side.sh`` and the
issue-39 table are where they are calibrated from (set them from a GPU run: the first-call setup
from ``TRANSPILE_DROPIN_TRACE``, the link from bench/dropin.py's floor, the host rate from the CPU
column).

``TRANSPILE_DROPIN_HOST`` in the environment (read at every call): ``1`` forces the host path,
``0`` the GPU, ``model`` the model's choice; unset, the model decides on a GPU and the simulator
takes the GPU path (a simulated call has no time to compare; the verifier runs both paths).
``extern "C" int NAME_on_host(<the C parameters>)`` says which path a call with these arguments
takes (1: the host), with the same rules.

No host path (the drop-in as before) for a function that returns a value, declares a local array
inside a loop, or whose array extents read something other than unassigned scalar parameters; a
local array of the function's body is allocated on the heap for the call.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

from transpile import ir

if TYPE_CHECKING:
    from transpile.cuda import _KernelEmitter
    from transpile.cuda.printer import ExprPrinter

ENV = "TRANSPILE_DROPIN_HOST"


@dataclass(frozen=True)
class Model:
    """The constants of the choice (one place; each a ``-D``-overridable macro in the .cu).

    From runs 69 and 70 (H100, one gcc -O3 core): a first call's set-up is now plain ``cudaMalloc``
    buffers, a pool, streams and events (under 0.5 ms) and, above 4 MiB, a small pinned ring (1.3-1.4
    ms): 2 ms is taken (it was 18 ms before the first-call paths, run 69); a first call's copies go
    through the driver's staging or the small ring, about 11 GB/s measured for pageable copies: 12 GB/s
    is taken (later calls stage faster, 24-41 GB/s, docs/dropin.md, so the model errs towards the
    host there).  One core ran the host path (run 70, alone on the machine) at 0.33 (mvt: 8e6
    statements in 23.9 ms, a column walk of a 32 MB matrix), 0.6 (bicg, gemver) and 1.4 (atax)
    statements per ns at LARGE, and jacobi-1d's cache-resident 2e6 in 1.2 ms: 0.5 per ns is taken
    (2 before, which sent those four to the host).  The GPU
    rates are deliberately low for the parallel part (a bandwidth-bound statement moves 8-24 bytes at
    ~2 TB/s) and one thread's chain.  Run 70 ran with the earlier 18 ms / 25 GB/s, which sent mvt,
    gemver and bicg (32 MB each, 4.6-12 ms with PPCG) to the host at 14-26 ms.

    Run 72 (H100, LARGE, after the first call's scratch left the pool): the fixed steps of a first
    call (allocation, frees, events) 0.3-0.5 ms: 1 ms is taken.  A one-block loop: jacobi-1d's 1000
    barriers and 2e6 statements in 0.63 ms, durbin's 8000 (reductions among them) and ~6e6 in 2.3 ms:
    0.2 us a barrier and 4e9 statements a second.  One core, arrays in its caches (32 KB in all):
    jacobi-1d 2e6 statements in 0.77 ms, durbin ~6e6 in 2.3 ms, about 2.6 per ns: 2.5 per ns is taken
    up to 1 MiB of arrays; streaming 32 MB, 0.27 (mvt) to 1.4 (atax) per ns: 0.5 stays.
    """

    host_stmt_per_s: float = 5e8  # one CPU core, statements of the original function per second, arrays streamed
    cached_stmt_per_s: float = 2.5e9  # the same, arrays of at most cache_bytes in all (in its caches)
    cache_bytes: float = 1 << 20  # arrays this small (in all) stay in one core's caches
    first_call_s: float = 1e-3  # a call that creates the drop-in's state (context-free setup)
    call_s: float = 60e-6  # a later call's fixed cost (pool, events, synchronisation)
    link_bytes_per_s: float = 12e9  # host <-> device on a first call (pageable, or the small ring)
    launch_s: float = 4e-6  # one launch, issued back to back
    gpu_stmt_per_s: float = 5e10  # statements under parallel loops, all SMs
    serial_stmt_per_s: float = 2e8  # one GPU thread's chain of dependent statements
    barrier_s: float = 0.2e-6  # a one-block loop: one launch's place in an iteration (a barrier, a reduction's tree)
    block_stmt_per_s: float = 4e9  # a one-block loop: statements under its launches, one block of threads

    def macros(self) -> list[tuple[str, str]]:
        """``(macro, value)`` of every constant, in declaration order."""
        return [(f"TRANSPILE_HOST_{f.name.upper()}", repr(float(getattr(self, f.name)))) for f in fields(self)]


MODEL = Model()


def host_path(em: _KernelEmitter, original: ir.Kernel | None, arrays: list[dict[str, object]]
              ) -> dict[str, object] | None:
    """The template context of ``em``'s host path, or None where it has none (module docstring)."""
    if original is None or original.ret is not None or em.k.ret is not None:
        return None
    top = [s for s in original.body if isinstance(s, ir.Alloc)]  # local arrays: on the heap for the call
    body_stmts = tuple(s for s in original.body if not isinstance(s, ir.Alloc))
    if any(isinstance(n, (ir.Alloc, ir.Return, ir.Launch)) for s in body_stmts for n in ir.walk(s)):
        return None
    if [p.name for p in original.params] != [p.name for p in em.k.params]:
        return None
    from transpile.cuda.printer import ExprPrinter, StmtPrinter, assigned, ctype

    params = {p.name for p in original.params if isinstance(p.ty, ir.Scalar) and p.ty.is_int}
    fixed = params - assigned(original)
    extents: dict[str, tuple[ir.Expr, ...]] = {}
    for p in (*original.params, *top):
        if isinstance(p.ty, ir.ArrayType):
            if any(not (ir.var_names(d) <= fixed) or _reads(d) for d in p.ty.dims):
                return None
            if len(p.ty.dims) > 1:
                extents[p.name] = p.ty.dims[1:]
    used = ir.identifiers(original)
    namer = em.namer.child()
    from transpile.cuda.printer import RESERVED

    rename = {n: em.rename.get(n) or namer.fresh(n + "_") for n in sorted(used & RESERVED)}
    expr = ExprPrinter(extents, rename)
    counts = _Counter(ExprPrinter(rename=em.rename), fixed)
    host_work = counts.total(body_stmts)
    gpu = _Counter(ExprPrinter(rename=em.rename), fixed,
                   {id(li.launch) for li in em.launch_log if li.shape == "serial"},
                   {id(lp.loop) for lp in em.plan.loops if lp.oneblock})
    if host_work is None or gpu.total(em.k.body) is None:
        return None
    body = StmtPrinter(expr, namer, depth=1)
    body.in_kernel = False
    body.function = em.name
    if em.tiling is None or em.tiling.reassociate:
        body.split_sums = sum_loops(original)
    for a in top:
        assert isinstance(a.ty, ir.ArrayType)
        elem = ctype(a.ty.elem)
        body.line(f"{elem} *{expr.ident(a.name)} = ({elem} *)transpile_host_alloc({em._size(a.ty)});")
    lines = body.emit(body_stmts)
    lines += [f"  free({expr.ident(a.name)});" for a in top]
    names = {"fn": f"{em.name}_host", "on_host": f"{em.name}_on_host", "warm": f"transpile_{em.name}_warm"}
    for n in names.values():
        assert n not in em.namer.taken, f"generated name {n} clashes with a name of the module"
    return {
        **names, "body": lines, "env": ENV, "macros": MODEL.macros(),
        "args": [em.ident(p.name) for p in em.k.c_params],
        "host_work": host_work, "gpu_s": gpu.seconds(),
        "bytes": " + ".join(_bytes(a) for a in arrays) or "0.0",
        "footprint": " + ".join(f"(double)({a['size']})" for a in arrays) or "0.0",
    }


def sum_loops(kernel: ir.Kernel) -> frozenset[int]:
    """Ids of ``kernel``'s loops the host path prints as partial sums (``StmtPrinter.split_sums``):
    a float ``+``/``-`` reduction (:func:`passes.reductions.analyze`: the only carried dependence is
    the accumulation, no one reads the partial sums) that is the loop's one statement, step 1, with
    a loop variable whose range a ``long long`` difference holds."""
    from passes import deps, reductions
    from transpile.ir import accum

    found = {r.loop for r in reductions.analyze(kernel) if r.op == "+"}
    if not found:
        return frozenset()
    ids = deps.loop_ids(kernel)
    out = set()
    for n in ir.walk(kernel):
        if not (isinstance(n, ir.For) and ids.get(id(n)) in found and n.step == 1 and len(n.body) == 1):
            continue
        a = accum.accumulation(n.body[0])
        if a is not None and a.op == "+" and a.target.ty.is_float and (n.ty.is_signed or n.ty.bits <= 32):
            out.add(id(n))
    return frozenset(out)


def _bytes(a: dict[str, object]) -> str:
    """C text of the bytes one array's copies move in a call."""
    count = f"(long long)({a['size']} / sizeof({a['ctype']}))"
    terms = []
    if a["copy_in"]:
        span = f"transpile_host_span({a['in_lo']}, {a['in_hi']}, {count})"
        terms.append(f"(({a['skip_in']}) ? 0.0 : {span})" if a["skip_in"] else span)
    if a["copy_out"]:
        terms.append(f"transpile_host_span({a['out_lo']}, {a['out_hi']}, {count})")
    if not terms:
        return "0.0"
    return f"({' + '.join(terms)}) * (double)sizeof({a['ctype']})"


def _sum(terms: list[str]) -> str:
    return " + ".join(terms) or "0.0"


def _reads(e: ir.Node) -> bool:
    return any(isinstance(n, (ir.Index, ir.Call)) for n in ir.walk(e))


class _Counter:
    """Statement executions of a body as C expressions (``double``) in the unassigned integer
    parameters ``fixed``: each loop variable at its loop's midpoint (module docstring).

    ``serial``: ids of the launches the emitter made one thread; ``oneblock``: ids of the host loops
    it planned as one block (:mod:`transpile.cuda.oneblock`), whose cost is a choice at run time
    (:meth:`seconds`, :meth:`_one_block`)."""

    def __init__(self, expr: ExprPrinter, fixed: set[str], serial: set[int] | None = None,
                 oneblock: set[int] | None = None) -> None:
        self.expr = expr
        self.fixed = fixed
        self.serial_launches = serial or set()  # ids of the launches that run one thread
        self.oneblock = oneblock or set()
        self.host: list[str] = []
        self.par: list[str] = []
        self.serial: list[str] = []
        self.launches: list[str] = []  # in a one-block loop: its barriers
        self.choices: list[str] = []  # one C expression (seconds) per one-block loop

    def total(self, body: tuple[ir.Stmt, ...]) -> str | None:
        """Every statement's count, summed; None where a loop bound cannot be counted."""
        try:
            self._block(body, [], {}, None)
        except _Uncountable:
            return None
        return _sum(self.host + self.par + self.serial)

    def seconds(self, per_launch: str = "TRANSPILE_HOST_LAUNCH_S", par_rate: str = "TRANSPILE_HOST_GPU_STMT_PER_S"
                ) -> str:
        """The GPU's time for what was counted (launches, parallel and one-thread statements, the
        one-block loops' choices) as a C expression over the model's macros; inside a one-block loop
        a launch costs a barrier and its statements run at one block's rate (``per_launch``, ``par_rate``)."""
        terms = [f"({_sum(self.launches)}) * {per_launch}"] if self.launches else []
        if self.par:
            terms.append(f"({_sum(self.par)}) / {par_rate}")
        if self.serial:
            terms.append(f"({_sum(self.serial)}) / TRANSPILE_HOST_SERIAL_STMT_PER_S")
        return " + ".join(terms + self.choices) or "0.0"

    def _block(self, body: tuple[ir.Stmt, ...], trips: list[str], mid: dict[str, ir.Expr],
               where: list[str] | None) -> None:
        for s in body:
            if isinstance(s, ir.Assign):
                (self.host if where is None else where).append(" * ".join(trips) or "1.0")
            elif isinstance(s, ir.If):
                if where is self.serial and (_reads(s.cond) or not ir.var_names(s.cond) <= self.fixed | set(mid)):
                    continue  # a one-thread launch's data-dependent branch: taken as not run (module docstring)
                self._block(s.then, trips, mid, where)
                self._block(s.orelse, trips, mid, where)
            elif isinstance(s, ir.Launch):  # parallel work, unless the emitter made it one thread
                self.launches.append(" * ".join(trips) or "1.0")
                self._block(s.body, trips, mid, self.serial if id(s) in self.serial_launches else self.par)
            elif isinstance(s, ir.For) and id(s) in self.oneblock:
                self._one_block(s, trips, mid)
            elif isinstance(s, ir.For):
                count, inner = self._trips(s, mid)
                self._block(s.body, [*trips, count], inner, where)

    def _trips(self, s: ir.For, mid: dict[str, ir.Expr]) -> tuple[str, dict[str, ir.Expr]]:
        """``s``'s trip count (C) with the loops around it at ``mid``, and ``mid`` with ``s``'s midpoint."""
        lo, hi = ir.substitute(s.lo, mid), ir.substitute(s.hi, mid)
        if not (ir.var_names(lo) | ir.var_names(hi)) <= self.fixed or _reads(lo) or _reads(hi):
            raise _Uncountable
        count = f"transpile_host_trips((double)({self.expr(lo)}), (double)({self.expr(hi)}), {abs(s.step)}.0)"
        half = ir.Binary("/", ir.Binary("-", hi, lo, s.ty), ir.Const(2, s.ty), s.ty)
        return count, {**mid, s.var: ir.Binary("+", lo, half, s.ty)}

    def _iterations(self, launch: ir.Launch, mid: dict[str, ir.Expr]) -> str:
        """C: the launch's iterations (its par loops' trips, at ``mid``) are at most the one-block cap."""
        from transpile.cuda.oneblock import MAX_ITERATIONS
        from transpile.cuda.printer import par_chain

        counts = []
        for lp in par_chain(launch):
            count, mid = self._trips(lp, mid)
            counts.append(count)
        return f"{' * '.join(counts) or '1.0'} <= {MAX_ITERATIONS}.0"

    def _one_block(self, s: ir.For, trips: list[str], mid: dict[str, ir.Expr]) -> None:
        """A host loop the emitter runs as one block when every launch's iterations are at most the
        cap (:mod:`transpile.cuda.oneblock`): one launch and a barrier per launch per iteration, the
        statements at one block's rate; otherwise launch by launch.  The choice is made in C."""
        apart = _Counter(self.expr, self.fixed, self.serial_launches)
        apart._block((s,), trips, mid, None)
        one = _Counter(self.expr, self.fixed, self.serial_launches)  # its launches count as barriers
        count, inner = self._trips(s, mid)
        one._block(s.body, [*trips, count], inner, None)
        # The cap holds at the loop's first and last iteration (as the emitted test checks it).
        lo, hi = ir.substitute(s.lo, mid), ir.substitute(s.hi, mid)
        ends = (lo, ir.Binary("-", hi, ir.Const(1, s.ty), s.ty))
        small = [self._iterations(st, {**mid, s.var: end}) for st in s.body if isinstance(st, ir.Launch)
                 for end in ends]
        once = " * ".join(trips) or "1.0"
        block = f"({once}) * TRANSPILE_HOST_LAUNCH_S"
        inside = one.seconds("TRANSPILE_HOST_BARRIER_S", "TRANSPILE_HOST_BLOCK_STMT_PER_S")
        block += f" + {inside}" if inside != "0.0" else ""
        cond = " && ".join(f"({c})" for c in small) or "true"
        self.choices.append(f"(({cond}) ? ({block}) : ({apart.seconds()}))")


class _Uncountable(Exception):
    """A loop bound the counts cannot express."""


def estimates(cu: str, func: str, sizes: dict[str, int], defines: list[str], work: Path
              ) -> tuple[float, float, float, int]:
    """``(host_s, gpu_s first call, gpu_s later call, choice)`` of drop-in ``func``'s model in the
    emitted ``cu`` at ``sizes`` (integer parameter name -> value; other scalars 1.0, arrays NULL: the
    choice reads the sizes only): its decision function cut out of the file, compiled alone with g++
    in ``work`` (``defines``: ``MACRO=VALUE`` overrides of :data:`MODEL`) and run with the model's
    choice (bench/host_model.py's table, the tests of the model)."""
    def piece(start: str, end: str) -> str:
        i = cu.index(start)
        return cu[i:cu.index(end, i) + len(end)]

    on_host = piece(f'extern "C" int {func}_on_host(', "\n}\n")
    sig = re.search(rf"{func}_on_host\((.*?)\)", on_host)
    assert sig is not None, f"no {func}_on_host in the file"
    args = []
    for p in sig.group(1).split(","):
        ty, name = p.strip().rsplit(" ", 1)
        pointer = name.startswith("*") or ty.endswith("*")
        args.append("NULL" if pointer else str(sizes[name]) if name in sizes else "1.0")
    warm = f"transpile_{func}_warm"
    src = "\n".join([piece("[[maybe_unused]] static size_t transpile_extent(", "\n}\n"),
                     piece("#ifndef TRANSPILE_DROPIN_HOST_MODEL", "#endif  // TRANSPILE_DROPIN_HOST_MODEL"),
                     piece(f"static bool {warm}", ";"), on_host])
    src = src.replace("return transpile_host_choice(host_s, gpu_s)", "return est_choice(host_s, gpu_s)")
    spy = ("static double est_host_s, est_gpu_s;\n"
           "static bool est_choice(double h, double g) { est_host_s = h; est_gpu_s = g; return transpile_host_choice(h, g); }\n")
    main = (f"int main(void) {{ int c = {func}_on_host({', '.join(args)}); double first = est_gpu_s;\n"
            f"  {warm} = true; {func}_on_host({', '.join(args)});\n"
            f'  printf("%.6g %.6g %.6g %d\\n", est_host_s, first, est_gpu_s, c); return 0; }}\n')
    head = "#include <limits.h>\n#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
    c = work / f"{func}_model.cc"
    c.write_text(head + src.replace('extern "C" int', spy + 'extern "C" int', 1) + main)
    exe = work / f"{func}_model"
    subprocess.run(["g++", "-std=c++17", "-O1", *[f"-D{d}" for d in defines], str(c), "-o", str(exe)],
                   check=True, capture_output=True, timeout=120)
    env = {**os.environ, ENV: "model"}
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True, env=env, timeout=60).stdout.split()
    return float(out[0]), float(out[1]), float(out[2]), int(out[3])
