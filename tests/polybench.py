"""Test-side harness for the PolyBench/C 4.2 kernels in ``tests/kernels``.

Each kernel is described by a :class:`KernelSpec`: its C file, function name,
small test sizes, the kind of every parameter (in C order) and the name of the
input recipe that :func:`make_args` uses.  :func:`run_c` compiles the C file
with gcc (cached by content hash) and runs it through ctypes, so it is the
ground truth that the transpiler's output is compared against.

Sizes are chosen so a slow pure-Python interpreter finishes each kernel in
well under a second (roughly 20,000 innermost iterations at most), and so
that no two extents are equal or multiples of each other (a transposed or
swapped index then reads the wrong element instead of the right one by luck).

Typical use::

    rng = np.random.default_rng(0)
    args = make_args("gemm", rng)
    out = run_c("gemm", args)          # {"C": ..., "A": ..., "B": ...}
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

KERNEL_DIR: Path = Path(__file__).resolve().parent / "kernels"

#: gcc invocation for the reference build.  ``-ffp-contract=off`` keeps gcc
#: from fusing ``a*b + c`` into an FMA, so results are plain IEEE double
#: arithmetic in source order.  ``-Wno-unknown-pragmas`` because ``-Wall``
#: warns about ``#pragma scop``, which every kernel needs.
CC = "gcc"
CFLAGS: tuple[str, ...] = (
    "-std=c99", "-O2", "-fPIC", "-shared", "-ffp-contract=off",
    "-Wall", "-Wextra", "-Wno-unknown-pragmas",
)
LDLIBS: tuple[str, ...] = ("-lm",)

ParamKind = Literal["size", "int", "double", "array"]
ElemType = Literal["double", "int", "char"]

#: numpy dtype for each C element type used by the kernels.
DTYPES: dict[str, np.dtype] = {
    "double": np.dtype(np.float64),
    "int": np.dtype(np.int32),
    "char": np.dtype(np.int8),
}


@dataclass(frozen=True)
class Param:
    """One C parameter: ``kind`` is ``size`` (an ``int`` extent), ``int`` or
    ``double`` (a scalar), or ``array`` with element type ``elem`` and extents
    ``dims`` (names of size parameters, or integer constants)."""

    name: str
    kind: ParamKind
    elem: ElemType | None = None
    dims: tuple[str | int, ...] = ()

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of an array parameter's elements."""
        assert self.kind == "array" and self.elem is not None, self
        return DTYPES[self.elem]

    def shape(self, sizes: Mapping[str, int]) -> tuple[int, ...]:
        """The array's shape for the given size-parameter values."""
        return tuple(d if isinstance(d, int) else int(sizes[d]) for d in self.dims)


@dataclass(frozen=True)
class KernelSpec:
    """Everything the tests need to know about one PolyBench kernel."""

    name: str  # PolyBench spelling, e.g. "fdtd-2d"
    path: Path  # the C file
    function: str  # the C function, e.g. "kernel_fdtd_2d"
    sizes: Mapping[str, int]  # default (small) test sizes, in C parameter order
    params: tuple[Param, ...]  # all parameters, in C order
    recipe: str  # key into RECIPES: how make_args draws the inputs

    @property
    def arrays(self) -> tuple[Param, ...]:
        """The array parameters, in C order."""
        return tuple(p for p in self.params if p.kind == "array")

    def param(self, name: str) -> Param:
        """The parameter called ``name``."""
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"{self.name}: no parameter {name!r}")


_DECL = re.compile(r"^(double|int|char)\s+(\w+)((?:\[\w+\])*)$")


def _kernel(name: str, sizes: str, signature: str, recipe: str = "uniform") -> KernelSpec:
    """Build a spec from ``"ni=7 nj=9"`` sizes and the C parameter list after
    the sizes (``"double alpha, double C[ni][nj]"``), so the table reads like
    the C signatures it describes."""
    size_map = {k: int(v) for k, v in (item.split("=") for item in sizes.split())}
    params = [Param(s, "size") for s in size_map]
    for decl in filter(None, (d.strip() for d in signature.split(","))):
        m = _DECL.match(re.sub(r"\s+", " ", decl))
        assert m, f"{name}: cannot parse parameter {decl!r}"
        ctype, pname, dims_text = m.groups()
        dims = tuple(int(d) if d.isdigit() else d for d in re.findall(r"\[(\w+)\]", dims_text))
        for d in dims:
            assert isinstance(d, int) or d in size_map, f"{name}: {pname} uses unknown size {d!r}"
        if dims:
            params.append(Param(pname, "array", ctype, dims))  # type: ignore[arg-type]
        else:
            assert ctype in ("int", "double"), f"{name}: unsupported scalar {decl!r}"
            params.append(Param(pname, ctype))  # type: ignore[arg-type]
    file = KERNEL_DIR / (name.replace("-", "_") + ".c")
    function = "kernel_" + name.replace("-", "_")
    return KernelSpec(name, file, function, size_map, tuple(params), recipe)


# The table.  The signature strings repeat the C parameter lists after the
# leading size parameters; tests/test_polybench_c.py checks them against the
# C files with pycparser.
_SPECS: tuple[KernelSpec, ...] = (
    _kernel("2mm", "ni=7 nj=9 nk=11 nl=8",
            "double alpha, double beta, double tmp[ni][nj], double A[ni][nk], double B[nk][nj],"
            "double C[nj][nl], double D[ni][nl]"),
    _kernel("3mm", "ni=7 nj=9 nk=11 nl=8 nm=10",
            "double E[ni][nj], double A[ni][nk], double B[nk][nj], double F[nj][nl],"
            "double C[nj][nm], double D[nm][nl], double G[ni][nl]"),
    _kernel("adi", "tsteps=2 n=11",
            "double u[n][n], double v[n][n], double p[n][n], double q[n][n]"),
    _kernel("atax", "m=9 n=11", "double A[m][n], double x[n], double y[n], double tmp[m]"),
    _kernel("bicg", "m=9 n=11",
            "double A[n][m], double s[m], double q[n], double p[m], double r[n]"),
    _kernel("cholesky", "n=10", "double A[n][n]", recipe="spd"),
    _kernel("correlation", "m=8 n=11",
            "double float_n, double data[n][m], double corr[m][m], double mean[m], double stddev[m]",
            recipe="correlation"),
    _kernel("covariance", "m=8 n=11",
            "double float_n, double data[n][m], double cov[m][m], double mean[m]",
            recipe="float_n"),
    _kernel("deriche", "w=9 h=11",
            "double alpha, double imgIn[w][h], double imgOut[w][h], double y1[w][h], double y2[w][h]",
            recipe="deriche"),
    _kernel("doitgen", "nr=5 nq=6 np=7", "double A[nr][nq][np], double C4[np][np], double sum[np]"),
    _kernel("durbin", "n=12", "double r[n], double y[n]", recipe="durbin"),
    _kernel("fdtd-2d", "tmax=3 nx=8 ny=11",
            "double ex[nx][ny], double ey[nx][ny], double hz[nx][ny], double _fict_[tmax]"),
    _kernel("floyd-warshall", "n=9", "int paths[n][n]", recipe="path_weights"),
    _kernel("gemm", "ni=7 nj=9 nk=11",
            "double alpha, double beta, double C[ni][nj], double A[ni][nk], double B[nk][nj]"),
    _kernel("gemver", "n=11",
            "double alpha, double beta, double A[n][n], double u1[n], double v1[n], double u2[n],"
            "double v2[n], double w[n], double x[n], double y[n], double z[n]"),
    _kernel("gesummv", "n=11",
            "double alpha, double beta, double A[n][n], double B[n][n], double tmp[n],"
            "double x[n], double y[n]"),
    _kernel("gramschmidt", "m=10 n=7", "double A[m][n], double R[n][n], double Q[m][n]",
            recipe="full_rank"),
    _kernel("heat-3d", "tsteps=2 n=7", "double A[n][n][n], double B[n][n][n]"),
    _kernel("jacobi-1d", "tsteps=3 n=13", "double A[n], double B[n]"),
    _kernel("jacobi-2d", "tsteps=3 n=10", "double A[n][n], double B[n][n]"),
    _kernel("lu", "n=10", "double A[n][n]", recipe="diag_dominant"),
    _kernel("ludcmp", "n=10", "double A[n][n], double b[n], double x[n], double y[n]",
            recipe="diag_dominant"),
    _kernel("mvt", "n=11",
            "double x1[n], double x2[n], double y_1[n], double y_2[n], double A[n][n]"),
    _kernel("nussinov", "n=12", "char seq[n], int table[n][n]", recipe="rna"),
    _kernel("seidel-2d", "tsteps=2 n=9", "double A[n][n]"),
    _kernel("symm", "m=7 n=9",
            "double alpha, double beta, double C[m][n], double A[m][m], double B[m][n]"),
    _kernel("syr2k", "n=8 m=10",
            "double alpha, double beta, double C[n][n], double A[n][m], double B[n][m]"),
    _kernel("syrk", "n=8 m=10", "double alpha, double beta, double C[n][n], double A[n][m]"),
    _kernel("trisolv", "n=11", "double L[n][n], double x[n], double b[n]",
            recipe="lower_nonsingular"),
    _kernel("trmm", "m=7 n=9", "double alpha, double A[m][m], double B[m][n]"),
)

SPECS: dict[str, KernelSpec] = {s.name: s for s in _SPECS}
NAMES: list[str] = [s.name for s in _SPECS]


def spec(name: str) -> KernelSpec:
    """The spec of kernel ``name`` (PolyBench spelling, e.g. ``"fdtd-2d"``)."""
    try:
        return SPECS[name]
    except KeyError:
        raise KeyError(f"unknown PolyBench kernel {name!r}; known: {', '.join(NAMES)}") from None


# ---------------------------------------------------------------------------
# Inputs

Args = dict[str, int | float | np.ndarray]
Recipe = Callable[[Args, np.random.Generator], None]


def _uniform_args(s: KernelSpec, sizes: Mapping[str, int], rng: np.random.Generator) -> Args:
    """Default inputs: doubles uniform in [-1, 1], ints in [-100, 100]."""
    args: Args = {}
    for p in s.params:
        if p.kind == "size":
            args[p.name] = int(sizes[p.name])
        elif p.kind == "double":
            args[p.name] = float(rng.uniform(-1.0, 1.0))
        elif p.kind == "int":
            args[p.name] = int(rng.integers(-100, 101))
        elif p.elem == "double":
            args[p.name] = rng.uniform(-1.0, 1.0, size=p.shape(sizes))
        else:
            args[p.name] = rng.integers(-100, 101, size=p.shape(sizes)).astype(p.dtype)
    return args


def _recipe_uniform(args: Args, rng: np.random.Generator) -> None:
    """Keep the defaults."""


def _recipe_float_n(args: Args, rng: np.random.Generator) -> None:
    """``float_n`` is the number of observations, as PolyBench sets it."""
    args["float_n"] = float(args["n"])


def _recipe_correlation(args: Args, rng: np.random.Generator) -> None:
    """``float_n = n``; redraw any data column whose standard deviation is
    small, so the kernel's ``stddev <= eps`` fallback never decides the
    result by a hair."""
    _recipe_float_n(args, rng)
    data = args["data"]
    assert isinstance(data, np.ndarray)
    for j in range(data.shape[1]):
        while data[:, j].std() <= 0.3:
            data[:, j] = rng.uniform(-1.0, 1.0, size=data.shape[0])


def _recipe_spd(args: Args, rng: np.random.Generator) -> None:
    """Symmetric positive definite ``A = B B^T + n I`` (for Cholesky)."""
    n = int(args["n"])
    b = rng.uniform(-1.0, 1.0, size=(n, n))
    args["A"] = np.ascontiguousarray(b @ b.T + n * np.eye(n))


def _recipe_diag_dominant(args: Args, rng: np.random.Generator) -> None:
    """Strictly diagonally dominant ``A`` (off-diagonal in [-1, 1], diagonal
    +-[2n, 3n]), so LU without pivoting meets no small pivot."""
    n = int(args["n"])
    a = rng.uniform(-1.0, 1.0, size=(n, n))
    a[np.diag_indices(n)] = rng.choice([-1.0, 1.0], size=n) * rng.uniform(2 * n, 3 * n, size=n)
    args["A"] = a


def _recipe_full_rank(args: Args, rng: np.random.Generator) -> None:
    """``A`` (m x n, m >= n) with full column rank: uniform plus ``n I`` on
    its top square block."""
    a = args["A"]
    assert isinstance(a, np.ndarray) and a.shape[0] >= a.shape[1]
    n = a.shape[1]
    a[np.arange(n), np.arange(n)] += n


def _recipe_durbin(args: Args, rng: np.random.Generator) -> None:
    """``r`` in [-0.5, 0.5] / n: sum |r| < 1/2 makes the Toeplitz matrix
    diagonally dominant, so every reflection coefficient has |alpha| < 1 and
    ``beta`` stays positive."""
    n = int(args["n"])
    args["r"] = rng.uniform(-0.5, 0.5, size=n) / n


def _recipe_lower_nonsingular(args: Args, rng: np.random.Generator) -> None:
    """Lower triangle with diagonal +-[n, 2n], so forward substitution stays
    well conditioned."""
    n = int(args["n"])
    lower = args["L"]
    assert isinstance(lower, np.ndarray)
    lower[np.diag_indices(n)] = rng.choice([-1.0, 1.0], size=n) * rng.uniform(n, 2 * n, size=n)


def _recipe_path_weights(args: Args, rng: np.random.Generator) -> None:
    """Edge weights 1..100, about half of them replaced by 999 ("no edge",
    as in PolyBench's init), so many shortest paths take several hops.  All
    values are non-negative and a sum of two never overflows int."""
    paths = args["paths"]
    assert isinstance(paths, np.ndarray)
    weights = rng.integers(1, 101, size=paths.shape)
    weights[rng.random(size=paths.shape) < 0.5] = 999
    args["paths"] = weights.astype(np.int32)


def _recipe_rna(args: Args, rng: np.random.Generator) -> None:
    """Bases 0..3 (pairs summing to 3 match) and a zeroed score table, as
    PolyBench initialises it."""
    n = int(args["n"])
    args["seq"] = rng.integers(0, 4, size=n).astype(np.int8)
    args["table"] = np.zeros((n, n), dtype=np.int32)


def _recipe_deriche(args: Args, rng: np.random.Generator) -> None:
    """Positive filter parameter ``alpha`` in [0.1, 1] (PolyBench uses 0.25):
    the IIR recursions are stable only for alpha > 0."""
    args["alpha"] = float(rng.uniform(0.1, 1.0))


RECIPES: dict[str, Recipe] = {
    "uniform": _recipe_uniform,
    "float_n": _recipe_float_n,
    "correlation": _recipe_correlation,
    "spd": _recipe_spd,
    "diag_dominant": _recipe_diag_dominant,
    "full_rank": _recipe_full_rank,
    "durbin": _recipe_durbin,
    "lower_nonsingular": _recipe_lower_nonsingular,
    "path_weights": _recipe_path_weights,
    "rna": _recipe_rna,
    "deriche": _recipe_deriche,
}


def make_args(
    name: str, rng: np.random.Generator, sizes: Mapping[str, int] | None = None
) -> dict[str, int | float | np.ndarray]:
    """Fresh random inputs for kernel ``name``, keyed by parameter name.

    Sizes are Python ints, scalar doubles Python floats, arrays C-contiguous
    numpy arrays (float64 / int32 / int8 for double / int / char).  ``sizes``
    overrides some or all of the spec's default sizes.  Inputs follow the
    spec's recipe, so no kernel produces NaN or Inf on them.
    """
    s = spec(name)
    merged = dict(s.sizes)
    if sizes is not None:
        unknown = set(sizes) - set(merged)
        if unknown:
            raise KeyError(f"{name}: unknown size parameter(s) {sorted(unknown)}")
        merged.update({k: int(v) for k, v in sizes.items()})
    args = _uniform_args(s, merged, rng)
    RECIPES[s.recipe](args, rng)
    for p in s.arrays:
        arr = args[p.name]
        assert isinstance(arr, np.ndarray) and arr.dtype == p.dtype and arr.shape == p.shape(merged), p
        args[p.name] = np.ascontiguousarray(arr)
    return args


# ---------------------------------------------------------------------------
# Building and running the C reference


@dataclass(frozen=True)
class Build:
    """A compiled kernel: the shared library and gcc's diagnostics."""

    library: Path
    warnings: str


def cache_dir() -> Path:
    """Where compiled kernels are cached (``$TRANSPILE_CACHE_DIR/polybench``, else per user in the temp
    directory)."""
    root = os.environ.get("TRANSPILE_CACHE_DIR")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    d = Path(root) / "polybench" if root else Path(tempfile.gettempdir()) / f"transpile-polybench-{uid}"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _write_atomically(dest: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=dest.name + ".", suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, dest)


def compile_c(source: Path) -> Build:
    """Compile ``source`` with gcc into a shared library, cached by the hash
    of its content and the flags.

    Safe when several processes compile at once: each writes a unique temp
    file and renames it into place (``os.replace`` is atomic).  The log is
    renamed in before the library, so a cached library always has its log.
    Raises ``RuntimeError`` with gcc's output if compilation fails.
    """
    source = Path(source)
    text = source.read_bytes()
    key = hashlib.sha256(text + "\0".join((CC, *CFLAGS, *LDLIBS)).encode()).hexdigest()[:20]
    lib = cache_dir() / f"{source.stem}-{key}.so"
    log = lib.with_suffix(".log")
    if lib.exists() and log.exists():
        return Build(lib, log.read_text())
    fd, tmp = tempfile.mkstemp(dir=lib.parent, prefix=lib.stem + ".", suffix=".so.tmp")
    os.close(fd)
    try:
        proc = subprocess.run(
            [CC, *CFLAGS, "-o", tmp, str(source), *LDLIBS], capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise RuntimeError(f"gcc failed on {source}:\n{proc.stderr}")
        _write_atomically(log, proc.stderr.encode())
        os.replace(tmp, lib)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return Build(lib, proc.stderr)


_LIBS: dict[Path, ctypes.CDLL] = {}


def _load(library: Path) -> ctypes.CDLL:
    if library not in _LIBS:
        _LIBS[library] = ctypes.CDLL(str(library))
    return _LIBS[library]


def run_c(
    name: str, args: Mapping[str, int | float | np.ndarray], *, source: Path | None = None
) -> dict[str, np.ndarray]:
    """Run kernel ``name`` compiled by gcc on ``args`` (as from
    :func:`make_args`) and return every array argument after the call.

    The kernel works on copies: the caller's arrays are never modified, and
    the returned arrays are fresh.  ``source`` replaces the kernel's C file
    (same function name and signature), e.g. to run a mutated variant.
    Array shapes and dtypes are checked against the sizes in ``args`` first,
    since a wrong shape would make the C code read out of bounds.
    """
    s = spec(name)
    missing = [p.name for p in s.params if p.name not in args]
    if missing:
        raise KeyError(f"{name}: missing argument(s) {missing}")
    sizes = {p.name: int(args[p.name]) for p in s.params if p.kind == "size"}
    fn = getattr(_load(compile_c(source if source is not None else s.path).library), s.function)
    fn.restype = None
    c_args: list[object] = []
    arrays: dict[str, np.ndarray] = {}
    for p in s.params:
        value = args[p.name]
        if p.kind in ("size", "int"):
            c_args.append(ctypes.c_int(int(value)))  # type: ignore[arg-type]
        elif p.kind == "double":
            c_args.append(ctypes.c_double(float(value)))  # type: ignore[arg-type]
        else:
            arr = np.array(value, copy=True, order="C")
            if arr.dtype != p.dtype:
                raise TypeError(f"{name}: {p.name} has dtype {arr.dtype}, expected {p.dtype}")
            if arr.shape != p.shape(sizes):
                raise ValueError(f"{name}: {p.name} has shape {arr.shape}, expected {p.shape(sizes)}")
            arrays[p.name] = arr
            c_args.append(arr.ctypes.data_as(ctypes.c_void_p))
    fn(*c_args)
    return arrays
