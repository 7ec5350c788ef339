"""Loop interchange: move dependence-free loops outward, then order parallel loops for coalescing.

**Precondition**: valid IR (``ircheck.check``) without ``Launch`` regions (it runs
before ``map-gpu``); a kernel that already contains a ``Launch`` is returned
unchanged.

**Postcondition**: the same program in which some perfectly nested pairs
``for a { for b { S } }`` (reachable from the top level through loop bodies
alone) became ``for b { for a { S } }``.  A pair is swapped only when ``a``
carries a dependence, ``b`` carries none, ``b``'s bounds are side-effect and
fault free (no array reads, division or calls) and either do not read
``a``'s variable (rectangular) or are triangular in it (one bound ``a + c``:
:func:`_swap` rewrites both loops' bounds over the same iteration set), and
every dependence carried by ``a`` has direction
``=`` at ``b``'s level: the permuted direction vectors ``(=, <)`` stay
lexicographically positive (legal) and ``b`` still carries nothing in its new
place (so swaps never undo each other).  The dependence graph
(:func:`passes.deps.analyze`) is recomputed after every swap.

Then, for coalescing, each perfect chain of 2-3 parallel loops (unit step,
rectangular: no bound reads a chain variable, an array, a call or a
division) is permuted so that the loop map-gpu maps to ``threadIdx.x`` (the
innermost) is the one with the highest score, the others keeping their
order; ties keep the source order.  A loop's score sums the weights of the
accesses under the chain whose last (contiguous) subscript is affine with
coefficient +-1 in its variable; an access inside ``d`` further sequential
loops weighs ``8 ** d``.  Legal because no chain loop carries a dependence:
every dependence inside the nest is ``=`` at each chain level, which any
permutation keeps; the graph is recomputed on the permuted nest and the
permutation kept only if no chain loop carries a dependence there.  (A
parallel loop is never moved inward past a sequential one: it would leave
map-gpu's mapped prefix.)  ``for j { for i { A[i][j] = B[i][j] } }`` becomes
``for i { for j { ... } }``.

Before::

    for i in 0..ni {
      for k in 0..nk {
        for j in 0..nj {
          C[i][j] += alpha * A[i][k] * B[k][j];
        }
      }
    }

After::

    for i in 0..ni {
      for j in 0..nj {
        for k in 0..nk {
          C[i][j] += alpha * A[i][k] * B[k][j];
        }
      }
    }
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import networkx as nx

from passes import deps
from passes.accesses import affine, parameters
from passes.distribute import count
from transpile import ir


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with parallel loops moved outward, then permuted for coalescing, where legal."""
    if ir.is_mapped(kernel):
        return kernel  # mapped already (passes/closure.py): the precondition's promise, for _coalesce too
    kernel = deps.rewrite_to_fixpoint(kernel, lambda body, graph: _block(body, graph, [0], 0))
    return _coalesce(kernel)


def _block(body: tuple[ir.Stmt, ...], graph: nx.MultiDiGraph, counter: list[int],
           depth: int) -> tuple[ir.Stmt, ...] | None:
    """``body`` after the first legal, useful swap (outermost first), or None."""
    for n, s in enumerate(body):
        if not isinstance(s, ir.For):
            counter[0] += count(s)
            continue
        seq = counter[0]
        if _swappable(s, seq, graph, depth + 1):
            swapped = _swap(s)
            assert swapped is not None, f"not a swappable pair: {s!r}"
            return body[:n] + (swapped,) + body[n + 1:]
        counter[0] += 1
        new = _block(s.body, graph, counter, depth + 1)
        if new is not None:
            return body[:n] + (dataclasses.replace(s, body=new),) + body[n + 1:]
    return None


def _swappable(outer: ir.For, seq: int, graph: nx.MultiDiGraph, level: int) -> bool:
    """May (and should) ``outer`` (``S<seq>``, at 1-based ``level``) swap with its only child loop?"""
    if len(outer.body) != 1 or not isinstance(outer.body[0], ir.For):
        return False
    if _swap(outer) is None:
        return False
    outer_id, inner_id = f"S{seq}", f"S{seq + 1}"
    carried_by_outer = False
    for _, _, d in graph.edges(data=True):
        if d["loop"] == inner_id:
            return False  # the inner loop is not parallel: nothing to gain
        if d["loop"] == outer_id:
            carried_by_outer = True
            if len(d["direction"]) <= level or d["direction"][level] != "=":
                return False
    return carried_by_outer


def _swap(outer: ir.For) -> ir.For | None:
    """``for a { for b { S } }`` as ``for b { for a { S } }`` over the same iteration set, or None.

    Rectangular pairs (``b``'s bounds do not read ``a``) swap as they are.
    *Triangular* pairs, both steps 1, ``a`` in ``LA..HA``, with exactly one of
    ``b``'s bounds ``a + c`` (``c`` an integer) and the other plain:

    * ``b`` in ``LB..a + c``: the set is ``LA <= a < HA, LB <= b < a + c``;
      it is ``b`` in ``LB..HA + c - 1``, ``a`` in ``b - c + 1..HA`` when
      ``LA <= LB - c + 1`` (so ``a >= b - c + 1`` implies ``a >= LA``);
    * ``b`` in ``a + c..HB``: the set is ``a <= b - c, b < HB``; it is ``b``
      in ``LA + c..HB``, ``a`` in ``LA..b - c + 1`` when ``HB - c <= HA`` (so
      ``a <= b - c`` implies ``a < HA``).

    The side conditions are checked on integer constants, or on ``LA`` and
    ``LB`` (``HB`` and ``HA``) being the same expression; otherwise None.
    (symm: ``for i in 0..m { for k in 0..i }`` is ``for k in 0..m - 1 { for
    i in k + 1..m }``.)
    """
    if len(outer.body) != 1 or not isinstance(outer.body[0], ir.For):
        return None
    inner = outer.body[0]
    if plain_bounds(inner, {outer.var}):
        return dataclasses.replace(inner, body=(dataclasses.replace(outer, body=inner.body),))
    if outer.step != 1 or inner.step != 1 or not plain_bounds(outer, set()):
        return None
    lo_c, hi_c = _offset(inner.lo, outer.var), _offset(inner.hi, outer.var)
    if hi_c is not None and lo_c is None and plain_bounds(dataclasses.replace(inner, hi=inner.lo), {outer.var}):
        c = hi_c  # b in LB..a + c
        if not _at_most(outer.lo, inner.lo, 1 - c):
            return None
        b_lo, b_hi = inner.lo, _plus(outer.hi, c - 1)
        a_lo, a_hi = _plus(ir.Var(inner.var, inner.ty), 1 - c), outer.hi
    elif lo_c is not None and hi_c is None and plain_bounds(dataclasses.replace(inner, lo=inner.hi), {outer.var}):
        c = lo_c  # b in a + c..HB
        if not _at_most(inner.hi, outer.hi, c):
            return None
        b_lo, b_hi = _plus(outer.lo, c), inner.hi
        a_lo, a_hi = outer.lo, _plus(ir.Var(inner.var, inner.ty), 1 - c)
    else:
        return None
    new_outer = dataclasses.replace(outer, lo=a_lo, hi=a_hi, body=inner.body)
    return dataclasses.replace(inner, lo=b_lo, hi=b_hi, body=(new_outer,))


def _offset(e: ir.Expr, var: str) -> int | None:
    """``c`` when ``e`` is ``var + c`` (``var``, ``var + k``, ``k + var``, ``var - k``), else None."""
    if isinstance(e, ir.Var) and e.name == var:
        return 0
    if isinstance(e, ir.Binary) and e.op in ("+", "-"):
        lhs, rhs = e.lhs, e.rhs
        if isinstance(lhs, ir.Var) and lhs.name == var and isinstance(rhs, ir.Const) and isinstance(rhs.value, int):
            return rhs.value if e.op == "+" else -rhs.value
        if (e.op == "+" and isinstance(rhs, ir.Var) and rhs.name == var and isinstance(lhs, ir.Const)
                and isinstance(lhs.value, int)):
            return lhs.value
    return None


def _at_most(x: ir.Expr, y: ir.Expr, k: int) -> bool:
    """Provably ``x <= y + k``: integer constants, or the same expression and ``k >= 0``."""
    if isinstance(x, ir.Const) and isinstance(y, ir.Const) and isinstance(x.value, int) and isinstance(y.value, int):
        return x.value <= y.value + k
    return x == y and k >= 0


def _plus(e: ir.Expr, k: int) -> ir.Expr:
    """``e + k``, folded when ``e`` is a constant."""
    if k == 0:
        return e
    if isinstance(e, ir.Const) and isinstance(e.value, int):
        return ir.Const(e.value + k, e.ty)
    return ir.Binary("+" if k > 0 else "-", e, ir.Const(abs(k), e.ty), e.ty)


# --- Coalescing permutation -------------------------------------------------
# map-gpu maps the outermost perfectly nested parallel loops of a nest to
# z/y/x, innermost to threadIdx.x: neighbouring threads of a warp then differ
# in that loop's variable only, so an access is coalesced when that variable
# indexes the last (contiguous) dimension with coefficient +-1.


def _coalesce(kernel: ir.Kernel) -> ir.Kernel:
    """Permute perfect chains of parallel loops so the best-coalescing variable is innermost."""
    rejected: set[ir.For] = set()
    for _ in range(64):
        graph = deps.analyze_or_none(kernel)
        if graph is None:
            break
        params = parameters(kernel)
        carried = deps.carried_loops(graph)
        for path, seq, chain in _chains(kernel.body, [], [0], carried):
            if chain[0] in rejected:
                continue
            order = _best_order(chain, params)
            if order is not None:
                new = dataclasses.replace(kernel, body=put(kernel.body, path, _permuted(chain, order)))
                g2 = deps.analyze_or_none(new)
                # The proof: recomputed on the permuted nest, no chain loop carries a dependence.
                if g2 is not None and not {f"S{seq + k}" for k in range(len(chain))} & deps.carried_loops(g2):
                    kernel = new
                    break
            rejected.add(chain[0])
        else:
            break
    return kernel


def _chains(body: tuple[ir.Stmt, ...], path: list[int], counter: list[int],
            carried: set[str]) -> Iterator[tuple[list[int], int, list[ir.For]]]:
    """Yield ``(path, seq, chain)``: perfect chains (2-3 loops) of rectangular parallel loops."""
    for n, s in enumerate(body):
        if not isinstance(s, ir.For):
            counter[0] += count(s)
            continue
        seq = counter[0]
        chain = [s]
        while len(chain) < 3 and len(chain[-1].body) == 1 and isinstance(chain[-1].body[0], ir.For):
            chain.append(chain[-1].body[0])
        k = 0
        while k < len(chain) and chain[k].step == 1 and f"S{seq + k}" not in carried:
            k += 1
        chain = chain[:k]
        names = {lp.var for lp in chain}
        if len(chain) >= 2 and all(plain_bounds(lp, names) for lp in chain):
            yield path + [n], seq, chain
        counter[0] += 1
        yield from _chains(s.body, path + [n], counter, carried)


def plain_bounds(lp: ir.For, banned: set[str]) -> bool:
    """Bounds without array reads, calls or division (side-effect and fault free) that read none of ``banned``.

    With ``banned`` the variables of the enclosing loops being reordered, the
    loop's bounds are rectangular with respect to them (interchange, fuse).
    """
    for bound in (lp.lo, lp.hi):
        for x in ir.walk(bound):
            if isinstance(x, (ir.Index, ir.Call)) or (isinstance(x, ir.Var) and x.name in banned):
                return False
            if isinstance(x, ir.Binary) and x.op in ("/", "%"):
                return False
    return True


def _best_order(chain: list[ir.For], params: frozenset[str]) -> list[int] | None:
    """A new order of ``chain`` (indices, outermost first) with a better innermost loop, or None."""
    scores = _scores(chain, params)
    cur = len(chain) - 1
    best = max(range(len(chain)), key=lambda k: (scores[k], k))
    if scores[best] <= scores[cur]:
        return None  # ties keep the source order
    return [k for k in range(len(chain)) if k != best] + [best]


def _scores(chain: list[ir.For], params: frozenset[str]) -> list[int]:
    """Per chain loop: the weight of the accesses whose last subscript it indexes with stride +-1.

    An access inside ``d`` further (sequential) loops weighs ``8 ** d``: it runs
    about that many more times per thread.
    """
    names = {lp.var for lp in chain}
    scores = [0] * len(chain)

    def visit(stmts: tuple[ir.Stmt, ...], weight: int, scope: set[str]) -> None:
        for st in stmts:
            if isinstance(st, ir.For):
                visit(st.body, weight * 8, scope | {st.var})
                continue
            for x in ir.walk(st):
                if isinstance(x, ir.For):
                    continue
                if isinstance(x, ir.Index) and x.indices:
                    last = affine(x.indices[-1], params | scope)
                    if last is None:
                        continue
                    for k, lp in enumerate(chain):
                        if abs(last.coeff(lp.var)) == 1:
                            scores[k] += weight

    visit(chain[-1].body, 1, set(names))
    return scores


def _permuted(chain: list[ir.For], order: list[int]) -> ir.For:
    """The chain's loops in ``order`` (outermost first) around the innermost body."""
    nest: ir.Stmt | None = None
    for k in reversed(order):
        body = chain[-1].body if nest is None else (nest,)
        nest = dataclasses.replace(chain[k], body=body)
    assert isinstance(nest, ir.For)
    return nest


def put(body: tuple[ir.Stmt, ...], path: list[int], stmt: ir.Stmt, span: int = 1) -> tuple[ir.Stmt, ...]:
    """``body`` with the ``span`` statements starting at ``path`` (indices through loop bodies) replaced by ``stmt``."""
    n = path[0]
    if len(path) == 1:
        return body[:n] + (stmt,) + body[n + span:]
    loop = body[n]
    assert isinstance(loop, ir.For), f"path through a non-loop: {loop!r}"
    return body[:n] + (dataclasses.replace(loop, body=put(loop.body, path[1:], stmt, span)),) + body[n + 1:]
