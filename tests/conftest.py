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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests marked ``slow`` (10 s and more each) first, otherwise in collection order: under xdist a
    long test started last keeps one worker busy while the others have nothing left to take."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
