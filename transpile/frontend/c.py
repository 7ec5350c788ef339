"""C front end: PolyBench-style C loop nests to the typed loop-nest IR.

``parse_file(path)`` / ``parse_source(text, filename)`` preprocess with
``gcc -E -nostdinc`` against our own minimal libc headers
(``transpile/frontend/include``) plus the caller's ``-I``/``-D``, parse with
pycparser, pick the kernels and lower them to an :class:`ir.Module`.  Every
failure is a :class:`TranspileError` located in the original file (line
markers give the line; :mod:`transpile.frontend.srcmap` realigns columns that
macro expansion moved).

Kernel selection: ``function=NAME`` picks that function; otherwise every
function of the file containing ``#pragma scop``; otherwise every function
containing a ``for`` loop except ``main``.  The kernel body is the *whole*
function body: scop pragmas only select functions and are dropped, as are
all other pragmas.  Functions not selected (main, init, print, timing, I/O)
are never looked at, except helpers called from a kernel, which become
``ir.Func`` (scalar parameters, scalar or void result, no recursion).

Accepted: scalar parameters of integer/float types (typedefs resolved);
array parameters with constant or C99 variable extents (``double A[n][m+1]``);
``double A[][N]`` and ``double (*A)[N]``, whose first extent is derived; flat
pointers ``double *A`` indexed ``A[i*n + j]``, whose one extent is derived
from the index range over the loop bounds (see
:mod:`transpile.ir.affine`; scalar parameters used there are assumed to
be >= 0); local scalars anywhere (shadowing declarations are renamed
``x`` -> ``x_1``); local arrays (``double z[n];``, extents over scalar
parameters) at the top level of a kernel body, as ``ir.Alloc``; ``const``
scalar globals and enumerators with constant values (folded); ``for`` loops
normalised as in :mod:`transpile.frontend.loops`; ``if``/``else``; assignments
and compound assignments, including chains ``a = b = e;`` as statements
(lowered ``b = e; a = b;``); ``x++``-style statements; every C arithmetic,
bitwise, relational and logical operator, ``?:``, casts to scalar types,
``sizeof`` (folded), literals with C's types, math-library calls
(``ir.MATH_FUNCS``) and calls to helpers.

``goto``, labels, ``break``, ``continue``, ``switch`` and early ``return`` are
structured into ifs first (:mod:`transpile.frontend.structure`).

Rejected with a located error: ``while``, ``do``, backward or inward jumps, comma expressions, assignments and ``++`` used
inside expressions, pointers other than flat array parameters (``*p``,
``&x``, ``p + 1``, ``p++``, ``double **``), structs and unions, strings,
function pointers, variadic functions, local arrays other than at a kernel's
top level, statics, non-const globals, ``_Bool`` and ``long double``, calls
to functions that have no body here and are not math functions.  Call
statements (of void helpers or pure functions) have no effect and are
dropped with the warning ``dropped-call``.

Loop variables declared outside their loop (``int i; for (i = 0; ...)``)
are scoped to the loop in the IR; their ``Decl`` is emitted only if the
variable is also used as an ordinary scalar, and where it is read after the
loop (before being reassigned) it is given C's exit value there
(:func:`transpile.frontend.loops.exit_values`).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from pycparser import c_ast, c_parser

from transpile import ir
from transpile.cuda import names as cuda_names
from transpile.diagnostics import Loc, TranspileError, line_directive
from transpile.frontend.lower import Unit, c_nodes, lower_function
from transpile.frontend.srcmap import SourceMap

__all__ = ["INCLUDE_DIR", "parse_file", "parse_source"]

#: Our fake libc headers, searched after the caller's include directories.
INCLUDE_DIR = Path(__file__).resolve().parent / "include"
_PRELUDE = INCLUDE_DIR / "_transpile_prelude.h"
_CPP = "gcc"
_DEFINE = re.compile(r"[A-Za-z_]\w*(\([\w\s,.]*\))?(=.*)?", re.DOTALL)
_GCC_ERROR = re.compile(r"^(.+?):(\d+):(\d+): (?:fatal )?error: (.*)$")
_PARSE_ERROR = re.compile(r"^(.*?):(\d+)(?::(\d+))?: (.*)$", re.DOTALL)


def parse_file(path: str, *, function: str | None = None, include_dirs: Sequence[str] = (),
               defines: Sequence[str] = ()) -> ir.Module:
    """Parse the C file ``path`` and lower its kernels (see the module docstring)."""
    path = os.fspath(path)
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise TranspileError(Loc(path, 1, 1), f"cannot read file: {e.strerror or e}") from None
    text = _decode(data, path)
    return _translate(text, path, True, function, include_dirs, defines)


def parse_source(text: str, filename: str, *, function: str | None = None,
                 include_dirs: Sequence[str] = (), defines: Sequence[str] = ()) -> ir.Module:
    """Like :func:`parse_file` for C source ``text``; ``filename`` names it in every ``Loc``.

    ``#include "x.h"`` is searched for in ``filename``'s directory.
    """
    if "\0" in text:
        raise _binary_error(text.encode("utf-8", "replace"), text.index("\0"), filename)
    return _translate(text, filename, False, function, include_dirs, defines)


def _decode(data: bytes, path: str) -> str:
    if b"\0" in data:
        raise _binary_error(data, data.index(b"\0"), path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    # Other bytes (Latin-1, ...) in comments and string literals, as gcc takes them; elsewhere an error.
    text = data.decode("latin-1")
    inside = [m.span() for m in COMMENT_OR_STRING.finditer(text)]
    stray = next((i for i, ch in enumerate(text) if ord(ch) > 127 and not any(a <= i < b for a, b in inside)), None)
    if stray is None:
        return text
    line, col = _line_col(data, stray)
    raise TranspileError(Loc(path, line, col), "file is not valid UTF-8 text: not a C source file "
                                                "(other encodings only in comments and string literals)", source=text)


#: A comment (an unclosed one runs to the end) or a string or character literal.
COMMENT_OR_STRING = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)


def _line_col(data: bytes, pos: int) -> tuple[int, int]:
    return data.count(b"\n", 0, pos) + 1, pos - (data.rfind(b"\n", 0, pos) + 1) + 1


def _binary_error(data: bytes, pos: int, path: str) -> TranspileError:
    line, col = _line_col(data, pos)
    return TranspileError(Loc(path, line, col), "file contains a NUL byte: binary data is not C source")


def _translate(text: str, filename: str, on_disk: bool, function: str | None,
               include_dirs: Sequence[str], defines: Sequence[str]) -> ir.Module:
    srcmap = SourceMap({filename: text})
    try:
        if not text.strip():
            raise TranspileError(Loc(filename, 1, 1), "file is empty: there is no function to transpile")
        pp = _preprocess(text, filename, on_disk, include_dirs, defines, srcmap)
        srcmap.add_preprocessed(pp)
        try:
            ast = _parse(pp, filename, srcmap)
        except TranspileError as e:
            raise _sharper(e, text, filename, on_disk, include_dirs, defines, srcmap) from None
        return _lower(ast, filename, srcmap, function)
    except TranspileError as e:
        if e.source is None and e.loc is not None:
            e.source = srcmap.text(e.loc.file)
        raise
    except RecursionError:
        raise TranspileError(Loc(filename, 1, 1), "input is too deeply nested", source=text) from None
    except Exception as e:  # never a traceback for any input
        raise TranspileError(Loc(filename, 1, 1), "internal error in the C front end "
                                                  f"({type(e).__name__}: {e}); please report it") from e


def _preprocess(text: str, filename: str, on_disk: bool, include_dirs: Sequence[str],
                defines: Sequence[str], srcmap: SourceMap) -> str:
    args, stdin = _gcc(["-E"], text, filename, on_disk, include_dirs, defines)
    try:
        res = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=120,
                             errors="replace")
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TranspileError(Loc(filename, 1, 1), f"cannot run the C preprocessor '{_CPP}': {e}") from None
    if res.returncode != 0:
        raise _cpp_error(res.stderr, filename, srcmap)
    return res.stdout


def _sharper(e: TranspileError, text: str, filename: str, on_disk: bool, include_dirs: Sequence[str],
             defines: Sequence[str], srcmap: SourceMap) -> TranspileError:
    """pycparser's error, or gcc's where pycparser says little: a message with no detail
    (``Invalid expression``, nothing) or no column. gcc parses the same file (the preprocessor's
    flags, ``-fsyntax-only``) and its first error names the token and the column."""
    if e.loc is not None and e.loc.col is not None and not e.msg.endswith(("syntax error: ", "Invalid expression")):
        return e
    args, stdin = _gcc(["-fsyntax-only", "-w"], text, filename, on_disk, include_dirs, defines)
    try:
        res = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=120, errors="replace",
                             env={**os.environ, "LC_ALL": "C"})
    except (OSError, subprocess.TimeoutExpired):
        return e
    if res.returncode == 0:
        return e
    better = _cpp_error(res.stderr, filename, srcmap)  # gcc's first located error line
    if better.msg.startswith("preprocessing failed"):  # none: _cpp_error's fallback
        return e
    return TranspileError(better.loc, f"syntax error: {better.msg}")


def _gcc(mode: list[str], text: str, filename: str, on_disk: bool, include_dirs: Sequence[str],
         defines: Sequence[str]) -> tuple[list[str], str | None]:
    """gcc's command line (``mode``: ``-E``, ``-fsyntax-only``) for the file, and its stdin."""
    args = [_CPP, *mode, "-x", "c", "-undef", "-nostdinc", "-fdiagnostics-color=never",
            "-fdiagnostics-column-unit=byte"]
    for d in defines:
        if not _DEFINE.fullmatch(d):
            raise TranspileError(Loc(filename, 1, 1), f"invalid define '{d}': expected NAME or NAME=VALUE")
        args.append("-D" + d)
    for inc in include_dirs:
        args += ["-I", os.fspath(inc)]
    args += ["-I", str(INCLUDE_DIR), "-include", str(_PRELUDE)]
    if on_disk:
        args.append(filename)
        stdin = None
    else:
        args += ["-iquote", os.path.dirname(filename) or ".", "-"]
        stdin = f"{line_directive(1, filename)}\n{text}"
    return args, stdin


#: The C standard library's and common POSIX headers: one missing here is not the user's to add with -I.
_SYSTEM_HEADERS = frozenset({
    "assert.h", "complex.h", "ctype.h", "errno.h", "fenv.h", "float.h", "inttypes.h", "iso646.h", "limits.h",
    "locale.h", "math.h", "setjmp.h", "signal.h", "stdalign.h", "stdarg.h", "stdatomic.h", "stdbool.h",
    "stddef.h", "stdint.h", "stdio.h", "stdlib.h", "stdnoreturn.h", "string.h", "tgmath.h", "threads.h",
    "time.h", "uchar.h", "wchar.h", "wctype.h", "pthread.h", "fcntl.h", "sys/mman.h", "sys/stat.h",
    "immintrin.h", "xmmintrin.h", "emmintrin.h", "arm_neon.h"})


def _cpp_error(stderr: str, filename: str, srcmap: SourceMap) -> TranspileError:
    for line in stderr.splitlines():
        m = _GCC_ERROR.match(line)
        if m is None:
            continue
        file, lineno, col, msg = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        src = srcmap.text(file)
        if src is not None:  # gcc counts bytes; Loc counts characters
            lines = src.split("\n")
            if 1 <= lineno <= len(lines):
                col = len(lines[lineno - 1].encode("utf-8")[: col - 1].decode("utf-8", "replace")) + 1
        missing = re.match(r"(.+): No such file or directory$", msg)
        if missing is not None and missing.group(1) in _SYSTEM_HEADERS:
            have = sorted(str(h.relative_to(INCLUDE_DIR)) for h in INCLUDE_DIR.rglob("*.h")
                          if not h.name.startswith("_"))
            msg = (f"the system header <{missing.group(1)}> is not supported (what it declares cannot be "
                   f"offloaded); the supported ones: {', '.join(f'<{h}>' for h in have)}")
        elif missing is not None:
            msg = (f"include file '{missing.group(1)}' not found: add its directory to the include "
                   "path (-I)")
        return TranspileError(Loc(file, lineno, col), msg)
    first = stderr.strip().splitlines()[0] if stderr.strip() else "unknown error"
    return TranspileError(Loc(filename, 1, 1), f"preprocessing failed: {first}")


def _parse(pp: str, filename: str, srcmap: SourceMap) -> c_ast.FileAST:
    parser = c_parser.CParser()
    try:
        return parser.parse(pp, filename)
    except RecursionError:
        raise
    except Exception as e:  # ParseError, and ValueError for some malformed literals
        msg = str(e)
        m = _PARSE_ERROR.match(msg)
        lex = parser.clex
        file = getattr(lex, "filename", None) or filename
        line = getattr(lex, "_lineno", 1) or 1
        col: int | None = None
        if m is not None:
            file, line, msg = m.group(1), int(m.group(2)), m.group(4)
            col = int(m.group(3)) if m.group(3) else None
        elif msg.startswith(f"{file}: "):
            msg = msg[len(file) + 2:]
        if msg.startswith("before: "):
            msg = f"syntax error before '{msg[len('before: '):]}'"
        elif msg == "At end of input":
            msg = "syntax error at end of input"
        else:
            msg = f"syntax error: {msg}"
        raise TranspileError(srcmap.loc(file, line, col), msg) from None


def _contains(node: c_ast.Node, pred: type[c_ast.Node], scop: bool = False) -> bool:
    return any(isinstance(n, pred) and (not scop or n.string.strip().split()[:1] == ["scop"]) for n in c_nodes(node))


def _vector_params(fdef: c_ast.FuncDef) -> set[str]:
    """Parameters of ``fdef`` that point at scalars: ``double *p``, ``double p[]``, ``double p[n]``."""
    out = set()
    params = fdef.decl.type.args.params if fdef.decl.type.args is not None else []
    for p in params:
        t = getattr(p, "type", None)
        if isinstance(t, (c_ast.PtrDecl, c_ast.ArrayDecl)) and isinstance(t.type, c_ast.TypeDecl) and p.name:
            out.add(p.name)
    return out


def _dereferences_as_subscripts(fdef: c_ast.FuncDef) -> None:
    """Rewrite ``*p`` as ``p[0]`` and ``*(p + e)``, ``*(e + p)`` as ``p[e]`` in ``fdef``'s body, for its
    parameters that point at scalars (the common C idiom for a scalar result, ``*out = s``); the
    subscript form is then lowered, checked and given an extent as if it had been written so.
    Shadowed names are left alone (their ``*`` is refused as before), and so is any other ``*``."""
    vectors = _vector_params(fdef)

    def target(node: c_ast.Node, hidden: set[str]) -> c_ast.Node | None:
        if not (isinstance(node, c_ast.UnaryOp) and node.op == "*"):
            return None
        e = node.expr
        if isinstance(e, c_ast.ID) and e.name in vectors - hidden:
            return c_ast.ArrayRef(c_ast.ID(e.name, coord=e.coord), c_ast.Constant("int", "0", coord=node.coord),
                                  coord=node.coord)
        if isinstance(e, c_ast.BinaryOp) and e.op == "+":
            for ptr, off in ((e.left, e.right), (e.right, e.left)):
                if isinstance(ptr, c_ast.ID) and ptr.name in vectors - hidden:
                    return c_ast.ArrayRef(c_ast.ID(ptr.name, coord=ptr.coord), off, coord=node.coord)
        return None

    def visit(node: c_ast.Node, hidden: set[str]) -> None:
        if isinstance(node, c_ast.Compound):
            hidden = set(hidden)
        for field in node.__slots__:
            if field in ("coord", "__weakref__"):
                continue
            value = getattr(node, field, None)
            if isinstance(value, list):
                for i, child in enumerate(value):
                    if isinstance(child, c_ast.Node):
                        if (new := target(child, hidden)) is not None:
                            value[i] = child = new
                        visit(child, hidden)
            elif isinstance(value, c_ast.Node):
                if (new := target(value, hidden)) is not None:
                    setattr(node, field, new)
                    value = new
                visit(value, hidden)
        if isinstance(node, c_ast.Decl) and node.name:  # a local of a parameter's name hides it from here on
            hidden.add(node.name)

    visit(fdef.body, set())


def _lower(ast: c_ast.FileAST, filename: str, srcmap: SourceMap, function: str | None) -> ir.Module:
    unit = Unit(ast, srcmap)
    defs = [ext for ext in ast.ext if isinstance(ext, c_ast.FuncDef)]
    where = Loc(filename, 1, 1)
    if function is not None:
        chosen = [d for d in defs if d.decl.name == function][:1]
        if not chosen:
            names = list(dict.fromkeys(d.decl.name for d in defs if unit.loc(d).file == filename))
            cands = ", ".join(f"'{n}'" for n in names) if names else "none"
            raise TranspileError(where, f"function '{function}' not found: it has no definition in this "
                                        f"file (functions defined here: {cands})")
    else:
        own = [d for d in defs if unit.loc(d).file == filename and d.body is not None]
        chosen = [d for d in own if _contains(d.body, c_ast.Pragma, scop=True)]
        if not chosen:
            chosen = [d for d in own if d.decl.name != "main" and _contains(d.body, c_ast.For)]
        if not chosen:
            loops = [(d, n) for d in own if d.decl.name != "main" for n in c_nodes(d.body)
                     if isinstance(n, (c_ast.While, c_ast.DoWhile))]
            if loops:  # the function the user meant, most likely: say why its loop does not count
                d, n = loops[0]
                kind = "while" if isinstance(n, c_ast.While) else "do-while"
                raise TranspileError(unit.loc(n), f"no kernel found: '{d.decl.name}' has a {kind} loop, which is not "
                                                  "supported (no provable trip count): rewrite it as a for loop")
            raise TranspileError(where, "no kernel found: no function contains '#pragma scop' or a for "
                                        "loop (select one with --function NAME)")
    kernels = []
    for d in chosen:
        _dereferences_as_subscripts(d)
        unit.call_stack.append(d.decl.name)
        try:
            k = lower_function(unit, d, "kernel")
        finally:
            unit.call_stack.pop()
        assert isinstance(k, ir.Kernel), k
        kernels.append(k)
    module = ir.Module(tuple(unit.helpers.values()), tuple(kernels), loc=where)
    cuda_names.check(module)  # before any pass runs (the emitter checks again, for IR inputs)
    return module
