"""Lowering of C expressions to typed IR (shared by functions and file-scope constants).

:class:`ExprLowerer` resolves names through the block scopes of the function
being lowered (then enumerators, ``const`` globals, functions) and builds
expressions with the typed builders of :mod:`transpile.ir`, so every implicit
C conversion becomes an explicit ``Cast``.  :class:`transpile.frontend.lower.Lowerer`
extends it with statements and functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pycparser import c_ast

from transpile import ir
from transpile.diagnostics import Loc, TranspileError
from transpile.frontend.c_types import (
    char_literal,
    describe,
    float_literal,
    int_literal,
    sizeof,
)

if TYPE_CHECKING:
    from transpile.frontend.lower import Unit


@dataclass(eq=False)
class Sym:
    """What a C name means inside a function.

    ``kind`` is ``scalar`` (local or scalar parameter), ``array`` (array or
    pointer parameter, or a local array) or ``loop`` (the counter of an
    enclosing loop).
    """

    kind: str
    cname: str
    name: str
    ty: ir.Scalar
    key: int | None = None  # id() of the declaring c_ast.Decl, for locals
    is_param: bool = False
    pointer: bool = False
    rank: int = 0
    emitted: bool = True  # does an IR Decl/Param exist under ``name``?



def declarator_name(d: c_ast.Decl) -> c_ast.Node:
    """The node of the declared name itself (``A`` in ``double **A``), for precise locations."""
    t = d.type
    while not isinstance(t, c_ast.TypeDecl) and hasattr(t, "type"):
        t = t.type
    return t if isinstance(t, c_ast.TypeDecl) and t.coord is not None else d



class ExprLowerer:
    """Lowers C expressions in the scopes of one function (none for file-scope constants)."""

    def __init__(self, unit: Unit, default_loc: Loc) -> None:
        self.unit = unit
        self.default_loc = default_loc
        self.scopes: list[dict[str, Sym]] = [{}]
        self.plain_used: set[int] = set()  # keys of locals used as ordinary scalars
        self.stmt_loc: Loc | None = None  # fallback for nodes without a coord

    def loc(self, node: c_ast.Node | None) -> Loc:
        return self.unit.loc(node, self.stmt_loc or self.default_loc)

    def err(self, node: c_ast.Node | None, msg: str) -> TranspileError:
        if isinstance(node, c_ast.Decl):
            node = declarator_name(node)
        return TranspileError(self.loc(node), msg)

    def lookup(self, name: str) -> Sym | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def plain(self, sym: Sym, node: c_ast.Node) -> ir.Var:
        """A use of ``sym`` as an ordinary scalar (outside the loops it counts)."""
        if sym.key is not None:
            self.plain_used.add(sym.key)
        assert sym.emitted, f"local {sym.cname!r} used as a scalar but not declared in pass 2"
        return ir.Var(sym.name, sym.ty, loc=self.loc(node))


    def extent(self, node: c_ast.Node, pname: str) -> ir.Expr:
        if isinstance(node, c_ast.ID) and node.name == "*":
            raise self.err(node, f"array parameter '{pname}' with extent '[*]' is not supported")
        e = self.expr(node)
        if e.ty.is_float or any(isinstance(n, (ir.Index, ir.Call)) for n in ir.walk(e)):
            raise self.err(node, f"extent of array parameter '{pname}' is not supported: it must be an "
                                 "integer expression over scalar parameters and constants")
        return e

    def expr(self, node: c_ast.Node) -> ir.Expr:
        """The typed IR of a C expression."""
        loc = self.loc(node)
        if isinstance(node, c_ast.Constant):
            return self.constant(node, loc)
        if isinstance(node, c_ast.ID):
            return self.id_value(node)
        if isinstance(node, c_ast.ArrayRef):
            return self.index(node)
        if isinstance(node, c_ast.UnaryOp):
            return self.unary(node, loc)
        if isinstance(node, c_ast.BinaryOp):
            if node.op not in ir.BINARY_OPS:
                raise TranspileError(loc, f"operator '{node.op}' is not supported")
            return ir.binary(node.op, self.expr(node.left), self.expr(node.right), loc=loc)
        if isinstance(node, c_ast.TernaryOp):
            return ir.select(self.expr(node.cond), self.expr(node.iftrue), self.expr(node.iffalse), loc=loc)
        if isinstance(node, c_ast.Cast):
            t = self.unit.types.resolve(node.to_type)
            if not isinstance(t, ir.Scalar):
                raise TranspileError(loc, f"cast to '{describe(t)}' is not supported: only casts to scalar "
                                          "types are")
            return ir.cast(self.expr(node.expr), t)
        if isinstance(node, c_ast.FuncCall):
            call = self.call(node, as_stmt=False)
            assert call is not None
            return call
        if isinstance(node, c_ast.Assignment):
            raise TranspileError(loc, "assignment used as a value is not supported: write it as a separate "
                                      "statement")
        if isinstance(node, c_ast.ExprList):
            raise TranspileError(loc, "comma expressions are not supported: write separate statements")
        if isinstance(node, c_ast.StructRef):
            raise TranspileError(loc, "struct member access is not supported: pass the fields as scalars "
                                      "or arrays")
        if isinstance(node, (c_ast.CompoundLiteral, c_ast.InitList)):
            raise TranspileError(loc, "compound literals and initialiser lists are not supported")
        raise TranspileError(loc, f"{type(node).__name__} expression is not supported")

    def constant(self, node: c_ast.Constant, loc: Loc) -> ir.Expr:
        if node.type == "string":
            raise TranspileError(loc, "string literals are not supported in offloaded code")
        if node.type == "char" or node.value[:1] in "'LuU" and node.value.endswith("'"):
            return char_literal(node.value, loc)
        if node.type.endswith("int"):
            return int_literal(node.value, loc)
        return float_literal(node.value, loc)

    def id_value(self, node: c_ast.ID) -> ir.Expr:
        loc = self.loc(node)
        sym = self.lookup(node.name)
        if sym is not None:
            if sym.kind == "loop":
                return ir.Var(sym.name, sym.ty, loc=loc)
            if sym.kind == "array":
                if sym.pointer:
                    raise TranspileError(loc, f"pointer '{node.name}' used as a value is not supported: "
                                              "pointer arithmetic and passing pointers on are not "
                                              f"supported; index it as {node.name}[i]")
                raise TranspileError(loc, f"array '{node.name}' used as a value is not supported: only "
                                          "element accesses such as "
                                          f"{node.name}{'[i]' * sym.rank} are")
            return self.plain(sym, node)
        unit = self.unit
        if node.name in unit.enums:
            return unit.enum_value(node.name, loc)
        if node.name in unit.globals:
            return unit.global_value(node.name, loc)
        if node.name in unit.funcdefs or node.name in ir.MATH_FUNCS:
            raise TranspileError(loc, f"function '{node.name}' used as a value is not supported: function "
                                      "pointers are not supported")
        raise TranspileError(loc, f"'{node.name}' undeclared")

    def index(self, node: c_ast.ArrayRef) -> ir.Index:
        loc = self.loc(node)
        subs: list[c_ast.Node] = []
        base: c_ast.Node = node
        while isinstance(base, c_ast.ArrayRef):
            subs.append(base.subscript)
            base = base.name
        subs.reverse()
        if not isinstance(base, c_ast.ID):
            self.expr(base)  # raises for struct members, dereferences...
            raise TranspileError(loc, "only array parameters can be indexed")
        sym = self.lookup(base.name)
        if sym is None or sym.kind != "array":
            if sym is None:
                self.id_value(base)  # raises: global, undeclared...
            raise TranspileError(loc, f"'{base.name}' is not an array and cannot be indexed")
        if len(subs) != sym.rank:
            what = "pointer" if sym.pointer else f"{sym.rank}-dimensional array"
            raise TranspileError(loc, f"{what} '{base.name}' indexed with {len(subs)} subscript(s), which "
                                      f"is not supported: use exactly {sym.rank}")
        indices = []
        for s in subs:
            e = self.expr(s)
            if e.ty.is_float:
                raise self.err(s, f"array subscript of '{base.name}' is not an integer")
            indices.append(e)
        return ir.Index(sym.name, tuple(indices), sym.ty, loc=loc)

    def unary(self, node: c_ast.UnaryOp, loc: Loc) -> ir.Expr:
        op = node.op
        if op in ("-", "!", "~"):
            return ir.unary(op, self.expr(node.expr), loc=loc)
        if op == "+":
            e = self.expr(node.expr)
            return ir.cast(e, ir.promote(e.ty))
        if op == "sizeof":
            if isinstance(node.expr, c_ast.Typename):
                t = self.unit.types.resolve(node.expr)
            elif isinstance(node.expr, c_ast.ID) and (s := self.lookup(node.expr.name)) and s.kind == "array":
                raise TranspileError(loc, f"sizeof of array '{node.expr.name}' is not supported")
            else:
                t = self.expr(node.expr).ty
            size = sizeof(t)
            if size is None:
                raise TranspileError(loc, f"sizeof({describe(t)}) is not supported")
            return ir.const(size, ir.U64, loc=loc)
        if op in ("p++", "++", "p--", "--"):
            sym = "++" if "+" in op else "--"
            raise TranspileError(loc, f"'{sym}' inside an expression is not supported: write it as a "
                                      "statement of its own")
        if op == "&":
            raise TranspileError(loc, "taking an address ('&') is not supported: offloaded code has no "
                                      "pointers")
        if op == "*":
            raise TranspileError(loc, "dereferencing a pointer ('*') is not supported: index the parameter "
                                      "as p[i] instead")
        raise TranspileError(loc, f"operator '{op}' is not supported")

    def call(self, node: c_ast.FuncCall, as_stmt: bool) -> ir.Expr | None:
        loc = self.loc(node)
        if not isinstance(node.name, c_ast.ID):
            raise TranspileError(loc, "calls through function pointers are not supported")
        fname = node.name.name
        if self.lookup(fname) is not None:
            raise TranspileError(loc, f"called object '{fname}' is not a function")
        arg_nodes = node.args.exprs if node.args is not None else []
        if fname in ir.MATH_FUNCS:
            ptys, rty = ir.MATH_FUNCS[fname]
            return ir.call(fname, tuple(self.expr(a) for a in arg_nodes), ptys, rty, loc=loc)
        if fname not in self.unit.funcdefs:
            raise TranspileError(loc, f"call to '{fname}' is not supported in an offloaded function: it has "
                                      "no body in this file and is not a math function")
        func = self.unit.helper(fname, loc)
        args = tuple(self.expr(a) for a in arg_nodes)
        ptys = tuple(p.ty for p in func.params if isinstance(p.ty, ir.Scalar))  # helpers: scalars only
        if func.ret is None:
            if not as_stmt:
                raise TranspileError(loc, f"void function '{fname}' used as a value")
            ir.call(fname, args, ptys, ir.I32, loc=loc)  # checks the argument count
            return None
        return ir.call(fname, args, ptys, func.ret, loc=loc)  # type: ignore[arg-type]
