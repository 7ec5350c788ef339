"""The candidate's drop-in signature as the compiler reads it (stage (a)).

Reading ``extern "C" void NAME(...)`` from the text cannot be right on files
people write: a ``#define CK(x) do { ... } while (0)``, an ``#if defined(...)``
block, templates, namespaces or a comment that quotes the prototype come
before the definition, and a text heuristic takes one of them for it.  So the
decision is the compiler's:

1. A wrapper translation unit includes the candidate and then checks, with
   ``static_assert`` on ``decltype(&::NAME)``, that the function takes the
   reference's parameters: an array as a pointer to its element type (any
   ``const``/``volatile``, a pointer to a row of it, ``double (*)[N]``, or
   ``void *``), a scalar as an arithmetic type of the same width and kind
   (integer or floating), and, for a C function that returns a value, that the
   drop-in returns such a type (:func:`wrapper`).
2. ``nvcc -c`` compiles it for the host (device code as PTX only, no ``ptxas``
   code generation), and ``nm`` reads the object's defined symbols: the
   unmangled ``NAME`` must be there (``extern "C"``); a mangled one that
   demangles to ``NAME(...)`` is a C++ function that cannot replace the C one;
   neither is "defines no function" (a prototype alone is not a definition).
   ``NAME_device`` is reported when it is defined.

A failed assertion or an undeclared ``NAME`` (errors in the wrapper) is a
signature failure carrying the compiler's message; an error inside the
candidate's own text is not decided here (``None``): stage (b)'s compile
reports it.  Results are cached by the hash of the wrapper, the candidate and
the files it includes from beside it, and the compiler's path.

The wrapper is compiled for sm_90 (``-arch=sm_90 -Xptxas -v``), the code stage (b) compiles the
candidate to: the wrapper adds host code only, so its device code and ptxas's report are the
candidate's, and a successful compile is stored as stage (b)'s (:func:`sm90_record`).  One nvcc
front end and one cicc run per candidate instead of two (about 1.6 of gemm's 2.5 s here).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from transpile.fsutil import write_atomic
from transpile.toolchain import nvcc
from transpile.verify.signature import KernelSig

_CXX = {
    "i8": "signed char", "i16": "short", "i32": "int", "i64": "long long", "u8": "unsigned char",
    "u16": "unsigned short", "u32": "unsigned int", "u64": "unsigned long long", "f32": "float", "f64": "double",
}
MARK = "SIGCHECK: "
"""Starts every assertion message, so that the messages are told from other errors."""
TIMEOUT = 300.0


@dataclass(frozen=True, slots=True)
class CompiledSignature:
    """What the compiler said of the candidate's drop-in.

    ``problems`` is empty when ``NAME`` is an ``extern "C"`` definition with compatible parameters;
    ``symbols`` the unmangled functions the object defines; ``output`` the compiler's output."""

    problems: tuple[str, ...]
    symbols: frozenset[str]
    output: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems


def _cpp_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


_PRELUDE = """\
#include <cstddef>
#include <tuple>
#include <type_traits>
namespace transpile_sig_check {
template <class transpile_sig_p> struct transpile_sig_pointee {
  static constexpr bool is_ptr = false;
  using type = void;
};
template <class transpile_sig_t> struct transpile_sig_pointee<transpile_sig_t *> {
  static constexpr bool is_ptr = true;
  using type = std::remove_cv_t<std::remove_all_extents_t<transpile_sig_t>>;
};
template <class transpile_sig_e, class transpile_sig_p> constexpr bool transpile_sig_array_ok =
    transpile_sig_pointee<transpile_sig_p>::is_ptr &&
    (std::is_same_v<typename transpile_sig_pointee<transpile_sig_p>::type, transpile_sig_e> ||
     (std::is_integral_v<typename transpile_sig_pointee<transpile_sig_p>::type> &&
      !std::is_same_v<typename transpile_sig_pointee<transpile_sig_p>::type, bool> &&
      std::is_integral_v<transpile_sig_e> &&
      sizeof(std::conditional_t<std::is_integral_v<typename transpile_sig_pointee<transpile_sig_p>::type>,
                                typename transpile_sig_pointee<transpile_sig_p>::type, char>) ==
          sizeof(transpile_sig_e) &&
      std::is_signed_v<typename transpile_sig_pointee<transpile_sig_p>::type> ==
          std::is_signed_v<transpile_sig_e>) ||
     std::is_void_v<typename transpile_sig_pointee<transpile_sig_p>::type>);
template <class transpile_sig_e, class transpile_sig_p> constexpr bool transpile_sig_scalar_ok =
    std::is_arithmetic_v<transpile_sig_p> && !std::is_same_v<transpile_sig_p, bool> &&
    sizeof(std::conditional_t<std::is_arithmetic_v<transpile_sig_p>, transpile_sig_p, char>) ==
        sizeof(transpile_sig_e) &&
    std::is_floating_point_v<transpile_sig_p> == std::is_floating_point_v<transpile_sig_e>;
template <class transpile_sig_f> struct transpile_sig_fn {
  static constexpr int n = -1;
  using ret = void;
  template <std::size_t transpile_sig_i> using arg = void;
};
template <class transpile_sig_r, class... transpile_sig_ps>
struct transpile_sig_fn<transpile_sig_r (*)(transpile_sig_ps...)> {
  static constexpr int n = sizeof...(transpile_sig_ps);
  using ret = transpile_sig_r;
  template <std::size_t transpile_sig_i> using arg = std::tuple_element_t<
      (transpile_sig_i < sizeof...(transpile_sig_ps) ? transpile_sig_i : sizeof...(transpile_sig_ps)),
      std::tuple<transpile_sig_ps..., void>>;
};
template <class transpile_sig_r, class... transpile_sig_ps>
struct transpile_sig_fn<transpile_sig_r (*)(transpile_sig_ps...) noexcept>
    : transpile_sig_fn<transpile_sig_r (*)(transpile_sig_ps...)> {};
"""
"""The checks' templates; every name is prefixed so that the candidate's macros cannot hit them."""


def wrapper(cu: Path, sig: KernelSig) -> str:
    """The translation unit that includes ``cu`` and asserts its drop-in's parameters match ``sig``."""
    args = [a for a in sig.args if a.name != sig.ret]
    n = len(args)
    f = "transpile_sig_f"
    lines = [
        f"#include {_cpp_string(str(cu.resolve()))}",
        _PRELUDE.rstrip("\n"),
        f"using {f} = transpile_sig_fn<decltype(&::{sig.name})>;",
        f'static_assert({f}::n >= 0, "{MARK}{sig.name} is not a plain function (overloaded, variadic or a '
        'template)");',
        f'static_assert({f}::n < 0 || {f}::n == {n}, "{MARK}{sig.name} does not take {n} parameter(s), as the '
        'reference does");',
    ]
    for i, a in enumerate(args):
        want = _CXX[a.ty.name]
        if a.is_array:
            lines.append(f"static_assert({f}::n != {n} || transpile_sig_array_ok<{want}, {f}::arg<{i}>>, "
                         f'"{MARK}parameter {i + 1} (\'{a.name}\') must be a pointer to {want} (the reference\'s '
                         f'{want} array)");')
        else:
            lines.append(f"static_assert({f}::n != {n} || transpile_sig_scalar_ok<{want}, {f}::arg<{i}>>, "
                         f'"{MARK}parameter {i + 1} (\'{a.name}\') must be a {want} (the reference\'s scalar: '
                         'an arithmetic type of its width and kind)");')
    slot = sig.ret_arg
    if slot is not None:
        want = _CXX[slot.ty.name]
        lines.append(f"static_assert(transpile_sig_scalar_ok<{want}, {f}::ret>, "
                     f'"{MARK}{sig.name} must return {want} (the C function\'s result)");')
    lines.append("}  // namespace transpile_sig_check")
    return "\n".join(lines) + "\n"


def check(cu: Path, sig: KernelSig) -> CompiledSignature | None:
    """The compiler's reading of ``cu``'s drop-in against ``sig``; None when it cannot decide (no nvcc,
    no ``nm``, or the candidate itself does not compile: stage (b) reports that)."""
    exe, nm = nvcc(), shutil.which("nm")
    if exe is None or nm is None:
        return None
    from transpile.sim.build import local_includes
    from transpile.verify.reference import cache_dir

    text = cu.read_text(errors="replace")
    src = wrapper(cu, sig)
    key = hashlib.sha256("\0".join([src, text, local_includes(cu, text), exe, "v1"]).encode()).hexdigest()[:20]
    out = cache_dir("signature")
    record = out / f"{cu.stem}-{key}.json"
    if record.exists():
        try:
            data = json.loads(record.read_text())
            return _decode(data)
        except (OSError, ValueError, KeyError):
            pass
    result = _compile(exe, nm, out, f"{cu.stem}-{key}", src, cu, sig)
    if result is _TIMED_OUT:
        return None
    data = {"undecided": True} if result is None else {
        "problems": list(result.problems), "symbols": sorted(result.symbols), "output": result.output}
    tmp = record.with_name(f"{record.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, record)
    return result  # type: ignore[return-value]


def sm90_record(cu: Path, text: bytes, exe: str) -> tuple[Path, str]:
    """Stage (b)'s cached sm_90 compile of ``cu`` (``text``, its bytes): ``(log, key)``, by content
    (the file, the files it includes with quotes from beside it, and the compiler, so the same kernel
    written to another directory is not compiled again).  The log (ptxas's report) is written once
    the compile succeeded, by stage (b) or by :func:`check`; it is the record."""
    from transpile.sim.build import local_includes
    from transpile.verify.reference import cache_dir

    local = local_includes(cu, text.decode(errors="replace")).encode()
    key = hashlib.sha256(text + b"\0" + local + b"\0" + exe.encode()).hexdigest()[:20]
    return cache_dir("nvcc") / f"{cu.stem}-{key}.log", key


def _decode(data: dict[str, object]) -> CompiledSignature | None:
    if data.get("undecided"):
        return None
    return CompiledSignature(tuple(data["problems"]), frozenset(data["symbols"]),  # type: ignore[arg-type]
                             str(data.get("output", "")))


_TIMED_OUT = CompiledSignature(("timed out",), frozenset())
"""What :func:`_compile` returns when nvcc did not finish (not cached)."""


def _compile(exe: str, nm: str, out: Path, stem: str, src: str, cu: Path,
             sig: KernelSig) -> CompiledSignature | None:
    wrap = out / f"{stem}.{os.getpid()}.cu"
    obj = out / f"{stem}.{os.getpid()}.o"
    wrap.write_text(src)
    try:
        try:
            proc = subprocess.run([exe, "-c", "-std=c++17", "-arch=sm_90", "-Xptxas", "-v",
                                   "-o", str(obj), str(wrap)], capture_output=True, text=True, timeout=TIMEOUT)
            output = (proc.stdout + proc.stderr).replace(str(wrap), "<signature check>")
            if proc.returncode != 0:
                decided = _failed(output, cu, sig)
                if decided is not None:
                    return decided
                # Not the wrapper's assertions: maybe only the device code generation (ptxas) failed,
                # which is stage (b)'s to report; the host side as PTX alone decides the signature.
                proc = subprocess.run([exe, "-c", "-std=c++17", "-gencode", "arch=compute_90,code=compute_90",
                                       "-o", str(obj), str(wrap)], capture_output=True, text=True, timeout=TIMEOUT)
                output = (proc.stdout + proc.stderr).replace(str(wrap), "<signature check>")
                if proc.returncode != 0:
                    return _failed(output, cu, sig)
            else:
                log, _ = sm90_record(cu, cu.read_bytes(), exe)
                if not log.exists():  # stage (b)'s result: the same device code, compiled
                    write_atomic(log, proc.stdout + proc.stderr)
        except subprocess.TimeoutExpired:
            return _TIMED_OUT
        syms = subprocess.run([nm, "--defined-only", "-P", str(obj)], capture_output=True, text=True)
        defined = {parts[0] for line in syms.stdout.splitlines()
                   if len(parts := line.split()) >= 2 and parts[1] in ("T", "W", "t")}
        plain = frozenset(n for n in defined if not n.startswith("_Z"))
        problems: tuple[str, ...] = ()
        if sig.name not in plain:
            mangled = [n for n in defined if n.startswith("_Z") and _demangled_name(n) == sig.name]
            if mangled:
                problems = (f"'{sig.name}' is not extern \"C\": its C++-mangled name cannot replace the C function",)
            else:
                problems = (f"{cu.name} declares '{sig.name}' but defines no function '{sig.name}' "
                            "(the drop-in extern \"C\" host function)",)
        return CompiledSignature(problems, plain, output)
    finally:
        wrap.unlink(missing_ok=True)
        obj.unlink(missing_ok=True)


def _demangled_name(symbol: str) -> str | None:
    """The unqualified name of a mangled global function symbol (``_Z<len><name>...``)."""
    m = re.match(r"_Z(\d+)", symbol)
    return symbol[m.end():m.end() + int(m.group(1))] if m else None


_ASSERT = re.compile(r'static assertion failed(?: with)?:?\s*"?' + MARK + r'(.*?)"?\s*$')


def _failed(output: str, cu: Path, sig: KernelSig) -> CompiledSignature | None:
    """A failed wrapper compile: the assertion messages, an undeclared ``NAME``, or (errors in the
    candidate itself) undecided."""
    name = re.escape(sig.name)
    undeclared = rf'(has no "{name}"|\b{name}\b.*(not been declared|not declared|undeclared|is undefined))'
    if any(line.startswith("<signature check>") and re.search(undeclared, line) for line in output.splitlines()):
        return CompiledSignature((f"{cu.name} defines no function '{sig.name}' (the drop-in extern \"C\" "
                                  "host function)",), frozenset(), output)
    errors = [line for line in output.splitlines() if re.search(r"(^|: )(fatal )?error\b", line)]
    messages = [m.group(1) for line in errors if (m := _ASSERT.search(line))]
    if messages and len(messages) == len(errors):
        where = _where(cu, sig.name)
        return CompiledSignature(tuple(f"{where}{m}" for m in dict.fromkeys(messages)), frozenset(), output)
    return None  # the candidate does not compile, or collides with the check: stage (b) and the text decide


def _where(cu: Path, name: str) -> str:
    """``file:line:col: `` of the definition of ``name`` as the text shows it (diagnostics only)."""
    from transpile.verify.signature import definition_offset

    try:
        text = cu.read_text(errors="replace")
    except OSError:
        return ""
    at = definition_offset(text, name)
    if at is None:
        return ""
    line = text.count("\n", 0, at) + 1
    col = at - (text.rfind("\n", 0, at) + 1) + 1
    return f"{cu.name}:{line}:{col}: "
