"""No false alarms (transpile/verify/reference.py's guard regions, signature.index_uses' reversed
indices): correct loops whose C is undefined at some of the sizes or inputs the verifier draws (an
access under an ``if``, a non-affine subscript, an index through a scalar temporary) compile and
verify, those shapes skipped with a note; a kernel wrong at a defined size is still rejected."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from transpile import cuda, frontend, pipeline
from transpile.verify import Options, verify_module
from transpile.verify.proc import ChildError
from transpile.verify.reference import GccReference
from transpile.verify.signature import kernel_sig

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("g++") is None,
                                reason="the reference and the simulator need gcc and g++")

KERNELS = {
    # b[i] under an if: past b's end whenever n > m and some a[i] > 0 (the bounds analysis
    # checks no reference under an if, so no size is ruled out beforehand).
    "guarded": """void guarded(int n, int m, double a[n], double b[m])
{
  for (int i = 0; i < n; i++)
    if (a[i] > 0.0)
      b[i] = a[i];
}
""",
    # x[i * inc]: a non-affine subscript, defined only for (n - 1) * inc < m.
    "strided": """void strided(int n, int m, int inc, double x[m], double y[n])
{
  for (int i = 0; i < n; i++)
    y[i] = 2.0 * x[i * inc];
}
""",
    # c[n - k - 1] through a temporary k = ip[i]: defined for 0 <= ip[i] < n only.
    "reversed": """void reversed(int n, int ip[n], double c[n], double d[n])
{
  for (int i = 0; i < n; i++) {
    int k = ip[i];
    d[i] = c[n - k - 1];
  }
}
""",
    # a[off] with off = inc + i.
    "offset": """void offset(int n, int inc, double a[n], double b[n])
{
  for (int i = 0; i < n - inc; i++) {
    int off = inc + i;
    b[i] = a[off];
  }
}
""",
}


def _compile(tmp_path: Path, name: str) -> tuple[Path, object, str]:
    src = tmp_path / f"{name}.c"
    src.write_text(KERNELS[name])
    module = frontend.load(src)
    return src, module, cuda.emit(pipeline.lower(module), source=src.name)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_correct_loops_verify(tmp_path: Path, name: str) -> None:
    src, module, text = _compile(tmp_path, name)
    for seed in (1,):
        (report,) = verify_module(module, text, source=src,  # type: ignore[arg-type]
                                  options=Options(mode="quick", seed=seed, stages="abc", gpu=False))
        assert report.verdict == "pass", f"seed {seed}: {report.summary()}"


def test_the_reference_faults_outside_its_arrays(tmp_path: Path) -> None:
    src = tmp_path / "strided.c"
    src.write_text(KERNELS["strided"])
    sig = kernel_sig(frontend.load(src).kernels[0])
    ref = GccReference(sig, src, function="strided")
    x = {"n": np.int32(9), "m": np.int32(17), "inc": np.int32(2), "x": np.ones(17), "y": np.zeros(9)}
    assert (ref.run(x)["y"] == 2.0).all()  # (n - 1) * inc = 16 < 17: defined
    for n, m, inc in ((10, 17, 2), (3, 17, -1)):  # x[18] past the end; x[-1] before the start
        x = {"n": np.int32(n), "m": np.int32(m), "inc": np.int32(inc), "x": np.ones(m), "y": np.zeros(n)}
        with pytest.raises(ChildError, match="outside its arrays"):
            ref.run(x)


def test_a_kernel_wrong_at_a_defined_size_is_rejected(tmp_path: Path) -> None:
    src, module, text = _compile(tmp_path, "strided")
    assert text.count("2.0 *") == 1, "the emitted kernel's constant"
    (report,) = verify_module(module, text.replace("2.0 *", "2.5 *"), source=src,  # type: ignore[arg-type]
                              options=Options(mode="quick", seed=1, stages="abc", gpu=False))
    assert report.verdict == "fail" and report.failure.check == "mismatch", report.summary()  # type: ignore[union-attr]
