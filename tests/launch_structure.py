"""The launch structure of a lowered kernel: what the fixed-extent tests compare between two shapes.

Two C spellings of one kernel (C99 variable-length array parameters ``double C[ni][nj]``, or fixed
extents ``double C[NI][NJ]`` from size macros with ``int ni`` loop bounds) must lower to the same
launches: the same host loops around the same kernels, each of the same form (plain, rows, sweep,
chain, tiled, tensor-core, one-block loop, fused steps ...).  The form is what the emitter prints,
so the structure is read from the emitted CUDA's ``NAME_run`` (the host sequence of launches and
host loops) and from each ``__global__`` definition's launch bounds:

* a host ``for``/``while`` loop prints as ``for{`` ... ``}``;
* a launch prints as ``launch <bounds> grid(<g>) block(<b>)``: the kernel's ``__launch_bounds__``
  arguments, and its grid and block with every identifier other than the runtime's own
  ``transpile_*`` helpers replaced by ``_`` and every number kept (a block of ``256u`` threads
  and a block sized at run time from a loop's trip count differ; names of loop counters do not).

Scalars and array extents do not appear: the fixed-extent form passes no extent parameters, and
the loop counters have the source's names.
"""

from __future__ import annotations

import re

_IDENT = re.compile(r"\b(?!transpile_)(?!dim3\b)[A-Za-z_][A-Za-z_0-9]*\b")
_BOUNDS = re.compile(r"__global__ void (?:__launch_bounds__\(([^)]*)\) )?(\w+)\(")
_LAUNCH = re.compile(r"(\w+)<<<(.*)>>>\(")


def structure(cuda: str, name: str) -> list[str]:
    """The launch structure of function ``name`` in the emitted ``cuda`` (see the module docstring)."""
    bounds = {m.group(2): m.group(1) or "" for m in _BOUNDS.finditer(cuda)}
    out: list[str] = []
    loops: list[int] = []  # indentation of each open host loop
    for line in _run_body(cuda, name).splitlines():
        text = line.strip()
        indent = len(line) - len(line.lstrip())
        if loops and text.startswith("}") and indent == loops[-1]:
            loops.pop()
            out.append("}")
        if re.match(r"(for|while) \(", text):
            loops.append(indent)
            out.append("for{")
        m = _LAUNCH.search(text)
        if m:
            grid, block = _config(m.group(2))
            out.append(f"launch {bounds.get(m.group(1), '?')} grid({grid}) block({block})")
    return out


def _config(text: str) -> tuple[str, str]:
    """The grid and block of a launch configuration ``grid, block, shared, stream``."""
    parts = _split_top(text)
    grid, block = parts[0], parts[1]
    return _IDENT.sub("_", grid).replace(" ", ""), _IDENT.sub("_", block).replace(" ", "")


def _split_top(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    cur = ""
    for c in text:
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += c in "(["
        depth -= c in ")]"
        cur += c
    parts.append(cur)
    return [p.strip() for p in parts]


def _run_body(cuda: str, name: str) -> str:
    """The body of the host sequence every entry point calls: ``NAME_run`` when the drop-in copies
    between phases, else ``NAME_device``."""
    for fn in (f"{name}_run", f"{name}_device"):
        m = re.search(rf"^\S.*\b{re.escape(fn)}\(.*\)\n\{{\n", cuda, re.M)
        if m:
            return cuda[m.end():cuda.index("\n}\n", m.end())]
    raise AssertionError(f"no definition of {name}_run or {name}_device in the emitted CUDA")
