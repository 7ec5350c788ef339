"""Parallel prefix computations: a loop that carries one running value becomes a blocked scan.

A loop whose only carried dependence is a running value (a prefix sum ``a[i] = a[i - 1] + b[i]``, a
running total written out ``s += x[i]; y[i] = s;``, a running maximum) runs in one GPU thread: each
iteration needs the one before.  But the running value is an associative combination of the
iterations' terms, so it can be computed in three phases over chunks of ``K`` iterations (Blelloch's
scan, blocked; Allen & Kennedy, "recurrence breaking"):

1. every chunk, in parallel, combines its own terms (``part[c]``);
2. the chunk totals are scanned in order (``part[c] = part[c - 1] op part[c]``): ``K`` times fewer
   iterations, and itself a scan of the same shape, so this pass blocks it again (up to
   :data:`LEVELS` levels: ``n / K^LEVELS`` iterations stay sequential);
3. every chunk, in parallel, starts from the value before it (the entry value combined with the totals
   of the chunks before) and runs the original body.

**Precondition**: valid IR without ``Launch`` regions (it runs after the restructuring passes, right
before normalize).

**Rule.**  A top-level loop ``for i in lo..hi`` (step 1, ``lo``/``hi`` reading only scalar parameters) whose
body holds exactly one accumulation (:mod:`transpile.ir.accum`) into the running value, either

* a scalar ``s`` declared outside the loop: ``s = s op e`` (the *running total*; ``s`` holds the total
  after the loop, and every other statement sees ``s`` as C does, before or after the update), or
* an element ``X[.., i + d]`` computed from ``X[.., i + d - 1]``: ``X[.., i + d] = X[.., i + d - 1] op e``
  (the *recurrence*; read as a running value that starts at ``X[.., lo + d - 1]`` and is stored at each
  ``i``; ``e`` may read ``X[.., i + d]`` itself, whose value is still the entry one there),

where the term ``e`` reads no scalar and no array the loop writes (so phase 1 can compute every term
first), except that element.  The other statements are then run by phase 3 with the running value in a
private scalar.  The operator must reassociate exactly (integers, min/max) or ``reassociate`` be on
(float ``+``/``*``: the terms combine in another order, as a parallel reduction's do).

The rewrite is kept only if the dependence test (:mod:`passes.deps`) proves both chunk loops parallel:
that is what makes phase 3 legal (the other statements may not read what another chunk writes).

Before::

    for i in 1..n {
      a[i] = a[i - 1] + b[i];
    }

After (one level shown; ``K = 64``)::

    f32 part[n - 1 > 0 ? (n - 1 + 63) / 64 : 1];
    for c in 0..(n - 1 + 63) / 64 {
      f32 p = -0.0f;
      for i in 1 + 64 * c..1 + 64 * c + 64 {
        p = p + (i < n ? b[i] : -0.0f);
      }
      part[c] = p;
    }
    for c in 1..(n - 1 + 63) / 64 {
      part[c] = part[c - 1] + part[c];
    }
    f32 s = a[0];
    for c in 0..(n - 1 + 63) / 64 {
      f32 r = s;
      if (c > 0) {
        r = r + part[c - 1];
      }
      for i in 1 + 64 * c..1 + 64 * c + 64 {
        if (i < n) {
          r = r + b[i];
          a[i] = r;
        }
      }
    }

**Linear recurrences** (``y[i] = 0.9f * y[i - 1] + 0.1f * x[i]``, ``a[i] = a[i - 1] * b[i] + c[i]``,
``s = s * x + c[i]``): a float running value updated as an affine map of itself, ``x = A(i) * x + B(i)``
(:func:`_linear` finds ``A`` and ``B`` through ``+``, ``-`` and products by factors free of ``x``;
``B`` not zero, and ``A`` not 1 for a scalar, which the running-value scan above or reduce-gpu take;
an element's ``a[i] = a[i - 1] + s1 + b[i]``, a sum the accumulation form does not match, is one), the
coefficients under the same rule as the term.  Maps compose (``x -> a2 (a1 x + b1) + b2`` is
``(a2 a1, a2 b1 + b2)``), so the same three phases apply (:func:`_blocked_linear`): each chunk composes
its maps into ``part_a[c], part_b[c]`` (parallel), the chunks' maps are composed in order (``n / K``
iterations in one thread, not blocked again), and each chunk runs the body from ``part_a[c - 1] * x0 +
part_b[c - 1]`` (parallel); a scalar nobody reads per iteration (Horner's rule) needs no phase 3.
Floats only, under ``reassociate`` (the composition multiplies the coefficients in another order;
integer maps could overflow where the loop does not).

Packing (``if (c) { out[j] = e; j++; }``, a scan of the condition used as a subscript) is not done:
phase 3's writes would go where the scanned counter says, which the dependence test cannot prove
disjoint.
"""

from __future__ import annotations

import dataclasses

from passes import deps
from passes.builders import each_top_loop, fresh_name, loop_invariant
from transpile import ir
from transpile.ir import accum
from transpile.ir.cscalars import fold

#: Iterations a chunk combines (a constant: the chunks' subscripts stay affine, so the dependence test
#: sees them disjoint).
K = 64
#: How many times the chunk totals' own scan is blocked again.
LEVELS = 3


def run(kernel: ir.Kernel, *, reassociate: bool = True, chunk: int | None = None) -> ir.Kernel:
    """``kernel`` with its top-level running-value loops made blocked scans (see the module docstring);
    ``chunk`` iterations a chunk (default :data:`K`; tests take small ones, to run every level at small
    sizes)."""
    chunk = K if chunk is None else chunk
    if any(isinstance(n, (ir.Launch, ir.Return)) for n in ir.walk(kernel)):
        return kernel
    params = frozenset(p.name for p in kernel.params if not isinstance(p.ty, ir.ArrayType))
    written_anywhere = ir.scalars_written(kernel)
    params = params - written_anywhere
    # the loops as given: a scan's own loops are not looked at again (its tail has the recurrence's shape)
    return each_top_loop(kernel, lambda k, position, loop: _scan(k, position, loop, params, reassociate, chunk))


@dataclasses.dataclass(frozen=True)
class _Running:
    """A loop's running value: its accumulation, the statement's index in the body, the entry value
    (an expression read before the loop) and, for a recurrence, the element each iteration stores it in."""

    acc: accum.Accumulation
    at: int
    entry: ir.Expr
    store: ir.Index | None


def _scan(kernel: ir.Kernel, position: int, loop: ir.For, params: frozenset[str],
          reassociate: bool, k: int) -> ir.Kernel | None:
    if loop.step != 1 or loop.par is not None or loop.reduce or not _over(loop.lo, params) or not _over(
            loop.hi, params):
        return None
    running = _running(loop)
    if running is not None:
        a = running.acc
        if not (reassociate or accum.exact(a.op, a.target.ty)):
            return None
        stmts, parallel = _blocked(loop, running, ir.identifiers(kernel), LEVELS, k)
    else:
        linear = _linear_running(loop) if reassociate else None
        if linear is None:
            return None
        stmts, parallel = _blocked_linear(loop, linear, ir.identifiers(kernel), k)
    body = kernel.body
    allocs = tuple(s for s in stmts if isinstance(s, ir.Alloc))
    rest = tuple(s for s in stmts if not isinstance(s, ir.Alloc))
    trial = dataclasses.replace(kernel, body=(*allocs, *body[:position], *rest, *body[position + 1:]))
    return trial if deps.proven_parallel(trial, parallel) else None


def _over(e: ir.Expr, params: frozenset[str]) -> bool:
    """Whether ``e`` reads only the scalar parameters ``params`` (no array, no local)."""
    return all(not isinstance(n, ir.Index) and (not isinstance(n, ir.Var) or n.name in params) for n in ir.walk(e))


def _running(loop: ir.For) -> _Running | None:
    """The loop's running value, if its body has the shape of the module docstring."""
    declared = {n.name for n in ir.statements(loop) if isinstance(n, ir.Decl)}
    found = [got for at, s in enumerate(loop.body) if isinstance(s, ir.Assign)
             and (got := _as_running(s, at, loop)) is not None]
    if len(found) != 1:
        return None
    r = found[0]
    a = r.acc
    others = [s for k, s in enumerate(loop.body) if k != r.at]
    if r.store is None and not any(a.target.name in ir.var_names(s) for s in others if isinstance(a.target, ir.Var)):
        return None  # a total nobody reads per iteration is a reduction (reduce-gpu's)
    # nothing else writes the running value
    if isinstance(a.target, ir.Var):
        if a.target.name in declared or any(a.target.name in ir.scalars_written(s) for s in others):
            return None
    elif any(isinstance(n, ir.Assign) and isinstance(n.target, ir.Index) and n.target.array == a.name
             for s in others for n in ir.walk(s)):
        return None
    # the term reads nothing the loop writes (but the recurrence's own element): phase 1 computes every
    # term before phase 3 runs the body
    return r if loop_invariant(a.term, loop, r.store) else None


def _as_running(s: ir.Assign, at: int, loop: ir.For) -> _Running | None:
    """``s`` as the running value's update: ``s = s op e`` on a scalar, or the recurrence
    ``X[.., i + d] = X[.., i + d - 1] op e``."""
    t = s.target
    if isinstance(t, ir.Var):
        a = accum.accumulation(s)
        if a is None or _mentions(a.term, t):
            return None
        return _Running(a, at, t, None)
    prev = _previous(t, loop.var)
    if prev is None or not _mentions(s.value, prev):
        return None
    # X[.., i + d - 1] read as the running value: the accumulation 'target = target op e', found with the
    # previous element as a placeholder (the term may read X[.., i + d] itself, its entry value, but not
    # the running value: 'a[i] += a[i - 1] * b[i]' is a linear recurrence, not a sum of terms)
    held = ir.Var(_PLACEHOLDER, t.ty, loc=t.loc)
    a = accum.accumulation(dataclasses.replace(s, target=held, value=_replace(s.value, prev, held)))
    if a is None or _mentions(a.term, held) or any(
            isinstance(n, ir.Index) and n.array == t.array and n != t for n in ir.walk(a.term)):
        return None
    entry = _fold_index(ir.substitute(prev, {loop.var: ir.cast(loop.lo, loop.ty)}))
    return _Running(accum.Accumulation(s, t, a.op, a.term, a.fn), at, entry, t)


_PLACEHOLDER = "running value"
"""The name the running value is matched under (no C identifier has a space)."""


def _fold_index(e: ir.Index) -> ir.Index:
    """``e`` with its constant subscripts folded (``a[1 - 1]`` is ``a[0]``)."""
    return dataclasses.replace(e, indices=tuple(
        ir.const(v, x.ty, loc=x.loc) if isinstance(v := fold(x), int) else x for x in e.indices))


def _previous(t: ir.Index, i: str) -> ir.Index | None:
    """``X[.., f - 1]`` for ``t = X[.., f]`` where exactly one subscript ``f`` reads ``i``, as ``i``,
    ``i + c`` or ``i - c`` (the others read no ``i``), else None."""
    reading = [k for k, x in enumerate(t.indices) if i in ir.var_names(x)]
    if len(reading) != 1:
        return None
    k = reading[0]
    f = t.indices[k]
    if not _unit_offset(f, i):
        return None
    back = ir.binary("-", f, ir.const(1, f.ty, loc=f.loc), loc=f.loc)
    return dataclasses.replace(t, indices=(*t.indices[:k], _fold_offset(back), *t.indices[k + 1:]))


def _unit_offset(f: ir.Expr, i: str) -> bool:
    """``f`` is ``i``, ``i + c``, ``c + i`` or ``i - c`` (``c`` a constant), possibly converted."""
    if isinstance(f, ir.Var):
        return f.name == i
    if isinstance(f, ir.Cast):
        return _unit_offset(f.operand, i)
    if isinstance(f, ir.Binary) and f.op in ("+", "-") and isinstance(f.rhs, ir.Const):
        return _unit_offset(f.lhs, i)
    return isinstance(f, ir.Binary) and f.op == "+" and isinstance(f.lhs, ir.Const) and _unit_offset(f.rhs, i)


def _fold_offset(e: ir.Expr) -> ir.Expr:
    """``(x + c) - 1`` as ``x + (c - 1)`` (``x`` when that is 0): the previous element as the program
    writes it (``a[i - 1]``), so that the program's own read of it is found equal."""
    if not (isinstance(e, ir.Binary) and e.op == "-" and isinstance(e.rhs, ir.Const)):
        return e
    inner, k = e.lhs, -e.rhs.value
    if isinstance(inner, ir.Binary) and inner.op in ("+", "-") and isinstance(inner.rhs, ir.Const):
        k += inner.rhs.value if inner.op == "+" else -inner.rhs.value
        inner = inner.lhs
    elif isinstance(inner, ir.Binary) and inner.op == "+" and isinstance(inner.lhs, ir.Const):
        k += inner.lhs.value
        inner = inner.rhs
    if k == 0:
        return inner
    return ir.Binary("+" if k > 0 else "-", inner, ir.const(abs(k), e.ty, loc=e.loc), e.ty, loc=e.loc)


def _mentions(e: ir.Node, node: ir.Expr) -> bool:
    return any(n == node for n in ir.walk(e))


class _Replace(ir.Transformer):
    def __init__(self, old: ir.Expr, new: ir.Expr) -> None:
        self.old, self.new = old, new

    def transform(self, node: ir.Node) -> ir.Node:
        if node == self.old:
            return self.new
        return super().transform(node)


def _replace(e: ir.Expr, old: ir.Expr, new: ir.Expr) -> ir.Expr:
    """``e`` with every occurrence of ``old`` replaced by ``new``."""
    got = _Replace(old, new).transform(e)
    assert isinstance(got, ir.Expr)
    return got


class _Chunks:
    """The chunking of ``loop`` into chunks of ``k`` iterations that both scans build on: fresh names
    (added to ``used``), the chunk count, the extent of a per-chunk array, the test that an iteration
    of a chunk is one of the loop's, and the loop over one chunk's iterations."""

    def __init__(self, loop: ir.For, used: set[str], k: int) -> None:
        self.loop, self.used, self.k, self.loc = loop, used, k, loop.loc
        self.ity = loop.ty if loop.ty.bits >= 32 else ir.I32
        loc = self.loc
        self.lo, self.hi = ir.cast(loop.lo, self.ity), ir.cast(loop.hi, self.ity)
        self.count = ir.binary("/", ir.binary("+", ir.binary("-", self.hi, self.lo, loc=loc), self.num(k - 1),
                                              loc=loc), self.num(k), loc=loc)
        self.extent = ir.select(ir.binary(">", self.hi, self.lo, loc=loc), self.count, self.num(1), loc=loc)
        self.inside = ir.binary("<", ir.cast(ir.Var(loop.var, loop.ty, loc=loc), self.ity), self.hi, loc=loc)

    def fresh(self, base: str) -> str:
        name = fresh_name(base, self.used)
        self.used.add(name)
        return name

    def num(self, v: int) -> ir.Expr:
        return ir.const(v, self.ity, loc=self.loc)

    def over(self, chunk: ir.Var, body: tuple[ir.Stmt, ...]) -> ir.For:
        """The iterations of chunk ``chunk`` (the last one's past ``hi`` too: guard them with ``inside``)."""
        loc, lp = self.loc, self.loop
        start = ir.binary("+", self.lo, ir.binary("*", self.num(self.k), chunk, loc=loc), loc=loc)
        return ir.For(lp.var, lp.ty, ir.cast(start, lp.ty), ir.cast(ir.binary("+", start, self.num(self.k), loc=loc),
                                                                    lp.ty), 1, body, loc=loc)


def _blocked(loop: ir.For, r: _Running, used: set[str], levels: int, k: int
             ) -> tuple[tuple[ir.Stmt, ...], list[ir.For]]:
    """The three phases of the blocked scan of ``loop`` (the middle one blocked again, ``levels`` in all),
    each level's ``Alloc`` of its chunk totals first; and the chunk loops that must be parallel."""
    loc = loop.loc
    a = r.acc
    ty = a.target.ty
    c = _Chunks(loop, used, k)
    ity, fresh, num, chunks, inside, over_chunk = c.ity, c.fresh, c.num, c.count, c.inside, c.over
    part_name = fresh("part")
    alloc = ir.Alloc(part_name, ir.ArrayType(ty, (c.extent,)), loc=loc)

    def part(at: ir.Expr) -> ir.Index:
        return ir.Index(part_name, (at,), ty, loc=loc)

    # phase 1: each chunk's total of its terms
    c1 = ir.Var(fresh("chunk"), ity, loc=loc)
    total = ir.Var(fresh("total"), ty, loc=loc)
    unit = ir.const(-0.0 if a.op == "+" and ty.is_float else accum.identity(a.op, ty), ty, loc=loc)  # x + -0.0 == x
    term = ir.select(inside, a.term, unit, loc=loc)
    phase1 = ir.For(c1.name, ity, num(0), chunks, 1, (
        ir.Decl(total.name, ty, unit, loc=loc),
        over_chunk(c1, (ir.Assign(total, accum.combine(a, a.op, total, term), loc=loc),)),
        ir.Assign(part(c1), total, loc=loc),
    ), loc=loc)
    # phase 2: the totals' own running combination (blocked again below)
    c2 = ir.Var(fresh("chunk"), ity, loc=loc)
    phase2 = ir.For(c2.name, ity, num(1), chunks, 1, (
        ir.Assign(part(c2), accum.combine(a, a.op, part(ir.binary("-", c2, num(1), loc=loc)), part(c2)), loc=loc),
    ), loc=loc)
    # phase 3: each chunk from the value before it, the original body
    running = ir.Var(fresh("running"), ty, loc=loc)
    c3 = ir.Var(fresh("chunk"), ity, loc=loc)
    read_as = r.store if r.store is None else _previous(r.store, loop.var)
    update = ir.Assign(running, _replace(a.stmt.value, a.target if read_as is None else read_as, running), loc=loc)
    acc_r = accum.Accumulation(update, running, a.op, a.term, a.fn)
    carry_in = accum.apply(acc_r, part(ir.binary("-", c3, num(1), loc=loc)))
    body: list[ir.Stmt] = []
    for n, s in enumerate(loop.body):
        if n == r.at:
            body.append(update)
            if r.store is not None:
                body.append(ir.Assign(r.store, running, loc=loc))
        elif r.store is None:
            assert isinstance(a.target, ir.Var)
            body.append(ir.substitute(s, {a.target.name: running}))
        else:
            body.append(s)
    phase3 = ir.For(c3.name, ity, num(0), chunks, 1, (
        ir.Decl(running.name, ty, r.entry, loc=loc),  # the value before the loop, which it does not write
        ir.If(ir.binary(">", c3, num(0), loc=loc), (carry_in,), (), loc=loc),
        over_chunk(c3, (ir.If(inside, tuple(body), (), loc=loc),)),
    ), loc=loc)
    after: tuple[ir.Stmt, ...] = ()
    if r.store is None:  # the running total holds the whole combination after the loop
        last = part(ir.binary("-", chunks, num(1), loc=loc))
        after = (ir.If(ir.binary(">", chunks, num(0), loc=loc), (accum.apply(a, last),), (), loc=loc),)
    middle: tuple[ir.Stmt, ...] = (phase2,)
    parallel = [phase1, phase3]
    if levels > 1:
        # the totals' scan is the recurrence part[c] = part[c - 1] op part[c] (built, not matched: an
        # integer min/max conditional reads the previous total twice)
        own = part(c2)
        update2 = phase2.body[0]
        assert isinstance(update2, ir.Assign)
        again = _Running(accum.Accumulation(update2, own, a.op, own, a.fn), 0, part(num(0)), own)
        middle, inner_parallel = _blocked(phase2, again, used, levels - 1, k)
        parallel += inner_parallel
    stmts = (alloc, *[s for s in middle if isinstance(s, ir.Alloc)], phase1,
             *[s for s in middle if not isinstance(s, ir.Alloc)], phase3, *after)
    return stmts, parallel


# ---------------------------------------------------------------------------
# Linear recurrences: x = A * x + B


@dataclasses.dataclass(frozen=True)
class _Linear:
    """A loop's first-order linear recurrence ``x = A(i) * x + B(i)``: the statement's index in the body,
    the value read as ``x`` (the scalar, or ``X[.., i + d - 1]``), the coefficients (``B`` None: 0),
    the entry value and, for a recurrence on an array, the element each iteration stores ``x`` in."""

    at: int
    stmt: ir.Assign
    read_as: ir.Expr
    coef: ir.Expr
    offset: ir.Expr | None
    entry: ir.Expr
    store: ir.Index | None


def _linear(e: ir.Expr, v: ir.Expr) -> tuple[ir.Expr | None, ir.Expr | None] | None:
    """``e`` as ``A * v + B`` (None for a zero part) through ``+``, ``-`` and ``*`` by factors free of
    ``v``, or None where ``e`` is not affine in ``v``."""
    if e == v:
        return ir.const(1.0, v.ty, loc=e.loc), None
    if not _mentions(e, v):
        return None, e
    if not (isinstance(e, ir.Binary) and e.ty == v.ty):
        return None
    if e.op in ("+", "-"):
        left, right = _linear(e.lhs, v), _linear(e.rhs, v)
        if left is None or right is None:
            return None
        return _sum(left[0], right[0], e.op), _sum(left[1], right[1], e.op)
    if e.op == "*" and _mentions(e.lhs, v) != _mentions(e.rhs, v):
        inner, factor = (e.lhs, e.rhs) if _mentions(e.lhs, v) else (e.rhs, e.lhs)
        got = _linear(inner, v)
        if got is None:
            return None
        return tuple(None if x is None else ir.binary("*", x, factor, loc=e.loc) for x in got)  # type: ignore[return-value]
    return None


def _sum(x: ir.Expr | None, y: ir.Expr | None, op: str) -> ir.Expr | None:
    """``x op y`` where None is 0."""
    if y is None:
        return x
    if x is None:
        return y if op == "+" else ir.unary("-", y, loc=y.loc)
    return ir.binary(op, x, y, loc=x.loc)


def _linear_running(loop: ir.For) -> _Linear | None:
    """The loop's linear recurrence, if its body has exactly one statement updating a float running value
    (a scalar declared outside the loop, or ``X[.., i + d]`` from ``X[.., i + d - 1]``) as an affine map
    of it whose coefficients read nothing the loop writes (but the stored element itself), and nothing
    else writes that value."""
    i = loop.var
    declared = {n.name for n in ir.statements(loop) if isinstance(n, ir.Decl)}
    found: list[_Linear] = []
    for at, st in enumerate(loop.body):
        if not isinstance(st, ir.Assign) or not st.target.ty.is_float:
            continue
        t = st.target
        read_as: ir.Expr | None = t if isinstance(t, ir.Var) else _previous(t, i)
        if read_as is None or not _mentions(st.value, read_as):
            continue
        got = _linear(st.value, read_as)
        if got is None or got[0] is None or got[1] is None:
            continue  # not affine, or a plain running product (the running-value scan's)
        if isinstance(t, ir.Var) and got[0] == ir.const(1.0, t.ty, loc=st.value.loc):
            continue  # a scalar's running sum: the running-value scan's, or reduce-gpu's where nobody reads it
        if isinstance(t, ir.Var):
            entry: ir.Expr = t
            store = None
        else:
            assert isinstance(read_as, ir.Index)
            entry, store = _fold_index(ir.substitute(read_as, {i: ir.cast(loop.lo, loop.ty)})), t
        found.append(_Linear(at, st, read_as, got[0], got[1], entry, store))
    if len(found) != 1:
        return None
    r = found[0]
    others = [st for k, st in enumerate(loop.body) if k != r.at]
    t = r.stmt.target
    if isinstance(t, ir.Var):
        if t.name in declared or any(t.name in ir.scalars_written(st) for st in others):
            return None
    elif any(isinstance(n, ir.Assign) and isinstance(n.target, ir.Index) and n.target.array == t.array
             for st in others for n in ir.walk(st)):
        return None
    return r if all(loop_invariant(e, loop, r.store) for e in (r.coef, r.offset) if e is not None) else None


def _blocked_linear(loop: ir.For, r: _Linear, used: set[str], k: int) -> tuple[tuple[ir.Stmt, ...], list[ir.For]]:
    """The blocked scan of a linear recurrence: each chunk composes its iterations' maps ``x -> A x + B``
    into one (parallel), the chunks' maps are composed in order (``n / K`` iterations, in one thread),
    and each chunk runs the body from the value the maps before it give (parallel)."""
    loc = loop.loc
    ty = r.stmt.target.ty
    c = _Chunks(loop, used, k)
    ity, fresh, num, chunks, inside, over_chunk = c.ity, c.fresh, c.num, c.count, c.inside, c.over

    def mul(x: ir.Expr, y: ir.Expr) -> ir.Expr:
        return ir.binary("*", x, y, loc=loc)

    def add(x: ir.Expr, y: ir.Expr) -> ir.Expr:
        return ir.binary("+", x, y, loc=loc)

    names = {"a": fresh("part_a"), "b": fresh("part_b")}
    allocs = tuple(ir.Alloc(n, ir.ArrayType(ty, (c.extent,)), loc=loc) for n in names.values())

    def part(which: str, at: ir.Expr) -> ir.Index:
        return ir.Index(names[which], (at,), ty, loc=loc)

    one, zero = ir.const(1.0, ty, loc=loc), ir.const(0.0, ty, loc=loc)
    # phase 1: each chunk's maps composed (the later map applied after the earlier)
    c1 = ir.Var(fresh("chunk"), ity, loc=loc)
    ma, mb, coef = (ir.Var(fresh(n), ty, loc=loc) for n in ("map_a", "map_b", "coef"))
    step = (ir.Decl(coef.name, ty, r.coef, loc=loc),
            ir.Assign(mb, mul(coef, mb) if r.offset is None else add(mul(coef, mb), r.offset), loc=loc),
            ir.Assign(ma, mul(coef, ma), loc=loc))
    phase1 = ir.For(c1.name, ity, num(0), chunks, 1, (
        ir.Decl(ma.name, ty, one, loc=loc), ir.Decl(mb.name, ty, zero, loc=loc),
        over_chunk(c1, (ir.If(inside, step, (), loc=loc),)),
        ir.Assign(part("a", c1), ma, loc=loc), ir.Assign(part("b", c1), mb, loc=loc),
    ), loc=loc)
    # phase 2: the chunks' maps composed in order (B before A: it needs the chunk's own A)
    c2 = ir.Var(fresh("chunk"), ity, loc=loc)
    before = ir.binary("-", c2, num(1), loc=loc)
    phase2 = ir.For(c2.name, ity, num(1), chunks, 1, (
        ir.Assign(part("b", c2), add(mul(part("a", c2), part("b", before)), part("b", c2)), loc=loc),
        ir.Assign(part("a", c2), mul(part("a", c2), part("a", before)), loc=loc),
    ), loc=loc)
    t = r.stmt.target
    after: tuple[ir.Stmt, ...] = ()
    if isinstance(t, ir.Var):  # the value after the loop: every chunk's map applied to the entry value
        last = ir.binary("-", chunks, num(1), loc=loc)
        after = (ir.If(ir.binary(">", chunks, num(0), loc=loc),
                       (ir.Assign(t, add(mul(part("a", last), t), part("b", last)), loc=loc),), (), loc=loc),)
    others = [st for n, st in enumerate(loop.body) if n != r.at]
    if r.store is None and not any(t in ir.walk(st) for st in others):
        return (*allocs, phase1, phase2, *after), [phase1]  # nothing reads it per iteration
    # phase 3: each chunk from the value the chunks before it give, the original body
    running = ir.Var(fresh("running"), ty, loc=loc)
    c3 = ir.Var(fresh("chunk"), ity, loc=loc)
    prior = ir.binary("-", c3, num(1), loc=loc)
    body: list[ir.Stmt] = []
    for n, st in enumerate(loop.body):
        if n == r.at:
            body.append(ir.Assign(running, _replace(r.stmt.value, r.read_as, running), loc=loc))
            if r.store is not None:
                body.append(ir.Assign(r.store, running, loc=loc))
        elif r.store is None:
            assert isinstance(t, ir.Var)
            body.append(ir.substitute(st, {t.name: running}))
        else:
            body.append(st)
    phase3 = ir.For(c3.name, ity, num(0), chunks, 1, (
        ir.Decl(running.name, ty, r.entry, loc=loc),
        ir.If(ir.binary(">", c3, num(0), loc=loc),
              (ir.Assign(running, add(mul(part("a", prior), running), part("b", prior)), loc=loc),), (), loc=loc),
        over_chunk(c3, (ir.If(inside, tuple(body), (), loc=loc),)),
    ), loc=loc)
    return (*allocs, phase1, phase2, phase3, *after), [phase1, phase3]
