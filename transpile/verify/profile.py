"""The structural profile of an accepted candidate, measured on the CPU by the simulator.

After stage (c) passed, the candidate's simulator library (the one stage (c) built, cached) runs
once more on the first input set of the largest shape stage (c) tested, threads and blocks in
order, with the simulator's profile on (``include/cuda_sim_profile.h``: every load and store of
kernel code is recorded per thread and grouped into warp-level requests at each barrier and block
end).  The record (``Report.profile``, the ``profile`` key of ``transpile verify --json``;
docs/verify.md, "The structural profile") has one entry per kernel and an ``overall`` entry:

* ``coalescing``: 32-byte sectors per warp-level global load and store against the fewest
  sectors that hold the distinct bytes the request used (``sector_efficiency`` = minimum / actual,
  1.0 when every request is as compact as its bytes allow; ``sectors_per_request`` as Nsight
  Compute reports it);
* ``bank_conflicts``: shared-memory wavefronts per request against the ideal (``replays_per_access``
  = (wavefronts - ideal) / requests, 32 banks of 4 bytes);
* ``divergence``: the fraction of warp-level memory requests made by only part of the warp's lanes
  (the simulator sees no branch instruction: per-site lane participation stands for it);
* ``barriers_per_thread`` and ``atomics_per_thread``;
* ``flops`` and ``intensity`` (flops per byte of global traffic): floating-point arithmetic
  instructions of the simulator's machine code (:func:`flop_weights`), each attributed to the
  nearest memory access before it and counted as often as that access ran;
* ``occupancy``: theoretical, from ptxas's registers and static shared memory (stage (b)),
  the dynamic shared memory and block shape of the launch, for :data:`SM90`.

Deterministic: the inputs come from the report's seed, the schedule is the in-order one, and the
counts do not depend on addresses beyond their offsets (sectors and banks are relative to
allocations aligned to 256 bytes, as cudaMalloc's are).
"""

from __future__ import annotations

import bisect
import json
import math
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from typing import Any

PROFILE_VERSION = 1
"""Bumped when a figure of the record changes meaning."""


@dataclass(frozen=True, slots=True)
class Arch:
    """Per-SM limits of a target architecture (NVIDIA's occupancy calculator's figures)."""

    name: str
    sms: int
    regs_per_sm: int
    reg_alloc_unit: int  # registers, allocated per warp
    max_regs_per_thread: int
    smem_per_sm: int  # bytes
    smem_reserved_per_block: int
    smem_alloc_unit: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    max_warps_per_sm: int


SM90 = Arch("sm_90", sms=132, regs_per_sm=65536, reg_alloc_unit=256, max_regs_per_thread=255,
            smem_per_sm=233472, smem_reserved_per_block=1024, smem_alloc_unit=128,
            max_threads_per_sm=2048, max_blocks_per_sm=32, max_warps_per_sm=64)
"""H100 (SXM): 64K registers, 228 KB of shared memory, 2048 threads and 32 blocks per SM."""


# ---------------------------------------------------------------------------
# Occupancy


def occupancy(threads: int, registers: int | None, smem: int, arch: Arch = SM90) -> dict[str, Any]:
    """Theoretical occupancy of blocks of ``threads`` threads using ``registers`` per thread (None:
    unknown, not a limit) and ``smem`` bytes of shared memory (static + dynamic) on ``arch``:
    ``blocks_per_sm``, ``warps_per_sm``, ``occupancy`` (active warps / maximum) and ``limit``, the
    resource that bounds it (``threads``, ``blocks``, ``registers`` or ``shared``)."""
    warps = max(1, math.ceil(threads / 32))
    limits = {"threads": arch.max_threads_per_sm // (warps * 32), "blocks": arch.max_blocks_per_sm}
    if registers:
        per_warp = math.ceil(registers * 32 / arch.reg_alloc_unit) * arch.reg_alloc_unit
        limits["registers"] = (arch.regs_per_sm // per_warp) // warps
    per_block = math.ceil((smem + arch.smem_reserved_per_block) / arch.smem_alloc_unit) * arch.smem_alloc_unit
    limits["shared"] = arch.smem_per_sm // per_block
    limit = min(limits, key=lambda k: (limits[k], k))
    blocks = max(0, limits[limit])
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps,
            "occupancy": round(min(1.0, blocks * warps / arch.max_warps_per_sm), 4), "limit": limit}


def _resource_for(kernel: str, resources: list[dict[str, Any]]) -> dict[str, Any] | None:
    """ptxas's record of the simulator's kernel ``kernel`` (the launch's spelling, ``k`` or ``k<4>``)."""
    base = re.sub(r"<.*", "", kernel).split("::")[-1].strip()
    for r in resources:
        name = str(r.get("kernel", ""))
        plain = (re.sub(r"[<(].*", "", name).split() or [""])[-1].split("::")[-1]  # "void ns::k<4>(int)": k
        if plain == base:
            return r
    return None


# ---------------------------------------------------------------------------
# Flops from the simulator's machine code

_FP_OP = re.compile(r"^v?(?:add|sub|mul|div|sqrt)(ss|sd|ps|pd)$|^v?f(?:n?m(?:add|sub))\d*(ss|sd|ps|pd)$")
_LINE = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")


def flop_weights(mnemonic: str) -> int:
    """Flops of one x86 instruction: 1 per scalar add, sub, mul, div or sqrt (``addss``, ``vmulsd``),
    2 for a fused multiply-add, times the lanes of a packed one (4 for ``ps``, 2 for ``pd``, as
    xmm; the simulator's -O1 build has no ymm); 0 for anything else (moves, compares, conversions)."""
    m = _FP_OP.match(mnemonic)
    if not m:
        return 0
    suffix = m.group(1) or m.group(2)
    lanes = {"ss": 1, "sd": 1, "ps": 4, "pd": 2}[suffix]
    return lanes * (2 if "fm" in mnemonic or "fnm" in mnemonic else 1)


@cache
def _site_flops(library: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """For the library: the sorted return addresses of its ThreadSanitizer hook calls (the access
    sites) and the flops of the instructions from each to the next hook call in the same function
    (empty when objdump is missing)."""
    objdump = shutil.which("objdump")
    if objdump is None:
        return (), ()
    proc = subprocess.run([objdump, "-d", "--no-show-raw-insn", "-j", ".text", library], capture_output=True,
                          text=True, timeout=120)
    sites: list[int] = []
    flops: list[int] = []
    pending: int | None = None  # the flops counted since the last site of this function
    for line in proc.stdout.splitlines():
        if line.endswith(">:"):  # a new function: nothing carries over
            pending = None
            continue
        m = _LINE.match(line)
        if m is None:
            continue
        addr, mnem, rest = int(m.group(1), 16), m.group(2), m.group(3)
        if mnem.startswith("call") and "<__tsan_" in rest:
            if pending is not None:
                flops[-1] = pending
            # The return address is the next instruction's: recorded when it is read.
            sites.append(-1)
            flops.append(0)
            pending = 0
            continue
        if sites and sites[-1] == -1:
            sites[-1] = addr
        if pending is not None:
            pending += flop_weights(mnem)
            flops[-1] = pending
    pairs = sorted((s, f) for s, f in zip(sites, flops) if s >= 0)
    return tuple(s for s, _ in pairs), tuple(f for _, f in pairs)


def count_flops(library: str, sites: list[list[int]]) -> int | None:
    """Flops executed: for each ``[offset, thread executions]`` of an access site, the flops of the
    straight-line code after it (to the next access) times its executions; None without objdump."""
    addrs, flops = _site_flops(library)
    if not addrs:
        return None
    total = 0
    for off, count in sites:
        k = bisect.bisect_left(addrs, off)
        if k < len(addrs) and addrs[k] == off:
            total += flops[k] * count
    return total


# ---------------------------------------------------------------------------
# The record


def _ratio(a: float, b: float, digits: int = 4) -> float | None:
    return round(a / b, digits) if b else None


def summarize(raw: list[dict[str, Any]], resources: list[dict[str, Any]], library: str | None,
              arch: Arch = SM90) -> dict[str, Any]:
    """The profile record from the simulator's raw per-kernel counts (``__sim_profile_report``),
    ptxas's per-kernel ``resources`` (stage (b); empty when nvcc was missing) and the library (for
    the flop count; None: no flops)."""
    kernels = []
    tot: dict[str, float] = {}
    occ_weight = occ_sum = 0.0
    for k in raw:
        req, div, byt = k["requests"], k["divergent"], k["bytes"]
        gl_req = req[0] + req[1]
        sectors, minimum = sum(k["sectors"]), sum(k["min_sectors"])
        threads = k["threads_profiled"]
        gbytes = byt[0] + byt[1] + k["atomic_bytes"]
        flops = count_flops(library, k["sites"]) if library else None
        threads_per_block = k["block"][0] * k["block"][1] * k["block"][2]
        res = _resource_for(k["kernel"], resources)
        occ = None
        if res is not None or not resources:
            regs = res.get("registers") if res else None
            smem = (res.get("smem", 0) if res else 0) + k["dynamic_smem"]
            occ = occupancy(threads_per_block, regs, smem, arch)
            occ.update(registers=regs, smem=smem, threads_per_block=threads_per_block,
                       source="ptxas" if res else "launch shape only (no ptxas record)")
            waves = k["grid"][0] * k["grid"][1] * k["grid"][2] / max(1, occ["blocks_per_sm"] * arch.sms)
            occ["waves"] = round(waves, 4)
        entry = {
            "kernel": k["kernel"], "launches": k["launches"], "grid": k["grid"], "block": k["block"],
            "dynamic_smem": k["dynamic_smem"], "blocks": k["blocks"], "blocks_profiled": k["blocks_profiled"],
            "threads_profiled": threads,
            "coalescing": {"load_requests": req[0], "store_requests": req[1], "sectors": sectors,
                           "min_sectors": minimum, "sectors_per_request": _ratio(sectors, gl_req),
                           "load_sectors_per_request": _ratio(k["sectors"][0], req[0]),
                           "store_sectors_per_request": _ratio(k["sectors"][1], req[1]),
                           "sector_efficiency": _ratio(minimum, sectors)},
            "bank_conflicts": {"requests": req[2] + req[3], "wavefronts": k["wavefronts"],
                               "ideal_wavefronts": k["ideal_wavefronts"],
                               "replays_per_access": _ratio(k["wavefronts"] - k["ideal_wavefronts"], req[2] + req[3])},
            "divergence": {"requests": sum(req), "divergent": sum(div), "fraction": _ratio(sum(div), sum(req))},
            "barriers_per_thread": _ratio(k["barriers"], threads),
            "atomics_per_thread": _ratio(k["atomics"], threads),
            "global_bytes": gbytes, "flops": flops, "intensity": _ratio(flops, gbytes) if flops is not None else None,
            "occupancy": occ, "dropped_accesses": k["dropped"],
        }
        kernels.append(entry)
        for key, v in (("gl_req", gl_req), ("sectors", sectors), ("min", minimum), ("sreq", req[2] + req[3]),
                       ("wave", k["wavefronts"]), ("ideal", k["ideal_wavefronts"]), ("req", sum(req)),
                       ("div", sum(div)), ("bar", k["barriers"]), ("atom", k["atomics"]), ("threads", threads),
                       ("gbytes", gbytes), ("flops", flops if flops is not None else math.nan),
                       ("dropped", k["dropped"])):
            tot[key] = tot.get(key, 0) + v
        if occ is not None and threads:
            occ_weight += threads
            occ_sum += occ["occupancy"] * threads
    flops_all = tot.get("flops", math.nan)
    overall = {
        "kernels": len(kernels),
        "sectors_per_request": _ratio(tot.get("sectors", 0), tot.get("gl_req", 0)),
        "sector_efficiency": _ratio(tot.get("min", 0), tot.get("sectors", 0)),
        "replays_per_shared_access": _ratio(tot.get("wave", 0) - tot.get("ideal", 0), tot.get("sreq", 0)),
        "shared_efficiency": _ratio(tot.get("ideal", 0), tot.get("wave", 0)),
        "divergent_fraction": _ratio(tot.get("div", 0), tot.get("req", 0)),
        "barriers_per_thread": _ratio(tot.get("bar", 0), tot.get("threads", 0)),
        "atomics_per_thread": _ratio(tot.get("atom", 0), tot.get("threads", 0)),
        "global_bytes": int(tot.get("gbytes", 0)),
        "flops": None if math.isnan(flops_all) else int(flops_all),
        "intensity": None if math.isnan(flops_all) else _ratio(flops_all, tot.get("gbytes", 0)),
        "occupancy": round(occ_sum / occ_weight, 4) if occ_weight else None,
        "dropped_accesses": int(tot.get("dropped", 0)),
    }
    return {"version": PROFILE_VERSION, "arch": arch.name, "overall": overall, "kernels": kernels}


# ---------------------------------------------------------------------------
# Running it


def _profile_child(send: Any, library: str, sig: Any, inputs: dict[str, Any]) -> None:
    """In a forked child: one in-order call of the drop-in with the profile on; sends the raw counts."""
    import ctypes

    from transpile.sim import SimLibrary, neutral_process
    from transpile.verify.checks import HostBuffers
    from transpile.verify.reference import call_dropin

    lib = SimLibrary(library)
    lib.set_quiet(True)
    on = lib.lib["__sim_set_profile"]
    on.restype, on.argtypes = None, [ctypes.c_int]
    rep = lib.lib["__sim_profile_report"]
    rep.restype, rep.argtypes = ctypes.c_char_p, []
    arrays = {a.name: inputs[a.name] for a in sig.arrays}
    bufs = HostBuffers(arrays, pattern_seed=7)
    ptrs = {a.name: ctypes.c_void_p(bufs.address(a.name)) for a in sig.arrays}
    neutral_process()
    lib.reset()
    lib.set_schedule(0)
    on(1)
    call_dropin(lib.lib[sig.name], sig, inputs, ptrs)
    send(("profile", json.loads(rep() or b"[]")))
    on(0)


def _function_child(send: Any, library: str, name: str, args: tuple[Any, ...]) -> None:
    """In a forked child: ``name(*args)`` with the profile on; sends the raw counts."""
    import ctypes

    from transpile.sim import SimLibrary

    lib = SimLibrary(library)
    lib.set_quiet(True)
    on = lib.lib["__sim_set_profile"]
    on.restype, on.argtypes = None, [ctypes.c_int]
    rep = lib.lib["__sim_profile_report"]
    rep.restype, rep.argtypes = ctypes.c_char_p, []
    lib.reset()
    lib.set_schedule(0)
    on(1)
    lib.call(name, *args, restype=None)
    send(("profile", json.loads(rep() or b"[]")))
    on(0)


def profile_function(library: str, name: str, *args: Any, timeout: float = 120.0) -> list[dict[str, Any]]:
    """The simulator's raw per-kernel counts for one in-order call ``name(*args)`` of an ``extern "C"``
    function of ``library`` (numpy arrays, ints and floats as :meth:`SimLibrary.call` takes them), in
    a forked child; raises RuntimeError when the call fails."""
    from transpile.verify.proc import fork_stream

    def child(send: Any) -> None:
        _function_child(send, library, name, args)

    msgs, _, err = fork_stream(child, timeout=timeout, what=f"{name}() profiled in the CUDA simulator")
    got = [m[1] for m in msgs if m[0] == "profile"]
    if not got:
        raise RuntimeError(err.message if err is not None else "the profiled call sent nothing")
    return got[0]


def profile_call(library: str, sig: Any, inputs: dict[str, Any], *, timeout: float = 120.0) -> list[dict[str, Any]]:
    """The simulator's raw per-kernel counts for one in-order call of ``sig``'s drop-in in
    ``library`` on ``inputs`` (run in a forked child); raises RuntimeError when the call fails."""
    from transpile.verify.proc import fork_stream

    def child(send: Any) -> None:
        _profile_child(send, library, sig, inputs)

    msgs, _, err = fork_stream(child, timeout=timeout, what=f"{sig.name}() profiled in the CUDA simulator")
    got = [m[1] for m in msgs if m[0] == "profile"]
    if not got:
        raise RuntimeError(err.message if err is not None else "the profiled call sent nothing")
    return got[0]


def run_profile(report: Any, library: str, sig: Any, inputs: dict[str, Any], shape: str,
                *, timeout: float = 120.0) -> None:
    """Fill ``report.profile`` from one profiled call (a failure becomes a note and no profile)."""
    try:
        raw = profile_call(library, sig, inputs, timeout=timeout)
    except RuntimeError as e:
        report.note(f"profile: the profiled call failed ({e}); no profile")
        return
    prof = summarize(raw, report.resources, library)
    prof["shape"] = shape
    report.profile = prof
