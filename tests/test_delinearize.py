"""Tests of passes/delinearize.py: hand-flattened pointers seen as the matrices they index."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from passes import REGISTRY, delinearize, deps
from passes import accesses as acc_mod
from tests import affine_nests, strategies
from tests.flatten import flatten
from transpile import cuda, ir, pipeline
from transpile.frontend import c as cfront
from transpile.ir import check as ircheck
from transpile.ir import interp, text


def _kernel(src: str) -> ir.Kernel:
    return cfront.parse_source(src, "t.c").kernels[0]


def _show(k: ir.Kernel) -> str:
    return text.show(ir.Module((), (k,)))


def test_registered() -> None:
    assert REGISTRY["delinearize"] is delinearize


SPLITS = [
    # rows of m
    ("void f(int n, int m, float a, float *x, const float *y) {"
     " for (int i = 0; i < n; i++) for (int j = 0; j < m; j++) x[i * m + j] = a * x[i * m + j] + y[i * m + j]; }",
     ["inout f32* x[n][m]", "in f32* y[n][m]", "x[i][j] = a * x[i][j] + y[i][j];"]),
    # three dimensions, a row offset written as a parameter multiple
    ("void f(int n, int m, int p, double *A, const double *C) {"
     " for (int i = 1; i < n; i++) for (int j = 0; j < m; j++) for (int k = 0; k < p; k++)"
     " A[i * m * p + j * p + k] = A[(i - 1) * m * p + j * p + k] + C[k]; }",
     ["inout f64* A[n][m][p]", "in f64* C[p]", "A[i][j][k] = A[i - 1][j][k] + C[k];"]),
    # a reversed column: the parameter term stays in the remainder
    ("void f(int n, int m, double *B) {"
     " for (int i = 0; i < n; i++) for (int j = 0; j < m; j++) B[i * m + m - 1 - j] = B[i * m + j] * 2.0; }",
     ["inout f64* B[n][m]", "B[i][m - j - 1] = B[i][j] * 2.0;"]),
    # a flat access that lands in row 0, beside row-major ones
    ("void f(int n, int m, double *B) {"
     " for (int i = 0; i < n; i++) for (int j = 0; j < m; j++) B[i * m + j] += B[j]; }",
     ["inout f64* B[1 > n ? 1 : n][m]", "B[i][j] += B[0][j];"]),  # derived: row 0 whatever n
    # a triangular nest and a column stride: the remainder is j, the row i
    ("void f(int n, double *L) {"
     " for (int i = 0; i < n; i++) for (int j = 0; j <= i; j++) L[i * n + j] = L[j * n + i]; }",
     ["inout f64* L[n][n]", "L[i][j] = L[j][i];"]),
]


@pytest.mark.parametrize(("src", "want"), SPLITS)
def test_splits(src: str, want: list[str]) -> None:
    k = _kernel(src)
    out = delinearize.run(k)
    ircheck.check(ir.Module((), (out,)))
    shown = _show(out)
    for line in want:
        assert line in shown, shown
    assert not delinearize.refusals(k)
    assert text.parse(shown, "r.ir").kernels[0] == out  # the text form holds the view


REFUSED = [
    # the remainder runs into the next row
    ("void f(int n, int m, double *x) { for (int i = 0; i < n; i++) for (int j = 0; j < m; j++)"
     " x[i * m + j + 1] = x[i * m + j]; }", "nothing proves 0 <= j + 1 < m"),
    # a leading dimension: nothing says k < K <= lda
    ("void f(int n, int K, int lda, double *A, double *y) { for (int i = 0; i < n; i++)"
     " for (int k = 0; k < K; k++) y[i] += A[i * lda + k]; }", "nothing proves 0 <= k < lda"),
    # sizes n and m, but the column runs to p
    ("void f(int n, int m, int p, double *x) { for (int i = 0; i < n; i++) for (int j = 0; j < p; j++)"
     " x[i * n * m + j] = 1.0; }", "nothing proves 0 <= j < m"),
    # a coefficient that is not a multiple of the size
    ("void f(int n, int m, double *x) { for (int i = 0; i < n; i++) for (int j = 0; j < m; j++)"
     " x[i * m + j * n] = 1.0; }", "no size parameter"),
]


@pytest.mark.parametrize(("src", "why"), REFUSED)
def test_refusals_leave_the_kernel_unchanged_and_say_why(src: str, why: str) -> None:
    k = _kernel(src)
    assert delinearize.run(k) is k
    (r,) = delinearize.refusals(k)
    assert why in r.message and r.loc is not None and r.loc.file == "t.c"


def test_a_leading_dimension_refusal_says_how_to_state_the_layout(tmp_path: Path) -> None:
    """The hint is C the front end takes: declared so, the row loop is parallel."""
    k = _kernel(REFUSED[1][0])
    (r,) = delinearize.refusals(k)
    assert r.message.endswith("declare the parameter as an array ('double A[][lda]')")
    src = REFUSED[1][0].replace("double *A", "double A[][lda]").replace("A[i * lda + k]", "A[i][k]")
    fixed = _kernel(src)
    assert not delinearize.refusals(fixed) and len(deps.parallel_loops(fixed)) == 1


def test_a_product_of_loop_variables_is_refused() -> None:
    # The C front end rejects it (no extent to derive); the text form can state the extent.
    src = "kernel f(i32 n, inout f64* x[n * n]) {\n  for i in 0..n { for j in 0..n { x[i * j] = 1.0; } }\n}\n"
    k = text.parse(src, "t.ir").kernels[0]
    assert delinearize.run(k) is k
    (r,) = delinearize.refusals(k)
    assert "multiplies loop variables together" in r.message and str(r.loc).startswith("t.ir:2:")


def test_a_row_without_columns_is_not_split() -> None:
    # For m = 0 both references are x[0]: the view x[i][0] would tell them apart.
    k = _kernel("void f(int n, int m, double *x) { for (int i = 1; i < n; i++) x[i * m] = x[(i - 1) * m]; }")
    assert delinearize.run(k) is k
    (r,) = delinearize.refusals(k)
    assert "nothing proves 0 <= 0 < m" in r.message


def test_affine_flat_pointers_are_nothing_to_do() -> None:
    k = _kernel("void f(int n, double *x) { for (int i = 0; i < n; i++) x[2 * i + 1] = x[2 * i]; }")
    assert delinearize.run(k) is k and not delinearize.refusals(k)


def test_a_size_that_is_a_local_is_not_used() -> None:
    # m is a top-level local: an extent may only name parameters.
    src = ("kernel f(i32 n, inout f64* x[n * (n + 1)]) {\n  i32 m = n + 1;\n"
           "  for i in 0..n { for j in 0..m { x[i * m + j] = 1.0; } }\n}\n")
    k = text.parse(src, "t.ir").kernels[0]
    assert delinearize.run(k) is k


def test_the_split_frees_the_loops() -> None:
    k = _kernel(SPLITS[0][0])
    assert deps.parallel_loops(k) == set()
    out = delinearize.run(k)
    assert len(deps.parallel_loops(out)) == 2


@pytest.mark.parametrize("n", [1, 3, 4])
def test_interpreter_agrees_on_flat_arguments(n: int) -> None:
    for src, _ in SPLITS:
        k = _kernel(src)
        out = delinearize.run(k)
        rng = np.random.default_rng(n)
        args: dict[str, object] = {}
        for p in k.params:
            if isinstance(p.ty, ir.Scalar):
                args[p.name] = n + 1 if p.name == "m" else n if p.ty.is_int else 0.5
        for p in k.params:
            if isinstance(p.ty, ir.ArrayType):
                flat = int(np.prod([_eval(d, args) for d in p.ty.dims]))
                args[p.name] = rng.normal(size=flat).astype(interp.DTYPES[p.ty.elem.name])
        want = interp.run(ir.Module((), (k,)), k.name, args)
        got = interp.run(ir.Module((), (out,)), k.name, args)
        assert affine_nests.same(got, want)
        assert all(got[x].shape == args[x].shape for x in got)  # flat in, flat out


def _eval(e: ir.Expr, env: dict[str, object]) -> int:
    if isinstance(e, ir.Const):
        return int(e.value)
    if isinstance(e, ir.Var):
        return int(env[e.name])  # type: ignore[call-overload]
    if isinstance(e, ir.Select):
        return _eval(e.then, env) if _eval(e.cond, env) else _eval(e.orelse, env)
    assert isinstance(e, ir.Binary), e
    a, b = _eval(e.lhs, env), _eval(e.rhs, env)
    return {"+": a + b, "-": a - b, "*": a * b, ">": int(a > b)}[e.op]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.kernels(), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_random_kernels_keep_their_meaning(k: ir.Kernel, size: int, seed: int) -> None:
    """On general random kernels (flat pointers indexed ``i * b + j``, clamped or constant): valid IR,
    the same results bit for bit on the same flat arguments."""
    out = delinearize.run(k)
    ircheck.check(ir.Module((), (out,)))
    if out is k:
        return
    event("delinearized")
    rng = np.random.default_rng(seed)
    args: dict[str, object] = dict(strategies.size_args(k, size))
    for p in k.params:
        if p.name not in args and isinstance(p.ty, ir.Scalar):
            args[p.name] = int(rng.integers(-5, 5)) if p.ty.is_int else float(rng.normal())
    for p in k.params:
        if isinstance(p.ty, ir.ArrayType):
            shape = tuple(_eval(d, args) for d in p.ty.dims)
            vals = rng.normal(size=shape) * 10 if p.ty.elem.is_float else rng.integers(0, 50, size=shape)
            args[p.name] = vals.astype(interp.DTYPES[p.ty.elem.name])
    want = interp.run(ir.Module((), (k,)), k.name, args)
    assert affine_nests.same(interp.run(ir.Module((), (out,)), k.name, args), want)
    # The whole pipeline after it keeps the meaning too, shuffled.
    lowered = pipeline.lower(ir.Module((), (k,)))
    for shuffle in range(2):
        got = interp.run(lowered, k.name, args, shuffle=seed + shuffle)
        assert affine_nests.close(got, want, rtol=1e-9)


N, M = ir.Var("n", ir.I32), ir.Var("m", ir.I32)


def _i(v: int) -> ir.Expr:
    return ir.Const(v, ir.I32)


@st.composite
def _flat_nests(draw: st.DrawFn) -> ir.Kernel:
    """Nests over rows (``[0, n)``, ``[1, n)``) and columns (``[0, m)``, ``[1, m)``, ``[0, m - 1)``)
    touching ``A``, ``B`` (``f64* [n * m]``) at ``row * m + col``, every row and column in range."""
    loops: list[tuple[str, str, int, int]] = []  # (var, "row" | "col", lo, hi offset)
    for v in ("i", "j", "k")[:draw(st.integers(1, 3))]:
        loops.append((v, draw(st.sampled_from(["row", "col"])), draw(st.integers(0, 1)), draw(st.integers(-1, 0))))
    if all(kind == "row" for _, kind, _, _ in loops):
        # A column loop is what shows m >= 1; without one, A[(n - 1) * m] and A[(n - 2) * m] are one
        # element when m = 0, and no split may be made (test_a_row_without_columns_is_not_split).
        v, _, lo, hi = loops[-1]
        loops[-1] = (v, "col", lo, hi)

    def part(kind: str) -> ir.Expr:
        size = N if kind == "row" else M
        options: list[ir.Expr] = [_i(0), ir.binary("-", size, _i(1))]
        for v, k, lo, hi in loops:
            if k == kind:
                x = ir.Var(v, ir.I32)
                options += [x, ir.binary("-", ir.binary("-", size, _i(1)), x)]
                if lo == 1:
                    options.append(ir.binary("-", x, _i(1)))
                if hi == -1:
                    options.append(ir.binary("+", x, _i(1)))
        return draw(st.sampled_from(options))

    def ref() -> ir.Index:
        flat = ir.binary("+", ir.binary("*", part("row"), M), part("col"))
        return ir.Index(draw(st.sampled_from(["A", "B"])), (flat,), ir.F64)

    body: list[ir.Stmt] = []
    for _ in range(draw(st.integers(1, 2))):
        value: ir.Expr = ref()
        for _ in range(draw(st.integers(0, 2))):
            value = ir.binary(draw(st.sampled_from(["+", "*"])), value, draw(st.sampled_from([ref(), ir.Const(0.5, ir.F64)])))
        body.append(ir.assign(ref(), value))
    stmts: tuple[ir.Stmt, ...] = tuple(body)
    for v, kind, lo, hi in reversed(loops):
        size = N if kind == "row" else M
        stmts = (ir.For(v, ir.I32, _i(lo), ir.binary("+", size, _i(hi)) if hi else size,
                        draw(st.sampled_from([1, 1, -1])), stmts),)
    uses = ir.array_uses(stmts)
    params = [ir.Param("n", ir.I32), ir.Param("m", ir.I32)]
    params += [ir.Param(a, ir.ArrayType(ir.F64, (ir.binary("*", N, M),)), ir.intent_of(*uses[a]), True)
               for a in sorted(uses)]
    return ir.Kernel("flat", tuple(params), stmts)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_flat_nests(), st.integers(1, 4), st.integers(1, 4), st.integers(0, 2**16))
def test_random_flat_nests_are_split_and_keep_their_meaning(k: ir.Kernel, n: int, m: int, seed: int) -> None:
    """Every in-range ``row * m + col`` splits; the split kernel (bit for bit), and the whole pipeline
    after it run with its parallel loops shuffled, compute what the flat kernel computes."""
    out = delinearize.run(k)
    ircheck.check(ir.Module((), (out,)))
    assert not delinearize.refusals(k)
    names = {"n", "m", "i", "j", "k"}
    for a in ("A", "B"):
        # Split where some index is not affine; ``0 * m + j`` alone the dependence test reads already.
        split = any(acc_mod.affine(x.indices[0], names) is None for x in ir.walk(k)
                    if isinstance(x, ir.Index) and x.array == a)
        assert all(len(x.indices) == (2 if split else 1) for x in ir.walk(out)
                   if isinstance(x, ir.Index) and x.array == a)
    rng = np.random.default_rng(seed)
    args: dict[str, object] = {"n": n, "m": m}
    for p in k.params:
        if isinstance(p.ty, ir.ArrayType):
            args[p.name] = rng.normal(size=n * m)
    want = interp.run(ir.Module((), (k,)), k.name, args)
    assert affine_nests.same(interp.run(ir.Module((), (out,)), k.name, args), want)
    lowered = pipeline.lower(ir.Module((), (k,)))
    if any(isinstance(x, ir.For) and x.par for x in ir.walk(lowered)):
        event("parallel")
    # Loops marked reduce are reassociated in shuffled mode: equal to 1e-10 relative, as in
    # affine_nests.check_case; everything else bit for bit.
    reassociated = any(isinstance(x, ir.For) and x.reduce for x in ir.walk(lowered))
    for shuffle in range(3):
        got = interp.run(lowered, k.name, args, shuffle=seed + shuffle)
        assert affine_nests.close(got, want) if reassociated else affine_nests.same(got, want)


def test_entry_snapshot_of_a_derived_extent_is_empty_when_the_loops_do_not_run() -> None:
    # Found by the property test above (n = 1): the snapshot A_entry has A's derived type [n - 2][m],
    # negative when the loops do not run. The pointer parameter's rule (negative means empty, as the
    # emitted transpile_extent has it) applies to its snapshot; the interpreter refused it.
    src = ("void flat(int n, int m, double *A) { for (int i = 1; i < n - 1; i++)"
           " for (int j = 1; j < m - 1; j++) A[(i - 1) * m + j] = A[(i - 1) * m + j + 1]; }")
    k = _kernel(src)
    lowered = pipeline.lower(ir.Module((), (k,)))
    assert "f64 A_entry[n - 2][m];" in text.show(lowered)
    rng = np.random.default_rng(2)
    for n, m in ((1, 3), (2, 3), (3, 1), (5, 4)):
        args = {"n": n, "m": m, "A": rng.normal(size=max(n - 2, 0) * m)}
        want = interp.run(ir.Module((), (k,)), "flat", args)
        for shuffle in range(2):
            assert affine_nests.same(interp.run(lowered, "flat", args, shuffle=shuffle), want)


def test_random_kernels_are_sometimes_delinearized() -> None:
    from hypothesis import find

    k = find(strategies.kernels(), lambda k: delinearize.run(k) is not k, settings=settings(max_examples=2000))
    assert delinearize.run(k) is not k


FLAT_GEMM = """\
void kernel_gemm(int ni, int nj, int nk, double alpha, double beta, double *C, double *A, double *B)
{
  for (int i = 0; i < ni; i++) {
    for (int j = 0; j < nj; j++)
      C[i * nj + j] *= beta;
    for (int k = 0; k < nk; k++)
      for (int j = 0; j < nj; j++)
        C[i * nj + j] += alpha * A[i * nk + k] * B[k * nj + j];
  }
}
"""

ROOT = Path(__file__).resolve().parent.parent


def _kernels_of(cu: str) -> list[str]:
    """The __global__ functions of a .cu text (what delinearize must make equal)."""
    out, keep = [], False
    for line in cu.splitlines():
        if line.startswith("__global__") or line.startswith("template"):
            keep = True
        if keep:
            out.append(line)
        if keep and line == "}":
            keep = False
    return out


def test_flat_gemm_compiles_to_the_kernels_of_the_array_gemm(tmp_path: Path) -> None:
    """The drop-in keeps ``double *`` parameters; the device code is the 2-D gemm's, and it verifies
    (stages a-c: against gcc's build of the C on synthesized inputs, then the simulated CUDA)."""
    src = tmp_path / "gemm.c"
    src.write_text(FLAT_GEMM)
    flat = subprocess.run([sys.executable, "-m", "transpile.cli", str(src), "-o", str(tmp_path / "flat.cu")],
                          capture_output=True, text=True)
    assert flat.returncode == 0, flat.stderr
    assert "flat-index" not in flat.stderr
    array = subprocess.run([sys.executable, "-m", "transpile.cli", str(ROOT / "examples" / "gemm.c"), "-o",
                            str(tmp_path / "array.cu"), "--no-verify"], capture_output=True, text=True)
    assert array.returncode == 0, array.stderr
    got, want = (tmp_path / "flat.cu").read_text(), (tmp_path / "array.cu").read_text()
    assert _kernels_of(got) == _kernels_of(want) and _kernels_of(got)
    assert ("void kernel_gemm(int ni, int nj, int nk, double alpha, double beta, double *C, double *A, "
            "double *B)") in got


KERNELS = ROOT / "tests" / "kernels"


@pytest.mark.parametrize("name", sorted(p.stem for p in KERNELS.glob("*.c")))
def test_polybench_written_with_flat_pointers_compiles_to_the_same_kernels(name: str) -> None:
    """Each of the 30 kernels with ``double *A`` indexed ``A[(i) * n + (j)]`` (tests/flatten.py) gives the
    device code of its array form, byte for byte."""
    src = (KERNELS / f"{name}.c").read_text()
    flat = flatten(src)
    assert "][" not in flat.split("void kernel_", 1)[1].split("*/")[-1]  # every reference was rewritten
    want = cuda.emit(pipeline.lower(cfront.parse_source(src, f"{name}.c")), source=f"{name}.c")
    module = cfront.parse_source(flat, f"{name}.c")
    got = cuda.emit(pipeline.lower(module), source=f"{name}.c")
    assert not [r for k in module.kernels for r in delinearize.refusals(k)]
    assert _kernels_of(got) == _kernels_of(want)


def test_a_reference_outside_every_loop_is_split_where_it_is_valid() -> None:
    # corr[(m - 1) * m + (m - 1)] (correlation's diagonal store): for m = 0 the index is -1, below the
    # pointer's start; for every m >= 1 the column m - 1 is in range.
    k = _kernel("void f(int m, double *c) { c[(m - 1) * m + (m - 1)] = 1.0;"
                " for (int i = 0; i < m; i++) for (int j = 0; j < m; j++) c[i * m + j] *= 2.0; }")
    assert "c[m - 1][m - 1] = 1.0;" in _show(delinearize.run(k))


def test_verifier_inputs_see_the_matrix() -> None:
    """The verifier synthesizes a flat cholesky's ``double *A`` as the n x n matrix it is, so its
    positive definite recipe applies (without the view only n = 1 and 2 could be tested)."""
    from transpile.verify import synth
    from transpile.verify.signature import kernel_sig

    k = cfront.parse_source(flatten((KERNELS / "cholesky.c").read_text()), "cholesky.c").kernels[0]
    sig = kernel_sig(k)
    (a,) = sig.arrays
    assert sig.shape(a, {"n": 5}) == (5, 5)
    args = synth.draw(sig, synth.Shape("t", {"n": 5}), np.random.default_rng(0), "signed")
    assert synth.RECIPES["spd"](sig, args, np.random.default_rng(0))
    assert np.all(np.linalg.eigvalsh(args["A"]) > 0)


def test_deps_command_shows_the_split_view(tmp_path: Path) -> None:
    src = tmp_path / "saxpy.c"
    src.write_text(SPLITS[0][0] + "\n")
    proc = subprocess.run([sys.executable, "-m", "transpile.cli", "deps", str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "x[i][j] = a * x[i][j] + y[i][j];" in proc.stdout
    assert proc.stdout.count(": parallel") == 2 and "sequential" not in proc.stdout


def test_cli_warns_where_a_pointer_stays_flat(tmp_path: Path) -> None:
    src = tmp_path / "wrap.c"
    src.write_text(REFUSED[0][0] + "\n")
    proc = subprocess.run([sys.executable, "-m", "transpile.cli", str(src), "-o", str(tmp_path / "w.cu"),
                           "--no-verify"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert f"{src}:1:" in proc.stderr and "[-Wflat-index]" in proc.stderr
    quiet = subprocess.run([sys.executable, "-m", "transpile.cli", str(src), "-o", str(tmp_path / "w.cu"),
                            "--no-verify", "--silence", "flat-index"], capture_output=True, text=True)
    assert quiet.returncode == 0 and "flat-index" not in quiet.stderr
