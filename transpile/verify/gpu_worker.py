"""The GPU-side process of stages (d)-(f): loads the candidate, runs it, times it.

Started by :mod:`transpile.verify.gpu` as ``python -m transpile.verify.gpu_worker
--fd-in R --fd-out W`` (a fresh interpreter: CUDA never initialises in the
verifier's own process, and a crash or hang of the candidate is the worker's,
reported by the parent).  Requests and replies are length-prefixed pickles on
two pipes, so whatever the candidate prints on stdout cannot corrupt them.
``--detect`` prints a JSON line about the GPU and exits.

The CUDA runtime is reached through cupy when it is installed
(``cupy.cuda.runtime``), else through ``libcudart`` with ctypes; both expose
the small API of :class:`Runtime`.  The candidate library (built by nvcc,
cudart linked statically) shares the device's primary context with it, so
device pointers, streams and events pass freely between them.
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

H2D, D2H = 1, 2
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


def runtime() -> Runtime:
    """cupy's runtime if cupy imports, else libcudart's; raises ``RuntimeError`` if neither."""
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


class Worker:
    """Holds the runtime and the loaded candidate."""

    def __init__(self) -> None:
        self.rt = runtime()
        self.lib: Any = None
        self.params: Params = []
        self.name = ""

    def load(self, req: dict[str, Any]) -> dict[str, Any]:
        self.lib = ctypes.CDLL(req["lib"], mode=os.RTLD_LOCAL)
        self.params, self.name = req["params"], req["name"]
        device = req.get("device", False)
        try:
            self.lib[f"{self.name}_device"]
        except AttributeError:
            device = False
        return {"device": device, "backend": self.rt.backend, "gpu": self.rt.device_name(),
                "poison": self._poison(True)}

    def _poison(self, on: bool) -> bool:
        """Turn the candidate's allocation poisoning (include/gpu_poison.h) on or off; False if absent."""
        try:
            flag = ctypes.c_int.in_dll(self.lib, "transpile_verify_poison")
        except ValueError:
            return False
        flag.value = int(on)
        return True

    def _error_after(self) -> str:
        try:
            self.rt.device_sync()
        except CudaError as e:
            return str(e)
        return ""

    def dirty(self, nbytes: int) -> None:
        """Fill device memory the allocator is about to hand out with 0xFF bytes (NaN for floats).

        Fresh GPU memory tends to be zero, which hides kernels that accumulate into
        buffers they never cleared; allocating, poisoning and freeing a block first
        makes the candidate's next cudaMalloc likely to return poisoned memory."""
        # Small blocks come from other allocator pools than large ones: poison a few of each size class.
        sizes = [nbytes] + [s for s in (256, 4096, 65536, 1 << 20, 4 << 20) for _ in range(4)]
        blocks = []
        try:
            for n in sizes:
                p = self.rt.malloc(n)
                blocks.append(p)
                self.rt.memset(p, 0xFF, n)
            self.rt.device_sync()
        except CudaError:
            pass
        for p in blocks:
            try:
                self.rt.free(p)
            except CudaError:
                pass

    def run(self, req: dict[str, Any]) -> dict[str, Any]:
        """One call of the drop-in (host arrays with guard zones) or of NAME_device (device pointers)."""
        from transpile.verify.checks import HostBuffers

        inputs = req["inputs"]
        arrays = {n: inputs[n] for n, _, a, _ in self.params if a}
        self._poison(True)
        self.dirty(int(min(2 << 30, max(64 << 20, 4 * sum(a.nbytes for a in arrays.values())))))
        if not req.get("device"):
            bufs = HostBuffers(arrays, pattern_seed=req.get("pattern", 0))
            addresses = {n: bufs.address(n) for n in arrays}
            _, values = _args(self.params, inputs, addresses, dropin=True)
            fn = self.lib[self.name]
            store = _dropin(fn, self.params)
            t0 = time.perf_counter()
            store(fn(*values), addresses)
            err = self._error_after()
            secs = time.perf_counter() - t0
            return {"arrays": bufs.arrays(), "host_guard": bufs.violations(), "error": err, "seconds": secs}
        host = {n: np.ascontiguousarray(a).copy() for n, a in arrays.items()}
        dev = {n: self.rt.malloc(a.nbytes) for n, a in host.items()}
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
        for p in dev.values():
            self.rt.free(p)
        return {"arrays": host, "host_guard": [], "ret": ret, "error": err}

    def time(self, req: dict[str, Any], chan: Channel) -> dict[str, Any]:
        """Timing: rotated input sets on the device, warm-up, CUDA events on a non-blocking stream."""
        inputs = req["inputs"]
        sets = max(1, int(req.get("sets", 2)))
        arrays = {n: np.ascontiguousarray(inputs[n]) for n, _, a, _ in self.params if a}
        out: dict[str, Any] = {"event_ms": [], "host_ms": [], "sync_ms": [], "dropin_ms": [], "errors": []}
        device = req.get("device", False)
        self._poison(False)  # the fill after each cudaMalloc is the verifier's, not the candidate's: do not time it
        if device:
            bufs = []
            for k in range(sets):  # set k: float inputs scaled by (1 + k/1024), so no two sets are equal
                ptrs = {}
                for n, a in arrays.items():
                    b = (a * (1 + k / 1024)).astype(a.dtype) if a.dtype.kind == "f" and k else a
                    ptrs[n] = self.rt.malloc(b.nbytes)
                    self.rt.memcpy(ptrs[n], np.ascontiguousarray(b).ctypes.data, b.nbytes, H2D)
                bufs.append(ptrs)
            self.rt.device_sync()  # the copies above are on the legacy stream (see run())
            stream = self.rt.stream_create()
            e0, e1 = self.rt.event_create(), self.rt.event_create()
            fn = self.lib[f"{self.name}_device"]
            types, _ = _args(self.params, inputs, bufs[0])
            fn.restype, fn.argtypes = ctypes.c_int, [*types, ctypes.c_void_p]
            calls = [_args(self.params, inputs, p)[1] for p in bufs]
            for i in range(int(req.get("warmup", 3))):
                fn(*calls[i % sets], ctypes.c_void_p(stream))
                self.rt.stream_sync(stream)
            self.rt.device_sync()
            # The parent reads its clock when this event arrives and answers; timing starts only after
            # the answer, so its wall-clock window holds ours even when it reads the event late.
            chan.send({"event": "timing-start", "ack": True})
            chan.recv()
            t_start = time.perf_counter()
            for i in range(int(req.get("iters", 20))):
                self.rt.device_sync()  # every measurement starts from an idle device
                h0 = time.perf_counter()
                self.rt.event_record(e0, stream)
                ret = int(fn(*calls[i % sets], ctypes.c_void_p(stream)))
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
                if i >= 2 and time.perf_counter() - t_start > float(req.get("max_seconds", 10.0)):
                    break
            chan.send({"event": "timing-end", "count": len(out["event_ms"])})
            for ptrs in bufs:
                for p in ptrs.values():
                    self.rt.free(p)
        # The drop-in, host arrays in and out (copies included): what a C caller sees.
        fn = self.lib[self.name]
        _dropin(fn, self.params)
        for _ in range(int(req.get("dropin_iters", 3))):
            mine = {n: a.copy() for n, a in arrays.items()}
            _, values = _args(self.params, inputs, {n: a.ctypes.data for n, a in mine.items()}, dropin=True)
            self.rt.device_sync()
            h0 = time.perf_counter()
            fn(*values)
            self.rt.device_sync()
            out["dropin_ms"].append((time.perf_counter() - h0) * 1e3)
        return out


def _detect() -> dict[str, Any]:
    try:
        rt = runtime()
        n = rt.device_count()
        return {"count": n, "backend": rt.backend, "name": rt.device_name() if n else ""}
    except (RuntimeError, CudaError, OSError) as e:
        return {"count": 0, "error": str(e)}


def main(argv: list[str] | None = None) -> int:
    """The worker's loop (or ``--detect``)."""
    ap = argparse.ArgumentParser(prog="transpile.verify.gpu_worker")
    ap.add_argument("--detect", action="store_true")
    ap.add_argument("--fd-in", type=int)
    ap.add_argument("--fd-out", type=int)
    args = ap.parse_args(argv)
    if args.detect:
        print(json.dumps(_detect()), flush=True)
        return 0
    from transpile.dropin_host import ENV as HOST_ENV

    os.environ[HOST_ENV] = "0"  # the GPU stages check the GPU path (the host path: stage (c)'s run H)
    chan = Channel(args.fd_in, args.fd_out)
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
                worker = Worker()
            if op == "load":
                chan.send({"ok": True, **worker.load(req)})
            elif op == "run":
                chan.send({"ok": True, **worker.run(req)})
            elif op == "time":
                chan.send({"ok": True, **worker.time(req, chan)})
            else:
                chan.send({"ok": False, "error": f"unknown request {op!r}"})
        except (CudaError, RuntimeError, OSError, AttributeError, ValueError) as e:
            chan.send({"ok": False, "error": f"{type(e).__name__}: {e}"})


if __name__ == "__main__":
    sys.exit(main())
