"""IR invariant checker: ``check(module)`` raises a diagnostic on invalid IR.

Every pass may assume valid IR and must leave valid IR (the contract of
xDSL's ``ModulePass``); the pipeline calls :func:`check` after each pass when
``--verify-each`` is on (the default in tests).  IR from the text form (and
so from an LLM) is user input, which is why a violation is a
:class:`TranspileError` with the offending node's location rather than an
``assert``.

The invariants are those of docs/ir.md: names resolve to declarations of the
same type, C typing rules hold at every node, loop variables are never
assigned and loop bounds are not written by their loop, array intents cover
their uses, ``Launch`` only at the top level or inside host loops (``For``
statements outside any launch, nested only in such loops) with its ``par``
loops a leading perfect nest, ``Return`` only in helper functions, ``Trap``
only in host code (the top level of a kernel or a top-level ``If``), and a
``reduce`` loop's body exactly accumulations that :mod:`passes.reductions`
proves, or one loop whose body is a sweep (``passes.reduce_gpu.sweep_shape``:
its accumulations proven over their own loops, one operator each), or a chain
nest (``passes.reduce_gpu.chain_shape``: the outer loop's operators those of
its second column loop's accumulations, proven over the outer loop; the exact
dependence analysis runs only for kernels with such marks).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NoReturn

from transpile import ir
from transpile.diagnostics import TranspileError
from transpile.ir import accum

_CONST_TYPES = frozenset({ir.I32, ir.I64, ir.U32, ir.U64, ir.F32, ir.F64})
_PAR_DIMS = ("x", "y", "z")


def check(module: ir.Module) -> None:
    """Raise :class:`TranspileError` unless ``module`` satisfies the IR invariants."""
    funcs: dict[str, ir.Func] = {}
    for f in module.funcs:
        if f.name in funcs or f.name in ir.MATH_FUNCS:
            _fail(f, f"function '{f.name}' is defined twice")
        funcs[f.name] = f
    names = set(funcs)
    for k in module.kernels:
        if k.name in names:
            _fail(k, f"'{k.name}' is defined twice")
        names.add(k.name)
    for f in module.funcs:
        _Checker(funcs, f).check_func(f)
    for k in module.kernels:
        _Checker(funcs, k).check_kernel(k)


def _reduce_shape(s: ir.For) -> None:
    """A ``reduce`` loop's body is exactly accumulations, one per operator, matching it."""
    if s.par is not None:
        _fail(s, "a loop cannot be both 'par' and 'reduce'")
    body = s.body
    if len(body) >= 2 and isinstance(body[-1], ir.For):  # a chain nest (passes.reduce_gpu rule (e))
        from passes.reduce_gpu import chain_shape

        chain = chain_shape(s)
        if chain is None:
            _fail(s, "a 'reduce' loop around loops must be a sweep or a chain nest (passes.reduce_gpu)")
        body = chain.cols.body
    elif len(body) == 1 and isinstance(body[0], ir.For):  # a sweep nest (passes.reduce_gpu rule (d))
        from passes.reduce_gpu import sweep_shape

        sweep = sweep_shape(s)
        if sweep is None:
            _fail(s, "a 'reduce' loop around a loop must be a sweep nest (passes.reduce_gpu.sweep_shape)")
        body = tuple(c for c, along in zip(sweep.inner.body, sweep.along) if along != "map")
    if len(s.reduce) != len(body):
        _fail(s, f"'reduce' lists {len(s.reduce)} operator(s) for {len(body)} statement(s)")
    for op, c in zip(s.reduce, body):
        a = accum.accumulation(c)
        if op not in accum.OPS:
            _fail(s, f"unknown reduction operator {op!r}")
        if a is None:
            _fail(c, "the body of a 'reduce' loop must be accumulations 'x = x op e'")
        if a.op != op:
            _fail(c, f"accumulation with '{a.op}' in a loop marked 'reduce({op})'")


def _reduce_proven(k: ir.Kernel) -> None:
    """Every accumulation of a ``reduce`` loop is a reduction the exact analysis proves."""
    marked = [n for n in ir.statements(k) if isinstance(n, ir.For) and n.reduce]  # loops: statements
    if not marked:
        return
    import islpy as isl

    from passes import accesses, deps, reductions  # the analysis needs isl: only for marked kernels

    ids = deps.loop_ids(k)
    sids = {id(s.node): s.id for s in accesses.analyze(k)}
    try:
        proven = {(r.loop, r.stmt) for r in reductions.analyze(k)}
    except isl.Error:  # isl could not answer: nothing is proven
        proven = set()
        why = " (the dependence analysis failed)"
    else:
        why = ""
    from passes.reduce_gpu import chain_shape, sweep_shape

    for loop in marked:
        # A sweep or a chain: each accumulation over its own loop (maps: sweep_shape keeps points
        # independent; a chain's row loop is marked too and also checked as a loop of its own).
        nest = sweep_shape(loop) or chain_shape(loop)
        if nest is not None:
            for c, over in nest.accumulations():
                if (ids[id(over)], sids[id(c)]) not in proven:
                    _fail(c, f"loop '{loop.var}' is marked 'reduce' (a {type(nest).__name__.lower()}) but this "
                             f"statement is not a reduction over '{over.var}'{why}")
            continue
        for c in loop.body:
            if (ids[id(loop)], sids[id(c)]) not in proven:
                _fail(c, f"loop '{loop.var}' is marked 'reduce' but this statement is not a "
                         f"reduction over it{why}")


def _atomic_proven(k: ir.Kernel) -> None:
    """Every dependence an ``atomic(...)`` loop carries is on the arrays it lists (passes/atomics.py)."""
    marked = [n for n in ir.statements(k) if isinstance(n, ir.For) and n.atomic]
    if not marked:
        return
    import islpy as isl

    from passes import atomics, deps

    ids = deps.loop_ids(k)
    try:
        graph = deps.analyze(k)
    except isl.Error:
        _fail(marked[0], f"loop '{marked[0].var}' is marked 'atomic' but the dependence analysis failed")
    for loop in marked:
        names = sorted(atomics.carried_names(graph, ids[id(loop)]) - set(loop.atomic))
        if names:
            _fail(loop, f"loop '{loop.var}' is marked 'atomic({', '.join(loop.atomic)})' but carries a "
                        f"dependence on {', '.join(repr(n) for n in names)}")


def _fail(node: ir.Node | None, msg: str) -> NoReturn:
    raise TranspileError(node.loc if node is not None else None, f"invalid IR: {msg}")


@dataclass
class _Scope:
    scalars: dict[str, ir.Scalar] = field(default_factory=dict)
    loop_vars: set[str] = field(default_factory=set)


class _Checker:
    def __init__(self, funcs: dict[str, ir.Func], owner: ir.Kernel | ir.Func) -> None:
        self.funcs = funcs
        self.owner = owner
        self.arrays: dict[str, ir.Param] = {}
        self.declared: set[str] = set()  # every name declared in this function
        self.uses = ir.array_uses(owner.body)

    # --- functions

    def _params(self, params: tuple[ir.Param, ...]) -> _Scope:
        scope = _Scope()
        for p in params:
            if p.name in self.declared:
                _fail(p, f"parameter '{p.name}' is declared twice")
            self.declared.add(p.name)
            if isinstance(p.ty, ir.Scalar):
                if p.intent != "in" or p.pointer:
                    _fail(p, f"scalar parameter '{p.name}' must have intent 'in' and no pointer flag")
                scope.scalars[p.name] = p.ty
            else:
                self.arrays[p.name] = p
        # Extents may only use scalar parameters and constants.
        for p in params:
            if isinstance(p.ty, ir.ArrayType):
                if p.ty.rank == 0:
                    _fail(p, f"array parameter '{p.name}' has no dimensions")
                for d in p.ty.dims:
                    self.expr(d, scope)
                    if not d.ty.is_int:
                        _fail(d, f"extent of '{p.name}' must be an integer, got {d.ty}")
                    for n in ir.walk(d):
                        if isinstance(n, ir.Index):
                            _fail(n, f"extent of '{p.name}' may not read array '{n.array}'")
        return scope

    def check_func(self, f: ir.Func) -> None:
        for p in f.params:
            if not isinstance(p.ty, ir.Scalar):
                _fail(p, f"helper function '{f.name}' may only take scalar parameters")
        scope = self._params(f.params)
        self.block(f.body, scope, in_launch=False, top=False)

    def check_kernel(self, k: ir.Kernel) -> None:
        scope = self._params(k.params)
        if k.ret is not None:
            slot = k.ret_param
            if slot is None or slot is not k.params[-1]:
                _fail(k, f"the return slot '{k.ret}' of '{k.name}' must be its last parameter")
            if (not isinstance(slot.ty, ir.ArrayType) or slot.ty.dims != (ir.Const(1, ir.I32),)
                    or slot.intent == "in"):
                _fail(slot, f"the return slot '{k.ret}' must be an 'out' array of extent [1]")
        for s in k.body:
            if isinstance(s, ir.Alloc):
                if s.name in self.declared:
                    _fail(s, f"'{s.name}' is declared twice in '{k.name}'")
                self.declared.add(s.name)
                for d in s.ty.dims:
                    self.expr(d, scope)
                    if not d.ty.is_int or any(isinstance(n, ir.Index) for n in ir.walk(d)):
                        _fail(d, f"extent of local array '{s.name}' must be an integer over scalar parameters")
                self.arrays[s.name] = ir.Param(s.name, s.ty, "inout", loc=s.loc)
        for name, (read, written) in self.uses.items():
            p = self.arrays.get(name)
            if p is None:
                continue  # reported at the access
            if written and p.intent == "in":
                _fail(p, f"array '{name}' is written but has intent 'in'")
            if read and p.intent == "out":
                _fail(p, f"array '{name}' is read but has intent 'out'")
        self.block(k.body, scope, in_launch=False, top=True)
        _reduce_proven(k)
        _atomic_proven(k)

    # --- statements

    def block(self, body: tuple[ir.Stmt, ...], scope: _Scope, *, in_launch: bool, top: bool,
              host: bool = False, branch: bool = False) -> None:
        inner = _Scope(dict(scope.scalars), set(scope.loop_vars))
        for s in body:
            self.stmt(s, inner, in_launch=in_launch, top=top, host=host or top, branch=branch)

    def stmt(self, s: ir.Stmt, scope: _Scope, *, in_launch: bool, top: bool, host: bool = False,
             branch: bool = False) -> None:
        """Check ``s``; ``host``: ``s`` is at the top level or in the body of a host loop; ``branch``: in
        a branch of a top-level ``if`` (where a ``trap`` may be too)."""
        if isinstance(s, ir.Decl):
            if s.name in self.declared:
                _fail(s, f"'{s.name}' is declared twice in '{self.owner.name}'")
            self.declared.add(s.name)
            if s.init is not None:
                self.expr(s.init, scope)
                self._same(s.init, s.ty, f"initialiser of '{s.name}'")
            scope.scalars[s.name] = s.ty
        elif isinstance(s, ir.Alloc):
            if not top:
                _fail(s, f"local array '{s.name}' must be declared at the top level of the kernel")
        elif isinstance(s, ir.Assign):
            self.expr(s.value, scope)
            t = s.target
            if isinstance(t, ir.Var):
                if t.name in scope.loop_vars:
                    _fail(s, f"loop variable '{t.name}' is assigned")
                self.expr(t, scope)
            elif isinstance(t, ir.Index):
                self.expr(t, scope)
            else:
                _fail(s, f"cannot assign to {type(t).__name__}")
            self._same(s.value, t.ty, "assigned value")
        elif isinstance(s, ir.For):
            self._for(s, scope, in_launch=in_launch, host=host and not in_launch)
        elif isinstance(s, ir.If):
            self.expr(s.cond, scope)
            inside = (top or branch) and not in_launch
            self.block(s.then, scope, in_launch=in_launch, top=False, branch=inside)
            self.block(s.orelse, scope, in_launch=in_launch, top=False, branch=inside)
        elif isinstance(s, ir.Trap):
            if not isinstance(self.owner, ir.Kernel):
                _fail(s, "'trap' outside a kernel")
            if in_launch or not (top or branch):
                _fail(s, "'trap' is only allowed in host code: at the top level of a kernel or in a "
                         "top-level 'if'")
        elif isinstance(s, ir.Return):
            owner = self.owner
            if not isinstance(owner, ir.Func):
                _fail(s, "'return' outside a helper function")
                return
            if s.value is None:
                if owner.ret is not None:
                    _fail(s, f"'{owner.name}' must return a {owner.ret}")
            else:
                self.expr(s.value, scope)
                if owner.ret is None:
                    _fail(s, f"void function '{owner.name}' returns a value")
                    return
                self._same(s.value, owner.ret, "returned value")
        elif isinstance(s, ir.Launch):
            if not (top or host) or in_launch:
                _fail(s, "'launch' is only allowed at the top level of a kernel or in a host loop")
            self._launch(s, scope)
        else:
            _fail(s, f"unknown statement {type(s).__name__}")

    def _for(self, s: ir.For, scope: _Scope, *, in_launch: bool, par_ok: bool = False,
             host: bool = False, lane_ok: bool = False) -> None:
        if s.var in scope.scalars:
            _fail(s, f"loop variable '{s.var}' shadows a visible variable")
        if not s.ty.is_int:
            _fail(s, f"loop variable '{s.var}' must be an integer, got {s.ty}")
        if not isinstance(s.step, int) or s.step == 0:
            _fail(s, f"loop step must be a nonzero integer constant, got {s.step!r}")
        for bound in (s.lo, s.hi):
            self.expr(bound, scope)
            if not bound.ty.is_int:
                _fail(bound, f"loop bound must be an integer, got {bound.ty}")
        if s.par == "lane":
            if not lane_ok:
                _fail(s, "a 'par(lane)' loop must sit directly in the body of a launch's 'par(x)' loop that "
                         "holds 'reduce' loops (a warp per row)")
            if s.step not in (1, -1) or any(isinstance(n, ir.For) for st in s.body for n in ir.walk(st)):
                _fail(s, "a 'par(lane)' loop must have step 1 or -1 and no loop inside")
        elif s.par is not None and not par_ok:
            _fail(s, "a 'par' loop must be part of the leading loop nest of a 'launch'")
        if s.reduce:
            _reduce_shape(s)
        if s.host:
            why = _host_problem(s, in_launch)
            if why is not None:
                _fail(s, f"loop '{s.var}' is marked 'host({', '.join(s.host)})': {why}")
        if s.atomic:
            if not ir.grid_par(s) or s.reduce:
                _fail(s, "'atomic(...)' marks a grid 'par(x|y|z)' loop")
            from passes import atomics

            why = atomics.problem(s, s.atomic)
            if why is not None:
                _fail(why[0], f"loop '{s.var}' is marked 'atomic': {why[1]}")
        # Bounds are evaluated once, so nothing they read may change in the body.
        written = _written(s.body)
        for bound in (s.lo, s.hi):
            for n in ir.walk(bound):
                if isinstance(n, ir.Var) and n.name in written[0]:
                    _fail(n, f"loop bound reads '{n.name}', which the loop body writes")
                if isinstance(n, ir.Index) and n.array in written[1]:
                    _fail(n, f"loop bound reads array '{n.array}', which the loop body writes")
        inner = _Scope(dict(scope.scalars), set(scope.loop_vars))
        inner.scalars[s.var] = s.ty
        inner.loop_vars.add(s.var)
        if par_ok and len(s.body) == 1 and ir.grid_par(s.body[0]):
            self._for(s.body[0], inner, in_launch=in_launch, par_ok=True)
            return
        rows = s.par == "x" and any(isinstance(c, ir.For) and c.reduce for c in s.body)
        for c in s.body:
            if isinstance(c, ir.For) and c.par == "lane":
                self._for(c, inner, in_launch=in_launch, lane_ok=rows)
            else:
                self.stmt(c, inner, in_launch=in_launch, top=False, host=host and s.par is None)

    def _launch(self, s: ir.Launch, scope: _Scope) -> None:
        dims: list[str] = []
        node: ir.Stmt | None = s.body[0] if len(s.body) == 1 else None
        while ir.grid_par(node):
            if node.par not in _PAR_DIMS or node.par in dims:
                _fail(node, f"bad or repeated par dimension {node.par!r}")
            if node.step != 1:
                _fail(node, "a 'par' loop must have step 1")
            dims.append(node.par)
            node = node.body[0] if len(node.body) == 1 else None
        expected = list(reversed(_PAR_DIMS[: len(dims)]))
        if dims and dims != expected:
            _fail(s, f"par dimensions must be {expected} from the outside in, got {dims}")
        for c in s.body:
            if isinstance(c, ir.For) and c.par is not None:
                self._for(c, scope, in_launch=True, par_ok=True)
            else:
                self.stmt(c, scope, in_launch=True, top=False)
        if s.form is not None:
            why = _form_problem(s, bool(dims), looped=bool(scope.loop_vars))
            if why is not None:
                _fail(s, f"launch form '{s.form.value}' does not fit this launch: {why}")

    # --- expressions

    def _same(self, e: ir.Expr, ty: ir.Scalar, what: str, at: ir.Node | None = None) -> None:
        if e.ty != ty:
            _fail(e if at is None or e.loc is not None else at, f"{what} has type {e.ty}, expected {ty}")

    def expr(self, e: ir.Expr, scope: _Scope) -> None:
        if isinstance(e, ir.Const):
            if e.ty not in _CONST_TYPES:
                _fail(e, f"literal of type {e.ty} (literals are i32, i64, u32, u64, f32 or f64)")
            if e.ty.is_float != isinstance(e.value, float) or isinstance(e.value, bool):
                _fail(e, f"literal {e.value!r} does not match its type {e.ty}")
            if e.ty.is_int and ir.wrap_int(e.value, e.ty) != e.value:  # type: ignore[arg-type]
                _fail(e, f"literal {e.value} is out of range for {e.ty}")
        elif isinstance(e, ir.Var):
            ty = scope.scalars.get(e.name)
            if ty is None:
                _fail(e, f"'{e.name}' is not a visible scalar")
            elif ty != e.ty:
                _fail(e, f"'{e.name}' has type {ty}, referenced as {e.ty}")
        elif isinstance(e, ir.Index):
            p = self.arrays.get(e.array)
            if p is None:
                _fail(e, f"'{e.array}' is not an array parameter")
                return
            assert isinstance(p.ty, ir.ArrayType)
            if len(e.indices) != p.ty.rank:
                _fail(e, f"'{e.array}' has {p.ty.rank} dimension(s), indexed with {len(e.indices)}")
            if e.ty != p.ty.elem:
                _fail(e, f"'{e.array}' has elements of type {p.ty.elem}, referenced as {e.ty}")
            for ix in e.indices:
                self.expr(ix, scope)
                if not ix.ty.is_int:
                    _fail(ix, f"array index must be an integer, got {ix.ty}")
        elif isinstance(e, ir.Unary):
            self.expr(e.operand, scope)
            if e.op == "!":
                self._same(e, ir.I32, "'!'")
            elif e.op in ("-", "~"):
                self._same(e.operand, e.ty, f"operand of '{e.op}'")
                if e.ty != ir.promote(e.ty) or (e.op == "~" and e.ty.is_float):
                    _fail(e, f"bad operand type {e.ty} for '{e.op}'")
            else:
                _fail(e, f"unknown unary operator {e.op!r}")
        elif isinstance(e, ir.Binary):
            self._binary(e, scope)
        elif isinstance(e, ir.Select):
            for c in (e.cond, e.then, e.orelse):
                self.expr(c, scope)
            self._same(e.then, e.ty, "'?:' branch")
            self._same(e.orelse, e.ty, "'?:' branch")
        elif isinstance(e, ir.Cast):
            self.expr(e.operand, scope)
        elif isinstance(e, ir.Call):
            for a in e.args:
                self.expr(a, scope)
            self._call(e)
        else:
            _fail(e, f"unknown expression {type(e).__name__}")

    def _binary(self, e: ir.Binary, scope: _Scope) -> None:
        self.expr(e.lhs, scope)
        self.expr(e.rhs, scope)
        op = e.op
        if op in ir.LOGICAL_OPS:
            self._same(e, ir.I32, f"'{op}'")
        elif op in ir.SHIFT_OPS:
            self._same(e.lhs, e.ty, f"left operand of '{op}'", at=e)
            if not (e.ty.is_int and e.rhs.ty.is_int):
                _fail(e, f"'{op}' needs integer operands")
        elif op in ir.COMPARE_OPS:
            self._same(e, ir.I32, f"'{op}'")
            self._same(e.rhs, e.lhs.ty, f"right operand of '{op}'", at=e)
        elif op in ir.ARITH_OPS or op in ir.BITWISE_OPS:
            self._same(e.lhs, e.ty, f"left operand of '{op}'", at=e)
            self._same(e.rhs, e.ty, f"right operand of '{op}'", at=e)
            if e.ty != ir.promote(e.ty):
                _fail(e, f"'{op}' on unpromoted type {e.ty}")
            if (op in ir.BITWISE_OPS or op == "%") and e.ty.is_float:
                _fail(e, f"'{op}' needs integer operands, got {e.ty}")
        else:
            _fail(e, f"unknown binary operator {op!r}")

    def _call(self, e: ir.Call) -> None:
        if e.fn in ir.MATH_FUNCS:
            params, ret = ir.MATH_FUNCS[e.fn]
        elif e.fn in self.funcs:
            f = self.funcs[e.fn]
            params = tuple(p.ty for p in f.params)  # type: ignore[misc]
            if f.ret is None:
                _fail(e, f"void function '{e.fn}' used as a value")
            ret = f.ret  # type: ignore[assignment]
        else:
            _fail(e, f"call to unknown function '{e.fn}'")
            return
        if len(e.args) != len(params):
            _fail(e, f"'{e.fn}' takes {len(params)} argument(s), got {len(e.args)}")
        for a, p in zip(e.args, params):
            self._same(a, p, f"argument of '{e.fn}'")
        self._same(e, ret, f"result of '{e.fn}'")


def _written(body: tuple[ir.Stmt, ...]) -> tuple[set[str], set[str]]:
    """Scalars and arrays assigned anywhere under ``body``."""
    scalars: set[str] = set()
    arrays: set[str] = set()
    for s in body:
        for n in ir.statements(s):
            if isinstance(n, ir.Assign):
                if isinstance(n.target, ir.Var):
                    scalars.add(n.target.name)
                else:
                    arrays.add(n.target.array)
    return scalars, arrays



def _form_problem(s: ir.Launch, grid: bool, *, looped: bool) -> str | None:
    """Why ``s``'s form cannot run it (the structure each form needs, passes/launch_forms.py), or None.
    ``grid``: it has grid par loops; ``looped``: it sits in a host loop."""
    from passes import launch_forms

    form = s.form
    if form is ir.LaunchForm.SERIAL:
        return "it has 'par' loops (a serial launch has none)" if grid else None
    if not grid and form in (ir.LaunchForm.PLAIN, ir.LaunchForm.TILED):
        return "it has no 'par' loop"
    if form is ir.LaunchForm.PLAIN:
        return None
    atomic = any(isinstance(n, ir.For) and n.atomic for n in ir.walk(s))
    if atomic:
        return "it has atomic updates, which only the plain and serial forms make"
    if form is ir.LaunchForm.TILED:
        return None if len(s.body) == 1 else "a tiled launch is one loop nest"
    shape = launch_forms.reduction_shape(s)
    want = "block" if form is ir.LaunchForm.GRID else form.value
    if shape != want:
        return f"its reductions are of the {shape} form" if shape is not None else "it has no reduction of that form"
    if form is ir.LaunchForm.GRID:
        if looped:
            return "a grid reduction runs outside host loops (in a host loop: 'block')"
        if not launch_forms.grid_ready(s):
            return "its terms read what the statements before the reduction write (a 'block' launch)"
    return None


def _host_problem(s: ir.For, in_launch: bool) -> str | None:
    """Why ``s``'s host-loop schedule cannot hold (passes/launch_forms.py), or None."""
    from passes import launch_forms

    if in_launch or not ir.has_launch(s):
        return "only a host loop (outside launches, holding one) has a schedule"
    if len(set(s.host)) != len(s.host) or any(h not in ir.HOST_SCHEDULES for h in s.host):
        return f"the schedules are {', '.join(ir.HOST_SCHEDULES)}, each once"
    if "oneblock" in s.host:
        if not launch_forms.oneblock_eligible(s):
            return ("one block runs only a body of launches whose par loops hold no loop and have bounds "
                    "affine in the host loop's variable")
        if any(isinstance(c, ir.Launch) and c.form is not None and c.form not in launch_forms.ONE_BLOCK
               for c in s.body):
            return "one block runs only plain, serial and block launches"
    return None
