"""Groups of multi-turn episodes with difficulty-conditioned pruning and a shared verification budget.

LEAP's Difficulty-Conditioned Pruning, for :class:`~transpile.search.env.KernelEnv`:
every task is sampled ``group`` times (G episodes of one task form its group),
and after the first turn each task is classified from its group's results:

* ``easy``: the fraction of the group that passed is at least ``pass_at``;
* ``hopeless``: the fraction that failed at stage (a) or (b) (front end and
  signature, nvcc; a verification that never finished counts as (a), as in
  :mod:`transpile.search.rewards`) is at least ``fail_at``;
* ``medium``: neither.

With pruning on, an easy or hopeless task stops there: a group whose
rewards are all equal teaches a group-relative learner nothing, and its
remaining turns would be spent on compilations that change nothing.

**Budget** is a number of verifications (one verification = one submitted
CUDA file through the verifier = one turn of one episode), shared by every
task of the run: by default ``tasks x group x turns``, what the plain run
(every episode up to ``turns`` turns, nothing pruned) may spend.  Turn 1 of
every episode is paid first.  What a task does not spend (a pruned task's
remaining turns; the turns an episode that passed early no longer needs)
stays in the pool, and the pool pays for further rounds: round ``r`` gives
turn ``r`` to every live episode (not passed, fewer than ``max_turns`` turns)
of every unpruned task.  So a medium task may go past ``turns``, up to
``max_turns`` (default ``2 x turns`` with pruning; ``turns`` without, which
makes the unpruned run the plain one).  When the pool cannot pay a whole
round, groups are served whole, most uncertain first (pass fraction of the
latest turn closest to one half, then input order); a group that does not fit
ends (``budget``), and what is left is reported as unspent.

Every verification runs isolated (:func:`transpile.search.evaluate.run_tasks`:
a forked child leading its own process group, killed with it at the
environment's ``timeout``), ``jobs`` at a time.  Within a group, the samples
of one turn share one verifier seed, and after each turn every sample gets
its rank and :func:`transpile.search.rewards.tournament` reward among the group's
latest results (an episode that already passed keeps its passing record).

    roll = GroupRollout([KernelEnv("a.c", stages="abc"), KernelEnv("b.c")], group=8, turns=4)
    obs = roll.reset()                       # {(task, sample): observation}
    while obs:
        obs, results = roll.step({k: policy(o) for k, o in obs.items()})
    roll.task_records(), roll.summary()      # difficulty, turns, compilations saved; the budget
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from transpile.search.env import KernelEnv

Key = tuple[int, int]
"""An episode: (task index in the order given, sample index in its group)."""

DIFFICULTIES = ("easy", "medium", "hopeless")


@dataclass(frozen=True)
class Pruning:
    """When a task stops after its group's first turn: ``pass_at`` (too easy: the fraction passing
    is at least this) and ``fail_at`` (hopeless: the fraction failing at stage (a) or (b) is at
    least this), both in (0, 1]; ``enabled`` False classifies but never prunes."""

    pass_at: float = 1.0
    fail_at: float = 1.0
    enabled: bool = True

    def __post_init__(self) -> None:
        for name in ("pass_at", "fail_at"):
            v = getattr(self, name)
            if not 0.0 < v <= 1.0:
                raise ValueError(f"{name} must be in (0, 1], not {v}")

    def classify(self, lines: Sequence[Mapping[str, Any]]) -> tuple[str, float, float]:
        """``(difficulty, pass fraction, early-failure fraction)`` of one group's first-turn lines."""
        n = len(lines)
        assert n > 0, "an empty group"
        passed = sum(1 for ln in lines if ln.get("ok")) / n
        early = sum(1 for ln in lines if failed_early(ln)) / n
        if passed >= self.pass_at:
            return "easy", passed, early
        if early >= self.fail_at:
            return "hopeless", passed, early
        return "medium", passed, early


def failed_early(line: Mapping[str, Any]) -> bool:
    """The verification failed at stage (a) or (b), or never finished (scored as (a))."""
    return not line.get("ok") and (line.get("stage") in ("a", "b") or line.get("status", "scored") != "scored")


def compiled(line: Mapping[str, Any]) -> bool:
    """The verification got past the front end to a build of the candidate (nvcc, stage (b), or the
    simulator's, stage (c)): the cost that pruning saves."""
    return any(k in (line.get("stages_reached") or ()) for k in "bc")


def derived_seed(*parts: object) -> int:
    """A seed in [0, 2**31) from ``parts`` (the same parts, the same seed, on any machine)."""
    return random.Random(":".join(map(str, parts))).randrange(2 ** 31)


@dataclass
class _Episode:
    env: KernelEnv
    lines: list[dict[str, Any]]
    end: str | None = None   # passed, max_turns, pruned, budget


class GroupRollout:
    """``group`` episodes of each of ``envs``' tasks, turn by turn, pruned and budgeted (module doc).

    ``turns``: the turns per episode of the plain run (``budget`` defaults to
    ``len(envs) * group * turns``); ``max_turns``: the most any episode gets (default
    ``2 * turns`` with pruning on, else ``turns``); ``pruning``: :class:`Pruning`, None for off;
    ``jobs``, ``backend``, ``address``: how the verifications run (:func:`transpile.search.evaluate.run_tasks`);
    ``seed``: the run's seed (None: a fresh one), from which each task and turn's verifier seed is
    derived unless the environment fixes one; ``scorer``: the task function (``module:function``)
    that verifies a submission, :func:`transpile.search.evaluate.score_submission` unless replaced (tests).
    """

    def __init__(self, envs: Sequence[KernelEnv], *, group: int, turns: int, pruning: Pruning | None = None,
                 budget: int | None = None, max_turns: int | None = None, jobs: int = 1, backend: str = "local",
                 address: str | None = None, seed: int | None = None, scorer: str | None = None,
                 ids: Sequence[str] | None = None) -> None:
        from transpile.verify.stages import new_seed

        if not envs:
            raise ValueError("no tasks")
        if group < 1 or turns < 1:
            raise ValueError(f"group and turns must be at least 1, not {group} and {turns}")
        self.pruning = pruning if pruning is not None else Pruning(enabled=False)
        self.group, self.turns = group, turns
        self.max_turns = max_turns if max_turns is not None else (2 * turns if self.pruning.enabled else turns)
        if self.max_turns < turns:
            raise ValueError(f"max_turns ({self.max_turns}) must be at least turns ({turns})")
        self.budget = budget if budget is not None else len(envs) * group * turns
        if self.budget < len(envs) * group:
            raise ValueError(f"a budget of {self.budget} verifications does not pay the first turn of every "
                             f"sample ({len(envs)} tasks x {group} = {len(envs) * group})")
        self.ids = list(ids) if ids is not None else [str(i) for i in range(len(envs))]
        self.envs = list(envs)
        self.jobs, self.backend, self.address = jobs, backend, address
        self.seed = seed if seed is not None else new_seed()
        self.scorer = scorer
        self.episodes: dict[Key, _Episode] = {}
        self.classes: dict[int, tuple[str, float, float]] = {}
        self.pruned: set[int] = set()
        self.spent = 0
        self.round = 0
        self.turn_records: list[dict[str, Any]] = []

    def reset(self) -> dict[Key, str]:
        """Start every episode; the first observation of each, keyed ``(task, sample)``."""
        self.episodes = {}
        for t, env in enumerate(self.envs):
            for s in range(self.group):
                e = copy.copy(env)  # one reference parse per task; each episode its own turn and history
                e.max_turns = self.max_turns
                self.episodes[(t, s)] = _Episode(e, [])
        self.classes, self.pruned, self.spent, self.round, self.turn_records = {}, set(), 0, 0, []
        return {k: ep.env.reset() for k, ep in self.episodes.items()}

    def live(self, task: int) -> list[Key]:
        """The episodes of ``task`` still playing."""
        return [(task, s) for s in range(self.group) if self.episodes[(task, s)].end is None]

    def scheduled(self) -> list[Key]:
        """The episodes the next round verifies (all of them for the first)."""
        if self.round == 0:
            return sorted(self.episodes)
        pool = self.budget - self.spent
        tasks = [t for t in range(len(self.envs)) if self.live(t)]
        if sum(len(self.live(t)) for t in tasks) > pool:  # whole groups, most uncertain first
            tasks.sort(key=lambda t: (abs(self._latest_pass(t) - 0.5), t))
        keys: list[Key] = []
        for t in tasks:
            if len(self.live(t)) <= pool:
                keys += self.live(t)
                pool -= len(self.live(t))
        return sorted(keys)

    def _latest_pass(self, task: int) -> float:
        return sum(1 for s in range(self.group) if self.episodes[(task, s)].lines[-1].get("ok")) / self.group

    def step(self, actions: Mapping[Key, str]) -> tuple[dict[Key, str], dict[Key, dict[str, Any]]]:
        """Verify one CUDA text per scheduled episode (exactly :meth:`scheduled`'s keys), isolated and
        ``jobs`` at a time; returns the next round's observations (empty: the run is over) and this
        round's turn records by key (:meth:`turn_record`)."""
        from transpile.search.evaluate import run_tasks

        want = self.scheduled()
        if sorted(actions) != want:
            raise ValueError(f"actions for {sorted(actions)}, but this round verifies {want}")
        if not want:
            raise RuntimeError("the rollout is over: call reset() first")
        self.round += 1
        tasks, by_key = [], {}
        for key in want:
            ep = self.episodes[key]
            task = ep.env.submission(actions[key])
            args = dict(task.args)
            if args.get("seed") is None:  # one seed per task and turn: the group is judged on one input set
                args["seed"] = derived_seed(self.seed, key[0], ep.env.turn)
            name = f"{self.ids[key[0]]}/{key[1]}/{ep.env.turn}"
            task = replace(task, key=name, fn=self.scorer or task.fn, args=args)
            tasks.append(task)
            by_key[name] = key
        timeout = max(self.envs[k[0]].timeout for k in want)
        gpu = any(self.envs[k[0]].verify_args.get("gpu") is not False and
                  any(s in self.envs[k[0]].verify_args["stages"] for s in "def") for k in want)
        obs: dict[Key, str] = {}
        for o in run_tasks(tasks, jobs=self.jobs, timeout=timeout, backend=self.backend, address=self.address,
                           gpu=gpu):
            key = by_key[o.key]
            ep = self.episodes[key]
            ob, _, done, info = ep.env.observe(o)
            ep.lines.append({**info["line"], "id": o.key, "reward": ep.env.history[-1]["reward"],
                             "seconds": info["seconds"]})
            if done:
                ep.end = "passed" if info["line"]["ok"] else "max_turns"
            obs[key] = ob
        self.spent += len(want)
        if self.round == 1:
            self._classify()
        results = {key: self._rank(key) for key in want}
        self.turn_records += [results[k] for k in want]
        nxt = self.scheduled()
        for t in {k[0] for k in self.episodes}:  # a live group left out of the next round: the pool ran dry
            if self.live(t) and not any(k[0] == t for k in nxt):
                for k in self.live(t):
                    self.episodes[k].end = "budget"
        assert set(nxt) <= set(obs), f"a live episode {sorted(set(nxt) - set(obs))} missed a round"
        return {k: obs[k] for k in nxt}, results

    def _classify(self) -> None:
        for t in range(len(self.envs)):
            first = [self.episodes[(t, s)].lines[0] for s in range(self.group)]
            self.classes[t] = self.pruning.classify(first)
            if self.pruning.enabled and self.classes[t][0] != "medium":
                self.pruned.add(t)
                for k in self.live(t):
                    self.episodes[k].end = "pruned"

    def _rank(self, key: Key) -> dict[str, Any]:
        """The turn record of ``key``'s latest verification, with its rank and tournament reward among
        its group's latest results."""
        from transpile.search import rewards

        t, s = key
        latest = [self.episodes[(t, j)].lines[-1] for j in range(self.group)]
        rank, reward = rewards.tournament(latest)[s]
        line = self.episodes[key].lines[-1]
        line["tournament"] = {"rank": rank, "reward": round(reward, 6)}
        return {"kind": "turn", "task": self.ids[t], "sample": s, "turn": len(self.episodes[key].lines),
                **line, "done": self.episodes[key].end is not None}

    def task_records(self) -> list[dict[str, Any]]:
        """One record per task: ``difficulty`` and the first turn's ``pass`` and ``fail_ab`` fractions,
        ``pruned``, ``turns`` (the most any of its episodes took), ``verifications`` and ``compilations``
        spent, ``saved`` (verifications, and the compilations among them at the task's own rate, that
        its pruned episodes would still have had within ``turns``), ``extra`` (verifications beyond
        ``group x turns``, paid by the pool), and per episode its turns, end, last verdict and
        final tournament rank and reward within the group."""
        from transpile.search import rewards

        out = []
        for t in range(len(self.envs)):
            eps = [self.episodes[(t, s)] for s in range(self.group)]
            lines = [ln for ep in eps for ln in ep.lines]
            comp = sum(1 for ln in lines if compiled(ln))
            saved = sum(self.turns - len(ep.lines) for ep in eps if ep.end == "pruned")
            diff, p, f = self.classes.get(t, ("unknown", 0.0, 0.0))
            final = rewards.tournament([ep.lines[-1] for ep in eps]) if all(ep.lines for ep in eps) else []
            out.append({
                "kind": "task", "task": self.ids[t], "difficulty": diff,
                "first_turn": {"pass": round(p, 6), "fail_ab": round(f, 6), "group": self.group},
                "pruned": t in self.pruned, "turns": max(len(ep.lines) for ep in eps),
                "verifications": len(lines), "compilations": comp,
                "saved": {"verifications": saved, "compilations": round(saved * comp / len(lines)) if lines else 0},
                "extra": max(0, len(lines) - self.group * self.turns),
                "episodes": [{"sample": s, "turns": len(ep.lines), "end": ep.end,
                              "verdict": ep.lines[-1]["verdict"] if ep.lines else None,
                              "reward": ep.lines[-1]["reward"] if ep.lines else 0.0,
                              "tournament": {"rank": final[s][0], "reward": round(final[s][1], 6)} if final else None}
                             for s, ep in enumerate(eps)]})
        return out

    def summary(self) -> dict[str, Any]:
        """The run: the budget, what was spent, reassigned (verifications past ``group x turns``, paid by
        the pool) and left unspent, the verifications and compilations pruning saved, and the
        verifications spent on each difficulty class."""
        recs = self.task_records()
        by = {d: {"tasks": sum(1 for r in recs if r["difficulty"] == d),
                  "verifications": sum(r["verifications"] for r in recs if r["difficulty"] == d)}
              for d in DIFFICULTIES}
        return {"kind": "summary", "tasks": len(recs), "group": self.group, "turns": self.turns,
                "max_turns": self.max_turns, "budget": self.budget, "spent": self.spent,
                "unspent": self.budget - self.spent, "reassigned": sum(r["extra"] for r in recs),
                "saved": {k: sum(r["saved"][k] for r in recs) for k in ("verifications", "compilations")},
                "pruning": {"enabled": self.pruning.enabled, "pass_at": self.pruning.pass_at,
                            "fail_at": self.pruning.fail_at},
                "pruned": [r["task"] for r in recs if r["pruned"]], "by_difficulty": by, "seed": self.seed}
