"""The verification record: stages, checks, errors, resources, timing; text, JSON and live display.

The text summary (:meth:`Report.summary`) is what a repair loop may see: it
names stages, checks, arrays, element indices, error magnitudes and sizes,
never input or output values (the candidate's own output is kept out of it
too; the JSON record carries a tail of it under ``details``).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

STAGES: dict[str, str] = {
    "a": "front end and IR checks",
    "b": "nvcc compile (sm_90; sm_75, sm_80 if arch-dependent)",
    "c": "CPU simulation of the CUDA",
    "d": "GPU run, small sizes",
    "e": "GPU run, full size",
    "f": "timing",
}
"""Stage keys and titles, in order."""

PASS, FAIL, SKIP, NA, INCONCLUSIVE, NOT_RUN = "pass", "fail", "skipped", "not applicable", "inconclusive", "not run"


@dataclass
class Stage:
    """One stage's outcome.  ``check`` names the check that failed (None when none did)."""

    key: str
    status: str = NOT_RUN
    message: str = ""
    check: str | None = None
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return STAGES[self.key]

    def line(self) -> str:
        """``(c) CPU simulation of the CUDA: fail [mismatch] C: ...``"""
        check = f" [{self.check}]" if self.check else ""
        msg = f": {self.message}" if self.message else ""
        return f"({self.key}) {self.title}: {self.status}{check}{msg}"


@dataclass
class Report:
    """Everything one verification found."""

    kernel: str
    candidate: str
    reference: str
    seed: int
    stages: dict[str, Stage] = field(default_factory=lambda: {k: Stage(k) for k in STAGES})
    notes: list[str] = field(default_factory=list)
    max_errors: dict[str, float] = field(default_factory=dict)
    tolerances: dict[str, float] = field(default_factory=dict)
    shapes: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    timing: dict[str, Any] = field(default_factory=dict)
    # The structural profile (transpile/verify/profile.py), None unless requested (--profile).
    profile: dict[str, Any] | None = None
    # What the profile runs: stage (c)'s library, the first input set of its largest shape tested, the
    # shape's label, its number of input elements.  Not part of the record.
    profile_input: tuple[str, dict[str, Any], str, int] | None = field(default=None, repr=False, compare=False)

    def stage(self, key: str) -> Stage:
        return self.stages[key]

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def record_error(self, name: str, err: float, tol: float) -> None:
        """Keep the largest error seen for output ``name``."""
        if err >= self.max_errors.get(name, -1.0):
            self.max_errors[name] = err
            self.tolerances[name] = tol

    @property
    def failure(self) -> Stage | None:
        """The first failed (or inconclusive) stage."""
        return next((s for s in self.stages.values() if s.status in (FAIL, INCONCLUSIVE)), None)

    @property
    def compared(self) -> bool:
        """Whether some stage compared the candidate's results with the reference's and passed."""
        return any(self.stages[k].status == PASS for k in "cde")

    @property
    def verdict(self) -> str:
        """``pass``, ``fail``, ``inconclusive`` (the test could not be set up) or ``unverified``
        (nothing could run the kernel here)."""
        f = self.failure
        if f is not None:
            return "fail" if f.status == FAIL else "inconclusive"
        return "pass" if self.compared else "unverified"

    @property
    def reason(self) -> str:
        """The one-line reason for the verdict."""
        f = self.failure
        if f is not None:
            check = f" [{f.check}]" if f.check else ""
            return f"stage ({f.key}) {f.title}{check}: {f.message}"
        if not self.compared:
            why = "; ".join(f"({s.key}) {s.message}" for s in self.stages.values()
                            if s.key in "cde" and s.message) or "no stage ran"
            return f"unverified: no stage could run the kernel here ({why})"
        ran = "".join(k for k, s in self.stages.items() if s.status == PASS)
        return f"verified: stages {','.join(ran)} passed"

    @property
    def ok(self) -> bool:
        return self.verdict == "pass"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready record."""
        return {
            "kernel": self.kernel,
            "candidate": self.candidate,
            "reference": self.reference,
            "seed": self.seed,
            "verdict": self.verdict,
            "reason": self.reason,
            "stages_reached": [k for k, s in self.stages.items() if s.status != NOT_RUN],
            "stages_passed": [k for k, s in self.stages.items() if s.status == PASS],
            "stages": {k: {**asdict(s), "title": s.title} for k, s in self.stages.items()},
            "max_errors": {k: _num(v) for k, v in self.max_errors.items()},
            "tolerances": self.tolerances,
            "shapes": self.shapes,
            "resources": self.resources,
            "timing": self.timing,
            "profile": self.profile,
            "notes": self.notes,
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, default=_default)

    def summary(self) -> str:
        """The one-screen text summary (free of input values)."""
        lines = [self.reason, f"kernel {self.kernel}: {self.candidate} against {self.reference}",
                 f"seed {self.seed} (replay with --seed {self.seed})"]
        lines += ["  " + s.line() for s in self.stages.values()]
        if self.max_errors:
            errs = ", ".join(f"{k} {v:.2e} (tol {self.tolerances.get(k, 0):.1e})" for k, v in self.max_errors.items())
            lines.append(f"max error per output: {errs}")
        for r in self.resources:
            lines.append(f"resources {r.get('kernel')}: {r.get('registers', '?')} registers, "
                         f"{r.get('smem', 0)} B smem, {r.get('spill_stores', 0)}/{r.get('spill_loads', 0)} B "
                         f"spill stores/loads, {r.get('stack', 0)} B stack")
        if self.timing.get("median_ms") is not None:
            t = self.timing
            sp = f", speedup {t['speedup']:.1f}x over the gcc reference" if t.get("speedup") else ""
            lines.append(f"time {t['median_ms']:.4f} ms median ({t.get('method', '')}){sp}")
        if self.profile:
            o = self.profile.get("overall", {})

            def fig(key: str) -> str:
                v = o.get(key)
                return "-" if v is None else f"{v:g}"

            lines.append(f"profile at {self.profile.get('shape')}: sectors/request {fig('sectors_per_request')} "
                         f"(efficiency {fig('sector_efficiency')}), shared replays/access "
                         f"{fig('replays_per_shared_access')}, divergent {fig('divergent_fraction')}, barriers/thread "
                         f"{fig('barriers_per_thread')}, atomics/thread {fig('atomics_per_thread')}, flops/byte "
                         f"{fig('intensity')}, occupancy {fig('occupancy')}")
        lines += [f"note: {n}" for n in self.notes[:12]]
        return "\n".join(lines)


def _num(v: float) -> float | str:
    return v if v == v and abs(v) != float("inf") else str(v)


def _default(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    return str(o)


class Progress:
    """Live stage lines on stderr: ``rich`` when it is installed and stderr is a terminal, plain lines otherwise."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.console: Any = None
        if enabled and sys.stderr.isatty():
            try:
                from rich.console import Console  # type: ignore[import-not-found]  # optional

                self.console = Console(stderr=True)
            except ImportError:
                self.console = None

    _STYLE = {PASS: "green", FAIL: "bold red", SKIP: "yellow", NA: "yellow", INCONCLUSIVE: "magenta"}

    def start(self, stage: Stage, what: str = "") -> None:
        if not self.enabled:
            return
        text = f"({stage.key}) {stage.title}{': ' + what if what else ''} ..."
        if self.console is not None:
            from rich.text import Text  # type: ignore[import-not-found]

            self.console.print(Text(text, style="dim"), highlight=False)
        else:
            print(text, file=sys.stderr, flush=True)

    def done(self, stage: Stage) -> None:
        if not self.enabled:
            return
        if self.console is not None:
            from rich.text import Text  # type: ignore[import-not-found]

            text = Text(f"({stage.key}) {stage.title}: ")
            text.append(stage.status, style=self._STYLE.get(stage.status, ""))
            text.append(f"{' [' + stage.check + ']' if stage.check else ''} ({stage.seconds:.1f} s)"
                        f"{': ' + stage.message if stage.message else ''}")
            self.console.print(text, highlight=False)
        else:
            print(f"{stage.line()} ({stage.seconds:.1f} s)", file=sys.stderr, flush=True)

    def summary(self, report: Report) -> None:
        if not self.enabled:
            return
        if self.console is not None:
            from rich.panel import Panel  # type: ignore[import-not-found]
            from rich.text import Text  # type: ignore[import-not-found]

            style = "green" if report.ok else "red"
            self.console.print(Panel(Text(report.summary()), title=Text(f"verify {report.kernel}: {report.verdict}"),
                                     border_style=style), highlight=False)
        else:
            print(report.summary(), file=sys.stderr, flush=True)
