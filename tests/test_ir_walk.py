"""ir.walk / ir.children against a plain traversal of every dataclass field: the per-class field
table (ir._child_fields) that skips plain-data fields must visit exactly the same nodes; and
ir.statements, which skips expressions, the same statements in the same order."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from hypothesis import given, settings

from tests import polybench, strategies
from transpile import ir, pipeline
from transpile.frontend import c as cfront


def _every_field(node: ir.Node) -> Iterator[ir.Node]:
    def nodes_in(value: object) -> Iterator[ir.Node]:
        if isinstance(value, ir.Node):
            yield value
        elif isinstance(value, tuple):
            for v in value:
                yield from nodes_in(v)
        elif isinstance(value, ir.ArrayType):
            yield from value.dims

    for f in dataclasses.fields(node):  # type: ignore[arg-type]
        if f.name != "loc":
            yield from nodes_in(getattr(node, f.name))


def _plain_walk(node: ir.Node) -> list[int]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(id(n))
        stack.extend(reversed(list(_every_field(n))))
    return out


def _same(node: ir.Node) -> None:
    assert [id(n) for n in ir.walk(node)] == _plain_walk(node)
    stmts = (ir.Decl, ir.Alloc, ir.Assign, ir.For, ir.If, ir.Return, ir.Launch)
    assert [id(n) for n in ir.statements(node)] == [id(n) for n in ir.walk(node) if isinstance(n, stmts)]
    for n in ir.walk(node):
        assert [id(c) for c in ir.children(n)] == [id(c) for c in _every_field(n)]


@settings(max_examples=60, deadline=None)
@given(strategies.kernels())
def test_walk_visits_what_every_field_holds(k: ir.Kernel) -> None:
    _same(ir.Module((), (k,)))


def test_walk_on_lowered_polybench() -> None:
    for name in ("gemm", "atax", "durbin", "trmm", "adi", "correlation"):
        spec = polybench.spec(name)
        module = cfront.parse_file(str(spec.path), function=spec.function)
        _same(module)
        _same(pipeline.lower(module))
