"""A structural cost model: the estimated GPU time of a mapped kernel, without a GPU.

``estimate(kernel, launches, sizes)`` walks the mapped IR (host statements,
host loops, ``Launch`` regions) at concrete sizes and prices every launch
from what the emitter made of it (:class:`transpile.cuda.LaunchInfo`: plain,
serial, a reduction shape, FMA tiles or tensor cores, with its block size, and the form's parameters
as planned before printing, :class:`transpile.cuda.forms.LaunchPlan`: the tiling plan, the sweep or
chain nest and its shape)
and, when given, from ptxas's report of each ``__global__`` function
(registers, shared memory, spills).  The terms, per launch:

* **DRAM**: the bytes each array moves, at most its footprint (arrays are
  read once from DRAM and then served by the caches when reused), over the
  DRAM bandwidth; arrays a launch repeated by a host loop keeps in L2 come
  from L2 instead.
* **Cache traffic**: every global access of every thread in 32-byte sectors,
  from the stride of the ``threadIdx.x`` variable in the access's linear
  address (0: one sector per warp; 1: coalesced, 8 bytes a thread; larger:
  one sector a thread), over the L2 bandwidth.  Tiled kernels count their
  staged loads (each operand element once per block tile).
* **Compute**: floating-point operations (a division or a math call counts
  as several) over the fp64 rate (tensor-core rate for ``mma`` launches).
* **Latency**: a thread's serial chain (inner-loop iterations times the
  per-iteration cost and its memory accesses' latency), times the waves of
  blocks that fit on the device at the occupancy that registers, shared
  memory and block size allow.  Cooperative reductions split their loop
  over the cooperating threads.
* **Busiest SM**: a launch of few blocks leaves SMs idle; each busy SM's
  share of the traffic and flops goes through that SM's slice of the L2
  bandwidth and its fp64 units (how many blocks of a block size fit the
  work is what makes the block shape of plain launches matter).
* **Launch**: a fixed overhead per launch; host loops multiply everything.

A launch costs ``max(DRAM, cache, compute, latency) * spill penalty +
launch``; a kernel the sum over its launches.  Host loops are priced by
sampling at most :data:`SAMPLES` iterations (evenly spread) and scaling, so a
triangular host loop is priced by its average iteration.

The constants of :data:`H200` are the H200's published limits and the
bandwidths measured in ``bench/results``; the few fitted ones (latency and
overhead terms, marked) were calibrated against the H200 candidate timings
(docs/evolve.md says how, and the Spearman correlation they reach).  The
model ranks schedules of one kernel; it is not a timing oracle.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from passes import accesses, tile
from transpile import ir
from transpile.cuda import reduce as cuda_reduce
from transpile.cuda.forms import LaunchPlan
from transpile.ir import accum

#: Host-loop iterations priced per loop (evenly spread, first and last included).
SAMPLES = 9
#: Operation weights in flops: a division and a libm call take several FMA-pipe slots.
DIV_FLOPS = 4.0
CALL_FLOPS = 16.0
SECTOR = 32
WARP = 32


@dataclass(frozen=True)
class Device:
    """What the model knows of a GPU (rates in bytes/s and flop/s, times in seconds)."""

    name: str
    sms: int
    dram_bw: float
    l2_bw: float
    l2_bytes: float
    fp64: float
    fp64_mma: float
    fp64_lanes: int = 8448  # fp64 FMA units: 64 per SM
    threads_per_sm: int = 2048
    blocks_per_sm: int = 32
    regs_per_sm: int = 65536
    smem_per_sm: int = 227 * 1024
    launch_s: float = 3.0e-6  # fitted: per launch, back to back on one stream
    iter_s: float = 2.0e-9  # fitted: one iteration of a thread's serial loop, issue and loop overhead
    access_s: float = 30e-9  # fitted: exposed latency of one global access in a serial chain
    step_s: float = 0.15e-6  # fitted: one k step of a tiled block (barriers, pipeline fill)
    mma_eff: float = 0.6  # fitted: fraction of the tensor-core peak a tiled DMMA loop sustains
    # Each f64 mma.sync shape's share of the tensor-core peak (.gpu/dmma_shapes.cu on the H200,
    # independent chains: m8n8k4 33 TFLOP/s, m16n8k4 52-66, m16n8k8 and m16n8k16 66).
    mma_share: tuple[tuple[tuple[int, int], float], ...] = (((8, 4), 0.5), ((16, 4), 0.85), ((16, 8), 1.0),
                                                            ((16, 16), 1.0))
    contention_warps: float = 22.0  # fitted: warps per SM that double a serial chain's access latency
    sm_share: float = 4.0  # fitted: how many times its fair share of L2 bandwidth one SM can draw
    hiding_occupancy: float = 0.1875  # resident threads / limit that hide a tiled loop's latency (12 warps)
    hiding_occupancy_pipelined: float = 0.125  # the same for a tensor-core loop fed by 3+ cp.async buffers (8 warps)
    l1_bw: float = 33e12  # L1 load bandwidth of the chip: 128 B/clock/SM at 1.98 GHz x 132 SMs


H200 = Device(name="NVIDIA H200", sms=132,
              dram_bw=4.14e12,  # measured 1 GiB device-to-device copy (bench/results/h200.md)
              l2_bw=10e12,  # fitted, of the order of the L2's published bandwidth
              l2_bytes=50e6,  # 60 MB L2, less what other data and the split halves cost
              fp64=33.5e12, fp64_mma=67e12)  # the published fp64 FMA and tensor-core peaks


@dataclass(frozen=True)
class Resources:
    """ptxas's figures for one ``__global__`` function."""

    registers: int = 32
    smem: int = 0
    spill_bytes: int = 0


@dataclass
class LaunchCost:
    """One launch's estimate (times in seconds, for all its repetitions)."""

    kernel: str
    shape: str
    count: float = 0.0  # launches (host loops multiply)
    threads: float = 0.0  # threads of one launch (the last one priced, for host-loop launches)
    occupancy: float = 0.0  # resident threads per SM / the SM's limit
    flops: float = 0.0
    dram_bytes: float = 0.0
    cache_bytes: float = 0.0
    dram_s: float = 0.0
    cache_s: float = 0.0
    compute_s: float = 0.0
    latency_s: float = 0.0
    sm_s: float = 0.0  # the busiest SM's share (launches of few blocks)
    overhead_s: float = 0.0
    seconds: float = 0.0

    @property
    def bound(self) -> str:
        """The dominant term."""
        terms = {"dram": self.dram_s, "cache": self.cache_s, "compute": self.compute_s,
                 "latency": self.latency_s, "busiest SM": self.sm_s, "launch": self.overhead_s}
        return max(terms, key=lambda k: terms[k])


@dataclass
class Estimate:
    """A kernel's estimate: the sum of its launches, and the ideal (roofline) time."""

    seconds: float
    launches: list[LaunchCost] = field(default_factory=list)
    ideal_seconds: float = 0.0  # compulsory bytes over DRAM bandwidth, or flops over the peak

    @property
    def efficiency(self) -> float:
        """ideal / estimated, in (0, 1]: how close to its roofline the model thinks the schedule is."""
        return min(1.0, self.ideal_seconds / self.seconds) if self.seconds > 0 else 0.0

    def table(self) -> str:
        rows = [f"{'kernel':28} {'shape':7} {'count':>8} {'threads':>10} {'occ':>5} {'ms':>10}  bound"]
        for c in self.launches:
            rows.append(f"{c.kernel:28} {c.shape:7} {c.count:8.0f} {c.threads:10.0f} {c.occupancy:5.2f} "
                        f"{c.seconds * 1e3:10.4f}  {c.bound}")
        rows.append(f"{'total':28} {'':7} {'':8} {'':10} {'':5} {self.seconds * 1e3:10.4f}  "
                    f"(ideal {self.ideal_seconds * 1e3:.4f})")
        return "\n".join(rows)


# ---------------------------------------------------------------------------
# Entry point


def estimate(kernel: ir.Kernel, launches: Sequence[Any], sizes: Mapping[str, int], *,
             tiling: tile.Options | None = None, resources: Mapping[str, Resources] | None = None,
             device: Device = H200) -> Estimate:
    """The estimated time of mapped ``kernel`` at ``sizes`` (its integer parameters).

    ``launches``: the emitter's record of this kernel's launches in order
    (objects with ``kernel``, ``shape``, ``launch`` and ``block``, as
    :func:`transpile.cuda.launches` returns); ``resources``: ptxas's figures per
    ``__global__`` name (missing ones: 32 registers, no shared memory).
    """
    info = {id(li.launch): li for li in launches}
    model = _Model(kernel, info, dict(sizes), tiling or tile.Options(), resources or {}, device)
    model.block(kernel.body, dict(model.env), 1.0)
    costs = list(model.costs.values())
    total = sum(c.seconds for c in costs)
    return Estimate(total, costs, model.ideal())


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rank correlation (ties get their average rank); None for fewer than 3 pairs
    or when one side is constant."""
    if len(xs) != len(ys) or len(xs) < 3:
        return None
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return None if sxx == 0 or syy == 0 else sxy / math.sqrt(sxx * syy)


def ranks(xs: Sequence[float]) -> list[float]:
    """1-based ranks of ``xs`` in ascending order; tied values share the average of their ranks."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for t in range(i, j + 1):
            ranks[order[t]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


# ---------------------------------------------------------------------------
# Expression values


def value(e: ir.Expr, env: Mapping[str, float]) -> float | None:
    """The value of integer expression ``e`` under ``env``, or None when it reads anything else."""
    if isinstance(e, ir.Const):
        return float(e.value)
    if isinstance(e, ir.Var):
        return env.get(e.name)
    if isinstance(e, ir.Cast):
        return value(e.operand, env)
    if isinstance(e, ir.Unary):
        v = value(e.operand, env)
        return None if v is None else (-v if e.op == "-" else v if e.op == "+" else None)
    if isinstance(e, ir.Binary):
        a, b = value(e.lhs, env), value(e.rhs, env)
        if a is None or b is None:
            return None
        op = e.op
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op in ("/", "%"):
            if b == 0:
                return None
            if e.ty.is_float:
                return a / b if op == "/" else None
            q = math.trunc(a / b)
            return float(q) if op == "/" else a - b * q
        return None
    if isinstance(e, ir.Call) and e.fn in ("min", "max", "fmin", "fmax") and len(e.args) == 2:
        a, b = value(e.args[0], env), value(e.args[1], env)
        if a is None or b is None:
            return None
        return min(a, b) if "min" in e.fn else max(a, b)
    if isinstance(e, ir.Select):
        t, f = value(e.then, env), value(e.orelse, env)
        return None if t is None or f is None else (t + f) / 2
    return None


def trips(loop: ir.For, env: Mapping[str, float]) -> float:
    """The trip count of ``loop`` under ``env`` (0 when empty; unknown bounds: 0)."""
    lo, hi = value(loop.lo, env), value(loop.hi, env)
    if lo is None or hi is None:
        return 0.0
    return max(0.0, math.ceil((hi - lo) / abs(loop.step)))


def _mid(loop: ir.For, env: Mapping[str, float]) -> float:
    """The loop variable's average value (what a triangular inner bound sees on average)."""
    lo, hi = value(loop.lo, env), value(loop.hi, env)
    if lo is None or hi is None:
        return 0.0
    return (lo + max(lo, hi - 1)) / 2


# ---------------------------------------------------------------------------
# Per-thread work


@dataclass
class _Work:
    """A thread's work: flops, global accesses by class, serial iterations."""

    flops: float = 0.0
    sectors: float = 0.0  # 32-byte sectors requested, per thread
    accesses: float = 0.0  # global accesses (for latency)
    iters: float = 0.0  # loop iterations executed
    per_array: dict[str, float] = field(default_factory=dict)  # element accesses per thread

    def add(self, other: _Work, times: float = 1.0) -> None:
        self.flops += other.flops * times
        self.sectors += other.sectors * times
        self.accesses += other.accesses * times
        self.iters += other.iters * times
        for a, n in other.per_array.items():
            self.per_array[a] = self.per_array.get(a, 0.0) + n * times


class _Model:
    def __init__(self, kernel: ir.Kernel, info: Mapping[int, Any], sizes: dict[str, int], tiling: tile.Options,
                 resources: Mapping[str, Resources], device: Device) -> None:
        self.k = kernel
        self.info = info
        self.tiling = tiling
        self.res = resources
        self.dev = device
        self.env: dict[str, float] = {k: float(v) for k, v in sizes.items()}
        self.arrays: dict[str, ir.ArrayType] = {p.name: p.ty for p in kernel.params
                                               if isinstance(p.ty, ir.ArrayType)}
        self.arrays |= {s.name: s.ty for s in ir.walk(kernel) if isinstance(s, ir.Alloc)}
        self.costs: dict[str, LaunchCost] = {}
        self.flops_total = 0.0
        self.touched: dict[str, float] = {}  # array -> largest bytes touched by one launch

    # -- host side

    def block(self, body: Iterable[ir.Stmt], env: dict[str, float], weight: float) -> None:
        for s in body:
            if isinstance(s, ir.Launch):
                self.launch(s, env, weight)
            elif isinstance(s, ir.For):
                self.host_loop(s, env, weight)
            elif isinstance(s, ir.If):
                self.block(s.then, env, weight)
                self.block(s.orelse, env, weight)
            elif isinstance(s, ir.Decl) and s.init is not None and s.ty.is_int:
                v = value(s.init, env)
                if v is not None:
                    env[s.name] = v
            elif isinstance(s, ir.Assign) and isinstance(s.target, ir.Var) and s.target.ty.is_int:
                v = value(s.value, env)
                if v is not None:
                    env[s.target.name] = v

    def host_loop(self, loop: ir.For, env: dict[str, float], weight: float) -> None:
        n = trips(loop, env)
        if n <= 0 or not ir.has_launch(loop):
            return
        lo, hi = value(loop.lo, env) or 0.0, value(loop.hi, env) or 0.0
        first, step = (lo, loop.step) if loop.step > 0 else (hi - 1, loop.step)
        picks = sorted({round(t * (n - 1) / (SAMPLES - 1)) for t in range(SAMPLES)}) if n > SAMPLES else range(int(n))
        share = n / len(picks)
        for t in picks:
            inner = dict(env)
            inner[loop.var] = first + t * step
            self.block(loop.body, inner, weight * share)

    # -- one launch

    def launch(self, lp: ir.Launch, env: dict[str, float], weight: float) -> None:
        li = self.info.get(id(lp))
        name = li.kernel if li is not None else f"launch{len(self.costs)}"
        shape = li.shape if li is not None else "plain"
        block = tuple(li.block) if li is not None else (256, 1, 1)
        cost = self.costs.setdefault(name, LaunchCost(name, shape))
        if shape in ("tiled", "mma"):
            c = self._tiled(lp, env, shape)
        elif shape == "sweep":
            c = self._sweep(lp, env)
        elif shape == "chain":
            c = self._chain(lp, env)
        else:
            c = self._generic(lp, env, shape, block)
        if c is None:
            return
        seconds, threads, occ, flops, dram, cache, terms = c
        cost.count += weight
        cost.threads = threads
        cost.occupancy = occ
        cost.flops += flops * weight
        cost.dram_bytes += dram * weight
        cost.cache_bytes += cache * weight
        for key, t in terms.items():
            setattr(cost, key, getattr(cost, key) + t * weight)
        cost.overhead_s += self.dev.launch_s * weight
        cost.seconds += (seconds + self.dev.launch_s) * weight
        self.flops_total += flops * weight

    def _plan(self, lp: ir.Launch) -> LaunchPlan:
        """The form and parameters the emitter recorded for ``lp`` before printing it
        (:class:`transpile.cuda.forms.LaunchPlan`)."""
        plan = self.info[id(lp)].plan
        assert plan is not None and plan.launch is lp, f"no plan for {lp!r}"
        return plan  # type: ignore[no-any-return]

    def _occupancy(self, name: str, threads_per_block: int, smem: int = 0) -> float:
        d = self.dev
        r = self.res.get(name, Resources())
        warps = math.ceil(threads_per_block / WARP)
        regs_block = warps * math.ceil(max(r.registers, 16) * WARP / 256) * 256
        smem_block = max(smem, r.smem)
        limits = [d.blocks_per_sm, d.threads_per_sm // max(threads_per_block, 1),
                  d.regs_per_sm // max(regs_block, 1)]
        if smem_block:
            limits.append(d.smem_per_sm // smem_block)
        blocks = max(0, min(limits))
        return blocks * threads_per_block / d.threads_per_sm

    def _spill_penalty(self, name: str) -> float:
        r = self.res.get(name)
        return 1.0 + min(2.0, r.spill_bytes / 64) if r is not None else 1.0

    def _generic(self, lp: ir.Launch, env: dict[str, float], shape: str, block: tuple[int, ...]
                 ) -> tuple[float, float, float, float, float, float, dict[str, float]] | None:
        d = self.dev
        name = self.info[id(lp)].kernel if id(lp) in self.info else ""
        chain, body, inner_env = par_chain(lp, env)
        threads = math.prod(trips(loop, e) for loop, e in chain) if chain else 1.0
        if threads <= 0:
            return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, {}
        if shape == "plain" and len(chain) == 1:
            block = (runtime_block(threads, block[0], d.sms), *block[1:])
        x_var = next((loop.var for loop, _ in chain if loop.par == "x"), None)
        coop = 1  # threads cooperating on one reduction loop
        red_var = None
        if shape in _COOP_SHAPES:
            red = next((s for s in ir.walk(lp) if isinstance(s, ir.For) and s.reduce), None)
            if red is not None:
                red_var = red.var
                coop = {"block": math.prod(block), "rows": WARP,
                        "rowprog": cuda_reduce.rowprog_group(threads, d.sms, _row_length(chain, inner_env)),
                        "cols": block[1] if len(block) > 1 else WARP,
                        "grid": math.prod(block) * cuda_reduce.grid_blocks(trips(red, inner_env))}[shape]
                if shape in ("block", "rows", "rowprog", "grid"):
                    x_var = red.var
        work = self._work(body, inner_env, x_var, red_var, coop)
        tpb = math.prod(block)
        # Row coarsening (plain launches): each thread runs ``rows`` iterations of the y loop, so
        # there are fewer blocks and longer chains, and the rows a stencil reads at several y
        # offsets are loaded once per thread (the unrolled iterations share them: tile.shared_rows).
        # Streaming (3-D plain launches): the same along z, as a serial loop of ``stream`` planes.
        loops = [lp_ for lp_, _ in chain]
        li = self.info.get(id(lp))
        if shape != "plain":
            rows = stream = 1
        elif li is not None and li.plan is not None:  # as the emitter printed it (its options)
            rows, stream = li.plan.rows, li.plan.stream
        else:  # a launch the emitter did not report: as it would with these options
            rows, stream = tile.launch_rows(self.tiling, loops), tile.launch_stream(self.tiling, loops)
        for axis, count in (("y", rows), ("z", stream)):
            if count <= 1:
                continue
            saved = tile.shared_rows(body, next(lp_.var for lp_ in loops if lp_.par == axis), count)
            for x, share in saved:
                w0 = _Work()
                self._access(x, w0, inner_env, x_var)
                work.sectors = max(0.0, work.sectors - w0.sectors * share)
        blocks = math.ceil(threads / (tpb / coop)) if shape in _COOP_SHAPES else (
            _padded_blocks(chain, block, rows, stream))
        launched = blocks * tpb
        occ = self._occupancy(name, tpb)
        resident = max(1.0, min(launched, occ * d.threads_per_sm * d.sms))
        waves = max(1.0, launched / resident)
        # ``work`` is one thread's: a reduction launch has ``coop`` threads on each of its ``threads`` items.
        workers = threads * (coop if shape in _COOP_SHAPES else 1)
        flops = work.flops * workers
        cache = work.sectors * workers * SECTOR
        dram = sum(min(n * workers, self._elements(a, env)) * self._esize(a) for a, n in work.per_array.items())
        for a, n in work.per_array.items():
            self.touched[a] = max(self.touched.get(a, 0.0), min(n * workers, self._elements(a, env)) * self._esize(a))
        # Few threads cannot use every fp64 lane; few threads' memory traffic is priced by the
        # latency term (their serial chains), not by the bandwidth terms.
        dram_s = dram / d.dram_bw
        cache_s = cache / d.l2_bw
        compute_s = flops / (d.fp64 * min(1.0, resident / d.fp64_lanes))
        # A serial chain's accesses wait longer on a crowded SM (its warps share the load pipes).
        warps_per_sm = min(math.ceil(blocks / d.sms) * math.ceil(tpb / WARP), occ * d.threads_per_sm / WARP)
        chain_s = rows * stream * (work.iters * d.iter_s + work.accesses * d.access_s * (1 + warps_per_sm / d.contention_warps))
        latency_s = waves * chain_s
        if shape in ("block", "rows", "rowprog", "cols") and coop > 1:
            latency_s += math.log2(coop) * d.access_s  # the tree combine
        if shape == "grid":  # a block's tree, then the fold's serial pass over the blocks' partials
            latency_s += math.log2(tpb) * d.access_s + blocks * (d.iter_s + d.access_s)
        # The busiest SM: a launch of few blocks leaves SMs idle, and each busy SM's share of the
        # traffic and flops goes through that SM alone (its slice of the L2 bandwidth, however
        # many SMs are idle, is at most sm_share times the fair one).
        busiest = math.ceil(blocks / d.sms) / max(blocks, 1)
        sm_s = busiest * (cache / (d.l2_bw / d.sms * d.sm_share) + flops / (d.fp64 / d.sms))
        terms = {"dram_s": dram_s, "cache_s": cache_s, "compute_s": compute_s, "latency_s": latency_s,
                 "sm_s": sm_s}
        seconds = max(terms.values()) * self._spill_penalty(name)
        return seconds, threads, occ, flops, dram, cache, terms

    def _sweep(self, lp: ir.Launch, env: dict[str, float]
               ) -> tuple[float, float, float, float, float, float, dict[str, float]] | None:
        """A sweep nest (:mod:`transpile.cuda.sweep`): the matrix read once along ``c``, the per-tile
        and per-band partials written and read back once, and a fold launch."""
        from transpile.cuda import sweep as cuda_sweep

        d = self.dev
        name = self.info[id(lp)].kernel if id(lp) in self.info else ""
        (outer,) = lp.body
        assert isinstance(outer, ir.For) and len(outer.body) == 1 and isinstance(outer.body[0], ir.For), lp
        inner = outer.body[0]
        rows = trips(outer, env)
        e = dict(env)
        e[outer.var] = _mid(outer, env)
        cols = trips(inner, e)
        if rows <= 0 or cols <= 0:
            return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, {}
        e[inner.var] = _mid(inner, e)
        # One (r, c) point: the terms only (the accumulators live in registers), each element read
        # once however many terms read it (the compiler loads it once); lanes run along c.
        work = _Work()
        seen: set[ir.Index] = set()
        plan = self._plan(lp)  # the sweep nest and its shape, as the emitter printed them
        sw, shape = plan.nest, plan.shape
        assert sw is not None and isinstance(shape, cuda_sweep.Shape), lp
        tiles, bands, band = cuda_sweep.grid(int(rows), int(cols), d.sms, shape)
        for st, kind in zip(inner.body, sw.along):
            assert isinstance(st, ir.Assign), st
            acc = accum.accumulation(st) if kind != "map" else None
            read: ir.Expr = acc.term if acc is not None else st.value
            term_work = _Work()
            self._expr_work(read, term_work, e, inner.var)
            work.flops += term_work.flops
            for x in ir.walk(read):
                if isinstance(x, ir.Index) and x not in seen:
                    seen.add(x)
                    self._access(x, work, e, inner.var)
            if kind == "map":  # M[r][c] = e: the store; later reads of M[r][c] reuse the value
                assert isinstance(st.target, ir.Index), st
                self._access(st.target, work, e, inner.var)
                seen.add(st.target)
        work.iters += 1
        points = rows * cols
        scratch = (sw.along.count("r") * tiles * rows + sw.along.count("c") * bands * cols) * 8.0
        flops = work.flops * points
        cache = work.sectors * points * SECTOR + 2 * scratch
        dram = sum(min(n * points, self._elements(a, env)) * self._esize(a) for a, n in work.per_array.items())
        dram += 2 * scratch  # written by the sweep, read by the fold
        for a, n in work.per_array.items():
            self.touched[a] = max(self.touched.get(a, 0.0), min(n * points, self._elements(a, env)) * self._esize(a))
        tpb = shape.threads
        blocks = tiles * bands
        occ = self._occupancy(name, tpb)
        resident = max(1.0, min(blocks * tpb, occ * d.threads_per_sm * d.sms))
        waves = max(1.0, blocks * tpb / resident)
        # A thread: ceil(band / warps) rows of vec columns, the vec loads of unroll rows independent.
        per_thread = math.ceil(band / shape.warps) * shape.vec
        warps_per_sm = min(math.ceil(blocks / d.sms) * tpb / WARP, occ * d.threads_per_sm / WARP)
        chain_s = per_thread * (work.iters * d.iter_s + work.accesses * d.access_s / (shape.vec * shape.unroll)
                                * (1 + warps_per_sm / d.contention_warps))
        busiest = math.ceil(blocks / d.sms) / max(blocks, 1)
        terms = {"dram_s": dram / d.dram_bw, "cache_s": cache / d.l2_bw,
                 "compute_s": flops / (d.fp64 * min(1.0, resident / d.fp64_lanes)),
                 "latency_s": waves * chain_s + math.log2(WARP) * d.access_s,
                 "sm_s": busiest * (cache / (d.l2_bw / d.sms * d.sm_share) + flops / (d.fp64 / d.sms))}
        seconds = max(terms.values()) * self._spill_penalty(name) + d.launch_s  # + the fold launch
        return seconds, blocks * tpb, occ, flops, dram, cache, terms

    def _chain(self, lp: ir.Launch, env: dict[str, float]
               ) -> tuple[float, float, float, float, float, float, dict[str, float]] | None:
        """A chain nest (:mod:`transpile.cuda.chain`): each row's matrix elements cross from memory
        once and are read twice through the cache (once for ``X``, once for ``Y``), the per-band ``Y``
        partials written and read back once, and a fold launch."""
        from transpile.cuda import chain as cuda_chain

        d = self.dev
        name = self.info[id(lp)].kernel if id(lp) in self.info else ""
        (outer,) = lp.body
        plan = self._plan(lp)  # the chain nest and its threads a block, as the emitter printed them
        ch, tpb = plan.nest, plan.shape
        assert ch is not None and isinstance(tpb, int), lp
        rows_n = trips(outer, env)
        e = dict(env)
        e[outer.var] = _mid(outer, env)
        if rows_n <= 0:
            return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, {}
        flops = dram = cache = accesses = 0.0
        per_array: dict[str, float] = {}
        for loop in (ch.rows, ch.cols):
            n = trips(loop, e)
            if n <= 0:
                continue
            le = dict(e)
            le[loop.var] = _mid(loop, e)
            work = _Work()
            for st in loop.body:
                acc = accum.accumulation(st)
                assert acc is not None, st
                self._expr_work(acc.term, work, le, loop.var)
            flops += work.flops * n * rows_n
            cache += work.sectors * n * rows_n * SECTOR
            accesses += work.accesses * math.ceil(n / tpb)
            for a, k in work.per_array.items():
                per_array[a] = max(per_array.get(a, 0.0), min(k * n * rows_n, self._elements(a, env)))
        cols = max(0.0, trips(ch.cols, e))
        bands, band, in_smem = cuda_chain.grid(int(rows_n), int(cols), ch, tpb, d.sms)
        scratch = len(ch.cols.body) * bands * cols * 8.0
        dram = sum(n * self._esize(a) for a, n in per_array.items()) + 2 * scratch
        cache += 2 * scratch
        if not in_smem:  # too wide: X alone here, the column launch reads the matrix again
            dram += sum(n * self._esize(a) for a, n in per_array.items())
        for a, n in per_array.items():
            self.touched[a] = max(self.touched.get(a, 0.0), n * self._esize(a))
        occ = self._occupancy(name, tpb, cuda_chain.smem_bytes(ch, int(cols)) if in_smem else 0)
        resident = max(1.0, min(bands * tpb, occ * d.threads_per_sm * d.sms))
        # A thread, per row: its share of the row's terms (4 loads in flight), two barriers and the
        # shuffle tree between the two halves.
        per_row = accesses * d.access_s / 4 + 2 * (math.log2(WARP) + 2) * d.iter_s + 2 * d.access_s
        terms = {"dram_s": dram / d.dram_bw, "cache_s": cache / d.l2_bw,
                 "compute_s": flops / (d.fp64 * min(1.0, resident / d.fp64_lanes)),
                 "latency_s": band * per_row,
                 "sm_s": math.ceil(bands / d.sms) / max(bands, 1) * (cache / (d.l2_bw / d.sms * d.sm_share)
                                                                      + flops / (d.fp64 / d.sms))}
        seconds = max(terms.values()) * self._spill_penalty(name) + d.launch_s  # + the fold launch
        return seconds, bands * tpb, occ, flops, dram, cache, terms

    def _tiled(self, lp: ir.Launch, env: dict[str, float], shape: str
               ) -> tuple[float, float, float, float, float, float, dict[str, float]] | None:
        d = self.dev
        li = self.info[id(lp)]
        planned = self._plan(lp)  # the tiling plan and the collapsed nest, as the emitter printed them
        plan, flat = planned.tile, planned.collapsed
        assert plan is not None, lp
        e_row = dict(env)
        # A merged row loop's bound is guarded by a Select, which value() averages: count its rows.
        m = trips(plan.row, e_row) if flat is None else trips(flat.outer[0], env) * trips(flat.outer[1], env)
        e_row[plan.row.var] = _mid(plan.row, e_row)
        n = trips(plan.col, e_row)
        e_row[plan.col.var] = _mid(plan.col, e_row)
        k = trips(plan.red, e_row)
        if m <= 0 or n <= 0:
            return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, {}
        rate = d.fp64 * 0.7
        if shape == "mma" and plan.mma is not None:
            bm, bn, bk = plan.mma[0], plan.mma[1], plan.mma[2]
            rate = d.fp64_mma * d.mma_eff * dict(d.mma_share)[tile.mma_instruction(plan.mma_inst, plan.mma[3], bk)]
        else:
            bm, bn, bk = plan.bm, plan.bn, plan.bk
        tpb = math.prod(li.block)
        smem = plan.shared_bytes if shape == "tiled" else 0
        occ = self._occupancy(li.kernel, tpb, smem)
        tiles: float = math.ceil(m / bm) * math.ceil(n / bn)
        if plan.triangular:
            tiles = tiles / 2 + math.ceil(m / bm) / 2
        body = _Work()
        for s in (plan.update,):
            self._stmt_work(s, body, e_row, None)
        flops = body.flops * m * n * k
        cache = (m * n * k) * 8 * (1 / bn + 1 / bm) + m * n * 8 * 2
        arrays = {x.array for x in ir.walk(lp) if isinstance(x, ir.Index)}
        dram = sum(self._elements(a, env) * self._esize(a) for a in arrays)
        slots = max(1.0, occ * d.threads_per_sm / tpb) * d.sms  # blocks resident at once
        waves = max(1.0, tiles / slots)
        fill = min(1.0, tiles / d.sms)  # a block per SM at least, or SMs idle
        # Too few warps per SM cannot hide the pipeline's latency; a tensor-core loop whose tiles arrive
        # through a cp.async pipeline of 3+ buffers hides it with fewer (H200, run 46: trmm's 190-register
        # build, one block of 8 warps per SM, 0.393 ms against 0.580 for a 117-register build at two).
        hiding = d.hiding_occupancy
        if shape == "mma" and plan.mma is not None and plan.mma[5] >= 3:
            hiding = d.hiding_occupancy_pipelined
        hide = min(1.0, occ / hiding)
        compute_s = flops / (rate * fill * hide)
        latency_s = waves * math.ceil(k / bk) * d.step_s
        if shape == "mma" and plan.mma is not None and plan.k_tri:
            # The terms outside a tile's common k range: about bm / 2 per row (unit-affine bounds).
            # On the tensor cores (mma_edge): bm more k, in unpipelined steps of two barriers each;
            # else one by one on the FMA pipes, their operands from global memory.
            if plan.mma_edge:
                latency_s += waves * math.ceil(bm / bk) * 2 * d.step_s
            else:
                # Each edge term reads its operands through L1 (global memory, no staging): the load
                # pipes, not the FMA pipes, bound it (trmm, symm: 0.67-0.71x the tensor-core edge).
                terms_n = tiles * bm * bn * bm / 2
                edge = body.flops * terms_n  # part of flops, at the FMA rate
                operands = sum(isinstance(x, ir.Index) and x != plan.update.target  # the accumulator
                               for x in ir.walk(plan.update.value))  # stays in a register
                loads = terms_n * max(1, operands) * 8
                compute_s += max(edge / (d.fp64 * 0.7 * fill * hide), loads / (d.l1_bw * fill))
        terms = {"dram_s": dram / d.dram_bw, "cache_s": cache / d.l2_bw, "compute_s": compute_s,
                 "latency_s": latency_s}
        seconds = max(terms.values()) * self._spill_penalty(li.kernel)
        return seconds, tiles * tpb, occ, flops, dram, cache, terms

    # -- per-thread work

    def _work(self, body: Sequence[ir.Stmt], env: dict[str, float], x_var: str | None, red_var: str | None,
              coop: int) -> _Work:
        w = _Work()
        for s in body:
            self._stmt_work(s, w, env, x_var, red_var=red_var, coop=coop)
        return w

    def _stmt_work(self, s: ir.Stmt, w: _Work, env: dict[str, float], x_var: str | None, *,
                   red_var: str | None = None, coop: int = 1) -> None:
        if isinstance(s, ir.For):
            n = trips(s, env)
            if (s.var == red_var or s.reduce or s.par == "lane") and coop > 1:  # split over the cooperating threads
                n = math.ceil(n / coop)
            inner_env = dict(env)
            inner_env[s.var] = _mid(s, env)
            inner = self._work(s.body, inner_env, x_var, red_var, coop)
            inner.iters += 1
            w.add(inner, n)
        elif isinstance(s, ir.If):
            self._expr_work(s.cond, w, env, x_var)
            a = self._work(s.then, env, x_var, red_var, coop)
            b = self._work(s.orelse, env, x_var, red_var, coop)
            divergent = x_var is not None and x_var in tile.var_names(s.cond)
            if divergent:  # both sides run, one after the other, in a warp
                w.add(a)
                w.add(b)
            else:
                w.add(a, 0.5)
                w.add(b, 0.5)
        elif isinstance(s, ir.Assign):
            self._expr_work(s.value, w, env, x_var)
            if isinstance(s.target, ir.Index):
                self._access(s.target, w, env, x_var)
                for i in s.target.indices:
                    self._expr_work(i, w, env, x_var)
        elif isinstance(s, ir.Decl) and s.init is not None:
            self._expr_work(s.init, w, env, x_var)
        elif isinstance(s, ir.Launch):
            for t in s.body:
                self._stmt_work(t, w, env, x_var, red_var=red_var, coop=coop)

    def _expr_work(self, e: ir.Expr, w: _Work, env: dict[str, float], x_var: str | None) -> None:
        for x in ir.walk(e):
            if isinstance(x, ir.Index):
                self._access(x, w, env, x_var)
            elif isinstance(x, ir.Binary) and x.ty.is_float and x.op in ("+", "-", "*", "/"):
                w.flops += DIV_FLOPS if x.op == "/" else 1.0
            elif isinstance(x, ir.Call) and x.ty.is_float:
                w.flops += CALL_FLOPS

    def _access(self, x: ir.Index, w: _Work, env: dict[str, float], x_var: str | None) -> None:
        ty = self.arrays.get(x.array)
        esize = ty.elem.bits // 8 if ty is not None else 8
        stride = self._stride(x, env, x_var)
        if stride == 0:
            sectors = 1 / WARP
        elif stride is not None and abs(stride) * esize < SECTOR:
            sectors = abs(stride) * esize / SECTOR
        else:
            sectors = 1.0
        w.sectors += sectors
        w.accesses += 1
        w.per_array[x.array] = w.per_array.get(x.array, 0.0) + 1

    def _stride(self, x: ir.Index, env: dict[str, float], x_var: str | None) -> float | None:
        """Elements between the addresses of neighbouring ``threadIdx.x`` threads (None: unknown)."""
        if x_var is None:
            return 0.0
        ty = self.arrays.get(x.array)
        if ty is None:
            return None
        dims = [value(d, env) for d in ty.dims]
        stride, mult = 0.0, 1.0
        for sub, extent in zip(reversed(x.indices), reversed(dims)):
            if x_var in tile.var_names(sub):
                aff = accesses.affine(sub, tile.var_names(sub))
                if aff is None:
                    return None
                stride += aff.coeff(x_var) * mult
            mult *= extent if extent is not None else 1e6
        return stride

    def _elements(self, array: str, env: Mapping[str, float]) -> float:
        ty = self.arrays.get(array)
        if ty is None:
            return 0.0
        n = 1.0
        for dim in ty.dims:
            v = value(dim, {**self.env, **env})
            n *= v if v is not None and v > 0 else 1.0
        return n

    def _esize(self, array: str) -> int:
        ty = self.arrays.get(array)
        return ty.elem.bits // 8 if ty is not None else 8

    def ideal(self) -> float:
        """Compulsory traffic (every array touched, once) over DRAM bandwidth, or flops over the peak."""
        bytes_ = sum(self.touched.values())
        return max(bytes_ / self.dev.dram_bw, self.flops_total / self.dev.fp64_mma)


def par_chain(lp: ir.Launch, env: dict[str, float]) -> tuple[list[tuple[ir.For, dict[str, float]]],
                                                              Sequence[ir.Stmt], dict[str, float]]:
    """The launch's par loops (each with the environment its bounds see), the body inside them,
    and the environment of the body (par variables at their average value)."""
    chain: list[tuple[ir.For, dict[str, float]]] = []
    body: Sequence[ir.Stmt] = lp.body
    cur = dict(env)
    while len(body) == 1 and ir.grid_par(body[0]):
        loop = body[0]
        chain.append((loop, dict(cur)))
        cur[loop.var] = _mid(loop, cur)
        body = loop.body
    return chain, body, cur


def runtime_block(n: float, block: int, sms: int) -> int:
    """Threads per block a 1-D plain launch of ``n`` iterations runs with (the template's
    ``transpile_block``): ``block`` halved, through multiples of 32, while there would be fewer
    blocks than SMs."""
    while block % 64 == 0 and math.ceil(n / block) < sms:
        block //= 2
    return block


def _row_length(chain: list[tuple[ir.For, dict[str, float]]], env: dict[str, float]) -> float | None:
    """The trip count of the loop whose count the host's choice of a row program's form reads
    (cuda_reduce.row_length, with the sizes of ``env`` for the host's scalars), or None."""
    row = next((loop for loop, _ in chain if loop.par == "x"), None)
    grid_vars = {loop.var for loop, _ in chain}  # the host knows the sizes, not the rows' own variables
    first = None if row is None else cuda_reduce.row_length(row, frozenset(env) - grid_vars)
    return None if first is None else trips(first, env)


_COOP_SHAPES = ("block", "rows", "rowprog", "cols", "grid")
"""Launch shapes whose threads cooperate on each reduction (docs/parallelism.md, codegen)."""


def _padded_blocks(chain: list[tuple[ir.For, dict[str, float]]], block: tuple[int, ...], rows: int = 1,
                   stream: int = 1) -> float:
    """Blocks of a plain launch: each par dimension rounded up to the block's extent in it (times
    ``rows`` iterations per thread along y, ``stream`` along z)."""
    n = 1.0
    for loop, e in chain:
        axis = "xyz".index(loop.par or "x")
        per = block[axis] * {"y": rows, "z": stream}.get(loop.par or "x", 1) if axis < len(block) else 1
        n *= math.ceil(trips(loop, e) / per)
    return n


