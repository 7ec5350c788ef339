"""Scalar forwarding into its home cell: an accumulator loaded from an array element and stored back accumulates in the element.

PolyBench's ludcmp is lu with a scalar ``w`` carrying each element through its
update.  The scalar is state that :mod:`passes.reschedule` does not model, so
the nest kept its left-looking order (one thread per row).  Accumulating in
the element itself is the same sequence of operations on the same values,
and gives lu's nest, which reschedule turns right-looking.

**Precondition**: valid IR without ``Launch`` or ``Return`` (runs before
distribution; anything else is returned unchanged).

**Rule.**  In a block, ``s = X[e]`` (or ``T s = X[e]``) at position ``a`` and
``X[e] = g(s)`` at the first later position ``b`` that is not part of the
region between them, when:

* every statement strictly between them mentions ``s`` only in updates
  ``s = s op v`` (``v`` not mentioning ``s``, of ``s``'s type), at any depth
  of loops and ifs; no loop or declaration there is named ``s`` or a name
  ``e`` uses, and no enclosing loop bound or if condition mentions ``s``;
* ``s``, ``X[e]``, the update values and the store target have one type, and
  the subscripts ``e`` (textually the same at both ends) are affine in the
  enclosing loops' variables and :func:`passes.accesses.parameters` (so
  nothing in the region changes them);
* no access to ``X`` in the region (loop bounds and conditions included) or in
  ``g`` can touch the element ``X[e]``: for each, the set of enclosing-loop
  instances at which its subscripts equal ``e`` is empty (isl, over the loop
  domains; a non-affine subscript or bound only drops its constraint, which
  can only make the set larger);
* ``s`` is a local (a ``Decl`` in an enclosing block, never a parameter) and
  dead after ``b``: on every path from there (the rest of each enclosing
  block, and for a loop body its next iteration up to the point it
  re-enters) ``s`` is written before it is read, or goes out of scope.

Then ``s`` becomes ``X[e]`` throughout the region, the load is dropped (a
declaration keeps its name without the initialiser), and the store becomes
``X[e] = g(X[e])``, dropped when ``g(s)`` is ``s``.  During the region the
element holds exactly what ``s`` held and nothing else looks at it, so every
operation sees the same operands in the same order: results are bit-identical.
A declaration of a forwarded scalar that is no longer mentioned is removed.

**Postcondition**: valid IR; the kernel is the same object when nothing applies.

Before::

    for j in 0..i {
      w = A[i][j];
      for k in 0..j { w -= A[i][k] * A[k][j]; }
      A[i][j] = w / A[j][j];
    }

After::

    for j in 0..i {
      for k in 0..j { A[i][j] -= A[i][k] * A[k][j]; }
      A[i][j] /= A[j][j];
    }
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import islpy as isl

from passes import accesses as acc_mod
from passes import deps
from transpile import ir

MAX_REWRITES = 64  # each rewrite removes a statement; this only bounds the isl work

_READ, _KILL, _CLEAN = "read", "kill", "clean"


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with its forwardable scalars forwarded into their home cells (see the module docstring)."""
    if any(isinstance(n, (ir.Launch, ir.Return)) for n in ir.walk(kernel)):
        return kernel
    forwarded: set[str] = set()
    for _ in range(MAX_REWRITES):
        found = _first(kernel, kernel.body, None, ())
        if found is None:
            break
        body, name = found
        kernel = dataclasses.replace(kernel, body=body)
        forwarded.add(name)
    for name in sorted(forwarded):
        if not any(isinstance(n, ir.Var) and n.name == name for n in ir.walk(kernel)):
            kernel = dataclasses.replace(kernel, body=_drop_decls(kernel.body, name))
    return kernel


# _Frame: a block on the way down to a candidate, ``body[pos]`` the statement holding it; ``loop``
# the loop whose body the block is (None: the kernel body or a branch of an if).
@dataclass(frozen=True)
class _Frame:
    body: tuple[ir.Stmt, ...]
    pos: int
    loop: ir.For | None


def _first(kernel: ir.Kernel, body: tuple[ir.Stmt, ...], loop: ir.For | None,
           frames: tuple[_Frame, ...]) -> tuple[tuple[ir.Stmt, ...], str] | None:
    """``body`` with its first forwardable pattern (here, else in a nested block) rewritten, and the
    scalar's name; None if there is none."""
    for a in range(len(body)):
        new = _try(kernel, body, a, loop, frames)
        if new is not None:
            return new
    for k, s in enumerate(body):
        here = (*frames, _Frame(body, k, loop))
        if isinstance(s, ir.For):
            found = _first(kernel, s.body, s, here)
            if found is not None:
                return body[:k] + (dataclasses.replace(s, body=found[0]),) + body[k + 1:], found[1]
        elif isinstance(s, ir.If):
            for branch in ("then", "orelse"):
                found = _first(kernel, getattr(s, branch), None, here)
                if found is not None:
                    return body[:k] + (dataclasses.replace(s, **{branch: found[0]}),) + body[k + 1:], found[1]
    return None


def _try(kernel: ir.Kernel, body: tuple[ir.Stmt, ...], a: int, loop: ir.For | None,
         frames: tuple[_Frame, ...]) -> tuple[tuple[ir.Stmt, ...], str] | None:
    load = body[a]
    if isinstance(load, ir.Assign) and isinstance(load.target, ir.Var):
        name, ty, home = load.target.name, load.target.ty, load.value
    elif isinstance(load, ir.Decl) and load.init is not None:
        name, ty, home = load.name, load.ty, load.init
    else:
        return None
    if not isinstance(home, ir.Index) or home.ty != ty:
        return None
    guarded = {name} | {n.name for x in home.indices for n in ir.walk(x) if isinstance(n, ir.Var)}
    b = a + 1
    while b < len(body) and not _is_store(body[b], home, name):
        if not _region_ok(body[b], name, ty, guarded):
            return None
        b += 1
    if b == len(body):
        return None
    store = body[b]
    assert isinstance(store, ir.Assign)
    if any(_header_mentions(f.body[f.pos], name) for f in frames):
        return None
    chain = (_Frame(body, a, loop), *reversed(frames))
    if not _dead_after(name, chain, b) or not _disjoint(kernel, load, store, home):
        return None
    cell = home
    region = tuple(ir.substitute(s, {name: cell}) for s in body[a + 1:b])
    head: tuple[ir.Stmt, ...] = (ir.Decl(name, ty, None, loc=load.loc),) if isinstance(load, ir.Decl) else ()
    tail: tuple[ir.Stmt, ...] = ()
    if store.value != ir.Var(name, ty):
        tail = (dataclasses.replace(store, value=ir.substitute(store.value, {name: cell})),)
    return body[:a] + head + region + tail + body[b + 1:], name


def _is_store(s: ir.Stmt, home: ir.Index, name: str) -> bool:
    """``X[e] = g(s)``: the home element, written from a value that reads ``s``."""
    return (isinstance(s, ir.Assign) and isinstance(s.target, ir.Index) and s.target == home
            and _mentions(s.value, name))


def _region_ok(s: ir.Stmt, name: str, ty: ir.Scalar, guarded: set[str]) -> bool:
    """Whether ``s`` mentions ``name`` only in updates ``name = name op v`` and binds no guarded name."""
    if isinstance(s, ir.Assign):
        if isinstance(s.target, ir.Var) and s.target.name == name:
            v = s.value
            return (isinstance(v, ir.Binary) and v.ty == ty and v.lhs == ir.Var(name, ty)
                    and not _mentions(v.rhs, name) and v.rhs.ty == ty)
        return not _mentions(s, name)
    if isinstance(s, ir.Decl):
        return s.name not in guarded and (s.init is None or not _mentions(s.init, name))
    if isinstance(s, ir.For):
        return (s.var not in guarded and not _header_mentions(s, name)
                and all(_region_ok(x, name, ty, guarded) for x in s.body))
    if isinstance(s, ir.If):
        return not _header_mentions(s, name) and all(_region_ok(x, name, ty, guarded) for x in s.then + s.orelse)
    return False  # Alloc, Return, Launch


def _disjoint(kernel: ir.Kernel, load: ir.Stmt, store: ir.Assign, home: ir.Index) -> bool:
    """Whether no access to ``home``'s array between ``load`` and ``store`` (the store's value included)
    can touch ``home``'s element (exact for affine subscripts and bounds)."""
    infos = acc_mod.analyze(kernel)
    first = next(k for k, s in enumerate(infos) if s.node is load)
    last = next(k for k, s in enumerate(infos) if s.node is store)
    end = infos[last]
    target = next(x for x in end.accesses if x.write)
    if any(x is None for x in target.subscripts):
        return False  # (4): the home subscripts must be affine
    depth = end.depth
    params = acc_mod.parameters(kernel)
    head = f"[{', '.join(deps.param_name(p) for p in sorted(params))}] -> "
    for s in infos[first + 1:last + 1]:
        names = {lp.var: (f"o{k}" if k < depth else f"t{k}") for k, lp in enumerate(s.loops)}
        if len(names) != s.depth:
            return False  # a loop variable reused under another: leave it
        cons = deps.domain_constraints(s.loops, names, params)
        for x in s.accesses:
            # the store's own write is the one access allowed; a compound store (``X[e] *= g``)
            # reads the element through the same node, and that read is not allowed
            if x.name != home.array or (x.write and x.node is store.target):
                continue
            eqs = [f"{deps.render_affine(f, names)} = {deps.render_affine(e, names)}"
                   for f, e in zip(x.subscripts, target.subscripts) if f is not None and e is not None]
            text = f"{head}{{ [{', '.join(names.values())}] : {' and '.join(cons + eqs) or 'true'} }}"
            try:
                if not isl.Set(text).is_empty():
                    return False
            except isl.Error:
                return False
    return True


def _dead_after(name: str, chain: tuple[_Frame, ...], b: int) -> bool:
    """Whether ``name`` is dead after the store at ``chain[0].body[b]`` (the load at ``chain[0].pos``).

    ``chain`` goes outward from the block of the pattern to the kernel body.
    """
    for level, f in enumerate(chain):
        after = b + 1 if level == 0 else f.pos + 1
        declared = any(isinstance(s, ir.Decl) and s.name == name for s in f.body[:f.pos + 1])
        rest = _seq(f.body[after:], name, nested=False)
        if rest != _CLEAN:
            return rest == _KILL
        if declared:
            return True  # its scope ends with this block
        # Next iteration: up to and including the statement holding the pattern (which, from its
        # start, reaches the load's write unless a branch or a zero-trip loop skips it).
        if f.loop is not None and _seq(f.body[:f.pos + 1], name, nested=False) == _READ:
            return False
    return False  # not a local of the kernel: a parameter


def _seq(body: tuple[ir.Stmt, ...], name: str, *, nested: bool) -> str:
    """What a run of ``body`` does first to ``name``: read it, overwrite it, or neither on any path.

    In a ``nested`` block a declaration of ``name`` starts another variable, which the caller's
    never sees.
    """
    for s in body:
        if isinstance(s, ir.Decl) and s.name == name:
            if s.init is not None and _mentions(s.init, name):
                return _READ
            return _CLEAN if nested else _KILL
        c = _stmt(s, name)
        if c != _CLEAN:
            return c
    return _CLEAN


def _stmt(s: ir.Stmt, name: str) -> str:
    if isinstance(s, ir.Assign):
        if _mentions(s.value, name) or (isinstance(s.target, ir.Index) and _mentions(s.target, name)):
            return _READ
        return _KILL if isinstance(s.target, ir.Var) and s.target.name == name else _CLEAN
    if isinstance(s, ir.Decl):
        return _READ if s.init is not None and _mentions(s.init, name) else _CLEAN
    if isinstance(s, ir.Alloc):
        return _CLEAN
    if isinstance(s, ir.If):
        if _mentions(s.cond, name):
            return _READ
        t, e = _seq(s.then, name, nested=True), _seq(s.orelse, name, nested=True)
        if _READ in (t, e):
            return _READ
        return _KILL if t == e == _KILL else _CLEAN
    if isinstance(s, ir.For):
        if s.var == name or _header_mentions(s, name) or _seq(s.body, name, nested=True) == _READ:
            return _READ
        return _CLEAN  # it may run no iteration
    return _READ  # Return, Launch: not followed


def _header_mentions(s: ir.Stmt, name: str) -> bool:
    if isinstance(s, ir.For):
        return _mentions(s.lo, name) or _mentions(s.hi, name)
    if isinstance(s, ir.If):
        return _mentions(s.cond, name)
    return False


def _mentions(node: ir.Node, name: str) -> bool:
    return any(isinstance(n, ir.Var) and n.name == name for n in ir.walk(node))


def _drop_decls(body: tuple[ir.Stmt, ...], name: str) -> tuple[ir.Stmt, ...]:
    """``body`` without declarations of ``name`` that have no initialiser (nothing mentions it any more)."""
    out: list[ir.Stmt] = []
    for s in body:
        if isinstance(s, ir.Decl) and s.name == name and s.init is None:
            continue
        if isinstance(s, ir.For):
            s = dataclasses.replace(s, body=_drop_decls(s.body, name))
        elif isinstance(s, ir.If):
            s = dataclasses.replace(s, then=_drop_decls(s.then, name), orelse=_drop_decls(s.orelse, name))
        out.append(s)
    return tuple(out)
