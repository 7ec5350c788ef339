"""Local pointers into arrays, read as an array and an integer offset (docs/ordinary_c.md).

``float *p = a + 4;``, ``float *q = &b[n / 2];``, ``float *row = A[i];`` name a place in an array.
Before lowering, each such pointer becomes an ``int`` of the same name holding its offset from its
*base* (``a``; ``A[i]``, a row), and every use becomes a subscript of the base:

* ``p[e]`` and ``*(p + e)`` read ``base[p + e]``; ``*p`` reads ``base[p]``;
* ``p++``, ``p--``, ``p += e``, ``p -= e``, ``p = p + e`` step the offset, and ``p = base + e`` (the same
  base) sets it;
* ``*p++`` (``*p--``) in a statement reads or writes ``base[p]`` and steps ``p`` after the statement.

The offsets are then ordinary integer scalars: :mod:`passes.constprop` and :mod:`passes.induction`
make them affine in the loop counters where they are, and the dependence test sees the subscripts;
where they are not (a step read from an array, an increment under a condition) the loop stays
sequential.  What cannot be read so is refused with a located error: a pointer set to another array,
compared, passed to a function, or used other than through ``*`` and ``[]``; a pointer whose base reads
a variable assigned while the pointer lives.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from pycparser import c_ast

from transpile.diagnostics import Loc, TranspileError
from transpile.frontend.structure import set_child


def localize_pointers(fdef: c_ast.FuncDef, loc: Callable[[c_ast.Node], Loc]) -> None:
    """Rewrite the local pointers of ``fdef``'s body in place (see the module docstring)."""
    if fdef.body is None:
        return
    _Pointers(loc).block(fdef.body)


def _int_type(name: str) -> c_ast.TypeDecl:
    return c_ast.TypeDecl(name, [], None, c_ast.IdentifierType(["int"]))


def _zero(coord: object) -> c_ast.Constant:
    return c_ast.Constant("int", "0", coord=coord)


class _Pointers:
    def __init__(self, loc: Callable[[c_ast.Node], Loc]) -> None:
        self.loc = loc
        self.bases: dict[str, c_ast.Node] = {}  # live pointer -> its base (an ID or a partial ArrayRef)

    def err(self, node: c_ast.Node, msg: str) -> TranspileError:
        return TranspileError(self.loc(node), msg)

    def block(self, comp: c_ast.Compound) -> None:
        saved = dict(self.bases)
        items = list(comp.block_items or [])
        out: list[c_ast.Node] = []
        for k, it in enumerate(items):
            if isinstance(it, c_ast.Decl) and isinstance(it.type, c_ast.PtrDecl) \
                    and not isinstance(it.type.type, c_ast.FuncDecl):
                out.append(self.declare(it, items[k + 1:]))
                continue
            out.extend(self.stmt(it))
        comp.block_items = out
        self.bases = saved

    def declare(self, d: c_ast.Decl, rest: list[c_ast.Node]) -> c_ast.Node:
        if d.init is None:
            raise self.err(d, f"local pointer '{d.name}' without an initial value is not supported: "
                              "initialise it to a place in an array ('float *p = a + k;')")
        base, offset = self.place(d.init, d)
        assigned = _assigned(rest)
        for n in _walk(base):
            if isinstance(n, c_ast.ID) and n.name in assigned:
                raise self.err(d, f"local pointer '{d.name}' points into '{_text(base)}', which reads "
                                  f"'{n.name}', assigned while the pointer is in use: not supported")
        self.bases[d.name] = base
        return c_ast.Decl(d.name, [], [], [], [], _int_type(d.name), offset, None, coord=d.coord)

    def place(self, e: c_ast.Node, at: c_ast.Node) -> tuple[c_ast.Node, c_ast.Node]:
        """``(base, offset)`` of a pointer expression: ``a``, ``a + e``, ``&a[e]``, ``A[i]`` (a row),
        ``p + e`` for a live pointer ``p``."""
        if isinstance(e, c_ast.Cast):
            return self.place(e.expr, at)
        if isinstance(e, c_ast.ID):
            if e.name in self.bases:
                return self.bases[e.name], c_ast.ID(e.name, coord=e.coord)
            return e, _zero(e.coord)
        if isinstance(e, c_ast.ArrayRef):  # A[i]: the row (an array) decays to a pointer to its start
            return e, _zero(e.coord)
        if isinstance(e, c_ast.UnaryOp) and e.op == "&" and isinstance(e.expr, c_ast.ArrayRef):
            ref = e.expr
            inner, off = self.place(ref.name, at)
            return inner, _plus(off, self.expr(ref.subscript))
        if isinstance(e, c_ast.BinaryOp) and e.op in ("+", "-"):
            if _pointerish(e.left, self.bases):
                base, off = self.place(e.left, at)
                rhs = self.expr(e.right)
                rhs = rhs if e.op == "+" else c_ast.UnaryOp("-", rhs, coord=e.coord)
                return base, _plus(off, rhs)
            if e.op == "+" and _pointerish(e.right, self.bases):
                base, off = self.place(e.right, at)
                return base, _plus(off, self.expr(e.left))
            if isinstance(e.left, (c_ast.ID, c_ast.ArrayRef)):  # an array: 'a + k' (the lowering checks 'a')
                rhs = self.expr(e.right)
                return e.left, rhs if e.op == "+" else c_ast.UnaryOp("-", rhs, coord=e.coord)
            if e.op == "+" and isinstance(e.right, (c_ast.ID, c_ast.ArrayRef)):
                return e.right, self.expr(e.left)
        raise self.err(at, f"pointer value '{_text(e)}' is not supported: a local pointer must point into an "
                           "array ('a', 'a + k', '&a[k]', 'A[i]')")

    # -- statements -------------------------------------------------------------------------------------

    def stmt(self, node: c_ast.Node) -> list[c_ast.Node]:
        if isinstance(node, c_ast.Compound):
            self.block(node)
            return [node]
        if isinstance(node, c_ast.If):
            node.cond = self.expr(node.cond)
            node.iftrue = self.sub(node.iftrue)
            node.iffalse = self.sub(node.iffalse)
            return [node]
        if isinstance(node, c_ast.For):
            node.init = self.expr(node.init) if node.init is not None and not isinstance(node.init, c_ast.DeclList) \
                else node.init
            node.cond = self.expr(node.cond) if node.cond is not None else None
            if node.next is not None and self.step_of(node.next) is not None:
                raise self.err(node.next, "stepping a pointer in a for loop's increment is not supported: "
                                          "step it in the body")
            node.stmt = self.sub(node.stmt)
            return [node]
        if not self.bases or isinstance(node, (c_ast.Label, c_ast.Goto)):
            return [node]
        step = self.step_of(node)
        if step is not None:
            return [step]
        if isinstance(node, c_ast.Assignment) and isinstance(node.lvalue, c_ast.ID) and node.lvalue.name in self.bases:
            name = node.lvalue.name
            if node.op != "=":
                raise self.err(node, f"'{node.op}' on local pointer '{name}' is not supported")
            base, off = self.place(node.rvalue, node)
            if _text(base) != _text(self.bases[name]):
                raise self.err(node, f"local pointer '{name}' is set to point into another array "
                                     f"('{_text(base)}', not '{_text(self.bases[name])}'): not supported")
            return [c_ast.Assignment("=", c_ast.ID(name, coord=node.coord), off, coord=node.coord)]
        after: list[c_ast.Node] = []
        new = self.expr(node, after)
        return [new, *after]

    def sub(self, node: c_ast.Node | None) -> c_ast.Node | None:
        if node is None:
            return None
        got = self.stmt(node)
        return got[0] if len(got) == 1 else c_ast.Compound(got, coord=node.coord)

    def step_of(self, node: c_ast.Node) -> c_ast.Node | None:
        """``p++;``, ``p += e;`` and the like of a live pointer, as the offset's step; else None."""
        if isinstance(node, c_ast.UnaryOp) and node.op in ("p++", "++", "p--", "--") \
                and isinstance(node.expr, c_ast.ID) and node.expr.name in self.bases:
            return copy.copy(node)
        if isinstance(node, c_ast.Assignment) and node.op in ("+=", "-=") \
                and isinstance(node.lvalue, c_ast.ID) and node.lvalue.name in self.bases:
            return c_ast.Assignment(node.op, node.lvalue, self.expr(node.rvalue), coord=node.coord)
        return None

    # -- expressions ------------------------------------------------------------------------------------

    def expr(self, node: c_ast.Node, after: list[c_ast.Node] | None = None) -> c_ast.Node:
        """``node`` with pointer dereferences as subscripts; ``*p++`` steps go to ``after``."""
        if not self.bases or node is None:
            return node
        if isinstance(node, c_ast.UnaryOp) and node.op == "*":
            e = node.expr
            if isinstance(e, c_ast.UnaryOp) and e.op in ("p++", "p--") and isinstance(e.expr, c_ast.ID) \
                    and e.expr.name in self.bases:
                if after is None:
                    raise self.err(node, f"'*{e.expr.name}{e.op[1:]}' is not supported here: use it in a "
                                         "statement of its own")
                after.append(c_ast.UnaryOp(e.op, c_ast.ID(e.expr.name, coord=e.coord), coord=e.coord))
                return self.ref(e.expr.name, _zero(node.coord), node)
            if _pointerish(e, self.bases):
                base, off = self.place(e, node)
                return c_ast.ArrayRef(copy.deepcopy(base), off, coord=node.coord)
        if isinstance(node, c_ast.ArrayRef) and isinstance(node.name, c_ast.ID) and node.name.name in self.bases:
            return self.ref(node.name.name, self.expr(node.subscript, after), node)
        if isinstance(node, c_ast.ID) and node.name in self.bases:
            raise self.err(node, f"local pointer '{node.name}' is used here other than through '*' or '[]', "
                                 "which is not supported")
        for name, child in node.children():
            set_child(node, name, self.expr(child, after))
        return node

    def ref(self, name: str, index: c_ast.Node, at: c_ast.Node) -> c_ast.Node:
        return c_ast.ArrayRef(copy.deepcopy(self.bases[name]), _plus(c_ast.ID(name, coord=at.coord), index),
                              coord=at.coord)


def _pointerish(e: c_ast.Node, bases: dict[str, c_ast.Node]) -> bool:
    """Is ``e`` a live pointer, or a pointer expression built on one?"""
    if isinstance(e, c_ast.ID):
        return e.name in bases
    if isinstance(e, c_ast.BinaryOp) and e.op in ("+", "-"):
        return _pointerish(e.left, bases) or (e.op == "+" and _pointerish(e.right, bases))
    if isinstance(e, c_ast.Cast):
        return _pointerish(e.expr, bases)
    return False


def _plus(a: c_ast.Node, b: c_ast.Node) -> c_ast.Node:
    if isinstance(a, c_ast.Constant) and a.value == "0":
        return b
    if isinstance(b, c_ast.Constant) and b.value == "0":
        return a
    return c_ast.BinaryOp("+", a, b, coord=getattr(a, "coord", None))



def _walk(node: c_ast.Node) -> list[c_ast.Node]:
    out = [node]
    for _, c in node.children():
        out.extend(_walk(c))
    return out


def _assigned(items: list[c_ast.Node]) -> set[str]:
    out: set[str] = set()
    for it in items:
        for n in _walk(it):
            if isinstance(n, c_ast.Assignment) and isinstance(n.lvalue, c_ast.ID):
                out.add(n.lvalue.name)
            elif isinstance(n, c_ast.UnaryOp) and n.op in ("p++", "++", "p--", "--") and isinstance(n.expr, c_ast.ID):
                out.add(n.expr.name)
    return out


def _text(e: c_ast.Node) -> str:
    from pycparser import c_generator

    return str(c_generator.CGenerator().visit(e))
