"""The GPU stages' build of a candidate: as a user builds it, with the allocation fill linked in beside it.

``nvcc -O3 -arch=sm_90 -Xcompiler -fPIC -c k.cu``, run beside the file, with nothing of the
verifier's (no macro, no force-included header, no include path), then ``nvcc -shared`` of that
object and of include/gpu_interpose.cpp's with ``-Xlinker --wrap=X`` for each allocation call
(:data:`WRAPPED`): the linker sends the candidate's calls to the interposer, which calls the static
cudart's own and fills the new memory.  The interposer's symbols are hidden and then stripped
from the library's symbol table; the fill switch's offset, read with ``nm`` before, goes to the
worker (:class:`GpuLibrary`).  Cached by content (the file, the files it includes with quotes
from beside it, nvcc, the interposer).  docs/verify.md, "Running the candidate as a user does".
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from transpile.verify.reference import cache_dir

INTERPOSE = Path(__file__).resolve().parent / "include" / "gpu_interpose.cpp"
WRAPPED = ("cudaMalloc", "cudaMallocAsync", "cudaMallocAsync_ptsz", "cudaMallocFromPoolAsync",
           "cudaMallocFromPoolAsync_ptsz", "cudaMallocPitch", "cudaMalloc3D", "cudaMallocManaged",
           "cudaMallocHost", "cudaHostAlloc")
"""The allocation calls include/gpu_interpose.cpp interposes (``-Xlinker --wrap=X``)."""
ARCH = "sm_90"


@dataclass(frozen=True)
class GpuLibrary:
    """A built candidate: the shared library, and where the fill switch lives in it."""

    path: Path
    fill_offset: int | None


def user_compile(exe: str, cu_name: str, obj: Path) -> list[str]:
    """The candidate's compile, as a user writes it: nothing of the verifier's (run beside the file)."""
    return [exe, "-O3", f"-arch={ARCH}", "-Xcompiler", "-fPIC", "-c", cu_name, "-o", str(obj)]


def interpose_compile(exe: str, obj: Path) -> list[str]:
    """The compile of include/gpu_interpose.cpp (host code only; run in its directory)."""
    return [exe, "-O2", "-Xcompiler", "-fPIC", "-Xcompiler", "-fvisibility=hidden", "-c", INTERPOSE.name,
            "-o", str(obj)]


def link(exe: str, objs: list[Path], lib: Path) -> list[str]:
    """The shared library's link: the candidate's object, the interposer's, and one ``--wrap`` per call."""
    return [exe, f"-arch={ARCH}", "-shared", "-o", str(lib), *map(str, objs),
            "-Xlinker", ",".join(f"--wrap={name}" for name in WRAPPED)]


def _run(cmd: list[str], cwd: Path | None = None, timeout: float = 600) -> tuple[bool, str]:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        return False, f"{Path(cmd[0]).name} timed out after {timeout:g} s"
    except OSError as e:
        return False, f"{cmd[0]}: {e}"
    return proc.returncode == 0, proc.stdout + proc.stderr


def _symbols(path: Path, *flags: str) -> list[tuple[str, str, str]]:
    """(value, type, name) of ``nm`` on ``path`` (empty if nm fails)."""
    ok, out = _run(["nm", *flags, str(path)], timeout=60)
    rows = []
    for line in out.splitlines() if ok else ():
        parts = line.split()
        if len(parts) == 3:
            rows.append((parts[0], parts[1], parts[2]))
    return rows


def hide_interposer(lib: Path, interposer: Path) -> tuple[int | None, str]:
    """The fill switch's offset in ``lib``; then every symbol ``interposer`` defined (and its file
    name) is removed from ``lib``'s symbol table, so the library names only the candidate's own.
    (None, why) if the switch cannot be found."""
    ours = {name for _, _, name in _symbols(interposer, "--defined-only")}
    offset = next((int(v, 16) for v, _, name in _symbols(lib) if name == "fill_state"), None)
    if offset is None:
        return None, "the fill switch was not found in the linked library (nm)"
    if shutil.which("objcopy"):
        args = [f"--strip-symbol={name}" for name in sorted(ours | {INTERPOSE.name})]
        ok, out = _run(["objcopy", *args, str(lib)], timeout=120)
        if not ok:
            return offset, f"objcopy could not hide the interposer's symbols: {out.strip()[-200:]}"
    return offset, ""


def build_gpu_library(cu: Path) -> tuple[GpuLibrary | None, str]:
    """The candidate as a user builds it, with include/gpu_interpose.cpp linked in (cached by content);
    (library, tool output).

    ``nvcc -O3 -arch=sm_90 -Xcompiler -fPIC -c k.cu`` beside the file (so ``__FILE__`` is its own
    name), then ``nvcc -shared`` of that object and the interposer's with ``--wrap`` for each
    allocation call; the interposer's symbols are then stripped."""
    from transpile.sim.build import local_includes
    from transpile.toolchain import nvcc

    exe = nvcc()
    if exe is None:
        return None, "nvcc not found"
    text = cu.read_bytes()
    key = hashlib.sha256(b"\0".join([text, local_includes(cu, text.decode(errors="replace")).encode(),
                                     exe.encode(), INTERPOSE.read_bytes(), " ".join(WRAPPED).encode(),
                                     ARCH.encode()])).hexdigest()[:20]
    out = cache_dir("gpu")
    lib, meta = out / f"lib{cu.stem}-{key}.so", out / f"lib{cu.stem}-{key}.json"
    if lib.exists() and meta.exists():
        return GpuLibrary(lib, json.loads(meta.read_text()).get("fill_offset")), ""
    wrap_obj = out / f"interpose-{hashlib.sha256(INTERPOSE.read_bytes() + exe.encode()).hexdigest()[:16]}.o"
    log = []
    with tempfile.TemporaryDirectory() as d:
        if not wrap_obj.exists():
            tmp = Path(d) / "interpose.o"
            ok, output = _run(interpose_compile(exe, tmp), cwd=INTERPOSE.parent)
            if not ok:
                return None, "the interposer did not compile: " + output
            part = wrap_obj.with_name(f"{wrap_obj.name}.{os.getpid()}.tmp")
            shutil.copyfile(tmp, part)
            os.replace(part, wrap_obj)
        obj, tmp_lib = Path(d) / f"{cu.stem}.o", Path(d) / f"lib{cu.stem}.so"
        ok, output = _run(user_compile(exe, cu.name, obj), cwd=cu.parent.resolve())
        log.append(output)
        if not ok:
            return None, output
        ok, output = _run(link(exe, [obj, wrap_obj], tmp_lib))
        log.append(output)
        if not ok:
            return None, output
        offset, why = hide_interposer(tmp_lib, wrap_obj)
        if why:
            log.append(why)
        part = lib.with_name(f"{lib.name}.{os.getpid()}.tmp")
        shutil.copyfile(tmp_lib, part)
        meta.write_text(json.dumps({"fill_offset": offset}))
        os.replace(part, lib)
    return GpuLibrary(lib, offset), "".join(log)
