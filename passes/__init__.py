"""Analysis and transform passes over the transpile IR, importable by other compilers.

``REGISTRY`` maps each pass's command-line name to its module; every module has
one entry point ``run(kernel, *, ...) -> Kernel``.
"""

from __future__ import annotations

from passes import (
    closure,
    constprop,
    delinearize,
    distribute,
    expand,
    forward,
    fuse,
    ifreduce,
    induction,
    interchange,
    map_gpu,
    normalize,
    privatize,
    reduce_gpu,
    reschedule,
    snapshot,
    wavefront,
    wraparound,
)

REGISTRY: dict = {
    "constprop": constprop,
    "induction": induction,
    "delinearize": delinearize,
    "ifreduce": ifreduce,
    "wraparound": wraparound,
    "privatize": privatize,
    "snapshot": snapshot,
    "expand": expand,
    "forward": forward,
    "reschedule": reschedule,
    "distribute": distribute,
    "interchange": interchange,
    "fuse": fuse,
    "closure": closure,
    "wavefront": wavefront,
    "normalize": normalize,
    "reduce-gpu": reduce_gpu,
    "map-gpu": map_gpu,
}
