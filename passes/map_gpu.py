"""Map a kernel onto the GPU: host scalar code, host loops, single-thread and parallel launches.

**Precondition**: valid IR (``ircheck.check``).  A kernel that already contains a
``Launch`` is taken as mapped and returned unchanged (the same object).

**Postcondition**: every top-level statement, and every statement of a host
loop's body, is either

* a *host statement*: a scalar ``Decl``/``Assign``/``If``/``Trap`` that touches no array
  and reads and writes only *host scalars* (scalar params, ``Decl`` statements
  and loop variables of host code never written inside a ``Launch``); or a
  bare top-level ``Decl`` (no initialiser) of a *device scalar*, i.e. a
  top-level scalar written inside some ``Launch`` (the emitter keeps it in
  device memory); or a top-level ``Alloc`` (the host allocates the local
  array in device memory; its extents must not read a scalar already changed
  on the device, else :class:`TranspileError`); or
* a *host loop*: a sequential ``For`` whose bounds read only host scalars and
  whose body, mapped the same way, contains at least one parallel launch
  (e.g. a stencil's time loop); it launches its kernels once per iteration; or
* a ``Launch``: either one ``For`` nest whose outermost perfectly nested loops
  (up to 3) are ``par`` (innermost ``x``, then ``y``, ``z``), or one loop
  marked ``reduce`` by :mod:`passes.reduce_gpu` with host-computable bounds
  (a parallel reduction, one block; it counts as a parallel launch, so an
  enclosing loop may become a host loop), or a run of consecutive statements
  executed by one GPU thread.

Top-level ``Decl`` statements of device scalars used by only one ``Launch`` move into it
as launch-local variables.  Program order is preserved.  Placement is a
fixpoint: a scalar written by a device statement is a device scalar, and
host code (statements, host-loop bounds) touching one moves to the device.

The parallelism test is :func:`_parallel`: a loop is mapped only if the
exact dependence analysis (:mod:`passes.deps`, isl) finds no dependence
carried by it, it has unit step, and its bounds are computable on the host
(rectangular, host scalars and enclosing host-loop variables only).  Scalars
declared inside the loop body are private to an iteration; any other scalar
written in the loop is a carried dependence.  A loop carrying a dependence
with no parallel nest inside stays one single-thread launch.  *Scatter
updates* (2026-12-06): a loop whose only carried dependences are updates
``A[f] += e`` of arrays accessed no other way in it (a histogram) is mapped
too, marked ``atomic(A, ...)``, and the emitter makes those updates atomic
(:mod:`passes.atomics`: the rule and why it is sound; float arrays only with
``reassociate``; none with ``atomics=False``, the naive baseline).

Before::

    kernel scale(i32 n, f64 a, inout f64 x[n], out f64 s[1]) {
      f64 c = a * 2.0;
      for i in 0..n {
        x[i] *= c;
      }
      f64 t = 0.0;
      for i in 0..n {
        t += x[i];
      }
      s[0] = t;
    }

After::

    kernel scale(i32 n, f64 a, inout f64 x[n], out f64 s[1]) {
      f64 c = a * 2.0;
      launch {
        for i in 0..n par(x) {
          x[i] *= c;
        }
      }
      launch {
        f64 t = 0.0;
        for i in 0..n {
          t += x[i];
        }
        s[0] = t;
      }
    }
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from passes import accesses, deps
from transpile import ir
from transpile.diagnostics import TranspileError

#: ``par`` dimension names, innermost first.
_DIMS = ("x", "y", "z")


def run(kernel: ir.Kernel, *, atomics: bool = True, reassociate: bool = True) -> ir.Kernel:
    """Group ``kernel``'s top-level statements into host code, host loops and ``Launch`` regions.
    ``atomics``: loops whose only carried dependences are scatter updates are parallel, their
    updates atomic (float ones only with ``reassociate``)."""
    if ir.is_mapped(kernel):
        return kernel
    # NOTE: loop ids are keyed by node identity, so they must be computed on
    # this very kernel object, before any rebuilding below.
    ids = deps.loop_ids(kernel)
    graph = deps.analyze_or_none(kernel)
    # Without an answer from isl, every loop is assumed to carry a dependence.
    parallel = frozenset(ids.values()) - deps.carried_loops(graph) if graph is not None else frozenset()
    scatter: dict[str, tuple[str, ...]] = {}
    if atomics and graph is not None:
        from passes import atomics as atomics_mod

        for lp in (n for n in ir.walk(kernel) if isinstance(n, ir.For) and not n.reduce):
            lid = ids[id(lp)]
            if lid not in parallel:
                arrays = atomics_mod.scatter_arrays(lp, reassociate=reassociate)
                if arrays and atomics_mod.carried_only_on(graph, lid, arrays):
                    scatter[lid] = arrays
    planner = _Planner(kernel, lambda lp: ids[id(lp)] in parallel or ids[id(lp)] in scatter,
                       lambda lp: scatter.get(ids[id(lp)], ()))
    items = planner.plan()
    if not any(it.kind != "host" for it in items):
        return kernel
    body = _join_serial(tuple(_build(items, top=True)))
    return dataclasses.replace(kernel, body=body)


def _join_serial(body: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
    """``body`` (and its host loops) with each single-thread launch right before or after a
    one-block reduction launch moved into it, run by the reduction's thread 0 before and after
    the reduction: two launches fewer for a host loop's ``s = 0; for j reduce { s += .. }; x = s``
    (gramschmidt's norm, ludcmp's substitutions, durbin's sum).  Statements before the
    reduction may not write a scalar its bounds or terms read (the other threads would not see
    it; arrays they may write: the reduction's first barrier orders them).  Single-thread
    launches with a loop or a declaration stay apart."""
    out: list[ir.Stmt] = []
    for s in body:
        if isinstance(s, ir.For) and s.par is None and ir.has_launch(s):
            inner = _join_serial(s.body)
            s = s if inner == s.body else dataclasses.replace(s, body=inner)
        out.append(s)
    n = 0
    while n < len(out):
        red = out[n]
        loop = block_reduction(red)
        if loop is None:
            n += 1
            continue
        assert isinstance(red, ir.Launch)
        pre, post = red.body[:red.body.index(loop)], red.body[red.body.index(loop) + 1:]
        if n > 0 and not pre and _serial(out[n - 1]) and not (
                _written_scalars(out[n - 1]) & (_reads(loop.lo) | _reads(loop.hi) | _term_reads(loop))):
            pre = out[n - 1].body  # type: ignore[union-attr]
            del out[n - 1]
            n -= 1
        if n + 1 < len(out) and not post and _serial(out[n + 1]):
            post = out[n + 1].body  # type: ignore[union-attr]
            del out[n + 1]
        out[n] = dataclasses.replace(red, body=(*pre, loop, *post))
        n += 1
    return tuple(out)


def _serial(s: ir.Stmt) -> bool:
    """A single-thread launch of assignments and branches only."""
    return isinstance(s, ir.Launch) and _plain(s.body)


def _plain(stmts: tuple[ir.Stmt, ...]) -> bool:
    """Assignments and branches only (no loop, declaration, return or launch anywhere in them)."""
    return all(isinstance(c, (ir.Assign, ir.If)) and not any(
        isinstance(x, (ir.For, ir.Decl, ir.Return, ir.Launch)) for x in ir.walk(c)) for c in stmts)


def block_reduction(s: ir.Stmt) -> ir.For | None:
    """The reduce loop of a one-block reduction launch (not a sweep or chain) whose accumulators
    are scalars, if ``s`` is one (maybe already joined with single-thread statements)."""
    if not isinstance(s, ir.Launch):
        return None
    loops = [c for c in s.body if isinstance(c, ir.For)]
    if len(loops) != 1 or not loops[0].reduce or loops[0].par is not None:
        return None
    loop = loops[0]
    if not _plain(tuple(c for c in s.body if c is not loop)):
        return None
    from passes.reduce_gpu import chain_shape, sweep_shape

    if sweep_shape(loop) is not None or chain_shape(loop) is not None:
        return None
    if not all(isinstance(c, ir.Assign) and isinstance(c.target, ir.Var) for c in loop.body):
        return None
    return loop


def _written_scalars(s: ir.Stmt) -> set[str]:
    return {n.target.name for n in ir.walk(s) if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var)}


def _term_reads(loop: ir.For) -> set[str]:
    """Scalars a reduce loop's terms read (its accumulators excluded: thread 0 alone holds them)."""
    from transpile.ir import accum

    out: set[str] = set()
    for c in loop.body:
        a = accum.accumulation(c)
        out |= _reads(a.term) if a is not None else _reads(c)
    return out


@dataclasses.dataclass
class _Item:
    """One statement's placement: ``host``, ``launch`` (``par``: a parallel nest) or ``loop`` (a host loop)."""

    kind: str
    stmts: list[ir.Stmt]
    par: bool = False
    loop: ir.For | None = None
    inner: list[_Item] = dataclasses.field(default_factory=list)


class _Planner:
    """Decides placement to a fixpoint over device scalars and rejected host loops.

    A scalar written by a device statement is a device scalar; a host
    statement (or a host loop's bounds) touching one moves to the device.  A
    host loop is rejected (becomes device code) when a scalar declared in its
    body would have to be shared between items.
    """

    def __init__(self, kernel: ir.Kernel, independent: Callable[[ir.For], bool],
                 atomic: Callable[[ir.For], tuple[str, ...]] = lambda lp: ()) -> None:
        self.kernel = kernel
        self.independent = independent
        self.atomic = atomic  # the arrays a loop independent only with atomic updates updates
        self.top = _top_scalars(kernel)
        self.device_scalars: set[str] = set()
        self.rejected: set[int] = set()

    def plan(self) -> list[_Item]:
        while True:
            items = self._block(self.kernel.body, frozenset(self.top), top=True)
            written: set[str] = set()
            _device_writes(items, written)
            before = (len(self.device_scalars), len(self.rejected))
            self.device_scalars |= written & self._candidates()
            if (len(self.device_scalars), len(self.rejected)) == before:
                break
        self._check_allocs(items)
        return items

    def _candidates(self) -> set[str]:
        names = set(self.top)
        for n in ir.walk(self.kernel):
            if isinstance(n, ir.Decl):
                names.add(n.name)
        return names

    def _block(self, body: tuple[ir.Stmt, ...], visible: frozenset[str], *, top: bool) -> list[_Item]:
        items: list[_Item] = []
        host = visible - self.device_scalars
        for stmt in body:
            if isinstance(stmt, ir.Alloc) or (
                    _host_shaped(stmt) and not (_reads(stmt) | ir.scalars_written(stmt)) & self.device_scalars):
                items.append(_Item("host", [stmt]))
                if isinstance(stmt, ir.Decl):
                    visible = visible | {stmt.name}
                    host = visible - self.device_scalars
                continue
            if isinstance(stmt, ir.For):
                nest = _mark_parallel(stmt, host, self.independent, self.atomic)
                if nest is not None:
                    items.append(_Item("launch", [nest], par=True))
                    continue
                if stmt.reduce and _host_bounds(stmt, host):
                    # A parallel reduction (passes.reduce_gpu): its own launch of one block.
                    items.append(_Item("launch", [stmt], par=True))
                    continue
                loop = self._host_loop(stmt, visible, host)
                if loop is not None:
                    items.append(loop)
                    continue
            trap = next((n for n in ir.statements(stmt) if isinstance(n, ir.Trap)), None)
            if trap is not None:  # host code only (ir.Trap): here it reads a scalar computed on the GPU
                names = sorted(_reads(stmt) & self.device_scalars)
                raise TranspileError(trap.loc, "a run-time error check reading "
                                               f"'{names[0] if names else '?'}', a scalar computed on the GPU, "
                                               "is not supported")
            if items and items[-1].kind == "launch" and not items[-1].par:
                items[-1].stmts.append(stmt)
            else:
                items.append(_Item("launch", [stmt]))
            if isinstance(stmt, ir.Decl):
                visible = visible | {stmt.name}
        return items

    def _host_loop(self, stmt: ir.For, visible: frozenset[str], host: frozenset[str]) -> _Item | None:
        """``stmt`` as a host loop launching its parallel inner nests, if that pays and is sound."""
        if id(stmt) in self.rejected:
            return None
        for bound in (stmt.lo, stmt.hi):
            if not _scalar_only(bound) or not _reads(bound) <= host:
                return None
        inner = self._block(stmt.body, visible | {stmt.var}, top=False)
        if not _has_parallel(inner):
            return None
        # A scalar declared in the body on the device must stay within its launch.
        for n, it in enumerate(inner):
            if it.kind != "launch":
                continue
            others = [s for m, other in enumerate(inner) if m != n for s in _item_stmts(other)]
            used = set().union(*(_names(s) for s in others)) if others else set()
            if any(isinstance(s, ir.Decl) and s.name in used for s in it.stmts):
                self.rejected.add(id(stmt))
                return None
        return _Item("loop", [stmt], loop=stmt, inner=inner)

    def _check_allocs(self, items: list[_Item]) -> None:
        written: set[str] = set()
        for it in items:
            if it.kind != "host":
                written |= _writes_all(it) & self.device_scalars
            s = it.stmts[0]
            if it.kind == "host" and isinstance(s, ir.Alloc) and _reads(s) & written:
                # The host allocates local arrays, so it must know their extents.
                raise TranspileError(s.loc, f"the extent of local array '{s.name}' depends on a scalar "
                                            "computed on the GPU; not supported")


def _item_stmts(it: _Item) -> list[ir.Stmt]:
    return it.stmts


def _writes_all(it: _Item) -> set[str]:
    return set().union(*(ir.scalars_written(s) for s in it.stmts))


def _device_writes(items: list[_Item], out: set[str]) -> None:
    """Scalars written by device statements under ``items``."""
    for it in items:
        if it.kind == "launch":
            out |= _writes_all(it)
        elif it.kind == "loop":
            _device_writes(it.inner, out)


def _has_parallel(items: list[_Item]) -> bool:
    return any(it.par or (it.kind == "loop" and _has_parallel(it.inner)) for it in items)


def _build(items: list[_Item], *, top: bool) -> list[ir.Stmt]:
    """The statements of a mapped block: host statements, host loops and ``Launch`` regions."""
    body: list[ir.Stmt] = []
    # The names each item's statements use, and in how many items each name occurs: a name is
    # used outside item n when it occurs in more items than n alone (one pass, not one per launch).
    item_names = [set().union(*(_names(s) for s in it.stmts)) for it in items] if top else []
    occurs: dict[str, int] = {}
    for names in item_names:
        for x in names:
            occurs[x] = occurs.get(x, 0) + 1
    for n, it in enumerate(items):
        if it.kind == "host":
            body.extend(it.stmts)
            continue
        if it.kind == "loop":
            assert it.loop is not None
            body.append(dataclasses.replace(it.loop, body=tuple(_build(it.inner, top=False))))
            continue
        launch_body: list[ir.Stmt] = []
        for s in it.stmts:
            if isinstance(s, ir.Decl) and top and occurs.get(s.name, 0) > (s.name in item_names[n]):
                # A device scalar shared between launches: declared on the host
                # (the emitter allocates it), initialised inside this launch.
                body.append(dataclasses.replace(s, init=None))
                if s.init is not None:
                    launch_body.append(ir.Assign(ir.Var(s.name, s.ty, loc=s.loc), s.init, loc=s.loc))
            else:
                launch_body.append(s)
        body.append(ir.Launch(tuple(launch_body), loc=it.stmts[0].loc))
    return body


def _top_scalars(kernel: ir.Kernel) -> set[str]:
    """Scalar parameters and top-level ``Decl`` statements: the candidates for host scalars."""
    names = {p.name for p in kernel.params if isinstance(p.ty, ir.Scalar)}
    names |= {s.name for s in kernel.body if isinstance(s, ir.Decl)}
    return names


def _host_shaped(s: ir.Stmt) -> bool:
    """Whether ``s`` is scalar code the host can run: Decl/Assign/If without array accesses."""
    if isinstance(s, ir.Alloc):
        return True  # a declaration: the host allocates the array in device memory
    if isinstance(s, ir.Decl):
        return s.init is None or _scalar_only(s.init)
    if isinstance(s, ir.Assign):
        return isinstance(s.target, ir.Var) and _scalar_only(s.value)
    if isinstance(s, ir.If):
        return _scalar_only(s.cond) and all(_host_shaped(t) for t in s.then + s.orelse)
    return isinstance(s, ir.Trap)  # the host stops the function


def _scalar_only(e: ir.Expr) -> bool:
    return not any(isinstance(n, ir.Index) for n in ir.walk(e))


def _reads(node: ir.Node) -> set[str]:
    """Names of the scalar variables read under ``node`` (assignment targets excluded)."""
    out: set[str] = set()
    stack: list[ir.Node] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ir.Var):
            out.add(n.name)
        elif isinstance(n, ir.Assign) and isinstance(n.target, ir.Var):
            stack.append(n.value)
            continue
        stack.extend(ir.children(n))
    return out


def _names(node: ir.Node) -> set[str]:
    """Every scalar variable name referenced or declared under ``node``."""
    out = {n.name for n in ir.walk(node) if isinstance(n, (ir.Var, ir.Decl))}
    return out | {n.var for n in ir.walk(node) if isinstance(n, ir.For)}


def _mark_parallel(nest: ir.For, host_scalars: frozenset[str], independent: Callable[[ir.For], bool],
                   atomic: Callable[[ir.For], tuple[str, ...]] = lambda lp: ()) -> ir.For | None:
    """``nest`` with its outermost provably parallel perfectly nested loops marked ``par`` (and
    ``atomic(...)``, those parallel only with atomic updates: ``atomic``).

    A loop parallel only with atomic updates joins the grid only below loops of that kind: where a
    loop outside it is parallel on its own, the nest already has parallelism without atomics (symm's
    triangular update of ``C[k][j]`` over ``i`` stays each thread's loop, a tiled product's
    reduction, not a grid of contended float atomics).

    None if not even the outermost loop can be marked.
    """
    chain = [nest]
    while len(chain) < len(_DIMS) and len(chain[-1].body) == 1 and isinstance(chain[-1].body[0], ir.For):
        chain.append(chain[-1].body[0])

    def joins(loop: ir.For, outer: list[ir.For]) -> bool:
        return not atomic(loop) or all(atomic(lp) for lp in outer)

    depth = 0
    for loop in chain:
        # NOTE: a loop reduce-gpu marked is launched as its reduction, even where it carries nothing
        # (a sweep of maps and row accumulations: its warps read the rows coalesced).
        if loop.reduce or not _parallel(loop, host_scalars, independent) or not joins(loop, chain[:depth]):
            break
        depth += 1
    if 0 < depth < len(chain) and not chain[depth].reduce and joins(chain[depth], chain[:depth]) \
            and triangular(chain[depth], chain[:depth], host_scalars) \
            and _parallel(chain[depth], host_scalars | {lp.var for lp in chain[:depth]}, independent):
        depth += 1  # a triangular innermost loop joins the grid
    if depth == 0:
        return None

    def mark(loop: ir.For, level: int) -> ir.For:
        body = loop.body if level == depth - 1 else (mark(loop.body[0], level + 1),)  # type: ignore[arg-type]
        return dataclasses.replace(loop, body=body, par=_DIMS[depth - 1 - level], atomic=atomic(loop))

    marked = mark(nest, 0)
    rows = chain[depth - 1]
    if any(isinstance(c, ir.For) and c.reduce for c in rows.body):
        # Row reductions (reduce-gpu's rule (b)), the outer par loops a batch of rows: the maps
        # between the reductions run over the row's warp.
        from passes.reduce_gpu import row_map

        row_vars = tuple(lp.var for lp in chain[:depth])

        def lanes(loop: ir.For, level: int) -> ir.For:
            if level < depth - 1:
                return dataclasses.replace(loop, body=(lanes(loop.body[0], level + 1),))  # type: ignore[arg-type]
            body = tuple(dataclasses.replace(c, par="lane")
                         if isinstance(c, ir.For) and not c.reduce and independent(c) and row_map(c, row_vars, True)
                         else c for c in loop.body)
            return dataclasses.replace(loop, body=body)

        marked = lanes(marked, 0)
    return marked


def triangular(loop: ir.For, outer: Sequence[ir.For], host_scalars: frozenset[str]) -> bool:
    """Whether ``loop`` may be the innermost ``par`` loop inside the par loops ``outer`` although its
    bounds read their variables (a triangle, a band): the bounds are affine forms (integer
    coefficients) of the outer par variables and host integer scalars, the outer loops' own bounds
    read no par variable (so each trip count is largest at an end of the outer ranges: the host
    sizes the grid from there), and ``loop``'s body holds no loop: an elementwise update such as
    cholesky's trailing ``A[i][j] -= A[i][k] * A[j][k]`` for ``j`` in ``k + 1..i``.  A body with a loop
    (a matmul-like row, syrk's ``j <= i``) stays each thread's sequential loop, where
    ``passes.tile``'s triangular plans take it."""
    names = {lp.var for lp in outer}
    if loop.step != 1 or any(isinstance(n, ir.For) for st in loop.body for n in ir.walk(st)):
        return False
    if any((_reads(b) | _names(b)) & names for lp in outer for b in (lp.lo, lp.hi)):
        return False
    bounds = (loop.lo, loop.hi)
    if not any(_reads(b) & names for b in bounds):
        return False  # rectangular: not this rule's
    for b in bounds:
        if not _scalar_only(b) or not _reads(b) <= host_scalars | names:
            return False
        if accesses.affine(b, (host_scalars | names)) is None:
            return False
    return True


def _host_bounds(loop: ir.For, host_scalars: frozenset[str]) -> bool:
    """Whether ``loop``'s bounds are computable on the host (host scalars only, no arrays)."""
    return all(_scalar_only(b) and _reads(b) <= host_scalars for b in (loop.lo, loop.hi))


def _parallel(loop: ir.For, host_scalars: frozenset[str], independent: Callable[[ir.For], bool]) -> bool:
    """Can ``loop`` be spread over GPU threads?  (False when unsure.)

    (1) unit step (the grid-stride loop counts up by one); (2) bounds read only
    host scalars (no arrays, no outer loop variables: rectangular, computable on
    the host); (3) the dependence analysis finds no dependence carried by the
    loop (``independent``), which covers arrays and scalars alike; (4) the
    loop writes no scalar declared outside it.  (4) follows from (3) whenever
    the loop runs twice or more; it matters for a loop of at most one
    iteration, which carries nothing, but whose scalar write must still reach
    the code after it (a launch cannot write back a scalar from many threads).
    """
    if loop.step != 1:
        return False
    for bound in (loop.lo, loop.hi):
        if not _scalar_only(bound) or not _reads(bound) <= host_scalars:
            return False
    if ir.outer_scalars_written(loop):  # (loop variables are never assigned)
        return False
    return independent(loop)
