"""CUDA-sensitive regions of emitted code, recorded by the emitters themselves.

The emitters know exactly which characters of the ``.cu`` are an index
computation, a bounds guard, a barrier, and so on, so they say so while they
write: :func:`mark` wraps a piece of emitted text in private-use markers
(``U+E000 label U+E001 text U+E002``; nesting allowed), and :func:`strip`
removes every marker and returns the clean text with the :class:`Span` of
each marked piece, by character offset into the clean text.  The markers never
reach a file: :func:`transpile.cuda.emit` strips them, and
:func:`transpile.cuda.emit_regions` returns the spans beside the same text.

Templates use the ``region`` filter (registered by
:func:`transpile.cuda.environment`)::

    {{ "__syncthreads();" | region("barrier") }}
    {% filter region("transfer") %}cudaMemcpy(...);{% endfilter %}

Labels (:data:`LABELS`) are the dataset's region vocabulary (docs/dataset.md).
"""

from __future__ import annotations

from dataclasses import dataclass

OPEN, SEP, CLOSE = "\ue000", "\ue001", "\ue002"

LABELS: dict[str, str] = {
    "index": "index computation: a declaration deriving a thread's coordinates or a loop variable from "
             "threadIdx/blockIdx (or from such a value), a trip or partial-tile count, the init and step "
             "clauses of a thread-strided loop, a flattened subscript (the text between the brackets), "
             "a bare threadIdx/blockIdx read in a role test",
    "guard": "bounds guard: the condition expression alone (no `if (`, `)` or `;`) of a test that keeps a "
             "thread, tile or launch inside the iteration space: the bound test of a grid-, block-, warp- or "
             "lane-strided `for`, an `if` comparing indices with bounds (wavefront skew, partial tile or "
             "chunk, triangular range), the condition of a bounds ternary, a launch's non-empty test; "
             "role tests (`lane == 0`) are not guards",
    "barrier": "barrier: a `__syncthreads();` or `__syncwarp();` statement",
    "shared": "shared memory: a `__shared__` declaration statement, or a statement storing into or loading "
              "from a shared tile or buffer",
    "reduce": "reduction combine: a per-thread partial's declaration and accumulation, the warp-shuffle "
              "tree (the whole loop), the fold of partials (the whole loop), applying the total",
    "launch": "launch configuration: a host statement computing a launch's trip count, and the "
              "`kernel<<<grid, block, smem, stream>>>(args);` statement",
    "transfer": "host transfer: a host statement (through its `;`) that allocates, copies or frees device "
                "memory, and the byte count computed for an allocation",
}
"""Region label -> what it covers (docs/dataset.md, "Region spans").

A span starts at a statement's or expression's first character (never at
indentation) and ends after its last; spans nest (a flattened subscript
inside a shared-memory staging statement).
"""


@dataclass(frozen=True)
class Span:
    """``text[start:end]`` of the clean text is a region labelled ``label``."""

    label: str
    start: int
    end: int

    def of(self, text: str) -> str:
        return text[self.start:self.end]

    def as_dict(self) -> dict[str, object]:
        return {"label": self.label, "start": self.start, "end": self.end}


def mark(label: str, text: str) -> str:
    """``text`` wrapped as a region labelled ``label`` (one of :data:`LABELS`)."""
    if label not in LABELS:
        raise ValueError(f"unknown region label {label!r}")
    return f"{OPEN}{label}{SEP}{text}{CLOSE}"


def strip(marked: str) -> tuple[str, list[Span]]:
    """The text without markers, and the spans, ordered by (start, -end)."""
    out: list[str] = []
    pos = 0  # length of the clean text so far
    stack: list[tuple[str, int]] = []
    spans: list[Span] = []
    i, n = 0, len(marked)
    while i < n:
        j = _next_marker(marked, i)
        if j > i:
            out.append(marked[i:j])
            pos += j - i
        if j == n:
            break
        ch = marked[j]
        if ch == OPEN:
            k = marked.find(SEP, j + 1)
            if k < 0:
                raise ValueError(f"region opened at {j} has no label separator")
            label = marked[j + 1:k]
            if label not in LABELS:
                raise ValueError(f"unknown region label {label!r} at {j}")
            stack.append((label, pos))
            i = k + 1
        elif ch == CLOSE:
            if not stack:
                raise ValueError(f"region closed at {j} was never opened")
            label, start = stack.pop()
            spans.append(Span(label, start, pos))
            i = j + 1
        else:  # a stray separator
            raise ValueError(f"region separator outside a region opening at {j}")
    if stack:
        raise ValueError(f"{len(stack)} region(s) never closed: {[lab for lab, _ in stack]}")
    spans.sort(key=lambda s: (s.start, -s.end, s.label))
    return "".join(out), spans


def _next_marker(text: str, i: int) -> int:
    best = len(text)
    for ch in (OPEN, SEP, CLOSE):
        k = text.find(ch, i, best)
        if k >= 0:
            best = k
    return best


def clean(marked: str) -> str:
    """The text without markers (spans dropped)."""
    return strip(marked)[0]
