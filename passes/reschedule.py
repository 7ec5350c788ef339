"""Rescheduling: an affine nest whose loops all carry dependences is re-ordered by isl's scheduler.

The left-looking factorisations (lu, cholesky, trisolv) compute each element
from finished elements of earlier rows, so every loop of their nest carries a
dependence and map-gpu ran them on one thread (or one block) per row.  The
same operations in the *right-looking* order make an outer ``k`` sequential
and everything inside it parallel.  lu::

    for i in 0..n {                                   for k in 0..n - 1 {
      for j in 0..i {                                   for i in k + 1..n {
        for k in 0..j { A[i][j] -= A[i][k] * A[k][j]; }   A[i][k] /= A[k][k];
        A[i][j] /= A[j][j];                   ==>         for j in k + 1..i { A[i][j] -= A[i][k] * A[k][j]; }
      }                                                   for j in i..n { A[i][j] -= A[i][k] * A[k][j]; }
      for j in i..n { for k in 0..i { ... } }           }
    }                                                 }

Every memory cell sees the same operations in the same order (the new
schedule respects *all* dependences: flow, anti and output), so the result is
bit-identical: a reordering of independent instances, not a reassociation.

**Precondition**: valid IR without ``Launch`` (runs before distribution).

**Rule.**  A top-level nest qualifies when every statement in it is an
assignment to an array element, every loop has step 1 and affine bounds, every
subscript is affine (loop variables and :func:`passes.accesses.parameters`),
no scalar is written, all loop variables share one type, the nest is at most
3 deep with at most 6 statements, and some statement has two or more loops
around it that carry a dependence (otherwise there is nothing to free).
Statements with one body (up to loop-variable names) and disjoint domains are
merged into one (lu's two updates: one rectangular loop).  Its polyhedral
model (instance domains, the original 2d+1 schedule, read and write relations)
gives the memory-based dependences: pairs of instances touching one element,
at least one writing, source first in the original order.  isl's scheduler
(validity and proximity: all dependences; coincidence: all, with outer
coincidence on) proposes a schedule; an independent isl check then requires
that every dependence goes from an earlier to a strictly later point of the
new schedule.  isl's AST generator turns the schedule into loops (``min`` and
``max`` become selects; integer division or modulo in the AST: refused), the
statements' loop variables replaced by the AST's expressions.

**Postcondition**: the rebuilt nest replaces the original only when it pays:
by :func:`passes.deps.parallel_loops`, no statement has fewer parallel loops
around it, at least one has more, and the kernel has at least as many parallel
loops.  Otherwise the kernel is returned unchanged (the same object).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass

import islpy as isl

from passes import accesses as acc_mod
from passes import deps
from passes.builders import fresh_name
from transpile import ir


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with its qualifying nests rescheduled where that frees loops (see the module docstring)."""
    if any(isinstance(n, (ir.Launch, ir.Return)) for n in ir.walk(kernel)):
        return kernel
    # NOTE: chosen once, on the kernel as given: whether a nest's loops carry dependences depends
    # on its own instances only, which rescheduling another top-level nest leaves as they are.
    for nest in _worth_trying(kernel):
        # NOTE: merged statements first: lu's two updates (below and above the diagonal) have one
        # body, and as one statement isl gives them one rectangular loop, which stays a 2-D launch
        # (as two triangular pieces, fusion glues them to the division in a 1-D one).
        for merge in (True, False):
            model = _model(kernel, nest, merge=merge)
            if model is None:
                break
            try:
                new = _reschedule(kernel, model)
            except (isl.Error, _Unsupported):
                continue
            if new is not None:
                kernel = _splice(kernel, nest, new)
                break
    return kernel


def _worth_trying(kernel: ir.Kernel) -> list[ir.For]:
    """The top-level nests in which some statement has two or more loops around it that carry a
    dependence (one dependence analysis for all of them).

    A schedule that respects every dependence keeps a statement of a recurrence under at least one
    sequential loop; the point is to free the others (lu: ``i`` and ``j`` around ``k``).  A nest
    where each statement has at most one sequential loop (the time loop of a stencil, the ``k`` of
    gemm) has nothing to gain, and skipping it keeps isl's scheduler off the large stencils
    (heat-3d: seconds).
    """
    graph = deps.analyze_or_none(kernel)
    if graph is None:
        return []
    par = deps.parallel_loops(kernel, graph)
    ids = deps.loop_ids(kernel)
    stuck = {id(s.loops[0]) for s in acc_mod.analyze(kernel)
             if s.kind == "assign" and s.loops and sum(ids[id(lp)] not in par for lp in s.loops) >= 2}
    return [s for s in kernel.body if isinstance(s, ir.For) and id(s) in stuck]


def _splice(kernel: ir.Kernel, nest: ir.For, new: tuple[ir.Stmt, ...]) -> ir.Kernel:
    """``kernel`` with the top-level statement ``nest`` replaced by ``new``."""
    return dataclasses.replace(kernel, body=tuple(x for s in kernel.body for x in (new if s is nest else (s,))))


# The isl work one attempt may do (lu, cholesky, trisolv need well under a tenth of it).
MAX_OPERATIONS = 300_000
MAX_COEFFICIENT = 2
MAX_DEPTH, MAX_STATEMENTS = 3, 6


class _Unsupported(Exception):
    """The AST needs a construct the IR rebuild does not translate."""


# _Model: one nest as isl text.  stmts maps the isl statement name to (assignment, loop variables);
# domain, schedule, reads and writes are union sets/maps over those statements, params the isl
# parameter declaration ``[p_n, ...]``.
@dataclass(frozen=True)
class _Model:
    nest: ir.For
    ty: ir.Scalar
    params: dict[str, ir.Scalar]  # kernel parameter -> type
    stmts: dict[str, tuple[ir.Assign, tuple[str, ...]]]
    members: dict[int, str]  # id(original assignment) -> isl statement name
    domain: str
    schedule: str
    reads: str
    writes: str


def _model(kernel: ir.Kernel, nest: ir.For, *, merge: bool) -> _Model | None:
    """The polyhedral model of ``nest``, or None when it does not qualify (see the module docstring).

    With ``merge``, statements with the same body (up to the names of their loop variables) and
    disjoint domains become one statement over the union of the domains.
    """
    params = acc_mod.parameters(kernel)
    infos = [s for s in acc_mod.analyze(kernel) if s.node is nest or (s.loops and s.loops[0] is nest)]
    if any(s.kind not in ("assign", "bounds") for s in infos):
        return None
    loops = [s.node for s in infos if isinstance(s.node, ir.For)]
    if any(lp.step != 1 or lp.ty != nest.ty or lp.reduce or lp.par for lp in loops):
        return None
    if any(s.accesses for s in infos if s.kind == "bounds"):
        return None  # bounds reading arrays or non-parameter scalars
    written = {a.name for s in infos for a in s.writes()}
    pset = frozenset(params)
    depth = max(s.depth for s in infos)
    # NOTE: a size gate: isl's scheduler took minutes on random depth-4 nests of a few statements
    # (inside isl, where neither the operation quota nor a signal stops it).  The factorisations
    # are depth 3 with at most 4 statements.
    if depth > MAX_DEPTH or sum(s.kind == "assign" for s in infos) > MAX_STATEMENTS:
        return None
    positions = _positions(nest)
    head = f"[{', '.join(deps.param_name(p) for p in sorted(params))}] -> "
    pieces: list[_Piece] = []
    for s in infos:
        if s.kind != "assign":
            continue
        piece = _piece(s, pset, written, depth, positions[id(s.node)])
        if piece is None:
            return None
        pieces.append(piece)
    if not pieces:
        return None
    groups: list[list[_Piece]] = []
    for piece in pieces:
        home = next((g for g in groups if merge and _mergeable(g, piece, head)), None)
        if home is None:
            groups.append([piece])
        else:
            home.append(piece)
    stmts: dict[str, tuple[ir.Assign, tuple[str, ...]]] = {}
    members: dict[int, str] = {}
    doms, sched, reads, writes = [], [], [], []
    for g in groups:
        name = g[0].name
        stmts[name] = (g[0].assign, g[0].vars)
        for piece in g:
            members[id(piece.assign)] = name
            doms.append(f"{name}{piece.domain}")
            sched.append(f"{name}{piece.schedule}")
            reads += [f"{name}{r}" for r in piece.reads]
            writes += [f"{name}{w}" for w in piece.writes]
    return _Model(nest, nest.ty, _param_types(kernel, params), stmts, members, head + "{ " + "; ".join(doms) + " }",
                  head + "{ " + "; ".join(sched) + " }", head + "{ " + "; ".join(reads) + " }",
                  head + "{ " + "; ".join(writes) + " }")


# _Piece: one assignment as isl text without its statement name (``[i0, ..] : D``,
# ``[i0, ..] -> [2d+1 schedule] : D``, ``[i0, ..] -> a_X[..] : D``: each restricted to its own
# domain D, since merged statements share a name); key: its body with the loop variables
# renamed by position, which statements must share to merge.
@dataclass(frozen=True)
class _Piece:
    name: str
    assign: ir.Assign
    vars: tuple[str, ...]
    key: ir.Assign
    domain: str
    schedule: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]


def _piece(s: acc_mod.StmtInfo, params: frozenset[str], written: set[str], depth: int,
           pos: tuple[int, ...]) -> _Piece | None:
    assert isinstance(s.node, ir.Assign)
    names = {lp.var: f"i{k}" for k, lp in enumerate(s.loops)}
    outer: set[str] = set()
    for lp in s.loops:
        if acc_mod.affine(lp.lo, params | outer) is None or acc_mod.affine(lp.hi, params | outer) is None:
            return None
        outer.add(lp.var)
    iv = ", ".join(names.values())
    cons = " and ".join(deps.domain_constraints(s.loops, names, params)) or "true"
    dims = [str(pos[0])]
    for k in range(depth):
        dims += [names[s.loops[k].var] if k < s.depth else "0", str(pos[k + 1]) if k + 1 < len(pos) else "0"]
    reads: list[str] = []
    writes: list[str] = []
    for a in s.accesses:
        if a.is_scalar:
            if a.write or a.name in written:
                return None  # scalar state: not in the model
            continue
        if any(x is None for x in a.subscripts):
            return None
        sub = ", ".join(deps.render_affine(x, names) for x in a.subscripts if x is not None)
        (writes if a.write else reads).append(f"[{iv}] -> a_{a.name}[{sub}] : {cons}")
    key = ir.substitute(s.node, {v: ir.Var(n, lp.ty) for lp in s.loops for v, n in [(lp.var, names[lp.var])]})
    return _Piece(f"S{s.seq}", s.node, tuple(names), key, f"[{iv}] : {cons}", f"[{iv}] -> [{', '.join(dims)}] : {cons}",
                  tuple(reads), tuple(writes))


def _mergeable(group: list[_Piece], piece: _Piece, head: str) -> bool:
    """Whether ``piece`` has the body of ``group`` and a domain disjoint from each of its members'."""
    if group[0].key != piece.key or len(group[0].vars) != len(piece.vars):
        return False
    mine = isl.Set(f"{head}{{ S{piece.domain} }}")
    return all(mine.intersect(isl.Set(f"{head}{{ S{g.domain} }}")).is_empty() for g in group)


def _param_types(kernel: ir.Kernel, params: frozenset[str]) -> dict[str, ir.Scalar]:
    out: dict[str, ir.Scalar] = {}
    for p in kernel.params:
        if p.name in params and isinstance(p.ty, ir.Scalar):
            out[p.name] = p.ty
    for s in kernel.body:
        if isinstance(s, ir.Decl) and s.name in params:
            out[s.name] = s.ty
    return out


def _positions(nest: ir.For) -> dict[int, tuple[int, ...]]:
    """``id(assignment) -> (position in each enclosing block, outermost first)``: the constant
    dimensions of the 2d+1 schedule (the nest itself is position 0)."""
    out: dict[int, tuple[int, ...]] = {}

    def walk(body: tuple[ir.Stmt, ...], path: tuple[int, ...]) -> None:
        for k, s in enumerate(body):
            if isinstance(s, ir.For):
                walk(s.body, path + (k,))
            else:
                out[id(s)] = path + (k,)

    walk(nest.body, (0,))
    return out


def _reschedule(kernel: ir.Kernel, m: _Model) -> tuple[ir.Stmt, ...] | None:
    ctx = isl.Context()
    # NOTE: isl's scheduler can take minutes on nests with many coupled subscripts (random ones do);
    # past this many isl operations the attempt fails with an isl error and the nest is left alone.
    ctx.set_max_operations(MAX_OPERATIONS)
    domain = isl.UnionSet.read_from_str(ctx, m.domain)
    dep = _dependences(ctx, m, domain)
    schedule = _schedule(domain, dep)
    # NOTE: whatever proposed the schedule, it is checked against every dependence before use.
    if not legal(schedule.get_map().intersect_domain(domain), dep):
        return None
    build = isl.AstBuild.from_context(isl.Set.read_from_str(ctx, m.domain.split("->")[0] + "-> { : }"))
    ast = build.node_from_schedule(schedule)
    rebuild = _Rebuild(kernel, m)
    new = rebuild.nest(ast)
    if new is None:
        return None
    trial = _splice(kernel, m.nest, new)
    return new if _pays(kernel, trial, m, rebuild.built) else None


def _schedule(domain: isl.UnionSet, dep: isl.UnionMap) -> isl.Schedule:
    """isl's proposal: validity and proximity on every dependence, as many coincident (parallel)
    dimensions as it finds."""
    # NOTE: outer coincidence makes isl look for a parallel (coincident) dimension right inside
    # the outermost sequential one; with the defaults it keeps the left-looking order of lu,
    # which is legal and permutable but has no parallel loop.
    ctx = domain.get_ctx()
    ctx.set_schedule_outer_coincidence(1)
    ctx.set_schedule_max_coefficient(MAX_COEFFICIENT)
    ctx.set_schedule_max_constant_term(MAX_COEFFICIENT)
    sc = isl.ScheduleConstraints.on_domain(domain).set_validity(dep).set_proximity(dep).set_coincidence(dep)
    return sc.compute_schedule()


def _dependences(ctx: isl.Context, m: _Model, domain: isl.UnionSet) -> isl.UnionMap:
    """Memory-based dependences: instance pairs touching one element, one writing, source first."""
    sched = isl.UnionMap.read_from_str(ctx, m.schedule).intersect_domain(domain)
    reads = isl.UnionMap.read_from_str(ctx, m.reads).intersect_domain(domain)
    writes = isl.UnionMap.read_from_str(ctx, m.writes).intersect_domain(domain)
    before = sched.lex_lt_union_map(sched)
    flow = writes.apply_range(reads.reverse())
    anti = reads.apply_range(writes.reverse())
    out = writes.apply_range(writes.reverse())
    return flow.union(anti).union(out).intersect(before).coalesce()


def legal(schedule: isl.UnionMap, dependences: isl.UnionMap) -> bool:
    """Whether ``schedule`` puts every source of ``dependences`` strictly before its sink."""
    return dependences.is_subset(schedule.lex_lt_union_map(schedule))


def _pays(kernel: ir.Kernel, trial: ir.Kernel, m: _Model, built: dict[int, str]) -> bool:
    """No statement of the nest loses a parallel loop around it, one gains, and the kernel keeps
    at least as many parallel loops."""
    before, n_before = _parallel_around(kernel, m.members)
    after, n_after = _parallel_around(trial, built)
    if before is None or after is None or set(after) != set(before):
        return False
    return (all(after[s] >= before[s] for s in before) and sum(after.values()) > sum(before.values())
            and n_after >= n_before)


def _parallel_around(kernel: ir.Kernel, names: dict[int, str]) -> tuple[dict[str, int] | None, int]:
    """Per statement (by isl name, through ``names``: id of its assignment), the fewest parallel
    loops around any copy of it; and the kernel's number of parallel loops."""
    graph = deps.analyze_or_none(kernel)
    if graph is None:
        return None, 0
    par = deps.parallel_loops(kernel, graph)
    ids = deps.loop_ids(kernel)
    out: dict[str, int] = {}
    for s in acc_mod.analyze(kernel):
        if s.kind == "assign" and id(s.node) in names:
            count = sum(ids[id(lp)] in par for lp in s.loops)
            name = names[id(s.node)]
            out[name] = min(out.get(name, count), count)
    return out, len(par)


class _Rebuild:
    """Translates isl's AST into IR loops around the model's statements."""

    def __init__(self, kernel: ir.Kernel, m: _Model) -> None:
        self.m = m
        own = {v for _, vs in m.stmts.values() for v in vs}
        self.taken = ir.identifiers(kernel) - own  # names a new loop variable may not take
        self.env: dict[str, ir.Expr] = {}  # AST iterator -> IR variable
        self.loc = m.nest.loc
        self.built: dict[int, str] = {}  # id(rebuilt assignment) -> isl statement name

    def nest(self, node: isl.AstNode) -> tuple[ir.Stmt, ...] | None:
        """The top-level loops of the AST (isl may split the nest in several); None if a statement
        would end up outside every loop (a top-level statement is not a nest any more)."""
        body = self.block(node)
        return body if body and all(isinstance(s, ir.For) for s in body) else None

    def block(self, node: isl.AstNode) -> tuple[ir.Stmt, ...]:
        t = node.get_type()
        if t == isl.ast_node_type.block:
            children = node.block_get_children()
            return tuple(s for k in range(children.n_ast_node()) for s in self.block(children.get_at(k)))
        if t == isl.ast_node_type.for_:  # type: ignore[attr-defined]
            return (self.loop(node),)
        if t == isl.ast_node_type.if_:  # type: ignore[attr-defined]
            cond = self.expr(node.if_get_cond())
            orelse = self.block(node.if_get_else_node()) if node.if_has_else_node() else ()
            return (ir.If(cond, self.block(node.if_get_then_node()), orelse, loc=self.loc),)
        if t == isl.ast_node_type.user:
            return (self.user(node.user_get_expr()),)
        raise _Unsupported(f"AST node {t}")

    def loop(self, node: isl.AstNode) -> ir.For:
        it = node.for_get_iterator().get_id().get_name()
        inc = node.for_get_inc()
        if inc.get_type() != isl.ast_expr_type.int or inc.get_val().to_python() != 1:
            raise _Unsupported("loop step")
        lo = self.expr(node.for_get_init())
        hi = self._upper(node.for_get_cond(), it)
        var = self._name(node, it)
        self.env[it] = ir.Var(var, self.m.ty, loc=self.loc)
        self.taken.add(var)
        body = self.block(node.for_get_body())
        self.taken.discard(var)
        del self.env[it]
        return ir.For(var, self.m.ty, ir.cast(lo, self.m.ty), ir.cast(hi, self.m.ty), 1, body, loc=self.loc)

    def _upper(self, cond: isl.AstExpr, it: str) -> ir.Expr:
        """The exclusive upper bound of iterator ``it`` from the loop condition (``it < e``, ``it <= e``,
        or a conjunction of those)."""
        op = cond.get_op_type() if cond.get_type() == isl.ast_expr_type.op else None
        if op in (isl.ast_expr_op_type.and_, isl.ast_expr_op_type.and_then):  # type: ignore[attr-defined]
            a, b = (self._upper(cond.get_op_arg(k), it) for k in range(2))
            return ir.select(ir.binary("<", a, b), a, b)
        if op not in (isl.ast_expr_op_type.lt, isl.ast_expr_op_type.le):
            raise _Unsupported("loop condition")
        lhs = cond.get_op_arg(0)
        if lhs.get_type() != isl.ast_expr_type.id or lhs.get_id().get_name() != it:
            raise _Unsupported("loop condition")
        hi = self.expr(cond.get_op_arg(1))
        return ir.binary("+", hi, self._int(1)) if op == isl.ast_expr_op_type.le else hi

    def _name(self, node: isl.AstNode, it: str) -> str:
        """The original loop variable this iterator stands for in most statements under it (weighted by
        depth), if free; else a fresh ``w``."""
        votes: Counter[str] = Counter()

        def visit(n: isl.AstNode) -> bool:
            if n.get_type() == isl.ast_node_type.user:
                call = n.user_get_expr()
                _, names = self.m.stmts[call.get_op_arg(0).get_id().get_name()]
                for k, v in enumerate(names):
                    arg = call.get_op_arg(k + 1)
                    if arg.get_type() == isl.ast_expr_type.id and arg.get_id().get_name() == it:
                        votes[v] += len(names)  # the deeper statements name the loops (the work is there)
            return True

        node.foreach_descendant_top_down(visit)
        for v, _ in sorted(votes.items(), key=lambda kv: -kv[1]):
            if v not in self.taken:
                return v
        return fresh_name("w", self.taken)  # a combination of loops: a wavefront, as passes/wavefront.py

    def user(self, call: isl.AstExpr) -> ir.Assign:
        name = call.get_op_arg(0).get_id().get_name()
        assign, names = self.m.stmts[name]
        sub = {v: ir.cast(self.expr(call.get_op_arg(k + 1)), self.m.ty) for k, v in enumerate(names)}
        new = ir.substitute(assign, sub)
        if new is assign:
            new = dataclasses.replace(assign)  # a fresh node: statements are told apart by identity
        self.built[id(new)] = name
        return new

    def _int(self, v: int) -> ir.Expr:
        return ir.Const(v, self.m.ty, loc=self.loc)

    def expr(self, e: isl.AstExpr) -> ir.Expr:
        t = e.get_type()
        if t == isl.ast_expr_type.int:
            return self._int(int(e.get_val().to_python()))
        if t == isl.ast_expr_type.id:
            name = e.get_id().get_name()
            if name in self.env:
                return self.env[name]
            p = name.removeprefix("p_")
            if name.startswith("p_") and p in self.m.params:
                return ir.Var(p, self.m.params[p], loc=self.loc)
            raise _Unsupported(f"identifier {name}")
        op = e.get_op_type()
        args = [self.expr(e.get_op_arg(k)) for k in range(e.get_op_n_arg())]
        if op == isl.ast_expr_op_type.minus:
            return ir.unary("-", args[0])
        if op in _BINARY:
            return ir.binary(_BINARY[op], args[0], args[1])
        if op in (isl.ast_expr_op_type.min, isl.ast_expr_op_type.max):
            out = args[0]
            for a in args[1:]:
                out = ir.select(ir.binary("<" if op == isl.ast_expr_op_type.min else ">", out, a), out, a)
            return out
        if op in (isl.ast_expr_op_type.cond, isl.ast_expr_op_type.select):
            return ir.select(args[0], args[1], args[2])
        raise _Unsupported(f"AST operator {op}")


_BINARY = {
    isl.ast_expr_op_type.add: "+", isl.ast_expr_op_type.sub: "-", isl.ast_expr_op_type.mul: "*",
    isl.ast_expr_op_type.eq: "==", isl.ast_expr_op_type.le: "<=", isl.ast_expr_op_type.lt: "<",
    isl.ast_expr_op_type.ge: ">=", isl.ast_expr_op_type.gt: ">",
    isl.ast_expr_op_type.and_: "&&",  # type: ignore[attr-defined]
    isl.ast_expr_op_type.and_then: "&&",
    isl.ast_expr_op_type.or_: "||",  # type: ignore[attr-defined]
    isl.ast_expr_op_type.or_else: "||",
}

