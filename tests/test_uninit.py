"""passes/uninit.py: locals read before any assignment, and the CLI's error and warning.

The definite findings are checked against gcc: compiled with ``-O2
-Wuninitialized`` each definite case draws gcc's own warning (gcc's analysis is
path-sensitive only after optimisation, so it is the witness, not the oracle);
no finding on the bundled kernels and on generated PolyBench-shaped programs
(which are sanitizer-clean, tests/test_cgen.py), and none on reads that some
path has assigned.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from passes import uninit
from tests import cgen
from tests.test_bounds import _load as _kernel  # a kernel from C text, warnings silenced
from transpile import frontend
from transpile.diagnostics import TranspileWarning

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = sorted((ROOT / "tests" / "kernels").glob("*.c")) + sorted((ROOT / "examples" / "specs").glob("*.ir"))


TAIL = "\n  for (j = 0; j < n; j++)\n    B[j] = 2.0 * B[j];"  # a loop: the front end's kernel test


def _found(tmp_path: Path, body: str) -> list[tuple[str, int, bool]]:
    text = f"void f(int n, double A[n], double B[n]) {{\n  int i, j, k;\n  double s, t;\n{body}{TAIL}\n}}\n"
    return sorted((f.name, f.loc.line if f.loc else 0, f.definite) for f in uninit.check(_kernel(tmp_path, text)))


@pytest.mark.parametrize("path", BUNDLED, ids=[p.name for p in BUNDLED])
def test_no_findings_on_the_bundled_kernels(path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TranspileWarning)
        module = frontend.load(path)
    assert [f.message for k in module.kernels for f in uninit.check(k)] == []


@pytest.mark.parametrize("seed", range(8))
def test_no_findings_on_generated_programs(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "g.c"
    path.write_text(cgen.program(seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TranspileWarning)
        module = frontend.load(path)
    assert [f.message for k in module.kernels for f in uninit.check(k)] == []


DEFINITE = {
    "a loop bound": ("  for (i = 0; i < k; i++)\n    A[i] = 1.0;", ("k", 4)),
    "a value": ("  for (i = 0; i < n; i++)\n    A[i] = s;", ("s", 5)),
    "the first iteration, before the body assigns it":
        ("  for (i = 0; i < n; i++) {\n    A[i] = s;\n    s = B[i];\n  }", ("s", 5)),
    "an accumulation never started": ("  for (i = 0; i < n; i++)\n    s += B[i];\n  A[0] = s;", ("s", 5)),
    "a subscript": ("  A[k] = 1.0;", ("k", 4)),
    "a declaration in the loop, new each iteration":
        ("  for (i = 0; i < n; i++) {\n    double u;\n    A[i] = u;\n    u = B[i];\n  }", ("u", 6)),
}


@pytest.mark.parametrize("case", DEFINITE, ids=list(DEFINITE))
def test_definite_reads_are_found_where_they_are(tmp_path: Path, case: str) -> None:
    body, (name, line) = DEFINITE[case]
    assert (name, line, True) in _found(tmp_path, body)
    # gcc agrees there is an uninitialised read (its witness, with optimisation on)
    src = tmp_path / "w.c"
    src.write_text(f"void f(int n, double A[n], double B[n]) {{\n  int i, j, k;\n  double s, t;\n{body}\n}}\n")
    proc = subprocess.run(["gcc", "-O2", "-Wuninitialized", "-Wmaybe-uninitialized", "-c", str(src), "-o",
                           str(tmp_path / "w.o")], capture_output=True, text=True,
                          env={**os.environ, "LC_ALL": "C"})
    assert f"'{name}'" in proc.stderr and "uninitialized" in proc.stderr, proc.stderr


ASSIGNED = {
    "assigned first": "  s = 0.0;\n  for (i = 0; i < n; i++)\n    s += B[i];\n  A[0] = s;",
    "assigned in both branches": "  if (n > 2) s = 1.0; else s = 2.0;\n  A[0] = s;",
    "per iteration, before the read": "  for (i = 0; i < n; i++) {\n    s = B[i];\n    A[i] = s * s;\n  }",
    "carried from an earlier iteration, under an if":
        "  for (i = 0; i < n; i++) {\n    if (i > 0)\n      A[i] = s;\n    s = B[i];\n  }",
    "a loop variable read after its own loop assigned it again": "  k = 0;\n  for (i = 0; i < k; i++)\n    A[i] = 1.0;",
    "a short-circuit that guards it": "  s = 1.0;\n  t = n > 2 && s > 0.0 ? s : 0.0;\n  A[0] = t;",
}


@pytest.mark.parametrize("case", ASSIGNED, ids=list(ASSIGNED))
def test_reads_some_path_has_assigned_are_not_findings(tmp_path: Path, case: str) -> None:
    assert [f for f in _found(tmp_path, ASSIGNED[case]) if f[2]] == []


def test_a_loop_that_may_run_no_iteration_leaves_its_assignment_unsure(tmp_path: Path) -> None:
    # ludcmp mutated (`w -= A[i][j]` for `w = A[i][j]`): at i = 0 the loop over j < i runs no
    # iteration, so the read sees w unassigned (the fuzzer's case 4102, a verifier mismatch before)
    body = ("  for (i = 0; i < n; i++) {\n    for (j = 0; j < i; j++)\n      s = B[j];\n"
            "    s -= A[i];\n    A[i] = s;\n  }")
    assert _found(tmp_path, body) == [("s", 7, False)]
    # a loop whose bounds read no enclosing loop's variable is taken to run (sizes of at least 1)
    body = "  for (i = 0; i < n; i++) {\n    for (j = 0; j < n; j++)\n      s = B[j];\n    A[i] = s;\n  }"
    assert _found(tmp_path, body) == []


def test_a_read_on_some_paths_only_is_a_conditional_finding(tmp_path: Path) -> None:
    found = _found(tmp_path, "  if (n > 2)\n    s = 1.0;\n  A[0] = s;")
    assert found == [("s", 6, False)]
    found = _found(tmp_path, "  for (i = 0; i < n; i++)\n    if (i == 0)\n      A[i] = t;")
    assert found == [("t", 6, False)]


def _transpile(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "transpile.cli", *args], capture_output=True, text=True, cwd=ROOT)


def test_the_cli_refuses_a_definite_read_with_a_located_error_and_writes_nothing(tmp_path: Path) -> None:
    src = tmp_path / "k.c"
    src.write_text("void f(int n, double A[n]) {\n  int i, k;\n  for (i = 0; i < k; i++)\n    A[i] = 1.0;\n}\n")
    out = tmp_path / "k.cu"
    proc = _transpile(str(src), "-o", str(out))
    assert proc.returncode == 1 and not out.exists()
    assert proc.stderr.startswith(f"{src}:3:19: error: 'k' is read before it is assigned"), proc.stderr
    assert "^" in proc.stderr and "Traceback" not in proc.stderr


def test_the_cli_warns_of_a_conditional_read_and_compiles(tmp_path: Path) -> None:
    src = tmp_path / "k.c"
    src.write_text("void f(int n, double A[n]) {\n  int i;\n  double s;\n  for (i = 0; i < n; i++) {\n"
                   "    if (i > 0)\n      A[i] = s;\n    s = A[i];\n  }\n}\n")
    # not a finding at all: later iterations read the value an earlier one assigned
    proc = _transpile(str(src), "-o", str(tmp_path / "k.cu"), "--no-verify")
    assert proc.returncode == 0 and "uninitialized" not in proc.stderr, proc.stderr
    src.write_text("void f(int n, double A[n]) {\n  int j;\n  double s;\n  if (n > 2)\n    s = 1.0;\n  A[0] = s;\n"
                   "  for (j = 1; j < n; j++)\n    A[j] = 2.0 * A[j];\n}\n")
    proc = _transpile(str(src), "-o", str(tmp_path / "k.cu"), "--no-verify")
    assert proc.returncode == 0, proc.stderr
    assert f"{src}:6:10: warning: 's' is read before it is assigned on some paths" in proc.stderr
    assert "[-Wuninitialized]" in proc.stderr


def test_the_ir_front_end_gets_the_same_check(tmp_path: Path) -> None:
    src = tmp_path / "k.ir"
    src.write_text("kernel f(i32 n, out f64 A[n]) {\n  i32 k;\n  for i in 0..k {\n    A[i] = 1.0;\n  }\n}\n")
    proc = _transpile(str(src), "-o", str(tmp_path / "k.cu"))
    assert proc.returncode == 1 and ":3:15: error: 'k' is read before it is assigned" in proc.stderr, proc.stderr
