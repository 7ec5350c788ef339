"""Decide every launch's form: how its iterations are laid out on the GPU, before any CUDA is printed.

**Precondition**: a mapped kernel (:mod:`passes.map_gpu`; :mod:`passes.reduce_gpu` has marked its
reductions).  A kernel without launches is returned as it is.

**Postcondition**: every ``Launch`` carries its :class:`transpile.ir.LaunchForm`, decided from the
launch's structure and the back end's options (:class:`passes.tile.Options`: tiling on or off), and
every host loop its schedule (``For.host``: ``oneblock`` where one block can run the whole loop,
:func:`oneblock_eligible`, its launches all of a form in :data:`ONE_BLOCK`); nothing else changed.  A form already present is decided again: forms are a schedule (the schedule
search emits one lowered module under many options), so the pass is run with the options the
module is emitted with; it returns the kernel itself when every form stays (``run(k) is k``).  The
back end (``transpile.cuda.forms``), its cost model and fusion read ``Launch.form``; they never
classify a launch themselves.  The checker (:mod:`transpile.ir.check`) holds each form to the
structure it needs.

The forms (docs/parallelism.md):

* ``serial``: no grid ``par`` loop; one thread runs the body.
* ``plain``: one thread per iteration of the leading ``par`` loops.
* ``tiled``: a matmul-like nest (:func:`passes.tile.plan`, directly or after merging two outer
  ``par`` loops, :func:`passes.collapse.plan`): block tiles in shared memory.  Whether its inner
  products run on the fp64 tensor cores is instruction selection for the target (``--arch``), the
  back end's (``transpile.cuda.mma.fit``).
* ``block``: one ``reduce`` loop (thread 0's statements around it allowed): one block.
* ``grid``: the same outside host loops, when its terms read nothing the statements before it
  write: partials over the whole GPU and a fold.
* ``rows`` / ``rowprog``: a ``par(x)`` loop whose body holds reductions: a warp per row; ``rowprog``
  when a reduction reads a scalar the row writes or the row has ``par(lane)`` maps (every scalar is
  kept the same in all lanes, so the row's scalars must be of the types ``__shfl_sync`` moves).
* ``cols``: column reductions (:func:`passes.reduce_gpu.column_shape`): column tiles.
* ``sweep`` / ``chain``: a top-level ``reduce`` loop around a loop (:func:`passes.reduce_gpu.sweep_shape`,
  :func:`passes.reduce_gpu.chain_shape`): row and column reductions in one pass, then a fold.

A launch with atomic updates (``atomic(...)`` loops) is ``plain`` or ``serial``: no other form knows them.
A launch that writes a device scalar (one another launch reads) is neither ``tiled`` nor a grid reduction.

Before::

    kernel k(i32 n, in f64 A[n][n], out f64 y[n]) {
      launch {
        for i in 0..n par(x) {
          y[i] = 0.0;
          for j in 0..n reduce(+) {
            y[i] += A[i][j];
          }
        }
      }
    }

After::

    kernel k(i32 n, in f64 A[n][n], out f64 y[n]) {
      launch[rows] {
        ...
      }
    }
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from passes import accesses, collapse, tile
from passes.map_gpu import block_reduction
from passes.reduce_gpu import SHUFFLED, chain_shape, column_shape, sweep_shape
from transpile import ir
from transpile.ir import accum

Form = ir.LaunchForm


def run(kernel: ir.Kernel, *, options: tile.Options | None = None) -> ir.Kernel:
    """``kernel`` with every launch's form decided (module docstring) under ``options``."""
    if not ir.is_mapped(kernel):
        return kernel
    arrays: dict[str, ir.ArrayType] = {p.name: p.ty for p in kernel.params if isinstance(p.ty, ir.ArrayType)}
    arrays |= {s.name: s.ty for s in kernel.body if isinstance(s, ir.Alloc)}
    device = frozenset(device_scalars(kernel))
    used = ir.identifiers(kernel)

    def block(body: tuple[ir.Stmt, ...], looped: bool) -> tuple[ir.Stmt, ...]:
        out = tuple(stmt(s, looped) for s in body)
        return body if all(a is b for a, b in zip(out, body)) else out

    def stmt(s: ir.Stmt, looped: bool) -> ir.Stmt:
        if isinstance(s, ir.Launch):
            form = decide(s, options=options, arrays=arrays, used=used, looped=looped,
                          stores=bool(device & _assigned(s)))
            return s if s.form is form else dataclasses.replace(s, form=form)
        if isinstance(s, ir.For) and ir.has_launch(s):
            body = block(s.body, True)
            host = _host_schedule(dataclasses.replace(s, body=body) if body is not s.body else s, options)
            if body is s.body and host == s.host:
                return s
            return dataclasses.replace(s, body=body, host=host)
        return s

    body = block(kernel.body, False)
    return kernel if body is kernel.body else dataclasses.replace(kernel, body=body)


def decide(launch: ir.Launch, *, options: tile.Options | None, arrays: Mapping[str, ir.ArrayType],
           used: set[str], looped: bool, stores: bool) -> Form:
    """The form of ``launch``: ``looped``, it sits in a host loop; ``stores``, it writes a device
    scalar; ``arrays``, the type of every array it may name; ``used``, the kernel's names."""
    chain = par_chain(launch)
    atomic = any(isinstance(n, ir.For) and n.atomic for n in ir.walk(launch))
    if atomic:
        return Form.PLAIN if chain else Form.SERIAL
    tiled = chain and not stores and collapse.plan(launch, options, arrays, used) is not None
    red = None if tiled else reduction_shape(launch)
    if red == "block" and not looped and grid_ready(launch):
        return Form.GRID
    if red in ("sweep", "chain"):
        return Form(red)
    if tiled:
        return Form.TILED
    if red is not None:
        return Form(red)
    return Form.PLAIN if chain else Form.SERIAL


#: The forms a one-block host loop can run (no fold, no launch guard of their own).
ONE_BLOCK = frozenset({Form.PLAIN, Form.SERIAL, Form.BLOCK})


def _host_schedule(loop: ir.For, options: tile.Options | None) -> tuple[str, ...]:
    """The ``host`` marks of host loop ``loop`` (its launches' forms decided): ``oneblock`` where one
    block can run it (:func:`oneblock_eligible`, every launch of a form in :data:`ONE_BLOCK`) and the
    tiled and reduction forms are on (the naive mapping keeps one launch per iteration)."""
    on = options is None or options.enabled
    one = on and oneblock_eligible(loop) and all(
        s.form in ONE_BLOCK for s in loop.body if isinstance(s, ir.Launch))
    return ("oneblock",) if one else ()


def oneblock_eligible(loop: ir.For) -> bool:
    """``loop`` is a host loop one block can run (transpile/cuda/oneblock.py): its body is launches
    only, none returning, each a nest of ``par`` loops around loop-free statements or no ``par`` loop at
    all, the ``par`` loops' bounds not triangular and affine in ``loop``'s variable; ``loop``'s step
    positive, or negative over a signed variable."""
    if loop.step == 0 or (loop.step < 0 and not loop.ty.is_signed) or not loop.body:
        return False
    for s in loop.body:
        if not isinstance(s, ir.Launch):
            return False
        if any(isinstance(n, ir.Return) for n in ir.walk(s)):
            return False
        chain = par_chain(s)
        # A grid of threads with loops inside (adi's sweeps) would be serialised onto one block; a
        # launch without par loops (one thread, or a one-block reduction) runs as it would anyway.
        if chain and any(isinstance(n, ir.For) for st in chain[-1].body for n in ir.walk(st)):
            return False
        for lp in chain:
            outer = {o.var for o in chain if o is not lp}
            for b in (lp.lo, lp.hi):
                if ir.var_names(b) & outer:  # triangular: its count is not one expression of the host variable
                    return False
                if loop.var in ir.var_names(b) and accesses.affine(b, ir.var_names(b)) is None:
                    return False
    return True


def par_chain(launch: ir.Launch) -> list[ir.For]:
    """The leading perfect nest of grid ``par`` loops of ``launch``, outermost first (a row program's
    ``par(lane)`` loops are the row's, not the grid's)."""
    chain: list[ir.For] = []
    body = launch.body
    while body and ir.grid_par(body[0]):
        chain.append(body[0])
        body = body[0].body
    return chain


def device_scalars(kernel: ir.Kernel) -> list[str]:
    """The scalars of a mapped ``kernel`` that live in device memory (in declaration order: parameters,
    then top-level ``Decl`` statements): written by a launch and used by another, declared at the top
    level (map-gpu leaves a scalar there only when several launches share it), or written by a launch
    a host loop repeats (the value must persist across iterations).  A scalar parameter that only one
    launch references is passed by value and changed in place there."""
    launches = [n for n in ir.statements(kernel) if isinstance(n, ir.Launch)]
    looped = set().union(*(_assigned(x) for x in host_loops(kernel.body)))
    decls = {s.name for s in kernel.body if isinstance(s, ir.Decl)}
    scalars = [p.name for p in kernel.params if isinstance(p.ty, ir.Scalar)]
    scalars += [s.name for s in kernel.body if isinstance(s, ir.Decl)]
    written = set().union(*(_assigned(x) for x in launches)) if launches else set()
    refs = [ir.var_names(x) for x in launches]
    return list(dict.fromkeys(n for n in scalars if n in written
                              and (n in decls or n in looped or sum(n in r for r in refs) > 1)))


def reduction_shape(launch: ir.Launch) -> str | None:
    """``'block'``, ``'sweep'``, ``'chain'``, ``'rows'``, ``'rowprog'``, ``'cols'`` or None (not a
    reduction launch) for ``launch`` (module docstring)."""
    if len(launch.body) != 1 or not isinstance(launch.body[0], ir.For):
        # A one-block reduction with thread 0's statements around it (passes/map_gpu._join_serial).
        return "block" if len(launch.body) > 1 and block_reduction(launch) is not None else None
    f = launch.body[0]
    if f.reduce and f.par is None:
        if sweep_shape(f) is not None:
            return "sweep"
        return "chain" if chain_shape(f) is not None else "block"
    batch, f = row_space(launch)
    if f.par != "x" or not any(isinstance(c, ir.For) and c.reduce for c in f.body):
        return None
    if column_shape(f) is not None:
        return None if batch else "cols"
    # rows: lane 0 owns the scalars the body writes, so no reduction may read one, and there are no
    # par(lane) loops; else rowprog, which keeps every scalar the same in all lanes (lane 0's
    # statements' scalars broadcast: of the types __shfl_sync moves).
    written = {n.target.name for n in ir.walk(f) if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var)}
    written |= {n.name for n in ir.walk(f) if isinstance(n, ir.Decl)}
    program = any(isinstance(c, ir.For) and c.par == "lane" for c in f.body)
    for c in f.body:
        if isinstance(c, ir.For) and c.reduce:
            terms = [a.term for a in accumulations(c)]
            if any(isinstance(n, ir.Var) and n.name in written for e in (c.lo, c.hi, *terms) for n in ir.walk(e)):
                program = True
    if not program:
        return "rows"
    lane0 = [c for c in f.body if not (isinstance(c, ir.For) and (c.reduce or c.par == "lane")) and stores(c)]
    if any(ty not in SHUFFLED for c in lane0 for _n, ty in ir.outer_scalars_written(c).items()):
        return None  # a plain launch: one thread a row
    return "rowprog"


def row_space(launch: ir.Launch) -> tuple[tuple[ir.For, ...], ir.For]:
    """(batch loops, row loop) of a launch whose body is one ``For``: the ``par(z)``/``par(y)`` loops
    of a perfect nest around its ``par(x)`` loop (reduce-gpu's :func:`passes.reduce_gpu.row_batch`),
    and that loop; no batch loops and the ``For`` itself otherwise.  A ``rows``/``rowprog`` launch
    runs the batch loops and the row loop as one space of rows, ``(b, i)`` from one row number."""
    f = launch.body[0]
    assert isinstance(f, ir.For), f
    batch: list[ir.For] = []
    while f.par in ("z", "y") and len(f.body) == 1 and isinstance(f.body[0], ir.For) and ir.grid_par(f.body[0]):
        batch.append(f)
        f = f.body[0]
    return tuple(batch), f


def grid_ready(launch: ir.Launch) -> bool:
    """Whether a ``block`` launch may run as a grid reduction: its loop's bounds and terms read nothing
    that thread 0's statements before it write, so the partials can be computed before those
    statements run (in the fold)."""
    (loop,) = [s for s in launch.body if isinstance(s, ir.For)]
    before = launch.body[:launch.body.index(loop)]
    written: set[str] = set()
    for st in before:
        written |= ir.scalars_written(st) | {name for name, (_r, w) in ir.array_uses(st).items() if w}
    reads = {n.name if isinstance(n, ir.Var) else n.array
             for e in (loop.lo, loop.hi, *(a.term for a in accumulations(loop)))
             for n in ir.walk(e) if isinstance(n, (ir.Var, ir.Index))}
    return not (reads & written)


def accumulations(loop: ir.For) -> list[accum.Accumulation]:
    """The accumulations ``x = x op e`` of a ``reduce`` loop's body, one a statement."""
    out = []
    for s in loop.body:
        a = accum.accumulation(s)
        assert a is not None, f"reduce loop body is not accumulations: {s!r}"
        out.append(a)
    return out


def stores(stmt: ir.Stmt) -> bool:
    """Whether ``stmt`` writes memory (an array element): in a ``rowprog`` row, lane 0 runs it."""
    return any(isinstance(n, ir.Assign) and isinstance(n.target, ir.Index) for n in ir.walk(stmt))


def _assigned(node: ir.Node) -> set[str]:
    return {n.target.name for n in ir.walk(node) if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var)}


def host_loops(body: tuple[ir.Stmt, ...]) -> list[ir.For]:
    """The host loops under ``body`` (``For`` statements outside launches that hold launches), outermost
    first, pre-order."""
    out: list[ir.For] = []
    for s in body:
        if isinstance(s, ir.For) and ir.has_launch(s):
            out.append(s)
            out.extend(host_loops(s.body))
    return out
