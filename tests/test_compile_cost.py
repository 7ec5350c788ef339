"""The compiler's own cost (issue 43): linear dependence work, the pass budget, several inputs in
one call, the progress line and a light startup.

Speed itself is measured by bench/compile_cost.py (a table, not a timed test); here the work is
counted (dependence questions), and behaviour is checked: the budget's warning and the meaning of
what a stopped pass leaves, the batch's outputs and exit status, the progress line on a terminal
and not on a pipe, and which modules the command line imports.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from passes import budget, deps, fuse
from transpile import frontend, ir, pipeline
from transpile.cli import main
from transpile.ir import interp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import compile_cost  # noqa: E402
import same_output  # noqa: E402


def _load(tmp_path: Path, name: str, source: str) -> ir.Module:
    p = tmp_path / f"{name}.c"
    p.write_text(source)
    return frontend.load(p)


def _questions(module: ir.Module, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many dependence questions lowering ``module`` asks (each pair of accesses tested)."""
    calls = [0]
    real = deps._dependences

    def counted(*args: object, **kw: object) -> object:
        calls[0] += 1
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(deps, "_dependences", counted)
    pipeline.lower(module, verify_each=False)
    monkeypatch.setattr(deps, "_dependences", real)
    return calls[0]


@pytest.mark.parametrize("shape", ["chain", "independent", "loops"])
def test_dependence_questions_grow_linearly(shape: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Doubling the statements must about double the questions, not quadruple them (pairs of
    # statements that share no name are never asked; fusion asks only the pairs it reorders).
    small = _questions(_load(tmp_path, "a", compile_cost.SHAPES[shape](20)), monkeypatch)
    large = _questions(_load(tmp_path, "b", compile_cost.SHAPES[shape](40)), monkeypatch)
    assert large <= 2.5 * small, (small, large)


def _random_args(kernel: ir.Kernel, n: int, seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    args: dict[str, object] = {}
    for p in kernel.params:
        if isinstance(p.ty, ir.ArrayType):
            args[p.name] = rng.uniform(-1.0, 1.0, (n,) * p.ty.rank)
        else:
            args[p.name] = n
    return args


def _same_meaning(before: ir.Module, after: ir.Module, seeds: int = 2) -> None:
    for k in before.kernels:
        for seed in range(seeds):
            args = _random_args(k, 7, seed)
            want = interp.run(before, k.name, args)
            got = interp.run(after, k.name, args)
            assert want.keys() == got.keys()
            for x in want:
                assert np.array_equal(want[x], got[x]), (k.name, x)


def test_fusion_keeps_loop_facts_incrementally(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # What each loop carries, kept across fusions without re-analysing, equals a fresh analysis.
    monkeypatch.setattr(fuse, "_CHECK_INCREMENTAL", True)
    for seed in range(12):
        module = _load(tmp_path, f"r{seed}", same_output.random_c(seed))
        pipeline.lower(module, verify_each=True)


def test_tiny_budget_warns_and_keeps_meaning(tmp_path: Path) -> None:
    module = _load(tmp_path, "chain", compile_cost.chain(12))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lowered = pipeline.lower(module, budget=budget.Budget(pass_seconds=1e-9))
    texts = [str(w.message) for w in caught]
    assert any("pass 'fuse'" in t and "[-Wpass-budget]" in t and "correct but less optimised" in t for t in texts)
    assert not any("pass 'map-gpu'" in t for t in texts)  # map-gpu always runs
    _same_meaning(module, lowered)


def test_memory_budget_warns_and_keeps_meaning(tmp_path: Path) -> None:
    module = frontend.load(ROOT / "tests" / "kernels" / "jacobi_1d.c")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lowered = pipeline.lower(module, budget=budget.Budget(memory_mb=1))
    assert any("memory budget (1 MB)" in str(w.message) for w in caught)
    _same_meaning(module, lowered)


@pytest.mark.parametrize("stop_after", [3, 9, 20])
def test_fusion_stopped_midway_is_valid_and_equal(stop_after: int, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Fusion stopped after some of its steps keeps the fusions done (each legal): a valid kernel
    # (verify_each), the same meaning, and fewer loops fused than without the budget.
    module = _load(tmp_path, "loops", compile_cost.loops(30))
    real = budget.check
    seen = [0]

    def check() -> None:
        s = getattr(budget._local, "scope", None)
        if s is not None and s.name == "fuse" and sys._getframe(1).f_code.co_name == "_try":  # a pair tried
            seen[0] += 1
            if seen[0] > stop_after:
                s.stopped = "time"
                raise budget.BudgetExceeded("fuse")
        real()

    monkeypatch.setattr(budget, "check", check)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lowered = pipeline.lower(module, verify_each=True, budget=budget.Budget())
    assert any("pass 'fuse' stopped" in str(w.message) for w in caught)
    full = pipeline.lower(module)
    launches = sum(isinstance(s, ir.Launch) for s in ir.walk(lowered.kernels[0]))
    assert launches > sum(isinstance(s, ir.Launch) for s in ir.walk(full.kernels[0]))
    assert launches < 30  # some fusions were kept
    _same_meaning(module, lowered, seeds=1)


def test_several_inputs_one_call(tmp_path: Path) -> None:
    bad = tmp_path / "bad.c"
    bad.write_text("void f(int n, double a[n]) {\n  for (int i = 0; i < n; i++)\n    a[i] = b[i];\n}\n")
    inputs = [ROOT / "tests" / "kernels" / "gemm.c", bad, ROOT / "tests" / "kernels" / "atax.c"]
    for jobs in ("1", "2"):
        out = tmp_path / f"out{jobs}"
        r = CliRunner().invoke(main, [*map(str, inputs), "-o", str(out), "--no-verify", "-j", jobs])
        assert r.exit_code == 1, r.output
        assert f"{bad}:3:12: error: 'b' undeclared" in r.output
        assert "1 of 3 inputs failed" in r.output
        assert sorted(p.name for p in out.iterdir()) == ["atax.cu", "gemm.cu"]
        for name in ("gemm", "atax"):
            one = tmp_path / f"{name}{jobs}.cu"
            r1 = CliRunner().invoke(main, [str(ROOT / "tests" / "kernels" / f"{name}.c"), "-o", str(one), "--no-verify"])
            assert r1.exit_code == 0, r1.output
            assert (out / f"{name}.cu").read_text() == one.read_text()


def test_several_inputs_same_stem_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "gemm.c").write_text((ROOT / "tests" / "kernels" / "gemm.c").read_text())
    r = CliRunner().invoke(main, [str(ROOT / "tests" / "kernels" / "gemm.c"), str(tmp_path / "a" / "gemm.c"),
                                  "-o", str(tmp_path / "out"), "--no-verify"])
    assert r.exit_code == 2 and "would both be written" in r.output


_PROGRESS = """
import time
from transpile import progress
progress.DELAY = 0.2
with progress.track("big.c"):
    progress.stage("pass fuse", "kernel_f")
    time.sleep(1.0)
"""


def _stderr_of(code: str, tty: bool) -> bytes:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if not tty:
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=60).stderr
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=slave, stdout=subprocess.DEVNULL)
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        proc.wait(timeout=60)
        return out
    finally:
        os.close(master)


def test_progress_line_on_a_terminal_only() -> None:
    shown = _stderr_of(_PROGRESS, tty=True)
    assert b"\rtranspile: big.c: kernel_f: pass fuse, " in shown
    assert shown.endswith(b"\r\x1b[K")  # erased at the end
    assert _stderr_of(_PROGRESS, tty=False) == b""


def test_startup_imports_only_what_the_command_needs() -> None:
    code = ("import sys, transpile.cli; print(' '.join(m for m in ('islpy', 'networkx', 'numpy', 'lark', "
            "'pycparser') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.strip() == ""


def test_lazy_subcommands_help_heads_match() -> None:
    import importlib

    from transpile.cli import _LAZY

    for name, (module, attr, head) in _LAZY.items():
        cmd = getattr(importlib.import_module(module), attr)
        assert cmd.name == name
        assert " ".join((cmd.help or "").split()).startswith(head), name


def test_help_imports_no_subcommand() -> None:
    code = ("import sys; from transpile.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(' '.join(m for m in sys.modules if m.startswith('transpile.verify') or m == 'islpy'), "
            "file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)},
                       capture_output=True, text=True, timeout=60)
    assert "verify" in r.stdout and r.stderr.strip() == ""
