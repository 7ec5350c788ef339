"""The C compiler's habits on the command line (transpile/cli/options.py, transpile/diagnostics.py, docs/cli.md).

stdin, -O levels, -std=, -x c, -w / -W / -Wno- / -Werror, -v / -q, a repeated
--function, -o DIR, Latin-1 bytes in comments, warnings with caret, -W name
and colour (a pseudo-terminal gets it, NO_COLOR and pipes do not).
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from transpile import diagnostics
from transpile.cli import options as cliopts

ROOT = Path(__file__).resolve().parent.parent
#: Writes past A's extent: the out-of-bounds warning at 4:5.
SHIFT = "void f(int n, double A[n]) {\n  int i;\n  for (i = 0; i < n; i++)\n    A[i + 1] = 2.0 * A[i];\n}\n"
SAXPY = ("void saxpy(int n, double a, double x[n], double y[n]) {\n"
         "  for (int i = 0; i < n; i++)\n    y[i] = a * x[i] + y[i];\n}\n")


def run(*args: str, stdin: str | bytes | None = None, cwd: Path | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    proc = subprocess.run([sys.executable, "-m", "transpile.cli", *args], input=data, capture_output=True,
                          cwd=cwd or ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, timeout=600)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(errors="replace"),
                                       proc.stderr.decode(errors="replace"))


def test_normalize() -> None:
    n = cliopts.normalize
    assert n(["k.c", "-O0", "-std=c11", "-x", "c", "-Wall", "-Wextra", "-pedantic"]) == ["k.c", "--naive"]
    assert n(["-O2", "k.c", "-O1", "-O", "-Os"]) == ["k.c"] and n(["-O3", "k.c"]) == ["--evolve", "k.c"]
    assert n(["-w", "-Werror", "-Werror=flat-index", "-Wno-uninitialized", "-Wflat-index", "-v", "-q"]) == [
        "--w-off", "--w-error", "all", "--w-error", "flat-index", "--silence", "uninitialized", "--w-on",
        "flat-index", "--verbose", "--quiet"]
    assert n(["-o", "-O3", "-D", "-w", "--function", "f", "--function", "f"]) == [
        "-o", "-O3", "-D", "-w", "--function", "f", "--function", "f"]  # option values are not rewritten
    for bad in (["-O9"], ["-std=c++17"], ["-x", "cu"]):
        with pytest.raises(Exception, match="-O9|c\\+\\+17|only C input"):
            n(bad)


def test_stdin_std_and_optimization_levels(tmp_path: Path) -> None:
    out = run("-", "-std=c99", "-O2", "--no-verify", stdin=SAXPY)
    assert out.returncode == 0, out.stderr
    assert 'extern "C" void saxpy(int n, double a, double *x, double *y)' in out.stdout  # stdout for stdin
    gemm = (ROOT / "tests" / "kernels" / "gemm.c").read_text()
    opt, naive = run("-", "-O2", "--no-verify", stdin=gemm), run("-", "-O0", "--no-verify", stdin=gemm)
    assert opt.returncode == 0 and naive.returncode == 0, opt.stderr + naive.stderr
    assert "mma.sync" in opt.stdout and "mma.sync" not in naive.stdout and "__shared__" not in naive.stdout
    assert run("-", "-std=c++17", "--no-verify", stdin=SAXPY).returncode == 2


def test_repeated_function_and_output_directory(tmp_path: Path) -> None:
    src = tmp_path / "two.c"
    src.write_text(SAXPY + SAXPY.replace("saxpy", "daxpy"))
    r = run(str(src), "--function", "saxpy", "--function", "daxpy", "--no-verify")
    assert r.returncode == 2 and "leave --function out" in r.stderr and "Traceback" not in r.stderr
    (tmp_path / "out").mkdir()
    r = run(str(src), "-o", str(tmp_path / "out"), "--no-verify")
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "out" / "two.cu").read_text()
    assert "void saxpy(" in text and "void daxpy(" in text


def test_latin1_comments_and_strings(tmp_path: Path) -> None:
    src = tmp_path / "latin.c"
    src.write_bytes(b"/* caf\xe9 \xa9 */\n" + SAXPY.encode() + b'static const char *s = "na\xefve";\n')
    r = run(str(src), "-o", "-", "--no-verify")
    assert r.returncode == 0, r.stderr
    src.write_bytes(SAXPY.replace("a * x[i]", "a \xd7 x[i]").encode("latin-1"))
    r = run(str(src), "-o", "-", "--no-verify")
    assert r.returncode == 1 and f"{src}:3:14: error: file is not valid UTF-8" in r.stderr
    assert r.stderr.splitlines()[2] == " " * 13 + "^"


def test_warnings_like_clang(tmp_path: Path) -> None:
    src = tmp_path / "shift.c"
    src.write_text(SHIFT)
    r = run(str(src), "-o", str(tmp_path / "o.cu"), "--no-verify")
    assert r.returncode == 0, r.stderr
    head, line, caret = r.stderr.splitlines()[:3]
    assert head.startswith(f"{src}:4:5: warning: 'A' is written at or past") and head.endswith("[-Wout-of-bounds]")
    assert line == "    A[i + 1] = 2.0 * A[i];" and caret == "    ^" and "\x1b[" not in r.stderr
    assert run(str(src), "-o", str(tmp_path / "o.cu"), "--no-verify", "-w").stderr == ""
    assert run(str(src), "-o", str(tmp_path / "o.cu"), "--no-verify", "-Wno-out-of-bounds").stderr == ""
    assert run(str(src), "-o", str(tmp_path / "o.cu"), "--no-verify", "-q").stderr == ""
    err = run(str(src), "-o", str(tmp_path / "e.cu"), "--no-verify", "-Werror")
    assert err.returncode == 1 and "error: 'A' is written" in err.stderr and "[-Werror,-Wout-of-bounds]" in err.stderr
    assert not (tmp_path / "e.cu").exists()
    one = run(str(src), "-o", str(tmp_path / "e.cu"), "--no-verify", "-Werror=flat-index", "-Wbogus")
    assert one.returncode == 0 and "unknown warning option '-Wbogus'" in one.stderr


def _on_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """stderr of the CLI run on a pseudo-terminal."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "transpile.cli", *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=follower, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm", **env})
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=600)
    os.close(leader)
    return b"".join(chunks).decode(errors="replace")


def test_colour_on_a_terminal_only(tmp_path: Path) -> None:
    src = tmp_path / "shift.c"
    src.write_text(SHIFT)
    args = [str(src), "-o", str(tmp_path / "o.cu"), "--no-verify"]
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    coloured = _on_a_terminal(args, {**env, "NO_COLOR": ""})
    assert "\x1b[1;35mwarning:\x1b[0m" in coloured and "\x1b[1;32m    ^\x1b[0m" in coloured, repr(coloured)
    # No colour (SGR) sequence; the progress line's erase (ESC [K) may still show on a slow machine.
    assert not re.search("\x1b\\[[0-9;]*m", _on_a_terminal(args, {"NO_COLOR": "1"}))
    assert diagnostics.paint("transpile: error: x") == "\x1b[1mtranspile: \x1b[0m\x1b[1;31merror:\x1b[0m \x1b[1mx\x1b[0m"


def test_unsupported_system_header_is_named(tmp_path: Path) -> None:
    src = tmp_path / "cx.c"
    src.write_text("#include <complex.h>\n" + SAXPY)
    r = run(str(src), "-o", "-", "--no-verify")
    assert r.returncode == 1 and "the system header <complex.h> is not supported" in r.stderr
    assert "<math.h>" in r.stderr and "-I" not in r.stderr.splitlines()[0]
