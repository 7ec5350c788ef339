"""Launch forms' parameters, decided before printing: what each ``Launch`` and each host loop of a mapped kernel becomes.

Each launch's form is the IR's (``Launch.form``, decided by :mod:`passes.launch_forms`).
:func:`plan_kernel` reads a mapped kernel and the emitter's facts about it (arrays, extents, device
scalars, options: what :class:`transpile.cuda._KernelEmitter` knows before it prints anything) and
records, for every ``Launch`` in program order, a :class:`LaunchPlan`: its :class:`Form` (the IR's;
``mma`` for a ``tiled`` launch whose update the target's tensor cores run, :func:`transpile.cuda.mma.fit`)
and that form's parameters (the tiling plan and the collapsed nest of a tiled launch, the
tensor-core fit, the sweep or chain nest and its shape, a plain launch's rows, planes, block,
register promotion and shared bins); and for every host loop a :class:`HostLoopPlan` (one block runs
the loop; the fused time steps).  The emitter then dispatches on ``LaunchPlan.form`` through one
interface (:data:`Emit`: ``(plan, ctx) -> (kernel, step)``, one function per form) and the cost
model reads the same records (``transpile.cuda.LaunchInfo.plan``) instead of asking the form modules again.

The parameters sit beside the IR, not on it.  Names are the printer's business, with two exceptions:
the variable of a collapsed nest (:func:`passes.collapse.collapse`) and the registers of promotion
(:func:`passes.promote.run_launch`) are chosen here, each launch's against the names the emitter
has taken when it starts, and the emitter reserves them before it names anything else, so no later
name takes them.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from passes import collapse, promote, tile
from passes.launch_forms import row_space
from passes.reduce_gpu import chain_shape, sweep_shape
from transpile import ir
from transpile.cuda import atomics as cuda_atomics
from transpile.cuda import chain as cuda_chain
from transpile.cuda import cols as cuda_cols
from transpile.cuda import mma as cuda_mma
from transpile.cuda import reduce as cuda_reduce
from transpile.cuda import steps as cuda_steps
from transpile.cuda import sweep as cuda_sweep
from transpile.cuda.printer import BLOCK_SHAPES, Namer, assigned, is_host_loop, par_chain

if TYPE_CHECKING:
    from transpile.cuda import _KernelEmitter
    from transpile.cuda.printer import KernelParam, ScalarLoad


class Form(enum.Enum):
    """What a launch becomes: the IR's :class:`transpile.ir.LaunchForm`, and ``mma`` (a tiled launch on
    the tensor cores); the value is ``LaunchInfo.shape`` (docs/parallelism.md)."""

    SERIAL = "serial"  # no par loops: one thread
    PLAIN = "plain"  # one thread per iteration of the par loops (grid-stride loops)
    TILED = "tiled"  # matmul-like: block tiles in shared memory, register micro-tiles (cuda/tiled.py)
    MMA = "mma"  # the same on fp64 tensor cores, with the FMA kernel as fallback (cuda/mma.py)
    BLOCK = "block"  # one reduction, one block (cuda/reduce.py)
    ROWS = "rows"  # a warp per row of a par(x) loop's reductions (cuda/reduce.py)
    ROWPROG = "rowprog"  # row programs: a warp or a block a row, scalars the same in every lane
    COLS = "cols"  # column reductions as column tiles (cuda/cols.py)
    GRID = "grid"  # one reduction over the whole GPU: partials and a fold (cuda/reduce.py)
    SWEEP = "sweep"  # row and column reductions in one pass, and a fold (cuda/sweep.py)
    CHAIN = "chain"  # a row's reductions, then its column terms, and a fold (cuda/chain.py)


#: The forms whose host side is written by the form itself (a ``sweep`` step: several launches with
#: scratch); the others are one template launch step.
OWN_HOST = frozenset({Form.GRID, Form.SWEEP, Form.CHAIN})


@dataclass(frozen=True)
class LaunchPlan:
    """One launch's form and parameters.

    ``host_locals``: host loop variables and host-loop locals in scope, passed by value (in order);
    ``stores``: the launch writes device scalars.  The form's parameters (unused ones keep their
    defaults): ``tile``/``collapsed``/``mma`` for ``tiled``/``mma`` (the tiling plan, the collapsed
    nest it was found on or None, the tensor-core fit :func:`transpile.cuda.mma.fit`); ``nest`` and
    ``shape`` for ``sweep`` (``passes.reduce_gpu.Sweep``, :class:`transpile.cuda.sweep.Shape`) and
    ``chain`` (``passes.reduce_gpu.Chain``, threads a block); for every form with par loops, the
    plain configuration of the chain it prints: ``block`` (threads, x y z), ``rows`` and ``stream``
    (iterations of the y and z loops a thread takes, :func:`passes.tile.launch_rows`); ``plain``
    and ``serial`` only: ``split_rows`` (an unguarded copy of a row group), ``promoted`` (the launch
    with registers for re-read elements, :func:`passes.promote.run_launch`, which the form prints;
    None: the launch as it is), ``private`` (the atomic array kept in
    shared bins, :mod:`transpile.cuda.atomics`); ``rows`` and ``rowprog``: ``unrestricted``, the arrays
    whose pointers carry no ``__restrict__`` (:func:`transpile.cuda.reduce.thread0_shared`).
    """

    launch: ir.Launch
    form: Form
    host_locals: tuple[tuple[str, ir.Scalar], ...] = ()
    stores: bool = False
    tile: tile.Plan | None = None
    collapsed: collapse.Collapsed | None = None
    mma: cuda_mma.Fit | None = None
    nest: object = None
    shape: object = None
    block: tuple[int, int, int] = (1, 1, 1)
    rows: int = 1
    stream: int = 1
    split_rows: bool = True
    promoted: ir.Launch | None = None
    private: str | None = None
    unrestricted: frozenset[str] = frozenset()

    @property
    def chain(self) -> list[ir.For]:
        """The par loops the form prints (those of the collapsed nest where there is one)."""
        return par_chain(self.collapsed.launch if self.collapsed is not None else self.launch)


@dataclass(frozen=True)
class HostLoopPlan:
    """One host loop: ``oneblock``, one block runs the whole loop when the sizes allow
    (:mod:`transpile.cuda.oneblock`); ``steps``, its launches fused over time steps
    (:mod:`transpile.cuda.steps`), or None."""

    loop: ir.For
    oneblock: bool = False
    steps: cuda_steps.Plan | None = None


@dataclass(frozen=True)
class KernelPlan:
    """Every launch's plan and every host loop's, in program order (pre-order, as the host printer visits them)."""

    launches: tuple[LaunchPlan, ...]
    loops: tuple[HostLoopPlan, ...]

    @property
    def reserved(self) -> frozenset[str]:
        """The names the plans chose (collapsed nests' variables, promoted registers): the emitter
        reserves them before it names anything else."""
        out = {p.collapsed.var for p in self.launches if p.collapsed is not None}
        for p in self.launches:
            if p.promoted is not None:
                out |= ir.identifiers(p.promoted) - ir.identifiers(p.launch)
        return frozenset(out)


@dataclass
class LaunchContext:
    """What printing one launch starts from, the same for every form: the emitter (kernel-wide state:
    names, extents, the kernels and scratch gathered so far), the ``__global__`` function's name, the
    parameters and host arguments every form passes (arrays, scalars, device-scalar pointers, hoisted
    extents), the device-scalar loads (lines, and the records they print) and stores, and the launch's namer."""

    emitter: _KernelEmitter
    name: str
    params: list[KernelParam]
    args: list[str]
    loads: list[str]
    stores: list[str]
    namer: Namer
    scalar_loads: list[ScalarLoad]  # ``loads`` as structure (a kernel that only reads prints them read-only)


Emitted = tuple[dict[str, object], dict[str, object]]
"""``(kernel, step)``: the ``__global__`` function (name, params, body, qualifiers) and the host step
(``launch``: its configuration, printed by ``transpile.cuda._launch_lines`` at its final indentation;
``sweep``: the lines the form wrote)."""
Emit = Callable[[LaunchPlan, LaunchContext], Emitted]
"""The one interface of a launch form's printer."""


def plan_kernel(emitter: _KernelEmitter) -> KernelPlan:
    """The plans of ``emitter``'s kernel (module docstring).  Reads the emitter's facts from before
    printing only: options, arrays and allocations, extents, device and fixed scalars, taken names."""
    launches: list[LaunchPlan] = []
    loops: list[HostLoopPlan] = []
    taken = set(emitter.namer.taken)

    def walk(body: tuple[ir.Stmt, ...], scope: dict[str, ir.Scalar], nested: bool) -> None:
        # The host printer's scope: loop variables for the loop's body; a Decl inside any host loop
        # or host if (device scalars aside) from where it stands to the end of the enclosing loop.
        for s in body:
            if isinstance(s, ir.Launch):
                launches.append(plan_launch(emitter, s, tuple(scope.items()), taken))
            elif isinstance(s, ir.For) and is_host_loop(s):
                at = len(loops)
                loops.append(HostLoopPlan(s))
                walk(s.body, {**scope, s.var: s.ty}, True)
                loops[at] = _plan_loop(emitter, s)
            elif isinstance(s, ir.If):
                walk(s.then, scope, True)
                walk(s.orelse, scope, True)
            elif isinstance(s, ir.Decl) and nested and s.name not in emitter.device_scalars:
                scope[s.name] = s.ty

    walk(emitter.k.body, {}, False)
    return KernelPlan(tuple(launches), tuple(loops))


def _plan_loop(emitter: _KernelEmitter, loop: ir.For) -> HostLoopPlan:
    """A host loop's plan: one block where the IR's schedule says so, and the fused time steps."""
    on = emitter.tiling is None or emitter.tiling.enabled
    # One block: the IR's schedule (passes/launch_forms.py: every statement a launch of a form without
    # a fold or a guard of its own).
    one = "oneblock" in loop.host
    fused = cuda_steps.plan(emitter, loop) if on and (emitter.tiling is None or emitter.tiling.steps) else None
    return HostLoopPlan(loop, one, fused)


def plan_launch(emitter: _KernelEmitter, launch: ir.Launch, host_locals: tuple[tuple[str, ir.Scalar], ...],
                taken: set[str]) -> LaunchPlan:
    """The parameters of ``launch``'s form (:class:`LaunchPlan`), decided by :mod:`passes.launch_forms`
    and read from ``launch.form``; ``taken``: names a collapsed nest's variable and promoted registers
    must avoid (each launch is its own kernel function: one launch's choices do not constrain another's)."""
    tiling = emitter.tiling
    form = launch.form
    assert form is not None, f"launch without a form (run passes.launch_forms): {launch!r}"
    stores = bool(set(emitter.device_scalars) & assigned(launch))
    base = LaunchPlan(launch, Form(form.value), host_locals, stores)
    if form is ir.LaunchForm.SWEEP:
        (outer,) = launch.body
        sw = sweep_shape(outer)  # type: ignore[arg-type]
        return _replace(base, nest=sw, shape=cuda_sweep.shape_for(tiling, sw))
    if form is ir.LaunchForm.CHAIN:
        (outer,) = launch.body
        return _replace(base, nest=chain_shape(outer), shape=cuda_chain.threads_of(tiling))  # type: ignore[arg-type]
    if form is ir.LaunchForm.GRID:
        return base
    if form is ir.LaunchForm.TILED:
        # A matmul-like launch, as it is or with two outer par loops merged over the leading subscripts
        # of every array they index (passes/collapse.py: doitgen's batched product); on the tensor
        # cores where the target has the instruction and the update fits them (instruction selection).
        planned = collapse.plan(launch, tiling, {**emitter.arrays, **emitter.allocs}, taken)
        assert planned is not None, f"a tiled launch with no tiling plan: {launch!r}"
        plan, flat = planned
        fit = cuda_mma.fit(plan)
        return _plain_config(emitter, _replace(base, form=Form.MMA if fit is not None else Form.TILED,
                                               tile=plan, collapsed=flat, mma=fit))
    if form in (ir.LaunchForm.ROWS, ir.LaunchForm.ROWPROG):
        # thread 0 writes what the row's other threads read: no __restrict__ there
        shared = frozenset(cuda_reduce.thread0_shared(row_space(launch)[1]))
        return _plain_config(emitter, _replace(base, unrestricted=shared))
    if form not in (ir.LaunchForm.PLAIN, ir.LaunchForm.SERIAL):
        return _plain_config(emitter, base)
    chain = par_chain(launch)
    p = _plain_config(emitter, base)
    atomic = any(isinstance(n, ir.For) and n.atomic for n in ir.walk(launch))
    private = None
    if atomic:
        arrays = {**emitter.arrays, **emitter.allocs}
        private = cuda_atomics.private_array(launch, chain, {a: t.dims for a, t in arrays.items()},
                                             emitter.fixed_scalars)
    # Array elements a sequential loop keeps re-reading live in registers (passes/promote.py);
    # not in the naive mapping (tiling off), the baseline the benchmark compares against.
    promoted = None
    if (tiling is None or tiling.enabled) and not atomic:  # a promoted element would not be atomic
        # Named as the launch's own namer would (each launch is its own kernel function).
        promoted = promote.run_launch(launch, Namer(taken).fresh)
    # The unguarded copy of a row group pays in 2-D launches (H200, against the guarded form alone:
    # jacobi-2d 1.06x, fdtd-2d 1.02x at 8192^2); a 3-D body's second copy took heat-3d from 64 to
    # 80 registers (4 -> 3 blocks of 256 per SM) and 0.84x (bench/results/h200_run18c_stencils.md).
    return _replace(p, promoted=promoted if promoted is not launch else None, private=private,
                    split_rows=not any(loop.par == "z" for loop in chain))


def _plain_config(emitter: _KernelEmitter, p: LaunchPlan) -> LaunchPlan:
    """``p`` with the plain configuration of the chain it prints: threads per block, rows and planes a thread."""
    chain = p.chain
    if not chain:
        return p
    tiling = emitter.tiling
    block = tiling.blocks[len(chain) - 1] if tiling is not None else BLOCK_SHAPES[len(chain)]
    return _replace(p, block=tuple(block), rows=tile.launch_rows(tiling, chain),  # type: ignore[arg-type]
                    stream=tile.launch_stream(tiling, chain))


def block_threads(p: LaunchPlan) -> tuple[int, ...]:
    """The most threads per block (x, y, z; one number for a serial launch) the launch of ``p`` runs
    with (a 1-D plain launch may take fewer at run time, ``transpile_block``): its form's block."""
    if p.form is Form.SERIAL:
        return (1,)
    if p.form is Form.PLAIN:
        return p.block
    if p.form is Form.TILED:
        assert p.tile is not None, p
        return (*p.tile.threads, 1)
    if p.form is Form.MMA:
        assert p.mma is not None, p
        bm, bn, _bk, wm, wn, _nbuf = p.mma.shape
        return ((bm // wm) * (bn // wn) * cuda_reduce.WARP, 1, 1)
    if p.form is Form.COLS:
        return (cuda_cols.COLS, cuda_cols.ROWS, 1)
    if p.form is Form.SWEEP:
        assert isinstance(p.shape, cuda_sweep.Shape), p
        return (cuda_sweep.LANES, p.shape.warps, 1)
    if p.form is Form.CHAIN:
        assert isinstance(p.shape, int), p
        return (p.shape, 1, 1)
    return (cuda_reduce.THREADS["block" if p.form is Form.GRID else p.form.value], 1, 1)


def _replace(p: LaunchPlan, **changes: object) -> LaunchPlan:
    return replace(p, **changes)  # type: ignore[arg-type]


def threads(p: LaunchPlan) -> int:
    """Threads per block of a plain or serial launch (``__launch_bounds__``)."""
    return math.prod(p.block) if p.chain else 1
