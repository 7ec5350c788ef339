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
The drop-in host runtime that every emitted file carries (about 900 lines
between :data:`HOST_RUNTIME_BEGIN` and :data:`HOST_RUNTIME_END`) is split the
same way (:func:`host_runtime_split`, :func:`host_runtime_object`): 1.55 to
1.2 s a PolyBench build.  Shared objects go to :func:`objects_dir`.
The split build's ``cuda_sim.h`` (declarations only) is precompiled once per
flag set (:func:`precompiled_header`): atax 1.07 to 0.75 s.  NOTE: a
precompiled *whole* ``cuda_sim.h`` (runtime bodies included, before the split)
made the 31 ``test_mma`` cases that verify kernels slower, 127 s against 83 s
(``-n 2``, fresh cache, 2026-12-04); the declarations-only one made
``tests/test_mma.py`` faster, 90.6 to 81.8 s (2026-12-06).
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

from transpile.diagnostics import Loc, line_directive
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

RACE_FLAGS: tuple[str, ...] = (
    # gcc's ThreadSanitizer instrumentation without its runtime: every load, store and atomic of the
    # .cu file's code calls a hook of cuda_sim.h's race detector (cuda_sim_race.h).  Only the .cu
    # file's translation unit is instrumented (the simulator's runtime object is not), and the
    # library is linked without -fsanitize, so libtsan is never loaded.  The macro gcc defines for
    # it is removed: a candidate must not tell the simulator build by it.
    "-fsanitize=thread", "--param=tsan-instrument-func-entry-exit=0", "-U__SANITIZE_THREAD__",
)

# Names the library exports that are not the .cu file's own extern "C" functions.
# The clock functions are the simulator's virtual clocks (cuda_sim.h, "Virtual time").
_RUNTIME_SYMBOLS = frozenset({"_init", "_fini", "_edata", "_end", "__bss_start", "__assert_fail", "clock",
                              "clock_gettime", "gettimeofday", "time"})


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
          compiler: str = "g++", timeout: float = 300.0, split: bool = True,
          modelled: str | None = None) -> SimBuild:
    """Compile ``cu_path`` for the simulator into ``out_dir``.

    ``modelled``: the part of the file checked for unmodelled features, when the rest is plain
    host C++ (``--emit program``'s C program, whose own ``asm`` g++ compiles); default all of it.

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
    check(text if modelled is None else modelled, filename)
    try:
        body = rewrite(text)
    except ValueError as e:
        line = int(m.group(1)) if (m := re.match(r"line (\d+)", str(e))) else 1
        raise SimBuildError(Loc(filename, line), str(e), source=text) from None
    cpp_text = f"{line_directive(1, filename)}\n{body}"
    # The rewritten file lives in out_dir: quoted includes still resolve beside the source.
    flags = [*BASE_FLAGS, f"-I{INCLUDE_DIR}", "-iquote", str(src.resolve().parent), "-include", "cuda_sim.h",
             *extra_flags, "-include", "cuda_sim_end.h"]
    # The text of every force-included file is part of the key (an audit header's edit is a new
    # library), so no -D carrying its hash is needed: the candidate would see such a macro.
    included = [Path(f).read_text() for k, f in enumerate(flags)
                if k > 0 and flags[k - 1] == "-include" and Path(f).is_absolute() and Path(f).is_file()]
    parts = [cpp_text, _header_text(), local_includes(src, text), *included, compiler, *flags,
             "split" if split else "single"]
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
            extern = _extern_flags(out, flags)
            tu, objects = cpp, [str(runtime)]
            host = host_runtime_split(cpp_text)
            host_obj = None if host is None else host_runtime_object(out, extern, host[1], compiler, timeout)
            if host is not None and host_obj is not None:
                tu = out / f"{src.stem}-{key}.sim-host.cpp"
                _write_once(tu, host[0])
                objects.append(str(host_obj))
            pch = precompiled_header(out, [*extern, *RACE_FLAGS], compiler, timeout)
            proc = _compile_and_link([compiler, *pch, *extern, *RACE_FLAGS, "-DCUDA_SIM_RUNTIME_EXTERN"], str(tu),
                                     [*extern, *objects], tmp, compiler, timeout, filename)
        if proc is None or proc.returncode != 0:  # built alone: the canonical build and its diagnostics
            proc = _compile_and_link([compiler, *flags, *RACE_FLAGS], str(cpp), list(flags), tmp, compiler, timeout,
                                     filename)
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            output = proc.stderr.strip()
            raise SimBuildError(_first_error_loc(output), f"{compiler} rejected the simulated CUDA:\n{output}",
                                output=output)
        os.replace(tmp, lib)
    return SimBuild(source=src, rewritten=cpp, library=lib, symbols=exported_symbols(lib),
                    kernels=kernel_names(text))


def _compile_and_link(compile_cmd: list[str], source: str, link_flags: list[str], target: Path, compiler: str,
                      timeout: float, filename: str) -> subprocess.CompletedProcess[str]:
    """``source`` compiled by ``compile_cmd`` (with :data:`RACE_FLAGS`: link-only flags are dropped) into
    an object beside ``target``, then linked with ``link_flags`` into ``target``; the first failing
    step's result.  Two steps because gcc given ``-fsanitize=thread`` when linking links libtsan, whose
    runtime must not be loaded (the race hooks are cuda_sim.h's)."""
    obj = target.with_name(target.name + ".o")
    cmd = [compile_cmd[0], *_compile_flags(compile_cmd[1:], ()), "-c", "-x", "c++", source, "-o", str(obj)]
    try:
        proc = _run(cmd, compiler, timeout, filename)
        if proc.returncode != 0:
            return proc
        return _run([compiler, *link_flags, "-x", "none", str(obj), "-o", str(target)], compiler, timeout, filename)
    finally:
        obj.unlink(missing_ok=True)


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
        start, head = k, [line]
        while "{" not in head[-1]:
            k += 1
            head.append(lines[k])
        end = lines.index("}", k)
        signature = "\n".join(head)
        decl = signature[:signature.index("{")].rstrip() + ";"
        out.append(decl)
        out.extend("" for _ in range(end - start - decl.count("\n")))  # keep the line numbers of what follows
        k = end + 1
    return "\n".join(out)


def objects_dir(out: Path) -> Path:
    """Where the objects and header copies that many libraries share go: ``$TRANSPILE_CACHE_DIR/sim``
    when that is set (a cache every build directory of the run shares; everything in it is named by
    a hash of its content), else ``out``."""
    root = os.environ.get("TRANSPILE_CACHE_DIR")
    if not root:
        return out
    shared = Path(root) / "sim"
    shared.mkdir(parents=True, exist_ok=True)
    return shared


def _extern_flags(out: Path, flags: list[str]) -> list[str]:
    """``flags`` for a translation unit linked with :func:`runtime_object`: the include directory and
    every ``-include``d file that defines ``SIM_RT`` functions replaced by copies cut to declarations
    (:func:`declarations`), written once into ``out``."""
    out = objects_dir(out)
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


HOST_RUNTIME_BEGIN = "// Drop-in host transfers (docs/dropin.md)"
HOST_RUNTIME_END = "// End of the drop-in host transfers."
"""The lines that open and close the drop-in host runtime of an emitted file (templates/dropin.cu.j2):
the same text in every file transpile writes, 900 lines of host code that cost a quarter of a
simulator build; :func:`build` compiles it once per text and flag set (:func:`host_runtime_object`)."""

_HOST_RT_DEF = re.compile(r"^\[\[maybe_unused\]\] static (?!inline )", re.M)


def host_runtime_split(text: str) -> tuple[str, str] | None:
    """(``text`` with the functions of its drop-in host runtime cut to hidden declarations, the
    object's translation unit defining them), or None if ``text`` has no such runtime.

    The runtime is the lines from the one starting :data:`HOST_RUNTIME_BEGIN` to :data:`HOST_RUNTIME_END`; its
    functions are the definitions at column 0 that start ``[[maybe_unused]] static`` (not
    ``inline``) and end at the first line ``}``.  They become external with hidden visibility, so
    the object's definitions serve the library alone, and the object's translation unit is the
    file's ``#include <...>`` lines before the runtime, its ``transpile_check`` (the one function of
    the file the runtime calls) and the runtime.  Line numbers of the rest of the file are kept."""
    begin = text.find("\n" + HOST_RUNTIME_BEGIN)
    end = text.find("\n" + HOST_RUNTIME_END + "\n", begin + 1)
    if begin < 0 or end < 0 or text.count(HOST_RUNTIME_BEGIN) != 1:
        return None
    head, block, tail = text[:begin + 1], text[begin + 1:end + 1], text[end + 1:]
    check = re.search(r"^\[\[maybe_unused\]\] static void transpile_check\(.*?^\}\n", head, re.M | re.S)
    if check is None:
        return None
    hidden = '__attribute__((visibility("hidden"))) '
    defined = _HOST_RT_DEF.sub(hidden, block)
    declared = declarations(_HOST_RT_DEF.sub("SIM_RT " + hidden, block)).replace("SIM_RT " + hidden, hidden)
    includes = "".join(ln + "\n" for ln in head.split("\n") if re.match(r"#include <[\w./]+>$", ln))
    obj_text = f"{includes}\n{check.group(0)}\n{defined}"
    return head + declared + tail, obj_text


def host_runtime_object(out: Path, flags: list[str], text: str, compiler: str = "g++",
                        timeout: float = 300.0) -> Path | None:
    """``text`` (:func:`host_runtime_split`'s object unit) compiled with ``flags`` (a split build's, from
    :func:`_extern_flags`) into an object in ``out``, once; None if that fails (then the library is
    built with its runtime, as any file)."""
    compile_flags = _compile_flags(flags, ("-iquote",))
    key = hashlib.sha256("\0".join([_header_text(), text, compiler, *compile_flags]).encode()).hexdigest()[:16]
    return _object_once(out, f"dropin_rt-{key}", text, [*compile_flags, "-DCUDA_SIM_RUNTIME_EXTERN"], compiler, timeout)


def _compile_flags(flags: list[str], drop: tuple[str, ...]) -> list[str]:
    """``flags`` without the link-only ones (``-shared``, ``-Wl,...``) and without each flag of ``drop``
    together with its argument (``-iquote DIR``: one object then serves every directory)."""
    out: list[str] = []
    skip = False
    for f in flags:
        if skip:
            skip = False
        elif f in drop:
            skip = True
        elif f != "-shared" and not f.startswith("-Wl,"):
            out.append(f)
    return out


def _object_once(out: Path, name: str, text: str, flags: list[str], compiler: str, timeout: float) -> Path | None:
    """``text`` compiled with ``flags`` into ``objects_dir(out) / (name + ".o")`` unless it is there
    (``name`` carries the hash of everything that goes into it); None if the compile fails, which is
    remembered (``name.failed``), or times out, which is not."""
    out = objects_dir(out)
    obj, src = out / f"{name}.o", out / f"{name}.cpp"
    _write_once(src, text)
    return obj if _built_once(obj, [compiler, *flags, "-c", "-x", "c++", str(src)], compiler, timeout) else None


def _built_once(target: Path, cmd: list[str], compiler: str, timeout: float) -> bool:
    """Whether ``target`` exists or ``cmd -o target`` makes it (written under a temporary name, then
    renamed); a failed compile is remembered beside it (``.failed``: deterministic, so later builds go
    straight to the fallback), a timeout or a missing compiler is not (the fallback build says so)."""
    failed = target.with_suffix(".failed")
    if target.exists():
        return True
    if failed.exists():
        return False
    tmp = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        proc = _run([*cmd, "-o", str(tmp)], compiler, timeout, cmd[-1])
    except SimBuildError:
        tmp.unlink(missing_ok=True)
        return False
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        failed.write_text(proc.stderr)
        return False
    os.replace(tmp, target)
    return True


def precompiled_header(out: Path, flags: list[str], compiler: str = "g++", timeout: float = 300.0) -> list[str]:
    """``["-I<dir>"]``, a directory holding ``cuda_sim.h.gch``: the split build's ``cuda_sim.h`` (cut to
    declarations, :func:`_extern_flags`) precompiled with ``flags``, once; ``[]`` if that fails, and the
    header is parsed as before.  Put first on the include path, g++ takes the ``.gch`` in place of
    the header when the compile's options match the ones it was built with and ignores it otherwise.
    It halves the fixed cost of a library (0.56 to 0.27 s for an empty file, 2026-12-06)."""
    decl = next((f[2:] for f in flags if f.startswith("-I") and Path(f[2:]).name.startswith("cuda_sim_decl-")),
                None)
    if decl is None:
        return []
    # Neither the .cu's directory nor the -include'd headers: the .gch is the first of them.
    keep = [*_compile_flags(flags, ("-iquote", "-include")), "-DCUDA_SIM_RUNTIME_EXTERN"]
    key = hashlib.sha256("\0".join([compiler, *keep]).encode()).hexdigest()[:16]
    d = objects_dir(out) / f"cuda_sim_pch-{key}"
    d.mkdir(parents=True, exist_ok=True)
    cmd = [compiler, *keep, "-x", "c++-header", str(Path(decl) / "cuda_sim.h")]
    return [f"-I{d}"] if _built_once(d / "cuda_sim.h.gch", cmd, compiler, timeout) else []


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
    compile_flags = _compile_flags(flags, ())
    return _object_once(out, f"cuda_sim_rt-{key}",
                        "// the simulator's runtime functions: everything comes from the -include'd headers\n",
                        [*compile_flags, "-DCUDA_SIM_RUNTIME_OBJECT"], compiler, timeout)
