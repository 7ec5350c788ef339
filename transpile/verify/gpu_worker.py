"""The GPU-side process of stages (d)-(f): loads the candidate, runs it, times it.

A candidate must not be able to tell the verifier's process from a user's, nor a checking call
from a timed one (docs/verify.md, "Running the candidate as a user does").  So this module is
self-contained (it imports no ``transpile`` module: numpy, and cupy or libcudart) and
:mod:`transpile.verify.gpu` starts it as ``<python> -`` (the interpreter by its path) with this file's text fed on stdin and a
last line ``_start(R, W, orphan)`` appended: the command line, the process name and the open
files name nothing of the project; the environment is the parent's less the project's and
pytest's variables, the same for every worker of a run; every mode (check, time, fill seeds)
travels in the requests.  With ``orphan`` the process starts a new session and forks, and the
first child exits: the worker's parent becomes the system's (or the nearest subreaper), not
the verifier.  Requests and replies are length-prefixed pickles on two pipes, so whatever the
candidate prints cannot corrupt them; the worker's pid comes first.  ``python -m
transpile.verify.gpu_worker --detect`` prints a JSON line about the GPU and exits.

The CUDA runtime is reached through cupy when it is installed (``cupy.cuda.runtime``), else
through ``libcudart`` with ctypes; both expose the small API of :class:`Runtime`.  The
candidate library (built by nvcc, cudart linked statically) shares the device's primary context
with it, so device pointers, streams and events pass freely between them.  :class:`HostRuntime`
("device" memory in host memory, no GPU) is for the tests: a C library built by gcc plays the
candidate, and the protocol and stage (f)'s output checks run without a GPU.

The fill of fresh allocations is the linked-in ``include/gpu_interpose.cpp``'s; the worker sets
its seed before every call (``fill_seed``) and turns it off for timing, through the address the
parent found before the library's symbols were stripped (``fill_offset``).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import glob
import json
import os
import pickle
import select
import struct
import sys
import time
from typing import Any

import numpy as np

H2D, D2H, D2D = 1, 2, 3
NONBLOCKING = 1


class Channel:
    """Length-prefixed pickles over a pair of file descriptors."""

    def __init__(self, fd_in: int, fd_out: int) -> None:
        self.fd_in, self.fd_out = fd_in, fd_out

    def send(self, obj: Any) -> None:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(struct.pack("<Q", len(data)) + data)
        while view:
            n = os.write(self.fd_out, view)
            view = view[n:]

    def _read(self, n: int, deadline: float | None) -> bytes:
        chunks, left = [], n
        while left:
            if deadline is not None:
                wait = deadline - time.monotonic()
                if wait <= 0 or not select.select([self.fd_in], [], [], wait)[0]:
                    raise TimeoutError
            chunk = os.read(self.fd_in, min(left, 1 << 24))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def recv(self, timeout: float | None = None) -> Any:
        """The next message; raises ``TimeoutError`` or ``EOFError``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        (n,) = struct.unpack("<Q", self._read(8, deadline))
        return pickle.loads(self._read(n, deadline))


# ---------------------------------------------------------------------------
# The CUDA runtime


class CudaError(Exception):
    """A CUDA runtime call failed."""


class Runtime:
    """The runtime calls the worker needs (addresses and handles are ints)."""

    backend = "?"

    def device_count(self) -> int:
        raise NotImplementedError

    def device_name(self) -> str:
        raise NotImplementedError

    def malloc(self, n: int) -> int:
        raise NotImplementedError

    def free(self, p: int) -> None:
        raise NotImplementedError

    def memcpy(self, dst: int, src: int, n: int, kind: int) -> None:
        raise NotImplementedError

    def memcpy_async(self, dst: int, src: int, n: int, kind: int, stream: int) -> None:
        raise NotImplementedError

    def stream_create(self) -> int:
        raise NotImplementedError

    def stream_sync(self, s: int) -> None:
        raise NotImplementedError

    def event_create(self) -> int:
        raise NotImplementedError

    def event_record(self, e: int, s: int) -> None:
        raise NotImplementedError

    def event_sync(self, e: int) -> None:
        raise NotImplementedError

    def elapsed_ms(self, a: int, b: int) -> float:
        raise NotImplementedError

    def device_sync(self) -> None:
        raise NotImplementedError

    def memset(self, p: int, value: int, n: int) -> None:
        raise NotImplementedError



class CupyRuntime(Runtime):
    """``cupy.cuda.runtime``."""

    backend = "cupy"

    def __init__(self) -> None:
        import cupy  # type: ignore[import-not-found]  # optional: the 'gpu' extra

        self.rt = cupy.cuda.runtime
        self.err = cupy.cuda.runtime.CUDARuntimeError

    def _c(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except self.err as e:
            raise CudaError(str(e)) from None

    def device_count(self) -> int:
        return int(self._c(self.rt.getDeviceCount))

    def device_name(self) -> str:
        name = self._c(self.rt.getDeviceProperties, 0).get("name", b"")
        return name.decode() if isinstance(name, bytes) else str(name)

    def malloc(self, n: int) -> int:
        return int(self._c(self.rt.malloc, max(n, 1)))

    def free(self, p: int) -> None:
        self._c(self.rt.free, p)

    def memcpy(self, dst: int, src: int, n: int, kind: int) -> None:
        if n:
            self._c(self.rt.memcpy, dst, src, n, kind)

    def memcpy_async(self, dst: int, src: int, n: int, kind: int, stream: int) -> None:
        if n:
            self._c(self.rt.memcpyAsync, dst, src, n, kind, stream)

    def stream_create(self) -> int:
        return int(self._c(self.rt.streamCreateWithFlags, NONBLOCKING))

    def stream_sync(self, s: int) -> None:
        self._c(self.rt.streamSynchronize, s)

    def event_create(self) -> int:
        return int(self._c(self.rt.eventCreate))

    def event_record(self, e: int, s: int) -> None:
        self._c(self.rt.eventRecord, e, s)

    def event_sync(self, e: int) -> None:
        self._c(self.rt.eventSynchronize, e)

    def elapsed_ms(self, a: int, b: int) -> float:
        return float(self._c(self.rt.eventElapsedTime, a, b))

    def device_sync(self) -> None:
        self._c(self.rt.deviceSynchronize)

    def memset(self, p: int, value: int, n: int) -> None:
        self._c(self.rt.memset, p, value, n)


def find_cudart() -> str | None:
    """The path of ``libcudart.so`` (ctypes' search, then the usual CUDA directories)."""
    name = ctypes.util.find_library("cudart")
    if name:
        return name
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for root in filter(None, roots):
        hits = sorted(glob.glob(os.path.join(root, "lib64", "libcudart.so*")))
        if hits:
            return hits[0]
    return None


class CudartRuntime(Runtime):
    """``libcudart`` through ctypes (when cupy is not installed)."""

    backend = "cudart"

    def __init__(self, path: str) -> None:
        self.lib = ctypes.CDLL(path)
        self.lib.cudaGetErrorName.restype = ctypes.c_char_p
        self.lib.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.lib.cudaMemcpyAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                             ctypes.c_void_p]
        self.lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        self.lib.cudaFree.argtypes = [ctypes.c_void_p]
        for fn in ("cudaStreamSynchronize", "cudaEventSynchronize"):
            getattr(self.lib, fn).argtypes = [ctypes.c_void_p]
        self.lib.cudaEventRecord.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self.lib.cudaEventElapsedTime.argtypes = [ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_void_p]

    def _c(self, code: int, what: str) -> None:
        if code:
            name = self.lib.cudaGetErrorName(code)
            raise CudaError(f"{what}: {name.decode() if name else code}")

    def device_count(self) -> int:
        n = ctypes.c_int(0)
        self._c(self.lib.cudaGetDeviceCount(ctypes.byref(n)), "cudaGetDeviceCount")
        return n.value

    def device_name(self) -> str:
        return "CUDA device 0"

    def malloc(self, n: int) -> int:
        p = ctypes.c_void_p()
        self._c(self.lib.cudaMalloc(ctypes.byref(p), max(n, 1)), "cudaMalloc")
        return int(p.value or 0)

    def free(self, p: int) -> None:
        self._c(self.lib.cudaFree(ctypes.c_void_p(p)), "cudaFree")

    def memcpy(self, dst: int, src: int, n: int, kind: int) -> None:
        if n:
            self._c(self.lib.cudaMemcpy(ctypes.c_void_p(dst), ctypes.c_void_p(src), n, kind), "cudaMemcpy")

    def memcpy_async(self, dst: int, src: int, n: int, kind: int, stream: int) -> None:
        if n:
            self._c(self.lib.cudaMemcpyAsync(ctypes.c_void_p(dst), ctypes.c_void_p(src), n, kind,
                                             ctypes.c_void_p(stream)), "cudaMemcpyAsync")

    def stream_create(self) -> int:
        s = ctypes.c_void_p()
        self._c(self.lib.cudaStreamCreateWithFlags(ctypes.byref(s), NONBLOCKING), "cudaStreamCreateWithFlags")
        return int(s.value or 0)

    def stream_sync(self, s: int) -> None:
        self._c(self.lib.cudaStreamSynchronize(ctypes.c_void_p(s)), "cudaStreamSynchronize")

    def event_create(self) -> int:
        e = ctypes.c_void_p()
        self._c(self.lib.cudaEventCreate(ctypes.byref(e)), "cudaEventCreate")
        return int(e.value or 0)

    def event_record(self, e: int, s: int) -> None:
        self._c(self.lib.cudaEventRecord(ctypes.c_void_p(e), ctypes.c_void_p(s)), "cudaEventRecord")

    def event_sync(self, e: int) -> None:
        self._c(self.lib.cudaEventSynchronize(ctypes.c_void_p(e)), "cudaEventSynchronize")

    def elapsed_ms(self, a: int, b: int) -> float:
        ms = ctypes.c_float()
        self._c(self.lib.cudaEventElapsedTime(ctypes.byref(ms), ctypes.c_void_p(a), ctypes.c_void_p(b)),
                "cudaEventElapsedTime")
        return float(ms.value)

    def device_sync(self) -> None:
        self._c(self.lib.cudaDeviceSynchronize(), "cudaDeviceSynchronize")

    def memset(self, p: int, value: int, n: int) -> None:
        self._c(self.lib.cudaMemset(ctypes.c_void_p(p), value, ctypes.c_size_t(n)), "cudaMemset")


class HostRuntime(Runtime):
    """No GPU: "device" memory is host memory, copies are memmoves, streams and events are the host's
    clock.  For the tests (a gcc-built library plays the candidate); chosen by the load request."""

    backend = "host"

    def __init__(self) -> None:
        self.blocks: dict[int, Any] = {}
        self.events: dict[int, float] = {}

    def device_count(self) -> int:
        return 1

    def device_name(self) -> str:
        return "host (no GPU)"

    def malloc(self, n: int) -> int:
        buf = ctypes.create_string_buffer(max(n, 1))
        p = ctypes.addressof(buf)
        self.blocks[p] = buf
        return p

    def free(self, p: int) -> None:
        self.blocks.pop(p, None)

    def memcpy(self, dst: int, src: int, n: int, kind: int) -> None:
        if n:
            ctypes.memmove(dst, src, n)

    def memcpy_async(self, dst: int, src: int, n: int, kind: int, stream: int) -> None:
        self.memcpy(dst, src, n, kind)

    def stream_create(self) -> int:
        return 0

    def stream_sync(self, s: int) -> None:
        pass

    def event_create(self) -> int:
        e = len(self.events) + 1
        self.events[e] = 0.0
        return e

    def event_record(self, e: int, s: int) -> None:
        self.events[e] = time.perf_counter()

    def event_sync(self, e: int) -> None:
        pass

    def elapsed_ms(self, a: int, b: int) -> float:
        return (self.events[b] - self.events[a]) * 1e3

    def device_sync(self) -> None:
        pass

    def memset(self, p: int, value: int, n: int) -> None:
        ctypes.memset(p, value, n)


def runtime(kind: str = "") -> Runtime:
    """cupy's runtime if cupy imports, else libcudart's; raises ``RuntimeError`` if neither.
    ``kind`` "host": :class:`HostRuntime` (the tests' stand-in)."""
    if kind == "host":
        return HostRuntime()
    try:
        return CupyRuntime()
    except ImportError:
        pass
    path = find_cudart()
    if path is None:
        raise RuntimeError("no CUDA runtime: cupy is not installed and libcudart was not found")
    return CudartRuntime(path)


# ---------------------------------------------------------------------------
# Calls

_CT = {
    "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
    "u8": ctypes.c_uint8, "u16": ctypes.c_uint16, "u32": ctypes.c_uint32, "u64": ctypes.c_uint64,
    "f32": ctypes.c_float, "f64": ctypes.c_double,
}
Params = list[tuple[str, str, bool, str]]  # (name, scalar type, is array, intent; 'ret': the return slot)


def _dropin(fn: Any, params: Params) -> Any:
    """``fn`` set up as the drop-in (C signature); returns a function of the call's result that stores a
    returned value in the return slot's host array (given its address), or does nothing."""
    slot = next(((n, ty) for n, ty, _, intent in params if intent == "ret"), None)
    fn.argtypes = _args(params, {n: 0 for n, *_ in params}, {n: 0 for n, *_ in params}, dropin=True)[0]
    fn.restype = None if slot is None else _CT[slot[1]]

    def store(value: Any, ptrs: dict[str, int]) -> None:
        if slot is not None:
            ctypes.cast(ctypes.c_void_p(ptrs[slot[0]]), ctypes.POINTER(fn.restype))[0] = value

    return store


def _args(params: Params, inputs: dict[str, Any], ptrs: dict[str, int], *, dropin: bool = False
          ) -> tuple[list[Any], list[Any]]:
    """argtypes and values; ``dropin``: the C signature, without a return slot (intent ``ret``)."""
    types: list[Any] = []
    values: list[Any] = []
    for name, ty, is_array, intent in params:
        if dropin and intent == "ret":
            continue
        if is_array:
            types.append(ctypes.c_void_p)
            values.append(ctypes.c_void_p(ptrs[name]))
        else:
            types.append(_CT[ty])
            values.append(_CT[ty](inputs[name].item() if hasattr(inputs[name], "item") else inputs[name]))
    return types, values


GUARD_BYTES = 256
"""Bytes of guard zone on each side of every host buffer (as ``checks.GUARD_BYTES``)."""


class HostBuffers:
    """Host copies of the array arguments, each between guard zones of random bytes.

    (The worker's own copy of ``checks.HostBuffers``: this module imports no project module.)
    :meth:`load` writes new inputs into the same buffers (a call on the same addresses)."""

    def __init__(self, arrays: dict[str, np.ndarray], pattern_seed: int = 0) -> None:
        rng = np.random.default_rng(pattern_seed)
        self.raw: dict[str, np.ndarray] = {}
        self.views: dict[str, np.ndarray] = {}
        self.guards: dict[str, np.ndarray] = {}
        for name, a in arrays.items():
            a = np.ascontiguousarray(a)
            raw = np.empty(GUARD_BYTES * 2 + a.nbytes + a.dtype.itemsize, dtype=np.uint8)
            raw[:GUARD_BYTES] = rng.integers(0, 256, GUARD_BYTES, dtype=np.uint8)
            raw[GUARD_BYTES + a.nbytes:] = rng.integers(0, 256, raw.size - GUARD_BYTES - a.nbytes, dtype=np.uint8)
            self.views[name] = raw[GUARD_BYTES:GUARD_BYTES + a.nbytes].view(a.dtype).reshape(a.shape)
            self.views[name][...] = a
            self.raw[name] = raw
            self.guards[name] = np.concatenate([raw[:GUARD_BYTES], raw[GUARD_BYTES + a.nbytes:]])

    def fits(self, arrays: dict[str, np.ndarray]) -> bool:
        return set(arrays) == set(self.views) and all(
            self.views[n].shape == a.shape and self.views[n].dtype == a.dtype for n, a in arrays.items())

    def load(self, arrays: dict[str, np.ndarray]) -> None:
        for n, a in arrays.items():
            self.views[n][...] = a

    def address(self, name: str) -> int:
        return int(self.raw[name].ctypes.data) + GUARD_BYTES

    def violations(self) -> list[str]:
        out = []
        for name, raw in self.raw.items():
            n = self.views[name].nbytes
            g = self.guards[name]
            before = int((raw[:GUARD_BYTES] != g[:GUARD_BYTES]).sum())
            after = int((raw[GUARD_BYTES + n:] != g[GUARD_BYTES:]).sum())
            if before or after:
                parts = ([f"{before} byte(s) before its start"] if before else []) + \
                        ([f"{after} byte(s) past its end"] if after else [])
                out.append(f"host array '{name}': {' and '.join(parts)} overwritten")
        return out

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: v.copy() for k, v in self.views.items()}


class _FillState(ctypes.Structure):
    """The fill switch of include/gpu_interpose.cpp (``FillState``)."""

    _fields_ = [("seed", ctypes.c_uint64), ("on", ctypes.c_int), ("pad", ctypes.c_int), ("count", ctypes.c_uint64)]


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _load_base(fn: Any) -> int:
    """The address the library holding function ``fn`` was loaded at (``dladdr``)."""
    try:
        dladdr = ctypes.CDLL(None).dladdr
    except AttributeError:  # glibc before 2.34: in libdl
        dladdr = ctypes.CDLL("libdl.so.2").dladdr
    info = _DlInfo()
    dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    if not dladdr(ctypes.cast(fn, ctypes.c_void_p), ctypes.byref(info)):
        raise OSError("dladdr found no library for the candidate's function")
    return int(info.dli_fbase or 0)


class Worker:
    """Holds the runtime and the loaded candidate."""

    def __init__(self, kind: str = "") -> None:
        self.rt = runtime(kind)
        self.lib: Any = None
        self.params: Params = []
        self.name = ""
        self.fill: _FillState | None = None
        self.host_bufs: HostBuffers | None = None
        self.dev_bufs: dict[str, tuple[int, int]] = {}  # name -> (pointer, bytes)

    def load(self, req: dict[str, Any]) -> dict[str, Any]:
        self.lib = ctypes.CDLL(req["lib"], mode=os.RTLD_LOCAL)
        self.params, self.name = req["params"], req["name"]
        try:  # a transpile drop-in with a host path: the GPU stages run its GPU code (stage (c) runs both)
            ctypes.c_int.in_dll(self.lib, "transpile_dropin_path_mode").value = 0
        except ValueError:
            pass
        device = req.get("device", False)
        try:
            self.lib[f"{self.name}_device"]
        except AttributeError:
            device = False
        offset = req.get("fill_offset")
        if offset is not None:
            base = _load_base(self.lib[self.name])
            self.fill = _FillState.from_address(base + int(offset))
        return {"device": device, "backend": self.rt.backend, "gpu": self.rt.device_name(),
                "fill": self.fill is not None}

    def _set_fill(self, seed: int | None) -> None:
        """Fill every allocation the candidate makes from ``seed`` on; None: no fill (timing)."""
        if self.fill is not None:
            self.fill.on = 0
            if seed is not None:
                self.fill.seed, self.fill.count, self.fill.on = seed & (2**64 - 1), 0, 1

    def _error_after(self) -> str:
        try:
            self.rt.device_sync()
        except CudaError as e:
            return str(e)
        return ""

    def dirty(self, nbytes: int, value: int) -> None:
        """Fill device memory the allocator is about to hand out with byte ``value``.

        Fresh GPU memory tends to be zero; the interposed allocation calls fill what the candidate
        allocates itself, and this makes memory reached any other way (a pool a previous call
        freed into, the driver's reuse of pages) hold the call's own byte too."""
        sizes = [nbytes] + [s for s in (256, 4096, 65536, 1 << 20, 4 << 20) for _ in range(4)]
        blocks = []
        try:
            for n in sizes:
                p = self.rt.malloc(n)
                blocks.append(p)
                self.rt.memset(p, value, n)
            self.rt.device_sync()
        except CudaError:
            pass
        for p in blocks:
            try:
                self.rt.free(p)
            except CudaError:
                pass

    def run(self, req: dict[str, Any]) -> dict[str, Any]:
        """One call of the drop-in (host arrays with guard zones) or of NAME_device (device pointers).

        ``same_buffers``: the call's inputs are written into the buffers of the previous call of the
        same kind (same addresses); else new buffers are allocated while the old ones are still
        held (so the addresses differ)."""
        inputs = req["inputs"]
        arrays = {n: np.ascontiguousarray(inputs[n]) for n, _, a, _ in self.params if a}
        seed = int(req.get("fill_seed", 0))
        self._set_fill(seed)
        if req.get("dirty", True) and not isinstance(self.rt, HostRuntime):
            self.dirty(int(min(2 << 30, max(64 << 20, 4 * sum(a.nbytes for a in arrays.values())))),
                       (seed >> 8) & 0xFF)
        if not req.get("device"):
            if req.get("same_buffers") and self.host_bufs is not None and self.host_bufs.fits(arrays):
                bufs = self.host_bufs
                bufs.load(arrays)
            else:
                bufs = HostBuffers(arrays, pattern_seed=req.get("pattern", 0))
            self.host_bufs = bufs
            addresses = {n: bufs.address(n) for n in arrays}
            _, values = _args(self.params, inputs, addresses, dropin=True)
            fn = self.lib[self.name]
            store = _dropin(fn, self.params)
            t0 = time.perf_counter()
            store(fn(*values), addresses)
            err = self._error_after()
            secs = time.perf_counter() - t0
            self._set_fill(None)
            return {"arrays": bufs.arrays(), "host_guard": bufs.violations(), "error": err, "seconds": secs}
        host = {n: a.copy() for n, a in arrays.items()}
        same = bool(req.get("same_buffers")) and {n: a.nbytes for n, a in host.items()} == \
            {n: b for n, (_, b) in self.dev_bufs.items()}
        old = self.dev_bufs
        dev = {n: p for n, (p, _) in old.items()} if same else {n: self.rt.malloc(a.nbytes) for n, a in host.items()}
        if not same:
            for p, _ in old.values():
                self.rt.free(p)
        self.dev_bufs = {n: (dev[n], a.nbytes) for n, a in host.items()}
        for n, a in host.items():
            self.rt.memcpy(dev[n], a.ctypes.data, a.nbytes, H2D)
        # A cudaMemcpy from pageable memory may return before its DMA reaches the device, and the
        # non-blocking stream below does not wait for the legacy stream: settle the copies first.
        self.rt.device_sync()
        stream = self.rt.stream_create()
        types, values = _args(self.params, inputs, dev)
        fn = self.lib[f"{self.name}_device"]
        fn.restype, fn.argtypes = ctypes.c_int, [*types, ctypes.c_void_p]
        ret = int(fn(*values, ctypes.c_void_p(stream)))
        self.rt.stream_sync(stream)
        # Read back through the same non-blocking stream: it waits for nothing else, so work
        # the call left on other streams is not waited for (and shows up as wrong results).
        for n, a in host.items():
            self.rt.memcpy_async(a.ctypes.data, dev[n], a.nbytes, D2H, stream)
        self.rt.stream_sync(stream)
        err = self._error_after()
        self._set_fill(None)
        return {"arrays": host, "host_guard": [], "ret": ret, "error": err}

    def _samples(self, ptrs: dict[str, int], arrays: dict[str, np.ndarray], outputs: list[str],
                 rng: np.random.Generator, count: int, whole: bool) -> dict[str, Any]:
        """Sampled elements (indices, values) of each output at ``ptrs`` (device), or whole arrays."""
        got: dict[str, Any] = {}
        for n in outputs:
            a = arrays[n]
            if whole or a.nbytes <= (1 << 20):
                full = np.empty_like(a)
                self.rt.memcpy(full.ctypes.data, ptrs[n], a.nbytes, D2H)
                if whole:
                    got[n] = full
                    continue
            idx = np.unique(rng.integers(0, a.size, min(count, a.size))) if a.size else np.zeros(0, np.int64)
            if a.nbytes <= (1 << 20):
                vals = full.reshape(-1)[idx]
            else:
                vals = np.empty(idx.size, dtype=a.dtype)
                for j, i in enumerate(idx):
                    self.rt.memcpy(vals[j:].ctypes.data, ptrs[n] + int(i) * a.itemsize, a.itemsize, D2H)
            got[n] = (idx, vals)
        return got

    def time(self, req: dict[str, Any], chan: Channel) -> dict[str, Any]:
        """Timing: rotated input sets on the device, warm-up, CUDA events on a non-blocking stream.

        Every call's outputs are read back after it (outside the timed window): sampled elements
        (``samples`` per output, new indices each call), and the last timed call's whole; the
        outputs of that set are then restored from a pristine device copy (poison for ``out``
        arrays, the inputs for ``inout`` ones), so each call starts from its set's inputs."""
        sets = req["sets"]
        outputs = list(req.get("outputs", []))
        count = int(req.get("samples", 64))
        rng = np.random.default_rng(int(req.get("sample_seed", 0)))
        names = [n for n, _, a, _ in self.params if a]
        arrays = [{n: np.ascontiguousarray(x[n]) for n in names} for x in sets]
        out: dict[str, Any] = {"event_ms": [], "host_ms": [], "sync_ms": [], "dropin_ms": [], "errors": [],
                               "calls": [], "last": None, "last_dropin": None}
        device = req.get("device", False)
        self._set_fill(None)  # no fill while timing: it is the verifier's work, not the candidate's
        if device:
            bufs, pristine = [], []
            for x in arrays:
                ptrs, keep = {}, {}
                for n, a in x.items():
                    ptrs[n] = self.rt.malloc(a.nbytes)
                    self.rt.memcpy(ptrs[n], a.ctypes.data, a.nbytes, H2D)
                    if n in outputs:
                        keep[n] = self.rt.malloc(a.nbytes)
                        self.rt.memcpy(keep[n], a.ctypes.data, a.nbytes, H2D)
                bufs.append(ptrs)
                pristine.append(keep)
            self.rt.device_sync()  # the copies above are on the legacy stream (see run())
            stream = self.rt.stream_create()
            e0, e1 = self.rt.event_create(), self.rt.event_create()
            fn = self.lib[f"{self.name}_device"]
            types, _ = _args(self.params, sets[0], bufs[0])
            fn.restype, fn.argtypes = ctypes.c_int, [*types, ctypes.c_void_p]
            calls = [_args(self.params, x, p)[1] for x, p in zip(sets, bufs)]
            k_sets = len(sets)

            def after(i: int, k: int, timed: bool, last: bool) -> None:
                self.rt.device_sync()
                got = self._samples(bufs[k], arrays[k], outputs, rng, count, whole=False)
                out["calls"].append({"set": k, "timed": timed, "samples": got})
                if last:
                    out["last"] = {"set": k, "call": len(out["calls"]) - 1,
                                   "arrays": self._samples(bufs[k], arrays[k], outputs, rng, count, whole=True)}
                for n, p in pristine[k].items():  # the set starts from its inputs again
                    self.rt.memcpy(bufs[k][n], p, arrays[k][n].nbytes, D2D)
                self.rt.device_sync()  # (a legacy-stream copy: the next call's stream does not wait for it)

            for i in range(int(req.get("warmup", 3))):
                ret = int(fn(*calls[i % k_sets], ctypes.c_void_p(stream)))
                self.rt.stream_sync(stream)
                if ret:
                    out["errors"].append(ret)
                after(i, i % k_sets, False, False)
            self.rt.device_sync()
            # The parent reads its clock when this event arrives and answers; timing starts only after
            # the answer, so its wall-clock window holds ours even when it reads the event late.
            chan.send({"event": "timing-start", "ack": True})
            chan.recv()
            t_start = time.perf_counter()
            iters = int(req.get("iters", 20))
            for i in range(iters):
                self.rt.device_sync()  # every measurement starts from an idle device
                h0 = time.perf_counter()
                self.rt.event_record(e0, stream)
                ret = int(fn(*calls[i % k_sets], ctypes.c_void_p(stream)))
                self.rt.event_record(e1, stream)
                self.rt.event_sync(e1)
                h1 = time.perf_counter()
                self.rt.device_sync()
                h2 = time.perf_counter()
                out["event_ms"].append(self.rt.elapsed_ms(e0, e1))
                out["host_ms"].append((h1 - h0) * 1e3)
                out["sync_ms"].append((h2 - h0) * 1e3)
                if ret:
                    out["errors"].append(ret)
                stop = i + 1 >= iters or (i >= 2 and time.perf_counter() - t_start > float(req.get("max_seconds", 10.0)))
                t_check = time.perf_counter()
                after(i, i % k_sets, True, stop)
                t_start += time.perf_counter() - t_check  # reading back is not the loop's time
                if stop:
                    break
            chan.send({"event": "timing-end", "count": len(out["event_ms"])})
            for ptrs in [*bufs, *pristine]:
                for p in ptrs.values():
                    self.rt.free(p)
        # The drop-in, host arrays in and out (copies included): what a C caller sees.
        fn = self.lib[self.name]
        store = _dropin(fn, self.params)
        n_dropin = int(req.get("dropin_iters", 3))
        for j in range(n_dropin):
            k = j % len(sets)
            mine = {n: a.copy() for n, a in arrays[k].items()}
            addresses = {n: a.ctypes.data for n, a in mine.items()}
            _, values = _args(self.params, sets[k], addresses, dropin=True)
            self.rt.device_sync()
            h0 = time.perf_counter()
            store(fn(*values), addresses)
            self.rt.device_sync()
            out["dropin_ms"].append((time.perf_counter() - h0) * 1e3)
            got = {}
            for n in outputs:
                a = mine[n]
                idx = np.unique(rng.integers(0, a.size, min(count, a.size))) if a.size else np.zeros(0, np.int64)
                got[n] = (idx, a.reshape(-1)[idx].copy())
            out["calls"].append({"set": k, "timed": True, "dropin": True, "samples": got})
            if j == n_dropin - 1:
                out["last_dropin"] = {"set": k, "call": len(out["calls"]) - 1, "arrays": {n: mine[n] for n in outputs}}
        return out


def _detect() -> dict[str, Any]:
    try:
        rt = runtime()
        n = rt.device_count()
        return {"count": n, "backend": rt.backend, "name": rt.device_name() if n else ""}
    except (RuntimeError, CudaError, OSError) as e:
        return {"count": 0, "error": str(e)}


def serve(chan: Channel) -> int:
    """The worker's request loop."""
    worker: Worker | None = None
    while True:
        try:
            req = chan.recv()
        except EOFError:
            return 0
        op = req.get("op")
        try:
            if op == "exit":
                chan.send({"ok": True})
                return 0
            if worker is None:
                worker = Worker(req.get("runtime", ""))
            if op == "load":
                chan.send({"ok": True, **worker.load(req)})
            elif op == "run":
                chan.send({"ok": True, **worker.run(req)})
            elif op == "time":
                chan.send({"ok": True, **worker.time(req, chan)})
            else:
                chan.send({"ok": False, "error": f"unknown request {op!r}"})
        except (CudaError, RuntimeError, OSError, AttributeError, ValueError, KeyError) as e:
            chan.send({"ok": False, "error": f"{type(e).__name__}: {e}"})


def _start(fd_in: int, fd_out: int, orphan: bool) -> None:
    """The entry point of the worker started as ``<python> -`` (see the module docstring)."""
    import faulthandler

    faulthandler.enable()  # a crash of the candidate names its signal in the log
    if orphan:
        os.setsid()
        if os.fork():
            os._exit(0)
    chan = Channel(fd_in, fd_out)
    chan.send({"event": "hello", "pid": os.getpid()})
    sys.exit(serve(chan))


def source(fd_in: int, fd_out: int, orphan: bool) -> str:
    """The program fed to ``<python> -``: this module's text and the call of :func:`_start`."""
    with open(__file__, encoding="utf-8") as f:
        text = f.read()
    return f"{text}\n_start({int(fd_in)}, {int(fd_out)}, {bool(orphan)})\n"


def main(argv: list[str] | None = None) -> int:
    """``--detect``, or the request loop on ``--fd-in``/``--fd-out``."""
    ap = argparse.ArgumentParser(prog="gpu_worker")
    ap.add_argument("--detect", action="store_true")
    ap.add_argument("--fd-in", type=int)
    ap.add_argument("--fd-out", type=int)
    args = ap.parse_args(argv)
    if args.detect:
        print(json.dumps(_detect()), flush=True)
        return 0
    return serve(Channel(args.fd_in, args.fd_out))


if __name__ == "__main__" and len(sys.argv) > 1:  # run as ``<python> -`` the appended _start(...) line runs
    sys.exit(main())
