"""Tests of the PolyBench kernel files and their harness (tests/polybench.py).

The C kernels are the ground truth for the transpiler, so they are checked
here against the harness spec table (signatures, via pycparser), for clean
compilation, for finite and input-dependent outputs, and, for a handful of
kernels, against independent numpy formulations of the algorithm.  Each
numpy check is shown to catch a small mutation (off-by-one) of its kernel.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pytest
from pycparser import c_ast, c_parser

from tests import polybench as pb
from tests.polybench import KERNEL_DIR, NAMES, make_args, run_c, spec

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gemm.c"
POLYBENCH_30 = (
    "2mm 3mm adi atax bicg cholesky correlation covariance deriche doitgen durbin fdtd-2d "
    "floyd-warshall gemm gemver gesummv gramschmidt heat-3d jacobi-1d jacobi-2d lu ludcmp mvt "
    "nussinov seidel-2d symm syr2k syrk trisolv trmm"
).split()
TIME_SIZES = {"tsteps", "tmax"}

Out = dict[str, np.ndarray]
Args = Mapping[str, "int | float | np.ndarray"]


def _args(name: str, seed: int) -> dict[str, int | float | np.ndarray]:
    return make_args(name, np.random.default_rng(seed))


# ---------------------------------------------------------------------------
# Files and spec table


def test_names_and_files() -> None:
    assert NAMES == POLYBENCH_30
    files = sorted(p.name for p in KERNEL_DIR.glob("*.c"))
    assert files == sorted(n.replace("-", "_") + ".c" for n in POLYBENCH_30)
    for name in NAMES:
        assert spec(name).path.is_file()
        assert spec(name).recipe in pb.RECIPES


def test_unknown_kernel() -> None:
    with pytest.raises(KeyError, match="unknown PolyBench kernel"):
        spec("gemmm")


@pytest.mark.parametrize("name", NAMES)
def test_compiles_without_warnings(name: str) -> None:
    build = pb.compile_c(spec(name).path)
    assert build.library.is_file()
    assert build.warnings == ""


@pytest.mark.parametrize("name", NAMES)
def test_file_style(name: str) -> None:
    text = spec(name).path.read_text()
    assert text.startswith("/* "), "starts with a comment saying what it computes"
    assert text.count("#pragma scop") == 1 and text.count("#pragma endscop") == 1
    assert text.index("#pragma scop") < text.index("#pragma endscop")
    assert set(re.findall(r"#include\s*(\S+)", text)) <= {"<math.h>"}
    assert not re.search(r"\bmain\s*\(", text)
    assert not re.search(r"\brestrict\b", text)
    assert not re.search(r"^\s*#\s*define", text, re.M)


def _parse(path: Path) -> c_ast.FileAST:
    # pycparser wants preprocessed input: drop comments and the <math.h>
    # include (calls need no prototypes to parse); keep #pragma lines.
    text = re.sub(r"/\*.*?\*/", " ", path.read_text(), flags=re.S)
    text = re.sub(r"^\s*#\s*include.*$", "", text, flags=re.M)
    return c_parser.CParser().parse(text, str(path))


def _param_of(decl: c_ast.Decl) -> tuple[str, str, tuple[str | int, ...]]:
    """(name, C element type, dims) of one parameter declaration."""
    dims: list[str | int] = []
    ty = decl.type
    while isinstance(ty, c_ast.ArrayDecl):
        d = ty.dim
        dims.append(d.name if isinstance(d, c_ast.ID) else int(d.value))
        ty = ty.type
    assert isinstance(ty, c_ast.TypeDecl) and isinstance(ty.type, c_ast.IdentifierType), decl
    return decl.name, " ".join(ty.type.names), tuple(dims)


@pytest.mark.parametrize("name", NAMES)
def test_signature_matches_spec(name: str) -> None:
    s = spec(name)
    funcs = {f.decl.name: f for f in _parse(s.path).ext if isinstance(f, c_ast.FuncDef)}
    assert s.function in funcs
    fdecl = funcs[s.function].decl.type
    assert " ".join(fdecl.type.type.names) == "void"
    got = [_param_of(p) for p in fdecl.args.params]
    want = [
        (p.name, "int" if p.kind == "size" else (p.elem if p.kind == "array" else p.kind), p.dims)
        for p in s.params
    ]
    assert got == want


def test_spec_sizes_are_small_and_distinct() -> None:
    for name in NAMES:
        sizes = spec(name).sizes
        assert all(2 <= v <= 13 for v in sizes.values()), name
        assert all(2 <= sizes[t] <= 3 for t in TIME_SIZES & set(sizes)), name
        extents = [v for k, v in sizes.items() if k not in TIME_SIZES]
        for i, a in enumerate(extents):
            for b in extents[i + 1 :]:
                assert max(a, b) % min(a, b) != 0, f"{name}: {a} and {b}"


# ---------------------------------------------------------------------------
# make_args


@pytest.mark.parametrize("name", NAMES)
def test_make_args_types(name: str) -> None:
    s = spec(name)
    args = _args(name, 0)
    assert list(args) == [p.name for p in s.params]
    for p in s.params:
        v = args[p.name]
        if p.kind in ("size", "int"):
            assert type(v) is int
        elif p.kind == "double":
            assert type(v) is float
        else:
            assert isinstance(v, np.ndarray) and v.flags.c_contiguous
            assert v.dtype == p.dtype and v.shape == p.shape(s.sizes)
    again = _args(name, 0)
    for k, v in args.items():
        np.testing.assert_array_equal(again[k], v)


def test_make_args_size_override() -> None:
    args = make_args("gemm", np.random.default_rng(0), {"nk": 4})
    assert (args["ni"], args["nj"], args["nk"]) == (7, 9, 4)
    assert args["A"].shape == (7, 4) and args["B"].shape == (4, 9)  # type: ignore[union-attr]
    with pytest.raises(KeyError):
        make_args("gemm", np.random.default_rng(0), {"n": 4})


def test_recipes() -> None:
    rng = np.random.default_rng(5)
    a = make_args("cholesky", rng)["A"]
    assert np.array_equal(a, a.T) and np.linalg.eigvalsh(a).min() > 0  # type: ignore[arg-type]
    for name in ("lu", "ludcmp"):
        a = np.asarray(make_args(name, rng)["A"])
        off = np.abs(a).sum(axis=1) - np.abs(np.diag(a))
        assert (np.abs(np.diag(a)) > off).all()
    args = make_args("floyd-warshall", rng)
    assert args["paths"].min() >= 1 and args["paths"].max() <= 999  # type: ignore[union-attr]
    args = make_args("nussinov", rng)
    assert set(np.unique(args["seq"])) <= {0, 1, 2, 3}  # type: ignore[arg-type]
    assert make_args("correlation", rng)["float_n"] == 11.0


# ---------------------------------------------------------------------------
# run_c on every kernel


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", NAMES)
def test_outputs_finite(name: str, seed: int) -> None:
    out = run_c(name, _args(name, seed))
    assert set(out) == {p.name for p in spec(name).arrays}
    for k, v in out.items():
        assert not (v.dtype.kind == "f" and not np.isfinite(v).all()), f"{name}.{k} not finite"


@pytest.mark.parametrize("name", NAMES)
def test_outputs_depend_on_inputs(name: str) -> None:
    a0, a1 = _args(name, 0), _args(name, 1)
    o0, o1 = run_c(name, a0), run_c(name, a1)
    written = [k for k in o0 if not np.array_equal(o0[k], a0[k])]
    assert written, f"{name}: the call modified no array"
    assert any(not np.array_equal(o0[k], o1[k]) for k in written)


@pytest.mark.parametrize("name", NAMES)
def test_run_c_leaves_caller_arrays_alone(name: str) -> None:
    args = _args(name, 3)
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    out = run_c(name, args)
    for k, v in before.items():
        np.testing.assert_array_equal(args[k], v)
    for k, v in out.items():
        assert not np.shares_memory(v, args[k])


def test_run_c_rejects_bad_arrays() -> None:
    args = _args("gemm", 0)
    with pytest.raises(ValueError, match="shape"):
        run_c("gemm", {**args, "A": np.zeros((7, 10))})
    with pytest.raises(TypeError, match="dtype"):
        run_c("gemm", {**args, "A": np.zeros((7, 11), dtype=np.float32)})
    with pytest.raises(KeyError, match="missing"):
        run_c("gemm", {k: v for k, v in args.items() if k != "B"})


def test_compile_cache_keyed_by_content(tmp_path: Path) -> None:
    src = tmp_path / "gemm.c"
    src.write_text(spec("gemm").path.read_text())
    first = pb.compile_c(src)
    assert pb.compile_c(src) == first
    src.write_text(src.read_text() + "\n")
    assert pb.compile_c(src).library != first.library
    bad = tmp_path / "bad.c"
    bad.write_text("void f(void) { return 1 }\n")
    with pytest.raises(RuntimeError, match="gcc failed"):
        pb.compile_c(bad)


# ---------------------------------------------------------------------------
# Independent numpy formulations


def _expect(args: Args, out: Out, **expected: np.ndarray) -> None:
    """Every array equals ``expected`` if given, else its input (unchanged)."""
    for k, v in out.items():
        want = expected.get(k, args[k])
        if v.dtype.kind == "f":
            np.testing.assert_allclose(v, want, rtol=1e-11, atol=1e-12, err_msg=k)
        else:
            np.testing.assert_array_equal(v, want, err_msg=k)


def _check_gemm(a: Args, out: Out) -> None:
    _expect(a, out, C=a["alpha"] * (a["A"] @ a["B"]) + a["beta"] * a["C"])


def _check_atax(a: Args, out: Out) -> None:
    tmp = a["A"] @ a["x"]
    _expect(a, out, tmp=tmp, y=a["A"].T @ tmp)


def _check_jacobi_1d(a: Args, out: Out) -> None:
    A, B = a["A"].copy(), a["B"].copy()
    for _ in range(a["tsteps"]):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    _expect(a, out, A=A, B=B)


def _check_floyd_warshall(a: Args, out: Out) -> None:
    # Row and column k do not change in step k (weights >= 0), so the
    # vectorised step equals the in-place triple loop.
    P = a["paths"].copy()
    for k in range(a["n"]):
        P = np.minimum(P, P[:, k, None] + P[None, k, :])
    _expect(a, out, paths=P)


def _check_trisolv(a: Args, out: Out) -> None:
    _expect(a, out, x=np.linalg.solve(np.tril(a["L"]), a["b"]))


def _check_cholesky(a: Args, out: Out) -> None:
    # Lower triangle: the Cholesky factor; strict upper triangle: untouched.
    A = a["A"]
    _expect(a, out, A=np.tril(np.linalg.cholesky(A)) + np.triu(A, 1))


def _check_lu(a: Args, out: Out) -> None:
    n = a["n"]
    lu = out["A"]
    np.testing.assert_allclose((np.tril(lu, -1) + np.eye(n)) @ np.triu(lu), a["A"], rtol=1e-11, atol=1e-11)


def _check_durbin(a: Args, out: Out) -> None:
    r, n = a["r"], a["n"]
    idx = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    toeplitz = np.where(idx == 0, 1.0, r[np.maximum(idx - 1, 0)])
    _expect(a, out, y=np.linalg.solve(toeplitz, -r))


def _check_covariance(a: Args, out: Out) -> None:
    data = a["data"]
    _expect(a, out, mean=data.mean(axis=0), data=data - data.mean(axis=0), cov=np.cov(data, rowvar=False))


CHECKS: dict[str, Callable[[Args, Out], None]] = {
    "gemm": _check_gemm,
    "atax": _check_atax,
    "jacobi-1d": _check_jacobi_1d,
    "floyd-warshall": _check_floyd_warshall,
    "trisolv": _check_trisolv,
    "cholesky": _check_cholesky,
    "lu": _check_lu,
    "durbin": _check_durbin,
    "covariance": _check_covariance,
}

# One small, memory-safe bug per checked kernel: (text, replacement).
MUTANTS: dict[str, tuple[str, str]] = {
    "gemm": ("k < nk; k++", "k < nk - 1; k++"),
    "atax": ("for (i = 0; i < m; i++) {", "for (i = 1; i < m; i++) {"),
    "jacobi-1d": ("i < n - 1", "i < n - 2"),
    "floyd-warshall": ("for (k = 0; k < n; k++)", "for (k = 1; k < n; k++)"),
    "trisolv": ("j < i", "j <= i"),
    "cholesky": ("k < j", "k <= j"),
    "lu": ("for (j = i; j < n; j++)", "for (j = i + 1; j < n; j++)"),
    "durbin": ("r[k - i - 1] * y[i]", "r[k - i] * y[i]"),
    "covariance": ("for (j = i; j < m; j++)", "for (j = i + 1; j < m; j++)"),
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", sorted(CHECKS))
def test_matches_numpy(name: str, seed: int) -> None:
    args = _args(name, seed)
    CHECKS[name](args, run_c(name, args))


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_numpy_check_catches_mutant(name: str, tmp_path: Path) -> None:
    old, new = MUTANTS[name]
    text = spec(name).path.read_text()
    assert old in text
    mutant = tmp_path / spec(name).path.name
    mutant.write_text(text.replace(old, new, 1))
    args = _args(name, 0)
    with pytest.raises(AssertionError):
        CHECKS[name](args, run_c(name, args, source=mutant))


# ---------------------------------------------------------------------------
# examples/gemm.c


def test_example_gemm_runs(tmp_path: Path) -> None:
    exe = tmp_path / "gemm"
    subprocess.run(
        ["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Wno-unknown-pragmas", "-Werror",
         "-ffp-contract=off", "-o", str(exe), str(EXAMPLE)],
        check=True,
    )
    proc = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    assert re.fullmatch(r"gemm 200x220 checksum: \S+\n", proc.stdout)


def test_example_gemm_kernel_matches_numpy() -> None:
    args = _args("gemm", 4)
    _check_gemm(args, run_c("gemm", args, source=EXAMPLE))
