"""File tests of the passes, run as ``transpile opt`` runs them (``tests/passes/<pass>/*.ir``).

Each file is valid IR text followed by its expected result::

    // RUN: privatize                      <- the -p value: passes, with {KEY=VALUE} options
    // ...a line saying what the file shows
    kernel k(...) { ... }                  <- the input
    // EXPECT:
    // kernel k(...) { ... }               <- the IR the passes return, one '// ' line each

so ``transpile opt FILE -p privatize`` runs it by hand.  ``--update-goldens`` rewrites every EXPECT
block from the current passes (read the diff).  Every registered pass has at least one file.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

import passes
from transpile import ir
from transpile.cli import opt as optcmd
from transpile.ir import text

ROOT = Path(__file__).resolve().parent.parent
DIR = Path(__file__).resolve().parent / "passes"
FILES = sorted(DIR.glob("*/*.ir"))
MARK = "// EXPECT:"


def split(path: Path) -> tuple[str, str, str]:
    """The ``-p`` value, the input text and the expected text of a pass file."""
    body = path.read_text()
    first = body.splitlines()[0]
    assert first.startswith("// RUN: "), f"{path}: the first line must be '// RUN: PASSES'"
    source, mark, expected = body.partition(MARK + "\n")
    assert mark, f"{path}: no '{MARK}' line"
    lines = expected.splitlines()
    assert all(ln == "//" or ln.startswith("// ") for ln in lines), f"{path}: EXPECT lines must start with '// '"
    return first[len("// RUN: "):].strip(), source, "".join(ln[3:] + "\n" for ln in lines)


def run_file(path: Path) -> str:
    spec, source, _ = split(path)
    module = text.parse(source, str(path))
    return text.show(optcmd.run_pipeline(module, optcmd.parse_pipeline(spec)))


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
def test_pass_file(path: Path, update_goldens: bool) -> None:
    spec, source, expected = split(path)
    got = run_file(path)
    if update_goldens:
        path.write_text(source + MARK + "\n" + "".join(("// " + ln).rstrip() + "\n" for ln in got.splitlines()))
        return
    assert got == expected, f"{path} (-p {spec}) gives:\n{got}"
    # The expected text is itself valid IR in canonical form, so a file cannot expect the unprintable.
    assert text.show(text.parse(expected, str(path))) == expected


def test_every_registered_pass_has_a_file() -> None:
    have = {p.parent.name for p in FILES}
    assert not set(passes.REGISTRY) - have, f"passes without a file under {DIR}: {sorted(set(passes.REGISTRY) - have)}"
    assert not have - set(passes.REGISTRY), f"folders naming no registered pass: {sorted(have - set(passes.REGISTRY))}"


def test_each_file_shows_its_pass_change_something() -> None:
    """A file whose expected IR equals its input shows nothing unless it says so (a refusal)."""
    for path in FILES:
        _, source, expected = split(path)
        if "// unchanged" in source:
            continue
        assert text.parse(source, str(path)) != text.parse(expected, str(path)), f"{path}: the pass changes nothing"


def test_pipeline_syntax_and_refusals() -> None:
    steps = optcmd.parse_pipeline("privatize, reduce-gpu{reassociate=false},map-gpu{atomics=false,reassociate=true}")
    assert [str(s) for s in steps] == ["privatize", "reduce-gpu{reassociate=false}",
                                       "map-gpu{atomics=false,reassociate=true}"]
    import click

    for bad, why in [("nope", "unknown pass 'nope'"), ("privatize{x=1}", "no option 'x'"),
                     ("reduce-gpu{reassociate=3}", "takes true or false"), ("fuse{", "unbalanced"),
                     ("fuse}", "unbalanced"), ("fuse{reassociate}", "not KEY=VALUE"), (",x{a=1", "unbalanced")]:
        with pytest.raises(click.UsageError, match=why):
            optcmd.parse_pipeline(bad)


def test_options_reach_the_pass() -> None:
    src = ("kernel k(i32 n, in f64 a[n], inout f64 s[1]) {\n  for i in 0..n {\n    s[0] += a[i];\n  }\n}\n")
    module = text.parse(src)
    marked = optcmd.run_pipeline(module, optcmd.parse_pipeline("reduce-gpu"))
    kept = optcmd.run_pipeline(module, optcmd.parse_pipeline("reduce-gpu{reassociate=false}"))
    assert "reduce(+)" in text.show(marked) and kept == module


def _opt(*args: str) -> tuple[int, str, str]:
    """``transpile opt ARGS`` in this process: exit status, stdout, stderr."""
    from click.testing import CliRunner

    from transpile.cli import main

    r = CliRunner().invoke(main, ["opt", *args])
    return r.exit_code, r.stdout, r.stderr


def test_cli_runs_a_file_and_reports_errors(tmp_path: Path) -> None:
    path = DIR / "privatize" / "map_outer_temp.ir"
    spec, _, expected = split(path)
    assert _opt(str(path), "-p", spec) == (0, expected, "")
    out = tmp_path / "o.ir"
    code, stdout, stderr = _opt(str(path), "-p", spec, "-o", str(out), "--print-ir-after-all")
    assert code == 0 and not stdout and out.read_text() == expected and "IR after privatize" in stderr
    code, stdout, stderr = _opt(str(path), "-p", "privatise")
    assert code == 2 and "unknown pass 'privatise'" in stderr and not stdout
    code, stdout, _ = _opt("--list")
    assert code == 0 and "reduce-gpu{reassociate=true}" in stdout.splitlines()
    # A user's mistake in the file: file:line:col, exit 1, no traceback, no output file (a real process).
    broken = tmp_path / "broken.ir"
    broken.write_text("kernel k(i32 n) {\n  for i 0..n {}\n}\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "transpile.cli", "opt", str(broken), "-p", "privatize", "-o",
                           str(tmp_path / "never.ir")], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1 and f"{broken}:2:9: error:" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "never.ir").exists()


def test_ir_invariants_are_checked_after_each_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass that breaks the IR is caught right after it runs, not later."""
    from transpile.diagnostics import TranspileError

    module = text.parse(DIR.joinpath("privatize", "map_outer_temp.ir").read_text().partition(MARK)[0])

    def broken(k: ir.Kernel, **_: object) -> ir.Kernel:  # drops the parameters its body names
        return dataclasses.replace(k, params=k.params[:1])

    monkeypatch.setattr(passes.REGISTRY["privatize"], "run", broken)
    with pytest.raises(TranspileError):
        optcmd.run_pipeline(module, optcmd.parse_pipeline("privatize"))
    optcmd.run_pipeline(module, optcmd.parse_pipeline("privatize"), verify_each=False)
