"""Structuring of unstructured C control flow: ``goto``, ``switch``, ``break`` and ``continue``.

The IR has loops that run their whole trip count and two-way ifs only (docs/ir.md).  C's forward
jumps are rewritten on the pycparser tree, before lowering, into those (docs/ordinary_c.md):

* ``continue`` becomes a jump to a label at the end of its loop's body, ``break`` (out of a loop or a
  ``switch``) a jump to a label right after it;
* a ``switch`` becomes an ``if``/``else if`` chain when every case group ends in its only ``break``
  (the usual shape), else a dispatch of jumps to its case labels, the cases spliced in order (so
  fall-through falls through);
* a jump ``if (c) goto L;`` to a label later in the same block becomes ``if (!(c)) { ... }`` around the
  statements up to ``L`` (what a ``continue`` or a skip is);
* any other forward jump sets a flag ``int goto_L__ = 0`` declared at the start of the block holding
  ``L``, and every statement the jump skips runs under ``if (!goto_L__)``; a loop a jump leaves runs its
  remaining iterations under the same guard.

Only forward jumps to a label in the same block or an enclosing one are structured; a backward jump
(a loop made of ``goto``) or a jump into a block is refused with a located error.  Flags declared in a
loop body are private to its iteration, so a loop whose jumps stay inside its body can still be
parallel; a flag that outlives an iteration (``break``) carries a dependence, and the loop stays
sequential, which is correct.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable

from pycparser import c_ast

from transpile.diagnostics import Loc, TranspileError

_BREAKABLE = (c_ast.For, c_ast.While, c_ast.DoWhile, c_ast.Switch)
_LOOPS = (c_ast.For, c_ast.While, c_ast.DoWhile)


def structure(fdef: c_ast.FuncDef, loc: Callable[[c_ast.Node], Loc], *, helper: bool = False) -> None:
    """Rewrite ``fdef``'s body in place so that it holds no ``goto``, label, ``switch``, ``break`` or
    ``continue``, nor a ``return`` before the end (in a ``helper``, the IR's device functions, a return
    outside loops stays); idempotent; ``loc`` maps a node to its source ``Loc`` for errors."""
    body = fdef.body
    if body is None:
        return
    _early_returns(fdef, helper)
    if not _any(body, (c_ast.Goto, c_ast.Label, c_ast.Switch, c_ast.Break, c_ast.Continue)):
        return
    _Structurer(loc).run(body)


_RETURN_LABEL = "return"  # a keyword: no C label can take it
_RETURN_VALUE = "return_value__"


def _early_returns(fdef: c_ast.FuncDef, helper: bool) -> None:
    """Every ``return`` but a final one at the top level of ``fdef``'s body becomes a forward jump to the
    end of the body (``{ return_value__ = e; goto return__; }``, ``return__: return return_value__;``), so
    that a search loop's ``if (a[i] == x) return i;`` or a guard's ``if (n <= 0) return;`` is a ``goto``
    the structurer turns into flags and ifs.  The function's result is unchanged: C runs nothing after
    a ``return``, and nothing after a taken jump runs either.  A function returning a pointer or a struct
    is left alone (the lowering refuses it).  A helper returns from anywhere outside a loop, so there
    the rewrite happens only when some ``return`` is in a loop."""
    items = _items(fdef.body)
    real = [it for it in items if not isinstance(it, c_ast.Pragma)]
    final = real[-1] if real and isinstance(real[-1], c_ast.Return) else None
    if helper:
        if not any(_all(loop, c_ast.Return) for loop in _all(fdef.body, c_ast.For)):
            return
    elif not any(r is not final for r in _all(fdef.body, c_ast.Return)):
        return
    rtype = fdef.decl.type.type
    if not isinstance(rtype, c_ast.TypeDecl):
        return
    void = isinstance(rtype.type, c_ast.IdentifierType) and rtype.type.names == ["void"]

    # (a 'return;' in a function with a value stays: the lowering's error)
    body = [returns_to(it, _RETURN_LABEL, None if void else _RETURN_VALUE, keep_bare=not void) for it in items]
    end = fdef.body.block_items[-1].coord if fdef.body.block_items else fdef.body.coord
    if void:
        body.append(c_ast.Label(_RETURN_LABEL, c_ast.EmptyStatement(coord=end), coord=end))
    else:
        ty = copy.deepcopy(rtype)
        ty.declname, ty.quals = _RETURN_VALUE, []
        decl = c_ast.Decl(_RETURN_VALUE, [], [], [], [], ty, c_ast.Constant("int", "0", coord=end), None,
                          coord=end)
        result = c_ast.Return(c_ast.ID(_RETURN_VALUE, coord=end), coord=end)
        body = [decl, *body, c_ast.Label(_RETURN_LABEL, result, coord=end)]
    fdef.body.block_items = body


def returns_to(node: c_ast.Node, label: str, result: str | None, *, keep_bare: bool = False) -> c_ast.Node:
    """``node`` with each ``return e;`` as ``{ result = e; goto label; }`` (``goto label;`` without a
    ``result``); a ``return;`` becomes ``goto label;`` too, or stays where ``keep_bare``."""
    if isinstance(node, c_ast.Return):
        goto = c_ast.Goto(label, coord=node.coord)
        if node.expr is None:
            return node if keep_bare else goto
        if result is None:
            return goto
        value = c_ast.Assignment("=", c_ast.ID(result, coord=node.coord), node.expr, coord=node.coord)
        return c_ast.Compound([value, goto], coord=node.coord)
    new = copy.copy(node)
    for name, child in node.children():
        set_child(new, name, returns_to(child, label, result, keep_bare=keep_bare))
    return new


def _all(node: c_ast.Node, kind: type) -> list[c_ast.Node]:
    found = [node] if isinstance(node, kind) else []
    for _, c in node.children():
        found.extend(_all(c, kind))
    return found


def _any(node: c_ast.Node, kinds: tuple[type, ...]) -> bool:
    if isinstance(node, kinds):
        return True
    return any(_any(c, kinds) for _, c in node.children())


def _items(node: c_ast.Node | None) -> list[c_ast.Node]:
    if node is None:
        return []
    if isinstance(node, c_ast.Compound):
        return list(node.block_items or [])
    return [node]


def _not(e: c_ast.Node) -> c_ast.Node:
    return c_ast.UnaryOp("!", e, coord=e.coord)


def _flag(label: str) -> str:
    return f"goto_{label}__"


class _Structurer:
    def __init__(self, loc: Callable[[c_ast.Node], Loc]) -> None:
        self.loc = loc
        self.fresh = itertools.count()

    def err(self, node: c_ast.Node, msg: str) -> TranspileError:
        return TranspileError(self.loc(node), msg)

    def run(self, body: c_ast.Compound) -> None:
        items = self.desugar(_items(body))
        out, escaping = self.seq(items)
        if escaping:
            label = sorted(escaping)[0]
            raise self.err(self.gotos[label], f"'goto {label}' jumps backward or into a block, which is not "
                                              "supported: only forward jumps to a label in the same or an "
                                              "enclosing block are structured")
        body.block_items = out

    # -- step 1: break, continue and switch become forward gotos -----------------------------------------

    def desugar(self, items: list[c_ast.Node]) -> list[c_ast.Node]:
        """``items`` with every loop's ``continue``/``break`` and every ``switch`` made of gotos and labels;
        also collects every ``goto`` (by label) and every label."""
        self.gotos: dict[str, c_ast.Node] = {}
        out = self._desugar_list(items)
        self.labels: set[str] = set()
        self._collect(c_ast.Compound(out))
        return out

    def _collect(self, node: c_ast.Node) -> None:
        if isinstance(node, c_ast.Goto):
            self.gotos.setdefault(node.name, node)
        if isinstance(node, c_ast.Label):
            if node.name in self.labels:
                raise self.err(node, f"label '{node.name}' is defined twice")
            self.labels.add(node.name)
        for _, c in node.children():
            self._collect(c)

    def _desugar_list(self, items: list[c_ast.Node]) -> list[c_ast.Node]:
        out: list[c_ast.Node] = []
        for it in items:
            out.extend(self._desugar(it))
        return out

    def _block(self, node: c_ast.Node | None) -> c_ast.Node | None:
        if node is None:
            return None
        got = self._desugar(node)
        return got[0] if len(got) == 1 else c_ast.Compound(got, coord=node.coord)

    def _desugar(self, node: c_ast.Node) -> list[c_ast.Node]:
        if isinstance(node, c_ast.Compound):
            return [c_ast.Compound(self._desugar_list(_items(node)), coord=node.coord)]
        if isinstance(node, c_ast.If):
            return [c_ast.If(node.cond, self._block(node.iftrue), self._block(node.iffalse), coord=node.coord)]
        if isinstance(node, c_ast.Label):
            return [c_ast.Label(node.name, self._block(node.stmt) or c_ast.EmptyStatement(), coord=node.coord)]
        if isinstance(node, c_ast.For):
            n = next(self.fresh)
            brk, cont = f"break{n}", f"continue{n}"
            body, broke, continued = self._retarget(self._block(node.stmt), brk, cont)
            body_items = _items(body)
            if continued:
                body_items.append(c_ast.Label(cont, c_ast.EmptyStatement(coord=node.coord), coord=node.coord))
            loop = c_ast.For(node.init, node.cond, node.next, c_ast.Compound(body_items, coord=node.coord),
                             coord=node.coord)
            if not broke:
                return [loop]
            return [loop, c_ast.Label(brk, c_ast.EmptyStatement(coord=node.coord), coord=node.coord)]
        if isinstance(node, (c_ast.While, c_ast.DoWhile)):
            return [node]  # refused by the lowering, with its own message
        if isinstance(node, c_ast.Switch):
            return self._switch(node)
        if isinstance(node, (c_ast.Case, c_ast.Default)):
            raise self.err(node, f"'{'case' if isinstance(node, c_ast.Case) else 'default'}' label outside a "
                                 "switch")
        return [node]

    def _retarget(self, node: c_ast.Node | None, brk: str | None, cont: str | None
                  ) -> tuple[c_ast.Node | None, bool, bool]:
        """``node`` with its own ``break`` as ``goto brk`` and ``continue`` as ``goto cont`` (not those
        of nested loops; a nested switch takes the breaks but not the continues)."""
        used = {"break": False, "continue": False}

        def walk(n: c_ast.Node) -> c_ast.Node:
            if isinstance(n, c_ast.Break) and brk is not None:
                used["break"] = True
                return c_ast.Goto(brk, coord=n.coord)
            if isinstance(n, c_ast.Continue) and cont is not None:
                used["continue"] = True
                return c_ast.Goto(cont, coord=n.coord)
            if isinstance(n, _LOOPS):
                return n
            if isinstance(n, c_ast.Switch):
                inner = copy.copy(n)
                inner.stmt = _retarget_only(n.stmt, cont, used)
                return inner
            new = copy.copy(n)
            for name, child in n.children():
                set_child(new, name, walk(child))
            return new

        if node is None:
            return None, False, False
        got = walk(node)
        return got, used["break"], used["continue"]

    def _switch(self, node: c_ast.Switch) -> list[c_ast.Node]:
        n = next(self.fresh)
        end = f"switch{n}"
        cases = _items(node.stmt)
        if any(_any(s, (c_ast.Case, c_ast.Default)) for c in cases for s in getattr(c, "stmts", None) or []):
            raise self.err(node, "a 'case' label nested inside a statement of its switch (Duff's device) is not "
                                 "supported: put every case label directly in the switch's body")
        if not all(isinstance(c, (c_ast.Case, c_ast.Default)) for c in cases):
            bad = next(c for c in cases if not isinstance(c, (c_ast.Case, c_ast.Default)))
            raise self.err(bad, "statement before the first 'case' of a switch is not supported")
        sel = f"switch{n}__"
        decl = c_ast.Decl(sel, [], [], [], [], c_ast.TypeDecl(sel, [], None, c_ast.IdentifierType(["long", "long"])),
                          node.cond, None, coord=node.coord)
        var = c_ast.ID(sel, coord=node.coord)
        chain = self._switch_chain(cases, var)
        if chain is not None:
            return [c_ast.Compound([decl, *self._desugar(chain)], coord=node.coord)]
        # the general form: jumps to the case labels, the cases spliced in order
        body: list[c_ast.Node] = [decl]
        labels: list[str] = []
        default: str | None = None
        for k, c in enumerate(cases):
            label = f"case{n}_{k}"
            labels.append(label)
            if isinstance(c, c_ast.Default):
                default = label
            else:
                test = c_ast.BinaryOp("==", var, c.expr, coord=c.coord)
                body.append(c_ast.If(test, c_ast.Goto(label, coord=c.coord), None, coord=c.coord))
        body.append(c_ast.Goto(default or end, coord=node.coord))
        for label, c in zip(labels, cases):
            stmts = []
            for s in c.stmts or []:
                got, _, _ = self._retarget(s, end, None)
                stmts.append(got)
            body.append(c_ast.Label(label, c_ast.EmptyStatement(coord=c.coord), coord=c.coord))
            body.extend(stmts)
        body.append(c_ast.Label(end, c_ast.EmptyStatement(coord=node.coord), coord=node.coord))
        return [c_ast.Compound(self._desugar_list(body), coord=node.coord)]

    def _switch_chain(self, cases: list[c_ast.Node], var: c_ast.Node) -> c_ast.Node | None:
        """The switch as ``if``/``else if`` when each group of cases ends in a ``break`` that is its only
        one (or the last group has none), and ``default`` is last or alone; else None."""
        groups: list[tuple[list[c_ast.Node], list[c_ast.Node], bool]] = []  # (values, body, default)
        values: list[c_ast.Node] = []
        is_default = False
        for k, c in enumerate(cases):
            if isinstance(c, c_ast.Default):
                is_default = True
            else:
                values.append(c.expr)
            stmts = list(c.stmts or [])
            if not stmts and k + 1 < len(cases):
                continue  # 'case 0: case 2:' shares the next body
            last = k + 1 == len(cases)
            if stmts and isinstance(stmts[-1], c_ast.Break):
                stmts = stmts[:-1]
            elif not last:
                return None  # falls through into the next case
            if any(_breaks(s) for s in stmts):
                return None
            groups.append((values, stmts, is_default))
            values, is_default = [], False
        if any(d for _, _, d in groups[:-1]):
            return None
        chain: c_ast.Node | None = None
        for vals, stmts, dflt in reversed(groups):
            block = c_ast.Compound(stmts)
            if dflt:
                chain = block
                continue
            test: c_ast.Node | None = None
            for v in vals:
                eq = c_ast.BinaryOp("==", var, v, coord=v.coord)
                test = eq if test is None else c_ast.BinaryOp("||", test, eq, coord=v.coord)
            assert test is not None
            chain = c_ast.If(test, block, chain, coord=test.coord)
        return chain if chain is not None else c_ast.EmptyStatement()

    # -- step 2: forward gotos become ifs and flags ------------------------------------------------------

    def seq(self, items: list[c_ast.Node]) -> tuple[list[c_ast.Node], set[str]]:
        """Structured ``items``, and the labels outside them that a jump in them may still be headed for
        (a flag of each is set when it is)."""
        here = {it.name for it in items if isinstance(it, c_ast.Label)}
        out: list[c_ast.Node] = []
        pending: list[c_ast.Node] = []
        active: set[str] = set()  # jumps possibly taken, to labels after this point
        flags: set[str] = set()

        def flush() -> None:
            if not pending:
                return
            if not active:
                out.extend(pending)
            else:
                test = None
                for label in sorted(active):
                    t = _not(c_ast.ID(_flag(label)))
                    test = t if test is None else c_ast.BinaryOp("&&", test, t)
                out.append(c_ast.If(test, c_ast.Compound(list(pending)), None, coord=pending[0].coord))
            pending.clear()

        k = 0
        while k < len(items):
            it = items[k]
            while isinstance(it, c_ast.Label):
                flush()
                active.discard(it.name)
                it = it.stmt
            target = _cond_goto(it)
            if target is not None and target in here and _index_of(items, target) > k:
                stop = _index_of(items, target)
                inner, escaping = self.seq(items[k + 1:stop])
                pending.append(c_ast.If(_not(it.cond), c_ast.Compound(inner), None, coord=it.coord))
                if escaping:
                    flush()
                    active |= escaping
                    flags |= escaping & here
                k = stop
                continue
            got, escaping = self.stmt(it)
            pending.extend(got)
            if escaping:
                flush()
                active |= escaping
                flags |= escaping & here
            k += 1
        flush()
        backward = active & here
        if backward:
            label = sorted(backward)[0]
            raise self.err(self.gotos[label], f"'goto {label}' jumps backward, which is not supported: only "
                                              "forward jumps are structured (write the loop as a for loop)")
        decls = [_int_decl(_flag(label)) for label in sorted(flags)]
        return decls + out, active - here

    def stmt(self, node: c_ast.Node) -> tuple[list[c_ast.Node], set[str]]:
        """One structured statement, and the labels outside it that it may jump to."""
        if isinstance(node, c_ast.Goto):
            return [_set_flag(node.name, node)], {node.name}
        if isinstance(node, c_ast.Compound):
            got, esc = self.seq(_items(node))
            return [c_ast.Compound(got, coord=node.coord)], esc
        if isinstance(node, c_ast.If):
            then, e1 = self.seq(_items(node.iftrue))
            orelse, e2 = self.seq(_items(node.iffalse)) if node.iffalse is not None else ([], set())
            return [c_ast.If(node.cond, c_ast.Compound(then), c_ast.Compound(orelse) if orelse else None,
                             coord=node.coord)], e1 | e2
        if isinstance(node, c_ast.For):
            body, esc = self.seq(_items(node.stmt))
            if esc:  # a jump out of the loop: the iterations after it do nothing
                test = None
                for label in sorted(esc):
                    t = _not(c_ast.ID(_flag(label)))
                    test = t if test is None else c_ast.BinaryOp("&&", test, t)
                body = [c_ast.If(test, c_ast.Compound(body), None, coord=node.coord)]
            return [c_ast.For(node.init, node.cond, node.next, c_ast.Compound(body), coord=node.coord)], esc
        if isinstance(node, _LOOPS) and _any(node, (c_ast.Goto, c_ast.Label)):
            raise self.err(node, "'goto' inside a while or do-while loop is not supported")
        if isinstance(node, c_ast.Label):  # inside a statement other than a block: a jump into it
            raise self.err(node, f"label '{node.name}' inside a nested statement is not supported: only "
                                 "forward jumps to a label in the same or an enclosing block are structured")
        return [node], set()


def _retarget_only(node: c_ast.Node | None, cont: str | None, used: dict[str, bool]) -> c_ast.Node | None:
    """``continue`` (not in nested loops) as ``goto cont`` in a switch's body; its breaks stay its own."""
    if node is None or cont is None:
        return node
    if isinstance(node, c_ast.Continue):
        used["continue"] = True
        return c_ast.Goto(cont, coord=node.coord)
    if isinstance(node, _LOOPS):
        return node
    new = copy.copy(node)
    for name, child in node.children():
        set_child(new, name, _retarget_only(child, cont, used))
    return new


def set_child(node: c_ast.Node, name: str, child: c_ast.Node | None) -> None:
    """Set the child called ``name`` by ``children()`` (``block_items[2]``, ``iftrue``) on ``node``."""
    if "[" in name:
        field, index = name[:-1].split("[")
        seq = list(getattr(node, field))
        seq[int(index)] = child
        setattr(node, field, seq)
    else:
        setattr(node, name, child)


def _breaks(node: c_ast.Node) -> bool:
    """Does ``node`` hold a ``break`` of the enclosing construct (not one of a nested loop or switch)?"""
    if isinstance(node, c_ast.Break):
        return True
    if isinstance(node, _BREAKABLE):
        return False
    return any(_breaks(c) for _, c in node.children())


def _cond_goto(node: c_ast.Node) -> str | None:
    """``L`` for ``if (c) goto L;`` (no else), else None."""
    if not isinstance(node, c_ast.If) or node.iffalse is not None:
        return None
    then = _items(node.iftrue)
    if len(then) == 1 and isinstance(then[0], c_ast.Goto):
        return str(then[0].name)
    return None


def _index_of(items: list[c_ast.Node], label: str) -> int:
    return next(k for k, it in enumerate(items) if isinstance(it, c_ast.Label) and it.name == label)


def _int_decl(name: str) -> c_ast.Decl:
    return c_ast.Decl(name, [], [], [], [], c_ast.TypeDecl(name, [], None, c_ast.IdentifierType(["int"])),
                      c_ast.Constant("int", "0"), None)


def _set_flag(label: str, at: c_ast.Node) -> c_ast.Node:
    return c_ast.Assignment("=", c_ast.ID(_flag(label), coord=at.coord), c_ast.Constant("int", "1", coord=at.coord),
                            coord=at.coord)
