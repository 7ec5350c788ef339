"""The Ray backend of transpile/search/evaluate.py on a local Ray instance (CPU stages only): one Ray
task per submission, results streamed in completion order, a segfault or a hang inside a task
reported without losing the worker, and kernels' CUDA (one per emitter shape, h.SHAPES; all 30
are scored one by one in tests/test_verify.py) scored next to a hang and a crash.
One Ray instance for the module (starting one takes seconds)."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import evaluate_helpers as h
from transpile.diagnostics import TranspileError
from transpile.search.evaluate import Task, run_tasks, unfinished

ray = pytest.importorskip("ray")
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None,
                               reason="the simulator and the reference need g++ and gcc")
HELP = "tests.evaluate_helpers"


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    if ray.is_initialized():  # someone else's instance: ours must have the repository on the path
        ray.shutdown()
    auth = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"  # a throwaway local instance: no token written to ~/.ray
    path = os.pathsep.join(filter(None, [str(h.ROOT), os.environ.get("PYTHONPATH")]))
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": path}})
        yield ray
    finally:
        ray.shutdown()
        if auth is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = auth


@pytest.fixture(scope="module")
def files() -> dict[str, Path]:
    return h.emitted(h.SHAPES)


def test_ray_streams_outcomes_and_survives_crashes(local_ray: Any) -> None:
    tasks = [Task("hang", f"{HELP}:hang"), Task("segv", f"{HELP}:segfault"), Task("boom", f"{HELP}:boom"),
             *[Task(f"ok{i}", f"{HELP}:double", {"x": i}) for i in range(4)]]
    t0 = time.monotonic()
    outcomes = list(run_tasks(tasks, timeout=4.0, backend="ray"))
    by = {o.key: o for o in outcomes}
    assert sorted(by) == sorted(t.key for t in tasks)
    assert all(by[f"ok{i}"].ok and by[f"ok{i}"].value == {"x": 2 * i} for i in range(4))
    assert by["hang"].status == "timeout" and by["segv"].status == "crash" and "SIGSEGV" in by["segv"].error
    assert by["boom"].status == "error" and "ValueError: boom" in by["boom"].error
    assert outcomes[-1].key == "hang"  # submitted first, completed last: completion order
    assert time.monotonic() - t0 < 60
    # The segfault killed the forked child, not the worker: the same instance keeps working.
    assert [o.value for o in run_tasks([Task("again", f"{HELP}:double", {"x": 5})], backend="ray")] == [{"x": 10}]


def test_ray_gpu_tasks_need_a_gpu_in_the_cluster(local_ray: Any) -> None:
    with pytest.raises(TranspileError, match="no GPU"):
        list(run_tasks([Task("x", f"{HELP}:double", {"x": 1})], backend="ray", gpu=True))


@pytest.mark.slow
@needs_gxx
def test_ray_scores_kernels_a_hang_and_a_crash(local_ray: Any, files: dict[str, Path], tmp_path: Path) -> None:
    subs = [json.loads(x) for x in h.submissions(files, tmp_path).read_text().splitlines()]
    common = {"stages": "abc", "mode": "quick", "sim_timeout": 10.0}  # what `transpile evaluate --timeout 30` passes
    tasks = [Task(s["id"], "transpile.search.evaluate:score_submission", {**s, **common}) for s in subs]
    t0 = time.monotonic()
    lines = [o.value if o.ok else unfinished(o.key, o, 30.0) for o in run_tasks(tasks, timeout=30.0, backend="ray")]
    h.check_scores(lines, files)
    assert time.monotonic() - t0 < 600
