"""passes/bounds.py: references proven to leave their array for some sizes.

The findings are checked against the IR interpreter, which faults on every
out-of-bounds index: at sizes where a finding holds the interpreter must
fault, and on kernels whose references are all checkable (no ``if``, affine
everything) it must not fault where none holds.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from passes import bounds
from passes.accesses import affine
from transpile import frontend, ir
from transpile.diagnostics import TranspileWarning
from transpile.ir import interp

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = (sorted((ROOT / "tests" / "kernels").glob("*.c")) + sorted((ROOT / "examples" / "specs").glob("*.ir"))
           + sorted((ROOT / "examples").glob("*.c")))


def _load(tmp_path: Path, text: str, name: str = "k.c") -> ir.Kernel:
    path = tmp_path / name
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TranspileWarning)
        (kernel,) = frontend.load(path).kernels
    return kernel


@pytest.mark.parametrize("path", BUNDLED, ids=[p.name for p in BUNDLED])
def test_no_findings_on_the_bundled_kernels(path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TranspileWarning)
        module = frontend.load(path)
    # fixed extents (examples/heat.c's u[N][N] with an int n bound): findings only past them are the
    # one "assumes n <= N" note (driver.check_bounds), never a warning
    warned = []
    for k in module.kernels:
        found = bounds.check(k)
        limits = bounds.extent_limits(k, found)
        warned += [f.message for f in found if not limits or f.holds_within(limits)]
    assert warned == []


SHIFT = """void f(int n, double A[n]) {
  int i;
  for (i = 0; i < n; i++)
    A[i + 1] = 2.0 * A[i];
}
"""

#: atax with A's subscripts swapped: in bounds only when m == n.
TRANSPOSED = """void f(int m, int n, double A[m][n], double x[n], double y[n], double tmp[m]) {
  int i, j;
  for (i = 0; i < m; i++) {
    tmp[i] = 0.0;
    for (j = 0; j < n; j++)
      tmp[i] = tmp[i] + A[j][i] * x[j];
  }
}
"""

#: A stride-2 loop that runs to n inclusive: out of bounds for even n only.
STRIDED = """void f(int n, double A[n][n], double u[n]) {
  int i, j;
  for (i = 0; i <= n; i += 2)
    for (j = 0; j < n; j += 2)
      A[i][j] = A[i][j] + u[i];
}
"""

#: Reversed loop reading one below: out of bounds at i = 0 for every n >= 1.
REVERSED = """void f(int n, double A[n], double B[n]) {
  int i;
  for (i = n - 1; i >= 0; i--)
    B[i] = A[i - 1];
}
"""

IN_BOUNDS = """void f(int n, double A[n], double B[n]) {
  int i;
  for (i = 1; i < n - 1; i++)
    B[i] = A[i - 1] + A[i + 1];
}
"""

#: A local array one element short: its last element is written for every n >= 1.
LOCAL = """void f(int n, double A[n]) {
  double z[n - 1];
  int i;
  for (i = 0; i < n; i++)
    z[i] = A[i];
  for (i = 0; i < n - 1; i++)
    A[i] = z[i];
}
"""

CASES = {"shift": SHIFT, "local": LOCAL, "transposed": TRANSPOSED, "strided": STRIDED, "reversed": REVERSED,
         "in-bounds": IN_BOUNDS}


def test_findings_name_the_reference_and_the_sizes(tmp_path: Path) -> None:
    (f,) = bounds.check(_load(tmp_path, SHIFT))
    assert (f.array, f.write, f.dim, f.side, f.loc.line) == ("A", True, 0, "high", 4)
    assert "every size" in f.message
    msgs = sorted(f.message for f in bounds.check(_load(tmp_path, TRANSPOSED)))
    assert len(msgs) == 2 and "n > m" in msgs[0] + msgs[1] and "n < m" in msgs[0] + msgs[1]
    assert all("mod 2 = 0" in f.message for f in bounds.check(_load(tmp_path, STRIDED)))
    (low,) = bounds.check(_load(tmp_path, REVERSED))
    assert (low.side, low.write) == ("low", False) and "below index 0" in low.message
    assert bounds.check(_load(tmp_path, IN_BOUNDS)) == []
    (local,) = bounds.check(_load(tmp_path, LOCAL))
    assert (local.array, local.write, local.loc.line) == ("z", True, 5) and "extent n - 1" in local.message


def test_guarded_references_and_locals_are_not_judged(tmp_path: Path) -> None:
    """Only exact iteration domains count: a reference under an ``if`` and a bound through a local
    (whose relation to ``n`` isl would not know) give no finding, even where they would be fine."""
    guarded = SHIFT.replace("    A[i + 1]", "    if (i + 1 < n) A[i + 1]")
    local = """void f(int n, double A[n]) {
  int m = n - 1;
  int i;
  for (i = 0; i < m; i++)
    A[i + 1] = 2.0 * A[i];
}
"""
    assert bounds.check(_load(tmp_path, guarded)) == []
    assert bounds.check(_load(tmp_path, local)) == []


def _shape(ty: ir.ArrayType, sizes: dict[str, int]) -> list[int]:
    shape = []
    for d in ty.dims:
        a = affine(d, frozenset(sizes))
        assert a is not None
        shape.append(a.const + sum(c * sizes[v] for v, c in a.coeffs))
    return shape


def _args(kernel: ir.Kernel, sizes: dict[str, int]) -> dict[str, object]:
    args: dict[str, object] = {}
    for p in kernel.params:
        if isinstance(p.ty, ir.ArrayType):
            args[p.name] = np.ones(_shape(p.ty, sizes), interp.DTYPES[p.ty.elem.name])
        else:
            args[p.name] = sizes[p.name]
    return args


def _some_array_empty(kernel: ir.Kernel, sizes: dict[str, int]) -> bool:
    """Sizes the findings are not about (docs of passes/bounds.py): an array, parameter or local,
    with no element."""
    types = [p.ty for p in kernel.params if isinstance(p.ty, ir.ArrayType)]
    types += [s.ty for s in kernel.body if isinstance(s, ir.Alloc)]
    return any(min(_shape(ty, sizes)) <= 0 for ty in types)


def _faults(module_kernel: tuple[ir.Module, ir.Kernel], sizes: dict[str, int]) -> bool:
    module, kernel = module_kernel
    try:
        interp.run(module, kernel.name, _args(kernel, sizes))
    except interp.InterpError as e:
        assert "out of bounds" in e.msg, e.msg
        return True
    return False


@pytest.mark.parametrize("name", sorted(CASES))
def test_findings_agree_with_the_interpreter(tmp_path: Path, name: str) -> None:
    path = tmp_path / "k.c"
    path.write_text(CASES[name])
    module = frontend.load(path)
    (kernel,) = module.kernels
    found = bounds.check(kernel)
    names = [p.name for p in kernel.params if not isinstance(p.ty, ir.ArrayType)]
    for values in itertools.product(range(1, 6), repeat=len(names)):
        sizes = dict(zip(names, values))
        if _some_array_empty(kernel, sizes):
            continue
        predicted = any(f.holds(sizes) for f in found)
        assert predicted == _faults((module, kernel), sizes), (name, sizes, [f.message for f in found])


def test_cli_prints_the_warning_as_a_compiler_does(tmp_path: Path) -> None:
    src = tmp_path / "shift.c"
    src.write_text(SHIFT)
    proc = subprocess.run([sys.executable, "-m", "transpile.cli", str(src), "-o", str(tmp_path / "o.cu"),
                           "--no-verify"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith(f"{src}:4:5: warning: 'A' is written at or past its extent n"), proc.stderr
    assert proc.stderr.splitlines()[0].endswith("[-Wout-of-bounds]") and "Traceback" not in proc.stderr
    quiet = subprocess.run([sys.executable, "-m", "transpile.cli", str(src), "-o", str(tmp_path / "o.cu"),
                            "--no-verify", "--silence", "out-of-bounds"], capture_output=True, text=True)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
