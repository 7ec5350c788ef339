"""Function names that the headers nvcc includes in every ``.cu`` file declare with C linkage.

A drop-in keeps its C function's name with C linkage (``extern "C" void norm(...)``), so a C
function named like one of these (CUDA's ``norm``, ``sinpi``, ``rnorm3d``, ``clock64``, the
runtime's ``cuda*`` entry points, the C library's ``abs`` ...) cannot be compiled as a drop-in:
nvcc refuses the second C-linkage declaration ("more than one instance of overloaded function
... has "C" linkage").  :func:`check` reports it at the function instead, before anything is
emitted.  Helper functions are not affected: they are ``static __device__`` functions with C++
linkage, which may overload such a name.

:data:`NAMES` is what nvcc 13.0 reported for the identifiers of its own headers
(``names.txt`` beside this module); ``python -m transpile.cuda.names`` probes the nvcc on
the ``PATH`` again and prints the names, one a line, to refresh the list for another CUDA
version.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from transpile import ir
from transpile.diagnostics import TranspileError

NAMES: frozenset[str] = frozenset((Path(__file__).with_name("names.txt")).read_text().split())
"""Names nvcc's implicit includes declare with C linkage (nvcc 13.0)."""

#: Not identifiers a declaration can take (C++ keywords and alternative tokens).
_SKIP = frozenset("""
    if for while return sizeof switch defined _Pragma alignof decltype static_assert typeid noexcept alignas
    throw catch operator new delete asm int char float double long short unsigned signed void bool const
    volatile typedef template typename case else do auto register extern static inline default goto break
    continue struct union enum class namespace using this true false nullptr explicit virtual friend public
    private protected mutable constexpr reinterpret_cast static_cast const_cast dynamic_cast try typeof
    and or not xor bitand bitor compl and_eq or_eq xor_eq not_eq __attribute__ __declspec __asm__ __asm
    __typeof__ __typeof __alignof__ __alignof __extension__ __restrict__ __restrict __inline__ __inline
    __volatile__ __const__ __signed__ __builtin_offsetof __builtin_va_arg _Static_assert _Alignof _Alignas
    _Generic _Noreturn __int128 __label__ __real__ __imag__ __thread __auto_type
""".split())


def check(module: ir.Module) -> None:
    """Raise :class:`TranspileError` at the first kernel whose drop-in name nvcc would refuse."""
    for k in module.kernels:
        if k.name in NAMES:
            raise TranspileError(k.loc, f"'{k.name}' is also the name of a function that the CUDA headers "
                                        "declare with C linkage, so its drop-in ('extern \"C\"', same name) would "
                                        "not compile: rename the function")


def probe(nvcc: str = "nvcc", include: Path | None = None, names: set[str] | None = None) -> set[str]:
    """Which of ``names`` (default: every identifier called in the CUDA headers under ``include``,
    default nvcc's own) nvcc refuses as the name of an ``extern "C"`` function: one compile of a
    file declaring each of them."""
    if names is not None:
        return _refused(nvcc, sorted(names))
    with tempfile.TemporaryDirectory() as tmp:
        if include is None:  # where nvcc's own headers are, as its dry run says
            (Path(tmp) / "e.cu").write_text("")
            dry = subprocess.run([nvcc, "--dryrun", "-c", str(Path(tmp) / "e.cu")], capture_output=True, text=True)
            m = re.search(r'INCLUDES="-I([^"]+)"', dry.stdout + dry.stderr)
            if m is None:
                raise RuntimeError(f"{nvcc} --dryrun names no include directory")
            include = Path(m.group(1))
    found: set[str] = set()
    for header in [*include.glob("*.h"), *include.glob("crt/*.h")]:
        text = header.read_text(errors="ignore")
        found |= {m.group(1) for m in re.finditer(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(", text)}
    return _refused(nvcc, sorted(found - _SKIP))


def _refused(nvcc: str, names: list[str]) -> set[str]:
    body = "".join(f"#ifndef {n}\nextern \"C\" void {n}(void *, void *, void *, void *, void *) {{}}\n#endif\n"
                   for n in names)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.cu"
        src.write_text(body)
        proc = subprocess.run([nvcc, "-arch=sm_90", "-c", "-o", str(Path(tmp) / "probe.o"), str(src),
                               "-Xcudafe", "--error_limit=100000"], capture_output=True, text=True)
    return set(re.findall(r'overloaded function "([A-Za-z0-9_]+)" has "C" linkage', proc.stderr))


if __name__ == "__main__":
    sys.stdout.write("".join(f"{n}\n" for n in sorted(probe())))
