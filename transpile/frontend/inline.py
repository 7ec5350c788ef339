"""Inlining of helper functions that take arrays (``axpy(n, a, x, y)``, ``scale_row(n, A[i], s)``).

Helpers with scalar parameters become device functions; one that takes an array or a pointer cannot
(offloaded code passes no pointers), so its calls are inlined before lowering (docs/ordinary_c.md):
a call statement ``h(args);`` becomes a block declaring each parameter as a local initialised with its
argument (an array parameter as a local pointer, which :mod:`transpile.frontend.pointers` then reads as an
offset into the argument's array: ``&a[k]`` and rows ``A[i]`` included) followed by the body; a call in
an expression, ``r[i] = h(n, A[i]);``, runs that block first and reads a result variable assigned by the
helper's final ``return e;``.  The parameters get a fresh suffix, so that no argument can read a
parameter of the same name instead of the caller's variable.

A ``return`` before the end of the helper assigns the result and jumps to the end of the inlined body
(a ``goto`` that :mod:`transpile.frontend.structure` turns into a flag and ifs).

Refused with a located error: recursion, an array parameter
of more than one dimension, a call elsewhere than in a statement of a block (a loop header, a
condition).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable

from pycparser import c_ast

from transpile.diagnostics import Loc, TranspileError
from transpile.frontend.structure import returns_to, set_child


def inline_array_helpers(fdef: c_ast.FuncDef, funcdefs: dict[str, c_ast.FuncDef],
                         takes_arrays: Callable[[c_ast.FuncDef], bool], loc: Callable[[c_ast.Node], Loc]) -> None:
    """Inline into ``fdef``'s body every call of a helper in ``funcdefs`` for which ``takes_arrays``."""
    if fdef.body is None:
        return
    _Inliner(funcdefs, takes_arrays, loc).block(fdef.body, [fdef.decl.name])


class _Inliner:
    def __init__(self, funcdefs: dict[str, c_ast.FuncDef], takes_arrays: Callable[[c_ast.FuncDef], bool],
                 loc: Callable[[c_ast.Node], Loc]) -> None:
        self.funcdefs = funcdefs
        self.takes_arrays = takes_arrays
        self.loc = loc
        self.fresh = itertools.count()

    def err(self, node: c_ast.Node, msg: str) -> TranspileError:
        return TranspileError(self.loc(node), msg)

    def target(self, node: c_ast.Node) -> c_ast.FuncDef | None:
        if isinstance(node, c_ast.FuncCall) and isinstance(node.name, c_ast.ID):
            d = self.funcdefs.get(node.name.name)
            if d is not None and d.body is not None and self.takes_arrays(d):
                return d
        return None

    def block(self, comp: c_ast.Compound, stack: list[str]) -> None:
        out: list[c_ast.Node] = []
        for it in comp.block_items or []:
            out.extend(self.stmt(it, stack))
        comp.block_items = out

    def sub(self, node: c_ast.Node | None, stack: list[str]) -> c_ast.Node | None:
        if node is None:
            return None
        got = self.stmt(node, stack)
        return got[0] if len(got) == 1 else c_ast.Compound(got, coord=node.coord)

    def stmt(self, node: c_ast.Node, stack: list[str]) -> list[c_ast.Node]:
        if isinstance(node, c_ast.Compound):
            self.block(node, stack)
            return [node]
        if isinstance(node, c_ast.If):
            self.refuse_calls(node.cond)
            node.iftrue, node.iffalse = self.sub(node.iftrue, stack), self.sub(node.iffalse, stack)
            return [node]
        if isinstance(node, (c_ast.For, c_ast.While, c_ast.DoWhile)):
            for part in (getattr(node, "init", None), node.cond, getattr(node, "next", None)):
                if part is not None:
                    self.refuse_calls(part)
            node.stmt = self.sub(node.stmt, stack)
            return [node]
        if isinstance(node, c_ast.Label):
            node.stmt = self.sub(node.stmt, stack)
            return [node]
        if isinstance(node, c_ast.Switch):
            self.refuse_calls(node.cond)
            node.stmt = self.sub(node.stmt, stack)
            return [node]
        if isinstance(node, (c_ast.Case, c_ast.Default)):
            node.stmts = [s for st in node.stmts or [] for s in self.stmt(st, stack)]
            return [node]
        if self.target(node) is not None:  # a call statement: its value, if any, is dropped
            return [self.expand(node, stack, None)]
        before: list[c_ast.Node] = []
        self.hoist(node, stack, before)
        return [*before, node]

    def refuse_calls(self, node: c_ast.Node) -> None:
        for n in _walk(node):
            if self.target(n) is not None:
                raise self.err(n, f"call to helper '{n.name.name}', which takes arrays, is not supported here: "
                                  "call it in a statement of its own (it is inlined there)")

    def hoist(self, node: c_ast.Node, stack: list[str], before: list[c_ast.Node]) -> None:
        """Replace calls in ``node``'s expressions by result variables computed in ``before``."""
        for name, child in node.children():
            if self.target(child) is not None:
                d = self.target(child)
                assert d is not None
                ret = d.decl.type.type
                result = f"{d.decl.name}_result{next(self.fresh)}__"
                rtype = copy.deepcopy(ret)
                _set_declname(rtype, result)
                before.append(c_ast.Decl(result, [], [], [], [], rtype, None, None, coord=child.coord))
                before.append(self.expand(child, stack, result))
                set_child(node, name, c_ast.ID(result, coord=child.coord))
            else:
                self.hoist(child, stack, before)

    def expand(self, call: c_ast.FuncCall, stack: list[str], result: str | None) -> c_ast.Compound:
        d = self.target(call)
        assert d is not None
        name = d.decl.name
        if name in stack:
            raise self.err(call, f"recursive call to '{name}' is not supported: offloaded code cannot recurse "
                                 f"({' -> '.join(stack[stack.index(name):] + [name])})")
        d = copy.deepcopy(d)
        suffix = f"__{name}{next(self.fresh)}"
        params = [p for p in (d.decl.type.args.params if d.decl.type.args is not None else [])
                  if not (isinstance(p, c_ast.Typename))]
        args = list(call.args.exprs) if call.args is not None else []
        if len(params) != len(args):
            raise self.err(call, f"'{name}' takes {len(params)} argument(s), got {len(args)}")
        # the parameters get fresh names: a later argument may read a caller variable of an earlier
        # parameter's name (the body's own locals are declared after every argument is evaluated)
        rename = {p.name: p.name + suffix for p in params}
        _rename(d.body, rename)
        items: list[c_ast.Node] = []
        for p, a in zip(params, args):
            t = copy.deepcopy(p.type)
            if isinstance(t, c_ast.ArrayDecl):
                if isinstance(t.type, c_ast.ArrayDecl):
                    raise self.err(call, f"passing a multi-dimensional array to helper '{name}' is not "
                                         "supported: pass a row (A[i]) to a one-dimensional parameter")
                t = c_ast.PtrDecl([], t.type, coord=t.coord)
            _set_declname(t, rename[p.name])
            items.append(c_ast.Decl(rename[p.name], [], [], [], [], t, a, None, coord=call.coord))
        body = list(d.body.block_items or [])
        if body and isinstance(body[-1], c_ast.Return):
            last = body.pop()
            if last.expr is not None and result is not None:
                body.append(c_ast.Assignment("=", c_ast.ID(result, coord=last.coord), last.expr, coord=last.coord))
        if any(isinstance(n, c_ast.Return) for n in _walk(c_ast.Compound(body))):
            # an early return jumps to the end of the inlined body (transpile/frontend/structure.py
            # structures the jump); the label is this expansion's own
            label = f"return{suffix}"
            body = [returns_to(it, label, result) for it in body]
            body.append(c_ast.Label(label, c_ast.EmptyStatement(coord=call.coord), coord=call.coord))
        block = c_ast.Compound(items + body, coord=call.coord)
        self.block(block, stack + [name])
        return block


def _walk(node: c_ast.Node) -> list[c_ast.Node]:
    out = [node]
    for _, c in node.children():
        out.extend(_walk(c))
    return out



def _set_declname(t: c_ast.Node, name: str) -> None:
    while not isinstance(t, c_ast.TypeDecl):
        t = t.type
    t.declname = name


def _rename(node: c_ast.Node, table: dict[str, str]) -> None:
    for n in _walk(node):
        if isinstance(n, c_ast.ID) and n.name in table:
            n.name = table[n.name]
        elif isinstance(n, c_ast.Decl) and n.name in table:
            n.name = table[n.name]
            _set_declname(n.type, n.name)

