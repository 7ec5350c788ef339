"""Test-side material for the evaluator, the environment and the rewards.

:func:`emitted` writes transpile's CUDA for kernels of ``tests/kernels`` where
``verify_module`` writes it (the verifier's cache, named by content); :func:`hang_cuda` and
:func:`segv_cuda` are emitted kernels with a statement injected at the top of
the drop-in host function: an endless loop, a write through a null pointer.
The small functions at the bottom are task functions for ``run_tasks`` tests
(importable as ``tests.evaluate_helpers:NAME``).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "tests" / "kernels"
CHEATS = ROOT / "tests" / "cheats"
PB = sorted(KERNELS.glob("*.c"))


#: The evaluator and Ray tests score a few kernels, one per emitter shape: their subject is the
#: plumbing (isolation, streaming, hangs, crashes), not the kernels.  That every one of the 30
#: kernels' CUDA scores "pass" through the evaluator's task function is checked per kernel by
#: tests/test_verify.py::test_pipeline_output_passes_stages_a_to_c.
SHAPES = ("gemm",       # tensor-core tiled matmul
          "atax",       # column reduction
          "jacobi_2d",  # stencil
          "durbin",     # serial code and a block reduction
          "nussinov")   # host loop around the launches


def emitted(stems: tuple[str, ...] | None = None) -> dict[str, Path]:
    """``{stem: path}``: transpile's output for the kernels ``stems`` (all 30 by default), what
    ``transpile K.c --no-verify`` writes, at the path ``verify_module`` gives the same text.

    The simulator's build cache is keyed by the file's path as well as its text (the ``#line``
    directive), so one path per text lets these tests, tests/test_verify.py and the dataset export
    share one g++ build per kernel instead of compiling every kernel again in each temp directory.
    """
    from transpile import cuda, frontend, pipeline
    from transpile.verify.reference import cache_file

    paths = PB if stems is None else [KERNELS / f"{s}.c" for s in stems]
    return {path.stem: cache_file("emitted", path.stem,
                                  cuda.emit(pipeline.lower(frontend.load(path)), source=path.name))
            for path in paths}


def inject(text: str, name: str, stmt: str) -> str:
    """``stmt`` as the first statement of the host function ``extern "C" void name(...)``."""
    m = re.search(r'extern "C" void ' + re.escape(name) + r"\([^)]*\)\s*\{", text)
    assert m is not None, f"no drop-in {name} in the emitted text"
    return f"{text[:m.end()]}\n  {stmt}{text[m.end():]}"


def hang_cuda(cu: Path) -> str:
    """gemm's emitted CUDA whose host function never returns (volatile: the loop cannot be removed)."""
    return inject(cu.read_text(), "kernel_gemm", "volatile int spin = 1; while (spin) { }")


def segv_cuda(cu: Path) -> str:
    """atax's emitted CUDA whose host function writes through a null pointer."""
    return inject(cu.read_text(), "kernel_atax", "*(volatile int *)0 = 1;")


def submissions(files: dict[str, Path], dest: Path) -> Path:
    """A submissions file: the emitted kernels by path, then the hanging and the crashing one as text
    (``files`` must hold gemm and atax, whose text they are)."""
    lines: list[dict[str, Any]] = [{"id": stem, "cuda_path": str(cu), "reference": str(KERNELS / f"{stem}.c")}
                                   for stem, cu in files.items()]
    lines.append({"id": "hang", "cuda": hang_cuda(files["gemm"]), "reference": str(KERNELS / "gemm.c")})
    lines.append({"id": "segv", "cuda": segv_cuda(files["atax"]), "reference": str(KERNELS / "atax.c"),
                  "function": "kernel_atax"})
    path = dest / "submissions.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def check_scores(lines: list[dict[str, Any]], stems: Iterable[str]) -> None:
    """The acceptance: every kernel of ``stems`` scored and passing, the hang and the crash reported as such."""
    stems = list(stems)
    by_id = {line["id"]: line for line in lines}
    assert len(lines) == len(by_id) == len(stems) + 2, sorted(by_id)
    for stem in stems:
        check_passed(by_id[stem])
    hang, segv = by_id["hang"], by_id["segv"]
    # Either the verifier's own simulator timeout names stage (c), or the evaluator killed the task.
    assert hang["status"] == "timeout" or (hang["stage"], hang["check"]) == ("c", "timeout"), hang
    assert segv["status"] == "crash" or (segv["stage"], segv["check"]) == ("c", "crash"), segv
    assert "SIGSEGV" in segv["reason"], segv
    for bad in (hang, segv):
        assert not bad["ok"] and bad["rewards"]["stage"] < 1.0, bad


def check_passed(line: dict[str, Any]) -> None:
    """One kernel's line: scored, passing, all three stages passed, the full stage reward."""
    assert line["status"] == "scored" and line["verdict"] == "pass", line
    assert line["rewards"]["stage"] == 1.0 and line["stages_passed"] == ["a", "b", "c"], line


# ---------------------------------------------------------------------------
# Task functions for run_tasks


def double(x: int) -> dict[str, int]:
    return {"x": 2 * x}


def nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def hang(pidfile: str | None = None) -> None:
    """Start a grandchild (its pid in ``pidfile``), then sleep for ever."""
    if pidfile is not None:
        child = subprocess.Popen(["sleep", "1000"])
        Path(pidfile).write_text(str(child.pid))
    while True:
        time.sleep(1)


def segfault() -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


def boom() -> None:
    raise ValueError("boom")


def not_json() -> object:
    return {1, 2}


def dead(pid: int) -> bool:
    """Whether process ``pid`` is gone or a zombie (a container's pid 1 may never reap orphans)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")
