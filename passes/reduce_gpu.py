"""Choose the reduction loops that become parallel GPU reductions: mark them ``reduce(op, ...)``.

A loop whose body is exactly accumulations ``x = x op e`` that
:mod:`passes.reductions` proves to be reductions over it (exact dependence
analysis) *may* be marked; this pass marks it when it pays, by a simple rule
(docs/parallelism.md, "Reductions"):

(a) **lone reduction**: no enclosing loop is parallel and at most one
    enclosing (sequential) loop, only ``For`` statements around it (trisolv's
    ``j`` in ``i``, durbin's ``i`` in ``k``, gramschmidt's ``nrm`` loop in
    ``k``).  map-gpu then launches it as one block of threads, and the
    enclosing loop becomes a host loop launching once per iteration.  The
    one-loop limit keeps the launch count linear in the problem size (not so
    ludcmp's LU part, two sequential loops deep: it stays single-thread).
(b) **row reductions**: the loop sits directly in the body of a parallel
    loop ``P`` that only ``For`` loops, none parallel, enclose (a 1-D
    parallel nest); every loop in ``P``'s body is such a reduction in which
    some term reads a matrix (rank >= 2) whose last, contiguous subscript
    uses the reduction variable and no term reads a matrix whose last
    subscript uses ``P``'s variable; ``P``'s other statements hold no loops;
    the reductions' terms and bounds read no scalar that ``P``'s body
    writes (atax ``tmp[i] = 0; for j { tmp[i] += A[i][j] * x[j] }``,
    gesummv, gemver's ``w``, bicg's ``q``); or, where terms read both along the rows and along the
    reduction, the reduction's bounds read an enclosing host loop's variable (a wavefront's diagonal:
    nussinov, :func:`_wavefront_rows`).  One thread per row reads with
    stride ``n``; one warp per row (``P`` over warps, the reductions over
    its lanes, the other statements on lane 0) reads each row with
    consecutive lanes: coalesced.  gemm-like 2-D nests, already coalesced
    reductions (bicg's ``s``, lu) and bodies mixing both kinds (mvt after
    fusion: ``x2`` reads ``A[j][i]``) are left alone.
(c) **column reductions**: the loop is the only loop in the body of such a
    1-D parallel nest ``P``, some term reads a matrix whose last subscript
    uses ``P``'s variable and none reads one whose last subscript uses the
    reduction variable (:func:`column_shape`: atax's ``y[j] += A[i][j] *
    tmp[i]``, bicg's ``s``, mvt's ``x2``, gemver's ``x``).  One thread per
    column already reads coalesced, but only ``n`` threads stream the whole
    matrix: ``n / 256`` blocks leave most SMs idle.  Marked, the launch
    becomes ``cols`` (:mod:`transpile.cuda.reduce`): 32 columns a block,
    32 threads down each column splitting the rows, partials folded in a
    fixed order: 32x the threads for the same coalesced reads.
(d) **sweeps**: a top-level 2-D nest ``for r { for c { ... } }`` whose body
    is only accumulations ``X[r] op= f`` (reduced over ``c``) and ``Y[c] op=
    g`` (reduced over ``r``), and maps ``M[r][c] = e``, with both kinds of
    accumulation or a map (:func:`sweep_shape`: bicg's ``s`` and ``q``,
    mvt's ``x1`` and ``x2``, gemver's update of ``A`` and ``x``, once
    :mod:`passes.fuse` has put them in one nest).  The *outer* loop is
    marked, with one operator per accumulation of the inner body (fuse marks
    the sweeps it makes; this pass keeps them); the launch becomes ``sweep``
    (:mod:`transpile.cuda.sweep`): one pass over the matrix produces both
    reductions, where a row and a column launch read it twice.
(e) **chains**: a top-level loop ``for r { Z[r] = e; ...; for c { X[r] op=
    f }; for c { Y[c] op= g } }`` whose second column loop reads the row
    reductions' results ``X[r]`` (:func:`chain_shape`: atax's ``tmp[i]`` and
    ``y[j] += A[i][j] * tmp[i]``, once :mod:`passes.fuse` has put the row and
    the column nest back in one loop).  The outer loop is marked with the
    operators of the ``Y`` statements (reduced over ``r``), the first column
    loop with those of the ``X`` statements (reduced over ``c``); the launch
    becomes ``chain`` (:mod:`transpile.cuda.chain`): a block finishes a row's
    ``X`` and adds the row's ``Y`` terms while the row is still in the
    cache, so the matrix crosses from memory once, where a row launch and a
    column launch read it twice.

Only loops of step +-1 are marked.  With ``reassociate=False`` float ``+``
and ``*`` reductions are not marked (their rounding would change); float
min/max and integer reductions are exact and still are.

**Precondition**: valid IR without ``Launch`` (runs before map-gpu; a mapped
kernel is returned unchanged, as is one isl cannot analyse).

**Postcondition**: valid IR; the chosen loops carry ``reduce`` with one
combining operator per body statement (``ircheck`` re-proves them).
Semantics are unchanged up to reassociation of the marked accumulations.

NOTE: this runs *before* map-gpu, not after it: whether an enclosing
sequential loop becomes a host loop depends on its body containing a parallel
launch, so map-gpu must already see the mark (it places a ``reduce`` loop with
host-computable bounds as its own launch).

Before::

    for i in 0..n {
      x[i] = b[i];
      for j in 0..i {
        x[i] -= L[i][j] * x[j];
      }
      x[i] = x[i] / L[i][i];
    }

After::

    for i in 0..n {
      x[i] = b[i];
      for j in 0..i reduce(+) {
        x[i] -= L[i][j] * x[j];
      }
      x[i] = x[i] / L[i][i];
    }
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import islpy as isl

from passes import deps, reductions
from transpile import ir
from transpile.ir import accum


def run(kernel: ir.Kernel, *, reassociate: bool = True) -> ir.Kernel:
    """``kernel`` with its profitable reduction loops marked ``reduce`` (see the module docstring)."""
    if ir.is_mapped(kernel):
        return kernel
    try:
        graph = deps.analyze(kernel)
        found = reductions.analyze(kernel)
    except isl.Error:
        return kernel
    ids = deps.loop_ids(kernel)
    parallel = set(ids.values()) - deps.carried_loops(graph)
    proven = reductions.Proven(kernel, found)
    chosen: dict[int, tuple[str, ...]] = {}
    replaced: dict[int, ir.For] = {}  # rule (e): a chain nest, marked on two loops

    def ops_of(loop: ir.For) -> tuple[str, ...] | None:
        """The operators if ``loop`` may be marked at all, else None."""
        if loop.step not in (1, -1) or loop.reduce:
            return None
        ops = proven.body_ops(loop)
        if ops is None or (not reassociate and not all(
                accum.exact(op, accum.accumulation(s).target.ty) for s, op in zip(loop.body, ops))):  # type: ignore[union-attr]
            return None
        return ops

    def is_parallel(lp: ir.For) -> bool:
        return ids[id(lp)] in parallel

    def nest_ops(nest: Sweep | Chain) -> list[tuple[ir.For, str]] | None:
        """Rules (d), (e): each accumulation's loop and operator, in program order; None unless every
        one is proven a reduction over its loop."""
        out = []
        for s, over in nest.accumulations():
            op = proven.op(over, s)
            if op is None or (not reassociate and not accum.exact(op, accum.accumulation(s).target.ty)):  # type: ignore[union-attr]
                return None
            out.append((over, op))
        return out

    def sweep_ops(loop: ir.For) -> tuple[str, ...] | None:
        """Rule (d): the operators of a sweep nest if every statement is proven over its loop."""
        sw = sweep_shape(loop)
        ops = None if sw is None else nest_ops(sw)
        return None if ops is None else tuple(op for _over, op in ops)

    def chain_marked(loop: ir.For) -> ir.For | None:
        """Rule (e): ``loop`` with its chain marks if every statement is proven over its loop."""
        ch = chain_shape(loop)
        ops = None if ch is None else nest_ops(ch)
        if ops is None:
            return None
        rows = dataclasses.replace(ch.rows, reduce=tuple(op for over, op in ops if over is ch.rows))
        body = tuple(rows if st is ch.rows else st for st in loop.body)
        return dataclasses.replace(loop, reduce=tuple(op for over, op in ops if over is ch.outer), body=body)

    def visit(body: tuple[ir.Stmt, ...], path: tuple[ir.Stmt, ...]) -> None:
        for s in body:
            if isinstance(s, ir.For) and not path:
                marked = chain_marked(s)
                if marked is not None:
                    if marked != s:  # fuse marks the chains it makes (see passes.fuse)
                        replaced[id(s)] = marked
                    continue
                ops = sweep_ops(s)
                if ops is not None:
                    if ops != s.reduce:  # fuse marks the sweeps it makes (see passes.fuse)
                        chosen[id(s)] = ops
                    continue
            if isinstance(s, ir.For):
                rows = _row_reductions(s, path, is_parallel, ops_of) or _column_reduction(
                    s, path, is_parallel, ops_of)
                if rows:
                    chosen.update(rows)
                    continue
                ops = ops_of(s)
                if ops is not None and _lone(path, is_parallel):
                    chosen[id(s)] = ops
                    continue
                visit(s.body, path + (s,))
            elif isinstance(s, ir.If):
                visit(s.then, path + (s,))
                visit(s.orelse, path + (s,))

    visit(kernel.body, ())
    if not chosen and not replaced:
        return kernel
    body = tuple(replaced.get(id(s), s) for s in kernel.body)  # chains sit at the top level only
    return dataclasses.replace(kernel, body=_mark(body, chosen))


def _lone(path: tuple[ir.Stmt, ...], is_parallel: Callable[[ir.For], bool]) -> bool:
    """Rule (a): at most one enclosing statement, a sequential loop (``path``: outermost first)."""
    return len(path) == 0 or (len(path) == 1 and isinstance(path[0], ir.For) and not is_parallel(path[0]))


def _row_reductions(par: ir.For, path: tuple[ir.Stmt, ...], is_parallel: Callable[[ir.For], bool],
                    ops_of: Callable[[ir.For], tuple[str, ...] | None]) -> dict[int, tuple[str, ...]]:
    """Rule (b) for the parallel loop ``par``: its reduction loops to mark, or {}."""
    batch = row_batch(par, path, is_parallel)
    if not is_parallel(par) or batch is None:
        return {}
    row_vars = (*(b.var for b in batch), par.var)
    out: dict[int, tuple[str, ...]] = {}
    for s in par.body:
        if not isinstance(s, ir.For):
            if any(isinstance(n, ir.For) for n in ir.walk(s)):
                return {}
            continue
        ops = ops_of(s)
        if ops is None:
            if not row_map(s, row_vars, is_parallel(s)):
                return {}
            continue  # a map over the row, between the reductions (softmax's exp and scaling)
        host_vars = {p.var for p in path if isinstance(p, ir.For) and not is_parallel(p)}
        if not (_uncoalesced_rows(s, row_vars) or _wavefront_rows(s, host_vars)):
            return {}
        out[id(s)] = ops
    return out


def _wavefront_rows(loop: ir.For, host_vars: set[str]) -> bool:
    """Rule (b) for reads mixed along the rows and along the reduction: some term reads a matrix with
    the reduction's variable in its last subscript, and the reduction's bounds read a variable of an
    enclosing host loop: a wavefront's diagonal (nussinov: ``table[i][k] + table[k + 1][w + i]`` for
    ``k`` in ``i + 1..w + i``, ``i`` in ``0..n - w``), whose rows get fewer as they get longer.  A
    thread per row reads one term along a row and the other down a column, and so does a warp per
    row, so the memory traffic is the same either way; but the late diagonals have a few long rows,
    which one thread each leaves to a few warps of the whole GPU, while a warp each runs 32 lanes."""
    if not (ir.var_names(loop.lo) | ir.var_names(loop.hi)) & host_vars:
        return False
    for st in loop.body:
        a = accum.accumulation(st)
        assert a is not None, st
        for n in ir.walk(a.term):
            if isinstance(n, ir.Index) and len(n.indices) >= 2 and loop.var in ir.var_names(n.indices[-1]):
                return True
    return False


BATCH_DEPTH = 2
"""Parallel loops at most around a row loop (rule (b)'s batches): with the row loop, the grid's x, y, z."""


def row_batch(par: ir.For, path: tuple[ir.Stmt, ...], is_parallel: Callable[[ir.For], bool]
              ) -> tuple[ir.For, ...] | None:
    """Rule (b)'s batch loops around the row loop ``par`` (``path``: its enclosing statements,
    outermost first), or None if ``path`` is not a row nest.  A row nest: sequential ``For`` loops
    (host loops), then at most :data:`BATCH_DEPTH` parallel loops, each one's body exactly the next
    loop (a perfect nest ending at ``par``).  The batch loops and ``par`` run as one space of rows
    (``softmax`` over ``j`` for every ``b`` and ``i``)."""
    if not all(isinstance(p, ir.For) for p in path):
        return None
    loops: tuple[ir.For, ...] = path  # type: ignore[assignment]
    cut = len(loops)
    while cut > 0 and is_parallel(loops[cut - 1]):
        cut -= 1
    batch = loops[cut:]
    if len(batch) > BATCH_DEPTH or any(is_parallel(p) for p in loops[:cut]):
        return None
    inner = (*batch[1:], par)
    if any(len(b.body) != 1 or b.body[0] is not nxt for b, nxt in zip(batch, inner)):
        return None
    names = {b.var for b in batch}
    if any(isinstance(n, ir.Var) and n.name in names for lp in inner for e in (lp.lo, lp.hi) for n in ir.walk(e)):
        return None  # a triangle of rows: not one rectangular space
    return batch


def row_map(loop: ir.For, row_vars: tuple[str, ...], parallel: bool) -> bool:
    """Rule (b)'s map loop: ``loop`` carries no dependence (``parallel``), has step +-1 and a loop-free
    body that writes no scalar declared outside it, and reads or writes a matrix along its last
    dimension with the loop's variable and never with one of ``row_vars`` (the row loop's and its
    batch loops' variables) there (its lanes' accesses are coalesced).  map-gpu runs it over the
    lanes of the row's warp (``par(lane)``)."""
    if not parallel or loop.step not in (1, -1) or any(isinstance(n, ir.For) for st in loop.body for n in ir.walk(st)):
        return False
    if ir.outer_scalars_written(loop):
        return False
    return _along_rows(ir.walk(loop), loop.var, row_vars)


def _along_rows(nodes: Iterable[ir.Node], var: str, row_vars: tuple[str, ...]) -> bool:
    """Some matrix access among ``nodes`` has ``var`` in its last (contiguous) subscript, and none has
    one of ``row_vars`` there: consecutive values of ``var`` read consecutive addresses of each row."""
    hot = False
    for n in nodes:
        if isinstance(n, ir.Index) and len(n.indices) >= 2:
            last = {v.name for v in ir.walk(n.indices[-1]) if isinstance(v, ir.Var)}
            if last & set(row_vars):
                return False
            hot = hot or var in last
    return hot


def _column_reduction(par: ir.For, path: tuple[ir.Stmt, ...], is_parallel: Callable[[ir.For], bool],
                      ops_of: Callable[[ir.For], tuple[str, ...] | None]) -> dict[int, tuple[str, ...]]:
    """Rule (c) for the parallel loop ``par``: its one column reduction loop to mark, or {}."""
    if not is_parallel(par) or not all(isinstance(p, ir.For) and not is_parallel(p) for p in path):
        return {}
    loop = column_shape(par)
    if loop is None:
        return {}
    ops = ops_of(loop)
    return {} if ops is None else {id(loop): ops}


def column_shape(par: ir.For) -> ir.For | None:
    """The column reduction loop of ``par``'s body (rule (c)), or None.

    ``par``'s body: loop-free ``Assign``/``If`` statements, exactly one ``For``
    whose body is accumulations, more loop-free statements.  The terms and the
    loop's bounds read no scalar the body writes; some term reads a matrix
    whose last subscript uses ``par``'s variable, none a matrix whose last
    subscript uses the loop's.  Shared by this pass (before map-gpu, whether
    ``par`` is parallel is the caller's question) and the emitter (on the
    mapped ``par(x)`` loop), so both agree on what becomes a ``cols`` launch.
    """
    loops = [s for s in par.body if isinstance(s, ir.For)]
    if len(loops) != 1 or loops[0].step not in (1, -1):
        return None
    loop = loops[0]
    for s in par.body:
        if s is not loop and (not isinstance(s, (ir.Assign, ir.If))
                              or any(isinstance(n, (ir.For, ir.Decl)) for n in ir.walk(s))):
            return None
    accs = [accum.accumulation(c) for c in loop.body]
    if not accs or any(a is None for a in accs):
        return None
    written = {n.target.name for n in ir.walk(par) if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var)}
    if any(isinstance(n, ir.Var) and n.name in written
           for e in (loop.lo, loop.hi, *(a.term for a in accs)) for n in ir.walk(e)):  # type: ignore[union-attr]
        return None
    hot = False
    for a in accs:
        for n in ir.walk(a.term):  # type: ignore[union-attr]
            if isinstance(n, ir.Index) and len(n.indices) >= 2:
                last = {v.name for v in ir.walk(n.indices[-1]) if isinstance(v, ir.Var)}
                if loop.var in last:
                    return None
                hot = hot or par.var in last
    return loop if hot else None


#: The scalar types `__shfl_sync` and `__shfl_down_sync` move (a warp reduction's accumulators, a row
#: program's broadcast scalars).
SHUFFLED = frozenset({ir.I32, ir.I64, ir.U32, ir.U64, ir.F32, ir.F64})


@dataclass(frozen=True)
class Sweep:
    """A sweep nest (rule (d)): ``outer`` (rows, variable ``r``) around ``inner`` (columns, ``c``).

    ``along[k]`` is ``'r'`` when statement ``k`` of ``inner``'s body accumulates
    into ``X[r]`` (a reduction over ``c``), ``'c'`` when into ``Y[c]`` (over ``r``),
    ``'map'`` when it assigns ``M[r][c]``.  The ``reduce`` mark on ``outer`` lists
    one operator per accumulation (maps have none).
    """

    outer: ir.For
    inner: ir.For
    along: tuple[str, ...]

    def accumulations(self) -> list[tuple[ir.Stmt, ir.For]]:
        """Each accumulation of the body with the loop it reduces over (``X[r]`` over ``c``,
        ``Y[c]`` over ``r``), in program order; maps are left out."""
        return [(s, self.inner if along == "r" else self.outer)
                for s, along in zip(self.inner.body, self.along) if along != "map"]


def sweep_shape(loop: ir.For) -> Sweep | None:
    """``loop`` as a sweep nest (rule (d)), or None.

    ``loop`` (r) holds exactly one loop (c); both have step 1 and rectangular
    bounds free of arrays, calls and division; neither is ``par``, ``c`` is not
    ``reduce``.  ``c``'s body is accumulations ``X[r] op= f`` and ``Y[c] op= g``
    (one-dimensional accumulators of 32- or 64-bit type, which warp shuffles
    take, subscripted by the bare loop variable) and *maps* ``M[r][c] = e``
    (the point's own element of a matrix: gemver's update of ``A``), into
    pairwise distinct arrays; no statement reads an accumulator, and a map's
    matrix is read only at ``[r][c]``, so the points are independent but for
    the accumulations.  At least one accumulation, and either both kinds or a
    map (one kind alone is rule (b) or (c)).  Every matrix a statement reads
    or maps has a last subscript free of ``r``, and one has ``c`` in it (a
    warp reads consecutive elements of a row).  Shared by this pass,
    ``ircheck`` (which also requires each accumulation proven a reduction over
    its loop) and the emitter (:mod:`transpile.cuda.sweep`).
    """
    from passes.interchange import plain_bounds

    if len(loop.body) != 1 or not isinstance(loop.body[0], ir.For):
        return None
    inner = loop.body[0]
    if (loop.step != 1 or inner.step != 1 or loop.par or inner.par or inner.reduce or not inner.body
            or not plain_bounds(loop, set()) or not plain_bounds(inner, {loop.var})):
        return None
    point = (ir.Var(loop.var, loop.ty), ir.Var(inner.var, inner.ty))
    along: list[str] = []
    reads: list[ir.Expr] = []
    accumulators: set[str] = set()
    maps: set[str] = set()
    for s in inner.body:
        if isinstance(s, ir.Assign) and isinstance(s.target, ir.Index) and s.target.indices == point:
            if s.target.array in maps | accumulators:
                return None
            along.append("map")
            maps.add(s.target.array)
            reads.append(s.value)
            continue
        a = accum.accumulation(s)
        if a is None or not isinstance(a.target, ir.Index) or len(a.target.indices) != 1 or \
                a.target.ty not in SHUFFLED:
            return None
        sub = a.target.indices[0]
        if not isinstance(sub, ir.Var) or sub.name not in (loop.var, inner.var) or \
                a.target.array in maps | accumulators:
            return None
        along.append("r" if sub.name == loop.var else "c")
        accumulators.add(a.target.array)
        reads.append(a.term)
    kinds = set(along)
    if not kinds & {"r", "c"} or not ({"r", "c"} <= kinds or "map" in kinds):
        return None
    hot = "map" in kinds  # a map's element [r][c] runs along c
    for e in reads:
        for n in ir.walk(e):
            if isinstance(n, ir.Index) and (n.array in accumulators or (n.array in maps and n.indices != point)):
                return None
            if isinstance(n, ir.Index) and len(n.indices) >= 2:
                last = {v.name for v in ir.walk(n.indices[-1]) if isinstance(v, ir.Var)}
                if loop.var in last:
                    return None
                hot = hot or inner.var in last
    return Sweep(loop, inner, tuple(along)) if hot else None


@dataclass(frozen=True)
class Chain:
    """A chain nest (rule (e)): ``outer`` (rows, variable ``r``) holding the loop-free statements
    ``pre`` (``Z[r] = e``), then ``rows`` (a column loop of accumulations ``X[r] op= f``), then
    ``cols`` (a column loop of accumulations ``Y[c] op= g`` whose terms may read ``X[r]`` and
    ``Z[r]``).  The ``reduce`` mark of ``outer`` lists the operators of ``cols``'s statements
    (reduced over ``r``), that of ``rows`` the operators of its own (reduced over ``c``)."""

    outer: ir.For
    pre: tuple[ir.Assign, ...]
    rows: ir.For
    cols: ir.For

    def accumulations(self) -> list[tuple[ir.Stmt, ir.For]]:
        """Each accumulation with the loop it reduces over: ``X[r]`` over ``rows``, ``Y[c]`` over
        ``outer``."""
        return [(s, self.rows) for s in self.rows.body] + [(s, self.outer) for s in self.cols.body]


def chain_shape(loop: ir.For) -> Chain | None:
    """``loop`` as a chain nest (rule (e)), or None.

    ``loop`` (r): step 1, rectangular bounds free of arrays, calls and
    division, not ``par``.  Its body: loop-free assignments ``Z[r] = e`` to
    one-dimensional arrays subscripted by the bare ``r`` (the *pre*
    statements), then exactly two loops of step 1, not ``par``, whose bounds
    are free of ``r`` (and of arrays, calls and division): ``rows``, whose
    body is accumulations ``X[r] op= f``, and ``cols``, whose body is
    accumulations ``Y[c] op= g`` (``c`` its own variable), all of 32- or
    64-bit types (warp shuffles take them) into pairwise distinct arrays,
    ``Y`` distinct from every ``X`` and ``Z``.  What each part reads:

    * ``e`` and ``f`` read no array the nest writes (so a row's ``X`` and ``Z``
      are final once its ``rows`` loop is done, and no row sees another row's);
    * ``g`` reads no ``Y`` and reads the ``X`` and ``Z`` arrays only at ``[r]``
      (the row's own, final values);
    * every matrix (rank >= 2) read has a last subscript free of ``r``; one
      read by ``rows`` and one read by ``cols`` have their loop's variable in
      it (both loops stream rows of a matrix, coalesced), and the two loops
      read some matrix in common (what makes one pass worth it).

    So each ``Y[c]`` receives one term per row, computed from values final in
    that row: reordering the rows reassociates ``Y``'s sums and changes nothing
    else.  Shared by this pass, ``ircheck`` (which also requires each
    accumulation proven a reduction over its loop), ``passes.fuse`` (which
    forms the nests) and the emitter (:mod:`transpile.cuda.chain`).
    """
    from passes.interchange import plain_bounds

    body = loop.body
    if loop.step != 1 or loop.par or len(body) < 2 or not plain_bounds(loop, set()):
        return None
    rows, cols = body[-2], body[-1]
    pre = body[:-2]
    if not isinstance(rows, ir.For) or not isinstance(cols, ir.For):
        return None
    for lp in (rows, cols):
        if lp.step != 1 or lp.par or not lp.body or not plain_bounds(lp, {loop.var}):
            return None
    r = ir.Var(loop.var, loop.ty)
    written: set[str] = set()
    pres: list[ir.Assign] = []
    for st in pre:
        if not isinstance(st, ir.Assign) or not isinstance(st.target, ir.Index) or \
                st.target.indices != (r,) or any(isinstance(n, (ir.For, ir.Decl)) for n in ir.walk(st)):
            return None
        pres.append(st)
        written.add(st.target.array)

    def accs(lp: ir.For, sub: str) -> list[accum.Accumulation] | None:
        out = []
        for st in lp.body:
            a = accum.accumulation(st)
            if a is None or not isinstance(a.target, ir.Index) or len(a.target.indices) != 1 or \
                    a.target.ty not in SHUFFLED or not isinstance(a.target.indices[0], ir.Var) or \
                    a.target.indices[0].name != sub:
                return None
            out.append(a)
        return out

    xs, ys = accs(rows, loop.var), accs(cols, cols.var)
    if xs is None or ys is None:
        return None
    x_arrays = [a.target.array for a in xs]  # type: ignore[union-attr]
    y_arrays = [a.target.array for a in ys]  # type: ignore[union-attr]
    if len(set(x_arrays)) != len(x_arrays) or len(set(y_arrays)) != len(y_arrays):
        return None
    written |= set(x_arrays)
    if written & set(y_arrays):
        return None
    own = written
    written = written | set(y_arrays)

    def matrices(e: ir.Expr, var: str) -> set[str] | None:
        """The matrices ``e`` reads with ``var`` in their last subscript; None if some matrix's
        last subscript reads ``r``."""
        hot: set[str] = set()
        for n in ir.walk(e):
            if isinstance(n, ir.Index) and len(n.indices) >= 2:
                last = {v.name for v in ir.walk(n.indices[-1]) if isinstance(v, ir.Var)}
                if loop.var in last:
                    return None
                if var in last:
                    hot.add(n.array)
        return hot

    for st in pres:
        if any(isinstance(n, ir.Index) and n.array in written for n in ir.walk(st.value)):
            return None
    row_hot: set[str] = set()
    for a in xs:  # type: ignore[union-attr]
        if any(isinstance(n, ir.Index) and n.array in written for n in ir.walk(a.term)):
            return None
        m = matrices(a.term, rows.var)
        if m is None:
            return None
        row_hot |= m
    col_hot: set[str] = set()
    for a in ys:  # type: ignore[union-attr]
        for n in ir.walk(a.term):
            if isinstance(n, ir.Index) and n.array in written and (n.array not in own or n.indices != (r,)):
                return None
        m = matrices(a.term, cols.var)
        if m is None:
            return None
        col_hot |= m
    if not row_hot & col_hot:
        return None
    return Chain(loop, tuple(pres), rows, cols)


def _uncoalesced_rows(loop: ir.For, row_vars: tuple[str, ...]) -> bool:
    """Some matrix read's last subscript uses ``loop``'s variable, none uses one of ``row_vars``."""
    terms = []
    for s in loop.body:
        a = accum.accumulation(s)
        assert a is not None, s
        terms.append(a.term)
    return _along_rows((n for t in terms for n in ir.walk(t)), loop.var, row_vars)


def _mark(body: tuple[ir.Stmt, ...], chosen: dict[int, tuple[str, ...]]) -> tuple[ir.Stmt, ...]:
    out: list[ir.Stmt] = []
    for s in body:
        if isinstance(s, ir.For):
            if id(s) in chosen:
                s = dataclasses.replace(s, reduce=chosen[id(s)])
            else:
                s = dataclasses.replace(s, body=_mark(s.body, chosen))
        elif isinstance(s, ir.If):
            s = dataclasses.replace(s, then=_mark(s.then, chosen), orelse=_mark(s.orelse, chosen))
        out.append(s)
    return tuple(out)
