"""The reference: the C function compiled by gcc, or the IR interpreter.

:class:`GccReference` compiles the C file with ``gcc -O2 -ffp-contract=off``
(no FMA contraction: plain IEEE double arithmetic in source order) into a
shared library, together with a trampoline ``__transpile_ref_entry`` defined in
the same translation unit, so a ``static`` kernel is callable too; array
arguments go in as ``void *``, which C converts to the parameter's type.
Libraries are cached by the hash of the preprocessed text and the flags.

``GccReference.run_contracted`` runs a second build of the same C with FMA
contraction on (``-ffp-contract=fast``, plus ``-mfma`` on an x86 host whose
CPU has FMA): a correct implementation with another rounding order, e.g. a
GPU, which contracts ``a*b+c`` by default.  How far its outputs move from the
plain build's measures the kernel's sensitivity to rounding order at those
inputs (:func:`transpile.verify.prepare.rounding_spread`).
:class:`InterpReference` runs :func:`transpile.ir.interp.run` (for ``.ir`` input).

Every reference call runs in a forked child (:func:`transpile.verify.proc.fork_call`),
on copies of the inputs: an out-of-bounds access at an odd shape skips that
shape instead of killing the verifier.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from transpile import ir
from transpile.verify.proc import ChildError, fork_call
from transpile.verify.signature import KernelSig
from transpile.verify.synth import Inputs, copy_inputs

CC = "gcc"
CFLAGS: tuple[str, ...] = ("-std=gnu11", "-O2", "-fPIC", "-shared", "-ffp-contract=off", "-w")
# Only the function and what it needs: the entry alone is exported (the wrapper marks it visible),
# every function and object in its own section, and the linker drops the sections nothing reachable
# from the entry uses.  A whole program (PolyBench's main, its calls of polybench_alloc_data and the
# timers of a library that is not linked) then loads: those references go with main.
LINK_FLAGS: tuple[str, ...] = ("-fvisibility=hidden", "-ffunction-sections", "-fdata-sections",
                               "-Wl,--gc-sections")
_C_TYPES = {
    "i8": "signed char", "i16": "short", "i32": "int", "i64": "long long", "u8": "unsigned char",
    "u16": "unsigned short", "u32": "unsigned int", "u64": "unsigned long long", "f32": "float", "f64": "double",
}
_CTYPES = {
    "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
    "u8": ctypes.c_uint8, "u16": ctypes.c_uint16, "u32": ctypes.c_uint32, "u64": ctypes.c_uint64,
    "f32": ctypes.c_float, "f64": ctypes.c_double,
}


class ReferenceBuildError(Exception):
    """The reference could not be built."""


def cache_dir(sub: str) -> Path:
    """A per-user cache directory (``TRANSPILE_CACHE_DIR`` overrides the temp-dir default)."""
    root = os.environ.get("TRANSPILE_CACHE_DIR")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    base = Path(root) if root else Path(tempfile.gettempdir()) / f"transpile-verify-{uid}"
    d = base / sub
    d.mkdir(parents=True, exist_ok=True)
    return d


def cache_file(sub: str, stem: str, text: str, suffix: str = ".cu") -> Path:
    """``text`` written once under :func:`cache_dir` (``sub``), named by ``stem`` and its content's hash
    (so a cache keyed by file content, nvcc's or the simulator's, hits when the same text comes again)."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:20]
    path = cache_dir(sub) / f"{stem}-{digest}{suffix}"
    if not path.exists():  # written whole, then renamed: a concurrent reader never sees half a file
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def ctype_args(sig: KernelSig, args: Inputs, arrays: dict[str, Any], *, dropin: bool = False
               ) -> tuple[list[Any], list[Any]]:
    """ctypes ``argtypes`` and values for calling a C function with ``sig`` (arrays by address in ``arrays``);
    ``dropin``: the C signature, without the return slot (see :func:`call_dropin`)."""
    types: list[Any] = []
    values: list[Any] = []
    for a in sig.args:
        if dropin and a.name == sig.ret:
            continue
        if a.is_array:
            types.append(ctypes.c_void_p)
            values.append(arrays[a.name])
        else:
            ct = _CTYPES[a.ty.name]
            types.append(ct)
            values.append(ct(args[a.name].item() if hasattr(args[a.name], "item") else args[a.name]))
    return types, values


def call_dropin(fn: Any, sig: KernelSig, args: Inputs, ptrs: dict[str, Any]) -> None:
    """Call ``fn``, a function with the C signature of ``sig`` (a drop-in), on the arrays at ``ptrs``
    (``ctypes.c_void_p``); the value a returning function gives back goes into its return slot's array."""
    slot = sig.ret_arg
    fn.argtypes, values = ctype_args(sig, args, ptrs, dropin=True)
    fn.restype = None if slot is None else _CTYPES[slot.ty.name]
    value = fn(*values)
    if slot is not None:
        ctypes.cast(ptrs[slot.name], ctypes.POINTER(fn.restype))[0] = value


def _fma_flags() -> tuple[str, ...] | None:
    """Flags that make gcc contract to FMA instructions here, or None if this CPU has none."""
    import platform

    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        try:
            flags = next((ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("flags")), "")
        except OSError:
            flags = ""
        if flags:
            has = " fma " in f"{flags} "
        else:  # no flags line (some containers): numpy's own CPUID probe
            try:
                from numpy._core._multiarray_umath import __cpu_features__ as features
            except ImportError:  # numpy 1.x
                from numpy.core._multiarray_umath import __cpu_features__ as features
            has = bool(features.get("FMA3"))
        # gcc 13's generic tuning leaves loop-carried a*b+c chains uncontracted ("avoid FMA chains"):
        # lu's and ludcmp's reductions got no FMA at all, the spread read 0 and the GPU's contracted
        # sums missed the tolerance (runs 51, 55).  The param turns that avoidance off.
        return ("-ffp-contract=fast", "-mfma", "--param=avoid-fma-max-bits=0") if has else None
    if machine in ("aarch64", "arm64", "ppc64le", "s390x"):
        return ("-ffp-contract=fast",)  # fused multiply-add is part of the base ISA
    return None


GUARD_BYTES = 1 << 24
"""Address space left inaccessible on either side of each array of a reference call (reserved, never
backed by memory): an index that leaves an array by less than this faults."""
_PROT_NONE = 0


def guarded_copy(a: np.ndarray, *, align_end: bool) -> np.ndarray:
    """A copy of ``a`` in memory of its own between two inaccessible regions of :data:`GUARD_BYTES`,
    its last byte at the end of its pages (``align_end``) or its first at their start (an empty array:
    a plain copy)."""
    import mmap

    if a.size == 0:
        return a.copy()
    page = mmap.PAGESIZE
    data = -(-a.nbytes // page) * page
    guard = -(-GUARD_BYTES // page) * page
    region = mmap.mmap(-1, guard + data + guard, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    base = ctypes.addressof(ctypes.c_char.from_buffer(region))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    for start in (base, base + guard + data):
        if libc.mprotect(ctypes.c_void_p(start), guard, _PROT_NONE) != 0:
            raise OSError(ctypes.get_errno(), "mprotect failed")
    offset = guard + (data - a.nbytes if align_end else 0)
    out = np.frombuffer(region, dtype=a.dtype, count=a.size, offset=offset).reshape(a.shape)
    out[...] = a
    return out


def _load_problem(library: Path) -> str | None:
    """Why ``library`` cannot be loaded (an undefined symbol), or None; tried in a forked child."""
    def child() -> None:
        ctypes.CDLL(str(library), mode=os.RTLD_LOCAL)

    try:
        fork_call(child, timeout=60.0, what="loading the reference")
    except ChildError as e:
        return str(e).splitlines()[0] if str(e) else "it does not load"
    return None


class Reference:
    """Base class: ``run(inputs)`` returns every array parameter after the call."""

    kind = "?"
    description = ""

    def __init__(self, sig: KernelSig) -> None:
        self.sig = sig
        self.seconds: list[float] = []

    def _call(self, args: Inputs) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def run(self, args: Inputs, *, timeout: float = 120.0) -> dict[str, np.ndarray]:
        """The reference's arrays after a call on a copy of ``args`` (in a forked child)."""
        mine = copy_inputs(args)

        def child() -> tuple[dict[str, np.ndarray], float]:
            t0 = time.perf_counter()
            out = self._call(mine)
            return out, time.perf_counter() - t0

        out, secs = fork_call(child, timeout=timeout, what=f"the reference {self.sig.name}()")
        self.seconds.append(secs)
        return out

    def run_contracted(self, args: Inputs, *, timeout: float = 120.0) -> dict[str, np.ndarray] | None:
        """The arrays after a call of a build with FMA contraction, or None where there is none."""
        return None


class GccReference(Reference):
    """The C function compiled by gcc, called through ctypes."""

    kind = "gcc"

    def __init__(self, sig: KernelSig, source: Path, *, function: str, include_dirs: Sequence[str] = (),
                 defines: Sequence[str] = ()) -> None:
        super().__init__(sig)
        self.source = Path(source).resolve()
        self.function = function
        self._include_dirs, self._defines = tuple(include_dirs), tuple(defines)
        self.library = self._build(include_dirs, defines)
        self._contracted: Path | None | bool = False  # False: not built yet; None: no FMA here
        self.description = f"{self.source.name}:{function} (gcc -O2 -ffp-contract=off)"

    def _wrapper(self) -> str:
        params = ", ".join(f"void *{a.name}" if a.is_array else f"{_C_TYPES[a.ty.name]} {a.name}"
                           for a in self.sig.args) or "void"
        call = ", ".join(a.name for a in self.sig.args if a.name != self.sig.ret)
        quoted = str(self.source).replace("\\", "\\\\").replace('"', '\\"')
        body = f"{self.function}({call});"
        slot = self.sig.ret_arg
        if slot is not None:  # a C function returning a value: the entry stores it in the slot
            body = f"*({_C_TYPES[slot.ty.name]} *){slot.name} = {body}"
        return (f'#include "{quoted}"\n'
                f'__attribute__((visibility("default"))) void __transpile_ref_entry({params}) {{ {body} }}\n')

    def run_contracted(self, args: Inputs, *, timeout: float = 120.0) -> dict[str, np.ndarray] | None:
        if self._contracted is False:
            fma = _fma_flags()
            self._contracted = None
            # A compiler that refuses a flag (an older gcc, the param) gets the build without it.
            for flags in ([] if fma is None else [fma, tuple(f for f in fma if not f.startswith("--param"))]):
                try:
                    self._contracted = self._build(self._include_dirs, self._defines, flags)
                    break
                except ReferenceBuildError:
                    continue
        if self._contracted is None:
            return None
        mine = copy_inputs(args)
        lib = self._contracted

        def child() -> dict[str, np.ndarray]:
            self.library = lib  # a forked child: the parent's reference is untouched
            return self._call(mine)

        return fork_call(child, timeout=timeout, what=f"the contracted reference {self.sig.name}()")

    def _build(self, include_dirs: Sequence[str], defines: Sequence[str],
               contract: tuple[str, ...] = ()) -> Path:
        out = cache_dir("ref")
        extra = [*(f"-I{d}" for d in include_dirs), *(f"-D{d}" for d in defines)]
        base = [f for f in CFLAGS if not (contract and f.startswith("-ffp-contract"))]
        flags = [*base, *LINK_FLAGS, *contract, *extra]
        fd, wrapper_path = tempfile.mkstemp(dir=out, prefix=f"{self.source.stem}.", suffix=".c")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(self._wrapper())
            pre = subprocess.run([CC, "-E", "-P", CFLAGS[0], *extra, wrapper_path], capture_output=True, text=True)
            if pre.returncode != 0:
                raise ReferenceBuildError(f"gcc cannot preprocess {self.source.name}:\n{pre.stderr.strip()[:2000]}")
            key = hashlib.sha256("\0".join([pre.stdout, *flags]).encode()).hexdigest()[:20]
            lib = out / f"lib{self.source.stem}-{key}.so"
            if not lib.exists():
                tmp = lib.with_name(f"{lib.name}.{os.getpid()}.tmp")
                proc = subprocess.run([CC, *flags, "-o", str(tmp), wrapper_path, "-lm"], capture_output=True,
                                      text=True)
                if proc.returncode != 0:
                    tmp.unlink(missing_ok=True)
                    raise ReferenceBuildError(f"gcc cannot compile {self.source.name}:\n{proc.stderr.strip()[:2000]}")
                problem = _load_problem(tmp)
                if problem is not None:  # e.g. a helper the function calls is defined in another file
                    tmp.unlink(missing_ok=True)
                    raise ReferenceBuildError(f"the reference built from {self.source.name} does not load: "
                                              f"{problem}")
                os.replace(tmp, lib)
            return lib
        finally:
            Path(wrapper_path).unlink(missing_ok=True)

    def _call(self, args: Inputs) -> dict[str, np.ndarray]:
        lib = ctypes.CDLL(str(self.library), mode=os.RTLD_LOCAL)
        fn = lib["__transpile_ref_entry"]
        fn.restype = None
        arrays: dict[str, np.ndarray] = {}
        # Twice, each array between inaccessible guard regions: first ending where they begin (an
        # access past an end faults), then starting where they end (an access before a start faults).
        # A fault kills this child, and the parent reports the shape as one where the C is undefined.
        for align_end in (True, False):
            arrays = {a.name: guarded_copy(np.ascontiguousarray(args[a.name]), align_end=align_end)
                      for a in self.sig.arrays}
            ptrs = {n: ctypes.c_void_p(v.ctypes.data if v.size else None) for n, v in arrays.items()}
            types, values = ctype_args(self.sig, args, ptrs)
            fn.argtypes = types
            fn(*values)
        return {n: np.array(v) for n, v in arrays.items()}

    def run(self, args: Inputs, *, timeout: float = 120.0) -> dict[str, np.ndarray]:
        try:
            return super().run(args, timeout=timeout)
        except ChildError as e:
            if e.kind == "crash" and "SIGSEGV" in e.message:
                raise ChildError("crash", f"{e.message}: it reads or writes outside its arrays for these inputs "
                                          "(a guard region around every array was hit), so the C has no "
                                          "defined result to compare with", e.output) from None
            raise


class InterpReference(Reference):
    """The IR interpreter (exact C semantics, slow: keep shapes small)."""

    kind = "interp"

    def __init__(self, sig: KernelSig, module: ir.Module, source: str = "") -> None:
        super().__init__(sig)
        self.module = module
        self.description = f"{source or 'IR'}:{sig.name} (IR interpreter)"

    def _call(self, args: Inputs) -> dict[str, np.ndarray]:
        from transpile.ir import interp

        return interp.run(self.module, self.sig.name, args)
