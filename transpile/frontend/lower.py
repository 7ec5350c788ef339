"""Lower the pycparser AST of selected C functions to the IR.

:class:`Unit` holds what is known about the translation unit (typedefs,
function definitions, globals, enumerators) and lowers helper functions on
demand; :class:`Lowerer` lowers one function.  See ``transpile/frontend/c.py``
for what is accepted.

Every function is lowered twice.  The first pass records which local
declarations are used as plain scalars (outside the loops they count); the
second pass emits ``Decl`` only for those, so ``int i, j;`` that only serve
as loop counters vanish and the loops keep the names ``i`` and ``j``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pycparser import c_ast

from transpile import ir
from transpile.diagnostics import Loc, TranspileError, warn
from transpile.frontend import header, loops
from transpile.frontend.c_types import (
    ArrT,
    CType,
    FuncT,
    PtrT,
    TypeResolver,
    VoidT,
    describe,
)
from transpile.frontend.expr import ExprLowerer, Sym, declarator_name
from transpile.frontend.inline import inline_array_helpers
from transpile.frontend.pointers import localize_pointers
from transpile.frontend.srcmap import SourceMap
from transpile.frontend.structure import structure
from transpile.ir.affine import derive_extent
from transpile.ir.cscalars import C_NAMES, const_of, fold


@dataclass
class _ArrayParam:
    sym: Sym
    dims: list[ir.Expr | None]
    loc: Loc


@dataclass
class Unit:
    """The translation unit: file-scope names and the lowered helper functions."""

    ast: c_ast.FileAST
    srcmap: SourceMap
    typedefs: dict[str, c_ast.Node] = field(default_factory=dict)
    funcdefs: dict[str, c_ast.FuncDef] = field(default_factory=dict)
    globals: dict[str, c_ast.Decl] = field(default_factory=dict)
    # enumerator -> (its value expression or None, the previous enumerator or None)
    enums: dict[str, tuple[c_ast.Node | None, str | None]] = field(default_factory=dict)
    helpers: dict[str, ir.Func] = field(default_factory=dict)
    call_stack: list[str] = field(default_factory=list)
    _busy: set[str] = field(default_factory=set)
    types: TypeResolver = field(init=False)

    def __post_init__(self) -> None:
        for ext in self.ast.ext:
            if isinstance(ext, c_ast.FuncDef):
                self.funcdefs.setdefault(ext.decl.name, ext)
            elif isinstance(ext, c_ast.Typedef):
                self.typedefs[ext.name] = ext.type
            elif isinstance(ext, c_ast.Decl) and ext.name and not isinstance(ext.type, c_ast.FuncDecl):
                self.globals[ext.name] = ext
            if isinstance(ext, (c_ast.Decl, c_ast.Typedef)):
                self._collect_enums(ext)
        self.types = TypeResolver(self.typedefs)

    def _collect_enums(self, node: c_ast.Node) -> None:
        if isinstance(node, c_ast.Enum) and node.values is not None:
            prev: str | None = None
            for en in node.values.enumerators:
                self.enums[en.name] = (en.value, prev)
                prev = en.name
        for child in node:
            self._collect_enums(child)

    def loc(self, node: c_ast.Node | None, default: Loc | None = None) -> Loc:
        """The original-source ``Loc`` of a pycparser node."""
        coord = getattr(node, "coord", None)
        if coord is None or not coord.line:
            return default if default is not None else Loc("<unknown>", 1, 1)
        return self.srcmap.loc(coord.file, coord.line, coord.column)

    def enum_value(self, name: str, loc: Loc) -> ir.Const:
        """The value of enumerator ``name`` as an ``int`` constant."""
        v = self._const_value(name, loc, lambda: self._enum_expr(name, loc))
        return ir.const(v, ir.I32, loc=loc)

    def _enum_expr(self, name: str, loc: Loc) -> int | float | None:
        value, prev = self.enums[name]
        if value is not None:
            return fold(ExprLowerer(self, loc).expr(value))
        if prev is None:
            return 0
        return int(self.enum_value(prev, loc).value) + 1

    def global_value(self, name: str, loc: Loc) -> ir.Expr:
        """A ``const`` scalar global with a constant initialiser, folded."""
        d = self.globals[name]
        t = self.types.resolve(d.type)
        if isinstance(t, (ArrT, PtrT)):
            raise TranspileError(loc, f"global array '{name}' is not supported in an offloaded function: "
                                      "pass it as a parameter")
        if not (isinstance(t, ir.Scalar) and "const" in d.quals and d.init is not None
                and not isinstance(d.init, c_ast.InitList)):
            raise TranspileError(loc, f"global variable '{name}' is not supported in an offloaded "
                                      "function: pass it as a parameter (only const scalar globals "
                                      "with constant initialisers are folded)")
        init = d.init
        v = self._const_value(name, loc, lambda: fold(ExprLowerer(self, loc).expr(init)))
        return const_of(v, t, loc)

    def _const_value(self, name: str, loc: Loc, compute: Callable[[], int | float | None]) -> int | float:
        if name in self._busy:
            raise TranspileError(loc, f"the value of '{name}' depends on itself")
        self._busy.add(name)
        try:
            v = compute()
        finally:
            self._busy.discard(name)
        if v is None:
            raise TranspileError(loc, f"'{name}' is not supported in an offloaded function: its "
                                      "initialiser is not a constant expression")
        return v

    def takes_arrays(self, fdef: c_ast.FuncDef) -> bool:
        """Does ``fdef`` have an array or pointer parameter (then its calls are inlined)?"""
        ftype = fdef.decl.type
        params = ftype.args.params if isinstance(ftype, c_ast.FuncDecl) and ftype.args is not None else []
        return any(isinstance(p, c_ast.Decl) and isinstance(self.types.resolve(p.type), (ArrT, PtrT))
                   for p in params)

    def helper(self, name: str, loc: Loc) -> ir.Func:
        """The lowered helper function ``name`` (lowered on first call)."""
        if name in self.call_stack:
            cycle = " -> ".join(self.call_stack[self.call_stack.index(name):] + [name])
            raise TranspileError(loc, f"recursive call to '{name}' is not supported: offloaded code "
                                      f"cannot recurse ({cycle})")
        if name not in self.helpers:
            fdef = self.funcdefs[name]
            ftype = fdef.decl.type
            for p in (ftype.args.params if ftype.args is not None else []):
                if isinstance(p, c_ast.EllipsisParam):
                    raise TranspileError(loc, f"call to variadic function '{name}' is not supported")
                if isinstance(self.types.resolve(p.type), (ArrT, PtrT)):
                    raise TranspileError(loc, f"passing arrays to helper function '{name}' is not "
                                              "supported: helpers take scalar parameters only")
            self.call_stack.append(name)
            try:
                self.helpers[name] = lower_function(self, fdef, "func")  # type: ignore[assignment]
            finally:
                self.call_stack.pop()
        return self.helpers[name]


def c_nodes(node: c_ast.Node) -> list[c_ast.Node]:
    """Every node under ``node``, itself included, in source order (pre-order)."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed([child for _, child in n.children()]))
    return out


def lower_function(unit: Unit, fdef: c_ast.FuncDef, kind: str) -> ir.Kernel | ir.Func:
    """Lower ``fdef`` as a kernel or a helper (two passes, see the module docstring)."""
    inline_array_helpers(fdef, unit.funcdefs, unit.takes_arrays, unit.loc)  # (transpile/frontend/inline.py)
    # goto, switch, break, continue and early returns as ifs (transpile/frontend/structure.py)
    structure(fdef, unit.loc, helper=kind == "func")
    localize_pointers(fdef, unit.loc)  # local pointers as offsets into arrays (transpile/frontend/pointers.py)
    first = Lowerer(unit, fdef, kind, plain_used=None)
    first.lower()
    return Lowerer(unit, fdef, kind, plain_used=first.plain_used).lower()


class Lowerer(ExprLowerer):
    """Lowers one function, as a kernel or a helper (``kind`` is ``kernel`` or ``func``)."""

    def __init__(self, unit: Unit, fdef: c_ast.FuncDef, kind: str,
                 plain_used: set[int] | None = None) -> None:
        super().__init__(unit, unit.loc(fdef))
        self.fdef = fdef
        self.kind = kind
        self.emit_only = plain_used  # None: first pass, emit every Decl
        self.names: set[str] = set()  # every IR name so far
        self.decl_names: set[str] = set()  # parameters and Decls
        self.active: list[Sym] = []  # counters of the enclosing loops
        self.exits: dict[int, loops.Exit] = {}  # id(For) -> the declared C variable it counts, its exit value
        self.cnames: dict[str, str] = {}  # IR name -> C name, for messages
        self.ret: ir.Scalar | None = None
        self.top_level = False  # is the statement being lowered directly in the function body?
        self.param_names: set[str] = set()
        self.spelled: dict[str, str | None] = {}  # parameter -> its C type as written (transpile/frontend/header.py)
        self.hoisted: list[ir.Alloc] = []  # local arrays declared in loops or ifs, moved to the top
        self.slot: tuple[str, ir.Scalar] | None = None  # a kernel's return slot (name, type), if it returns a value

    # ------------------------------------------------------------------ helpers

    def fresh(self, base: str, taken: set[str]) -> str:
        """``base``, or ``base_1``, ``base_2``... whichever is not in ``taken``."""
        if base not in taken:
            return base
        k = 1
        while f"{base}_{k}" in taken:
            k += 1
        return f"{base}_{k}"

    def declare(self, sym: Sym) -> None:
        """Bind ``sym`` in the innermost scope and reserve its IR name."""
        self.scopes[-1][sym.cname] = sym
        if sym.emitted:
            self.names.add(sym.name)
            self.decl_names.add(sym.name)
            self.cnames[sym.name] = sym.cname

    # ------------------------------------------------------------------ functions

    def lower(self) -> ir.Kernel | ir.Func:
        """The IR of the whole function: parameters, body, intents and derived extents."""
        fdef = self.fdef
        name = fdef.decl.name
        loc = self.loc(fdef.decl)
        if fdef.param_decls:
            raise self.err(fdef.decl, f"old-style (K&R) definition of '{name}' is not supported")
        ftype = fdef.decl.type
        ret = self.unit.types.resolve(ftype.type)
        if self.kind == "kernel" and not isinstance(ret, (VoidT, ir.Scalar)):
            raise TranspileError(loc, f"kernel '{name}' returns {describe(ret)}, which is not supported: "
                                      "offloaded functions return void or a scalar")
        if self.kind == "kernel" and isinstance(ret, ir.Scalar):
            self.slot = (self._slot_name(), ret)
        if self.kind == "func":
            if not isinstance(ret, (ir.Scalar, VoidT)):
                raise TranspileError(loc, f"helper function '{name}' returns {describe(ret)}, which is not "
                                          "supported: helpers return a scalar or void")
            self.ret = ret if isinstance(ret, ir.Scalar) else None
        scalars, arrays, order = self.params(ftype)
        body = tuple(self.block(fdef.body, top=True))
        body = loops.exit_values(body, self.exits)
        body = loops.hoist_step_checks(body, self.cnames, in_func=self.kind == "func")
        if self.kind == "func":
            return ir.Func(name, tuple(scalars[n] for n in order), self.ret, body, loc=loc)
        assigned = {n.target.name for n in ir.walk(ir.Kernel(name, (), body))
                    if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var)}
        for a in self.hoisted:
            changed = sorted({v.name for d in a.ty.dims for v in ir.walk(d) if isinstance(v, ir.Var)} & assigned)
            if changed:
                raise TranspileError(a.loc, f"local array '{self.cnames.get(a.name, a.name)}' is declared in a loop "
                                            f"or an if with an extent over '{changed[0]}', which the kernel "
                                            "assigns: not supported; declare it at the top level of the body")
        body = tuple(self.hoisted) + body
        uses = ir.array_uses(body)
        invariant = [n for n in order if n in scalars and n not in assigned]
        params = []
        for pname in order:
            if pname in scalars:
                params.append(scalars[pname])
                continue
            ap = arrays[pname]
            dims = [d if d is not None else self.derive(body, ap, i, invariant)
                    for i, d in enumerate(ap.dims)]
            ty = ir.ArrayType(ap.sym.ty, tuple(dims))  # type: ignore[arg-type]
            intent = ir.intent_of(*uses.get(pname, (False, False)))
            params.append(ir.Param(pname, ty, intent, ap.sym.pointer, loc=ap.loc, ctype=self.spelled.get(pname)))
        if self.slot is not None:  # the return slot, last (see ir.Kernel)
            slot, ty = self.slot
            params.append(ir.Param(slot, ir.ArrayType(ty, (ir.Const(1, ir.I32),)), "out", loc=loc))
            return ir.Kernel(name, tuple(params), body, slot, loc=loc)
        return ir.Kernel(name, tuple(params), body, loc=loc)

    def _slot_name(self) -> str:
        """A name for the return slot that no identifier of the function uses."""
        used = {n.name for n in c_nodes(self.fdef) if isinstance(n, (c_ast.ID, c_ast.Decl)) and n.name}
        return self.fresh("result", used)

    def derive(self, body: tuple[ir.Stmt, ...], ap: _ArrayParam, dim: int,
               invariant: list[str]) -> ir.Expr:
        extent, access, reason = derive_extent(body, ap.sym.name, dim, invariant, ap.loc)
        if extent is not None:
            return extent
        cname = C_NAMES[ap.sym.ty.name]
        if ap.sym.pointer:
            what = f"the extent of pointer parameter '{ap.sym.name}'"
            hint = f"{cname} {ap.sym.name}[n]"
        else:
            what = f"the first extent of array parameter '{ap.sym.name}'"
            hint = f"{cname} {ap.sym.name}[n]" + "[...]" * (ap.sym.rank - 1)
        assert access is not None
        raise TranspileError(access.loc, f"cannot derive {what}: its index {reason}; declare the "
                                         f"parameter as an array with an explicit extent ({hint})")

    def params(self, ftype: c_ast.FuncDecl) -> tuple[dict[str, ir.Param], dict[str, _ArrayParam], list[str]]:
        """Declare the parameters; scalars first so that extents may use any of them."""
        plist = ftype.args.params if ftype.args is not None else []
        typed: list[tuple[c_ast.Decl, CType]] = []
        fname = ftype.type.declname
        for p in plist:
            if isinstance(p, c_ast.EllipsisParam):
                raise self.err(p, f"variadic function '{fname}' is not supported")
            t = self.unit.types.resolve(p.type)
            if isinstance(t, VoidT) and len(plist) == 1 and not p.name:
                return {}, {}, []
            if not p.name:
                raise self.err(p, f"unnamed parameter of '{fname}' is not supported")
            typed.append((p, t))
        scalars: dict[str, ir.Param] = {}
        arrays: dict[str, _ArrayParam] = {}
        # The declared types as written, for the drop-in's signature (transpile/frontend/header.py).
        self.spelled = {p.name: header.spelling(p.type, self.unit.typedefs) for p, _t in typed}
        for p, t in typed:
            if isinstance(t, ir.Scalar):
                sym = Sym("scalar", p.name, p.name, t, is_param=True)
                self.declare(sym)
                self.param_names.add(p.name)
                scalars[p.name] = ir.Param(p.name, t, "in", loc=self.loc(declarator_name(p)),
                                           ctype=self.spelled[p.name])
        for p, t in typed:
            if isinstance(t, ir.Scalar):
                continue
            dims_c, pointer = self.param_shape(p, t)
            elem: CType = t
            while isinstance(elem, (ArrT, PtrT)):
                elem = elem.elem if isinstance(elem, ArrT) else elem.target
            assert isinstance(elem, ir.Scalar)
            if self.kind == "func":
                raise self.err(p, f"passing arrays to helper function '{fname}' is not supported: "
                                  "helpers take scalar parameters only")
            dims = [None if d is None else self.extent(d, p.name) for d in dims_c]
            sym = Sym("array", p.name, p.name, elem, is_param=True, pointer=pointer, rank=len(dims))
            arrays[p.name] = _ArrayParam(sym, dims, self.loc(declarator_name(p)))
        for p, _ in typed:
            if p.name in arrays:
                self.declare(arrays[p.name].sym)
        return scalars, arrays, [p.name for p, _ in typed]

    def param_shape(self, p: c_ast.Decl, t: CType) -> tuple[list[c_ast.Node | None], bool]:
        """The C extents (None: to derive) of an array parameter, and whether it is a pointer."""
        what = describe(t)
        if isinstance(t, PtrT) and isinstance(t.target, ir.Scalar):
            return [None], True
        if isinstance(t, PtrT) and isinstance(t.target, ArrT):
            t = ArrT(t.target, None)  # double (*A)[N] is double A[][N]
        if isinstance(t, ArrT):
            dims: list[c_ast.Node | None] = []
            inner: CType = t
            while isinstance(inner, ArrT):
                dims.append(inner.dim)
                inner = inner.elem
            if isinstance(inner, ir.Scalar):
                if any(d is None for d in dims[1:]):
                    raise self.err(p, f"array parameter '{p.name}' needs an extent in every dimension "
                                      "but the first")
                return dims, False
            what = describe(inner) + " array"
        if isinstance(t, PtrT) and isinstance(t.target, PtrT):
            raise self.err(p, f"pointer-to-pointer parameter '{p.name}' is not supported: use a C99 "
                              f"array parameter such as 'double {p.name}[n][m]'")
        if isinstance(t, FuncT) or (isinstance(t, PtrT) and isinstance(t.target, FuncT)):
            raise self.err(p, f"function pointer parameter '{p.name}' is not supported")
        if "struct" in what or "union" in what:
            raise self.err(p, f"{what.split()[0]} parameter '{p.name}' of type '{what}' is not "
                              "supported: pass its fields as scalars or arrays")
        raise self.err(p, f"parameter '{p.name}' of type '{what}' is not supported")

    # ------------------------------------------------------------------ statements

    def block(self, node: c_ast.Node, top: bool = False, top_scope: bool = False) -> list[ir.Stmt]:
        """A compound statement (or a single statement) in a scope of its own, flattened.

        ``top``: the function body.  ``top_scope``: a bare ``{ ... }`` directly in it (or in
        another such block), whose statements are flattened into the function body too, so a
        local array declared there is a kernel's scratch array like one declared at the top
        (its name is made fresh, so the wider lifetime is invisible); only the function body's
        own final ``return;`` is dropped.
        """
        items = (node.block_items or []) if isinstance(node, c_ast.Compound) else [node]
        real = [i for i, it in enumerate(items) if not isinstance(it, c_ast.Pragma)]
        out: list[ir.Stmt] = []
        self.scopes.append({})
        for i, item in enumerate(items):
            if (top and real and i == real[-1] and isinstance(item, c_ast.Return)
                    and item.expr is None and self.slot is None):
                continue  # the final 'return;' of a void function
            if top and real and i == real[-1] and self.slot is not None and self.kind == "kernel":
                if not isinstance(item, c_ast.Return) or item.expr is None:
                    raise self.err(item, f"a kernel returning {describe(self.slot[1])} must end with "
                                         "'return value;' (its only return)")
                self.stmt_loc = self.unit.loc(item)
                rloc = self.loc(item)
                value = ir.cast(self.expr(item.expr), self.slot[1])
                out.append(ir.Assign(ir.Index(self.slot[0], (ir.Const(0, ir.I32, loc=rloc),), self.slot[1], loc=rloc),
                                     value, loc=rloc))
                continue
            self.top_level = top or top_scope
            out.extend(self.stmt(item))
        self.scopes.pop()
        self.top_level = False
        return out

    def stmt(self, node: c_ast.Node) -> list[ir.Stmt]:
        """The IR statements of one C statement (none for pragmas and effect-free ones)."""
        if getattr(node, "coord", None) is not None:
            self.stmt_loc = self.unit.loc(node)
        if isinstance(node, c_ast.Compound):
            return self.block(node, top_scope=self.top_level)
        if isinstance(node, (c_ast.Pragma, c_ast.EmptyStatement)):
            return []
        if isinstance(node, c_ast.Decl):
            return self.local_decl(node)
        if isinstance(node, c_ast.Assignment):
            return self.assignment_chain(node)
        if isinstance(node, c_ast.UnaryOp) and node.op in ("p++", "++", "p--", "--"):
            target = self.lvalue(node.expr)
            op = "+" if "+" in node.op else "-"
            return [ir.assign(target, ir.const(1, ir.I32, loc=self.loc(node)), op, loc=self.loc(node))]
        if isinstance(node, c_ast.If):
            cond = self.expr(node.cond)
            then = self.block(node.iftrue)
            orelse = self.block(node.iffalse) if node.iffalse is not None else []
            return [ir.If(cond, tuple(then), tuple(orelse), loc=self.loc(node))]
        if isinstance(node, c_ast.For):
            return self.for_loop(node)
        if isinstance(node, c_ast.Return):
            return [self.return_stmt(node)]
        if isinstance(node, c_ast.FuncCall):
            self.call(node, as_stmt=True)
            if self.emit_only is not None:
                warn("dropped-call", self.loc(node), "call statement dropped: its result is unused and "
                                                     "offloaded calls have no side effects")
            return []
        if isinstance(node, c_ast.Cast) and isinstance(self.unit.types.resolve(node.to_type), VoidT):
            self.expr(node.expr)
            return []
        unsupported = {
            c_ast.While: "while loops are not supported: no provable trip count; rewrite it as a for loop",
            c_ast.DoWhile: "do-while loops are not supported: no provable trip count; rewrite it as a "
                           "for loop",
            c_ast.Goto: "'goto' statement is not supported: control flow must be structured loops and ifs",
            c_ast.Label: "labels are not supported: control flow must be structured loops and ifs",
            c_ast.Break: "'break' statement is not supported here: it is in no for loop or switch",
            c_ast.Continue: "'continue' statement is not supported here: it is in no for loop",
            c_ast.Switch: "'switch' statement is not supported: use if/else",
            c_ast.Case: "'case' label is not supported: use if/else",
            c_ast.Default: "'default' label is not supported: use if/else",
            c_ast.ExprList: "comma expressions are not supported: write separate statements",
            c_ast.Typedef: "local typedefs are not supported: move the typedef to file scope",
            c_ast.FuncDef: "nested functions are not supported",
        }
        for cls, msg in unsupported.items():
            if isinstance(node, cls):
                raise self.err(node, msg)
        if isinstance(node, (c_ast.ID, c_ast.Constant, c_ast.BinaryOp, c_ast.UnaryOp, c_ast.ArrayRef,
                             c_ast.TernaryOp, c_ast.Cast)):
            self.expr(node)  # an expression statement without effect
            return []
        raise self.err(node, f"{type(node).__name__} statement is not supported")

    def local_decl(self, d: c_ast.Decl) -> list[ir.Stmt]:
        loc = self.loc(declarator_name(d))
        if d.name is not None and not {"static", "extern"} & set(d.storage):
            arr = self.unit.types.resolve(d.type)
            if isinstance(arr, ArrT):
                alloc = self.local_array(d, arr, loc)
                return [alloc] if alloc is not None else []
        t = self.local_type(d)
        init = None
        if d.init is not None:
            if isinstance(d.init, c_ast.InitList):
                raise TranspileError(loc, f"brace initialiser for scalar '{d.name}' is not supported")
            init = ir.cast(self.expr(d.init), t)
        emitted = self.emit_only is None or id(d) in self.emit_only
        name = self.fresh(d.name, self.names) if emitted else d.name
        self.declare(Sym("scalar", d.name, name, t, key=id(d), emitted=emitted))
        return [ir.Decl(name, t, init, loc=loc)] if emitted else []

    def local_array(self, d: c_ast.Decl, t: ArrT, loc: Loc) -> ir.Alloc | None:
        """``double z[n];`` in a kernel: an ``ir.Alloc`` scratch array, in place at the top level of
        the body; declared in a loop or an if, moved to the top of the body (None here).

        Moving it is sound: an array declared in a loop body is a new object each iteration whose
        elements are indeterminate until written, so a defined program never reads, in one
        iteration, what another wrote; one array for all iterations holds the same values wherever
        they are read.  Its name is fresh, and its extents read parameters only, checked in
        :meth:`lower` to be ones the kernel never assigns (so they have the same value at the top).
        The dependences the shared storage adds are the expand pass's to remove (doitgen's row).
        """
        if self.kind != "kernel":
            raise TranspileError(loc, f"local array '{d.name}' in a helper function is not supported: "
                                      "pass it as a parameter")
        if d.init is not None:
            raise TranspileError(loc, f"initialiser for local array '{d.name}' is not supported")
        dims_c: list[c_ast.Node | None] = []
        elem: CType = t
        while isinstance(elem, ArrT):
            dims_c.append(elem.dim)
            elem = elem.elem
        if not isinstance(elem, ir.Scalar):
            raise TranspileError(loc, f"local array '{d.name}' of {describe(elem)} is not supported")
        dims = []
        for dn in dims_c:
            if dn is None:
                raise TranspileError(loc, f"local array '{d.name}' needs an extent in every dimension")
            e = self.extent(dn, d.name)
            for n in ir.walk(e):
                if isinstance(n, ir.Var) and n.name not in self.param_names:
                    raise self.err(dn, f"extent of local array '{d.name}' reads '{n.name}', which is "
                                       "not supported: extents must be over scalar parameters and constants")
            dims.append(e)
        name = self.fresh(d.name, self.names)
        self.declare(Sym("array", d.name, name, elem, rank=len(dims)))
        alloc = ir.Alloc(name, ir.ArrayType(elem, tuple(dims)), loc=loc)
        if self.top_level:
            return alloc
        self.hoisted.append(alloc)
        return None

    def assignment_chain(self, node: c_ast.Assignment) -> list[ir.Stmt]:
        """``a = b = e;`` as ``b = e; a = b;`` (the value of an assignment is its target's new value)."""
        if not isinstance(node.rvalue, c_ast.Assignment):
            return [self.assignment(node)]
        inner = self.assignment_chain(node.rvalue)
        target = self.lvalue(node.lvalue)
        value = self.expr(node.rvalue.lvalue)
        op = None if node.op == "=" else node.op[:-1]
        return [*inner, ir.assign(target, value, op, loc=self.loc(node))]

    def local_type(self, d: c_ast.Decl) -> ir.Scalar:
        if d.name is None:
            raise self.err(d, "struct, union or enum declarations inside a function are not supported")
        if "static" in d.storage:
            raise self.err(d, f"static local variable '{d.name}' is not supported: its value would "
                              "persist across calls")
        if "extern" in d.storage:
            raise self.err(d, f"extern declaration of '{d.name}' inside a function is not supported")
        t = self.unit.types.resolve(d.type)
        if isinstance(t, ir.Scalar):
            return t
        if isinstance(t, ArrT):
            raise self.err(d, f"local array '{d.name}' is not supported: pass it as a parameter")
        if isinstance(t, PtrT):
            raise self.err(d, f"local pointer '{d.name}' is not supported: index the parameters directly")
        if isinstance(t, FuncT):
            raise self.err(d, f"local declaration of function '{d.name}' is not supported: declare it at "
                              "file scope")
        raise self.err(d, f"local variable '{d.name}' of type '{describe(t)}' is not supported")

    def assignment(self, node: c_ast.Assignment) -> ir.Assign:
        target = self.lvalue(node.lvalue)
        value = self.expr(node.rvalue)
        op = None if node.op == "=" else node.op[:-1]
        return ir.assign(target, value, op, loc=self.loc(node))

    def lvalue(self, node: c_ast.Node) -> ir.Var | ir.Index:
        if isinstance(node, c_ast.ArrayRef):
            return self.index(node)
        if isinstance(node, c_ast.ID):
            sym = self.lookup(node.name)
            if sym is None:
                self.id_value(node)  # raises the right error for globals, constants, undeclared
                raise self.err(node, f"cannot assign to '{node.name}'")
            if sym.kind == "loop":
                raise self.err(node, f"loop variable '{node.name}' is assigned in the body of its loop, "
                                     "which is not supported: the loop needs a fixed trip count")
            if sym.kind == "array":
                what = ("pointer parameter" if sym.pointer else "array parameter" if sym.is_param
                        else "local array")
                raise self.err(node, f"{what} '{node.name}' is modified, which is not supported: "
                                     f"moving pointers is not supported; index it as {node.name}[i] instead")
            return self.plain(sym, node)
        if isinstance(node, c_ast.UnaryOp) and node.op == "*":
            return self.expr(node)  # type: ignore[return-value]  # raises
        if isinstance(node, c_ast.StructRef):
            return self.expr(node)  # type: ignore[return-value]  # raises
        raise self.err(node, "assignment target is not supported: assign to a variable or an array element")

    def return_stmt(self, node: c_ast.Return) -> ir.Return:
        if self.active:
            raise self.err(node, "'return' inside a loop is not supported: loops must run to completion")
        if self.kind == "kernel":
            raise self.err(node, "early 'return' in a kernel is not supported: only a final 'return;' is "
                                 "allowed")
        if self.ret is None:
            if node.expr is not None:
                raise self.err(node, "'return' with a value in a void function")
            return ir.Return(None, loc=self.loc(node))
        if node.expr is None:
            raise self.err(node, "'return' without a value in a function returning a value")
        return ir.Return(ir.cast(self.expr(node.expr), self.ret), loc=self.loc(node))

    def for_loop(self, node: c_ast.For) -> list[ir.Stmt]:
        """A C ``for`` loop, normalised (see :mod:`transpile.frontend.loops`); a run-time step's check
        (:func:`loops.step_check`) comes first."""
        loc = self.loc(node)
        init = node.init
        if init is None:  # 'for (; i < n; i++)': counts on from the declared variable's value
            counted = _counted(node.next)
            if counted is None:
                raise TranspileError(loc, "'for' loop without an initialisation is not supported: the loop "
                                          "variable needs a start value")
            init = c_ast.Assignment("=", counted, counted, coord=node.coord)
        origin: Sym | None = None
        for part in (init, node.next):
            if isinstance(part, c_ast.ExprList):
                raise self.err(part, "comma expressions are not supported: a loop has one variable, "
                                     "initialised and stepped on its own")
        if isinstance(init, c_ast.DeclList):
            if len(init.decls) != 1:
                raise self.err(init, "'for' loop declaring several variables is not supported")
            d = init.decls[0]
            ty = self.local_type(d)
            if d.init is None or isinstance(d.init, c_ast.InitList):
                raise self.err(d, f"loop variable '{d.name}' needs an initial value")
            start, cname = self.expr(d.init), d.name
        elif isinstance(init, c_ast.Assignment) and init.op == "=" and isinstance(init.lvalue, c_ast.ID):
            cname = init.lvalue.name
            var = self.lookup(cname)
            if var is None or var.kind != "scalar":
                self.lvalue(init.lvalue)  # raises the matching error
                raise self.err(init, f"'{cname}' cannot be a loop variable")
            origin, ty = var, var.ty
            start = self.expr(init.rvalue)
        else:
            raise self.err(init, "'for' loop initialisation is not supported: it must be 'i = start' or "
                                 "'int i = start'")
        if not ty.is_int:
            raise self.err(init, f"loop variable '{cname}' has type {C_NAMES[ty.name]}, which is not "
                                 "supported: loop variables must be integers")
        if node.cond is None:
            raise TranspileError(loc, "'for' loop without a condition is not supported: no provable trip "
                                      "count")
        if node.next is None:
            raise TranspileError(loc, "'for' loop without an increment is not supported: no provable trip "
                                      "count")
        op, bound_node = loops.split_cond(node.cond, cname, self.loc(node.cond))
        sign, step_node = loops.step_expr(node.next, cname, self.loc(node.next))
        name = self.fresh(cname, self.decl_names | {s.name for s in self.active})
        self.names.add(name)
        self.cnames.setdefault(name, cname)
        sym = Sym("loop", cname, name, ty)
        self.scopes.append({cname: sym})
        self.active.append(sym)
        step = sign
        stride = None  # a loop-invariant step known at run time only (BLAS's 'i += incx')
        if step_node is not None:  # read in the loop's scope: 'i += i' reads the loop variable
            step_value = self.expr(step_node)
            c = fold(step_value)
            if isinstance(c, int):
                step = sign * c
            else:
                stride = loops.runtime_step(step_value, name, cname, ty, self.loc(step_node))
        if step == 0:
            raise self.err(node.next, "loop step 0 is not supported: the loop would never end")
        bound = self.expr(bound_node)
        if bound.ty.is_float:
            raise self.err(bound_node, "floating-point loop bound is not supported: bounds must be "
                                       "integer expressions")
        if any(isinstance(n, ir.Var) and n.name == name for n in ir.walk(bound)):
            raise self.err(bound_node, f"loop bound depends on the loop variable '{cname}', which is not "
                                       "supported")
        moved = not (isinstance(node.cond, c_ast.BinaryOp) and any(bound_node is c for c in (node.cond.left,
                                                                                             node.cond.right)))
        if moved and not (ty.is_signed and bound.ty.is_signed):  # 'i + e < n' as 'i < n - e' could wrap
            raise self.err(node.cond, f"loop condition is not supported: an offset or a '&&' on the loop "
                                      f"variable '{cname}' needs signed integers (it is read as a bound of "
                                      f"'{cname}' alone)")
        body = tuple(self.block(node.stmt))
        self.active.pop()
        self.scopes.pop()
        against = False  # a run-time step that must be negative: 'i += inc' with 'i > b', 'i -= inc' with 'i < b'
        if stride is not None:
            if op == "!=":
                raise self.err(node.cond, f"loop condition '{cname} != ...' with a step known only at run "
                                          "time is not supported: the loop could step over its bound; use "
                                          "'<' or '>'")
            against = (op in ("<", "<=")) != (step > 0)
            step = -step if against else step
        lo, hi = loops.normalise(op, step, ir.cast(start, ty), bound, cname, ty, self.loc(node.cond))
        loops.check_bounds_invariant(lo, hi, body, self.cnames)
        check: list[ir.Stmt] = []
        if stride is not None:
            loops.check_bounds_invariant(stride, stride, body, self.cnames)
            body = loops.strided_body(body, stride, name, ty, lo, hi, step, loc, against=against)
            check.append(loops.step_check(stride, lo, hi, against, loops.c_text(step_node), cname, loc))
        f = ir.For(name, ty, lo, hi, step, body, loc=loc)
        if origin is not None and origin.emitted:
            exit_value = None if stride is not None else loops.exit_value(lo, hi, step, ty, loc)
            self.exits[id(f)] = loops.Exit(origin.name, ty, exit_value, cname)
        return [*check, f]


def _counted(nxt: c_ast.Node | None) -> c_ast.ID | None:
    """The variable a loop's increment steps (``i`` of ``i++``, ``i += 4``, ``i = i + 1``), if any."""
    if isinstance(nxt, c_ast.UnaryOp) and isinstance(nxt.expr, c_ast.ID):
        return nxt.expr
    if isinstance(nxt, c_ast.Assignment) and isinstance(nxt.lvalue, c_ast.ID):
        return nxt.lvalue
    return None
