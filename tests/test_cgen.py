"""The fuzz generator (tests/cgen.py) stays sound, and a few of its programs compile.

``tests/fuzz_cuda.py`` verifies thousands of these programs outside CI; here
the generator itself is kept honest: its programs are warning-free C that run
cleanly under UBSan and ASan at small sizes, every array allocated at exactly
its extent (so a verifier failure on one of them is the compiler's fault, not
the program's), and a handful go through the front end, the passes and the
emitter.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests import cgen
from transpile import cfront, cuda, pipeline

SIZES = ({"ni": 5, "nj": 7, "nk": 3, "tsteps": 2}, {"ni": 1, "nj": 2, "nk": 6, "tsteps": 3})


def test_programs_are_warning_free_c(tmp_path: Path) -> None:
    for seed in range(60):
        src = tmp_path / f"p{seed}.c"
        src.write_text(cgen.program(seed))
        proc = subprocess.run(["gcc", "-std=c99", "-fsyntax-only", "-Wall", "-Wextra", "-Wno-unknown-pragmas",
                               "-Wno-unused-variable", "-Wno-unused-parameter", str(src)],
                              capture_output=True, text=True)
        assert proc.returncode == 0 and not proc.stderr, f"seed {seed}:\n{src.read_text()}\n{proc.stderr}"


def _harness(sig: list[tuple[str, str, tuple[str, ...]]], sizes: dict[str, int]) -> str:
    """A ``main`` calling ``kernel_fuzz`` at ``sizes`` on arrays of exactly their extents."""
    def count(dims: tuple[str, ...]) -> str:
        return " * ".join(f"({d})" for d in dims)
    lines = ["#include <stdlib.h>", "int main(void) {", "  srand(1);"]
    lines += [f"  int {n} = {v};" for n, v in sizes.items()]
    args = []
    for ty, name, dims in sig:
        if not dims:
            args.append(name if name in sizes else "1.25")
            continue
        lines.append(f"  {ty} *{name} = malloc(sizeof({ty}) * {count(dims)} + 1);")
        value = "rand() % 100" if ty == "int" else f"({ty})(rand() % 2001 - 1000) / 1000"
        lines.append(f"  for (long e = 0; e < {count(dims)}; e++) {name}[e] = {value};")
        args.append(f"(void *){name}")
    lines.append(f"  kernel_fuzz({', '.join(args)});")
    lines += [f"  free({name});" for _, name, dims in sig if dims]
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("seed", range(0, 60, 4))
def test_programs_run_clean_under_sanitizers(tmp_path: Path, seed: int) -> None:
    text, sig = cgen.case(seed)
    (tmp_path / "k.c").write_text(text)
    for n, sizes in enumerate(SIZES):
        (tmp_path / "main.c").write_text(_harness(sig, sizes))
        exe = tmp_path / f"run{n}"
        subprocess.run(["gcc", "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                        "-o", str(exe), str(tmp_path / "k.c"), str(tmp_path / "main.c"), "-lm"], check=True)
        proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, f"seed {seed} at {sizes}:\n{text}\n{proc.stderr[-3000:]}"


@pytest.mark.parametrize("seed", range(1, 40, 8))
def test_programs_compile(seed: int, tmp_path: Path) -> None:
    src = tmp_path / "fuzz.c"
    src.write_text(cgen.program(seed))
    module = cfront.parse_file(str(src))
    assert "__global__" in cuda.emit(pipeline.lower(module), source=str(src))
