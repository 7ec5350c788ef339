"""Shared pytest configuration: the ``--update-goldens`` option, and caches private to the run."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true", default=False,
                     help="rewrite the golden files under tests/golden/ from the current output")


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    """Whether golden tests should rewrite their expected files instead of comparing."""
    return bool(request.config.getoption("--update-goldens"))


def pytest_configure(config: pytest.Config) -> None:
    """Every cache keyed by content (the verifier's nvcc, simulator and reference builds, the autotuning
    cache, tests/polybench.py's libraries) in a directory of this run's own, unless the user set
    ``TRANSPILE_CACHE_DIR``: a run measures what a fresh machine does, and never passes on a build an
    earlier run left.  xdist's workers are started after this hook and inherit the variable."""
    if hasattr(config, "workerinput") or "TRANSPILE_CACHE_DIR" in os.environ:
        return
    path = tempfile.mkdtemp(prefix="transpile-test-cache-")
    os.environ["TRANSPILE_CACHE_DIR"] = path
    config.stash[_CACHE] = path


def pytest_unconfigure(config: pytest.Config) -> None:
    path = config.stash.get(_CACHE, None)
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)
        os.environ.pop("TRANSPILE_CACHE_DIR", None)


_CACHE = pytest.StashKey[str]()


#: ``TRANSPILE_TESTS=all`` runs every case of the tests marked ``sample(k)``; by default (CI) every k-th.
FULL = os.environ.get("TRANSPILE_TESTS", "") == "all"


def pytest_report_header(config: pytest.Config) -> str:
    return ("cases: all (TRANSPILE_TESTS=all)" if FULL else
            "cases: every k-th case of the tests marked sample(k); TRANSPILE_TESTS=all runs them all")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep every k-th case of a parametrized test marked ``sample(k)`` (the corpora whose every case
    costs a compile and a simulation: CI runs a fixed sample, ``TRANSPILE_TESTS=all`` runs all); then
    the tests marked ``slow`` (10 s and more each) first, otherwise in collection order: under xdist a
    long test started last keeps one worker busy while the others have nothing left to take."""
    if not FULL:
        seen: dict[str, int] = {}
        keep: list[pytest.Item] = []
        dropped: list[pytest.Item] = []
        for item in items:
            mark = item.get_closest_marker("sample")
            if mark is None:
                keep.append(item)
                continue
            base = item.nodeid.split("[", 1)[0]
            index = seen.get(base, 0)
            seen[base] = index + 1
            (keep if index % int(mark.args[0]) == 0 else dropped).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
