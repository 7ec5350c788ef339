"""Regenerate the table in docs/parallelism.md from the compiler itself.

    python docs/parallelism_table.py            # rewrite the table in place
    python docs/parallelism_table.py --check    # exit 1 if the table is stale (used by the tests)

For each of the 30 kernels in tests/kernels/: the loops the dependence
analysis proves parallel (front-end IR, loop variable and id), the loops that
carry a dependence, the host loops and the GPU mapping after the default
pipeline, and the number of kernels (Launch regions) emitted.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from passes import deps, reductions  # noqa: E402
from tests import polybench  # noqa: E402
from transpile import ir, pipeline  # noqa: E402
from transpile.frontend import c as cfront  # noqa: E402

DOC = ROOT / "docs" / "parallelism.md"
BEGIN, END = "<!-- table:begin -->", "<!-- table:end -->"


def _loops(k: ir.Kernel, ids: set[str], all_ids: dict[int, str]) -> str:
    out = [f"{n.var}@{all_ids[id(n)]}" for n in ir.walk(k) if isinstance(n, ir.For) and all_ids[id(n)] in ids]
    return " ".join(out) or "-"


def _mapping(k: ir.Kernel) -> tuple[str, str, int]:
    """(par loops with their dims, host loops, number of launches) of a lowered kernel."""
    par, host, launches = [], [], 0

    def visit(stmts: tuple[ir.Stmt, ...], in_launch: bool) -> None:
        nonlocal launches
        for s in stmts:
            if isinstance(s, ir.Launch):
                launches += 1
                visit(s.body, True)
            elif isinstance(s, ir.For):
                if s.par:
                    par.append(f"{s.var}:{s.par}")
                elif not in_launch:
                    host.append(s.var)
                visit(s.body, in_launch)
            elif isinstance(s, ir.If):
                visit(s.then, in_launch)
                visit(s.orelse, in_launch)

    visit(k.body, False)
    return " ".join(par) or "-", " ".join(host) or "-", launches


def table() -> str:
    rows = ["| kernel | parallel loops (dependence analysis) | loops carrying a dependence | reductions "
            "| host loops | GPU mapping (par loops) | launches |",
            "|---|---|---|---|---|---|---|"]
    for name in polybench.NAMES:
        spec = polybench.spec(name)
        module = cfront.parse_file(str(spec.path), function=spec.function)
        (k,) = module.kernels
        graph = deps.analyze(k)
        all_ids = deps.loop_ids(k)
        carried = deps.carried_loops(graph)
        parallel = set(all_ids.values()) - carried
        reds = " ".join(f"{r.name}({r.op})@{r.loop_var}" for r in reductions.analyze(k)) or "-"
        (lk,) = pipeline.lower(module).kernels
        par, host, launches = _mapping(lk)
        rows.append(f"| {name} | {_loops(k, parallel, all_ids)} | {_loops(k, carried, all_ids)} | {reds} "
                    f"| {host} | {par} | {launches} |")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    doc = DOC.read_text() if DOC.exists() else "# Parallelism\n"
    new_table = f"{BEGIN}\n{table()}\n{END}"
    if BEGIN in doc:
        head, rest = doc.split(BEGIN, 1)
        updated = head + new_table + rest.split(END, 1)[1]
    else:
        updated = doc.rstrip("\n") + "\n\n## The 30 kernels\n\n" + new_table + "\n"
    if "--check" in argv:
        if updated != doc:
            print("docs/parallelism.md is stale: run python docs/parallelism_table.py")
            return 1
        return 0
    DOC.write_text(updated)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
