"""Analysis and transform passes over the transpile IR, importable by other compilers.

``REGISTRY`` maps each pass's command-line name to its module; every module has
one entry point ``run(kernel, *, ...) -> Kernel``.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "constprop": "constprop",
    "hoist": "hoist",
    "induction": "induction",
    "sink-guard": "sink_guard",
    "delinearize": "delinearize",
    "argreduce": "argreduce",
    "ifreduce": "ifreduce",
    "wraparound": "wraparound",
    "peel": "peel",
    "privatize": "privatize",
    "snapshot": "snapshot",
    "expand": "expand",
    "forward": "forward",
    "reschedule": "reschedule",
    "distribute": "distribute",
    "interchange": "interchange",
    "fuse": "fuse",
    "closure": "closure",
    "wavefront": "wavefront",
    "search": "search",
    "scan": "scan",
    "normalize": "normalize",
    "reduce-gpu": "reduce_gpu",
    "map-gpu": "map_gpu",
    "launch-forms": "launch_forms",
}


def __getattr__(name: str) -> Any:
    # NOTE: REGISTRY is built on first use: importing one pass (or passes.budget, which the command
    # line needs at startup) must not import every pass and isl (issue 43: startup time).
    if name == "REGISTRY":
        registry = {k: importlib.import_module(f"passes.{m}") for k, m in _NAMES.items()}
        globals()["REGISTRY"] = registry
        return registry
    raise AttributeError(f"module 'passes' has no attribute {name!r}")
