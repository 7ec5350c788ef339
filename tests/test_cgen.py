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
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import cgen
from transpile import cuda, pipeline
from transpile.frontend import c as cfront

SIZES = ((5, 7, 3, 2), (1, 2, 6, 3), (4, 4, 4, 1))  # ni nj nk tsteps


def test_programs_are_warning_free_c(tmp_path: Path) -> None:
    for seed in range(60):
        src = tmp_path / f"p{seed}.c"
        src.write_text(cgen.program(seed))
        proc = subprocess.run(["gcc", "-std=c99", "-fsyntax-only", "-Wall", "-Wextra", "-Wno-unknown-pragmas",
                               "-Wno-unused-variable", "-Wno-unused-parameter", str(src)],
                              capture_output=True, text=True)
        assert proc.returncode == 0 and not proc.stderr, f"seed {seed}:\n{src.read_text()}\n{proc.stderr}"


def _harness(sig: list[tuple[str, str, tuple[str, ...]]]) -> str:
    """A ``main(argc, argv)`` calling ``kernel_fuzz`` on arrays of exactly their extents, the sizes
    ``ni nj nk tsteps`` taken from the command line."""
    def count(dims: tuple[str, ...]) -> str:
        return " * ".join(f"({d})" for d in dims)
    lines = ["#include <stdlib.h>", "int main(int argc, char **argv) {", "  srand(1);"]
    lines += [f"  int {n} = atoi(argv[{k + 1}]);" for k, n in enumerate(("ni", "nj", "nk", "tsteps"))]
    lines.append("  (void)argc; (void)ni; (void)nj; (void)nk; (void)tsteps;")
    args = []
    for ty, name, dims in sig:
        if not dims:
            args.append(name if name in ("ni", "nj", "nk", "tsteps") else "1.25")
            continue
        lines.append(f"  {ty} *{name} = malloc(sizeof({ty}) * {count(dims)} + 1);")
        value = "rand() % 100" if ty == "int" else f"({ty})(rand() % 2001 - 1000) / 1000"
        lines.append(f"  for (long e = 0; e < {count(dims)}; e++) {name}[e] = {value};")
        args.append(f"(void *){name}")
    lines.append(f"  kernel_fuzz({', '.join(args)});")
    lines += [f"  free({name});" for _, name, dims in sig if dims]
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


def _sanitized_runs(tmp_path: Path, text: str, sig: list[tuple[str, str, tuple[str, ...]]]) -> None:
    (tmp_path / "k.c").write_text(text)
    (tmp_path / "main.c").write_text(_harness(sig))
    exe = tmp_path / "run"
    subprocess.run(["gcc", "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                    "-o", str(exe), str(tmp_path / "k.c"), str(tmp_path / "main.c"), "-lm"], check=True)
    for sizes in SIZES:
        proc = subprocess.run([str(exe), *map(str, sizes)], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, f"at ni nj nk tsteps = {sizes}:\n{text}\n{proc.stderr[-3000:]}"


@pytest.mark.parametrize("seed", range(0, 60, 6))
def test_programs_run_clean_under_sanitizers(tmp_path: Path, seed: int) -> None:
    _sanitized_runs(tmp_path, *cgen.case(seed))


@pytest.mark.parametrize("phase", sorted(set(cgen.PHASES), key=lambda f: f.__name__), ids=lambda f: f.__name__)
def test_every_phase_runs_clean_under_sanitizers(tmp_path: Path, phase: Callable[[cgen.Pool], str]) -> None:
    for seed in range(2):  # each phase draws its own details: two draws of each
        _sanitized_runs(tmp_path, *cgen.case(seed, only=phase))


@pytest.mark.parametrize("seed", range(1, 40, 8))
def test_programs_compile(seed: int, tmp_path: Path) -> None:
    src = tmp_path / "fuzz.c"
    src.write_text(cgen.program(seed))
    module = cfront.parse_file(str(src))
    assert "__global__" in cuda.emit(pipeline.lower(module), source=str(src))


def test_mutants_are_deterministic_and_change_only_the_scop() -> None:
    from tests.fuzz_cuda import mutant, mutant_base

    names = set()
    for seed in range(40):
        name, text = mutant(seed)
        assert mutant(seed) == (name, text)
        base, original = mutant_base(seed)
        assert base == name
        assert text != original, f"seed {seed} changed nothing"
        head, tail = original.split("#pragma scop")[0], original.split("#pragma endscop")[1]
        head, tail = (h.replace("double", "float") for h in (head, tail))  # a precision change may be there
        assert text.replace("double", "float").startswith(head) and text.replace("double", "float").endswith(tail)
        names.add(name)
    assert len({n for n in names if not n.startswith("fuzz-")}) >= 12  # many of the 30
    assert any(n.startswith("fuzz-") for n in names)  # and generated programs
