"""Region spans of the emitted CUDA (issue 8): exact, complete and deterministic.

For the 30 test kernels under several schedules, the spans that
:func:`transpile.cuda.emit_regions` returns are checked against rules of this
file that read only the clean text, never the emitters' own decisions: every
barrier, ``__shared__``, shuffle, ``<<<...>>>``, thread coordinate and
device-memory call of ``NAME_device`` lies in a span of its label, and every
bounds guard (found by :func:`guards`) in a ``guard`` span.  The semantics
are in ``transpile.cuda.regions.LABELS`` and docs/dataset.md ("Region spans").
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from passes import tile
from transpile import cuda, frontend, ir, pipeline
from transpile.cuda import regions
from transpile.cuda.regions import Span

KERNELS = Path(__file__).parent / "kernels"
NAMES = sorted(p.stem for p in KERNELS.glob("*.c"))
_NO_MMA = {"mma": False} if "mma" in {f.name for f in dataclasses.fields(tile.Options)} else {}
#: Schedule -> (pipeline.lower's naive flag, tiling options).  ``no-mma`` keeps the
#: tiled path on its shared-memory FMA kernel (templates/tiled_matmul.cu.j2).
VARIANTS: dict[str, tuple[bool, tile.Options | None]] = {
    "default": (False, None), "naive": (True, None),
    "no-shared": (False, tile.Options(shared=False)), "no-mma": (False, tile.Options(**_NO_MMA)),
    "rows-3": (False, tile.Options(rows=3, blocks=((128, 1, 1), (32, 4, 1), (32, 2, 4)))),
}

#: Label -> a token of the clean text that must lie inside a span of that label.
TOKENS = {
    "barrier": re.compile(r"\b__syncthreads\s*\(\s*\)|\b__syncwarp\s*\([^()]*\)"),
    "shared": re.compile(r"\b__shared__\b"),
    "reduce": re.compile(r"\b__shfl\w*"),
    "launch": re.compile(r"<<<.*?>>>"),
}
COORDS = re.compile(r"\b(?:threadIdx|blockIdx|blockDim|gridDim)\.[xyz]")
TRANSFERS = re.compile(r"\b(?:cuda(?:MallocAsync|FreeAsync|MemcpyAsync)|transpile_scratch(?:_free)?)\s*\(")
#: A relational operator (not a shift, ``->``, or part of ``<<<``).
RELATIONAL = re.compile(r"(?<![<>=!-])(?:<=|>=|<|>)(?![<>])")


@cache
def _lowered(name: str, naive: bool) -> ir.Module:
    return pipeline.lower(frontend.load(KERNELS / f"{name}.c"), naive=naive)


def _emit(name: str, variant: str) -> tuple[str, list[Span]]:
    naive, tiling = VARIANTS[variant]
    return cuda.emit_regions(_lowered(name, naive), source=f"{name}.c", tiling=tiling)


# ---------------------------------------------------------------------------
# The independent rules: where the regions must be, from the clean text alone


def _functions(text: str, header: str) -> Iterator[tuple[str, int, int]]:
    """``(signature, body start, body end)`` of each definition whose header line matches ``header``."""
    for m in re.finditer(rf"^{header}[^\n]*\n\{{\n", text, re.M):
        end = text.index("\n}\n", m.end())
        yield m.group(0), m.end(), end


def _balanced(text: str, open_at: int) -> int:
    """The index of the parenthesis closing the one at ``open_at``."""
    depth = 0
    for i in range(open_at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    raise AssertionError(f"unbalanced parenthesis at {open_at}")


def _split_top(text: str, sep: str) -> list[tuple[int, str]]:
    """``text`` split at ``sep`` outside parentheses and brackets: (offset, piece) pairs."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        depth += 1 if c in "([" else -1 if c in ")]" else 0
        if depth == 0 and text.startswith(sep, i):
            out.append((start, text[start:i]))
            start = i = i + len(sep)
            continue
        i += 1
    out.append((start, text[start:]))
    return out


def _strip_ws(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def guards(text: str) -> list[tuple[int, int]]:
    """The ``[start, end)`` of every bounds guard's condition, found textually.

    In a ``__global__`` function: the condition of each ``if`` (or ``else if``)
    that is a conjunction of relational comparisons reading no parameter array
    (a comparison of indices with bounds), and the test of each ``for`` whose
    start reads a thread coordinate (``threadIdx``/``blockIdx`` or a name
    declared from them at the function's top level: a thread-strided loop).
    In ``NAME_device``: the condition of each ``if`` that directly encloses
    a ``<<<`` launch.
    """
    out = []
    for sig, lo, hi in _functions(text, "__global__ "):
        arrays = set(re.findall(r"\*\s*(?:__restrict__\s*)?(\w+)\s*[,)]", sig))
        coords = {"threadIdx", "blockIdx"}
        for m in re.finditer(r"^  (?:const\s+)?[a-z][a-z ]*?\s(\w+)\s*=\s*([^;\n]*);", text[lo:hi], re.M):
            if set(re.findall(r"\w+", m.group(2))) & coords:
                coords.add(m.group(1))
        for m in re.finditer(r"\b(if|for) \(", text[lo:hi]):
            open_at = lo + m.end() - 1
            close = _balanced(text, open_at)
            if m.group(1) == "if":
                conjuncts = _split_top(text[open_at + 1:close], "&&")
                if all(RELATIONAL.search(c) and "||" not in c
                       and not any(re.search(rf"\b{a}\s*\[", c) for a in arrays) for _, c in conjuncts):
                    out.append(_strip_ws(text, open_at + 1, close))
            else:
                clauses = _split_top(text[open_at + 1:close], ";")
                assert len(clauses) == 3, f"for header {text[open_at:close + 1]!r}"
                if set(re.findall(r"\w+", clauses[0][1].partition("=")[2])) & coords:
                    off, _test = clauses[1]
                    out.append(_strip_ws(text, open_at + 1 + off, open_at + 1 + off + len(_test)))
    for _sig, lo, hi in _functions(text, r'extern "C" cudaError_t \w+_device\('):
        for m in re.finditer(r"\bif \((.*)\) \{\n\s*\w+<<<", text[lo:hi]):
            out.append((lo + m.start(1), lo + m.end(1)))
    return out


def _inside(spans: list[Span], label: str, start: int, end: int) -> bool:
    return any(s.label == label and s.start <= start and end <= s.end for s in spans)


def _where(text: str, start: int, end: int) -> str:
    line = text.count("\n", 0, start) + 1
    return f"line {line}: {text[start:end]!r}"


def problems(text: str, spans: list[Span]) -> list[str]:
    """Every way ``spans`` fails the rules above for the clean text ``text`` (empty: all good)."""
    out = [f"bad span {s}" for s in spans if s.label not in regions.LABELS or not 0 <= s.start <= s.end <= len(text)]
    for label, token in TOKENS.items():
        for m in token.finditer(text):
            if not _inside(spans, label, m.start(), m.end()):
                out.append(f"{label} not marked: {_where(text, m.start(), m.end())}")
    for _sig, lo, hi in _functions(text, "__global__ "):
        for m in COORDS.finditer(text, lo, hi):
            if not _inside(spans, "index", m.start(), m.end()):
                out.append(f"thread coordinate not in an index span: {_where(text, m.start(), m.end())}")
    for _sig, lo, hi in _functions(text, r'extern "C" cudaError_t \w+_device\('):
        for m in TRANSFERS.finditer(text, lo, hi):
            end = _balanced(text, m.end() - 1) + 1
            if not _inside(spans, "transfer", m.start(), end):
                out.append(f"transfer not marked: {_where(text, m.start(), end)}")
    for start, end in guards(text):
        if not _inside(spans, "guard", start, end):
            out.append(f"guard not marked: {_where(text, start, end)}")
    return out


# ---------------------------------------------------------------------------
# Every kernel, every schedule


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("name", NAMES)
def test_spans_are_exact_and_complete(name: str, variant: str) -> None:
    text, spans = _emit(name, variant)
    naive, tiling = VARIANTS[variant]
    assert text == cuda.emit(_lowered(name, naive), source=f"{name}.c", tiling=tiling)
    assert not problems(text, spans), "\n".join(problems(text, spans))
    assert _emit(name, variant) == (text, spans)  # deterministic


@pytest.mark.parametrize("variant", ["default", "no-mma"])
@pytest.mark.parametrize("name", NAMES)
def test_marks_do_not_change_the_text(name: str, variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The text is the same when nothing is marked: no marker moved a line, an indent or a dedup."""
    text, _spans = _emit(name, variant)
    monkeypatch.setattr(regions, "mark", lambda label, text: text)
    naive, tiling = VARIANTS[variant]
    assert cuda._render(_lowered(name, naive), source=f"{name}.c", tiling=tiling) == text


def test_the_schedules_reach_every_kind_of_region() -> None:
    """The corpus exercises every label, so the checks above are not vacuous."""
    seen = {s.label for name in NAMES for v in VARIANTS for s in _emit(name, v)[1]}
    assert seen == set(regions.LABELS)
    assert sum(len(guards(_emit(name, "default")[0])) for name in NAMES) > 100


def test_guard_rule_finds_the_guards() -> None:
    text, _ = _emit("seidel_2d", "default")
    found = {text[a:b] for a, b in guards(text)}
    assert "1 <= w - 4 * t - 2 * i && w - 4 * t - 2 * i < n - 1" in found  # the wavefront skew
    assert "i_g < i_hi" in found and "i_n > 0 && t_n > 0" in found  # grid-stride test, launch guard
    text, _ = _emit("gemm", "no-mma")
    found = {text[a:b] for a, b in guards(text)}
    assert {"kk < kn", "gj >= rlo[m] && gj < rhi[m]"} <= found
    assert any(re.fullmatch(r"t < \d+", g) for g in found)  # staging loop: block-strided
    assert not any("== 0" in g for g in found)  # role tests are not guards


# ---------------------------------------------------------------------------
# The checker catches a missing mark


def _unmarked(text: str, spans: list[Span], label: str) -> list[Span]:
    """``spans`` without the first ``label`` span that a check needs."""
    for i, s in enumerate(spans):
        if s.label == label:
            rest = spans[:i] + spans[i + 1:]
            if problems(text, rest):
                return rest
    raise AssertionError(f"no {label} span is needed")


@pytest.mark.parametrize("name, variant, label", [
    ("gemm", "no-mma", "barrier"), ("gemm", "no-mma", "shared"), ("gemm", "no-mma", "guard"),
    ("gemm", "no-mma", "index"), ("seidel_2d", "default", "guard"), ("jacobi_2d", "default", "launch"),
    ("durbin", "default", "barrier"), ("durbin", "default", "transfer"), ("gesummv", "default", "reduce"),
])
def test_a_missing_span_is_caught(name: str, variant: str, label: str) -> None:
    text, spans = _emit(name, variant)
    assert not problems(text, spans)
    assert problems(text, _unmarked(text, spans, label))


def test_a_stripped_mark_is_caught() -> None:
    """Removing one marker pair from the emitter's output leaves a guard the checker reports."""
    marked = cuda._render(_lowered("seidel_2d", False), source="seidel_2d.c", tiling=None)
    opening = f"{regions.OPEN}guard{regions.SEP}"
    at = marked.index(opening + "1 <= w")
    close = marked.index(regions.CLOSE, at)
    text, spans = regions.strip(marked[:at] + marked[at + len(opening):close] + marked[close + 1:])
    assert [p for p in problems(text, spans) if "1 <= w - 4 * t - 2 * i" in p]
