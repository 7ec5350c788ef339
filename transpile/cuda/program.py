"""``--emit program``: the whole C program in one .cu, its offloaded functions running on the GPU.

PPCG hands its users the whole program back; a drop-in .cu needs a build that links it with the
rest of the program.  ``--emit program`` writes one file that ``nvcc -arch=sm_80 prog.cu -o prog``
builds (any -arch the drop-in builds for):

1. The verified drop-in .cu, byte for byte, preceded by ``#define NAME transpile_gpu_NAME`` for
   each offloaded function and followed by its ``#undef``: the preprocessor renames the drop-in's
   ``extern "C"`` entry (only that token: ``NAME_device``, ``NAME_kernel0`` and string literals are
   other tokens), so the verified text is the one that runs.
2. The C program's files as written, compiled as C++ (nvcc compiles every .cu as C++): the first
   FILE, then the others (a program's other translation units, such as PolyBench's
   ``utilities/polybench.c``), each after a ``#line 1 "FILE"`` so that compiler messages name the
   user's file and line.  Headers found through ``-I`` or next to the including file are put in
   place (``#include "x.h"`` and ``#include <x.h>`` alike), since nvcc is not given the ``-I``;
   the standard headers stay includes.  The ``-D`` macros are defined before the first file.
3. Each offloaded function keeps its declarator as written (storage class, name, parameters in
   the program's own array types) and its body becomes one call of the drop-in, each array
   argument cast to the drop-in's element pointer: the shim from the program's types to the
   drop-in's.

What C allows and C++ does not is found before anything is written: the program part is compiled
with ``g++ -fsyntax-only -x c++`` (the drop-in replaced by its prototypes).  The one such
construct ordinary C programs are full of, a ``void *`` assigned to another pointer without a
cast (``double *a = malloc(n * sizeof *a);``), is mended in the emitted text: the cast g++'s
message names is put around the expression g++'s JSON diagnostic spans.  Anything else is an
error at the user's line (``file:line:col: error: ... does not compile as C++``), and no output.
``restrict`` (a C keyword C++ lacks) is defined as ``__restrict__``.

The files together are one translation unit: two files defining the same ``static`` name, or a
file relying on a macro another file leaves defined, are the limits (g++'s check reports the
first; docs/program.md).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from transpile import ir
from transpile.diagnostics import Loc, TranspileError, line_directive
from transpile.frontend.c import COMMENT_OR_STRING

PREFIX = "transpile_gpu_"
"""The drop-in entry ``NAME`` is ``transpile_gpu_NAME`` inside a program file."""

PROGRAM_MARK = "/* The C program (transpile --emit program): compiled as C++ by nvcc. */"
"""The line between the drop-in and the C program in a program file (:func:`split`)."""

_MAX_INCLUDE_DEPTH = 64
_MAX_MENDS = 4  # rounds of casts put in for g++'s void* conversions

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?P<open>["<])(?P<name>[^">\n]+)[">][^\n]*$', re.M)
_PRAGMA_ONCE = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+once\b", re.M)
_VOID_CONVERSION = re.compile(r"invalid conversion from '(?:const )?void\*' to '(?P<to>[^']+)'"
                              r"(?: \{aka '(?P<aka>[^']+)'\})?")


@dataclass(frozen=True)
class Entry:
    """A drop-in ``extern "C"`` function of the emitted .cu: its return type and parameter types."""

    name: str
    ret: str
    params: tuple[str, ...]


def entries(cu_text: str, names: Sequence[str]) -> dict[str, Entry]:
    """The drop-in entries ``names`` as the .cu defines them (``extern "C" RET NAME(T a, ...)``)."""
    out: dict[str, Entry] = {}
    for name in names:
        m = re.search(rf'^extern "C" (?P<ret>[^\n(]*?)\s*\b{re.escape(name)}\((?P<params>[^)]*)\)\s*$', cu_text, re.M)
        if m is None:
            raise TranspileError(None, f"internal error: the drop-in entry '{name}' is not in the emitted CUDA")
        params = [p.strip() for p in m.group("params").split(",") if p.strip() and p.strip() != "void"]
        types = tuple(re.sub(r"\s*\b[A-Za-z_]\w*$", "", p).strip() for p in params)
        out[name] = Entry(name, m.group("ret").strip(), types)
    return out


def body_span(text: str, name: str, line: int, file: str) -> tuple[int, int]:
    """Offsets of the body ``{ ... }`` (end exclusive) of the definition of ``name`` whose name is
    on ``line`` of ``text``: the name, its balanced parameter list, then the braces, comments and
    literals skipped."""
    masked = _mask(text)
    start = sum(len(s) + 1 for s in masked.split("\n")[: line - 1])
    m = re.compile(rf"\b{re.escape(name)}\s*\(").search(masked, start)
    if m is None or masked.count("\n", start, m.start()) > 0:
        raise TranspileError(Loc(file, line, 1), f"--emit program: cannot find the definition of '{name}' on this "
                                                 "line of the source (is it written through a macro?)")
    pos = _balanced(masked, m.end() - 1, "(", ")")
    brace = len(masked) if pos is None else pos
    while brace < len(masked) and masked[brace] in " \t\r\n":
        brace += 1
    if brace >= len(masked) or masked[brace] != "{":
        raise TranspileError(Loc(file, line, 1), f"--emit program: the body of '{name}' does not follow its "
                                                 "parameter list in the source (K&R parameters or a macro?)")
    end = _balanced(masked, brace, "{", "}")
    if end is None:
        raise TranspileError(Loc(file, line, 1), f"--emit program: the braces of '{name}' do not balance in the "
                                                 "source text (preprocessor conditionals inside it?)")
    return brace, end


def _mask(text: str) -> str:
    """``text`` with comments and literals blanked (same length, newlines kept)."""
    return COMMENT_OR_STRING.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)


def _balanced(text: str, pos: int, open_: str, close: str) -> int | None:
    """The offset just past the ``close`` matching the ``open_`` at ``pos``."""
    depth = 0
    for i in range(pos, len(text)):
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def shim_body(kernel: ir.Kernel, entry: Entry, names: Sequence[str]) -> str:
    """The body that calls the drop-in with the program's arguments ``names`` (the C parameters
    in order), each pointer cast to the drop-in's parameter type."""
    if len(entry.params) != len(names):
        raise TranspileError(kernel.loc, f"internal error: the drop-in '{kernel.name}' takes {len(entry.params)} "
                                         f"arguments, the C function {len(names)}")
    args = [f"({_cast_type(t)}){n}" if "*" in t else n for t, n in zip(entry.params, names)]
    call = f"{PREFIX}{kernel.name}({', '.join(args)})"
    ret = "return " if entry.ret != "void" else ""
    return f"{{ {ret}{call}; /* the verified drop-in above (transpile --emit program) */ }}"


def _cast_type(ty: str) -> str:
    """A parameter type as a cast's: no qualifiers of the pointer itself (``T *__restrict__`` and
    ``T *const`` cast as ``T *``, which nvcc would warn are meaningless)."""
    head, star, _ = ty.rpartition("*")
    return f"{head}{star}".rstrip() if star else ty


@dataclass
class _Unit:
    """The program text being assembled: the user's directories, the files' texts as read (by
    resolved path: the offsets of ``edits`` are into them), and the ``#pragma once`` files seen."""

    include_dirs: tuple[Path, ...]
    texts: dict[Path, str]
    edits: dict[Path, list[tuple[int, int, str]]]
    once: set[Path]
    parts: list[str]


def _resolve(name: str, quoted: bool, here: Path, include_dirs: Sequence[Path]) -> Path | None:
    """Where the preprocessor would find ``name`` among the user's directories (not the system's),
    spelled as gcc would name it in messages (the directory as given, then the name)."""
    dirs = ([here.parent] if quoted else []) + list(include_dirs)
    for d in dirs:
        p = d / name
        if p.is_file():
            return p
    return None


def _inline(path: Path, unit: _Unit, depth: int, loc: Loc) -> None:
    """Append ``path``'s text to ``unit``, the user's headers it includes put in place."""
    if depth > _MAX_INCLUDE_DEPTH:
        raise TranspileError(loc, f"--emit program: includes nested more than {_MAX_INCLUDE_DEPTH} deep")
    real = path.resolve()
    if real in unit.once:
        return
    text = _read(real, unit.texts, loc)
    if _PRAGMA_ONCE.search(text):
        unit.once.add(real)
    for start, end, new in sorted(unit.edits.get(real, ()), reverse=True):
        text = text[:start] + new + text[end:]
    shown = os.path.normpath(path)
    unit.parts.append(line_directive(1, shown) + "\n")
    masked = _mask(text)
    pos = 0
    for m in _INCLUDE.finditer(text):
        if not masked[m.start():m.end()].lstrip().startswith("#"):
            continue  # inside a comment
        line = text.count("\n", 0, m.start()) + 1
        found = _resolve(m.group("name"), m.group("open") == '"', path, unit.include_dirs)
        if found is None:
            continue  # a standard header: nvcc finds it
        unit.parts.append(text[pos:m.start()])
        _inline(found, unit, depth + 1, Loc(str(path), line, 1))
        unit.parts.append(f"\n{line_directive(line + 1, shown)}\n")
        pos = m.end() + 1
    unit.parts.append(text[pos:])
    if not text.endswith("\n"):
        unit.parts.append("\n")


def _read(path: Path, texts: dict[Path, str], loc: Loc) -> str:
    """``path``'s text, read once (undecodable bytes kept as they are)."""
    if path not in texts:
        try:
            texts[path] = path.read_bytes().decode("utf-8", "surrogateescape")
        except OSError as e:
            raise TranspileError(loc, f"cannot read '{path}': {e.strerror}") from None
    return texts[path]


def _defines(defines: Sequence[str]) -> list[str]:
    out = []
    for d in defines:
        name, eq, value = d.partition("=")
        out.append(f"#define {name} {value if eq else '1'}")
    return out


def _program_text(main: Path, others: Sequence[Path], include_dirs: Sequence[str], defines: Sequence[str],
                  texts: dict[Path, str], edits: dict[Path, list[tuple[int, int, str]]]) -> str:
    unit = _Unit(tuple(Path(d) for d in include_dirs), texts, edits, set(), [])
    head = [PROGRAM_MARK,
            "#ifndef restrict", "#define restrict __restrict__ /* C's keyword; C++ has none */", "#endif",
            *_defines(defines)]
    unit.parts.append("\n".join(head) + "\n")
    for f in (main, *others):
        _inline(f, unit, 0, Loc(str(f), 1, 1))
    return "".join(unit.parts)


def render(cu_text: str, module: ir.Module, main: Path, others: Sequence[Path] = (), *,
           include_dirs: Sequence[str] = (), defines: Sequence[str] = ()) -> str:
    """The program file: ``cu_text`` (the verified drop-in of ``module``, compiled from ``main``)
    with the program's files after it, the offloaded functions' bodies calling it."""
    names = [k.name for k in module.kernels]
    found = entries(cu_text, names)
    edits: dict[Path, list[tuple[int, int, str]]] = {}
    texts: dict[Path, str] = {}
    for k in module.kernels:
        if k.loc is None:
            raise TranspileError(None, f"--emit program: '{k.name}' has no source location (an .ir input has no "
                                       "C program around it)")
        path = Path(k.loc.file).resolve()
        text = _read(path, texts, k.loc)
        start, end = body_span(text, k.name, k.loc.line, k.loc.file)
        keep_lines = "\n" * text.count("\n", start, end)  # the lines after it keep their numbers
        shim = shim_body(k, found[k.name], [p.name for p in k.c_params])
        edits.setdefault(path, []).append((start, end, shim + keep_lines))
    program = _program_text(main, others, include_dirs, defines, texts, edits)
    program = _as_cxx(program, found, main)
    renames = "\n".join(f"#define {n} {PREFIX}{n}" for n in names)
    undo = "\n".join(f"#undef {n}" for n in names)
    return (f"/* Generated by transpile --emit program from {main.name}"
            f"{''.join(f' + {o.name}' for o in others)}: the whole program in one file; build it with\n"
            f"   nvcc -arch=sm_80 {main.with_suffix('.cu').name} -o {main.stem}   (any of sm_75 ... sm_120)\n"
            f"   The drop-in's entry {', '.join(names)} is named {PREFIX}NAME here; the program's own\n"
            "   definition calls it. */\n"
            f"{renames}\n{cu_text.rstrip()}\n{undo}\n\n{program}")


def split(text: str) -> tuple[str, str]:
    """A program file's two parts: the CUDA (the drop-in with its renames) and the C program."""
    at = text.find(PROGRAM_MARK)
    if at < 0:
        raise ValueError("not a program file of transpile --emit program")
    return text[:at], text[at:]


# -- C as C++ ---------------------------------------------------------------------------------


def _prototypes(found: dict[str, Entry]) -> str:
    lines = ["#include <stddef.h>", "#include <stdint.h>"]
    for e in found.values():
        params = ", ".join(e.params) or "void"
        lines.append(f'extern "C" {e.ret} {PREFIX}{e.name}({params});')
    return "\n".join(lines) + "\n"


def _gxx(text: str, timeout: float = 120.0) -> list[dict]:
    """g++'s errors for ``text`` compiled as C++ (JSON diagnostics), [] when it compiles."""
    with tempfile.TemporaryDirectory(prefix="transpile-program.") as d:
        src = Path(d) / "program.cc"
        src.write_text(text, encoding="utf-8", errors="surrogateescape")
        cmd = ["g++", "-fsyntax-only", "-x", "c++", "-std=c++17", "-w", "-fmax-errors=50",
               "-fdiagnostics-format=json", "-fdiagnostics-column-unit=byte", str(src)]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=d, errors="replace",
                                 env={**os.environ, "LC_ALL": "C"})
        except FileNotFoundError:
            return []  # no host compiler here: nvcc reports it at build time
        except subprocess.TimeoutExpired:
            raise TranspileError(None, f"--emit program: checking the program as C++ took over {timeout:.0f} s") from None
    if res.returncode == 0:
        return []
    try:
        diags = json.loads(res.stderr.strip().splitlines()[-1] if res.stderr.strip() else "[]")
    except json.JSONDecodeError:
        diags = []
    errors = [d for d in diags if d.get("kind") in ("error", "fatal error")]
    return errors or [{"kind": "error", "message": res.stderr.strip()[:500] or "g++ failed", "locations": []}]


def _as_cxx(program: str, found: dict[str, Entry], main: Path) -> str:
    """``program`` with the casts C++ needs for ``void *`` conversions put in; an error for anything
    else C++ refuses.  g++ checks the text with its ``#line`` directives blanked, so that its
    positions are lines of ``program`` itself (:func:`_origin` maps them back for messages)."""
    head = _prototypes(found)
    offset = head.count("\n")
    errors: list[dict] = []
    for _ in range(_MAX_MENDS):
        errors = _gxx(head + _LINE.sub("", program))
        if not errors:
            return program
        mends = [m for m in (_cast_of(e, offset) for e in errors) if m is not None]
        if len(mends) < len(errors):
            break
        program = _apply(program, mends)
    bad = next((e for e in errors if _cast_of(e, offset) is None), errors[0])
    raise _error(bad, program, offset, main)


_LINE = re.compile(r"^#line [^\n]*$", re.M)
_LINE_ARGS = re.compile(r'^#line (\d+) "((?:\\.|[^"\\])*)"$')


def _origin(program: str, line: int) -> tuple[str, int] | None:
    """The user's file and line that physical ``line`` of ``program`` comes from."""
    lines = program.split("\n")
    for i in range(min(line, len(lines)) - 1, -1, -1):
        m = _LINE_ARGS.match(lines[i])
        if m is not None:
            return m.group(2).replace('\\"', '"').replace("\\\\", "\\"), int(m.group(1)) + (line - i - 2)
    return None


def _cast_of(diag: dict, offset: int) -> tuple[int, int, int, int, str] | None:
    """For g++'s ``invalid conversion from 'void*' to 'T'``: the span to cast (start line, start
    byte column, finish line, finish byte column, all in the program text) and T."""
    m = _VOID_CONVERSION.search(diag.get("message", ""))
    locs = diag.get("locations") or []
    if m is None or not locs or "start" not in locs[0] or "finish" not in locs[0]:
        return None
    start, finish = locs[0]["start"], locs[0]["finish"]
    return (start["line"] - offset, start["byte-column"], finish["line"] - offset, finish["byte-column"],
            m.group("aka") or m.group("to"))


def _apply(program: str, mends: list[tuple[int, int, int, int, str]]) -> str:
    lines = program.split("\n")
    for l0, c0, l1, c1, ty in sorted(set(mends), reverse=True):
        if not (1 <= l0 <= len(lines) and 1 <= l1 <= len(lines)):
            continue
        end = lines[l1 - 1].encode("utf-8", "surrogateescape")
        lines[l1 - 1] = (end[:c1] + b")" + end[c1:]).decode("utf-8", "surrogateescape")
        begin = lines[l0 - 1].encode("utf-8", "surrogateescape")
        lines[l0 - 1] = (begin[:c0 - 1] + f"({ty})(".encode() + begin[c0 - 1:]).decode("utf-8", "surrogateescape")
    return "\n".join(lines)


def _error(diag: dict, program: str, offset: int, main: Path) -> TranspileError:
    locs = diag.get("locations") or []
    loc = Loc(main.name, 1, 1)
    if locs and "caret" in locs[0]:
        c = locs[0]["caret"]
        where = _origin(program, int(c.get("line", 1)) - offset)
        if where is not None:
            loc = Loc(where[0], where[1], int(c.get("byte-column", 1)))
    msg = diag.get("message", "error")
    if "use of parameter outside function body" in msg:
        return TranspileError(loc, "--emit program: a variable-length array parameter (`double a[n][m]`) has no C++ "
                                   "form, and nvcc compiles a .cu as C++: declare fixed extents (`double a[N][M]`, as "
                                   "PolyBench does), or keep the program in C and link the drop-in (--emit cuda; "
                                   "the README's link recipe)")
    return TranspileError(loc, f"--emit program: the C program does not compile as C++ (nvcc compiles a .cu as "
                               f"C++): {msg}")
