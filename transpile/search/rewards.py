"""Rewards from verifier records: partial credit by stage, speed, and tournament rank.

Every function takes a :class:`~transpile.verify.report.Report`, its JSON
record (``Report.to_json()``; ``transpile evaluate`` lines and
``transpile verify --json`` carry the keys used here: ``verdict``,
``stages_passed``, ``timing``) or ``None`` for a submission whose
verification never finished (a hang or a crash of the evaluator's child),
which scores like a failure at stage (a).  Summary in ``docs/rewards.md``.

    stage_reward(r)              # 0.0 .. 1.0, 1.0 = passed every stage that could run
    speed_reward(r)              # 0.0 .. 1.0 from measured time, 0.0 when not measured
    structural_reward(r)         # 0.0 .. 1.0 from the simulator's profile, None without one
    tournament([r1, r2, r3])     # [(rank, reward), ...]: rank 1 best, ties share the average
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

STAGE_WEIGHTS: dict[str, float] = {"a": 0.1, "b": 0.2, "c": 0.4, "d": 0.1, "e": 0.1, "f": 0.1}
"""Credit for each stage passed, in stage order ((a) front end and signature, (b) nvcc, (c) CPU
simulation against the reference, (d)-(f) GPU runs and timing).  (c) weighs most: it is the first
stage that compares results.  They sum to 1.0, but a verdict ``pass`` scores 1.0 whatever ran, so a
kernel verified without a GPU (stages a-c) is not penalised for the GPU stages it could not reach."""

SPEED_CAP = 1024.0
"""The speedup that earns the full :func:`speed_reward` (log scale: 32x earns 0.5)."""

SPEED_TIE = 0.03
"""Measured times within this relative difference are a tie in :func:`compare` (timing noise)."""

STRUCTURAL_WEIGHTS: dict[str, float] = {"coalescing": 0.30, "bank_conflicts": 0.20, "divergence": 0.15,
                                         "synchronisation": 0.20, "occupancy": 0.10, "intensity": 0.05}
"""Weights of the structural profile's scores in :func:`structural_reward` (each score in [0, 1], 1 best;
a score the profile lacks is left out and the others' weights renormalised).  Global memory
traffic first: it bounds most of the kernels this project sees (docs/rewards.md, "Structural reward")."""

ATOMIC_COST = 2.0
"""Synchronisation score weight of one atomic per thread (a round trip to L2, serialised on a contended address)."""

BARRIER_COST = 1.0 / 32
"""Synchronisation score weight of one barrier per thread (a few cycles a warp): 64 barriers cost one atomic."""

STRUCTURAL_TIE = 0.01
"""Structural rewards within this difference are a tie in :func:`compare`."""

Record = Mapping[str, Any]


def record(report: Any) -> Record | None:
    """The JSON record of ``report`` (a Report, a record, or None)."""
    if report is None or isinstance(report, Mapping):
        return report
    to_json = getattr(report, "to_json", None)
    assert to_json is not None, f"not a verifier report or record: {report!r}"
    return to_json()


def stage_reward(report: Any) -> float:
    """Partial credit by stage: 1.0 when the verdict is ``pass`` (every stage that could run here
    passed and one of them compared results), else the sum of :data:`STAGE_WEIGHTS` over the stages
    passed before the failure: 0.0 failing (a), 0.1 failing nvcc, 0.3 failing the CPU simulation
    (or with nothing able to run the kernel: ``unverified``), 0.7 failing the first GPU run.
    An ``inconclusive`` verdict (the test could not be set up) gets the same partial credit."""
    rec = record(report)
    if rec is None:
        return 0.0
    if rec.get("verdict") == "pass":
        return 1.0
    passed = sum(STAGE_WEIGHTS.get(k, 0.0) for k in rec.get("stages_passed", ()))
    return round(min(passed, 0.99), 6)  # below any pass, whatever the weights


def measured_ms(report: Any) -> float | None:
    """The candidate's median time in ms from the timing stage (f), or None when not measured."""
    rec = record(report)
    ms = ((rec or {}).get("timing") or {}).get("median_ms")
    return float(ms) if isinstance(ms, (int, float)) and ms > 0 and math.isfinite(ms) else None


def speed_reward(report: Any, baseline: Any = None) -> float:
    """Speed credit in [0, 1]: ``log2(speedup) / log2(SPEED_CAP)``, clipped (1x or slower: 0.0).

    The speedup is over ``baseline``: a time in ms, or another report (for example the
    transpile output's for the same kernel; 0.0 when that one was not timed), or, when None,
    the gcc reference the timing stage measured.  0.0 when the candidate did not pass or
    its time was not measured (no GPU).
    """
    rec = record(report)
    ms = measured_ms(rec)
    if rec is None or rec.get("verdict") != "pass" or ms is None:
        return 0.0
    if baseline is None:
        refs = [float(x) for x in (rec.get("timing") or {}).get("reference_ms") or () if x == x]
        base = statistics.median(refs) if refs else None
    elif isinstance(baseline, (int, float)):
        base = float(baseline)
    else:
        base = measured_ms(baseline)
    if not base or base <= 0:
        return 0.0
    return round(min(max(math.log2(base / ms) / math.log2(SPEED_CAP), 0.0), 1.0), 6)


def speed_key(report: Any) -> float | None:
    """The cost compared between two correct candidates, lower is better; None when unknown:
    the measured median time from the timing stage (f), else the structural cost model's
    estimate (``cost_model.ms``, :mod:`transpile.search.costmodel`; ``transpile --evolve`` records it)."""
    return measured_ms(report) or model_ms(report)


def model_ms(report: Any) -> float | None:
    """The cost model's estimate in ms (``cost_model.ms``), or None."""
    rec = record(report)
    ms = ((rec or {}).get("cost_model") or {}).get("ms")
    return float(ms) if isinstance(ms, (int, float)) and ms > 0 and math.isfinite(ms) else None


def _speed_keys(a: Any, b: Any) -> tuple[float | None, float | None]:
    """Comparable costs of two candidates: both measured, else both modelled, else unknown
    (a measured time is never compared with an estimate)."""
    ta, tb = measured_ms(a), measured_ms(b)
    if ta is not None and tb is not None:
        return ta, tb
    if ta is None and tb is None:
        return model_ms(a), model_ms(b)
    return None, None


def structural_scores(report: Any) -> dict[str, float] | None:
    """The structural profile's scores (``profile.overall``, transpile/verify/profile.py) in [0, 1],
    1 best, keyed as :data:`STRUCTURAL_WEIGHTS`; None when the record has no profile.

    * ``coalescing``: ``sector_efficiency``, the fewest 32-byte sectors that hold the bytes each
      warp-level global access used over the sectors it touched (1.0 without global accesses);
    * ``bank_conflicts``: ``shared_efficiency``, ideal shared-memory wavefronts over actual (1.0
      without shared accesses);
    * ``divergence``: 1 - the fraction of warp-level accesses made by part of a warp;
    * ``synchronisation``: ``1 / (1 + ATOMIC_COST * atomics + BARRIER_COST * barriers)`` per thread;
    * ``occupancy``: the theoretical occupancy (left out when unknown);
    * ``intensity``: ``I / (1 + I)`` for I flops per global byte (left out when not counted).
    """
    rec = record(report)
    prof = (rec or {}).get("profile")
    if not isinstance(prof, Mapping) or not isinstance(prof.get("overall"), Mapping):
        return None
    o = prof["overall"]

    def num(key: str) -> float | None:
        v = o.get(key)
        return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None

    atomics, barriers = num("atomics_per_thread") or 0.0, num("barriers_per_thread") or 0.0
    scores: dict[str, float | None] = {
        "coalescing": num("sector_efficiency") if num("sector_efficiency") is not None else 1.0,
        "bank_conflicts": num("shared_efficiency") if num("shared_efficiency") is not None else 1.0,
        "divergence": 1.0 - (num("divergent_fraction") or 0.0),
        "synchronisation": 1.0 / (1.0 + ATOMIC_COST * atomics + BARRIER_COST * barriers),
        "occupancy": num("occupancy"),
        "intensity": (lambda i: None if i is None else i / (1.0 + i))(num("intensity")),
    }
    return {k: min(max(v, 0.0), 1.0) for k, v in scores.items() if v is not None}


def structural_reward(report: Any) -> float | None:
    """The structural profile's scores (:func:`structural_scores`) weighted by
    :data:`STRUCTURAL_WEIGHTS`, in [0, 1]; None when the record has no profile (``transpile verify
    --profile`` records one for a candidate stage (c) accepted)."""
    scores = structural_scores(report)
    if scores is None:
        return None
    total = sum(STRUCTURAL_WEIGHTS[k] for k in scores)
    return round(sum(STRUCTURAL_WEIGHTS[k] * v for k, v in scores.items()) / total, 6) if total else None


def compare(a: Any, b: Any) -> int:
    """1 if ``a`` beats ``b``, -1 if ``b`` beats ``a``, 0 for a tie.

    Correctness first: the higher :func:`stage_reward` wins (a passing candidate beats any
    failing one; of two failing ones, the one that failed at a later stage).  Between two
    passing candidates, the lower :func:`speed_key` wins when both are known (both measured,
    or both estimated) and differ by more than :data:`SPEED_TIE`.  Otherwise, when neither time
    was measured, the higher :func:`structural_reward` wins when both have a profile and they
    differ by more than :data:`STRUCTURAL_TIE`; otherwise they tie.
    """
    ra, rb = stage_reward(a), stage_reward(b)
    if ra != rb:
        return 1 if ra > rb else -1
    if ra < 1.0:
        return 0
    ka, kb = _speed_keys(a, b)
    if ka is not None and kb is not None and abs(ka - kb) > SPEED_TIE * max(ka, kb):
        return 1 if ka < kb else -1
    if measured_ms(a) is not None or measured_ms(b) is not None:
        return 0
    sa, sb = structural_reward(a), structural_reward(b)
    if sa is None or sb is None or abs(sa - sb) <= STRUCTURAL_TIE:
        return 0
    return 1 if sa > sb else -1


def tournament(reports: Sequence[Any]) -> list[tuple[float, float]]:
    """``(rank, reward)`` for each report, in input order, from all pairwise :func:`compare`\\ s.

    Each candidate scores 1 per pairwise win and 0.5 per tie (a round robin); rank 1 is the
    highest score, and candidates with equal scores share the average of their ranks.  The
    reward ``(n - rank) / (n - 1)`` is scale-free in [0, 1] (1.0 for a lone candidate).
    Because :func:`compare` is lexicographic, a candidate that is more correct always
    outscores a less correct one, whatever the times.
    """
    recs = [record(r) for r in reports]
    n = len(recs)
    score = [0.0] * n
    for i in range(n):
        for j in range(i + 1, n):
            c = compare(recs[i], recs[j])
            score[i] += (1.0 if c > 0 else 0.5 if c == 0 else 0.0)
            score[j] += (1.0 if c < 0 else 0.5 if c == 0 else 0.0)
    from transpile.search.costmodel import ranks

    rank = ranks([-s for s in score])  # rank 1: the highest score
    return [(rank[i], (n - rank[i]) / (n - 1) if n > 1 else 1.0) for i in range(n)]
