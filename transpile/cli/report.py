"""``transpile compile --report FILE.html``: what can be known about emitted CUDA without running it.

A self-contained HTML page for one compiled file: the ``__global__`` kernels and
their static launch sites, and ptxas's resource report for ``-arch=sm_90``
(registers, shared memory, stack frame, spills: the numbers that bound
occupancy).  Times, bandwidth and the roofline need a GPU: ``bench/gpu.py``
measures them (``--kernels NAME --plot`` for one kernel) and writes the same kind
of page with the chart.
"""

from __future__ import annotations

import html
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from transpile import toolchain

_GLOBAL = re.compile(r"__global__\s+(?:void\s+)?(?:__launch_bounds__\([^)]*\)\s+)?(?:void\s+)?(\w+)\s*\(")


@dataclass
class KernelResources:
    """ptxas's report for one entry function."""

    name: str
    registers: int = 0
    smem: int = 0
    stack: int = 0
    spill_stores: int = 0
    spill_loads: int = 0


@dataclass
class StaticInfo:
    """Everything the page shows."""

    source: str
    kernels: list[str] = field(default_factory=list)
    launch_sites: int = 0
    resources: list[KernelResources] = field(default_factory=list)
    ptxas: str = ""
    error: str = ""


def kernel_resources(text: str) -> list[KernelResources]:
    """Per-entry resources from ``nvcc -Xptxas -v`` output (:func:`transpile.toolchain.parse_ptxas`)."""
    from transpile.toolchain import parse_ptxas as parse

    return [KernelResources(r["kernel"], r.get("registers", 0), r.get("smem", 0), r.get("stack", 0),
                            r.get("spill_stores", 0), r.get("spill_loads", 0)) for r in parse(text)]


def analyse(cu_text: str, source: str, *, nvcc: str | None = None) -> StaticInfo:
    """Kernels, launch sites and (when nvcc is found) ptxas's resource report of ``cu_text``."""
    info = StaticInfo(source, kernels=_GLOBAL.findall(cu_text), launch_sites=cu_text.count("<<<"))
    exe = nvcc or toolchain.nvcc()
    if exe is None:
        info.error = "nvcc not found: no resource report"
        return info
    with tempfile.TemporaryDirectory() as d:
        cu = Path(d) / "k.cu"
        cu.write_text(cu_text)
        proc = subprocess.run([exe, "-arch=sm_90", "-O3", "-cubin", "-Xptxas", "-v", "-o", str(Path(d) / "k.cubin"),
                               str(cu)], capture_output=True, text=True, timeout=600)
    info.ptxas = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        info.error = "nvcc failed: " + info.ptxas[-500:]
    info.resources = kernel_resources(info.ptxas)
    return info


def render(info: StaticInfo) -> str:
    """The HTML page."""
    rows = "".join(
        f"<tr><td>{html.escape(r.name)}</td><td>{r.registers}</td><td>{r.smem}</td><td>{r.stack}</td>"
        f"<td>{r.spill_stores + r.spill_loads}{' (SPILL)' if r.spill_stores + r.spill_loads else ''}</td></tr>"
        for r in info.resources)
    err = f"<p><b>{html.escape(info.error)}</b></p>" if info.error else ""
    return (
        "<!doctype html>\n<html><head><meta charset='utf-8'>"
        f"<title>transpile report: {html.escape(info.source)}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:2px 6px}</style></head><body>\n"
        f"<h1>{html.escape(info.source)}</h1>\n"
        f"<p>{len(info.kernels)} <code>__global__</code> kernel(s): {html.escape(', '.join(info.kernels))}; "
        f"{info.launch_sites} launch site(s) in the host code.</p>\n{err}"
        "<h2>ptxas, -arch=sm_90</h2>\n<table><tr><th>kernel</th><th>registers</th><th>shared bytes</th>"
        f"<th>stack bytes</th><th>spill bytes</th></tr>{rows}</table>\n"
        "<p>Timing needs a GPU: <code>python bench/gpu.py --kernels NAME --plot</code> times the kernel with "
        "CUDA events, checks it against gcc and draws it on the roofline of the measured copy bandwidth and "
        "DGEMM rate (bench/results/).</p>\n"
        f"<details><summary>ptxas output</summary><pre>{html.escape(info.ptxas)}</pre></details>\n"
        "</body></html>\n")
