"""The toolchain: where nvcc is, which release it is, and what ptxas says of a build.

The one module that finds the CUDA compiler (the verifier's stage (b), the signature check, the GPU
build, the dataset's tool record, ``--report``, and the benches ask it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any


def nvcc() -> str | None:
    """The nvcc executable (PATH, then $CUDA_HOME/bin, then /usr/local/cuda/bin)."""
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "nvcc").exists():
            return str(Path(root) / "bin" / "nvcc")
    return None


@cache
def nvcc_version() -> str | None:
    """The nvcc release (``12.4.131``), or None without nvcc."""
    exe = nvcc()
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"release ([\d.]+), V([\d.]+)", out)
    if m:
        return m[2]
    lines = out.strip().splitlines()
    return lines[-1] if lines else None


def _demangle(name: str) -> str:
    m = re.match(r"_Z(\d+)", name)
    if m:
        n = int(m.group(1))
        return name[m.end():m.end() + n]
    return name


_PTXAS_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PTXAS_PROPS = re.compile(r"Function properties for (\S+)")
_PTXAS_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_USED = re.compile(r"Used (\d+) registers")


def parse_ptxas(text: str) -> list[dict[str, Any]]:
    """Per-kernel resources from ``-Xptxas -v`` output, in the order ptxas compiled the entries.

    Each record: ``kernel`` (demangled), ``mangled``, and what ptxas said of it: ``registers``,
    ``smem``, ``stack``, ``spill_stores``, ``spill_loads``, ``cmem``, ``barriers``.  A "Function
    properties" block names the function its stack and spill line belongs to: an entry's, or a
    device function's (not inlined), which is not a kernel and is left out.
    """
    entries: dict[str, dict[str, Any]] = {}
    props: dict[str, dict[str, Any]] = {}  # blocks seen before their entry line (or of device functions)
    cur: dict[str, Any] | None = None
    for line in text.splitlines():
        if m := _PTXAS_ENTRY.search(line):
            name = m.group(1)
            cur = entries.setdefault(name, {"kernel": _demangle(name), "mangled": name, **props.pop(name, {})})
            continue
        if m := _PTXAS_PROPS.search(line):
            name = m.group(1)
            cur = entries[name] if name in entries else props.setdefault(name, {})
            continue
        if cur is None:
            continue
        if m := _PTXAS_FRAME.search(line):
            cur.update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        if m := _PTXAS_USED.search(line):
            cur["registers"] = int(m.group(1))
            sm = re.search(r"(\d+) bytes smem", line)
            cur["smem"] = int(sm.group(1)) if sm else 0
            cm = re.search(r"(\d+) bytes cmem\[0\]", line)
            if cm:
                cur["cmem"] = int(cm.group(1))
            bm = re.search(r"used (\d+) barriers", line)
            if bm:
                cur["barriers"] = int(bm.group(1))
    return list(entries.values())
