"""``transpile K.c --evolve``: search over schedules, keep the fastest verified one.

A *schedule* (:class:`Schedule`) is a setting of the knobs the passes and
emitters already have: fusion on/off, the tiled path's tile and micro-tile,
shared-memory staging, fp64 tensor cores and their tile shape, and the block
shape of plain launches.  A search (:class:`Search`) runs in generations:

1. **Generation 0** probes one change of each knob from the default (plus,
   with an LLM endpoint, the model's proposals, parsed like any user input:
   :meth:`Schedule.parse`).  Candidates whose CUDA equals an earlier one's are
   recorded as duplicates (``same_as``) and cost nothing more; a knob whose
   changes never alter the CUDA is dropped from the search.
2. **Correctness first**: a candidate enters the ranking only after it passes
   every verifier stage that can run here (``transpile.verify``; (a)-(c)
   without a GPU, (a)-(f) with one).  Failures are fed back: a candidate
   whose nvcc report shows spills makes every schedule at least as
   register-hungry taboo; a wrong result, an nvcc error or an emitter error
   makes the knob change that produced it taboo for the rest of the search.
3. **Speed**: the timing stage (f) on a GPU, else the structural cost model
   (:mod:`transpile.search.costmodel`) at the search's sizes, with ptxas's registers,
   shared memory and spills from stage (b).
4. **Tournament**: the verified candidates are ranked by a round robin of
   pairwise comparisons (:func:`transpile.search.rewards.tournament`: correctness,
   then speed, ties within timing noise); the best two are the parents of
   the next generation, which changes one or two of their knobs at random
   (``random.Random(seed)``: the same seed gives the same search).
5. **Pruning**: no generation after the first when the best candidate is
   already within :data:`NEAR_ROOF` of its roofline bound; stop with a report
   when nothing has passed after :data:`STUCK_ROUNDS` generations, or when a
   generation brings nothing new; ``rounds`` and ``time_budget`` cap the rest.
   :func:`search_many` shares one budget among several searches so that the
   time goes to the kernels in between.

Results are cached (:class:`Cache`) by the kernel's IR, the sizes, the
measuring device and the search settings, so a second run only lowers and
emits the cached schedule.  docs/evolve.md has the design and the measurements.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from passes import tile as tiles
from transpile import __version__, ir
from transpile.search import costmodel

#: Stop after the first generation when the best candidate's estimated (or measured) time is
#: within this fraction of its roofline bound (``ideal / time``).
NEAR_ROOF = 0.8
#: Stop when no candidate has passed after this many generations.
STUCK_ROUNDS = 2
#: Parents per generation, and children per parent.
PARENTS = 2
CHILDREN = 3
#: Bumped when the knob space or the search changes (part of the cache key).
SEARCH_VERSION = 5  # 4: the model margin (MODEL_MARGIN) and the cost model of 2026-12-05; 5: the steps knob

# ---------------------------------------------------------------------------
# Schedules


Pair = tuple[int, int]
Block = tuple[int, int, int]

#: The values each knob takes in the search (the default first).
SPACE: dict[str, tuple[Any, ...]] = {
    "fuse": (True, False),
    "shared": (True, False),
    "mma": (True, False),
    "tile": ((64, 64), (32, 32), (64, 32), (32, 64), (128, 64), (64, 128)),
    "coarsen": ((4, 4), (2, 2), (4, 2), (2, 4), (8, 4), (4, 8)),
    "mma_shape": (tiles.DEFAULT_MMA, (128, 64, 8, 32, 32, 3), (64, 128, 8, 32, 32, 3), (64, 64, 16, 32, 32, 3),
                  (32, 32, 8, 16, 16, 2), (64, 64, 8, 32, 32, 2), (128, 64, 8, 64, 32, 3),
                  (32, 128, 8, 16, 32, 3)),
    "mma_inst": (tiles.DEFAULT_MMA_INST,) + tuple(i for i in tiles.MMA_INSTRUCTIONS if i != tiles.DEFAULT_MMA_INST),
    "mma_edge": (True, False),  # triangular k: edge terms on the tensor cores (masked) or one by one
    "block1": ((256, 1, 1), (128, 1, 1), (512, 1, 1), (1024, 1, 1), (64, 1, 1)),
    "block2": ((32, 8, 1), (32, 4, 1), (32, 16, 1), (64, 4, 1), (128, 2, 1), (16, 16, 1), (256, 1, 1)),
    "block3": ((32, 4, 2), (32, 8, 1), (32, 2, 4), (64, 4, 1), (16, 8, 2)),
    "rows": (0, 1, 2, 4, 8),  # 0: automatic (passes.tile.launch_rows)
    "stream": (0, 1, 4, 16),  # 0: automatic (passes.tile.launch_stream)
    "sweep": (tiles.DEFAULT_SWEEP, (4, 8, 2, 16), (4, 8, 4, 16), (8, 8, 1, 16), (8, 8, 2, 8), (2, 8, 4, 16),
              (4, 16, 1, 8), (4, 8, 2, 8), (4, 8, 2, 32)),
    "chain": (tiles.DEFAULT_CHAIN, 512, 256),  # chain launches: threads per block
    "steps": (True, False),  # time loops of stencil launches: fused kernels of several steps, or one by one
}


MODEL_MARGIN = 0.10
"""Without a GPU, the search keeps the default schedule unless the cost model estimates a candidate
faster by more than this fraction.  The model's ranks are rough (Spearman 0.2-0.9 per kernel on the
H200, docs/evolve.md): in run 46 its picks within 3% of the default (jacobi-2d's ``rows=8``,
estimated 3% faster) measured 8% slower, while the defaults are themselves measured choices."""


def clearly_faster(estimate_ms: float, default_ms: float) -> bool:
    """Whether a model estimate beats the default's by more than :data:`MODEL_MARGIN` (the rule by
    which an estimated, not measured, candidate may replace the default)."""
    return estimate_ms <= default_ms * (1 - MODEL_MARGIN)


@dataclass(frozen=True)
class Schedule:
    """One point of the search space; :meth:`name` is its canonical text (``default`` or
    ``knob=value`` words for the knobs that differ from the default, e.g.
    ``tile=32x64 coarsen=2x4 block2=64x4x1 fuse=off``), which :meth:`parse` reads back."""

    fuse: bool = True
    shared: bool = True
    mma: bool = True
    tile: Pair = tiles.DEFAULT_TILE
    coarsen: Pair = tiles.DEFAULT_COARSEN
    mma_shape: tuple[int, int, int, int, int, int] = tiles.DEFAULT_MMA
    mma_inst: Pair = tiles.DEFAULT_MMA_INST
    mma_edge: bool = True
    block1: Block = tiles.DEFAULT_BLOCKS[0]
    block2: Block = tiles.DEFAULT_BLOCKS[1]
    block3: Block = tiles.DEFAULT_BLOCKS[2]
    rows: int = 0
    stream: int = 0
    sweep: tuple[int, int, int, int] = tiles.DEFAULT_SWEEP
    chain: int = tiles.DEFAULT_CHAIN
    steps: bool = True
    reassociate: bool = True  # not searched: --no-reassociate is the user's constraint (it also forbids mma)

    def options(self) -> tiles.Options:
        """The emitter's options (:mod:`passes.tile`)."""
        return tiles.Options(tile=self.tile, coarsen=self.coarsen, shared=self.shared,
                            mma=None if self.mma and self.reassociate else False, mma_shape=self.mma_shape,
                            mma_inst=self.mma_inst, mma_edge=self.mma_edge, blocks=(self.block1, self.block2, self.block3), rows=self.rows,
                            stream=self.stream, sweep=self.sweep, chain=self.chain, steps=self.steps,
                            reassociate=self.reassociate)

    def problem(self) -> str | None:
        """Why this schedule is not valid (a message), or None."""
        return self.options().problem()

    def lower(self, module: ir.Module) -> ir.Module:
        """``module`` (front-end IR) through the pipeline with this schedule's pass options."""
        from transpile import pipeline

        return pipeline.lower(module, reassociate=self.reassociate, fuse=self.fuse)

    def emit(self, lowered: ir.Module, source: str, host: ir.Module | None = None) -> str:
        """The CUDA of ``lowered`` under this schedule (``host``: the front end's module, for the
        drop-ins' host path, as the plain compile emits it)."""
        from transpile import cuda

        return cuda.emit(lowered, source=source, tiling=self.options(), host=host)

    def emit_with_launches(self, lowered: ir.Module, source: str, host: ir.Module | None = None
                           ) -> tuple[str, dict[str, Any]]:
        """:meth:`emit`, and each kernel's launches as the emitter made them (for the cost model)."""
        from transpile import cuda

        return cuda.emit_with_launches(lowered, source=source, tiling=self.options(), host=host)

    def knobs(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name in SPACE}

    def diff(self, other: Schedule) -> dict[str, Any]:
        """The knobs whose values differ from ``other``'s (this schedule's values)."""
        mine, theirs = self.knobs(), other.knobs()
        return {k: v for k, v in mine.items() if theirs[k] != v}

    def name(self) -> str:
        words = [f"{k}={_show(v)}" for k, v in self.diff(Schedule()).items()]
        return " ".join(words) or "default"

    @staticmethod
    def parse(text: str, base: Schedule | None = None) -> Schedule:
        """The schedule named ``text`` (over ``base``'s knobs); ValueError with the reason if it is
        malformed, names an unknown knob or value, or is invalid."""
        sched = base or Schedule()
        words = text.replace(",", " ").split()
        if words == ["default"]:
            return Schedule(reassociate=sched.reassociate)
        if not words:
            raise ValueError("empty schedule")
        changes: dict[str, Any] = {}
        for w in words:
            key, eq, val = w.partition("=")
            if not eq or key not in SPACE:
                raise ValueError(f"unknown knob {w!r} (knobs: {', '.join(SPACE)})")
            if key in changes:
                raise ValueError(f"knob {key!r} given twice")
            changes[key] = _value(key, val)
        out = replace(sched, **changes)
        problem = out.problem()
        if problem is not None:
            raise ValueError(problem)
        return out


def _show(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, int):
        return str(v)
    return "x".join(map(str, v))


def _value(key: str, text: str) -> Any:
    default = SPACE[key][0]
    if isinstance(default, bool):
        if text not in ("on", "off"):
            raise ValueError(f"{key}={text}: expected on or off")
        return text == "on"
    if isinstance(default, int):
        if not re.fullmatch(r"\d{1,4}", text) or int(text) < 1:
            raise ValueError(f"{key}={text}: expected a positive integer")
        return int(text)
    if not re.fullmatch(r"\d{1,4}(x\d{1,4})*", text):
        raise ValueError(f"{key}={text}: expected {len(default)} positive integers joined by x")
    parts = tuple(int(p) for p in text.split("x"))
    if len(parts) != len(default) or min(parts) < 1:
        raise ValueError(f"{key}={text}: expected {len(default)} positive integers joined by x")
    return parts


# ---------------------------------------------------------------------------
# Trials


@dataclass
class Trial:
    """One candidate schedule and what happened to it."""

    schedule: Schedule
    generation: int
    origin: str  # "default", "probe", "mutation", "llm" (a proposed schedule), "llm-cuda" (an edited file), "include"
    parent: str | None = None
    status: str = "pending"  # pass, fail, error, duplicate, unverified, inconclusive
    same_as: str | None = None
    stage: str | None = None  # the failed stage
    reason: str = ""
    digest: str | None = None
    text: str | None = field(default=None, repr=False)
    lowered: ir.Module | None = field(default=None, repr=False)
    model_ms: float | None = None
    ideal_ms: float | None = None
    measured_ms: float | None = None
    resources: list[dict[str, Any]] = field(default_factory=list)
    rank: float | None = None
    reward: float | None = None
    feedback: str = ""
    label: str | None = None  # an LLM-edited file's name ("llm-cuda-G"); else the schedule names it

    @property
    def name(self) -> str:
        return self.label or self.schedule.name()

    @property
    def cost_ms(self) -> float | None:
        """What the search ranks by: the measured time when there is one, else the model's."""
        return self.measured_ms if self.measured_ms is not None else self.model_ms

    def record(self) -> dict[str, Any]:
        """The verifier-record view :mod:`transpile.search.rewards` compares."""
        passed = "abcdef" if self.status == "pass" else (
            "abcdef"[: "abcdef".index(self.stage)] if self.stage in tuple("abcdef") else "")
        rec: dict[str, Any] = {"verdict": "pass" if self.status == "pass" else "fail",
                               "stages_passed": list(passed)}
        if self.measured_ms is not None:
            rec["timing"] = {"median_ms": self.measured_ms}
        if self.model_ms is not None:
            rec["cost_model"] = {"ms": self.model_ms}
        return rec

    def row(self) -> dict[str, Any]:
        """A JSON-able summary (the final table, the cache)."""
        return {"schedule": self.name, "generation": self.generation, "origin": self.origin,
                "parent": self.parent, "status": self.status, "same_as": self.same_as, "stage": self.stage,
                "reason": self.reason[:200], "model_ms": self.model_ms, "measured_ms": self.measured_ms,
                "ideal_ms": self.ideal_ms, "rank": self.rank, "reward": self.reward, "feedback": self.feedback}


@dataclass
class Checked:
    """What a check of one candidate returns (:func:`verify_candidate` or a test's stand-in)."""

    ok: bool
    stage: str | None = None
    reason: str = ""
    measured_ms: float | None = None
    resources: list[dict[str, Any]] = field(default_factory=list)
    verified: bool = True  # False: passed, but no stage compared results (unverified)
    inconclusive: bool = False  # not ok, but not a failure either: the test could not be set up


Check = Callable[[ir.Module, ir.Module | None, str], Checked]
"""``check(front_end_module, lowered, cuda_text) -> Checked`` (``lowered`` None: a file not emitted
from the IR, e.g. an LLM's edit)."""


def verify_candidate(source: Path, *, gpu: bool, sizes: Mapping[str, int], seed: int,
                     function: str | None = None, include_dirs: Sequence[str] = (),
                     defines: Sequence[str] = ()) -> Check:
    """The real check: the verifier's stages (a)-(c) here, (a)-(f) with a GPU (timing at ``sizes``)."""
    from transpile.verify import Options, verify_module

    def check(module: ir.Module, lowered: ir.Module | None, text: str) -> Checked:
        opts = Options(seed=seed, mode="full" if gpu else "quick", full_seeds=1, sanitizer=False,
                       stages="abcdef" if gpu else "abc", gpu=None if gpu else False, sizes=dict(sizes))
        reports = verify_module(module, text, source=source, lowered=lowered, function=function,
                                include_dirs=include_dirs, defines=defines, options=opts)
        res = [r for rep in reports for r in rep.resources]
        for rep in reports:
            if rep.verdict in ("fail", "inconclusive"):
                fail = rep.failure
                return Checked(False, fail.key if fail else None, rep.reason, resources=res,
                               inconclusive=rep.verdict == "inconclusive")
        times = [rep.timing.get("median_ms") for rep in reports]
        ms = sum(float(t) for t in times if isinstance(t, (int, float))) \
            if times and all(isinstance(t, (int, float)) for t in times) else None
        return Checked(True, resources=res, measured_ms=ms,
                       verified=all(rep.verdict == "pass" for rep in reports))

    return check


# ---------------------------------------------------------------------------
# The search


@dataclass
class Settings:
    """What a search may do."""

    rounds: int = 4  # generations, the first included
    time_budget: float = 900.0  # seconds
    seed: int = 1
    sizes: dict[str, int] = field(default_factory=dict)
    measure: str = "model"  # model or gpu
    fixed: frozenset[str] = frozenset()  # knobs the user set (not searched)
    base: Schedule = field(default_factory=Schedule)
    near_roof: float = NEAR_ROOF
    stuck_rounds: int = STUCK_ROUNDS


class Search:
    """One kernel module's search; :meth:`step` runs one generation."""

    def __init__(self, module: ir.Module, source: str, check: Check, settings: Settings, *,
                 propose: Callable[[Search], Iterable[str]] | None = None,
                 edit: Callable[[Search, Trial], str] | None = None,
                 progress: Callable[[str, int, int], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.edit = edit
        self.module = module
        self.source = source
        self.check = check
        self.s = settings
        self.propose = propose
        self.progress = progress or (lambda label, done, total: None)
        self.clock = clock
        self.rng = random.Random(settings.seed)
        self.trials: list[Trial] = []
        self.by_name: dict[str, Trial] = {}
        self.by_digest: dict[str, str] = {}
        self.rejected: list[str] = []  # LLM proposals that did not parse
        self.taboo: list[tuple[str, Any]] = []  # (knob, value) changes that broke a candidate
        self.spill_floor: int | None = None  # coarsening product at which spills were seen
        self.relevant: set[str] = set(SPACE) - set(settings.fixed)
        self.generation = 0
        self.stopped: str | None = None
        self.started = clock()
        self.lowered_cache: dict[tuple[bool, bool], ir.Module] = {}

    # -- the loop

    def run(self) -> Trial | None:
        while self.stopped is None:
            self.step()
        return self.best()

    def step(self) -> None:
        """One generation: propose, check, rank, then decide whether to go on."""
        if self.stopped is not None:
            return
        if self.generation >= self.s.rounds:
            self.stopped = f"{self.s.rounds} generation(s) run (--evolve-rounds)"
            return
        if self.clock() - self.started > self.s.time_budget:
            self.stopped = f"time budget of {self.s.time_budget:.0f} s spent (--evolve-time)"
            return
        fresh = self._candidates()
        if not fresh and self.generation > 0:
            self.stopped = "converged: no untried candidate left near the best ones"
            return
        for i, t in enumerate(fresh):
            if self.clock() - self.started > self.s.time_budget:
                t.status, t.reason = "skipped", "time budget spent"
                continue
            self.progress(f"generation {self.generation}", i, len(fresh))
            self._evaluate(t)
        self.progress(f"generation {self.generation}", len(fresh), len(fresh))
        if self.generation == 0:
            self._prune_knobs()
        self._rank()
        self.generation += 1
        passed = [t for t in self.trials if t.status == "pass"]
        best = self.best()
        if not passed and self.generation >= self.s.stuck_rounds:
            self.stopped = f"nothing passed verification in {self.generation} generation(s)"
        elif best is not None and best.ideal_ms and best.cost_ms and best.ideal_ms / best.cost_ms >= self.s.near_roof:
            self.stopped = (f"near the roofline: {best.name} at {100 * best.ideal_ms / best.cost_ms:.0f}% of its "
                            "bound")
        elif not self.relevant:
            self.stopped = "no knob changes this kernel's CUDA"

    def include(self, sched: Schedule, origin: str = "include") -> Trial:
        """Try ``sched`` outside the generations (a schedule a caller wants measured whatever the
        ranking says), then rank again; an already tried schedule is returned as it was."""
        if sched.name() in self.by_name:
            return self.by_name[sched.name()]
        trial = Trial(sched, self.generation, origin)
        self._add(trial)
        self._evaluate(trial)
        self._rank()
        return trial

    def best(self) -> Trial | None:
        """The tournament's winner; but the default schedule when the winner is not clearly faster
        (within the tournament's tie margin of the default: ties in a round robin are not
        transitive, so a candidate can outscore the default without beating it)."""
        from transpile.search import rewards

        ranked = [t for t in self.trials if t.status == "pass" and t.rank is not None]
        if not ranked:
            return None
        top = min(ranked, key=lambda t: (t.rank, t.cost_ms if t.cost_ms is not None else math.inf,
                                         self.trials.index(t)))
        default = next((t for t in ranked if t.origin == "default"), None)
        if default is None or top is default:
            return top
        if rewards.compare(top.record(), default.record()) != 1:
            return default
        if top.measured_ms is None and top.model_ms is not None and default.model_ms is not None and \
                not clearly_faster(top.model_ms, default.model_ms):
            return default  # estimated, not measured: only a clear gain overrides the default
        return top

    # -- candidates

    def _candidates(self) -> list[Trial]:
        out: list[Trial] = []
        if self.generation == 0:
            base = self.s.base
            out.append(Trial(base, 0, "default"))
            for knob in SPACE:
                if knob in self.s.fixed:
                    continue
                for v in SPACE[knob][1:]:
                    cand = replace(base, **{knob: v})
                    if getattr(base, knob) != v and cand.problem() is None:
                        out.append(Trial(cand, 0, "probe", parent=base.name()))
                        break  # one probe per knob; more values come by mutation
            if self.propose is not None:
                out += self._proposals()
        else:
            ranked = sorted((t for t in self.trials if t.status == "pass" and t.rank is not None),
                            key=lambda t: (t.rank, self.trials.index(t)))
            # Nothing passed yet: look further from the base schedule.
            parents = [t.schedule for t in ranked[:PARENTS]] or [self.s.base]
            for p in parents:
                made = 0
                for _ in range(40):
                    if made >= CHILDREN:
                        break
                    child = self._mutate(p)
                    if child is not None and child.name() not in self.by_name and \
                            child.name() not in (t.name for t in out):
                        out.append(Trial(child, self.generation, "mutation", parent=p.name()))
                        made += 1
            if self.propose is not None:
                out += self._proposals()
            out += self._edits()
        unique: list[Trial] = []
        for t in out:
            if t.name in self.by_name or t.name in (u.name for u in unique):
                continue
            why = self._forbidden(t.schedule)
            if why:
                t.status, t.reason = "skipped", why
                self._add(t)
                continue
            unique.append(t)
        for t in unique:
            self._add(t)
        return unique

    def _proposals(self) -> list[Trial]:
        out = []
        assert self.propose is not None
        for text in self.propose(self):
            try:
                sched = Schedule.parse(text, self.s.base)
            except ValueError as e:
                self.rejected.append(f"generation {self.generation}: proposal {text[:60]!r} rejected: {e}")
                continue
            if any(getattr(sched, k) != getattr(self.s.base, k) for k in self.s.fixed):
                continue
            out.append(Trial(sched, self.generation, "llm"))
        return out

    def _edits(self) -> list[Trial]:
        """The LLM's edit of the best candidate's CUDA, if an editor is set and times are measured
        (an edited file has no IR the cost model could price, so only a GPU can rank it)."""
        best = self.best()
        if self.edit is None or self.s.measure != "gpu" or best is None or best.text is None:
            return []
        try:
            text = self.edit(self, best)
        except ValueError as e:
            self.rejected.append(f"generation {self.generation}: edit of {best.name!r} rejected: {e}")
            return []
        t = Trial(best.schedule, self.generation, "llm-cuda", parent=best.name,
                  label=f"llm-cuda-{self.generation}")
        t.text = text
        return [t]

    def _mutate(self, sched: Schedule) -> Schedule | None:
        knobs = sorted(self.relevant)
        if not knobs:
            return None
        changes = {}
        for knob in self.rng.sample(knobs, k=min(len(knobs), 1 + (self.rng.random() < 0.3))):
            options = [v for v in SPACE[knob] if v != getattr(sched, knob)]
            changes[knob] = self.rng.choice(options)
        child = replace(sched, **changes)
        return child if child.problem() is None else None

    def _forbidden(self, sched: Schedule) -> str:
        for knob, v in self.taboo:
            if getattr(sched, knob) == v:
                return f"taboo: {knob}={_show(v)} broke an earlier candidate"
        if self.spill_floor is not None and sched.coarsen[0] * sched.coarsen[1] >= self.spill_floor \
                and sched.coarsen != self.s.base.coarsen:
            return f"taboo: micro-tiles of {self.spill_floor} or more outputs spilled registers"
        return ""

    def _add(self, t: Trial) -> None:
        self.trials.append(t)
        self.by_name[t.name] = t

    # -- evaluation

    def _evaluate(self, t: Trial) -> None:
        from transpile.diagnostics import TranspileError

        lowered: ir.Module | None = None
        launches: dict[str, Any] = {}  # per kernel, what the emitter made (for the cost model)
        if t.origin == "llm-cuda" and t.text is not None:
            text = t.text  # an edited file: verified as it is, like any user's .cu
        else:
            try:
                key = (t.schedule.fuse, t.schedule.reassociate)
                if key not in self.lowered_cache:
                    self.lowered_cache[key] = t.schedule.lower(self.module)
                lowered = self.lowered_cache[key]
                text, launches = t.schedule.emit_with_launches(lowered, self.source, host=self.module)
            except (TranspileError, AssertionError, ValueError) as e:
                t.status, t.stage, t.reason = "error", "emit", f"{type(e).__name__}: {e}"[:300]
                self._learn(t)
                return
        t.digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        if t.digest in self.by_digest:
            t.status, t.same_as = "duplicate", self.by_digest[t.digest]
            return
        self.by_digest[t.digest] = t.name
        t.text, t.lowered = text, lowered
        res = self.check(self.module, lowered, text)
        t.resources = res.resources
        if not res.ok:
            t.status, t.stage, t.reason = "inconclusive" if res.inconclusive else "fail", res.stage, res.reason
            if t.origin != "llm-cuda":
                self._learn(t)
            return
        t.status = "pass" if res.verified else "unverified"
        t.measured_ms = res.measured_ms
        if lowered is not None:
            self._model(t, lowered, launches)
        spilled = [r for r in res.resources if r.get("spill_stores", 0) + r.get("spill_loads", 0)]
        if spilled and t.schedule.coarsen != self.s.base.coarsen:
            floor = t.schedule.coarsen[0] * t.schedule.coarsen[1]
            self.spill_floor = floor if self.spill_floor is None else min(self.spill_floor, floor)
            t.feedback = f"spills in {spilled[0].get('kernel')}: micro-tiles of {floor}+ outputs are taboo"

    def _model(self, t: Trial, lowered: ir.Module, infos: Mapping[str, Any]) -> None:
        res = {r.get("kernel", ""): costmodel.Resources(r.get("registers", 32), r.get("smem", 0),
                                                         r.get("spill_stores", 0) + r.get("spill_loads", 0))
               for r in t.resources}
        total = ideal = 0.0
        for k in lowered.kernels:
            est = costmodel.estimate(k, infos[k.name], self.s.sizes, tiling=t.schedule.options(), resources=res)
            total += est.seconds
            ideal += est.ideal_seconds
        t.model_ms, t.ideal_ms = total * 1e3, ideal * 1e3

    def _learn(self, t: Trial) -> None:
        """Feed a failure back: the knob change from its parent becomes taboo."""
        parent = self.by_name.get(t.parent or "") or Trial(self.s.base, 0, "default")
        changed = t.schedule.diff(parent.schedule)
        for knob, v in changed.items():
            if (knob, v) not in self.taboo:
                self.taboo.append((knob, v))
        if changed:
            t.feedback = "taboo from now on: " + ", ".join(f"{k}={_show(v)}" for k, v in changed.items())

    def _prune_knobs(self) -> None:
        """Drop the knobs whose probe emitted the default's CUDA (they do not matter here)."""
        default = next((t for t in self.trials if t.origin == "default"), None)
        if default is None or default.digest is None:
            return
        dead = {knob for t in self.trials if t.origin == "probe" and t.status == "duplicate"
                and t.same_as == default.name for knob in t.schedule.diff(default.schedule)}
        if "mma" not in dead:  # tensor cores in use: the FMA tiles' knobs matter once mma=off
            dead -= {"tile", "coarsen", "shared"}
        self.relevant -= dead

    def _rank(self) -> None:
        from transpile.search import rewards

        pool = [t for t in self.trials if t.status == "pass"]
        for t, (rank, reward) in zip(pool, rewards.tournament([t.record() for t in pool])):
            t.rank, t.reward = rank, reward

    # -- reporting

    def table(self) -> str:
        """The candidates tried, one line each (the final table)."""
        cost = "measured ms" if self.s.measure == "gpu" else "model ms"
        lines = [f"{'gen':>3}  {'status':12} {'rank':>5} {cost:>12}  schedule"]
        best = self.best()
        for t in self.trials:
            ms = t.cost_ms
            note = t.same_as and f"(= {t.same_as})" or t.reason[:70]
            mark = "*" if best is t else " "
            lines.append(f"{t.generation:>3} {mark}{t.status:12} {t.rank if t.rank is not None else '':>5} "
                         f"{f'{ms:.4g}' if ms is not None else '-':>12}  {t.name}  {note}".rstrip())
        lines += [f"llm: {r}" for r in self.rejected]
        lines.append(f"stopped: {self.stopped}")
        return "\n".join(lines)


def search_many(searches: Sequence[Search], *, time_budget: float,
                clock: Callable[[], float] = time.monotonic) -> None:
    """Run several searches round by round under one time budget.

    Each round gives one generation to every search still running; a search
    stops by its own rules (near its roofline after generation 0, nothing
    passing, converged, its rounds), so the kernels in between receive the
    rest of the budget: each running search's time cap is reset every round
    to an equal share of what is left.
    """
    start = clock()
    while True:
        running = [s for s in searches if s.stopped is None]
        if not running:
            return
        left = time_budget - (clock() - start)
        if left <= 0:
            for s in running:
                s.stopped = f"shared time budget of {time_budget:.0f} s spent"
            return
        share = left / len(running)
        for s in running:
            s.s = replace(s.s, time_budget=(clock() - s.started) + share)
            s.step()


# ---------------------------------------------------------------------------
# The cache


class Cache:
    """Chosen schedules by key, one JSON file each, in the user's cache directory
    (``$TRANSPILE_CACHE_DIR``, else ``$XDG_CACHE_HOME/transpile``, else ``~/.cache/transpile``)."""

    def __init__(self, root: Path | None = None) -> None:
        if root is None and os.environ.get("TRANSPILE_EVOLVE_CACHE_DIR"):
            root = Path(os.environ["TRANSPILE_EVOLVE_CACHE_DIR"])  # the choices alone, apart from the builds
        if root is None:
            env = os.environ.get("TRANSPILE_CACHE_DIR")
            base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "transpile"
            root = base / "evolve"
        self.root = root

    @staticmethod
    def key(module: ir.Module, settings: Settings, device: str) -> str:
        from transpile.ir import text

        blob = json.dumps({"ir": text.show(module), "sizes": sorted(settings.sizes.items()), "device": device,
                           "measure": settings.measure, "rounds": settings.rounds, "seed": settings.seed,
                           "fixed": sorted(settings.fixed), "base": settings.base.name(),
                           "reassociate": settings.base.reassociate, "version": __version__,
                           "search": SEARCH_VERSION}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:32]

    def get(self, key: str, base: Schedule) -> tuple[Schedule, dict[str, Any]] | None:
        path = self.root / f"{key}.json"
        try:
            data = json.loads(path.read_text())
            return Schedule.parse(str(data["schedule"]), base), data
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing, or not ours: search again

    def put(self, key: str, data: Mapping[str, Any]) -> None:
        from transpile.fsutil import write_atomic

        try:
            self.root.mkdir(parents=True, exist_ok=True)
            write_atomic(self.root / f"{key}.json", json.dumps(data, indent=1, sort_keys=True))
        except OSError:
            pass  # a cache that cannot be written costs a search next time, nothing else


# ---------------------------------------------------------------------------
# LLM proposals


PROPOSE_PROMPT = """You tune the schedule of a GPU kernel compiled by transpile. The kernel's IR:

{ir}

A schedule is a line of knob=value words; knobs and allowed values:
{space}
Only knobs that differ from the default need to be given; "default" is the default schedule.

Schedules tried so far (status, {cost}, schedule):
{table}

Propose up to {n} new schedules likely to be faster, one per line, nothing else."""


def llm_proposer(client: Any, n: int = 3) -> Callable[[Search], list[str]]:
    """Proposals from an LLM (``transpile.llm.client.LLMClient``): its answer is split into lines,
    each parsed by :meth:`Schedule.parse` (never evaluated); a bad line is recorded and skipped."""
    from transpile.ir import text as irtext

    def propose(search: Search) -> list[str]:
        space = "\n".join(f"  {k}: {', '.join(_show(v) for v in vals)}" for k, vals in SPACE.items()
                          if k in search.relevant)
        table = "\n".join(f"  {t.status}, {t.cost_ms if t.cost_ms is not None else '-'}, {t.name}"
                          for t in search.trials if t.status in ("pass", "fail", "error")) or "  (none yet)"
        prompt = PROPOSE_PROMPT.format(ir=irtext.show(search.module), space=space, table=table, n=n,
                                       cost="measured ms" if search.s.measure == "gpu" else "model ms")
        answer = client.chat([{"role": "user", "content": prompt}], conversation="evolve")
        lines = [ln.strip().strip("`").strip() for ln in answer.splitlines()]
        return [ln for ln in lines if ln and not ln.startswith("#")][:n]

    return propose


# ---------------------------------------------------------------------------
# The compile command's driver


@dataclass
class Outcome:
    """What ``transpile K.c --evolve`` writes: the chosen schedule's CUDA, and how it was chosen."""

    schedule: Schedule
    lowered: ir.Module
    text: str
    cache_hit: bool
    verified: bool  # the text passed the verifier during the search (no need to verify it again)
    table: str = ""
    summary: str = ""
    edited: bool = False  # the text is an LLM's verified edit, not the schedule's emitted CUDA


def default_sizes(module: ir.Module) -> dict[str, int]:
    """The sizes a search prices (and times) at when none are given: the verifier's full size
    (``transpile.verify.synth.default_full_sizes``: the largest powers of two within its budgets),
    and 2 for the other integer parameters (time steps, say), as the timing stage (f) runs them."""
    from transpile.verify.signature import kernel_sig
    from transpile.verify.synth import default_full_sizes

    sizes: dict[str, int] = {}
    for k in module.kernels:
        sig = kernel_sig(k)
        sizes.update({n: 2 for n in sig.other_ints})
        sizes.update(default_full_sizes(sig, k))
    return sizes


def compile_evolved(module: ir.Module, source: Path, settings: Settings, *, function: str | None = None,
                    include_dirs: Sequence[str] = (), defines: Sequence[str] = (), cache: Cache | None = None,
                    propose: Callable[[Search], Iterable[str]] | None = None,
                    edit: Callable[[Search, Trial], str] | None = None,
                    progress: Callable[[str, int, int], None] | None = None,
                    check: Check | None = None, device: str | None = None) -> Outcome:
    """Search (or take from ``cache``) the schedule of ``module``; the chosen schedule's output."""
    from transpile.diagnostics import TranspileError

    device = device or device_name(settings)
    cache = cache or Cache()
    key = Cache.key(module, settings, device)
    hit = cached(cache, key, module, source, settings)
    if hit is not None:
        return hit
    check = check or verify_candidate(source, gpu=settings.measure == "gpu", sizes=settings.sizes,
                                      seed=settings.seed, function=function, include_dirs=include_dirs,
                                      defines=defines)
    search = Search(module, source.name, check, settings, propose=propose, edit=edit, progress=progress)
    search.run()
    outcome = finish(search, cache, key, device) or fallback(search)
    if outcome is None:
        raise TranspileError(None, f"--evolve: no candidate schedule passed verification ({search.stopped})\n"
                                   + search.table())
    return outcome


def resolve_measure(measure: str) -> str:
    """``auto`` as ``gpu`` when a GPU can run the verifier's stages, else ``model``."""
    if measure != "auto":
        return measure
    from transpile.verify import gpu

    return "gpu" if gpu.detect().available else "model"


def device_name(settings: Settings) -> str:
    """What the cache key calls the measuring device: the GPU's name, or the model's."""
    return _gpu_name() if settings.measure == "gpu" else "model:" + costmodel.H200.name


def cached(cache: Cache, key: str, module: ir.Module, source: Path, settings: Settings) -> Outcome | None:
    """The cached choice for ``key`` as an outcome (its text to be verified again), or None."""
    hit = cache.get(key, settings.base)
    if hit is None:
        return None
    sched, data = hit
    lowered = sched.lower(module)
    edited = isinstance(data.get("cuda"), str)  # an LLM's edit: verified again by the caller, like all hits
    text = data["cuda"] if edited else sched.emit(lowered, source.name, host=module)
    return Outcome(sched, lowered, text, cache_hit=True, verified=False, table=str(data.get("table", "")),
                   summary=f"evolve: cache hit ({cache.root / (key + '.json')}): "
                           f"{data.get('chosen', sched.name())}", edited=edited)


def finish(search: Search, cache: Cache, key: str, device: str) -> Outcome | None:
    """A finished search's outcome (cached under ``key``), or None when nothing passed."""
    best = search.best()
    if best is None or best.text is None:
        return None
    gpu = search.s.measure == "gpu"
    default = next((t for t in search.trials if t.origin == "default"), None)
    gain = (f", {default.cost_ms / best.cost_ms:.2f}x the default's "
            f"{'measured time' if gpu else 'estimate'}"
            if default is not None and default.cost_ms and best.cost_ms else "")
    summary = (f"evolve: {best.name} chosen from {sum(t.status == 'pass' for t in search.trials)} verified of "
               f"{len(search.trials)} candidates in {search.generation} generation(s){gain}; {search.stopped}")
    table = search.table()
    entry = {"schedule": best.schedule.name(), "chosen": best.name, "device": device, "sizes": search.s.sizes,
             "summary": summary, "table": table, "trials": [t.row() for t in search.trials]}
    if best.origin == "llm-cuda":
        entry["cuda"] = best.text
    cache.put(key, entry)
    return Outcome(best.schedule, best.lowered or best.schedule.lower(search.module), best.text, cache_hit=False,
                   verified=best.status == "pass", table=table, summary=summary, edited=best.origin == "llm-cuda")


def fallback(search: Search) -> Outcome | None:
    """When nothing passed: the default schedule, as a plain compile would write it, if the
    verifier could not judge it (``unverified``: nothing ran it; ``inconclusive``: no meaningful
    test, e.g. a kernel that writes nothing); None when it failed. ``--evolve`` must not refuse a
    kernel that plain compilation accepts. Not cached: the caller verifies it again, and warns."""
    default = next((t for t in search.trials if t.origin == "default"), None)
    if default is None or default.status not in ("unverified", "inconclusive") or default.text is None:
        return None
    summary = (f"evolve: no candidate passed verification ({search.stopped}); the default schedule is "
               f"written, as without --evolve (its verifier verdict: {default.status})")
    return Outcome(default.schedule, default.lowered or default.schedule.lower(search.module), default.text,
                   cache_hit=False, verified=False, table=search.table(), summary=summary)


def _gpu_name() -> str:
    from transpile.verify import gpu

    info = gpu.detect()
    return info.name or "gpu"


EDIT_PROMPT = """You optimise one CUDA file that the compiler transpile generated from this kernel (its IR):

{ir}

The file is a drop-in: keep every extern "C" function, its name and its signature, and keep the results
those of the IR (you may reorder a sum only where the file already does). It will be compiled with nvcc
-arch=sm_90, checked against the reference on fresh inputs, and timed on the GPU ({cost} ms now).

```cuda
{cuda}
```

Answer with the whole edited file in one ```cuda block and nothing else."""

MAX_EDIT_BYTES = 400_000


def llm_editor(client: Any) -> Callable[[Search, Trial], str]:
    """Edits of the best candidate's CUDA from an LLM (``--evolve-llm`` with GPU timing).  The answer
    must hold one fenced code block with every ``extern "C"`` function of the original (names
    unchanged); anything else is a ValueError, recorded and skipped.  The file is then verified
    like any other candidate (never trusted, never run outside the verifier)."""
    from transpile.ir import text as irtext

    def edit(search: Search, best: Trial) -> str:
        assert best.text is not None
        prompt = EDIT_PROMPT.format(ir=irtext.show(search.module), cuda=best.text,
                                    cost=f"{best.cost_ms:.4g}" if best.cost_ms is not None else "?")
        answer = client.chat([{"role": "user", "content": prompt}], conversation="evolve-cuda")
        blocks = re.findall(r"```[A-Za-z+]*\n(.*?)```", answer, flags=re.S)
        if len(blocks) != 1:
            raise ValueError(f"expected one fenced code block, got {len(blocks)}")
        code = blocks[0]
        if len(code.encode()) > MAX_EDIT_BYTES:
            raise ValueError(f"edited file over {MAX_EDIT_BYTES} bytes")
        wanted = set(re.findall(r'extern "C" \w+ (\w+)\(', best.text))
        missing = wanted - set(re.findall(r'extern "C" \w+ (\w+)\(', code))
        if missing:
            raise ValueError(f"the edit drops extern \"C\" function(s) {sorted(missing)}")
        return code

    return edit
