"""Register promotion: array elements a sequential device loop keeps re-reading, held in registers.

**Precondition**: the body of one ``Launch`` of a mapped kernel (``map-gpu``'s
output), taken by the CUDA emitter for the *plain* launches only (one thread
per iteration of the par loops, or a single thread); the specialised shapes
(tiled, tensor-core, reductions, sweeps, chains) pattern-match their bodies
and are left alone.

**Postcondition**: the same computation, in which some sequential loops (not
``par``, not ``reduce``) keep one array element in a local scalar instead of
memory.  nvcc cannot do this itself where a store to the array sits between
the loads: the store may alias them as far as it can tell, and a load after a
store to the same address waits for the store to reach the cache (adi's
sweeps reloaded ``p[i][j - 1]`` right after storing it; nussinov stored
``table[i][w + i]`` on every step of its ``k`` loop).  Two forms:

* **Invariant element** (an accumulator): every write of ``X`` in the loop is
  to one element ``X[W]`` whose subscripts do not change in the loop; the
  element's reads and writes use a scalar ``r`` loaded before the loop and
  stored back after it; every other access of ``X`` in the loop is proven
  (isl, affine subscripts and bounds) never to touch ``X[W]``::

      for k in i + 1..w + i { T[i][w+i] = max(T[i][w+i], T[i][k] + T[k+1][w+i]) }
      =>  if (i + 1 < w + i) { r = T[i][w+i]; for k { r = max(r, T[i][k] + T[k+1][w+i]) } T[i][w+i] = r }

* **Carried element** (a recurrence of distance one): the loop's only write of
  ``X`` is one unconditional top-level statement ``X[W(j)] = e``, ``W`` affine
  in the loop variable ``j`` (and invariant names), and every other read of
  ``X`` is ``X[W(j - s)]`` (``s`` the step: what the previous iteration wrote)
  or ``X[W(j)]`` inside ``e`` (the element's old value, left a load): the
  previous iteration's value is carried in ``r``, loaded before the loop from
  ``X[W(first - s)]``::

      for j in 1..n - 1 { p[i][j] = -c / (a * p[i][j-1] + b) }
      =>  if (1 < n - 1) { r = p[i][0]; for j { t = -c / (a * r + b); p[i][j] = t; r = t } }

Why it is exact: inside a launch the par loops carry no dependence, so no other
thread reads or writes the elements this thread's sequential loop writes (such
an access would be a dependence carried by a par loop); within the thread the
scalar holds exactly what memory would hold at each read.  The loads before the
loop read an element the loop's first iteration reads or writes anyway (at
least one such access is evaluated unconditionally at the loop's top level, so
no new out-of-bounds access appears), and the whole rewrite sits under
``lo < hi``, so an empty loop touches nothing.  A loop containing a ``Return``
is left alone (the store after the loop would be skipped).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Iterator

import islpy as isl

from passes import accesses as acc_mod
from passes.accesses import Affine
from transpile import ir


def run_launch(launch: ir.Launch, fresh: Callable[[str], str]) -> ir.Launch:
    """``launch`` with its promotable sequential loops rewritten; ``fresh(base)`` names the new
    scalars (a name no other variable of the kernel has)."""
    body = _Rewriter(fresh).block(launch.body)
    return launch if body is launch.body else dataclasses.replace(launch, body=body)


class _Rewriter:
    def __init__(self, fresh: Callable[[str], str]) -> None:
        self.fresh = fresh

    def block(self, body: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        changed = False
        for s in body:
            new: list[ir.Stmt] = [s]
            if isinstance(s, ir.For):
                inner = self.block(s.body)
                t = s if inner is s.body else dataclasses.replace(s, body=inner)
                new = self.loop(t) if t.par is None and not t.reduce else [t]
            elif isinstance(s, ir.If):
                then, orelse = self.block(s.then), self.block(s.orelse)
                if then is not s.then or orelse is not s.orelse:
                    new = [dataclasses.replace(s, then=then, orelse=orelse)]
            changed |= len(new) != 1 or new[0] is not s
            out.extend(new)
        return tuple(out) if changed else body

    def loop(self, loop: ir.For) -> list[ir.Stmt]:
        if any(isinstance(n, ir.Return) for n in ir.walk(loop)):
            return [loop]
        pre: list[ir.Stmt] = []
        post: list[ir.Stmt] = []
        for name in sorted({n.target.array for n in ir.walk(loop)
                            if isinstance(n, ir.Assign) and isinstance(n.target, ir.Index)}):
            done = _invariant(loop, name, self) or _carried(loop, name, self)
            if done is not None:
                loop, p, q = done
                pre += p
                post = q + post
        if not pre:
            return [loop]
        guard = ir.binary("<", loop.lo, loop.hi)
        return [ir.If(guard, (*pre, loop, *post), loc=loop.loc)]


# ---------------------------------------------------------------------------
# The two forms


def _invariant(loop: ir.For, name: str, rw: _Rewriter) -> tuple[ir.For, list[ir.Stmt], list[ir.Stmt]] | None:
    variant = _variant(loop)
    sites = list(_sites(loop, name))
    writes = [s for s in sites if s.write]
    forms = writes[0].forms if writes else None
    if forms is None or any(f.names & variant for f in forms):
        return None
    if any(s.forms != forms for s in writes):
        return None
    others = [s for s in sites if s.forms != forms]
    if any(s.write for s in others) or not any(s.top for s in sites if s not in others):
        return None  # another element written, or no unconditional access of X[W] in the first iteration
    if any(not _disjoint(loop, s, forms) for s in others):
        return None
    w = _pinned(writes[0].node, variant)
    r = rw.fresh(f"{name}_acc")
    var = ir.Var(r, w.ty)
    body = _Replace(lambda x: _forms(x) == forms if x.array == name else False, var).stmts(loop.body)
    return (dataclasses.replace(loop, body=body), [ir.Decl(r, w.ty, w, loc=loop.loc)],
            [ir.Assign(w, var, loc=loop.loc)])


def _pinned(x: ir.Index, names: set[str]) -> ir.Index:
    """``x`` with every variable of ``names`` in its subscripts replaced by 0: the same element where
    its affine forms do not depend on them (``A[w1 - 2*i + 2*(i - w)]`` names ``i`` with coefficient
    0), and an expression that can stand outside the loop that declares them."""
    found = {n.name: n.ty for e in x.indices for n in ir.walk(e) if isinstance(n, ir.Var) and n.name in names}
    if not found:
        return x
    return ir.substitute(x, {v: ir.const(0, ty) for v, ty in found.items()})


def _carried(loop: ir.For, name: str, rw: _Rewriter) -> tuple[ir.For, list[ir.Stmt], list[ir.Stmt]] | None:
    j, step = loop.var, loop.step
    if abs(step) != 1:
        return None
    sites = list(_sites(loop, name))
    writes = [s for s in sites if s.write]
    if len(writes) != 1 or writes[0].stmt is None:
        return None  # one write, a top-level statement of the body
    stmt = writes[0].stmt
    if not isinstance(stmt, ir.Assign):
        return None
    forms = writes[0].forms
    variant = _variant(loop) - {j}
    if forms is None or not any(f.coeff(j) for f in forms) or any(f.names & variant for f in forms):
        return None
    prev = tuple(_shift(f, j, -step) for f in forms)
    prev_sites = [s for s in sites if not s.write and s.forms == prev]
    for s in sites:
        if s.write or s in prev_sites:
            continue
        if not (s.forms == forms and s.stmt is stmt):
            return None  # another element of X, or X[W(j)] outside its own assignment
    if not any(s.top for s in prev_sites):
        return None  # nothing reads the previous value unconditionally: the load before could be new
    w = writes[0].node
    r, t = rw.fresh(f"{name}_prev"), rw.fresh(f"{name}_next")
    var = ir.Var(r, w.ty)
    swap = _Replace(lambda x: x.array == name and _forms(x) == prev, var)
    body: list[ir.Stmt] = []
    for s in loop.body:
        if s is stmt:
            body += [ir.Decl(t, w.ty, swap.expr(stmt.value), loc=stmt.loc),
                     ir.Assign(stmt.target, ir.Var(t, w.ty), loc=stmt.loc)]
        else:
            body.append(swap.stmt(s))
    body.append(ir.Assign(var, ir.Var(t, w.ty), loc=loop.loc))
    # The first iteration's previous element: W at j = first - step.
    first = loop.lo if step > 0 else ir.binary("-", loop.hi, ir.const(1, loop.hi.ty))
    before = ir.binary("-" if step > 0 else "+", first, ir.const(1, first.ty))
    elem = ir.Index(name, tuple(ir.substitute(i, {j: ir.cast(before, loop.ty)}) for i in _pinned(w, variant).indices),
                    w.ty, loc=w.loc)
    return dataclasses.replace(loop, body=tuple(body)), [ir.Decl(r, w.ty, elem, loc=loop.loc)], []


# ---------------------------------------------------------------------------
# Access sites


@dataclasses.dataclass(frozen=True)
class _Site:
    node: ir.Index
    write: bool
    top: bool  # evaluated in every iteration (a top-level statement, not under a branch)
    stmt: ir.Stmt | None  # the top-level statement of the loop body it is in, if any
    inner: tuple[ir.For, ...]  # loops between the promoted loop and the access

    @functools.cached_property
    def forms(self) -> tuple[Affine, ...] | None:
        return _forms(self.node)


def _sites(loop: ir.For, name: str) -> Iterator[_Site]:
    """Every access of array ``name`` in ``loop``'s body."""
    for s in loop.body:
        yield from _stmt_sites(s, name, top=True, stmt=s, inner=())


def _stmt_sites(s: ir.Stmt, name: str, *, top: bool, stmt: ir.Stmt | None,
                inner: tuple[ir.For, ...]) -> Iterator[_Site]:
    if isinstance(s, ir.Assign):
        if isinstance(s.target, ir.Index):
            for e in s.target.indices:
                yield from _expr_sites(e, name, top, stmt, inner)
            if s.target.array == name:
                yield _Site(s.target, True, top, stmt, inner)
        yield from _expr_sites(s.value, name, top, stmt, inner)
    elif isinstance(s, ir.Decl):
        if s.init is not None:
            yield from _expr_sites(s.init, name, top, stmt, inner)
    elif isinstance(s, ir.If):
        yield from _expr_sites(s.cond, name, top, stmt, inner)
        for c in (*s.then, *s.orelse):
            yield from _stmt_sites(c, name, top=False, stmt=None, inner=inner)
    elif isinstance(s, ir.For):
        for e in (s.lo, s.hi):
            yield from _expr_sites(e, name, top, stmt, inner)
        for c in s.body:
            yield from _stmt_sites(c, name, top=False, stmt=None, inner=inner + (s,))
    elif isinstance(s, ir.Return):
        if s.value is not None:
            yield from _expr_sites(s.value, name, False, None, inner)


def _expr_sites(e: ir.Expr, name: str, top: bool, stmt: ir.Stmt | None,
                inner: tuple[ir.For, ...]) -> Iterator[_Site]:
    """Reads of ``name`` in ``e``; those in a branch of ``?:`` or the right of ``&&``/``||`` are
    not evaluated every time."""
    if isinstance(e, ir.Index):
        for i in e.indices:
            yield from _expr_sites(i, name, top, stmt, inner)
        if e.array == name:
            yield _Site(e, False, top, stmt, inner)
    elif isinstance(e, ir.Select):
        yield from _expr_sites(e.cond, name, top, stmt, inner)
        yield from _expr_sites(e.then, name, False, stmt, inner)
        yield from _expr_sites(e.orelse, name, False, stmt, inner)
    elif isinstance(e, ir.Binary) and e.op in ("&&", "||"):
        yield from _expr_sites(e.lhs, name, top, stmt, inner)
        yield from _expr_sites(e.rhs, name, False, stmt, inner)
    else:
        for c in ir.children(e):
            yield from _expr_sites(c, name, top, stmt, inner)  # type: ignore[arg-type]


def _variant(loop: ir.For) -> set[str]:
    """Names that change inside ``loop``: its variable, inner loop variables, scalars it declares or assigns."""
    out = {loop.var}
    for n in ir.walk(loop):
        if isinstance(n, ir.For):
            out.add(n.var)
        elif isinstance(n, ir.Decl):
            out.add(n.name)
        elif isinstance(n, ir.Assign) and isinstance(n.target, ir.Var):
            out.add(n.target.name)
    return out


def _int_names(e: ir.Node) -> set[str]:
    return {n.name for n in ir.walk(e) if isinstance(n, ir.Var) and n.ty.is_int}


def _forms(x: ir.Index) -> tuple[Affine, ...] | None:
    """The affine forms of ``x``'s subscripts (None if one is not affine)."""
    out = []
    for i in x.indices:
        f = acc_mod.affine(i, _int_names(i))
        if f is None:
            return None
        out.append(f)
    return tuple(out)


def _shift(f: Affine, var: str, by: int) -> Affine:
    """``f`` with ``var`` replaced by ``var + by``."""
    return Affine.of(dict(f.coeffs), f.const + f.coeff(var) * by)


def _disjoint(loop: ir.For, site: _Site, forms: tuple[Affine, ...]) -> bool:
    """Whether ``site`` never touches the element ``forms`` (invariant in ``loop``) in any iteration
    (isl; bounds that are not affine are dropped, which only adds points)."""
    other = site.forms
    if other is None or len(other) != len(forms):
        return False
    loops = (loop, *site.inner)
    dims = [lp.var for lp in loops]
    variant = _variant(loop) - set(dims)  # names that change in the loop cannot be parameters
    if any(f.names & variant for f in other):
        return False
    names = set(dims)
    for f in (*other, *forms):
        names |= f.names
    cons = [f"{_render(a)} = {_render(b)}" for a, b in zip(other, forms)]
    for n, lp in enumerate(loops):
        allowed = _int_names(lp.lo) | _int_names(lp.hi)
        for bound, op in ((lp.lo, ">="), (lp.hi, "<")):
            aff = acc_mod.affine(bound, allowed)
            if aff is not None and not (aff.names & (set(dims[n:]) | variant)):
                cons.append(f"v_{lp.var} {op} {_render(aff)}")
                names |= aff.names
    params = sorted(names - set(dims))
    text = (f"[{', '.join('v_' + p for p in params)}] -> {{ [{', '.join('v_' + d for d in dims)}] : "
            f"{' and '.join(cons)} }}")
    try:
        return isl.Set(text).is_empty()
    except isl.Error:
        return False


def _render(f: Affine) -> str:
    return " + ".join([*(f"{c} * v_{v}" for v, c in f.coeffs), str(f.const)])


class _Replace(ir.Transformer):
    """Replaces the ``Index`` nodes ``match`` accepts by ``var`` (reads and assignment targets)."""

    def __init__(self, match: object, var: ir.Var) -> None:
        self.match, self.var = match, var

    def visit_Index(self, x: ir.Index) -> ir.Expr:
        if self.match(x):  # type: ignore[operator]
            return self.var
        return self.generic_visit(x)

    def expr(self, e: ir.Expr) -> ir.Expr:
        return self.transform(e)

    def stmt(self, s: ir.Stmt) -> ir.Stmt:
        return self.transform(s)

    def stmts(self, body: Iterable[ir.Stmt]) -> tuple[ir.Stmt, ...]:
        return tuple(self.transform(s) for s in body)
