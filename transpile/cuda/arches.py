"""The NVIDIA GPU architectures the emitted CUDA builds for, and the nvcc flags that name them.

One output serves every architecture nvcc 13 builds for (:data:`ARCHES`): the
tensor-core kernels (:mod:`transpile.cuda.mma`) need sm_80 (f64 ``mma.sync``
m8n8k4, ``cp.async``) or sm_90 (the other f64 shapes) and are compiled only
there (``__CUDA_ARCH__``); the host launches their FMA kernels elsewhere.
``transpile --arch sm_XX`` narrows the output to one target
(:func:`parse`): the other kernel of each pair is left out.

The verifier's stage (b) compiles the sm_90 cubin (its resource report) and,
for files whose code can depend on the architecture (:func:`arch_dependent`:
inline PTX, ``__CUDA_ARCH__``, intrinsics of sm_80 and later), also
:data:`VERIFY_ARCHES` in one ``nvcc -fatbin`` (device code only): sm_75 (no fp64 tensor cores, no
``cp.async``) and sm_80 (those of Ampere, not Hopper's) are the oldest of the
feature levels the emitter distinguishes; sm_86/89 compile the same code as
sm_80 and sm_100/120 the same as sm_90.  The full list is compiled in CI
(``tests/test_arches.py``, slow).  docs/architectures.md has the table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from transpile.diagnostics import TranspileError

#: Every real architecture ``nvcc --list-gpu-arch`` of CUDA 13 lists that users' GPUs have
#: (T4; A100; RTX 30, A10; RTX 40, L4; H100/H200; B200; RTX 50), as 10 * major + minor.
ARCHES = (75, 80, 86, 89, 90, 100, 120)
#: Compiled by the verifier's stage (b) beside sm_90, for architecture-dependent files.
VERIFY_ARCHES = (75, 80)

_DEPENDENT = re.compile(r"\basm\b|__CUDA_ARCH__|\b__reduce_\w+_sync\b|\b__pipeline_\w+|\bmemcpy_async\b|"
                        r"\bwgmma\b|\b__cluster_dims__\b|\bthis_cluster\b|\b__nv_bfloat16\b|\bcp\.async\b")


def gencode(arches: tuple[int, ...]) -> list[str]:
    """nvcc flags for a fat binary of ``arches``: SASS for each, and the newest one's PTX (JIT for later GPUs)."""
    flags = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in arches]
    return flags + [f"-gencode=arch=compute_{arches[-1]},code=compute_{arches[-1]}"]


def arch_dependent(text: str) -> bool:
    """Whether ``text`` may compile for sm_90 and not for an older architecture (see the module doc)."""
    return _DEPENDENT.search(text) is not None


def parse(value: str) -> int:
    """``--arch``'s value (``sm_80``, ``sm80``, ``compute_80`` or ``80``) as 10 * major + minor."""
    m = re.fullmatch(r"(?:sm_?|compute_)?(\d+)[af]?", value.strip())
    if m is None or int(m.group(1)) not in ARCHES:
        known = ", ".join(f"sm_{a}" for a in ARCHES)
        raise TranspileError(None, f"--arch {value}: not a target of this compiler (one of {known})")
    return int(m.group(1))


@dataclass(frozen=True)
class Limits:
    """What one streaming multiprocessor of an architecture holds at once (the resident limits that
    bound occupancy): threads, blocks, 32-bit registers, shared memory (bytes, at the largest
    carveout), and the shared memory the driver reserves per block."""

    threads: int
    blocks: int
    smem: int
    reserved_smem: int = 1024
    registers: int = 65536


# The CUDA C++ Programming Guide, "Compute Capabilities", table "Technical Specifications per Compute
# Capability" (and the Turing, Ampere, Ada, Hopper and Blackwell tuning guides, "Occupancy"): resident
# threads (warps x 32), resident blocks, shared memory per SM and per-block reservation by compute
# capability.  64K registers per SM everywhere from 7.5 on.  Reserved shared memory per block: 1 KB
# from 8.0 on (cudaDevAttrReservedSharedMemoryPerBlock), none on 7.5.
LIMITS: dict[int, Limits] = {
    75: Limits(threads=1024, blocks=16, smem=64 * 1024, reserved_smem=0),
    80: Limits(threads=2048, blocks=32, smem=164 * 1024),
    86: Limits(threads=1536, blocks=16, smem=100 * 1024),
    89: Limits(threads=1536, blocks=24, smem=100 * 1024),
    90: Limits(threads=2048, blocks=32, smem=228 * 1024),
    100: Limits(threads=2048, blocks=32, smem=228 * 1024),
    120: Limits(threads=1536, blocks=32, smem=100 * 1024),
}
WARP = 32
#: Registers are allocated per warp in units of 256 (the occupancy calculator's "register allocation
#: unit size", warp granularity); ptxas never reports fewer than it allocates.
REGISTER_UNIT = 256


@dataclass(frozen=True)
class Occupancy:
    """Theoretical occupancy of one kernel: resident ``blocks`` per SM, the resident warps over the
    SM's maximum (``fraction``), and what bounds it (``limiter``: ``threads``, ``blocks``,
    ``registers`` or ``shared memory``; the first of them when several bind equally)."""

    blocks: int
    fraction: float
    limiter: str

    @property
    def percent(self) -> str:
        return f"{100 * self.fraction:.0f}%"


def occupancy(arch: int, *, threads: int, registers: int, smem: int = 0) -> Occupancy:
    """Theoretical occupancy of a kernel of ``threads`` threads a block, ``registers`` registers a
    thread and ``smem`` bytes of shared memory a block (static and dynamic) on ``arch``
    (:data:`LIMITS`), as the CUDA occupancy calculator computes it: each limit gives a number of
    resident blocks and the smallest wins.  A block that cannot fit at all (too many registers or
    too much shared memory) gives 0 blocks."""
    lim = LIMITS[arch]
    warps = -(-threads // WARP)
    per_warp = -(-max(registers, 1) * WARP // REGISTER_UNIT) * REGISTER_UNIT
    bounds = {"threads": lim.threads // WARP // warps, "blocks": lim.blocks,
              "registers": lim.registers // per_warp // warps}
    if smem > 0:
        bounds["shared memory"] = lim.smem // (smem + lim.reserved_smem)
    limiter = min(bounds, key=lambda k: bounds[k])
    blocks = max(bounds[limiter], 0)
    return Occupancy(blocks, blocks * warps * WARP / lim.threads, limiter)
