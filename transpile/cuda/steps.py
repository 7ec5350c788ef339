"""Fused time steps: a host loop of stencil launches as one kernel a step, each block on a tile plus halos.

A time loop of stencil launches (``for t { launch; launch; ... }``) reads and writes every array
once per launch.  fdtd-2d's step is four launches: ``ey`` (boundary row), ``ey``, ``ex`` from
``hz``, then ``hz`` from the new ``ex`` and ``ey``: 10 words a point a step, where the step's own
compulsory traffic is 6 (``ex``, ``ey``, ``hz`` read and written once).  A grid-wide barrier
between the launches is what costs: ``hz[i][j]`` needs ``ex[i][j + 1]`` and ``ey[i + 1][j]``,
which other blocks write.

Here one kernel runs the whole step.  A block owns an output tile of the written arrays and
computes every launch over the tile *plus the halo* the later launches read (overlapped tiling:
the halo's values are computed again by the neighbouring blocks, never exchanged):

1. it loads each written array's box (tile + that array's halo) into shared memory from the
   step's *input* buffer;
2. runs the launches in program order, each over its box (tile + the halo the launches after
   it read of its array) clipped to its own iteration domain, reading written arrays from
   shared memory and the others from global memory, a barrier after each;
3. stores each written array's tile into the step's *output* buffer.

Input and output buffers alternate between the caller's arrays and scratch of the same size
(ping-pong), so no block reads what another block writes in the same kernel; after the loop an
odd number of steps leaves the results in the scratch, which is copied back once.

**Halos** (:func:`plan`): backwards over the launches, starting from the tile itself for every
written array; a launch that writes ``W`` over box ``R`` and reads ``B`` at offset ``d`` needs
``B`` over ``R + d`` before it.  The offsets are constants: every subscript of a written array,
in every launch, is its target's subscript plus a constant (``hz[i - 1][j]`` against
``ey[i][j]``).  Elements outside a launch's domain keep their previous values, which are
already in the box (loaded, or computed over a box at least as large by an earlier launch).

**Which loops**: innermost host loops whose body is two or more launches, each a perfect nest of
``par`` loops (rectangular bounds: no par variable in another's) around one assignment to an
element of an array of the same shape as the other targets (rank 1 to 3), each par variable in
exactly one target subscript with coefficient 1; reads of written arrays at constant offsets
from the target (a launch reads its own target at offset 0 only); no device scalars.

**Several steps a kernel** (:data:`MAX_STEPS`): the step's launches repeated with the host variable
advanced, the halos grown backwards over all of them (the loop's last kernel runs only the steps
left); as many as fit :data:`SMEM_LIMIT`, and only where the traffic drops enough: a kernel moves
``2 W - O + s R`` words a point (W written arrays, O of them written whole before any read so that
interior tiles skip their load, R other full-rank arrays read each of its s steps) against ``s`` times
the launches' words read and written, and must stay under :data:`TRAFFIC` of it (fdtd-2d at one step:
6 against 10; jacobi-2d: 3 against 4 at one step, refused, 3 against 12 at three).

**When**: the host tries the fused path first (after a one-block loop, which small sizes take);
``TRANSPILE_STEPS=0`` in the environment, or scratch it cannot allocate, runs the launches one
by one instead (the verifier's stage (c) runs each shape that way too).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from transpile import ir

if TYPE_CHECKING:
    from transpile.cuda import _KernelEmitter
    from transpile.cuda.printer import ExprPrinter

ENV = "TRANSPILE_STEPS"
"""Set to 0 in the environment to launch a fused loop's launches one by one."""
SMEM_LIMIT = 48 * 1024
"""Most bytes of shared memory the boxes of one block may take."""
STEPS: int | None = None
"""Time steps a fused kernel runs (its halos grow with each); None: the most of :data:`MAX_STEPS` that fit."""
MAX_STEPS = {1: 16, 2: 3, 3: 3}
"""Most time steps a kernel per array rank.  Measured on an H100 (bench/results/h100_run56.md, one child,
against the launches one by one): fdtd-2d at 8192 x 8193 41.2 ms as launches, 26.6 fused one step a
kernel, 17.2 two, 15.3 three (16 x 64 tiles); jacobi-2d at 8192^2 15.7 ms as launches, 16.4 / 12.3 / 12.8
with one, two, three steps (three faster at EXTRALARGE: 72.7 against 77.9 ms); jacobi-1d at 2^25 19.8 ms
as launches, 15.5 one step, 6.17 four.  On the H200 (bench/results/h200_run57_steps.md): fdtd-2d 30.9 ms
as launches, 14.9 three steps, 16.2 four; jacobi-2d at EXTRALARGE 81.0 as launches, 77.1 / 72.5 / 74.3 /
78.5 with two to five steps; jacobi-1d at 2^25 16.2 as launches, 5.19 four steps, 4.36 eight, 3.89
sixteen."""
TRAFFIC = 0.75
"""The fused kernel's words a point a step must be under this share of the launches' (jacobi-2d one step a
kernel, 3 words against 4, measured slower than its launches: 18.4 against 15.7 ms)."""
TILES = {1: (2048,), 2: (16, 64), 3: (4, 8, 32)}
"""A block's output tile per array rank (outermost axis first); 16 x 64 against 8 x 64, fdtd-2d one step a
kernel: 25.2 against 26.6 ms, two steps 17.2 against 20.5 (H100, run 56)."""
BLOCKS = {1: (256, 1, 1), 2: (32, 8, 1), 3: (32, 4, 2)}
"""Threads per block (x, y, z) per array rank: x along the last axis, y the one before, z the first."""


@dataclasses.dataclass(frozen=True)
class Phase:
    """One launch of the step: its par loops (outermost first), its assignment, and where it writes."""

    chain: tuple[ir.For, ...]
    stmt: ir.Assign
    array: str
    axis_var: tuple[str | None, ...]  # per axis of the target: its par variable, or None (a fixed subscript)
    box: tuple[tuple[int, int], ...]  # per axis: (before, after) the tile this launch computes
    step: int = 0  # which of the kernel's time steps (0: the first; its host variable is the loop's plus step x stride)


@dataclasses.dataclass(frozen=True)
class Plan:
    """The fused kernel's shape: the written arrays' halos and the launches in order."""

    rank: int
    written: tuple[str, ...]  # in first-write order
    halo: dict[str, tuple[tuple[int, int], ...]]  # per written array: the (before, after) box of its buffer
    phases: tuple[Phase, ...]
    tile: tuple[int, ...]
    steps: int = 1  # time steps a kernel runs (the last kernel of a loop may run fewer)
    overwritten: dict[str, int] = dataclasses.field(default_factory=dict)  # array -> the phase that writes its
    # whole box before any read where the tile lies inside that phase's domain (no load needed there)

    def box_shape(self, array: str) -> tuple[int, ...]:
        return tuple(t + b + a for t, (b, a) in zip(self.tile, self.halo[array]))


def plan(emitter: _KernelEmitter, loop: ir.For, steps: int | None = None) -> Plan | None:
    """The fused form of host loop ``loop``, ``steps`` time steps a kernel (default :data:`STEPS`, else the
    most up to :data:`MAX_STEPS` whose boxes fit), or None when it does not qualify (module docstring)."""
    found = _stencil_launches(emitter, loop)
    if found is None:
        return None
    launches, written, rank = found
    steps = STEPS if steps is None else steps
    for s in (steps,) if steps is not None else range(MAX_STEPS[rank], 0, -1):
        p = _plan(emitter, loop, launches, written, rank, s)
        if p is not None:
            return p
    return None


def _stencil_launches(emitter: _KernelEmitter, loop: ir.For
                      ) -> tuple[list[tuple[tuple[ir.For, ...], ir.Assign]], tuple[str, ...], int] | None:
    """``(launches, written, rank)``: each launch of ``loop``'s body as (par loops, assignment), the arrays
    they write in first-write order, and those arrays' rank; None where the body is not stencil launches
    of one array shape (module docstring)."""
    from transpile.cuda.printer import is_host_loop, par_chain, var_names

    if len(loop.body) < 2 or loop.step == 0 or (loop.step < 0 and not loop.ty.is_signed):
        return None
    arrays = {**emitter.arrays, **emitter.allocs}
    launches: list[tuple[tuple[ir.For, ...], ir.Assign]] = []
    for s in loop.body:
        if not isinstance(s, ir.Launch) or is_host_loop(s):
            return None
        chain = tuple(par_chain(s))
        if not chain or len(s.body) != 1 or s.body[0] is not chain[0]:
            return None
        for outer, inner in zip(chain, chain[1:]):
            if outer.body != (inner,):
                return None
        if len(chain[-1].body) != 1 or not isinstance(chain[-1].body[0], ir.Assign):
            return None
        stmt = chain[-1].body[0]
        if not isinstance(stmt.target, ir.Index) or stmt.target.array not in arrays:
            return None
        pars = {lp.var for lp in chain}
        if any(lp.step != 1 or (var_names(lp.lo) | var_names(lp.hi)) & pars for lp in chain):
            return None
        if var_names(s) & set(emitter.device_scalars):
            return None
        launches.append((chain, stmt))
    written = tuple(dict.fromkeys(st.target.array for _, st in launches))  # type: ignore[union-attr]
    shape = arrays[written[0]]
    rank = len(shape.dims)
    if rank not in TILES or any(n in emitter.hoisted for n in written):
        return None
    # The same extents after the first (the flattening's); the first may differ (a flat pointer's is the
    # rows its references reach: fdtd-2d's ey[0][j] makes ey's max(1, nx)), passed by value per array.
    inner = [emitter.expr(d) for d in shape.dims[1:]]
    if any(len(arrays[n].dims) != rank or [emitter.expr(d) for d in arrays[n].dims[1:]] != inner for n in written):
        return None
    return launches, written, rank


def _plan(emitter: _KernelEmitter, loop: ir.For, launches: list[tuple[tuple[ir.For, ...], ir.Assign]],
          written: tuple[str, ...], rank: int, steps: int) -> Plan | None:
    """The plan of :func:`plan` at ``steps`` time steps a kernel, or None (offsets, traffic, shared memory)."""
    from passes import accesses
    from transpile.cuda.printer import var_names

    arrays = {**emitter.arrays, **emitter.allocs}
    shape = arrays[written[0]]

    # Per launch: which par variable each target subscript follows, and every read of a written array as
    # constant offsets from the target.
    if steps > 1:  # the body again for each later step, the host variable advanced (t + s x stride)
        base, launches = launches, list(launches)
        for k in range(1, steps):
            at = {loop.var: ir.binary("+", ir.Var(loop.var, loop.ty), ir.const(k * loop.step, loop.ty))}
            launches += [(tuple(ir.substitute(lp, at) for lp in chain), ir.substitute(stmt, at))
                         for chain, stmt in base]
    infos: list[tuple[tuple[ir.For, ...], ir.Assign, tuple[str | None, ...], list[tuple[str, tuple[int, ...]]]]] = []
    for chain, stmt in launches:
        target = stmt.target
        assert isinstance(target, ir.Index)
        pars = {lp.var for lp in chain}
        names = var_names(stmt) | pars
        forms = [accesses.affine(ix, names) for ix in target.indices]
        if any(f is None for f in forms):
            return None
        axis_var: list[str | None] = []
        for f in forms:
            assert f is not None
            vs = [v for v in pars if f.coeff(v)]
            if len(vs) > 1 or (vs and f.coeff(vs[0]) != 1):
                return None
            axis_var.append(vs[0] if vs else None)
        if sorted(v for v in axis_var if v is not None) != sorted(pars):
            return None
        reads: list[tuple[str, tuple[int, ...]]] = []
        for node in ir.walk(stmt.value):
            if isinstance(node, ir.Index) and node.array in written:
                if any(isinstance(n, ir.Index) for ix in node.indices for n in ir.walk(ix)):
                    return None
                offs = []
                for ix, f in zip(node.indices, forms):
                    g = accesses.affine(ix, names)
                    if g is None or f is None:
                        return None
                    if g.coeffs != f.coeffs:
                        return None  # not a constant offset from the target's element
                    offs.append(g.const - f.const)
                if node.array == target.array and any(offs):
                    return None  # a launch reading its own target elsewhere than the element it writes
                reads.append((node.array, tuple(offs)))
        infos.append((chain, stmt, tuple(axis_var), reads))

    # The traffic test: one pass a step against the launches' passes (full-rank launches only).
    others = {n for chain, stmt, _, _ in infos for n in ir.array_uses(stmt)
              if n not in written and len(chain) == rank and len(arrays.get(n, shape).dims) == rank}
    # An array whose first use is a launch that writes it without reading it (jacobi-2d's B) needs no
    # load where that launch's domain covers the array's box: interior tiles skip it.
    overwritten: dict[str, int] = {}
    for n in written:
        first = next(k for k, (_c, st, _v, rd) in enumerate(infos)
                     if st.target.array == n or any(a == n for a, _ in rd))  # type: ignore[union-attr]
        _c, st, axis_var, rd = infos[first]
        if st.target.array == n and None not in axis_var and not any(  # type: ignore[union-attr]
                isinstance(x, ir.Index) and x.array == n for x in ir.walk(st.value)):
            overwritten[n] = first
    fused = 2 * len(written) - len(overwritten) + steps * len(others)
    apart = sum(r + w for chain, stmt, _, _ in infos if len(chain) == rank  # words read and written
                for r, w in ir.array_uses(stmt).values())
    if fused >= TRAFFIC * apart:  # per kernel: ``steps`` steps' launches against one pass over the written arrays
        return None

    # Halos, backwards: each written array is needed over its tile after the step.
    need = {n: [(0, 0)] * rank for n in written}
    boxes: list[tuple[tuple[int, int], ...]] = []
    for _chain, stmt, _axis_var, reads in reversed(infos):
        target = stmt.target
        assert isinstance(target, ir.Index)
        box = tuple(need[target.array])
        boxes.append(box)
        for arr, offs in reads:
            need[arr] = [(max(b, bb - d), max(a, aa + d)) for (b, a), (bb, aa), d in zip(need[arr], box, offs)]
    boxes.reverse()
    tile = TILES[rank]
    halo = {n: tuple(need[n]) for n in written}
    smem = sum(math.prod(t + b + a for t, (b, a) in zip(tile, halo[n])) * arrays[n].elem.bits // 8 for n in written)
    if smem > SMEM_LIMIT:
        return None
    per = len(infos) // steps
    phases = tuple(Phase(chain, stmt, stmt.target.array, axis_var, box, n // per)  # type: ignore[union-attr]
                   for n, ((chain, stmt, axis_var, _), box) in enumerate(zip(infos, boxes)))
    return Plan(rank, written, halo, phases, tile, steps, overwritten)


def build(emitter: _KernelEmitter, loop: ir.For, p: Plan, scope: dict[str, ir.Scalar], pad: str
          ) -> tuple[dict[str, object], list[str], list[str], str]:
    """``(kernel, setup, loop_lines, ok)``: the fused kernel of host loop ``loop`` (plan ``p``), the host lines
    that decide ``ok`` and allocate the scratch, and the lines of the fused host loop (run when ``ok``;
    else the caller's launch-by-launch loop).  ``scope``: the host locals visible at the loop; ``pad``: the
    host lines' indentation."""
    from transpile.cuda.printer import (
        GLOBAL,
        INDEX_TYPE,
        LAUNCH_BOUNDS,
        ExprPrinter,
        KernelParam,
        StmtPrinter,
        ctype,
        var_names,
    )

    arrays = {**emitter.arrays, **emitter.allocs}
    namer = emitter.namer.child()
    expr = emitter.expr
    m = expr.mark
    rank, tile = p.rank, p.tile
    block = BLOCKS[rank]
    dim_of = ["xyz"[rank - 1 - a] for a in range(rank)]  # the thread/grid dimension of each axis
    shape = arrays[p.written[0]]

    # -- parameters: scalars the launches read (their bounds, bodies, and the arrays' extents), read-only
    # arrays, and each written array's input and output buffers.
    pars = {lp.var for ph in p.phases for lp in ph.chain}
    uses = ir.array_uses(tuple(ph.stmt for ph in p.phases))
    referenced: set[str] = set()
    for ph in p.phases:
        referenced |= var_names(ph.stmt)
        for lp in ph.chain:
            referenced |= var_names(lp.lo) | var_names(lp.hi)
    for d in shape.dims[1:]:
        referenced |= var_names(d)
    for a in uses:
        referenced |= emitter.extent_vars.get(a, set())
    referenced -= pars
    params: list[KernelParam] = []
    args: list[str] = []  # host expressions; written arrays' as placeholders filled per step
    cur: dict[str, str] = {}  # host: the step's input buffer of each written array
    nxt: dict[str, str] = {}  # host: its output buffer
    buf: dict[str, tuple[str, str]] = {}  # kernel: the input and output buffer parameters
    candidates: list[tuple[str, ir.Type]] = [(q.name, q.ty) for q in emitter.k.params]
    candidates += [*emitter.allocs.items(), *emitter.host_decls.items(), *scope.items(), (loop.var, loop.ty)]
    seen: set[str] = set()
    for var, ty in candidates:
        if var in seen:
            continue
        seen.add(var)
        if isinstance(ty, ir.ArrayType) and var in uses:
            ident = emitter.ident(var)
            if var in p.written:
                src, dst = buf[var] = namer.fresh(f"{var}_in"), namer.fresh(f"{var}_out")
                params += [KernelParam(ctype(ty.elem), src, pointer=True, const=True, restrict=True),
                           KernelParam(ctype(ty.elem), dst, pointer=True, restrict=True)]
                cur[var], nxt[var] = emitter.host_namer.fresh(f"{var}_cur"), emitter.host_namer.fresh(f"{var}_next")
                args += [cur[var], nxt[var]]
            else:
                params.append(KernelParam(ctype(ty.elem), ident, pointer=True, const=True, restrict=True))
                args.append(ident)
                for hname, _dim in emitter.hoisted.get(var, []):
                    params.append(KernelParam(INDEX_TYPE, hname))
                    args.append(hname)
        elif isinstance(ty, ir.Scalar) and var in referenced:
            params.append(KernelParam(ctype(ty), emitter.ident(var)))
            args.append(emitter.ident(var))

    # -- the kernel body
    body: list[str] = []
    smem = {n: namer.fresh(f"{n}_s") for n in p.written}
    size = {n: p.box_shape(n) for n in p.written}
    for n in p.written:
        body.append(f"  {m('shared', f'__shared__ {ctype(arrays[n].elem)} {smem[n]}[{math.prod(size[n])}];')}"
                    "  // its tile and halo, "
                    + " x ".join(map(str, size[n])))
    rows = {n: namer.fresh(f"{n}_rows") for n in p.written}  # each written array's first extent, by value
    params += [KernelParam(INDEX_TYPE, rows[n]) for n in p.written]
    args += [expr.cast_to(arrays[n].dims[0], INDEX_TYPE) for n in p.written]
    dn = [namer.fresh(f"d{a}") for a in range(rank)]
    nt = [namer.fresh(f"tiles{a}") for a in range(rank)]
    for a in range(rank):
        if a == 0:
            most = rows[p.written[0]]
            for n in p.written[1:]:
                most = f"{most} > {rows[n]} ? {most} : {rows[n]}"
            body.append(f"  const {INDEX_TYPE} {dn[a]} = {most};  // the tiles cover every written array")
        else:
            body.append(f"  const {INDEX_TYPE} {dn[a]} = {expr.cast_to(shape.dims[a], INDEX_TYPE)};")
        body.append(f"  const {INDEX_TYPE} {nt[a]} = ({dn[a]} + {tile[a] - 1}) / {tile[a]};")
    tid, nthr = namer.fresh("tid"), namer.fresh("nthreads")
    if any(None in ph.axis_var for ph in p.phases):  # a launch with fewer par loops than axes: one flat range
        body.append(f"  const int {tid} = (int)"
                    f"{m('index', '(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))')};")
        body.append(f"  const int {nthr} = (int){m('index', '(blockDim.x * blockDim.y * blockDim.z)')};")
    kt = [namer.fresh(f"k{a}") for a in range(rank)]
    org = [namer.fresh(f"o{a}") for a in range(rank)]
    pad_k = "  "
    for a in range(rank):
        g = dim_of[a]
        body.append(f"{pad_k}for ({INDEX_TYPE} {kt[a]} = {m('index', f'blockIdx.{g}')}; {m('guard', f'{kt[a]} < {nt[a]}')}; "
                    f"{kt[a]} += {m('index', f'gridDim.{g}')}) {{")
        pad_k += "  "
    ind = pad_k
    for a in range(rank):
        body.append(f"{ind}const {INDEX_TYPE} {org[a]} = {kt[a]} * {tile[a]};  // the tile's first element, axis {a}")
    base = {n: [namer.fresh(f"{n}_b{a}") for a in range(rank)] for n in p.written}
    for n in p.written:
        for a in range(rank):
            body.append(f"{ind}const {INDEX_TYPE} {base[n][a]} = {org[a]} - {p.halo[n][a][0]};")

    def flat(idx: list[str], extents: list[str]) -> str:
        acc = idx[0]
        for i, e in zip(idx[1:], extents):
            acc = f"({acc}) * {e} + {i}"
        return acc

    def nest(ranges: list[tuple[str, str]], names: list[str], inner: list[str], pad0: str) -> list[str]:
        """Loops over a box, axis 0 outermost, each axis strided by its thread dimension."""
        out: list[str] = []
        q = pad0
        for a, ((lo, hi), v) in enumerate(zip(ranges, names)):
            g = dim_of[a]
            out.append(f"{q}for ({INDEX_TYPE} {v} = {lo} + {m('index', f'threadIdx.{g}')}; {m('guard', f'{v} < {hi}')}; "
                       f"{v} += {m('index', f'blockDim.{g}')}) {{")
            q += "  "
        out += [q + x for x in inner]
        for _ in ranges:
            q = q[:-2]
            out.append(f"{q}}}")
        return out

    # Loads: each written array's box, clipped to the array.
    ls = [namer.fresh(f"l{a}") for a in range(rank)]
    for n in p.written:
        b = base[n]
        ext = [rows[n], *dn[1:]]
        ranges = [(f"({b[a]} < 0 ? -{b[a]} : 0LL)",
                   f"({ext[a]} - {b[a]} < {size[n][a]} ? {ext[a]} - {b[a]} : {size[n][a]}LL)") for a in range(rank)]
        src = flat([f"{b[a]} + {ls[a]}" for a in range(rank)], dn[1:])
        dst = flat(ls, [str(x) for x in size[n][1:]])
        body.append(f"{ind}// {n}: the step's input over the tile and its halo")
        load = nest(ranges, ls, [f"{smem[n]}[{dst}] = {buf[n][0]}[{m('index', src)}];"], ind)
        if n in p.overwritten:  # launch k writes the whole box first where its domain covers it: load elsewhere
            ph = p.phases[p.overwritten[n]]
            assert isinstance(ph.stmt.target, ir.Index)
            inside = []
            for a in range(rank):
                v = ph.axis_var[a]
                assert v is not None
                lp = next(x for x in ph.chain if x.var == v)
                c0 = _offset(expr, ph.stmt.target.indices[a], v)
                c0 = f" - ({c0})" if c0 else ""
                inside.append(f"{b[a]}{c0} >= {expr.cast_to(lp.lo, INDEX_TYPE)} && "
                              f"{b[a]} + {size[n][a]}{c0} <= {expr.cast_to(lp.hi, INDEX_TYPE)}")
            body.append(f"{ind}if ({m('guard', '!(' + ' && '.join(inside) + ')')}) {{  "
                        f"// else launch {p.overwritten[n]} writes it all first")
            body += ["  " + x for x in load]
            body.append(f"{ind}}}")
        else:
            body += load
    body.append(f"{ind}{m('barrier', '__syncthreads();')}")

    # The launches, in order, each over its box clipped to its domain.
    sub_expr = ExprPrinter(emitter.extents, emitter.rename, marks=True)
    nsteps = namer.fresh("nsteps")
    if p.steps > 1:
        params.append(KernelParam("int", nsteps))
    for k, ph in enumerate(p.phases):
        start = len(body)
        target = ph.stmt.target
        assert isinstance(target, ir.Index)
        stmt = _to_shared(ph.stmt, smem, base, size)
        lp_of = {lp.var: lp for lp in ph.chain}
        printer = StmtPrinter(sub_expr, namer.child(), depth=0)
        lines = printer.emit([stmt])
        fixed: list[str] = []  # the fixed subscripts' tests: their element lies in the box
        par_axes: list[tuple[int, str, str, str]] = []  # (axis, var, lo, hi) of each par loop
        body.append(f"{ind}// launch {k}: {ph.array} over the tile and "
                    + ", ".join(f"axis {a}: -{b}/+{af}" for a, (b, af) in enumerate(ph.box)))
        for a in range(rank):
            lo_e = f"{org[a]} - {ph.box[a][0]}"
            hi_e = f"{org[a]} + {tile[a] + ph.box[a][1]}"
            v = ph.axis_var[a]
            ix = target.indices[a]
            if v is None:
                pe = expr.cast_to(ix, INDEX_TYPE)
                fixed.append(f"{pe} >= {lo_e} && {pe} < {hi_e}")
                continue
            lp = lp_of[v]
            # The element's subscript is v + c0 (c0 free of par variables): v's range is the box less c0.
            c0 = _offset(expr, ix, v)
            lo_s, hi_s = (f"{lo_e} - ({c0})", f"{hi_e} - ({c0})") if c0 else (lo_e, hi_e)
            lo_v, hi_v = expr.cast_to(lp.lo, INDEX_TYPE), expr.cast_to(lp.hi, INDEX_TYPE)
            lo_n, hi_n = namer.fresh(f"{v}_lo"), namer.fresh(f"{v}_hi")
            par_axes.append((a, v, lo_n, hi_n))
            body.append(f"{ind}const {INDEX_TYPE} {lo_n} = {lo_v} > {lo_s} ? {lo_v} : {lo_s};")
            body.append(f"{ind}const {INDEX_TYPE} {hi_n} = {hi_v} < {hi_s} ? {hi_v} : {hi_s};")
        its = [namer.fresh(f"{v}_it") for _a, v, _lo, _hi in par_axes]
        decls = [f"const {ctype(lp_of[v].ty)} {expr.ident(v)} = ({ctype(lp_of[v].ty)}){it};"
                 for (_a, v, _lo, _hi), it in zip(par_axes, its)]
        q = ind
        if fixed:
            body.append(f"{q}if ({m('guard', ' && '.join(fixed))}) {{")
            q += "  "
        if len(par_axes) == rank:
            body += nest([(lo, hi) for _a, _v, lo, hi in par_axes], its, decls + lines, q)
        else:  # fewer par loops than axes (a boundary row): the block's threads in one flat range
            cnt, qv = namer.fresh("count"), namer.fresh("q")
            prod = " * ".join(f"({hi} > {lo} ? {hi} - {lo} : 0LL)" for _a, _v, lo, hi in par_axes)
            body.append(f"{q}const {INDEX_TYPE} {cnt} = {prod};")
            body.append(f"{q}for ({INDEX_TYPE} {qv} = {tid}; {m('guard', f'{qv} < {cnt}')}; {qv} += {nthr}) {{")
            rest = qv
            inner: list[str] = []
            for j, (_a, _v, lo, hi) in enumerate(reversed(par_axes)):
                it = its[len(par_axes) - 1 - j]
                if j == len(par_axes) - 1:
                    inner.append(f"const {INDEX_TYPE} {it} = {lo} + {rest};")
                else:
                    inner.append(f"const {INDEX_TYPE} {it} = {lo} + {rest} % ({hi} - {lo});")
                    r2 = namer.fresh("q")
                    inner.append(f"const {INDEX_TYPE} {r2} = {rest} / ({hi} - {lo});")
                    rest = r2
            body += [q + "  " + x for x in inner + decls + lines]
            body.append(f"{q}}}")
        if fixed:
            body.append(f"{ind}}}")
        body.append(f"{ind}{m('barrier', '__syncthreads();')}")
        if ph.step:  # a later time step: only if the loop has that many left (the same for the whole block)
            body[start:] = [f"{ind}if ({m('guard', f'{nsteps} > {ph.step}')}) {{  // time step {ph.step} of {p.steps}",
                            *["  " + x for x in body[start:]], f"{ind}}}"]

    # Stores: each written array's tile, clipped to the array.
    for n in p.written:
        ext = [rows[n], *dn[1:]]
        ranges = [("0LL", f"({ext[a]} - {org[a]} < {tile[a]} ? {ext[a]} - {org[a]} : {tile[a]}LL)")
                  for a in range(rank)]
        dst = flat([f"{org[a]} + {ls[a]}" for a in range(rank)], dn[1:])
        src = flat([f"{ls[a]} + {p.halo[n][a][0]}" for a in range(rank)], [str(x) for x in size[n][1:]])
        body.append(f"{ind}// {n}: the tile into the step's output")
        body += nest(ranges, ls, [f"{buf[n][1]}[{m('index', dst)}] = {smem[n]}[{src}];"], ind)
    body.append(f"{ind}{m('barrier', '__syncthreads();')}  // the next tile reuses the shared buffers")
    for _ in range(rank):
        pad_k = pad_k[:-2]
        body.append(f"{pad_k}}}")

    threads = math.prod(block)
    name = emitter.namer.fresh(f"{emitter.name}_steps")
    kernel: dict[str, object] = {"name": name, "params": params, "body": body, "threads": threads,
                                 "qualifiers": f"{GLOBAL} void {LAUNCH_BOUNDS}({threads})"}

    setup, lines, ok = _host(emitter, loop, p, name, args, cur, nxt, loop.var in referenced, pad)
    return kernel, setup, lines, ok


def _host(emitter: _KernelEmitter, loop: ir.For, p: Plan, name: str, args: list[str], cur: dict[str, str],
          nxt: dict[str, str], reads_var: bool, pad: str) -> tuple[list[str], list[str], str]:
    """``(setup, loop_lines, ok)`` of :func:`build`: the scratch, then the host loop launching kernel ``name``
    with ``args`` (``cur``/``nxt``: the host's input and output buffer of each written array, swapped after
    each kernel; ``reads_var``: the kernel takes the loop's variable)."""
    from transpile.cuda.printer import GRID_CAPS, INDEX_TYPE, checked_launch, ctype, launch_call

    arrays = {**emitter.arrays, **emitter.allocs}
    expr = emitter.expr
    m = expr.mark
    rank, tile, block = p.rank, p.tile, BLOCKS[p.rank]
    dim_of = ["xyz"[rank - 1 - a] for a in range(rank)]
    shape = arrays[p.written[0]]
    hn = emitter.host_namer
    err, stream = emitter.names["err"], emitter.names["stream"]
    env, ok = hn.fresh("steps_env"), hn.fresh("steps_ok")
    hd = [hn.fresh(f"steps_d{a}") for a in range(rank)]
    scratch = {n: emitter.namer.fresh(f"{n}_steps_scratch") for n in p.written}
    for n in p.written:
        emitter.scratch.append((f"{ctype(arrays[n].elem)} *{scratch[n]}", scratch[n]))
    nbytes = {n: emitter._size(arrays[n]) for n in p.written}
    # NOTE: the emitted comment keeps the module's path before issue 42's move (output byte-identical)
    setup = [f"{pad}// Fused time steps (transpile/cuda_steps.py): one kernel runs {p.steps} time step(s), each block on a",
             f"{pad}// tile and its halo, input and output buffers alternating with scratch; {ENV}=0 in the environment",
             f"{pad}// (or scratch that cannot be allocated) launches the loop's kernels one by one.",
             f'{pad}const char *const {env} = getenv("{ENV}");']
    for a in range(rank):
        if a == 0:
            firsts = list(dict.fromkeys(expr.cast_to(arrays[n].dims[0], INDEX_TYPE) for n in p.written))
            most = firsts[0]
            for e0 in firsts[1:]:  # the most rows of any written array
                most = f"({most} > {e0} ? {most} : {e0})"
            setup.append(f"{pad}const {INDEX_TYPE} {hd[a]} = {most};")
        else:
            setup.append(f"{pad}const {INDEX_TYPE} {hd[a]} = {expr.cast_to(shape.dims[a], INDEX_TYPE)};")
    positive = " && ".join(f"{hd[a]} > 0" for a in range(rank))
    setup.append(f"{pad}bool {ok} = ({env} == NULL || atoi({env}) != 0) && {positive};")
    setup.append(f"{pad}if ({ok}) {{")
    for n in p.written:  # once a call: a loop inside another host loop reuses its scratch
        setup.append(f"{pad}  if ({ok} && {scratch[n]} == NULL) {{")
        setup.append(f"{pad}    {m('transfer', f'{err} = transpile_scratch((void **)&{scratch[n]}, {nbytes[n]}, {stream});')}")
        setup.append(f"{pad}    if ({err} != cudaSuccess) {{  // no room for the scratch: launch one by one")
        setup.append(f"{pad}      (void)cudaGetLastError();")
        setup.append(f"{pad}      {err} = cudaSuccess;")
        setup.append(f"{pad}      {ok} = false;")
        setup.append(f"{pad}    }}")
        setup.append(f"{pad}  }}")
    setup.append(f"{pad}}}")

    q = pad + "  "
    lines: list[str] = []
    for n in p.written:
        t = ctype(arrays[n].elem)
        lines.append(f"{q}{t} *{cur[n]} = {emitter.ident(n)};")
        lines.append(f"{q}{t} *{nxt[n]} = {scratch[n]};")
    lo, hi, it = hn.fresh(f"{loop.var}_lo"), hn.fresh(f"{loop.var}_hi"), hn.fresh(f"{loop.var}_it")
    lines.append(f"{q}{m('launch', f'const {INDEX_TYPE} {lo} = {expr(loop.lo)};')}")
    lines.append(f"{q}{m('launch', f'const {INDEX_TYPE} {hi} = {expr(loop.hi)};')}")
    stride = p.steps * loop.step
    if loop.step > 0:
        lines.append(f"{q}for ({INDEX_TYPE} {it} = {lo}; {it} < {hi}; {it} += {stride}) {{")
        left = f"({hi} - {it} + {loop.step - 1}) / {loop.step}"
    else:
        lines.append(f"{q}for ({INDEX_TYPE} {it} = {hi} - 1; {it} >= {lo}; {it} -= {-stride}) {{")
        left = f"({it} - {lo}) / {-loop.step} + 1"
    vt = ctype(loop.ty)
    if reads_var:
        lines.append(f"{q}  const {vt} {expr.ident(loop.var)} = ({vt}){it};")
    if p.steps > 1:
        hsteps = hn.fresh("nsteps")
        lines.append(f"{q}  const int {hsteps} = {left} < {p.steps} ? (int)({left}) : {p.steps};  // this kernel's steps")
        args.append(hsteps)
    grid = []
    for g in "xyz":
        if g in dim_of:
            a = dim_of.index(g)
            cap = GRID_CAPS["xyz".index(g)]
            grid.append(f"(unsigned int)(({hd[a]} + {tile[a] - 1}) / {tile[a]} < {cap}LL ? "
                        f"({hd[a]} + {tile[a] - 1}) / {tile[a]} : {cap}LL)")
        else:
            grid.append("1u")
    lines += checked_launch(launch_call(name, ", ".join(grid), f"{block[0]}u, {block[1]}u, {block[2]}u", "0", stream, args),
                            err, q + "  ")
    for n in p.written:
        t = ctype(arrays[n].elem)
        tmp = hn.fresh("swap")
        lines.append(f"{q}  {t} *const {tmp} = {cur[n]};  // this step's output is the next one's input")
        lines.append(f"{q}  {cur[n]} = {nxt[n]};")
        lines.append(f"{q}  {nxt[n]} = {tmp};")
    lines.append(f"{q}}}")
    for n in p.written:
        ident = emitter.ident(n)
        lines.append(f"{q}if ({err} == cudaSuccess && {cur[n]} != {ident}) {{  // an odd number of kernels: the "
                     "results are in the scratch")
        lines.append(f"{q}  {m('transfer', f'{err} = cudaMemcpyAsync({ident}, {cur[n]}, {nbytes[n]}, cudaMemcpyDeviceToDevice, {stream});')}")
        lines.append(f"{q}}}")
    return setup, lines, ok


def _offset(expr: ExprPrinter, ix: ir.Expr, var: str) -> str:
    """C text of ``ix - var`` (a target subscript less its par variable), or "" where ``ix`` is ``var``."""
    if isinstance(ix, ir.Var) and ix.name == var:
        return ""
    return expr(ir.binary("-", ir.cast(ix, ir.I64), ir.Var(var, ir.I64)))


def _to_shared(stmt: ir.Assign, smem: dict[str, str], base: dict[str, list[str]],
               size: dict[str, tuple[int, ...]]) -> ir.Assign:
    """``stmt`` with every element of a written array read from and written to its shared buffer.  Each
    position is printed as the target's subscript plus the constant offset (:func:`plan` proved it one),
    so that ``A[i][1 + j]`` and ``A[i][j + 1]`` give the same text."""
    from passes import accesses
    from transpile.cuda.printer import var_names

    target = stmt.target
    assert isinstance(target, ir.Index)
    names = var_names(stmt)
    forms = [accesses.affine(ix, names) for ix in target.indices]

    class _Shared(ir.Transformer):
        def visit_Index(self, e: ir.Index) -> ir.Node:
            if e.array not in smem:
                return self.generic_visit(e)
            acc: ir.Expr | None = None
            for a, ix in enumerate(e.indices):
                g, f = accesses.affine(ix, names), forms[a]
                assert g is not None and f is not None and g.coeffs == f.coeffs, f"not an offset: {e!r}"
                pos = ir.cast(target.indices[a], ir.I64)
                if g.const != f.const:
                    pos = ir.binary("+", pos, ir.const(g.const - f.const, ir.I64))
                local = ir.binary("-", pos, ir.Var(base[e.array][a], ir.I64))
                acc = local if acc is None else ir.binary(
                    "+", ir.binary("*", acc, ir.const(size[e.array][a], ir.I64)), local)
            assert acc is not None
            return ir.Index(smem[e.array], (acc,), e.ty, loc=e.loc)

    return _Shared().transform(stmt)

