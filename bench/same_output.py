"""Check that the compiler's output did not change: CUDA, the IR after every pass, and the warnings.

    PYTHONPATH=<base checkout> python bench/same_output.py write REF_DIR [--random N]
    PYTHONPATH=<this checkout>  python bench/same_output.py check REF_DIR [--random N]

Work that only makes the compiler cheaper (issue 43: the passes' cost against the size of the
input) must leave every result byte-identical.  ``write`` compiles a fixed set of inputs with
``--no-verify --dump-ir`` in one process and stores, per input, the emitted CUDA, the IR after
every pass and the diagnostics on stderr; ``check`` compiles them again with the code on
``PYTHONPATH`` and lists every file that differs (exit 1 if any).  Run ``write`` with the base
commit's code (``git worktree add /tmp/base 98dd4dc``; ``PYTHONPATH=/tmp/base``) and ``check``
with the new code.

The inputs: the 30 PolyBench kernels (``tests/kernels``), ``examples/*.c``, the three
generated shapes of ``bench/compile_cost.py`` at sizes the base commit compiles in seconds, and
``--random N`` generated functions (default 60, a fixed seed) of several adjacent loop nests
reading and writing a few arrays at small offsets, with scalars and inner loops: the inputs on
which fusion and distribution have most choices.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import compile_cost  # noqa: E402

SHAPE_SIZES = {"chain": (5, 12, 20), "independent": (8, 30), "loops": (6, 20, 40)}


def random_c(seed: int) -> str:
    """A function of 2-7 adjacent loop nests over 1-D and 2-D arrays (in bounds for any n >= 0)."""
    rnd = random.Random(seed)
    one, two = ["a", "b", "c", "d"], ["P", "Q", "R"]
    nests: list[str] = []
    for _ in range(rnd.randint(2, 7)):
        depth = rnd.choice((1, 1, 2))
        lo = rnd.choice(("0", "0", "1"))
        stmts: list[str] = []
        for _ in range(rnd.randint(1, 3)):
            stmts.append(_stmt(rnd, one, two, depth))
        if depth == 2:
            inner = "\n".join("      " + s for s in stmts)
            pre = "    " + _stmt(rnd, one, two, 1) + "\n" if rnd.random() < 0.3 else ""
            tail = "\n    " + _stmt(rnd, one, two, 1) if rnd.random() < 0.3 else ""
            nests.append(f"  for (int i = {lo}; i < n; i++) {{\n{pre}    for (int j = 0; j < n; j++) {{\n"
                         f"{inner}\n    }}{tail}\n  }}")
        else:
            if rnd.random() < 0.25:
                stmts = [f"double s = {rnd.choice(one)}[i] * 0.5;", f"{rnd.choice(one)}[i] = s + 1.0;"] + stmts
            body = "\n".join("    " + s for s in stmts)
            nests.append(f"  for (int i = {lo}; i < n; i++) {{\n{body}\n  }}")
    params = ", ".join(["int n"] + [f"double {x}[n + 2]" for x in one] + [f"double {x}[n + 2][n + 2]" for x in two])
    return f"void kernel_random{seed}({params})\n{{\n" + "\n".join(nests) + "\n}\n"


def _stmt(rnd: random.Random, one: list[str], two: list[str], depth: int) -> str:
    def ref(write: bool) -> str:
        if depth == 2 and rnd.random() < 0.6:
            x = rnd.choice(two)
            o1, o2 = (0, 0) if write else (rnd.choice((0, 0, 1, 2)), rnd.choice((0, 0, 1, 2)))
            return f"{x}[i + {o1}][j + {o2}]" if rnd.random() < 0.7 else f"{x}[j + {o2}][i + {o1}]"
        x = rnd.choice(one)
        v = "i" if depth == 1 or rnd.random() < 0.5 else "j"
        return f"{x}[{v} + {0 if write else rnd.choice((0, 0, 1, 2))}]"

    op = rnd.choice(("=", "=", "+="))
    return f"{ref(True)} {op} {ref(False)} * 0.5 + {ref(False)};"


def inputs(tmp: Path, n_random: int) -> list[Path]:
    files = sorted((ROOT / "tests" / "kernels").glob("*.c")) + sorted((ROOT / "examples").glob("*.c"))
    for shape, sizes in SHAPE_SIZES.items():
        for n in sizes:
            p = tmp / f"{shape}_{n}.c"
            p.write_text(compile_cost.SHAPES[shape](n))
            files.append(p)
    for seed in range(n_random):
        p = tmp / f"random{seed}.c"
        p.write_text(random_c(seed))
        files.append(p)
    return files


def compile_all(files: list[Path], out: Path) -> None:
    """Each input's CUDA, per-pass IR and stderr under ``out/<stem>``."""
    from transpile.cli import main

    for f in files:
        d = out / f"{f.parent.name}-{f.stem}"
        d.mkdir(parents=True)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                main([str(f), "--no-verify", "-o", str(d / "out.cu"), "--dump-ir", str(d / "ir")],
                     standalone_mode=False)
                status = 0
            except SystemExit as e:
                status = e.code if isinstance(e.code, int) else 1
        (d / "stderr.txt").write_text(f"exit {status}\n" + err.getvalue().replace(str(f.parent), "DIR"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=("write", "check"))
    ap.add_argument("ref", type=Path)
    ap.add_argument("--random", type=int, default=60, help="generated functions (default 60)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="same_output.") as d:
        tmp = Path(d)
        (tmp / "src").mkdir()
        files = inputs(tmp / "src", args.random)
        if args.mode == "write":
            if args.ref.exists():
                shutil.rmtree(args.ref)
            compile_all(files, args.ref)
            print(f"wrote the outputs of {len(files)} inputs under {args.ref}")
            return 0
        compile_all(files, tmp / "new")
        old = {p.relative_to(args.ref) for p in args.ref.rglob("*") if p.is_file()}
        new = {p.relative_to(tmp / "new") for p in (tmp / "new").rglob("*") if p.is_file()}
        differ = sorted(str(p) for p in old | new
                        if p not in old or p not in new or (args.ref / p).read_bytes() != (tmp / "new" / p).read_bytes())
        for p in differ:
            print(f"differs: {p}")
        print(f"{len(files)} inputs, {len(new)} files compared, {len(differ)} differ")
        return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
