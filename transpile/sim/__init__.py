"""CPU execution of emitted CUDA: the verifier's stage (c).

A .cu file is compiled with g++ against ``include/cuda_sim.h``, our
simulation of the CUDA subset we need, and its ``extern "C"`` host functions
are called through ctypes on small inputs.  No GPU is involved.

Model: blocks run one at a time (in order, or shuffled under a seed); the
threads of a block are cooperative fibers that switch only at barriers, warp
collectives and yield points, so ``__shared__`` is plain ``static`` storage.
A seed also shuffles the order in which threads resume after each barrier,
which turns a missing ``__syncthreads()`` into a reproducible wrong answer.
Barrier divergence and warp-collective deadlocks are reported (never hang);
``cudaMalloc`` buffers carry guard zones whose corruption is counted;
copies are checked against the allocation table (a host pointer where a device
pointer belongs is an error).

    from transpile.sim import build, SimLibrary, run_isolated
    b = build("gemm.cu", out_dir)
    run = run_isolated(b, "gemm", A, B, C, np.int32(n), seed=1)
    assert run.ok

Supported: qualifiers, built-in index variables, ``dim3``/vector types,
static and ``extern __shared__`` memory, ``__syncthreads`` (+ ``_count``/``_and``/``_or``),
``__syncwarp``, ``__shfl*_sync``, ``__ballot/any/all_sync``, ``__match_*_sync``,
``__reduce_*_sync``, ``__activemask``, atomics (incl. ``_block``/``_system``),
fences, ``__ldg`` & co., CUDA-only math and integer intrinsics, device ``assert``
and ``printf``, ``__constant__``/``__device__`` variables and the symbol copies,
and the runtime API for memory, streams, events, device queries, attributes,
occupancy and ``cudaLaunchKernel``.  Reported by :func:`build` as
:class:`SimUnsupported`: inline ``asm``, cooperative groups and launches, wmma,
half/bfloat16/fp8, textures/surfaces, clusters, ``memcpy_async``/pipelines,
graphs, dynamic parallelism, CUDA libraries, the driver API, and any other
``cudaXxx()`` call the header does not define.  Not modelled: directed
rounding (``__fadd_rz`` rounds to nearest), ``__CUDA_ARCH__`` (undefined: host
code paths), blocks waiting for each other (they run one at a time; a block reading another
block's output of the same launch is reported as a race).

Knobs: ``__sim_set_schedule(seed)`` (:meth:`SimLibrary.set_schedule`,
``TRANSPILE_SIM_SEED``), ``__sim_set_guard_bytes`` (default 256,
``TRANSPILE_SIM_GUARD_BYTES``), ``__sim_set_fill_byte`` (poison, default 0xFF),
``TRANSPILE_SIM_STACK_KB`` (fiber stacks, default 256), ``TRANSPILE_SIM_QUIET``,
``TRANSPILE_SIM_RACE=0`` (no race detection; ``__sim_set_race_check``).

Race detection (``include/cuda_sim_race.h``): the .cu file's translation unit is compiled with
gcc's ThreadSanitizer instrumentation and linked without its runtime, every load and store of
kernel code to device or shared memory is checked for happens-before (barriers, warp syncs, locks)
and a race is a diagnostic starting ``data race`` (the verifier's ``race`` / ``block-race``).
Environment (docs/verify.md): fresh memory's fill follows the schedule seed, clocks are virtual,
and :func:`neutral_process` hides the Python process from the code it runs.
"""

from __future__ import annotations

from transpile.sim.build import INCLUDE_DIR, SimBuild, build, known_api
from transpile.sim.errors import SimBuildError, SimCrash, SimError, SimTimeout, SimUnsupported
from transpile.sim.runner import CUDA_ERRORS, DevicePtr, SimLibrary, SimRun, neutral_process, run_isolated

__all__ = [
    "CUDA_ERRORS", "INCLUDE_DIR", "DevicePtr", "SimBuild", "SimBuildError", "SimCrash", "SimError", "SimLibrary", "SimRun",
    "SimTimeout", "SimUnsupported", "build", "known_api", "neutral_process", "run_isolated",
]
