"""Compile a .cu file into a shared library that runs its kernels on the CPU.

``build(path, out_dir)`` checks the file for features the simulator does not
model (:class:`SimUnsupported`), rewrites launches and dynamic shared memory
(:mod:`transpile.sim.rewrite`), and compiles the result with

    g++ -std=c++17 -O1 -shared -fPIC -pthread -I<sim include> -include cuda_sim.h -x c++

(``-include`` because nvcc includes ``cuda_runtime.h`` implicitly).  The
library's file name carries a hash of everything that went into it, so a
second build of the same text is free and concurrent builds never collide.

The simulator's large host-side functions (``SIM_RT`` in ``cuda_sim.h``) are
compiled once per header text and flag set into an object in ``out_dir``
(:func:`runtime_object`, ``-DCUDA_SIM_RUNTIME_OBJECT``) and linked into each
library, whose own translation unit (``-DCUDA_SIM_RUNTIME_EXTERN``) sees the
headers with those bodies cut to declarations (:func:`declarations`): 1.1-1.4 s
a build instead of 2.2 s (PolyBench kernels with the verifier's audit header,
2026-12-05; docs/decisions.md).  Each library still links a simulator of its
own.  Should the object or the split build fail, the file is built alone as
before, so the diagnostics a user sees are always that build's.
NOTE: a precompiled ``cuda_sim.h`` took one build alone from 2.05 to 1.57 s
(gemm), but the 31 ``test_mma`` cases that verify kernels ran in 127 s with it
against 83 s without (``-n 2``, fresh cache, 2026-12-04): not used.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from transpile.diagnostics import Loc
from transpile.sim.errors import SimBuildError, SimUnsupported
from transpile.sim.rewrite import kernel_names, rewrite, unsupported

INCLUDE_DIR = Path(__file__).resolve().parent / "include"
"""Put this first on the include path: it holds cuda_sim.h and the stand-in
``cuda_runtime.h``, ``cuda_runtime_api.h`` and ``device_launch_parameters.h``."""

BASE_FLAGS: tuple[str, ...] = (
    "-std=c++17", "-O1", "-shared", "-fPIC", "-pthread",
    "-fno-strict-aliasing",  # CUDA code type-puns freely (float4 loads of float arrays)
    "-fstack-clash-protection",  # big kernel locals hit the fiber's guard page, not a neighbour's stack
    "-Wl,-Bsymbolic",  # the library's own assert handler and globals win inside it
    # Without it, the static locals of template and inline functions (a template kernel's
    # __shared__ arrays and their registration guards) are STB_GNU_UNIQUE: one object in the whole
    # process, so a second library of the same kernel shared the first one's and never registered
    # them for poisoning; and such a library can never be unloaded.
    "-fno-gnu-unique",
)

# Names the library exports that are not the .cu file's own extern "C" functions.
_RUNTIME_SYMBOLS = frozenset({"_init", "_fini", "_edata", "_end", "__bss_start", "__assert_fail"})


@dataclass(frozen=True, slots=True)
class SimBuild:
    """A compiled simulation library.

    ``symbols`` are the unmangled (``extern "C"``) functions it exports, the
    simulator's own ``__sim_*`` API excluded; ``kernels`` are the
    ``__global__`` names found in the source.
    """

    source: Path
    rewritten: Path
    library: Path
    symbols: tuple[str, ...]
    kernels: tuple[str, ...]


@cache
def _header_text() -> str:
    return "".join(p.read_text() for p in sorted(INCLUDE_DIR.glob("*.h")))


@cache
def known_api() -> frozenset[str]:
    """Every ``cuda*`` identifier the simulator header defines."""
    return frozenset(re.findall(r"\b(cuda[A-Z]\w*)", _header_text()))


def check(text: str, filename: str) -> None:
    """Raise :class:`SimUnsupported` if ``text`` uses a feature the simulator lacks."""
    found = unsupported(text, filename, known_api=known_api())
    if found:
        raise SimUnsupported(found, source=text)


def local_includes(src: Path, text: str) -> str:
    """Text of the files ``text`` includes with quotes from beside ``src`` (for the cache key)."""
    parts = []
    for name in re.findall(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', text, re.M):
        path = src.parent / name
        if path.is_file():
            parts.append(path.read_text())
    return "\0".join(parts)


def _first_error_loc(output: str) -> Loc | None:
    for line in output.splitlines():
        m = re.match(r"^(.+?):(\d+):(\d+): (?:fatal )?error: ", line)
        if m:
            return Loc(m.group(1), int(m.group(2)), int(m.group(3)))
    return None


def exported_symbols(library: Path) -> tuple[str, ...]:
    """The unmangled functions ``library`` exports (empty if ``nm`` is missing)."""
    nm = shutil.which("nm")
    if nm is None:
        return ()
    proc = subprocess.run([nm, "-D", "--defined-only", "-P", str(library)], capture_output=True, text=True)
    names = []
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1] in ("T", "W"):
            name = parts[0]
            if not name.startswith(("_Z", "__sim_")) and name not in _RUNTIME_SYMBOLS:
                names.append(name)
    return tuple(sorted(names))


def build(cu_path: Path | str, out_dir: Path | str, *, extra_flags: tuple[str, ...] = (),
          compiler: str = "g++", timeout: float = 300.0, split: bool = True) -> SimBuild:
    """Compile ``cu_path`` for the simulator into ``out_dir``.

    ``split``: link the simulator's runtime object (:func:`runtime_object`) instead of compiling
    the whole simulator with the file (the same library, built in less than half the time).

    Raises :class:`SimUnsupported` for unmodelled CUDA features and
    :class:`SimBuildError` when the rewrite or g++ fails (the message carries
    g++'s diagnostics, whose locations point into the original .cu file).
    """
    src = Path(cu_path)
    out = Path(out_dir)
    text = src.read_text()
    filename = str(src)
    check(text, filename)
    try:
        body = rewrite(text)
    except ValueError as e:
        line = int(m.group(1)) if (m := re.match(r"line (\d+)", str(e))) else 1
        raise SimBuildError(Loc(filename, line), str(e), source=text) from None
    quoted = filename.replace("\\", "\\\\").replace('"', '\\"')
    cpp_text = f'#line 1 "{quoted}"\n{body}'
    # The rewritten file lives in out_dir: quoted includes still resolve beside the source.
    flags = [*BASE_FLAGS, f"-I{INCLUDE_DIR}", "-iquote", str(src.resolve().parent), "-include", "cuda_sim.h",
             *extra_flags]
    parts = [cpp_text, _header_text(), local_includes(src, text), compiler, *flags, "split" if split else "single"]
    key = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
    out.mkdir(parents=True, exist_ok=True)
    cpp = out / f"{src.stem}-{key}.sim.cpp"
    lib = out / f"lib{src.stem}-{key}.so"
    _write_once(cpp, cpp_text)
    if not lib.exists():
        tmp = lib.with_name(f"{lib.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        proc = None
        runtime = runtime_object(out, flags, compiler, timeout) if split else None
        if runtime is not None:
            proc = _run([compiler, *_extern_flags(out, flags), "-DCUDA_SIM_RUNTIME_EXTERN", "-x", "c++", str(cpp),
                         "-x", "none", str(runtime), "-o", str(tmp)], compiler, timeout, filename)
        if proc is None or proc.returncode != 0:  # built alone: the canonical build and its diagnostics
            proc = _run([compiler, *flags, "-x", "c++", str(cpp), "-o", str(tmp)], compiler, timeout, filename)
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            output = proc.stderr.strip()
            raise SimBuildError(_first_error_loc(output), f"{compiler} rejected the simulated CUDA:\n{output}",
                                output=output)
        os.replace(tmp, lib)
    return SimBuild(source=src, rewritten=cpp, library=lib, symbols=exported_symbols(lib),
                    kernels=kernel_names(text))


def _write_once(path: Path, text: str) -> None:
    """``text`` at ``path`` unless a file is there (a cache keyed by content): written whole, then
    renamed, so concurrent builds never see half a file."""
    if not path.exists():
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)


def _run(cmd: list[str], compiler: str, timeout: float, filename: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise SimBuildError(None, f"{compiler} not found: the CUDA simulator needs a C++17 compiler") from None
    except subprocess.TimeoutExpired:
        raise SimBuildError(None, f"{compiler} timed out after {timeout:.0f}s on {filename}") from None


def declarations(text: str) -> str:
    """``text`` with the body of every ``SIM_RT`` definition cut to a declaration: a definition
    starts at column 0 with ``SIM_RT `` and ends at the first line that is exactly ``}``."""
    lines = text.split("\n")
    out: list[str] = []
    k = 0
    while k < len(lines):
        line = lines[k]
        if not line.startswith("SIM_RT ") or line.rstrip().endswith(";"):
            out.append(line)
            k += 1
            continue
        head = [line]
        while "{" not in head[-1]:
            k += 1
            head.append(lines[k])
        end = lines.index("}", k)
        signature = "\n".join(head)
        out.append(signature[:signature.index("{")].rstrip() + ";")
        out.extend("" for _ in range(end - k))  # keep the line numbers of what follows
        k = end + 1
    return "\n".join(out)


def _extern_flags(out: Path, flags: list[str]) -> list[str]:
    """``flags`` for a translation unit linked with :func:`runtime_object`: the include directory and
    every ``-include``d file that defines ``SIM_RT`` functions replaced by copies cut to declarations
    (:func:`declarations`), written once into ``out``."""
    key = hashlib.sha256(_header_text().encode()).hexdigest()[:16]
    inc = out / f"cuda_sim_decl-{key}"
    inc.mkdir(parents=True, exist_ok=True)
    for h in INCLUDE_DIR.glob("*.h"):
        if not (inc / h.name).exists():
            _write_once(inc / h.name, declarations(h.read_text()))
    result = []
    for k, f in enumerate(flags):
        if f == f"-I{INCLUDE_DIR}":
            f = f"-I{inc}"
        elif k > 0 and flags[k - 1] == "-include" and Path(f).is_absolute() and Path(f).is_file():
            text = Path(f).read_text()
            if "\nSIM_RT " in text:
                copy = out / f"{Path(f).stem}-decl-{hashlib.sha256(text.encode()).hexdigest()[:16]}.h"
                if not copy.exists():
                    _write_once(copy, declarations(text))
                f = str(copy)
        result.append(f)
    return result


def runtime_object(out: Path, flags: list[str], compiler: str = "g++", timeout: float = 300.0) -> Path | None:
    """The simulator's ``SIM_RT`` functions compiled with ``flags`` (those of the libraries that link it,
    the files they ``-include`` hashed with them) into an object in ``out``, once; None if that fails."""
    # NOTE: the .cu's directory (-iquote) is left out: the headers include nothing with quotes, and
    # one object then serves every directory.
    flags = [f for k, f in enumerate(flags) if f != "-iquote" and (k == 0 or flags[k - 1] != "-iquote")]
    texts = []
    for k, f in enumerate(flags[:-1]):
        if f == "-include":
            path = Path(flags[k + 1]) if Path(flags[k + 1]).is_absolute() else INCLUDE_DIR / flags[k + 1]
            texts.append(path.read_text() if path.is_file() else flags[k + 1])
    key = hashlib.sha256("\0".join([_header_text(), *texts, compiler, *flags]).encode()).hexdigest()[:16]
    obj = out / f"cuda_sim_rt-{key}.o"
    failed = obj.with_suffix(".failed")
    if obj.exists():
        return obj
    if failed.exists():
        return None
    src = out / f"cuda_sim_rt-{key}.cpp"
    _write_once(src, "// the simulator's runtime functions: everything comes from the -include'd headers\n")
    tmp = obj.with_name(f"{obj.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    compile_flags = [f for f in flags if f != "-shared" and not f.startswith("-Wl,")]
    try:
        proc = _run([compiler, *compile_flags, "-DCUDA_SIM_RUNTIME_OBJECT", "-c", "-x", "c++", str(src), "-o",
                     str(tmp)], compiler, timeout, str(src))
    except SimBuildError:  # a timeout (or no compiler): the single build will say so; nothing is cached
        tmp.unlink(missing_ok=True)
        return None
    if proc.returncode != 0:  # deterministic: remembered, so later builds go straight to the single build
        tmp.unlink(missing_ok=True)
        failed.write_text(proc.stderr)
        return None
    os.replace(tmp, obj)
    return obj
