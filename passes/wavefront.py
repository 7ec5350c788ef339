"""Wavefront (skewing): run a fully sequential 2- or 3-deep nest as sequential wavefronts of parallel iterations.

**Precondition**: valid IR (``ircheck.check``) without ``Launch`` regions (it runs
before ``map-gpu``); a kernel that already contains a ``Launch`` is returned
unchanged.

**Postcondition**: the same program in which some perfect nests
``for a { for b { S } }`` or ``for a { for b { for c { S } } }`` (reachable
from the top level through loop bodies alone) became::

    for w in wlo..whi {            // sequential: one wavefront per w
      for a in alo..ahi {          // parallel: no dependence at equal w
        if (blo <= B && B < bhi) { S[b := B] }
      }
    }

respectively ``for w { for a { for b { if (clo <= C && C < chi) S[c := C] } } }``
with ``a`` and ``b`` both parallel.  For a pair ``B = sb * (w - ha * sa * a)``
(``sa``, ``sb`` the loops' steps, ±1), i.e. the iteration ``(a, b)`` runs at
time ``w = ha * (sa * a) + (sb * b)``; for a triple ``C = sc * (w - ha * sa *
a - hb * sb * b)``.  The guard keeps exactly the original iteration set;
``wlo..whi`` covers every ``w`` the nest reaches (a superset where an inner
range is empty for some outer iteration).  The innermost variable is replaced
by an affine expression, so the dependence analysis stays exact on ``S``.

A nest is rewritten only when (1) *profitable*: every loop of the nest, every
loop around it and every loop inside ``S`` carry a dependence (no loop could
be mapped in parallel today) and none is marked ``reduce`` (a sweep nest,
marked by fuse, is a parallel reduction already); (2) *shaped*: unit steps
(±1), the same signed integer type, each loop's bounds affine in parameters,
enclosing loop variables and the nest's outer variables (so the new bounds
are host computable for ``map-gpu``); (3) *legal*: for the hyperplane
``h = (ha, 1)`` (``(ha, hb, 1)``), slopes in ``0..MAX_HA``, smallest sum
first, every pair of dependent statement instances of the nest at equal
iterations of the enclosing loops and different iterations of the nest
satisfies ``h . (sink - source) >= 1`` in execution order.  That is proven
exactly with isl, per pair of conflicting accesses, by checking that the set
of dependent instance pairs with ``h . (sink - source) <= 0`` is empty (built
as :mod:`passes.deps` builds its sets: non-affine subscripts and bounds, and
strides, are dropped, which only adds pairs, so the test stays sound;
summarised direction vectors are not used).  Dependences carried by the
enclosing loops stay satisfied because those loops stay outside, sequential;
instances with the same nest iteration run in one thread in the original
order; two instances with the same ``w`` and different iterations are
independent, since every dependence strictly increases ``w``.  (Fixing the
innermost slope to 1 loses nothing: the innermost loop carries some ``(0, ..,
d > 0)``, so its slope is >= 1, and dividing a legal ``h`` by it and rounding
the others up keeps it legal; it also keeps the substitution free of
division.)  (4) *checked*: after the rewrite :func:`passes.deps.analyze` must
find no dependence carried by the new parallel loops, else the nest is left as
it was.  A 3-deep nest is tried before the pairs inside it (it has more
parallel iterations per wavefront and fewer wavefronts: seidel-2d's time loop
joins the wavefront); otherwise innermost pairs are tried first; a rewritten
nest's enclosing loops now hold a parallel loop, so they are not rewritten
again.  ``w`` has the loops' type, like their bounds: ``|w| <= (2 * MAX_HA +
1) * max(|a|, |b|, |c|)`` must fit in it.

Before::

    for t in 0..tsteps {
      for i in 1..n - 1 {
        for j in 1..n - 1 {
          A[i][j] = (A[i - 1][j + 1] + A[i][j - 1] + A[i + 1][j]) / 3.0;
        }
      }
    }

After, when the time loop is kept outside (as when it does not carry the dependences; here it
does, see below): distances (1, -1), (0, 1) and (1, 0) at equal ``t`` give ``h = (2, 1)``::

    for t in 0..tsteps {
      for w in 3..3 * n - 5 {
        for i in 1..n - 1 {
          if (1 <= w - 2 * i && w - 2 * i < n - 1) {
            A[i][w - 2 * i] = (A[i - 1][w - 2 * i + 1] + A[i][w - 2 * i - 1] + A[i + 1][w - 2 * i]) / 3.0;
          }
        }
      }
    }

``map-gpu`` then keeps ``t`` and ``w`` on the host and launches ``i`` in parallel.  Here all three
loops carry dependences, and the 3-deep nest comes first: execution-order distances (0, 1, -1),
(0, 0, 1), (0, 1, 0), (1, -1, 0), (1, -1, 1), (1, 0, -1) and (1, 0, 0) give ``h = (3, 2, 1)``::

    for w in 3..3 * n + 3 * tsteps - 8 {
      for i in 1..n - 1 {
        for t in 0..tsteps {
          if (1 <= w - 3 * t - 2 * i && w - 3 * t - 2 * i < n - 1) {
            A[i][w - 3 * t - 2 * i] = (A[i - 1][w - 3 * t - 2 * i + 1] + ...) / 3.0;
          }
        }
      }
    }

with ``i`` and ``t`` launched in parallel (``t`` inside: consecutive ``t`` are 3 elements apart in
the written row, consecutive ``i`` a row apart): ``3 * tsteps + 3 * n - 11`` launches instead of
``tsteps * (3 * n - 8)``.
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
from passes.tile import var_names
from transpile import ir

#: Hyperplane slopes tried for the outer loop, smallest (fewest wavefronts) first.
MAX_HA = 4


def run(kernel: ir.Kernel, *, max_ha: int = MAX_HA) -> ir.Kernel:
    """``kernel`` with every profitable, provably legal 2-deep nest turned into a wavefront."""
    if ir.is_mapped(kernel) or not _has_pair(kernel.body):
        return kernel
    excluded: set[tuple[int, int]] = set()  # (id, depth) of nests whose rewrite failed the check (``kernel``'s)
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
        bad = [old for old, new in ctx.done if carried is None or any(ids[id(lp)] in carried for lp in new)]
        if not bad:
            return out
        excluded |= set(bad)
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

    def __init__(self, kernel: ir.Kernel, graph: nx.MultiDiGraph, max_ha: int,
                 excluded: set[tuple[int, int]]) -> None:
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
        self.done: list[tuple[tuple[int, int], tuple[ir.For, ...]]] = []  # ((id, depth) of a nest, its new par loops)

    def block(self, body: tuple[ir.Stmt, ...], enclosing: tuple[ir.For, ...]) -> tuple[ir.Stmt, ...]:
        """``body`` with its pairs rewritten (the same tuple if none was)."""
        new = tuple(self.loop(s, enclosing) if isinstance(s, ir.For) else s for s in body)
        return body if all(a is b for a, b in zip(new, body)) else new

    def loop(self, s: ir.For, enclosing: tuple[ir.For, ...]) -> ir.For:
        triple = _perfect(s, 3)
        if triple is not None and (id(s), 3) not in self.excluded:
            new = self.nest(triple, enclosing)
            if new is not None:
                return new  # the whole 3-deep nest: its outer loop's wavefronts too (seidel-2d's time loop)
        body = self.block(s.body, enclosing + (s,))
        if body is not s.body:
            return dataclasses.replace(s, body=body)  # an inner nest was rewritten
        pair = _perfect(s, 2)
        if pair is not None and (id(s), 2) not in self.excluded:
            return self.nest(pair, enclosing) or s
        return s

    def nest(self, loops: tuple[ir.For, ...], enclosing: tuple[ir.For, ...]) -> ir.For | None:
        """The wavefront form of the perfect nest ``loops``, or None if it is not profitable, shaped and legal."""
        if any(lp.reduce for lp in loops):
            return None  # a parallel reduction already (a sweep nest, marked by fuse): reduce-gpu's
        nest = [*enclosing, *loops[:-1], *(n for n in ir.walk(loops[-1]) if isinstance(n, ir.For))]
        if any(self.ids[id(lp)] not in self.carried for lp in nest):
            return None  # something is parallel already: leave the nest to map-gpu
        ty = loops[0].ty
        if any(lp.ty != ty or abs(lp.step) != 1 for lp in loops) or not ty.is_signed:
            return None
        names = self.params | {lp.var for lp in enclosing}
        bounds: list[tuple[Affine, Affine]] = []
        for lp in loops:
            lo, hi = acc_mod.affine(lp.lo, names), acc_mod.affine(lp.hi, names)
            if lo is None or hi is None:
                return None
            bounds.append((lo, hi))
            names = names | {lp.var}
        try:
            h = self.hyperplane(loops, len(enclosing) + 1)
        except isl.Error:
            return None
        if h is None:
            return None
        new = _skew(loops, h, self.fresh(), bounds, self.types)
        pars, body = [], new.body
        for _ in loops[:-1]:
            pars.append(body[0])
            body = body[0].body  # type: ignore[union-attr]
        self.done.append(((id(loops[0]), len(loops)), tuple(pars)))  # type: ignore[arg-type]
        return new

    def hyperplane(self, loops: tuple[ir.For, ...], la: int) -> tuple[int, ...] | None:
        """The hyperplane ``(h1, .., 1)`` of smallest slopes that orders every dependence between the
        iterations of ``loops`` (at levels ``la`` on): slopes in ``0..max_ha``, smallest sum first."""
        # The statements of the innermost body; the inner loops' bound statements read only
        # parameters and loop variables (their bounds are affine in them), nothing the nest writes.
        inside = [s for s in self.stmts if len(s.loops) >= la + len(loops) - 1 and s.loops[la - 1] is loops[0]]
        carried = [d for d in _carried(inside, la, len(loops), sorted(self.params), self.decl_depth)
                   if not d[0].is_empty()]
        slopes = sorted(itertools.product(range(self.max_ha + 1), repeat=len(loops) - 1),
                        key=lambda h: (sum(h), h))
        for h in slopes:
            if all(dep.intersect(deps._parse(f"{head}{' + '.join(f'{k} * ({d})' for k, d in zip((*h, 1), ds))}"
                                             f" <= 0 }}")).is_empty()
                   for dep, head, ds in carried):
                return h
        return None

    def fresh(self) -> str:
        for n in itertools.count():
            name = "w" if n == 0 else f"w{n}"
            if name not in self.used:
                self.used.add(name)
                return name
        raise AssertionError("unreachable")


def _perfect(s: ir.For, depth: int) -> tuple[ir.For, ...] | None:
    """``s`` and the loops perfectly nested in it, ``depth`` in all, or None."""
    loops = [s]
    while len(loops) < depth:
        body = loops[-1].body
        if len(body) != 1 or not isinstance(body[0], ir.For):
            return None
        loops.append(body[0])
    return tuple(loops)


def _carried(inside: list[StmtInfo], la: int, depth: int, params: list[str],
             decl_depth: dict[str, int]) -> Iterator[tuple[isl.Set, str, tuple[str, ...]]]:
    """Dependent instance pairs of ``inside`` carried at a level ``la .. la + depth - 1``, per access pair.

    Yields (the isl set of pairs, its header, the execution-order distances at
    those levels), in the formulation of :mod:`passes.deps` (source
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
        diff = [f"{1 if lp.step > 0 else -1} * ({jv[k]} - {iv[k]})" for k, lp in enumerate(src.loops[:la + depth - 1])]
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
                for lv in range(la, la + depth):
                    if lv >= first:
                        prefix = [f"{iv[k]} = {jv[k]}" for k in range(lv - 1)]
                        text = " and ".join(cons + prefix + [f"{diff[lv - 1]} > 0"])
                        # parsed once per text (deps' memo: one isl context, sets never modified)
                        yield deps._parse(head + text + " }"), head, tuple(diff[la - 1:la + depth - 1])


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


def _skew(loops: tuple[ir.For, ...], h: tuple[int, ...], w: str, bounds: list[tuple[Affine, Affine]],
          types: dict[str, ir.Scalar]) -> ir.For:
    """The rewritten nest ``for w { for a .. { if (z in range) S[z := Z] } }`` (see the module docstring).

    ``loops`` = (a, .., z), ``h`` the slopes of all but ``z``, ``bounds`` each loop's (lo, hi).
    """
    *outer, z = loops
    ty, sz = z.ty, z.step
    wv = ir.Var(w, ty)
    cs = [hk * lp.step for hk, lp in zip(h, outer)]  # w = sum(c * x) + sz * z
    terms = [(c, ir.Var(lp.var, ty)) for c, lp in zip(cs, outer) if c != 0]

    def times(c: int, x: ir.Var, signed: bool) -> ir.Expr:
        return x if abs(c) == 1 and not signed else ir.binary("*", ir.const(c if signed else abs(c), ty), x)

    # Z = sz * (w - sum(c * x)), built so that it prints (and reads) as a plain affine expression.
    if sz > 0:
        big_z: ir.Expr = wv
        for c, x in terms:
            big_z = ir.binary("-" if c > 0 else "+", big_z, times(c, x, False))
    elif terms:
        acc: ir.Expr = times(terms[0][0], terms[0][1], True)
        for c, x in terms[1:]:
            acc = ir.binary("+", acc, times(c, x, True))
        big_z = ir.binary("-", acc, wv)
    else:
        big_z = ir.unary("-", wv)
    # w over the domain: per outer iteration its extremes are at z's bounds, then (innermost
    # first) at each outer loop's bounds, by the sign of its coefficient.
    one = Affine.of({}, 1)
    zlo, zhi = bounds[-1]
    z_min, z_max = (zlo, _add(zhi, one, -1)) if sz > 0 else (_add(zhi, one, -1), zlo)
    base = Affine.of({}, 0)
    for c, lp in zip(cs, outer):
        base = _add(base, Affine.of({lp.var: c}, 0))
    lo_w, hi_w = _add(base, _scale(z_min, sz)), _add(base, _scale(z_max, sz))
    for lp, (lo, hi) in reversed(list(zip(outer, bounds))):
        last = _add(hi, one, -1)
        lo_w = _subst(lo_w, lp.var, lo if lo_w.coeff(lp.var) >= 0 else last)
        hi_w = _subst(hi_w, lp.var, last if hi_w.coeff(lp.var) >= 0 else lo)
    assert all(v.ty == big_z.ty for st in z.body for v in ir.walk(st) if isinstance(v, ir.Var) and v.name == z.var), \
        f"type mismatch substituting {z.var}"
    body = tuple(ir.substitute(st, {z.var: big_z}) for st in z.body)
    w_lo, w_hi = _expr(lo_w, ty, types), _expr(_add(hi_w, one), ty, types)
    if len(outer) == 1:
        (a,) = outer
        z_aff = Affine.of({w: sz, a.var: -sz * cs[0]}, 0)
        tight = _bounds_from_guard(a.var, bounds[0], (_add(z_aff, zlo, -1), _add(_add(zhi, z_aff, -1), one, -1)),
                                   (lo_w, hi_w), w)
        if tight is not None:
            lo, hi = tight
            known = {**types, w: ty}
            inner_loop = ir.For(a.var, ty, _expr(lo, ty, known), _expr(hi, ty, known), 1, body, loc=a.loc)
            return ir.For(w, ty, w_lo, w_hi, 1, (inner_loop,), loc=loops[0].loc)
    guard = ir.binary("&&", ir.binary("<=", z.lo, big_z), ir.binary("<", big_z, z.hi))
    inner: ir.Stmt = ir.If(guard, body, loc=z.loc)
    for lp in reversed(_coalesced_order(outer, body)):
        inner = ir.For(lp.var, ty, lp.lo, lp.hi, 1, (inner,), loc=lp.loc)
    return ir.For(w, ty, w_lo, w_hi, 1, (inner,), loc=loops[0].loc)


def _bounds_from_guard(a: str, a_bounds: tuple[Affine, Affine], conds: tuple[Affine, ...],
                       w_range: tuple[Affine, Affine], w: str) -> tuple[Affine, Affine] | None:
    """The bounds ``(lo, hi)`` of the parallel loop ``a`` of a 2-deep wavefront under which the guard
    ``conds`` (each ``c >= 0``, affine in ``w``, ``a``, parameters and enclosing loops) holds for
    every iteration, so the guard can go; None where that needs more than one affine bound a side.

    A condition free of ``a`` must hold on the whole range ``w_range`` (``lo <= w <= hi``, isl proves
    it for every parameter value); one with ``a``'s coefficient +-1 is a lower (upper) bound of ``a``,
    kept only where isl proves that it, or ``a``'s own bound, is the tighter over that range.  The
    loop then runs exactly the iterations the guard let through: nussinov's ``i + 1 <= w + i && w + i
    < n`` over ``0 <= i < n`` and ``1 <= w < n`` is ``for i in 0..n - w`` (``w >= 1`` holds throughout)."""
    wlo, whi = w_range
    lows, highs = [a_bounds[0]], [_add(a_bounds[1], Affine.of({}, 1), -1)]  # a >= low, a <= high
    for c in conds:
        k = c.coeff(a)
        rest = Affine.of({v: cv for v, cv in c.coeffs if v != a}, c.const)
        if k == 0:
            if not _always(rest, wlo, whi, w):
                return None
        elif k == 1:
            lows.append(_scale(rest, -1))  # a + rest >= 0
        elif k == -1:
            highs.append(rest)  # rest - a >= 0
        else:
            return None
    lo = _tightest(lows, wlo, whi, w, 1)
    hi = _tightest(highs, wlo, whi, w, -1)
    if lo is None or hi is None:
        return None
    return lo, _add(hi, Affine.of({}, 1))


def _tightest(cands: list[Affine], wlo: Affine, whi: Affine, w: str, sign: int) -> Affine | None:
    """The candidate that is the largest (``sign`` 1) or smallest (-1) of ``cands`` for every ``w`` in
    ``wlo..whi`` and every parameter value, or None if none is."""
    for x in cands:
        if all(y is x or _always(_scale(_add(x, y, -1), sign), wlo, whi, w) for y in cands):
            return x
    return None


def _always(c: Affine, wlo: Affine, whi: Affine, w: str) -> bool:
    """``c >= 0`` for every ``w`` with ``wlo <= w <= whi``, whatever the parameters (isl)."""
    names = {v: v if v == w else f"p_{v}" for x in (c, wlo, whi) for v, _ in x.coeffs}
    names[w] = w
    params = sorted(v for k, v in names.items() if k != w)
    try:
        bad = deps._parse(f"[{', '.join(params)}] -> {{ [{w}] : {w} >= {_render(wlo, names)} and "
                          f"{w} <= {_render(whi, names)} and {_render(c, names)} < 0 }}")
        return bool(bad.is_empty())
    except isl.Error:
        return False


def _coalesced_order(outer: list[ir.For], body: tuple[ir.Stmt, ...]) -> list[ir.For]:
    """The new parallel loops, outermost first: as they were, except that of two loops with
    rectangular bounds, the one that moves the first written element less (it appears in no
    subscript but the last, and with the smaller coefficient there) goes inside, where map-gpu
    puts ``x``.  seidel-2d's ``A[i][w - 4 * t - 2 * i]``: consecutive ``t`` are 4 elements apart,
    consecutive ``i`` a row and 2 elements: ``t`` inside ran 1.4x faster on the H200
    (bench/results/h200_run42_seidel.md)."""
    if len(outer) != 2 or (var_names(outer[1].lo) | var_names(outer[1].hi)) & {outer[0].var}:
        return outer
    target = next((n.target for st in body for n in ir.walk(st)
                   if isinstance(n, ir.Assign) and isinstance(n.target, ir.Index)), None)
    if target is None:
        return outer

    def cost(var: str) -> tuple[int, int] | None:
        forms = [acc_mod.affine(ix, var_names(ix)) for ix in target.indices]
        if any(f is None for f in forms):
            return None
        *lead, last = forms
        return (int(any(f.coeff(var) for f in lead if f is not None)), abs(last.coeff(var)) if last else 0)

    a, b = cost(outer[0].var), cost(outer[1].var)
    return [outer[1], outer[0]] if a is not None and b is not None and a < b else outer


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
