"""Rewrite a PolyBench-style C kernel's array parameters as hand-indexed pointers.

``flatten(src)`` turns every parameter ``double A[m][n]`` of the kernel
function into ``double *A`` and every reference ``A[e1][e2]`` into
``A[(e1) * n + (e2)]`` (three dimensions: ``A[((e1) * q + (e2)) * p + (e3)]``),
the way C code without variable-length arrays writes it.  A test helper: it
understands the test kernels' own style (a ``kernel_`` function, extents that are
parameter names, references written ``A[...][...]``), not C in general.
"""

from __future__ import annotations

import re

_PARAM = re.compile(r"\b(double|float|int|long|char)\s+(\w+)((?:\[\w+\])+)")


def flatten(src: str) -> str:
    """``src`` with its array parameters turned into pointers indexed by hand (see the module docstring)."""
    start = re.search(r"\bvoid\s+kernel_\w+\s*\(", src)
    assert start is not None, "no kernel_ function"
    head_end = src.index("{", start.start())
    before, head, body = src[:start.start()], src[start.start():head_end], src[head_end:]
    dims: dict[str, list[str]] = {}

    def param(m: re.Match[str]) -> str:
        ext = re.findall(r"\[(\w+)\]", m.group(3))
        dims[m.group(2)] = ext
        return f"{m.group(1)} *{m.group(2)}"

    head = _PARAM.sub(param, head)
    return before + head + _rewrite(body, dims)


def _rewrite(text: str, dims: dict[str, list[str]]) -> str:
    out: list[str] = []
    i = 0
    name = re.compile(r"\b(" + "|".join(map(re.escape, sorted(dims, key=len, reverse=True))) + r")\s*\[") \
        if dims else None
    while name is not None:
        m = name.search(text, i)
        if m is None:
            break
        out.append(text[i:m.start()])
        subs, j = [], m.end() - 1
        while j < len(text) and text[j] == "[":
            depth, k = 0, j
            while True:
                depth += {"[": 1, "]": -1}.get(text[k], 0)
                if depth == 0:
                    break
                k += 1
            subs.append(_rewrite(text[j + 1:k], dims))
            j = k + 1
            ahead = j
            while ahead < len(text) and text[ahead] in " \t":
                ahead += 1
            if ahead < len(text) and text[ahead] == "[":
                j = ahead
        ext = dims[m.group(1)]
        assert len(subs) == len(ext), (m.group(1), subs, ext)
        flat = f"({subs[0]})"
        for e, s in zip(ext[1:], subs[1:]):
            flat = f"({flat} * {e} + ({s}))"
        out.append(f"{m.group(1)}[{flat}]")
        i = j
    out.append(text[i:])
    return "".join(out)
