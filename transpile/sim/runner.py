"""Call the ``extern "C"`` host functions of a simulation library from Python.

:class:`SimLibrary` wraps the ctypes handle: numpy arrays are passed as
pointers to their data (so outputs land in place), numpy scalars keep their
C type, Python ``int``/``float`` become ``int``/``double``.  The simulator's
C API (schedule seed, guard check, diagnostics) is exposed as methods.

A kernel bug can crash or hang the whole process, so :func:`run_isolated`
runs one call in a forked child with a time limit and copies the arrays back.

:func:`neutral_process` makes such a child look like an ordinary program to the
code it runs (no Python command line, process name or verifier environment):
a candidate must not tell that it is being checked (docs/verify.md,
"Environment detection").
"""

from __future__ import annotations

import ctypes
import dataclasses
import faulthandler
import multiprocessing
import os
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from transpile.sim.build import SimBuild
from transpile.sim.errors import SimCrash, SimTimeout

CUDA_ERRORS = {
    0: "cudaSuccess", 1: "cudaErrorInvalidValue", 2: "cudaErrorMemoryAllocation",
    9: "cudaErrorInvalidConfiguration", 98: "cudaErrorInvalidDeviceFunction", 101: "cudaErrorInvalidDevice",
    400: "cudaErrorInvalidResourceHandle", 700: "cudaErrorIllegalAddress", 710: "cudaErrorAssert",
    719: "cudaErrorLaunchFailure",
}
"""The ``cudaError_t`` codes the simulator produces, by value."""


@dataclass(frozen=True, slots=True)
class SimRun:
    """What one call left behind: its return value and the simulator's findings.

    ``guard_violations`` counts corrupted guard bytes (out-of-bounds writes
    past or before a ``cudaMalloc`` buffer); ``last_error`` is the pending
    ``cudaError_t`` (sticky after a kernel fault); ``diagnostics`` holds one
    line per problem found (barrier divergence, bad copies, ...).
    """

    ret: Any
    last_error: int
    guard_violations: int
    diagnostics: str
    live_allocations: int
    launches: int
    stderr: str = ""

    @property
    def ok(self) -> bool:
        """No error, no guard violation, no diagnostic."""
        return self.last_error == 0 and self.guard_violations == 0 and not self.diagnostics


@dataclass(frozen=True, slots=True)
class DevicePtr:
    """A device address to pass as a pointer argument (a bare ``int`` would become a C ``int``)."""

    address: int


_C_API: tuple[tuple[str, Any, list[Any]], ...] = (
    ("set_schedule", None, [ctypes.c_ulonglong]),
    ("set_guard_bytes", None, [ctypes.c_ulonglong]),
    ("set_fill_byte", None, [ctypes.c_int]),
    ("set_quiet", None, [ctypes.c_int]),
    ("check_guards", ctypes.c_longlong, []),
    ("last_error", ctypes.c_int, []),
    ("diagnostics", ctypes.c_char_p, []),
    ("live_allocations", ctypes.c_int, []),
    ("launch_count", ctypes.c_ulonglong, []),
    ("pool_allocations", ctypes.c_ulonglong, []),
    ("h2d_bytes", ctypes.c_ulonglong, []),
    ("reset", None, []),
    ("device_malloc", ctypes.c_void_p, [ctypes.c_ulonglong]),
    ("device_free", ctypes.c_int, [ctypes.c_void_p]),
    ("release", None, []),
)
"""The simulator's exported C API (``__sim_<name>``) with its C signatures."""


def _as_c(arg: Any) -> Any:
    if isinstance(arg, np.ndarray):
        if not arg.flags.c_contiguous:
            raise ValueError("arrays passed to the simulator must be C-contiguous")
        return ctypes.c_void_p(arg.ctypes.data)
    if isinstance(arg, DevicePtr):
        return ctypes.c_void_p(arg.address)
    if isinstance(arg, np.generic):
        return np.ctypeslib.as_ctypes_type(cast(Any, arg.dtype))(arg.item())
    if isinstance(arg, bool):
        return ctypes.c_bool(arg)
    if isinstance(arg, int):
        return ctypes.c_int(arg) if -(2**31) <= arg < 2**31 else ctypes.c_longlong(arg)
    if isinstance(arg, float):
        return ctypes.c_double(arg)
    if arg is None:
        return ctypes.c_void_p(None)
    return arg  # already a ctypes object


class SimLibrary:
    """A loaded simulation library (``RTLD_LOCAL``: its simulator state is its own)."""

    def __init__(self, library: SimBuild | Path | str) -> None:
        self.path = Path(library.library if isinstance(library, SimBuild) else library)
        self._called: set[str] = set()  # functions called through call(): their NAME_release, if any
        self.lib = ctypes.CDLL(str(self.path), mode=os.RTLD_LOCAL)
        # Looked up by name: `self.lib.__sim_x` inside a class would be name-mangled.
        self._api: dict[str, Any] = {}
        for name, restype, argtypes in _C_API:
            fn = self.lib[f"__sim_{name}"]
            fn.restype = restype
            fn.argtypes = argtypes
            self._api[name] = fn

    def call(self, name: str, *args: Any, restype: Any = ctypes.c_int) -> Any:
        """Call ``extern "C"`` function ``name``; ``restype=None`` for ``void``."""
        fn = getattr(self.lib, name)
        fn.restype = restype
        self._called.add(name)
        try:
            return fn(*[_as_c(a) for a in args])
        finally:
            self.release()

    def run(self, name: str, *args: Any, seed: int = 0, restype: Any = ctypes.c_int) -> SimRun:
        """Reset the simulator, call ``name`` under schedule ``seed``, and collect the findings."""
        self.reset()
        self.set_schedule(seed)
        ret = self.call(name, *args, restype=restype)
        return self.findings(ret)

    def findings(self, ret: Any = None) -> SimRun:
        """The simulator's state now, as a :class:`SimRun` around ``ret``."""
        return SimRun(ret=ret, last_error=self.last_error(), guard_violations=self.check_guards(),
                      diagnostics=self.diagnostics(), live_allocations=self.live_allocations(),
                      launches=int(self._api["launch_count"]()))

    def set_schedule(self, seed: int) -> None:
        """0: blocks and threads in order; any other seed: a shuffled, reproducible schedule."""
        self._api["set_schedule"](seed)

    def set_guard_bytes(self, n: int) -> None:
        """Guard bytes on each side of later device allocations (0 disables)."""
        self._api["set_guard_bytes"](n)

    def set_fill_byte(self, b: int) -> None:
        """Poison byte for fresh allocations and dynamic shared memory (-1: leave as is)."""
        self._api["set_fill_byte"](b)

    def set_quiet(self, quiet: bool = True) -> None:
        """Stop echoing diagnostics to stderr."""
        self._api["set_quiet"](int(quiet))

    def check_guards(self) -> int:
        """Corrupted guard bytes in live allocations plus those found when freeing."""
        return int(self._api["check_guards"]())

    def last_error(self) -> int:
        """The pending ``cudaError_t`` (not cleared)."""
        return int(self._api["last_error"]())

    def diagnostics(self) -> str:
        """Every diagnostic since the last reset, one per line."""
        return (self._api["diagnostics"]() or b"").decode(errors="replace")

    def live_allocations(self) -> int:
        """Device and pinned allocations not freed yet."""
        return int(self._api["live_allocations"]())

    def pool_allocations(self) -> int:
        """``cudaMallocFromPoolAsync`` allocations made so far (freed or not)."""
        return int(self._api["pool_allocations"]())

    def h2d_bytes(self) -> int:
        """Bytes copied from the host to the device so far (every checked copy, staged pieces included)."""
        return int(self._api["h2d_bytes"]())

    def to_device(self, array: np.ndarray) -> DevicePtr:
        """A new ``cudaMalloc`` buffer holding a copy of ``array``.

        For calling entry points that take device pointers; free it with
        :meth:`device_free`, read it back with :meth:`from_device`.
        """
        data = np.ascontiguousarray(array)
        ptr = self._api["device_malloc"](max(data.nbytes, 1))
        if not ptr:
            raise MemoryError(f"cudaMalloc of {data.nbytes} bytes failed in the simulator")
        ctypes.memmove(ptr, data.ctypes.data, data.nbytes)
        return DevicePtr(int(ptr))

    def from_device(self, ptr: DevicePtr, out: np.ndarray) -> np.ndarray:
        """Copy ``out.nbytes`` bytes at ``ptr`` into ``out`` (C-contiguous); returns ``out``."""
        if not out.flags.c_contiguous:
            raise ValueError("from_device needs a C-contiguous array")
        ctypes.memmove(out.ctypes.data, ptr.address, out.nbytes)
        return out

    def device_free(self, ptr: DevicePtr) -> int:
        """``cudaFree(ptr)``; returns the ``cudaError_t``."""
        return int(self._api["device_free"](ptr.address))

    def release(self) -> None:
        """Unmap the fiber stacks the launches used (:meth:`call` does it after every call).

        The stacks would otherwise stay mapped for as long as the library is
        loaded, which in a Python process is until it exits: one mapping and
        one guard page per simulated thread, and every later ``fork`` of the
        process copies them (about 5 ms more per 1024-thread library).
        """
        self._api["release"]()

    def close(self) -> None:
        """Free what the drop-ins called through :meth:`call` keep between calls (their
        ``NAME_release``: memory pool, pinned staging ring, stream) and the fiber stacks.

        Called when the object is garbage-collected, so that a process which loads many libraries
        (a test run) does not keep all their memory resident.  The library stays loaded and usable:
        the next call allocates again.  Another :class:`SimLibrary` of the same file shares its state.
        """
        for name in sorted(self._called):
            try:
                fn = self.lib[f"{name}_release"]
            except AttributeError:  # not a drop-in
                continue
            fn.restype, fn.argtypes = None, []
            fn()
        self._called.clear()
        self.release()

    def __enter__(self) -> SimLibrary:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit ctypes or the module may be gone
            pass

    def reset(self) -> None:
        """Clear errors (sticky ones too), diagnostics and guard counts; keep allocations."""
        self._api["reset"]()


NEUTRAL_NAME = "./a.out"
"""The command line a checked program sees (``/proc/self/cmdline``, ``program_invocation_name``)."""

_KEEP_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR", "PWD")
"""Variables an ordinary program's environment has; everything else the verifier's process
inherited (``PYTHONPATH``, ``TRANSPILE_*``, ``PYTEST_*``, virtual environments) is removed."""

_neutral_keep: list[Any] = []  # buffers C pointers were set to: alive as long as the process


def neutral_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a checked program gets: :data:`_KEEP_ENV`, ``LC_*`` and ``CUDA_*`` variables of
    this process, plus ``extra`` (the switches a call sets on purpose)."""
    env = {k: v for k, v in os.environ.items()
           if k in _KEEP_ENV or k.startswith(("LC_", "CUDA_"))}
    env.update(extra or {})
    return env


def neutral_process(extra_env: dict[str, str] | None = None) -> None:
    """Make this (forked, single-use) process look like ``./a.out`` run from a shell.

    * the environment becomes :func:`neutral_environment` (``environ``, ``getenv``), and the
      initial environment block that ``/proc/self/environ`` shows is overwritten with it;
    * the argument block ``/proc/self/cmdline`` shows (and ``program_invocation_name``, which
      points into it) becomes :data:`NEUTRAL_NAME`; ``/proc/self/comm`` (``prctl(PR_SET_NAME)``,
      ``program_invocation_short_name``) becomes ``a.out``.

    What stays visible: ``/proc/self/exe`` and ``/proc/self/maps`` (the Python interpreter and the
    library's path), the parent process, and the simulator's fiber stacks; see docs/verify.md.
    Linux only; a step that fails is skipped.
    """
    env = neutral_environment(extra_env)
    for k in list(os.environ):
        if k not in env:
            del os.environ[k]
    for k, v in env.items():
        os.environ[k] = v  # a fresh copy: nothing points into the initial block any more
    try:
        libc = ctypes.CDLL(None)
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        # Fields 48-51 (1-based, counting pid and comm): arg_start, arg_end, env_start, env_end.
        arg_start, arg_end, env_start, env_end = (int(f) for f in fields[45:49])
        _overwrite(arg_start, arg_end, NEUTRAL_NAME.encode() + b"\0")
        _overwrite(env_start, env_end, b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items()))
        name = ctypes.create_string_buffer(NEUTRAL_NAME.encode())
        short = ctypes.create_string_buffer(NEUTRAL_NAME.rsplit("/", 1)[-1].encode())
        _neutral_keep.extend([name, short])
        ctypes.c_void_p.in_dll(libc, "program_invocation_name").value = ctypes.addressof(name)
        ctypes.c_void_p.in_dll(libc, "program_invocation_short_name").value = ctypes.addressof(short)
        libc.prctl(15, short, 0, 0, 0)  # PR_SET_NAME
    except (OSError, ValueError, IndexError, AttributeError):
        pass


def _overwrite(start: int, end: int, data: bytes) -> None:
    """Zero ``[start, end)`` of this process's memory and write ``data`` at ``start`` (cut to fit)."""
    if end <= start:
        return
    n = end - start
    ctypes.memset(start, 0, n)
    data = data[:n - 1] + b"\0" if len(data) >= n else data
    ctypes.memmove(start, data, len(data))


def _child(conn: Any, path: str, name: str, args: tuple[Any, ...], seed: int, restype: Any,
           guard_bytes: int | None, stderr_fd: int, neutral: bool) -> None:
    os.dup2(stderr_fd, 2)
    if faulthandler.is_enabled():  # keep its report of a crash in the captured stderr
        faulthandler.enable(file=2)
    try:
        lib = SimLibrary(path)
        if guard_bytes is not None:
            lib.set_guard_bytes(guard_bytes)
        if neutral:
            neutral_process()
        run = lib.run(name, *args, seed=seed, restype=restype)
    except Exception as e:  # a bad name or argument: re-raised in the parent
        conn.send((e, None))
    else:
        conn.send((run, [a for a in args if isinstance(a, np.ndarray)]))
    conn.close()


def run_isolated(library: SimBuild | Path | str, name: str, *args: Any, seed: int = 0, timeout: float = 60.0,
                 restype: Any = ctypes.c_int, guard_bytes: int | None = None, neutral: bool = False) -> SimRun:
    """Like :meth:`SimLibrary.run`, in a forked child limited to ``timeout`` seconds.

    ``neutral``: the child calls :func:`neutral_process` first (the verifier's view: the code sees
    ``./a.out`` and an ordinary environment; off by default, so a caller's switches reach the code).

    Arrays among ``args`` get the child's final contents.  Raises
    :class:`SimTimeout` if the child runs too long and :class:`SimCrash` if it
    dies (segmentation fault, ``exit``); both carry the child's stderr.
    """
    path = str(library.library if isinstance(library, SimBuild) else library)
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    with tempfile.TemporaryFile() as err:
        proc = ctx.Process(target=_child, args=(send, path, name, args, seed, restype, guard_bytes, err.fileno(), neutral))
        proc.start()
        send.close()
        try:
            if not recv.poll(timeout):
                proc.kill()
                proc.join()
                raise SimTimeout(f"{name}() did not finish within {timeout:g}s in the CUDA simulator "
                                 "(a spin loop, or a problem too large to simulate)", stderr=_read(err))
            try:
                run, arrays = recv.recv()
            except EOFError:
                proc.join()
                code = proc.exitcode
                how = (f"signal {signal.Signals(-code).name}" if code is not None and code < 0
                       else f"exit status {code}")
                stderr = _read(err)
                raise SimCrash(f"{name}() died in the CUDA simulator ({how})"
                               + (f":\n{stderr[-2000:]}" if stderr else ""), exitcode=code, stderr=stderr) from None
            proc.join()
        finally:
            recv.close()
        if isinstance(run, Exception):
            raise run
        targets = [a for a in args if isinstance(a, np.ndarray)]
        for dst, src in zip(targets, arrays):
            np.copyto(dst, src)
        return dataclasses.replace(run, stderr=_read(err))


def _read(f: Any) -> str:
    f.flush()
    f.seek(0)
    return f.read().decode(errors="replace")
