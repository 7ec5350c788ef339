"""``transpile deps FILE``: print the dependence graph of each kernel, or write it as Graphviz dot."""

from __future__ import annotations

from pathlib import Path

import click
import networkx as nx

from passes import accesses, deps
from transpile import ir
from transpile.ir import text


def describe(kernel: ir.Kernel) -> tuple[str, nx.MultiDiGraph]:
    """A readable report: statements, dependences and the loops' verdicts."""
    stmts = accesses.analyze(kernel)
    graph = deps.analyze(kernel)
    carried = deps.carried_loops(graph)
    lines = [f"kernel {kernel.name}", "statements:"]
    for s in stmts:
        indent = "  " * (s.depth + 1)
        lines.append(f"  {s.id:<4}{indent}{_one_line(s)}")
    lines.append("dependences:")
    body = deps.format_graph(graph)
    lines.extend(f"  {ln}" for ln in body.splitlines()) if body else lines.append("  none")
    lines.append("loops:")
    for s in stmts:
        if s.kind == "bounds":
            verdict = "carries a dependence (sequential)" if s.id in carried else "parallel"
            lines.append(f"  {s.id} ({s.node.var}): {verdict}")  # type: ignore[attr-defined]
    return "\n".join(lines), graph


def _one_line(s: accesses.StmtInfo) -> str:
    n = s.node
    if isinstance(n, ir.For):
        step = f" step {n.step}" if n.step != 1 else ""
        return f"for {n.var} in {text.show_expr(n.lo)}..{text.show_expr(n.hi)}{step}"
    if isinstance(n, ir.If):
        return f"if ({text.show_expr(n.cond)})"
    return text.show_stmt(n).strip()  # type: ignore[arg-type]


def to_dot(name: str, graph: nx.MultiDiGraph) -> str:
    """Graphviz dot text of a dependence graph (deterministic)."""
    out = [f'digraph "{name}" {{', "  node [shape=box, fontname=monospace];"]
    for node, d in sorted(graph.nodes(data=True), key=lambda x: int(x[0][1:])):
        out.append(f'  {node} [label="{node} ({d["kind"]})"];')
    for u, v, d in sorted(graph.edges(data=True), key=lambda e: (int(e[0][1:]), int(e[1][1:]), e[2]["name"],
                                                                 e[2]["kind"], e[2]["level"])):
        style = "solid" if d["kind"] == "flow" else "dashed" if d["kind"] == "anti" else "dotted"
        lab = f'{d["kind"]} {d["name"]} L{d["level"]} ({",".join(d["direction"])})'
        out.append(f'  {u} -> {v} [label="{lab}", style={style}];')
    out.append("}")
    return "\n".join(out) + "\n"


@click.command("deps")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--function", "function", metavar="NAME", default=None, help="The function to analyse.")
@click.option("-I", "include_dirs", multiple=True, metavar="DIR", help="Add DIR to the include path.")
@click.option("-D", "defines", multiple=True, metavar="NAME[=VALUE]", help="Define a preprocessor macro.")
@click.option("--dot", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the graph(s) as Graphviz dot to this file.")
def deps_cmd(file: Path, function: str | None, include_dirs: tuple[str, ...], defines: tuple[str, ...],
             dot: Path | None) -> None:
    """Print the dependence graph of each kernel of FILE (.c or .ir), as the passes see it: pointers
    indexed by hand are split first (``passes.delinearize``, a flat-index warning where they are not)."""
    from passes import delinearize
    from transpile import cli, driver, frontend

    def action() -> None:
        module = frontend.load(file, function=function, include_dirs=include_dirs, defines=defines)
        driver.check_flat(module)
        dots = []
        for k in module.kernels:
            report, graph = describe(delinearize.run(k))
            click.echo(report)
            dots.append(to_dot(k.name, graph))
        if dot is not None:
            cli.write_atomic(dot, "".join(dots))

    cli._guard(action)
