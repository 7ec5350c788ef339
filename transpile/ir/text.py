"""The IR's text form: :func:`parse` text into a typed :class:`ir.Module`, :func:`show` it back.

The grammar is ``grammars/loopir.lark`` (C-like statements and expressions,
C's operator precedence).  Parsing is two steps: lark's LALR parser builds a
parse tree, then :class:`_Lowerer` walks it top-down with a scope stack,
resolves names and builds typed IR with the builders of :mod:`transpile.ir`,
so implicit conversions become ``Cast`` nodes exactly as the C front end makes
them.  Every node gets the ``Loc`` of its first token (binary operations: of
the operator).  Every problem with the input, syntactic or semantic, is a
:class:`TranspileError` located at ``file:line:col``.

The printer is canonical (2-space indentation, minimal parentheses from C
precedence, explicit casts, intents always shown), and ``parse(show(m)) == m``
for every module built with the ir.py builders.  Choices that keep it so:

* Explicit casts ``f64(e)`` parse to a ``Cast`` node even when ``e`` already
  has the type; implicit ones come from the builders and are dropped by them.
* Loop bounds, array indices and extents are kept exactly as written (no
  conversion to the loop variable's type): they only have to be integers.
* ``-2147483648`` (a minus sign directly before an unsuffixed decimal literal)
  is typed by the negative value, so it is the i32 ``INT_MIN``; C would make it
  ``long``.  The i64 constant prints as ``-2147483648L``.
* Infinities print as ``1e999`` / ``1e999f``.  NaN constants have no literal;
  they print as ``(0.0 / 0.0)``, which is NaN but not a ``Const``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Literal

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from transpile import ir
from transpile.diagnostics import Loc, TranspileError
from transpile.ir import accum
from transpile.resources import data_dir

__all__ = ["parse", "parse_kernel", "show", "show_expr", "show_stmt"]


class _WholeWords:
    """Lark post-lexer that lets NAME be lexed in every parser state.

    The contextual lexer only tries the terminals the current state accepts;
    where NAME is not among them, ``int`` would lex as the keyword ``in``
    followed by ``t``.  With NAME always tried, a keyword matches only as a
    whole word, and a name the state does not accept is a clear syntax error.
    """

    always_accept = ("NAME",)

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        return stream


@cache
def _parser() -> Lark:
    grammar = (data_dir("grammars") / "loopir.lark").read_text()
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True,
                postlex=_WholeWords())


# ---------------------------------------------------------------------------
# Parsing


def parse(text: str, filename: str = "<ir>") -> ir.Module:
    """Parse IR text into a typed, name-resolved :class:`ir.Module`.

    Raises :class:`TranspileError` (and nothing else) for any bad input, with
    its location as ``filename:line:col`` and ``source=text``.
    """
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as e:
        raise _syntax_error(e, text, filename) from None
    except RecursionError:
        raise TranspileError(Loc(filename, 1, 1), "program is nested too deeply", source=text) from None
    try:
        return _Lowerer(text, filename).module(tree)
    except TranspileError as e:
        if e.source is not None:
            raise
        raise TranspileError(e.loc, e.msg, source=text) from None
    except RecursionError:
        raise TranspileError(Loc(filename, 1, 1), "program is nested too deeply", source=text) from None


def parse_kernel(text: str, filename: str = "<ir>") -> ir.Kernel:
    """Parse text holding exactly one kernel (and no helper funcs) and return that kernel."""
    m = parse(text, filename)
    if len(m.kernels) != 1 or m.funcs:
        raise TranspileError(Loc(filename, 1, 1), "expected exactly one kernel and no funcs", source=text)
    return m.kernels[0]


def _tree(x: object) -> Tree:
    assert isinstance(x, Tree), x
    return x


def _opt_tree(x: object) -> Tree | None:
    return None if x is None else _tree(x)


def _tok(x: object) -> Token:
    assert isinstance(x, Token), x
    return x


def _scalar(t: ir.Type) -> ir.Scalar:
    assert isinstance(t, ir.Scalar), t
    return t


_SymKind = Literal["param", "array", "local", "loop"]
_INTENTS: dict[str, ir.Intent] = {"in": "in", "out": "out", "inout": "inout"}


@dataclass(frozen=True, slots=True)
class _Sym:
    """A name in scope: ``ty`` is the scalar type (arrays: the element type)."""

    kind: _SymKind
    ty: ir.Scalar
    loc: Loc
    rank: int = 0
    intent: str | None = None  # arrays: the intent as written (None: derive from use)


@dataclass(frozen=True, slots=True)
class _Sig:
    """A helper function's signature."""

    params: tuple[ir.Scalar, ...]
    ret: ir.Scalar | None


_C_TYPES = {"double": "f64", "float": "f32", "int": "i32", "long": "i64", "unsigned": "u32",
            "size_t": "u64", "short": "i16", "char": "i8", "int32_t": "i32", "int64_t": "i64",
            "uint32_t": "u32", "uint64_t": "u64", "ssize_t": "i64", "bool": "i32", "void": "(none)"}


class _Lowerer:
    """Walks a lark parse tree top-down, resolving names and typing expressions."""

    def __init__(self, text: str, filename: str) -> None:
        self.text = text
        self.file = filename
        self.sigs: dict[str, _Sig] = {}
        self.kernel_names: set[str] = set()
        # Per-function state.
        self.owner = ""
        self.ret: ir.Scalar | None = None
        self.in_func = False
        self.scopes: list[dict[str, _Sym]] = []
        self.declared: dict[str, Loc] = {}
        self.in_launch = False
        self.in_if = 0  # launches may sit at the top level or in host loops, never under an if

    # --- locations and errors

    def loc(self, node: object) -> Loc:
        if isinstance(node, Token):
            return Loc(self.file, node.line or 1, node.column or 1)
        assert isinstance(node, Tree), node
        meta = node.meta
        if getattr(meta, "empty", True):
            return Loc(self.file, 1, 1)
        return Loc(self.file, meta.line, meta.column)

    def error(self, node: object, msg: str) -> TranspileError:
        loc = node if isinstance(node, Loc) else self.loc(node)
        return TranspileError(loc, msg, source=self.text)

    # --- module and functions

    def module(self, tree: Tree) -> ir.Module:
        seen: dict[str, Loc] = {}
        for item in tree.children:
            assert isinstance(item, Tree), item
            name = item.children[0]
            assert isinstance(name, Token)
            if name in seen:
                raise self.error(name, f"'{name}' is already defined at {seen[name]}")
            seen[str(name)] = self.loc(name)
            if item.data == "func":
                if name in ir.MATH_FUNCS:
                    raise self.error(name, f"'{name}' is a math library function; pick another name")
                params = self.func_params(_opt_tree(item.children[1]), str(name))
                ret_tree = item.children[2]
                ret = self.type(ret_tree) if ret_tree is not None else None
                self.sigs[str(name)] = _Sig(tuple(_scalar(p.ty) for p in params), ret)
            else:
                self.kernel_names.add(str(name))
        funcs: list[ir.Func] = []
        kernels: list[ir.Kernel] = []
        for item in tree.children:
            assert isinstance(item, Tree)
            if item.data == "func":
                funcs.append(self.func(item))
            else:
                kernels.append(self.kernel(item))
        return ir.Module(tuple(funcs), tuple(kernels), loc=Loc(self.file, 1, 1))

    def begin(self, owner: str, *, in_func: bool, ret: ir.Scalar | None) -> None:
        self.owner = owner
        self.in_func = in_func
        self.ret = ret
        self.scopes = [{}]
        self.declared = {}
        self.in_launch = False
        self.in_if = 0

    def scalar_param(self, p: Tree) -> ir.Param:
        intent, ty, star, name = p.children
        if star is not None:
            raise self.error(p, f"pointer parameter '{name}' needs an extent, e.g. '{name}[n]'")
        if intent is not None and self.word(intent) != "in":
            raise self.error(intent, f"scalar parameter '{name}' cannot be '{self.word(intent)}'")
        return ir.Param(str(name), self.type(ty), loc=self.loc(p))

    def func_params(self, tree: Tree | None, owner: str) -> list[ir.Param]:
        params = []
        for p in tree.children if tree is not None else ():
            p = _tree(p)
            if p.children[2] is not None or len(p.children) > 4:
                raise self.error(p, f"helper func '{owner}' may only take scalar parameters")
            params.append(self.scalar_param(p))
        return params

    def func(self, tree: Tree) -> ir.Func:
        name_tok, params_tree, ret_tree, body = tree.children
        name = str(name_tok)
        ret = self.type(ret_tree) if ret_tree is not None else None
        params = self.func_params(_opt_tree(params_tree), name)
        self.begin(name, in_func=True, ret=ret)
        for p in params:
            assert isinstance(p.ty, ir.Scalar) and p.loc is not None, p
            self.bind(p.name, _Sym("param", p.ty, p.loc), p.loc)
        stmts = self.block(_tree(body), new_scope=False)
        return ir.Func(name, tuple(params), ret, stmts, loc=self.loc(tree))

    def kernel(self, tree: Tree) -> ir.Kernel:
        name_tok, params_tree, slot_tok, body = tree.children
        name = str(name_tok)
        self.begin(name, in_func=False, ret=None)
        ptrees = [_tree(p) for p in params_tree.children] if isinstance(params_tree, Tree) else []
        scalars = {id(p): self.scalar_param(p) for p in ptrees if len(p.children) == 4}
        # Scalars first: array extents may use any scalar parameter, wherever it is.
        for p in ptrees:
            if id(p) in scalars:
                ty = scalars[id(p)].ty
                assert isinstance(ty, ir.Scalar)
                self.bind(str(p.children[3]), _Sym("param", ty, self.loc(p)), self.loc(_tok(p.children[3])))
        arrays = {id(p): self.array_param(p) for p in ptrees if id(p) not in scalars}
        stmts = self.block(_tree(body), new_scope=False)
        # A missing intent is what the uses imply; a written one is kept.
        uses = ir.array_uses(stmts)
        params = []
        for p in ptrees:
            if id(p) in scalars:
                params.append(scalars[id(p)])
                continue
            a = arrays[id(p)]
            if p.children[0] is None:
                a = dataclasses.replace(a, intent=ir.intent_of(*uses.get(a.name, (False, False))))
            params.append(a)
        slot = None
        if slot_tok is not None:
            slot = str(slot_tok)
            if not params or params[-1].name != slot or not isinstance(params[-1].ty, ir.ArrayType):
                raise self.error(slot_tok, f"the return slot '{slot}' must be the kernel's last parameter, an "
                                           "array of extent [1]")
        return ir.Kernel(name, tuple(params), stmts, slot, loc=self.loc(tree))

    def array_param(self, p: Tree) -> ir.Param:
        """An array parameter (intent 'in' when none is written: the caller derives it)."""
        intent, ty, star, name_tok, *dims = p.children
        name, elem = str(name_tok), self.type(ty)
        extents = []
        for d in dims:
            e = self.expr(d)
            if not e.ty.is_int:
                raise self.error(d, f"extent of '{name}' must be an integer, got {e.ty}")
            if any(isinstance(n, ir.Index) for n in ir.walk(e)):
                raise self.error(d, f"extent of '{name}' may only use scalar parameters")
            extents.append(e)
        written = self.word(intent) if intent is not None else None
        self.bind(name, _Sym("array", elem, self.loc(p), len(dims), written), self.loc(_tok(name_tok)))
        chosen = _INTENTS[written] if written is not None else "in"
        return ir.Param(name, ir.ArrayType(elem, tuple(extents)), chosen, star is not None, loc=self.loc(p))

    # --- helpers

    def word(self, tree: object) -> str:
        tok = tree.children[0] if isinstance(tree, Tree) else tree
        return str(tok)

    def type(self, tree: object) -> ir.Scalar:
        return ir.SCALARS[self.word(tree)]

    def lookup(self, name: str) -> _Sym | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def bind(self, name: str, sym: _Sym, at: Loc) -> None:
        prev = self.lookup(name)
        if prev is not None:
            what = "loop variable" if sym.kind == "loop" else "declaration"
            raise self.error(at, f"{what} '{name}' shadows '{name}' declared at {prev.loc}; rename it")
        if sym.kind != "loop":
            if name in self.declared:
                raise self.error(at, f"'{name}' is declared twice in '{self.owner}' (first at "
                                     f"{self.declared[name]}); names must be unique per kernel")
            self.declared[name] = at
        self.scopes[-1][name] = sym

    # --- statements

    def block(self, tree: object, *, new_scope: bool = True) -> tuple[ir.Stmt, ...]:
        assert isinstance(tree, Tree), tree
        if new_scope:
            self.scopes.append({})
        try:
            return tuple(self.stmt(_tree(s)) for s in tree.children)
        finally:
            if new_scope:
                self.scopes.pop()

    def stmt(self, tree: Tree) -> ir.Stmt:
        method: Callable[[Tree], ir.Stmt] = getattr(self, "stmt_" + str(tree.data))
        return method(tree)

    def stmt_decl(self, tree: Tree) -> ir.Stmt:
        ty_tree, name, init_tree = tree.children
        ty = self.type(ty_tree)
        loc = self.loc(tree)
        init = ir.cast(self.expr(init_tree), ty) if init_tree is not None else None
        self.bind(str(name), _Sym("local", ty, loc), self.loc(name))
        return ir.Decl(str(name), ty, init, loc=loc)

    def stmt_alloc(self, tree: Tree) -> ir.Stmt:
        ty_tree, name_tok, *dims = tree.children
        name, elem = str(name_tok), self.type(ty_tree)
        if self.in_func or self.in_launch or len(self.scopes) != 1:
            raise self.error(tree, f"local array '{name}' must be declared at the top level of a kernel")
        extents = []
        for d in dims:
            e = self.expr(d)
            if not e.ty.is_int:
                raise self.error(d, f"extent of '{name}' must be an integer, got {e.ty}")
            for n in ir.walk(e):
                sym = self.lookup(n.name) if isinstance(n, ir.Var) else None
                if isinstance(n, ir.Index) or (sym is not None and sym.kind != "param"):
                    raise self.error(d, f"extent of local array '{name}' may only use scalar parameters")
            extents.append(e)
        loc = self.loc(tree)
        self.bind(name, _Sym("array", elem, loc, len(dims)), self.loc(_tok(name_tok)))
        return ir.Alloc(name, ir.ArrayType(elem, tuple(extents)), loc=loc)

    def stmt_assign(self, tree: Tree) -> ir.Stmt:
        target_tree, op_tok, value_tree = tree.children
        assert isinstance(target_tree, Tree) and isinstance(op_tok, Token)
        name = str(target_tree.children[0])
        sym = self.lookup(name)
        if sym is not None and sym.kind == "loop":
            raise self.error(target_tree, f"cannot assign to loop variable '{name}'")
        op = str(op_tok)[:-1] or None
        if sym is not None and sym.kind == "array" and sym.intent == "in":
            raise self.error(target_tree, f"cannot assign to '{name}': it is declared 'in'")
        if sym is not None and sym.kind == "array" and sym.intent == "out" and op is not None:
            raise self.error(op_tok, f"'{op_tok}' reads '{name}', which is declared 'out'; declare it 'inout'")
        target = self.expr_index(target_tree, write=True) if target_tree.data == "index" else self.expr(target_tree)
        assert isinstance(target, (ir.Var, ir.Index)), target
        value = self.expr(value_tree)
        return ir.assign(target, value, op, loc=self.loc(tree))

    def stmt_for(self, tree: Tree) -> ir.Stmt:
        var, ty_tree, lo_tree, hi_tree, step_tree, red_tree, par, atomic_tree, host_tree, body = tree.children
        ty = self.type(ty_tree) if ty_tree is not None else ir.I32
        if not ty.is_int:
            raise self.error(ty_tree, f"loop variable '{var}' must have an integer type, not {ty}")
        lo, hi = self.expr(lo_tree), self.expr(hi_tree)
        for bound, t in ((lo, lo_tree), (hi, hi_tree)):
            if not bound.ty.is_int:
                raise self.error(t, f"loop bound must be an integer, got {bound.ty}")
        step = 1
        if step_tree is not None:
            s = self.expr(step_tree)
            if not (isinstance(s, ir.Const) and s.ty.is_int and s.ty.is_signed):
                raise self.error(step_tree, "loop step must be an integer constant such as 2 or -1")
            if s.value == 0:
                raise self.error(step_tree, "loop step must not be 0")
            step = int(s.value)
        reduce: tuple[str, ...] = ()
        if red_tree is not None:
            reduce = tuple(str(t) for t in red_tree.children)
            for t in red_tree.children:
                if str(t) not in accum.OPS:
                    raise self.error(t, f"reduction operator must be +, *, min or max, not '{t}'")
        if par is not None:
            if str(par) not in ("x", "y", "z", "lane"):
                raise self.error(par, f"par dimension must be x, y, z or lane, not '{par}'")
            if not self.in_launch:
                raise self.error(par, "'par' loops are only allowed inside 'launch'")
        atomic: tuple[str, ...] = ()
        if atomic_tree is not None:
            if par is None or str(par) == "lane":
                raise self.error(atomic_tree, "'atomic(...)' marks a grid 'par(x|y|z)' loop")
            atomic = tuple(str(t) for t in atomic_tree.children)
            for t in atomic_tree.children:
                sym = self.lookup(str(t))
                if sym is None or sym.kind != "array":
                    raise self.error(t, f"'atomic' lists '{t}', which is not an array")
        host: tuple[str, ...] = ()
        if host_tree is not None:
            host = tuple(str(t) for t in host_tree.children)
            for t in host_tree.children:
                if str(t) not in ir.HOST_SCHEDULES:
                    raise self.error(t, f"unknown host loop schedule '{t}' (one of {', '.join(ir.HOST_SCHEDULES)})")
        self.scopes.append({})
        try:
            self.bind(str(var), _Sym("loop", ty, self.loc(var)), self.loc(var))
            stmts = self.block(body)
        finally:
            self.scopes.pop()
        return ir.For(str(var), ty, lo, hi, step, stmts, str(par) if par is not None else None,
                      reduce, atomic, host, loc=self.loc(tree))

    def stmt_if(self, tree: Tree) -> ir.Stmt:
        cond_tree, then_tree, else_tree = tree.children
        cond = self.expr(cond_tree)
        self.in_if += 1
        try:
            then = self.block(then_tree)
            orelse: tuple[ir.Stmt, ...] = ()
            if isinstance(else_tree, Tree):
                orelse = (self.stmt_if(else_tree),) if else_tree.data == "if" else self.block(else_tree)
        finally:
            self.in_if -= 1
        return ir.If(cond, then, orelse, loc=self.loc(tree))

    def stmt_return(self, tree: Tree) -> ir.Stmt:
        (value_tree,) = tree.children
        if not self.in_func:
            raise self.error(tree, "'return' outside a func (kernels cannot return)")
        if value_tree is None:
            if self.ret is not None:
                raise self.error(tree, f"func '{self.owner}' must return a value of type {self.ret}")
            return ir.Return(None, loc=self.loc(tree))
        if self.ret is None:
            raise self.error(tree, f"void func '{self.owner}' cannot return a value")
        return ir.Return(ir.cast(self.expr(value_tree), self.ret), loc=self.loc(tree))

    def stmt_trap(self, tree: Tree) -> ir.Stmt:
        (text,) = tree.children
        if self.in_func:
            raise self.error(tree, "'trap' outside a kernel")
        return ir.Trap(_unquote(str(text)), loc=self.loc(tree))

    def stmt_launch(self, tree: Tree) -> ir.Stmt:
        if self.in_func or self.in_launch or self.in_if:
            raise self.error(tree, "'launch' is only allowed at the top level of a kernel or in a host loop")
        name, block = tree.children
        form = None
        if name is not None:
            try:
                form = ir.LaunchForm(str(name))
            except ValueError:
                known = ", ".join(f.value for f in ir.LaunchForm)
                raise self.error(name, f"unknown launch form '{name}' (one of {known})") from None
        self.in_launch = True
        try:
            body = self.block(block)
        finally:
            self.in_launch = False
        return ir.Launch(body, form, loc=self.loc(tree))

    # --- expressions

    def expr(self, tree: object) -> ir.Expr:
        assert isinstance(tree, Tree), tree
        method: Callable[[Tree], ir.Expr] = getattr(self, "expr_" + str(tree.data))
        return method(tree)

    def expr_const(self, tree: Tree) -> ir.Expr:
        (tok,) = tree.children
        assert isinstance(tok, Token)
        if tok.type == "FLOAT_LIT":
            return self.float_literal(tok)
        return self.int_literal(tok, self.loc(tok), negate=False)

    def float_literal(self, tok: Token) -> ir.Const:
        s = str(tok)
        ty = ir.F32 if s[-1] in "fF" else ir.F64
        import numpy as np  # imported where used: a compile from C needs numpy for f32 constants only

        with np.errstate(over="ignore"):
            return ir.const(float(s.rstrip("fF")), ty, loc=self.loc(tok))

    def int_literal(self, tok: Token, loc: Loc, *, negate: bool) -> ir.Expr:
        m = re.fullmatch(r"(0[xX][0-9a-fA-F]+|\d+)([uU]?)([lL]*)([uU]?)", str(tok))
        assert m is not None, tok
        digits, unsigned, long = m.group(1), bool(m.group(2) or m.group(4)), bool(m.group(3))
        if len(digits) > 30:
            raise self.error(tok, f"integer literal {tok} is too large")
        decimal = True
        if digits[:2] in ("0x", "0X"):
            value, decimal = int(digits, 16), False
        elif len(digits) > 1 and digits[0] == "0":
            if not re.fullmatch(r"[0-7]+", digits):
                raise self.error(tok, f"invalid octal literal {tok}")
            value, decimal = int(digits, 8), False
        else:
            value = int(digits)
        if decimal:
            order = {(False, False): "i32 i64", (True, False): "u32 u64", (False, True): "i64",
                     (True, True): "u64"}[unsigned, long]
        else:
            order = {(False, False): "i32 u32 i64 u64", (True, False): "u32 u64", (False, True): "i64 u64",
                     (True, True): "u64"}[unsigned, long]
        candidates = [ir.SCALARS[n] for n in order.split()]
        if negate and decimal and not unsigned:
            # The sign belongs to the literal, so -2147483648 is i32 (see the module docstring).
            for ty in candidates:
                if ir.wrap_int(-value, ty) == -value:
                    return ir.Const(-value, ty, loc=loc)
        else:
            for ty in candidates:
                if ir.wrap_int(value, ty) == value:
                    c = ir.Const(value, ty, loc=self.loc(tok))
                    return ir.unary("-", c, loc=loc) if negate else c
        raise self.error(tok, f"integer literal {tok} is too large for {candidates[-1]}")

    def expr_var(self, tree: Tree) -> ir.Expr:
        (name,) = tree.children
        sym = self.lookup(str(name))
        if sym is None:
            if name in self.sigs or name in ir.MATH_FUNCS:
                raise self.error(name, f"function '{name}' used as a value; call it as {name}(...)")
            raise self.error(name, f"undeclared name '{name}'")
        if sym.kind == "array":
            raise self.error(name, f"array '{name}' used without indices (it has {sym.rank} dimension(s))")
        return ir.Var(str(name), sym.ty, loc=self.loc(name))

    def expr_index(self, tree: Tree, *, write: bool = False) -> ir.Index:
        name, *idx_trees = tree.children
        sym = self.lookup(str(name))
        if sym is None:
            raise self.error(name, f"undeclared name '{name}'")
        if sym.kind != "array":
            raise self.error(name, f"'{name}' is not an array and cannot be indexed")
        if sym.intent == "out" and not write:
            raise self.error(name, f"array '{name}' is declared 'out' but read here; declare it 'inout'")
        if len(idx_trees) != sym.rank:
            raise self.error(name, f"array '{name}' has {sym.rank} dimension(s) but {len(idx_trees)} "
                                   f"index(es) are given")
        indices = []
        for t in idx_trees:
            e = self.expr(t)
            if not e.ty.is_int:
                raise self.error(t, f"array index must be an integer, got {e.ty}")
            indices.append(e)
        return ir.Index(str(name), tuple(indices), sym.ty, loc=self.loc(name))

    def expr_call(self, tree: Tree) -> ir.Expr:
        name, *arg_trees = tree.children
        args = tuple(self.expr(a) for a in arg_trees if a is not None)
        fn, loc = str(name), self.loc(name)
        if fn in self.sigs:
            sig = self.sigs[fn]
            if sig.ret is None:
                raise self.error(name, f"void func '{fn}' cannot be used in an expression")
            return ir.call(fn, args, sig.params, sig.ret, loc=loc)
        if fn in ir.MATH_FUNCS:
            params, ret = ir.MATH_FUNCS[fn]
            return ir.call(fn, args, params, ret, loc=loc)
        if fn in self.kernel_names:
            raise self.error(name, f"kernel '{fn}' cannot be called")
        if self.lookup(fn) is not None:
            raise self.error(name, f"'{fn}' is not a function")
        raise self.error(name, f"unknown function '{fn}'")

    def expr_cast(self, tree: Tree) -> ir.Expr:
        ty_tree, operand = tree.children
        # An explicit cast is always a node (even to the operand's own type), so it round-trips.
        return ir.Cast(self.expr(operand), self.type(ty_tree), loc=self.loc(tree))

    def expr_unary(self, tree: Tree) -> ir.Expr:
        op, operand = tree.children
        assert isinstance(op, Token)
        loc = self.loc(op)
        if (op == "-" and isinstance(operand, Tree) and operand.data == "const"
                and isinstance(operand.children[0], Token) and operand.children[0].type == "INT_LIT"):
            lit = operand.children[0]
            between = self.text[op.end_pos or 0:lit.start_pos or 0]
            if between.strip() == "":
                return self.int_literal(lit, loc, negate=True)
        return ir.unary(str(op), self.expr(operand), loc=loc)

    def expr_binary(self, tree: Tree) -> ir.Expr:
        lhs, op, rhs = tree.children
        return ir.binary(str(op), self.expr(lhs), self.expr(rhs), loc=self.loc(op))

    def expr_select(self, tree: Tree) -> ir.Expr:
        cond, _, then, orelse = tree.children
        return ir.select(self.expr(cond), self.expr(then), self.expr(orelse), loc=self.loc(tree))


# ---------------------------------------------------------------------------
# Syntax errors

_EXPR_START = {"NAME", "INT_LIT", "FLOAT_LIT", "LPAR", "MINUS", "BANG", "TILDE", "TYPE"}
_OPERATORS = {"QMARK", "OROR", "ANDAND", "BAR", "CARET", "AMP", "EQ", "NE", "LT", "LE", "GT", "GE",
              "SHL", "SHR", "PLUS", "MINUS", "STAR", "SLASH", "PERCENT"}
_ASSIGN_OPS = {"ASSIGN", "ADD_ASSIGN", "SUB_ASSIGN", "MUL_ASSIGN", "DIV_ASSIGN", "MOD_ASSIGN",
               "SHL_ASSIGN", "SHR_ASSIGN", "AND_ASSIGN", "OR_ASSIGN", "XOR_ASSIGN"}
_FOR_HINT = "write `for i in lo..hi { ... }` (hi is exclusive)"


@cache
def _terminal_texts() -> dict[str, str]:
    texts = {"NAME": "a name", "INT_LIT": "a number", "FLOAT_LIT": "a number", "TYPE": "a type",
             "$END": "end of input"}
    for t in _parser().terminals:
        if t.name not in texts and t.pattern.type == "str":
            texts[t.name] = f"'{t.pattern.value}'"
    return texts


def _describe_expected(expected: set[str]) -> str:
    texts = _terminal_texts()
    exp = set(expected)
    words: list[str] = []
    if {"NAME", "INT_LIT", "FLOAT_LIT"} <= exp:
        exp -= _EXPR_START
        words.append("an expression")
    if len(exp & _OPERATORS) >= 3:
        exp -= _OPERATORS
        words.append("an operator")
    if len(exp & _ASSIGN_OPS) >= 3:
        exp -= _ASSIGN_OPS
        words.append("'=' or a compound assignment")
    names = sorted({texts.get(n, n) for n in exp})
    names.sort(key=lambda s: not s.startswith("'"))
    items = names + words
    if not items:
        return ""
    return items[0] if len(items) == 1 else "one of: " + ", ".join(items)


def _previous_token(text: str, tok: Token) -> Token | None:
    """The token before ``tok`` (for end of input: the last token), by lexing ``text`` again."""
    prev = None
    try:
        for t in _parser().lex(text):
            if tok.type != "$END" and (t.start_pos or 0) >= (tok.start_pos or 0):
                break
            prev = t
    except UnexpectedInput:
        pass
    return prev


def _syntax_error(e: UnexpectedInput, text: str, filename: str) -> TranspileError:
    if isinstance(e, UnexpectedCharacters):
        pos = e.pos_in_stream if e.pos_in_stream is not None else -1
        ch = text[pos] if 0 <= pos < len(text) else ""
        return TranspileError(Loc(filename, e.line, e.column), f"unexpected character {ch!r}", source=text)
    if not isinstance(e, UnexpectedToken):
        return TranspileError(Loc(filename, max(e.line, 1), max(e.column, 1)), "syntax error", source=text)
    tok = e.token
    expected = set(e.accepts or e.expected)
    prev = _previous_token(text, tok)
    if tok.type == "$END":
        line, col = (prev.end_line or 1, prev.end_column or 1) if prev is not None else (1, 1)
        what = "end of input"
    else:
        line, col = tok.line or 1, tok.column or 1
        what = f"'{tok}'"
    named = _named_mistake(tok, expected, prev, text)
    if named is not None:
        msg, at = named
        if at is not None:
            line, col = at
    else:
        wanted = _describe_expected(expected)
        msg = f"unexpected {what}" + (f", expected {wanted}" if wanted else "")
    return TranspileError(Loc(filename, line, col), msg, source=text)


def _named_mistake(tok: Token, expected: set[str], prev: Token | None,
                   text: str) -> tuple[str, tuple[int, int] | None] | None:
    """A plain-words message (and maybe a better position) for a common mistake, else None."""
    ptype = prev.type if prev is not None else None
    if ptype == "FOR" and tok.type == "LPAR":
        return f"C-style for loops are not supported: {_FOR_HINT}", None
    if {"IN", "COLON"} <= expected:
        return f"missing 'in' in for loop: {_FOR_HINT}", None
    if ptype == "IF" and tok.type != "LPAR":
        return "missing '(' after 'if': write `if (cond) { ... }`", None
    if tok.type == "ASSIGN" and "EQ" in expected:
        return "'=' is not an operator here: use '==' to compare (assignment is a statement)", None
    after = text[tok.end_pos:tok.end_pos + 1] if tok.end_pos is not None else ""
    if tok.type in ("PLUS", "MINUS") and expected & _ASSIGN_OPS and after == tok:
        return f"'{tok}{tok}' is not supported: write `x {tok}= 1;`", None
    if tok.type == "NAME" and ptype == "NAME" and "ASSIGN" in expected and prev is not None:
        return _unknown_type(prev), (prev.line or 1, prev.column or 1)
    if tok.type == "NAME" and "TYPE" in expected and "NAME" not in expected:
        return _unknown_type(tok), None
    if ("SEMICOLON" in expected and prev is not None
            and (tok.type in ("RBRACE", "$END") or (tok.line or 0) > (prev.end_line or 0))):
        return "missing ';' at end of statement", (prev.end_line or 1, prev.end_column or 1)
    if any(_terminal_texts().get(n) == "'..'" for n in expected) and "LBRACE" not in expected:
        return "missing '..' in loop range: write `for i in lo..hi { ... }`", None
    return None


def _unknown_type(tok: Token) -> str:
    hint = _C_TYPES.get(str(tok))
    if hint == "(none)":
        return f"unknown type name '{tok}' (a func without '-> TYPE' returns nothing)"
    if hint is not None:
        return f"unknown type name '{tok}' (C's '{tok}' is '{hint}')"
    return f"unknown type name '{tok}' (types are {', '.join(ir.SCALARS)})"


# ---------------------------------------------------------------------------
# Printing

# C precedence, loosest first: ?: 1, || 2, && 3, | 4, ^ 5, & 6, == != 7,
# < <= > >= 8, << >> 9, + - 10, * / % 11, unary 12, atoms 13.
_BINARY_PREC = {"||": 2, "&&": 3, "|": 4, "^": 5, "&": 6, "==": 7, "!=": 7, "<": 8, "<=": 8, ">": 8,
                ">=": 8, "<<": 9, ">>": 9, "+": 10, "-": 10, "*": 11, "/": 11, "%": 11}
_P_SELECT, _P_UNARY, _P_ATOM = 1, 12, 13
_COMPOUND_OPS = ("+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^")


def show(node: ir.Module | ir.Kernel | ir.Func) -> str:
    """The canonical text of a module, kernel or helper function (ends with a newline)."""
    if isinstance(node, ir.Module):
        parts = [_show_func(f) for f in node.funcs] + [_show_kernel(k) for k in node.kernels]
        return "\n\n".join(parts) + "\n" if parts else ""
    if isinstance(node, ir.Kernel):
        return _show_kernel(node) + "\n"
    if isinstance(node, ir.Func):
        return _show_func(node) + "\n"
    raise TypeError(f"show() takes a Module, Kernel or Func, not {type(node).__name__}")


_WIDTH = 100  # parameter lists longer than this wrap, aligned after the '('


def _show_param(p: ir.Param) -> str:
    if isinstance(p.ty, ir.Scalar):
        return f"{p.ty} {p.name}"
    dims = "".join(f"[{show_expr(d)}]" for d in p.ty.dims)
    return f"{p.intent} {p.ty.elem}{'*' if p.pointer else ''} {p.name}{dims}"


def _show_header(prefix: str, params: tuple[ir.Param, ...], suffix: str) -> str:
    texts = [_show_param(p) for p in params]
    line = f"{prefix}({', '.join(texts)}){suffix}"
    if len(line.split("\n", 1)[0]) <= _WIDTH or len(texts) < 2:
        return line
    pad = " " * (len(prefix) + 1)
    lines, cur = [], f"{prefix}({texts[0]}"
    for t in texts[1:]:
        if len(cur) + 2 + len(t) + 1 > _WIDTH:
            lines.append(cur + ",")
            cur = pad + t
        else:
            cur += ", " + t
    return "\n".join(lines + [f"{cur}){suffix}"])


def _show_kernel(k: ir.Kernel) -> str:
    slot = f" -> {k.ret}" if k.ret is not None else ""
    return _show_header(f"kernel {k.name}", k.params, f"{slot} {_show_block(k.body, 0)}")


def _show_func(f: ir.Func) -> str:
    ret = f" -> {f.ret}" if f.ret is not None else ""
    return _show_header(f"func {f.name}", f.params, f"{ret} {_show_block(f.body, 0)}")


def _show_block(body: tuple[ir.Stmt, ...], indent: int) -> str:
    if not body:
        return "{}"
    inner = "\n".join(show_stmt(s, indent + 1) for s in body)
    return "{\n" + inner + "\n" + "  " * indent + "}"


def show_stmt(s: ir.Stmt, indent: int = 0) -> str:
    """The canonical text of one statement, indented by ``indent`` levels (no final newline)."""
    pad = "  " * indent
    if isinstance(s, ir.Decl):
        init = f" = {show_expr(s.init)}" if s.init is not None else ""
        return f"{pad}{s.ty} {s.name}{init};"
    if isinstance(s, ir.Alloc):
        return f"{pad}{s.ty.elem} {s.name}{''.join(f'[{show_expr(d)}]' for d in s.ty.dims)};"
    if isinstance(s, ir.Assign):
        target = show_expr(s.target)
        compound = _compound(s)
        if compound is not None:
            op, rhs = compound
            return f"{pad}{target} {op}= {show_expr(rhs)};"
        return f"{pad}{target} = {show_expr(s.value)};"
    if isinstance(s, ir.For):
        ty = f": {s.ty}" if s.ty != ir.I32 else ""
        step = f" step {s.step}" if s.step != 1 else ""
        par = f" par({s.par})" if s.par is not None else ""
        red = f" reduce({', '.join(s.reduce)})" if s.reduce else ""
        atomic = f" atomic({', '.join(s.atomic)})" if s.atomic else ""
        host = f" host({', '.join(s.host)})" if s.host else ""
        head = f"for {s.var}{ty} in {show_expr(s.lo)}..{show_expr(s.hi)}{step}{red}{par}{atomic}{host}"
        return f"{pad}{head} {_show_block(s.body, indent)}"
    if isinstance(s, ir.If):
        return pad + _show_if(s, indent)
    if isinstance(s, ir.Return):
        return f"{pad}return {show_expr(s.value)};" if s.value is not None else f"{pad}return;"
    if isinstance(s, ir.Trap):
        return f"{pad}trap {_quote(s.message)};"
    if isinstance(s, ir.Launch):
        form = f"[{s.form.value}]" if s.form is not None else ""
        return f"{pad}launch{form} {_show_block(s.body, indent)}"
    raise TypeError(f"not a statement: {s!r}")


def _quote(message: str) -> str:
    """A trap's message as a string literal of the text form (one line: ``\\"`` and ``\\\\`` escaped)."""
    assert "\n" not in message, f"a trap's message is one line: {message!r}"
    return '"' + message.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _unquote(literal: str) -> str:
    return re.sub(r'\\(["\\])', r"\1", literal[1:-1])


def _show_if(s: ir.If, indent: int) -> str:
    text = f"if ({show_expr(s.cond)}) {_show_block(s.then, indent)}"
    if len(s.orelse) == 1 and isinstance(s.orelse[0], ir.If):
        return text + " else " + _show_if(s.orelse[0], indent)
    if s.orelse:
        return text + " else " + _show_block(s.orelse, indent)
    return text


def _compound(s: ir.Assign) -> tuple[str, ir.Expr] | None:
    """(op, e) when ``s`` is exactly what ``ir.assign(target, e, op)`` builds, so ``op=`` round-trips."""
    v = s.value
    inner = v.operand if isinstance(v, ir.Cast) and v.ty == s.target.ty else v
    for b in (v, inner):
        if not (isinstance(b, ir.Binary) and b.op in _COMPOUND_OPS):
            continue
        candidates = [b.rhs.operand, b.rhs] if isinstance(b.rhs, ir.Cast) else [b.rhs]
        for e in candidates:
            try:
                if ir.assign(s.target, e, b.op) == s:
                    return b.op, e
            except TranspileError:
                pass
    return None


def _prec(e: ir.Expr) -> int:
    if isinstance(e, ir.Binary):
        return _BINARY_PREC[e.op]
    if isinstance(e, ir.Select):
        return _P_SELECT
    if isinstance(e, ir.Unary):
        return _P_UNARY
    if isinstance(e, ir.Const) and _show_const(e).startswith("-"):
        return _P_UNARY  # a negative literal is a unary minus in the grammar
    return _P_ATOM


def show_expr(e: ir.Expr, prec: int = 0) -> str:
    """The text of ``e``, parenthesised if it binds looser than precedence level ``prec``.

    Levels follow C: 1 is ``?:`` and 13 an atom (see ``_BINARY_PREC``); ``0``
    means any context where a full expression may stand.
    """
    text = _show_expr(e)
    return f"({text})" if _prec(e) < prec else text


def _show_expr(e: ir.Expr) -> str:
    if isinstance(e, ir.Const):
        return _show_const(e)
    if isinstance(e, ir.Var):
        return e.name
    if isinstance(e, ir.Index):
        return e.array + "".join(f"[{show_expr(i)}]" for i in e.indices)
    if isinstance(e, ir.Binary):
        p = _BINARY_PREC[e.op]
        # Left-associative: the right operand of the same level needs parentheses.
        return f"{show_expr(e.lhs, p)} {e.op} {show_expr(e.rhs, p + 1)}"
    if isinstance(e, ir.Unary):
        operand = show_expr(e.operand, _P_UNARY)
        if e.op == "-" and operand.startswith("-"):
            operand = f"({operand})"  # not `--x`, which reads as a decrement
        return e.op + operand
    if isinstance(e, ir.Select):
        return f"{show_expr(e.cond, _P_SELECT + 1)} ? {show_expr(e.then)} : {show_expr(e.orelse, _P_SELECT)}"
    if isinstance(e, ir.Cast):
        return f"{e.ty}({show_expr(e.operand)})"
    if isinstance(e, ir.Call):
        return f"{e.fn}({', '.join(show_expr(a) for a in e.args)})"
    raise TypeError(f"not an expression: {e!r}")


def _show_const(c: ir.Const) -> str:
    v, ty = c.value, c.ty
    if ty.is_int:
        suffix = {"i64": "L", "u32": "u", "u64": "uL"}.get(ty.name, "")
        return f"{int(v)}{suffix}"
    v = float(v)
    suffix = "f" if ty == ir.F32 else ""
    if math.isnan(v):
        return f"(0.0{suffix} / 0.0{suffix})"
    if math.isinf(v):
        return f"{'-' if v < 0 else ''}1e999{suffix}"
    if ty == ir.F32:
        return _shortest_f32(v) + suffix
    return repr(v)


def _shortest_f32(v: float) -> str:
    """The shortest decimal string that reads back as the single-precision value ``v``."""
    import numpy as np

    with np.errstate(over="ignore"):
        for digits in range(1, 10):
            s = f"{v:.{digits}g}"
            if float(np.float32(float(s))) == v:
                break
    if "." not in s and "e" not in s:
        s += ".0"
    return s
