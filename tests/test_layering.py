"""The layers import downward only (issue 42, STYLE.md section 9).

The import graph of ``transpile/`` and ``passes/`` is read from the source with :mod:`ast` (no module
is imported): every ``import`` and ``from ... import`` at module level and inside functions counts.
Imports under ``if TYPE_CHECKING:`` do not: they are never executed (annotations only), so they
cannot make an import cycle; they are the one way a launch-form module names the emitter type that
calls it.

- no import cycles among the modules;
- ``passes/`` imports only the IR layer (``transpile.ir`` and its modules, ``transpile.diagnostics``)
  besides other passes;
- nothing below the command line imports it (``transpile.cli``);
- the shared helpers (atomic writes, the error guard, the toolchain lookup) are defined in one module
  each.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("transpile", "passes")
PASS_MAY_IMPORT = ("transpile.ir", "transpile.diagnostics")
# helper -> the one module that defines it
HELPERS = {
    "write_atomic": "transpile.fsutil",
    "guard": "transpile.guard",
    "nvcc": "transpile.toolchain",
    "nvcc_version": "transpile.toolchain",
    "parse_ptxas": "transpile.toolchain",
}
TOOLS = ("nvcc", "ptxas")


def modules() -> dict[str, Path]:
    """Every module of the two packages, by dotted name."""
    found: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _type_only(tree: ast.AST) -> set[int]:
    """The ids of the import nodes inside ``if TYPE_CHECKING:`` blocks."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                for sub in ast.walk(stmt):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)):
                        skip.add(id(sub))
    return skip


def _targets(name: str, path: Path, node: ast.Import | ast.ImportFrom, mods: dict[str, Path]) -> set[str]:
    """The modules of the two packages that ``node`` (in module ``name``) imports."""
    out: set[str] = set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            parts = alias.name.split(".")
            # ``import a.b.c`` runs a, a.b and a.b.c; the deepest one names the dependency
            while parts and ".".join(parts) not in mods:
                parts.pop()
            if parts:
                out.add(".".join(parts))
        return out
    base = node.module or ""
    if node.level:
        pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        pkg = pkg[: len(pkg) - (node.level - 1)]
        base = ".".join(pkg + ([base] if base else []))
    for alias in node.names:
        if f"{base}.{alias.name}" in mods:
            out.add(f"{base}.{alias.name}")
        elif base in mods:
            out.add(base)
    return out


def import_graph() -> nx.DiGraph:
    """Module -> module edges of every executed import (module level and function level)."""
    mods = modules()
    graph = nx.DiGraph()
    for name, path in mods.items():
        graph.add_node(name)
        tree = ast.parse(path.read_text(), str(path))
        skip = _type_only(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skip:
                for target in _targets(name, path, node, mods):
                    if target != name:
                        graph.add_edge(name, target)
    return graph


def test_no_import_cycles() -> None:
    cycles = [sorted(c) for c in nx.strongly_connected_components(import_graph()) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


def test_passes_import_only_the_ir_layer() -> None:
    graph = import_graph()
    bad = sorted((m, t) for m, t in graph.edges
                 if m.split(".")[0] == "passes" and t.split(".")[0] == "transpile"
                 and not any(t == p or t.startswith(p + ".") for p in PASS_MAY_IMPORT))
    assert not bad, f"passes/ importing past the IR layer: {bad}"


def test_nothing_below_the_cli_imports_it() -> None:
    graph = import_graph()
    bad = sorted((m, t) for m, t in graph.edges
                 if (t == "transpile.cli" or t.startswith("transpile.cli."))
                 and not (m == "transpile.cli" or m.startswith("transpile.cli.") or m == "transpile.__main__"))
    assert not bad, f"modules importing the command line: {bad}"


def test_shared_helpers_live_in_one_module() -> None:
    bad: list[str] = []
    for name, path in modules().items():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                home = HELPERS.get(node.name.lstrip("_"))
                if home is not None and name != home:
                    bad.append(f"{name}: defines {node.name} (belongs in {home})")
            if (isinstance(node, ast.Call) and ast.unparse(node.func) == "shutil.which" and node.args
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value in TOOLS
                    and name != "transpile.toolchain"):
                bad.append(f"{name}:{node.lineno}: looks up {node.args[0].value} (transpile.toolchain finds it)")
    for helper, home in HELPERS.items():
        if home not in modules():
            bad.append(f"{home} (home of {helper}) is missing")
    assert not bad, "\n".join(bad)
