"""A multi-turn environment for generating CUDA: a task in, CUDA submissions, rewards and feedback out.

Gym-like without depending on gym::

    env = KernelEnv("tests/kernels/gemm.c")
    obs = env.reset()                       # the C source and the drop-in signature to write
    obs, reward, done, info = env.step(cuda_text)
    info["feedback"]                        # the verifier's summary: failing stage, check, sizes
    info["stage"], info["report"]           # failing stage key (None when none), the full record

Each submission is verified by :func:`transpile.search.evaluate.score_submission` in
a forked child leading its own process group (killed with everything it
started after ``timeout`` seconds), so a candidate that crashes or hangs
costs a turn, not the caller.  The reward is
:func:`transpile.search.rewards.stage_reward` plus ``speed_weight`` times
:func:`transpile.search.rewards.speed_reward` (the latter only when a GPU timed the
kernel).  An episode is done when a submission passes or after
``max_turns`` submissions.  The feedback is the report's text summary,
which names stages, checks, arrays and sizes but never input or reference
values; a hang or a crash of the verification itself is said in one line.
Groups of episodes per task, pruned by difficulty after the first turn and
sharing one budget of verifications: :class:`transpile.search.prune.GroupRollout`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transpile import ir
from transpile.diagnostics import TranspileError

if TYPE_CHECKING:
    from transpile.search.evaluate import Outcome, Task

REFERENCE_SUFFIXES = (".c", ".h", ".i", ".ir")

_ASK = ("Write a CUDA file (.cu) that defines this drop-in replacement for the function, with the same "
        "name, C signature and results:\n\n    {signature}\n\nIt receives host arrays: copy them to the GPU, "
        "launch your kernels, and copy the results back before returning.  Answer with the whole file.")
_RETRY = "\n\nFix the CUDA file and answer with the whole corrected file."


def dropin_signature(kernel: ir.Kernel) -> str:
    """``extern "C" void NAME(double *A, int n, ...)``: the declaration a submission must define."""
    from transpile.cuda.printer import ctype, return_ctype

    params = [f"{ctype(p.ty)} {p.name}" if isinstance(p.ty, ir.Scalar) else f"{ctype(p.ty.elem)} *{p.name}"
              for p in kernel.c_params]
    return f'extern "C" {return_ctype(kernel)} {kernel.name}({", ".join(params)})'


class KernelEnv:
    """One task: a C (or IR) reference file, or a spec text with a ``reference`` to verify against.

    ``function`` picks the reference function when the file defines several; ``stages``,
    ``mode`` (``quick``: the compile-time check's few small shapes, or ``full``), ``seed`` (None:
    a fresh one per submission, so answers cannot be fitted to one input) and ``gpu`` (None:
    detect) configure the verifier; ``timeout`` bounds each verification in seconds.
    """

    def __init__(self, task: str | Path, *, reference: str | Path | None = None, function: str | None = None,
                 max_turns: int = 4, stages: str = "abcdef", mode: str = "quick", seed: int | None = None,
                 gpu: bool | None = None, timeout: float = 600.0, speed_weight: float = 0.5,
                 include_dirs: Sequence[str] = (), defines: Sequence[str] = ()) -> None:
        from transpile import driver

        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, not {max_turns}")
        as_file = Path(task) if isinstance(task, Path) or (
            isinstance(task, str) and "\n" not in task and task.endswith(REFERENCE_SUFFIXES)) else None
        if as_file is not None:
            if reference is not None and Path(reference) != as_file:
                raise ValueError("give the reference either as the task file or as reference=, not both")
            reference = as_file
        elif reference is None:
            raise ValueError("a spec text task needs reference= (the C or IR file to verify against)")
        self.spec = None if as_file is not None else str(task)
        self.reference = Path(reference)
        # the front end and the checks every compile makes of its input (a read of an unset local is refused)
        module = driver.load(self.reference, driver.Options(function=function, include_dirs=tuple(include_dirs),
                                                            defines=tuple(defines)))
        kernels = [k for k in module.kernels if function is None or k.name == function]
        if len(kernels) != 1:
            names = ", ".join(k.name for k in module.kernels) or "none"
            raise TranspileError(None, f"{self.reference}: choose one function with function= (kernels: {names})")
        self.kernel = kernels[0]
        self.signature = dropin_signature(self.kernel)
        self.max_turns = max_turns
        self.timeout = timeout
        self.speed_weight = speed_weight
        self.verify_args: dict[str, Any] = {
            "reference": str(self.reference), "function": self.kernel.name, "stages": stages, "mode": mode,
            "seed": seed, "gpu": gpu, "sim_timeout": min(120.0, timeout / 3), "report": True,
            "include_dirs": tuple(include_dirs), "defines": tuple(defines)}
        self.turn = 0
        self.done = True
        self.history: list[dict[str, Any]] = []

    def observation(self) -> str:
        """The first observation: the task (C source or spec text) and what to write."""
        head = self.spec.rstrip() if self.spec is not None else \
            f"Reference ({self.reference.name}):\n\n{self.reference.read_text().rstrip()}"
        return f"{head}\n\n{_ASK.format(signature=self.signature)}"

    def reset(self) -> str:
        """Start an episode; returns the first observation."""
        self.turn = 0
        self.done = False
        self.history = []
        return self.observation()

    def step(self, cuda_text: str) -> tuple[str, float, bool, dict[str, Any]]:
        """Verify ``cuda_text``; returns ``(observation, reward, done, info)``.

        ``info``: ``feedback`` (the summary text), ``stage`` (the failing stage's key, None when
        none failed), ``check``, ``verdict``, ``rewards`` (``stage`` and ``speed``), ``report``
        (the JSON record; empty when the verification did not finish), ``turn``, ``seconds``,
        ``line`` (the evaluator's score line: ``status``, ``stages_reached``, ``timing``, ...).
        """
        from transpile.search.evaluate import run_isolated

        task = self.submission(cuda_text)
        return self.observe(run_isolated(task, self.timeout))

    def submission(self, cuda_text: str) -> Task:
        """Start a turn: the isolated verification task (a :class:`~transpile.search.evaluate.Task`) of
        ``cuda_text``, for a caller that runs many at once (:class:`transpile.search.prune.GroupRollout`);
        hand its outcome to :meth:`observe`.  :meth:`step` is the two in one."""
        from transpile.search.evaluate import Task

        if self.done:
            raise RuntimeError("the episode is over: call reset() first")
        self.turn += 1
        key = f"turn-{self.turn}"
        return Task(key, "transpile.search.evaluate:score_submission", {**self.verify_args, "id": key, "cuda": cuda_text})

    def observe(self, outcome: Outcome) -> tuple[str, float, bool, dict[str, Any]]:
        """End the turn started by :meth:`submission` with its :class:`~transpile.search.evaluate.Outcome`:
        ``(observation, reward, done, info)`` as :meth:`step` returns them."""
        from transpile.search.evaluate import unfinished

        line = outcome.value if outcome.ok else unfinished(outcome.key, outcome, self.timeout)
        rewards = line["rewards"]
        reward = rewards["stage"] + self.speed_weight * rewards["speed"]
        self.done = bool(line["ok"]) or self.turn >= self.max_turns
        feedback = line["feedback"]
        info = {"feedback": feedback, "stage": line["stage"], "check": line["check"], "verdict": line["verdict"],
                "rewards": rewards, "report": line.get("report", {}), "turn": self.turn,
                "seconds": round(outcome.seconds, 3),
                "line": {k: v for k, v in line.items() if k != "report"}}
        self.history.append({"reward": reward, **info})
        return feedback + ("" if line["ok"] else _RETRY), reward, self.done, info
