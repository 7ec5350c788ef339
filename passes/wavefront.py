"""Wavefront (skewing): run a fully sequential 2-deep nest as sequential wavefronts of parallel iterations.

**Precondition**: valid IR (``ircheck.check``) without ``Launch`` regions (it runs
before ``map-gpu``); a kernel that already contains a ``Launch`` is returned
unchanged.

**Postcondition**: the same program in which some perfectly nested pairs
``for a { for b { S } }`` (reachable from the top level through loop bodies
alone) became::

    for w in wlo..whi {            // sequential: one wavefront per w
      for a in alo..ahi {          // parallel: no dependence at equal w
        if (blo <= B && B < bhi) { S[b := B] }
      }
    }

with ``B = sb * (w - ha * sa * a)`` (``sa``, ``sb`` the loops' steps, ±1), i.e.
the iteration ``(a, b)`` runs at time ``w = ha * (sa * a) + (sb * b)``.  The
guard keeps exactly the original iteration set; ``wlo..whi`` covers every
``w`` the nest reaches (a superset where ``b``'s range is empty for some
``a``).  ``b`` is replaced by an affine expression, so the dependence
analysis stays exact on ``S``.

A pair is rewritten only when (1) *profitable*: ``a``, ``b``, every loop
around them and every loop inside ``S`` carry a dependence (no loop of the
nest could be mapped in parallel today) and neither ``a`` nor ``b`` is marked
``reduce`` (a sweep nest, marked by fuse, is a parallel reduction already);
(2) *shaped*: unit steps (±1), the same signed integer type, ``a``'s bounds affine in parameters and enclosing
loop variables and ``b``'s also in ``a`` (so the new bounds are host
computable for ``map-gpu``); (3) *legal*: for the hyperplane ``h = (ha, 1)``,
``ha`` the smallest in ``0..MAX_HA``, every pair of dependent statement
instances of the nest at equal iterations of the enclosing loops and
different ``(a, b)`` satisfies ``h . (sink - source) >= 1`` in execution
order.  That is proven exactly with isl, per pair of conflicting accesses, by
checking that the set of dependent instance pairs with
``h . (sink - source) <= 0`` is empty (built as :mod:`passes.deps` builds its
sets: non-affine subscripts and bounds, and strides, are dropped, which only
adds pairs, so the test stays sound; summarised direction vectors are not
used).  Dependences carried by the enclosing loops stay satisfied because
those loops stay outside, sequential; instances with the same ``(a, b)`` run
in one thread in the original order; two instances with the same ``w`` and
different ``a`` are independent, since every dependence strictly increases
``w``.  (Fixing ``hb = 1`` loses nothing: ``b`` carries some ``(0, d > 0)``,
so ``hb >= 1``, and if ``(ha, hb)`` is legal then so is
``(ceil(ha / hb), 1)``; it also keeps ``B`` free of division.)  (4) *checked*:
after the rewrite :func:`passes.deps.analyze` must find no dependence carried
by the new ``a`` loop, else the pair is left as it was.  Innermost pairs are
tried first; a rewritten pair's enclosing loops now hold a parallel loop, so
they are not rewritten again.  ``w`` has the loops' type, like their bounds:
``|w| <= (MAX_HA + 1) * max(|a|, |b|)`` must fit in it.

Before::

    for t in 0..tsteps {
      for i in 1..n - 1 {
        for j in 1..n - 1 {
          A[i][j] = (A[i - 1][j + 1] + A[i][j - 1] + A[i + 1][j]) / 3.0;
        }
      }
    }

After (distances (1, -1), (0, 1) and (1, 0) at equal ``t``: ``h = (2, 1)``)::

    for t in 0..tsteps {
      for w in 3..3 * n - 5 {
        for i in 1..n - 1 {
          if (1 <= w - 2 * i && w - 2 * i < n - 1) {
            A[i][w - 2 * i] = (A[i - 1][w - 2 * i + 1] + A[i][w - 2 * i - 1] + A[i + 1][w - 2 * i]) / 3.0;
          }
        }
      }
    }

``map-gpu`` then keeps ``t`` and ``w`` on the host and launches ``i`` in parallel.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator

import islpy as isl
import networkx as nx

from passes import accesses as acc_mod
from passes import deps
from passes.accesses import Affine, StmtInfo
from transpile import ir

#: Hyperplane slopes tried for the outer loop, smallest (fewest wavefronts) first.
MAX_HA = 4


def run(kernel: ir.Kernel, *, max_ha: int = MAX_HA) -> ir.Kernel:
    """``kernel`` with every profitable, provably legal 2-deep nest turned into a wavefront."""
    if any(isinstance(n, ir.Launch) for n in ir.walk(kernel)) or not _has_pair(kernel.body):
        return kernel
    excluded: set[int] = set()  # ids of a loops whose rewrite failed the check (nodes of ``kernel``)
    for _ in range(3):
        graph = deps.analyze_or_none(kernel)
        if graph is None:
            return kernel
        ctx = _Context(kernel, graph, max_ha, excluded)
        body = ctx.block(kernel.body, ())
        if body is kernel.body:
            return kernel
        out = dataclasses.replace(kernel, body=body)
        # Belt and braces: the new inner loops must be parallel by the analysis itself.
        graph2 = deps.analyze_or_none(out)
        ids = deps.loop_ids(out)
        carried = deps.carried_loops(graph2) if graph2 is not None else None
        bad = [old for old, new in ctx.done if carried is None or ids[id(new)] in carried]
        if not bad:
            return out
        excluded |= {id(old) for old in bad}
    return kernel


def _has_pair(body: tuple[ir.Stmt, ...]) -> bool:
    """Whether a unit-step perfect pair is reachable through loop bodies (saves the analysis otherwise)."""
    for s in body:
        if isinstance(s, ir.For):
            inner = s.body[0] if len(s.body) == 1 else None
            if isinstance(inner, ir.For) and abs(s.step) == 1 and abs(inner.step) == 1:
                return True
            if _has_pair(s.body):
                return True
    return False


class _Context:
    """One analysis of a kernel and the rewrites made from it."""

    def __init__(self, kernel: ir.Kernel, graph: nx.MultiDiGraph, max_ha: int, excluded: set[int]) -> None:
        self.kernel = kernel
        self.max_ha = max_ha
        self.excluded = excluded
        self.ids = deps.loop_ids(kernel)
        self.carried = deps.carried_loops(graph)
        self.stmts = acc_mod.analyze(kernel)
        self.params = acc_mod.parameters(kernel)
        self.decl_depth = {s.node.name: s.depth for s in self.stmts if isinstance(s.node, ir.Decl)}
        self.types = _scalar_types(kernel)
        self.used = set(self.types) | {p.name for p in kernel.params}
        # Also the names of local arrays and called functions: a CUDA variable would shadow them.
        self.used |= {n.name for n in ir.walk(kernel) if isinstance(n, ir.Alloc)}
        self.used |= {n.fn for n in ir.walk(kernel) if isinstance(n, ir.Call)}
        self.done: list[tuple[ir.For, ir.For]] = []  # (old a loop, new a loop)

    def block(self, body: tuple[ir.Stmt, ...], enclosing: tuple[ir.For, ...]) -> tuple[ir.Stmt, ...]:
        """``body`` with its pairs rewritten (the same tuple if none was)."""
        new = tuple(self.loop(s, enclosing) if isinstance(s, ir.For) else s for s in body)
        return body if all(a is b for a, b in zip(new, body)) else new

    def loop(self, s: ir.For, enclosing: tuple[ir.For, ...]) -> ir.For:
        body = self.block(s.body, enclosing + (s,))
        if body is not s.body:
            return dataclasses.replace(s, body=body)  # an inner pair was rewritten
        if len(s.body) == 1 and isinstance(s.body[0], ir.For) and id(s) not in self.excluded:
            return self.pair(s, s.body[0], enclosing) or s
        return s

    def pair(self, a: ir.For, b: ir.For, enclosing: tuple[ir.For, ...]) -> ir.For | None:
        """The wavefront form of ``for a { for b }``, or None if it is not profitable, shaped and legal."""
        if a.reduce or b.reduce:
            return None  # a parallel reduction already (a sweep nest, marked by fuse): reduce-gpu's
        nest = [*enclosing, a, *(n for n in ir.walk(b) if isinstance(n, ir.For))]
        if any(self.ids[id(lp)] not in self.carried for lp in nest):
            return None  # something is parallel already: leave the nest to map-gpu
        ty = a.ty
        if b.ty != ty or not ty.is_signed or abs(a.step) != 1 or abs(b.step) != 1:
            return None
        outer = self.params | {lp.var for lp in enclosing}
        alo, ahi = acc_mod.affine(a.lo, outer), acc_mod.affine(a.hi, outer)
        blo, bhi = acc_mod.affine(b.lo, outer | {a.var}), acc_mod.affine(b.hi, outer | {a.var})
        if alo is None or ahi is None or blo is None or bhi is None:
            return None
        try:
            ha = self.hyperplane(a, len(enclosing) + 1)
        except isl.Error:
            return None
        if ha is None:
            return None
        new_a = _skew(a, b, ha, self.fresh(), (alo, ahi, blo, bhi), self.types)
        self.done.append((a, new_a.body[0]))  # type: ignore[arg-type]
        return new_a

    def hyperplane(self, a: ir.For, la: int) -> int | None:
        """The smallest ``ha`` such that ``(ha, 1)`` orders every dependence between ``a``'s iterations."""
        inside = [s for s in self.stmts if len(s.loops) > la and s.loops[la - 1] is a]
        carried = [d for d in _carried(inside, la, sorted(self.params), self.decl_depth) if not d[0].is_empty()]
        for ha in range(self.max_ha + 1):
            if all(dep.intersect(isl.Set(f"{head}{ha} * ({da}) + ({db}) <= 0 }}")).is_empty()
                   for dep, head, da, db in carried):
                return ha
        return None

    def fresh(self) -> str:
        for n in itertools.count():
            name = "w" if n == 0 else f"w{n}"
            if name not in self.used:
                self.used.add(name)
                return name
        raise AssertionError("unreachable")


def _carried(inside: list[StmtInfo], la: int, params: list[str],
             decl_depth: dict[str, int]) -> Iterator[tuple[isl.Set, str, str, str]]:
    """Dependent instance pairs of ``inside`` carried at level ``la`` or ``la + 1``, per access pair.

    Yields (the isl set of pairs, its header, the execution-order distances at
    ``la`` and ``la + 1``), in the formulation of :mod:`passes.deps` (source
    ``i0..``, sink ``j0..``, parameters ``p_<name>``): affine loop bounds and
    subscripts only, the rest dropped (more pairs, so sound); strides of
    non-unit outer steps are dropped too, for the same reason.
    """
    pnames = [f"p_{p}" for p in params]
    pset = frozenset(params)
    for src, dst in itertools.product(inside, inside):
        iv = [f"i{k}" for k in range(src.depth)]
        jv = [f"j{k}" for k in range(dst.depth)]
        head = f"[{', '.join(pnames)}] -> {{ [{', '.join(iv + jv)}] : "
        diff = [f"{1 if lp.step > 0 else -1} * ({jv[k]} - {iv[k]})" for k, lp in enumerate(src.loops[:la + 1])]
        names_s = {lp.var: x for lp, x in zip(src.loops, iv)}
        names_t = {lp.var: x for lp, x in zip(dst.loops, jv)}
        domain = _domain(src.loops, names_s, pset) + _domain(dst.loops, names_t, pset)
        seen: set[object] = set()
        for x in src.accesses:
            for y in dst.accesses:
                key = (x.name, x.write, x.subscripts, y.write, y.subscripts)
                if x.name != y.name or not (x.write or y.write) or key in seen:
                    continue
                seen.add(key)
                cons = domain + [f"{_render(p, names_s)} = {_render(q, names_t)}"
                                 for p, q in zip(x.subscripts, y.subscripts) if p is not None and q is not None]
                # A scalar declared inside the first k loops is private to them (as in deps).
                first = decl_depth.get(x.name, 0) + 1 if x.is_scalar else 1
                for lv in (la, la + 1):
                    if lv >= first:
                        prefix = [f"{iv[k]} = {jv[k]}" for k in range(lv - 1)]
                        text = " and ".join(cons + prefix + [f"{diff[lv - 1]} > 0"])
                        yield isl.Set(head + text + " }"), head, diff[la - 1], diff[la]


def _domain(loops: tuple[ir.For, ...], names: dict[str, str], params: frozenset[str]) -> list[str]:
    """Affine bound constraints of the iteration domain of ``loops``."""
    cons: list[str] = []
    for n, lp in enumerate(loops):
        allowed = params | {o.var for o in loops[:n]}
        for bound, op in ((lp.lo, ">="), (lp.hi, "<")):
            aff = acc_mod.affine(bound, allowed)
            if aff is not None:
                cons.append(f"{names[lp.var]} {op} {_render(aff, names)}")
    return cons


def _render(e: Affine, names: dict[str, str]) -> str:
    return " + ".join([*(f"{c} * {names.get(v, 'p_' + v)}" for v, c in e.coeffs), str(e.const)])


def _skew(a: ir.For, b: ir.For, ha: int, w: str, bounds: tuple[Affine, Affine, Affine, Affine],
          types: dict[str, ir.Scalar]) -> ir.For:
    """The rewritten nest ``for w { for a { if (b in range) S[b := B] } }`` (see the module docstring)."""
    alo, ahi, blo, bhi = bounds
    ty, c, sb = a.ty, ha * a.step, b.step
    wv, av = ir.Var(w, ty), ir.Var(a.var, ty)
    # B = sb * (w - c * a), built so that it prints (and reads) as a plain affine expression.
    if c == 0:
        rest: ir.Expr = wv
    else:
        term = av if abs(c) == 1 else ir.binary("*", ir.const(abs(c), ty), av)
        rest = ir.binary("-" if c > 0 else "+", wv, term)
    big_b = rest if sb > 0 else ir.binary("-", ir.binary("*", ir.const(c, ty), av), wv) if c else ir.unary("-", wv)
    # w = c * a + sb * b over the domain; per a its extremes are at b's bounds, then at a's.
    one = Affine.of({}, 1)
    a_aff = Affine.of({a.var: 1}, 0)
    b_min, b_max = (blo, _add(bhi, one, -1)) if sb > 0 else (_add(bhi, one, -1), blo)
    lo_w = _add(_scale(a_aff, c), _scale(b_min, sb))
    hi_w = _add(_scale(a_aff, c), _scale(b_max, sb))
    a_last = _add(ahi, one, -1)
    w_lo = _subst(lo_w, a.var, alo if lo_w.coeff(a.var) >= 0 else a_last)
    w_hi = _add(_subst(hi_w, a.var, a_last if hi_w.coeff(a.var) >= 0 else alo), one)
    body = _Subst(b.var, big_b).transform_all(b.body)
    guard = ir.binary("&&", ir.binary("<=", b.lo, big_b), ir.binary("<", big_b, b.hi))
    inner = ir.For(a.var, ty, a.lo, a.hi, 1, (ir.If(guard, body, loc=b.loc),), loc=a.loc)
    return ir.For(w, ty, _expr(w_lo, ty, types), _expr(w_hi, ty, types), 1, (inner,), loc=a.loc)


class _Subst(ir.Transformer):
    """Replaces the variable ``name`` by ``expr`` (of the same type)."""

    def __init__(self, name: str, expr: ir.Expr) -> None:
        self.name, self.expr = name, expr

    def visit_Var(self, v: ir.Var) -> ir.Expr:
        assert v.ty == self.expr.ty or v.name != self.name, f"type mismatch substituting {v!r}"
        return self.expr if v.name == self.name else v

    def transform_all(self, body: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        return tuple(self.transform(s) for s in body)


def _add(x: Affine, y: Affine, k: int = 1) -> Affine:
    coeffs = dict(x.coeffs)
    for v, cv in y.coeffs:
        coeffs[v] = coeffs.get(v, 0) + k * cv
    return Affine.of(coeffs, x.const + k * y.const)


def _scale(x: Affine, k: int) -> Affine:
    return Affine.of({v: k * cv for v, cv in x.coeffs}, k * x.const)


def _subst(x: Affine, var: str, value: Affine) -> Affine:
    k = x.coeff(var)
    return _add(Affine.of({v: cv for v, cv in x.coeffs if v != var}, x.const), value, k)


def _expr(x: Affine, ty: ir.Scalar, types: dict[str, ir.Scalar]) -> ir.Expr:
    """``x`` as an IR expression of type ``ty``: positive terms first, then the rest."""
    terms = sorted(x.coeffs, key=lambda t: (t[1] < 0, t[0]))
    e: ir.Expr | None = None
    for v, k in terms:
        var = ir.cast(ir.Var(v, types[v]), ty)
        t = var if abs(k) == 1 else ir.binary("*", ir.const(abs(k), ty), var)
        e = (t if k > 0 else ir.unary("-", t)) if e is None else ir.binary("+" if k > 0 else "-", e, t)
    if e is None:
        return ir.const(x.const, ty)
    if x.const:
        e = ir.binary("+" if x.const > 0 else "-", e, ir.const(abs(x.const), ty))
    return e


def _scalar_types(kernel: ir.Kernel) -> dict[str, ir.Scalar]:
    """The type of every scalar name of ``kernel``: scalar params, locals and loop variables."""
    out = {p.name: p.ty for p in kernel.params if isinstance(p.ty, ir.Scalar)}
    for n in ir.walk(kernel):
        if isinstance(n, ir.Decl):
            out[n.name] = n.ty
        elif isinstance(n, ir.For):
            out[n.var] = n.ty
        elif isinstance(n, ir.Var):
            out.setdefault(n.name, n.ty)
    return out
