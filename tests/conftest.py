"""Shared pytest configuration: the ``--update-goldens`` option."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true", default=False,
                     help="rewrite the golden files under tests/golden/ from the current output")


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    """Whether golden tests should rewrite their expected files instead of comparing."""
    return bool(request.config.getoption("--update-goldens"))
