"""CUDA back end: renders mapped kernels (``passes.map_gpu``) as one ``.cu`` file.

Python renders expressions and statements: :class:`ExprPrinter` is a
:class:`~transpile.ir.Visitor` that follows C's precedence table, so only
needed parentheses are printed (plus a few that gcc's ``-Wparentheses`` asks
for); :class:`StmtPrinter` turns statements into indented lines.  Jinja fills
the skeleton ``templates/module.cu.j2`` from prepared lists of strings.

Decide first, then print: the emitter of a kernel gathers its facts (arrays, extents, device
scalars, names), then :func:`transpile.cuda.forms.plan_kernel` records every launch's form and
parameters and every host loop's (one block, fused steps); only then does the host printer run,
each launch printed by its form's printer in :data:`FORMS` (one signature,
:data:`transpile.cuda.forms.Emit`).

For each kernel ``NAME`` the file holds (see docs in the template):

* ``NAME_kernel0``, ``NAME_kernel1``, ...: one ``__global__`` function per ``Launch``;
  ``par`` loops become grid-stride loops with 64-bit counters.
* ``NAME_device(...)``: host-side scalar code, host loops and the launches
  (inside host loops, once per iteration), on a stream, with device
  pointers; returns the first CUDA error.
* ``NAME(...)``: the drop-in replacement for the C function (host pointers).

The printers and templates mark the CUDA-sensitive regions they write (index
computations, bounds guards, barriers, ...: :mod:`transpile.cuda.regions`);
:func:`emit` strips the marks, :func:`emit_regions` also returns the spans.

Every CUDA spelling the Python side emits is a module-level constant below.
Output is deterministic: generated names are a base plus a counter, chosen to
avoid every identifier of the kernel.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from passes import launch_forms, tile
from transpile import ir
from transpile.cuda import chain as cuda_chain
from transpile.cuda import cols as cuda_cols
from transpile.cuda import forms, regions
from transpile.cuda import names as cuda_names
from transpile.cuda import reduce as cuda_reduce
from transpile.cuda import sweep as cuda_sweep
from transpile.cuda import tiled as cuda_tiled
from transpile.cuda.forms import Emitted, Form, LaunchContext
from transpile.cuda.printer import (
    BLOCK_FN,
    DEFAULT_STREAM,
    EXTENT_FN,
    GLOBAL,
    GRID_CAPS,
    GRID_FN,
    HOST_DEVICE,
    INDEX_TYPE,
    LAUNCH_BOUNDS,
    MAYBE_UNUSED,
    PREC,
    RESERVED,
    STREAM_TYPE,
    TEMPLATE,
    ExprPrinter,
    KernelParam,
    Namer,
    ScalarLoad,
    StmtPrinter,
    assigned,
    break_on_error,
    check_mapped,
    checked_launch,
    ctype,
    environment,
    host_launches,
    is_zero,
    launch_call,
    par_chain,
    return_ctype,
    var_names,
)


class _HostPrinter(StmtPrinter):
    """Renders the host side of ``NAME_device`` as template steps.

    Host statements become ``host`` steps (lines); each ``Launch`` becomes a
    ``launch`` step indented to its depth (its lines are printed at the end, at
    their final indentation: :func:`_launch_lines`), or a ``sweep`` step whose
    form wrote its lines; a host loop's header and closing brace are host lines
    around its body's steps.  A launch leaves the innermost enclosing loop with
    ``break`` on an error (:func:`transpile.cuda.printer.checked_launch`), so
    each host loop is followed by a check that breaks out of the next level.
    The launches' forms and the host loops' (one block, fused steps) are the
    emitter's plan (:mod:`transpile.cuda.forms`), made before this runs.
    """

    in_kernel = False  # a host ``if`` is never a bounds guard (launch guards are _launch_lines')

    def __init__(self, emitter: _KernelEmitter) -> None:
        super().__init__(emitter.expr, emitter.host_namer, depth=2)
        self.emitter = emitter
        self.function = emitter.name
        self.steps: list[dict[str, object]] = []
        self.scope: dict[str, ir.Scalar] = {}  # host loop variables and locals visible here

    def flush(self) -> None:
        if self.lines:
            self.steps.append({"kind": "host", "lines": self.lines})
            self.lines = []

    def visit_Launch(self, s: ir.Launch) -> None:
        self.flush()
        e = self.emitter
        kern, step = e.launch(s, dict(self.scope))
        plan = e.plan.launches[len(e.launch_log)]
        assert step["shape"] == plan.form.value, f"planned {plan.form}, printed {step['shape']}"
        self.steps.append({**step, "pad": "  " * (self.depth - 2)})
        e.kernels.append(kern)
        e.launch_log.append(LaunchInfo(str(kern["name"]), plan.form.value, s, forms.block_threads(plan), plan))

    def visit_Alloc(self, s: ir.Alloc) -> None:
        self.flush()
        e = self.emitter
        self.steps.append({
            "kind": "alloc", "name": e.ident(s.name), "pad": "",
            "extents": [f"const {INDEX_TYPE} {h} = {e.expr(d)};" for h, d in e.hoisted.get(s.name, [])],
            "bytes": e.host_namer.fresh(f"{s.name}_bytes"), "size": e._size(s.ty)})

    def visit_Decl(self, s: ir.Decl) -> None:
        e = self.emitter
        if s.name in e.device_scalars:
            self.line(f"// {ctype(s.ty)} {e.ident(s.name)} lives on the device: "
                      f"{e.names['scal']}->{e.ident(s.name)}")
            return
        self._host_only(s)
        if self.depth > 2:
            self.scope[s.name] = s.ty
        super().visit_Decl(s)

    def visit_Assign(self, s: ir.Assign) -> None:
        self._host_only(s)
        super().visit_Assign(s)

    def visit_If(self, s: ir.If) -> None:
        self._host_only(s)
        super().visit_If(s)

    def _host_only(self, s: ir.Stmt) -> None:
        assert not (var_names(s) | assigned(s)) & set(self.emitter.device_scalars), \
            f"host statement touches a device scalar: {s!r}"

    def visit_For(self, s: ir.For) -> None:
        bounds = var_names(s.lo) | var_names(s.hi)
        assert s.par is None and not bounds & set(self.emitter.device_scalars), f"bad host loop {s!r}"
        from transpile.cuda import oneblock as cuda_oneblock
        from transpile.cuda import steps as cuda_steps

        e = self.emitter
        planned = e.plan.loops[e._loops_seen]  # one block, fused steps: decided before printing
        assert planned.loop is s, f"host loop {e._loops_seen} is not the one planned: {s!r}"
        e._loops_seen += 1
        one, fused = planned.oneblock, planned.steps
        if one or fused:  # the loop's steps are made first, then placed (deeper) in the else branches
            self.flush()
            outer_steps, self.steps = self.steps, []
            first_kernel = len(e.kernels)
        saved = dict(self.scope)
        self.scope[s.var] = s.ty
        super().visit_For(s)
        self.scope = saved
        err = e.names["err"]
        self.line(f"if ({err} != cudaSuccess) {{")
        self.line("  break;")
        self.line("}")
        if not (one or fused):
            e.loop_log.append(HostLoopInfo(planned))
            return
        self.flush()
        loop_steps, self.steps = self.steps, outer_steps
        launches = [st for st in loop_steps if st.get("kind") == "launch"]
        built = cuda_oneblock.build(e, s, launches, e.kernels[first_kernel:], "  " * self.depth) if one else None
        assert built is not None or not one, f"one-block loop not built: {s!r}"
        if built is None and fused is None:
            e.loop_log.append(HostLoopInfo(planned))
            self.steps += loop_steps
            return
        depth = 0  # else branches opened around the launch-by-launch loop
        info = HostLoopInfo(planned)
        if built is not None:
            kernel, args, setup, ok = built
            e.kernels.append(kernel)
            info = dataclasses.replace(info, oneblock=str(kernel["name"]),
                                       oneblock_threads=int(kernel["threads"]))  # type: ignore[call-overload]
            launch = launch_call(str(kernel["name"]), "1u", f"{kernel['threads']}u", "0", e.names["stream"], args)
            self.lines += setup
            # NOTE: the emitted comment keeps the module's path before issue 42's move (output byte-identical)
            self.line(f"if ({ok}) {{  // one block runs the whole loop (transpile/cuda_oneblock.py)")
            self.lines += checked_launch(launch, err, "  " * (self.depth + 1))
            self.line("} else {")
            depth += 1
        if fused is not None:
            pad = "  " * (self.depth + depth)
            kernel, setup, fused_lines, ok = cuda_steps.build(e, s, fused, dict(self.scope), pad)
            e.kernels.append(kernel)
            info = dataclasses.replace(info, steps=str(kernel["name"]))
            self.lines += setup
            self.lines.append(f"{pad}if ({ok}) {{")
            self.lines += fused_lines
            self.lines.append(f"{pad}}} else {{")
            depth += 1
        self.flush()
        for _ in range(depth):
            loop_steps = [_indent(st) for st in loop_steps]
        self.steps += loop_steps
        e.loop_log.append(info)
        for k in reversed(range(depth)):
            self.lines.append("  " * (self.depth + k) + "}")


def _indent(step: dict[str, object]) -> dict[str, object]:
    """A host step one level deeper (the launch-by-launch loop in the else branch of a one-block test)."""
    if step.get("kind") == "host":
        return {**step, "lines": ["  " + str(x) for x in step["lines"]]}  # type: ignore[attr-defined]
    return {**step, "pad": "  " + str(step.get("pad", ""))}


def _launch_lines(step: dict[str, object], err: str, stream: str) -> list[str]:
    """The host lines of a template launch step (``kind: launch``) at its final indentation: its trip
    counts, its guard, the launch with its error check, or, for a tensor-core kernel (``alt``), the
    launch of the kernel the device runs (``transpile_mma_ok``) and one check after both."""
    pad = str(step["pad"]) + "    "
    guard = step["guard"]
    lines = [pad + regions.mark("launch", f"const long long {t['name']} = {t['expr']};")
             for t in step["trips"]]  # type: ignore[attr-defined]
    if guard:
        lines.append(f"{pad}if ({regions.mark('guard', str(guard))}) {{")
        pad += "  "
    call = launch_call(str(step["kernel"]), ", ".join(step["grid"]), ", ".join(step["block"]),  # type: ignore[call-overload]
                       str(step.get("smem", "0")), stream, step["args"])  # type: ignore[arg-type]
    if "alt" in step:
        alt: dict[str, object] = step["alt"]  # type: ignore[assignment]
        ok = regions.mark("guard", f"transpile_mma_ok((const void *){step['kernel']}, {step['arch']})")
        lines.append(f"{pad}if ({ok}) {{")
        lines += checked_launch(call, err, pad + "  ", check=False)
        lines.append(f"{pad}}} else {{")
        lines += checked_launch(launch_call(str(alt["kernel"]), ", ".join(alt["grid"]), ", ".join(alt["block"]),  # type: ignore[call-overload]
                                            "0", stream, step["args"]), err, pad + "  ", check=False)  # type: ignore[arg-type]
        lines.append(f"{pad}}}")
        lines += break_on_error(err, pad)
    else:
        lines += checked_launch(call, err, pad)
    if guard:
        lines.append(f"{pad[:-2]}}}")
    return lines


def _emit_plain(plan: forms.LaunchPlan, ctx: LaunchContext) -> Emitted:
    """The ``plain`` and ``serial`` forms: the launch body as it is, grid-stride loops over its par loops."""
    e, namer, params, args = ctx.emitter, ctx.namer, ctx.params, ctx.args
    launch = plan.promoted or plan.launch  # registers for re-read elements (planned: passes/promote.py)
    printer = StmtPrinter(e.expr, namer)
    printer.rows, printer.stream, printer.split_rows = plan.rows, plan.stream, plan.split_rows
    body = printer.emit(launch.body)
    config = e.config(plan)
    if plan.private is not None:  # the same loop again, its updates into the block's shared bins
        from transpile.cuda import atomics as cuda_atomics

        array, shared, flag, count, ty = e._private_bins(plan.private, namer, params, args, config)
        shared_printer = StmtPrinter(e.expr, namer)
        shared_printer.private = {array: shared}
        body = cuda_atomics.private_kernel(shared_printer.emit(launch.body), body, flag, array, shared, count, ty,
                                           e.expr.mark)
    kernel: dict[str, object] = {"name": ctx.name, "params": params, "body": ctx.loads + body + ctx.stores,
                                 "qualifiers": f"{GLOBAL} void {LAUNCH_BOUNDS}({forms.threads(plan)})"}
    return kernel, {"kind": "launch", "kernel": ctx.name, "args": args, "shape": plan.form.value, **config}


def _emit_tiled(plan: forms.LaunchPlan, ctx: LaunchContext) -> Emitted:
    """The ``tiled`` and ``mma`` forms (:mod:`transpile.cuda.tiled`, :mod:`transpile.cuda.mma`), on the
    collapsed nest where the plan found one."""
    e, expr = ctx.emitter, ctx.emitter.expr
    assert plan.tile is not None, plan
    if plan.collapsed is not None:
        ctx.namer.taken.add(plan.collapsed.var)
        extents = {a: d[1:] if a in plan.collapsed.arrays else d for a, d in e.extents.items()}
        expr = ExprPrinter(extents, e.rename, marks=True)
    return _shaped(ctx, *cuda_tiled.launch(plan.tile, plan.mma, expr, ctx.namer, ctx.loads, e.config(plan)))


def _emit_cols(plan: forms.LaunchPlan, ctx: LaunchContext) -> Emitted:
    """The ``cols`` form (:mod:`transpile.cuda.cols`)."""
    e = ctx.emitter
    return _shaped(ctx, *cuda_cols.launch(plan.launch, e.expr, ctx.namer, ctx.loads, ctx.stores, e.config(plan)))


def _emit_reduction(plan: forms.LaunchPlan, ctx: LaunchContext) -> Emitted:
    """The ``block``, ``rows`` and ``rowprog`` forms (:mod:`transpile.cuda.reduce`)."""
    e = ctx.emitter
    return _shaped(ctx, *cuda_reduce.launch(plan.launch, plan.form.value, e.expr, ctx.namer, ctx.loads, ctx.stores,
                                            e.config(plan), e.host_namer, e.fixed_scalars))


def _shaped(ctx: LaunchContext, quals: str, body: list[str], config: dict[str, object]) -> Emitted:
    """The kernel and the template launch step of a form printed as ``(qualifiers, body, config)``:
    ``config`` may add parameters and arguments and carry a fallback kernel (a tensor-core kernel's FMA kernel, where it is not compiled in)."""
    e, name, params, args = ctx.emitter, ctx.name, ctx.params, ctx.args
    more_params, more_args = config.pop("params", []), config.pop("args", [])
    fallback = config.pop("fallback", None)
    if fallback is not None:  # a tensor-core kernel: its FMA kernel where it is not compiled in
        fb = e.namer.fresh(f"{name}_fma")
        e.folds[name] = [{"name": fb, "params": params + more_params, "body": fallback["body"],  # type: ignore[index, operator]
                          "qualifiers": fallback["qualifiers"]}]  # type: ignore[index]
        config["alt"] = {"kernel": fb, "grid": fallback["grid"], "block": fallback["block"]}  # type: ignore[index]
    return ({"name": name, "params": params + more_params, "body": body, "qualifiers": quals},  # type: ignore[operator]
            {"kind": "launch", "kernel": name, "args": args + more_args, **config})  # type: ignore[operator]


#: One printer per launch form, one signature (:data:`transpile.cuda.forms.Emit`).
FORMS: dict[Form, forms.Emit] = {
    Form.SERIAL: _emit_plain, Form.PLAIN: _emit_plain,
    Form.TILED: _emit_tiled, Form.MMA: _emit_tiled,
    Form.BLOCK: _emit_reduction, Form.ROWS: _emit_reduction, Form.ROWPROG: _emit_reduction,
    Form.COLS: _emit_cols,
    Form.GRID: cuda_reduce.grid_launch, Form.SWEEP: cuda_sweep.launch, Form.CHAIN: cuda_chain.launch,
}


class _KernelEmitter:
    """Prepares the template context of one mapped kernel.

    Scalars: scalar params and top-level ``Decl`` statements live on the host and are
    passed by value, except *device scalars*, written by one launch and used by
    another: those live in one device struct (``NAME_scalars``), passed as
    pointers, loaded into a local at kernel start and stored back at the end.
    Arrays: params (device buffers the caller owns) and top-level ``Alloc``
    statements (allocated on the stream where declared, freed at the end).
    """

    def __init__(self, kernel: ir.Kernel, module_names: set[str], tiling: tile.Options | None = None) -> None:
        check_mapped(kernel)
        self.k = kernel
        self._param_pos: dict[str, int] | None = None  # parameter name -> position, once a launch asks
        self.tiling = tiling
        self.name = kernel.name
        used = ir.identifiers(kernel)
        namer = Namer(used | module_names | RESERVED)
        self.rename = {n: namer.fresh(n + "_") for n in sorted(used & RESERVED)}
        self.namer = namer
        self.launches = host_launches(kernel.body)
        self.kernels: list[dict[str, object]] = []
        self.launch_log: list[LaunchInfo] = []  # what each Launch became (launches())
        self.loop_log: list[HostLoopInfo] = []  # what each host loop became (emit_with_facts())
        self.copies: dict[str, dict[str, object]] = {}  # the drop-in's copies per array (cuda/host.py: arrays)
        self.scratch: list[tuple[str, str]] = []  # (declaration, name) of launch scratch (cuda_sweep)
        self.folds: dict[str, list[dict[str, object]]] = {}  # launch kernel name -> the kernels after it (its fold)
        self.host_decls = {s.name: s.ty for s in kernel.body if isinstance(s, ir.Decl)}
        scalars = {p.name: p.ty for p in kernel.params if isinstance(p.ty, ir.Scalar)}
        self.scalars: dict[str, ir.Scalar] = {**scalars, **self.host_decls}  # type: ignore[dict-item]
        self.device_scalars = launch_forms.device_scalars(kernel)
        self.arrays: dict[str, ir.ArrayType] = {p.name: p.ty for p in kernel.params
                                                if isinstance(p.ty, ir.ArrayType)}
        self.allocs = {s.name: s.ty for s in kernel.body if isinstance(s, ir.Alloc)}
        self.original: ir.Kernel | None = None  # the kernel before lowering: the drop-in's host path

        # Extents for flattening.  A dimension is rendered inline when it reads only
        # scalar params that never change; otherwise its value is hoisted (on entry
        # for params, where declared for Allocs) into a `long long` passed to kernels.
        fixed = set(scalars) - assigned(kernel)
        self.fixed_scalars = frozenset(fixed)  # scalar params no statement assigns: the host has them throughout
        self.extents: dict[str, tuple[ir.Expr, ...]] = {}
        self.extent_vars: dict[str, set[str]] = {}
        self.hoisted: dict[str, list[tuple[str, ir.Expr]]] = {}
        for name, ty in {**self.arrays, **self.allocs}.items():
            dims: list[ir.Expr] = []
            for d, dim in enumerate(ty.dims[1:], start=1):
                if var_names(dim) <= fixed:
                    dims.append(dim)
                    self.extent_vars.setdefault(name, set()).update(var_names(dim))
                else:
                    hname = namer.fresh(f"{name}_n{d}")
                    self.hoisted.setdefault(name, []).append((hname, dim))
                    dims.append(ir.Var(hname, ir.I64))
            if dims:
                self.extents[name] = tuple(dims)
        self.expr = ExprPrinter(self.extents, self.rename, marks=True)
        self.names = {b: namer.fresh(b) for b in ("err", "stream", "scal", "freed", "hook", "hook_ctx")}
        self.host_namer = namer.child()  # names local to the device function
        # Every launch's form and every host loop's, decided before anything is printed.
        self.plan = forms.plan_kernel(self)
        namer.taken |= self.plan.reserved  # names the plans chose (collapsed nests, registers): no later name takes them
        self._loops_seen = 0  # host loops printed so far (the index of the next one's plan)

    def ident(self, name: str) -> str:
        return self.rename.get(name, name)

    def _size(self, ty: ir.ArrayType) -> str:
        """Byte size of an array, in size_t arithmetic (negative extents count as 0)."""
        return " * ".join(f"{EXTENT_FN}({self.expr(d)})" for d in ty.dims) + f" * sizeof({ctype(ty.elem)})"

    # -- __global__ kernels

    def launch(self, launch: ir.Launch, host_locals: Mapping[str, ir.Scalar]) -> Emitted:
        """The ``__global__`` function of ``launch`` and the host-side launch step, printed in the form
        planned for it (:mod:`transpile.cuda.forms`): the parameters every form shares, then the form's
        printer (:data:`FORMS`).

        ``host_locals``: host loop variables and host-loop locals in scope,
        passed by value like host scalars (the plan has them too).
        """
        plan = self.plan.launches[len(self.launch_log)]
        assert plan.launch is launch, f"launch {len(self.launch_log)} is not the one planned: {launch!r}"
        assert dict(plan.host_locals) == dict(host_locals), f"planned {plan.host_locals} in scope {host_locals}"
        name = f"{self.name}_kernel{len(self.kernels)}"
        uses = ir.array_uses(launch.body)
        referenced = var_names(launch)
        for a in uses:
            referenced |= self.extent_vars.get(a, set())
        written = assigned(launch)
        chain = par_chain(launch)
        namer = self.namer.child()
        params: list[KernelParam] = []
        args: list[str] = []
        # C parameter order, then local arrays and host locals in declaration order (of the
        # parameters, only those the launch names: a generated function may have thousands).
        if self._param_pos is None:
            self._param_pos = {p.name: n for n, p in enumerate(self.k.params)}
        named = sorted({self._param_pos[v] for v in (*uses, *referenced) if v in self._param_pos})
        candidates: list[tuple[str, ir.Type]] = [(self.k.params[n].name, self.k.params[n].ty) for n in named]
        candidates += [*self.allocs.items(), *self.host_decls.items(), *host_locals.items()]
        for var, ty in candidates:
            if isinstance(ty, ir.ArrayType) and var in uses:
                # No __restrict__ on an array thread 0 writes and the row's other threads read
                # (planned: LaunchPlan.unrestricted, cuda_reduce.thread0_shared).
                params.append(KernelParam(ctype(ty.elem), self.ident(var), pointer=True, const=not uses[var][1],
                                          restrict=var not in plan.unrestricted))
                args.append(self.ident(var))
            elif isinstance(ty, ir.Scalar) and var in referenced and var not in self.device_scalars:
                params.append(KernelParam(ctype(ty), self.ident(var)))
                args.append(self.ident(var))
        loads: list[ScalarLoad] = []
        stores: list[str] = []
        for var in self.device_scalars:
            if var not in referenced:
                continue
            assert not (chain and var in written), f"parallel launch writes device scalar {var}: {launch!r}"
            st, ptr = ctype(self.scalars[var]), namer.fresh(f"{var}_ptr")
            params.append(KernelParam(st, ptr, pointer=True, restrict=True))
            args.append(f"&{self.names['scal']}->{self.ident(var)}")
            loads.append(ScalarLoad(st, self.ident(var), ptr, var in written))
            if var in written:
                stores.append(f"  *{ptr} = {self.ident(var)};")
        for var, _ty in candidates:
            if var in uses:
                for hname, _dim in self.hoisted.get(var, []):
                    params.append(KernelParam(INDEX_TYPE, hname))
                    args.append(hname)
        return FORMS[plan.form](plan, LaunchContext(self, name, params, args, [x.line() for x in loads], stores, namer,
                                                    loads))

    def _private_bins(self, name: str, namer: Namer, params: list[KernelParam],
                      args: list[str], config: dict[str, object]) -> tuple[str, str, str, str, ir.Scalar]:
        """For a launch whose atomic array ``name`` lives in shared memory when it fits
        (:mod:`transpile.cuda.atomics`, planned: ``LaunchPlan.private``): adds the host's choice (a
        kernel parameter, the dynamic shared memory, a grid of at most PRIVATE_BLOCKS_PER_SM blocks an
        SM when taken) to ``params``/``args``/``config`` and returns (array, its shared copy, the flag
        parameter, the bin-count parameter, element type) for :func:`transpile.cuda.atomics.private_kernel`."""
        from transpile.cuda import atomics as cuda_atomics

        arrays = {**self.arrays, **self.allocs}
        ty = arrays[name].elem
        (extent,) = arrays[name].dims
        flag, shared, count_param = namer.fresh("private_bins"), namer.fresh(f"{name}_bins"), namer.fresh(f"{name}_count")
        host_flag, env = self.host_namer.fresh(f"{name}_private"), self.host_namer.fresh("bins_env")
        count = self.expr(extent)
        bytes_ = f"(long long)({count}) * (long long)sizeof({ctype(ty)})"
        trips = list(config["trips"])  # type: ignore[call-overload]
        trips.append({"name": host_flag, "expr": (
            f'[&] {{ const char *{env} = getenv("{cuda_atomics.PRIVATE_ENV}"); const long long b = {bytes_}; '
            f"return b > 0 && b <= ({env} != NULL ? atoll({env}) : {cuda_atomics.PRIVATE_BYTES}LL) ? 1LL : 0LL; }}()")})
        config["trips"] = trips
        grid = list(config["grid"])  # type: ignore[call-overload]
        cap = f"{cuda_atomics.PRIVATE_BLOCKS_PER_SM}u * (unsigned int)transpile_sm_count()"
        grid[0] = f"({host_flag} && {grid[0]} > {cap} ? {cap} : {grid[0]})"
        config["grid"] = grid
        config["smem"] = f"(size_t)({host_flag} ? {bytes_} : 0)"
        params += [KernelParam("int", flag), KernelParam(INDEX_TYPE, count_param)]
        args += [f"(int){host_flag}", f"({INDEX_TYPE})({count})"]
        return name, shared, flag, count_param, ty

    def trip_count(self, loop: ir.For) -> str:
        """``hi - lo`` of a step-1 loop, as host C text (``hi`` alone when ``lo`` is 0)."""
        if is_zero(loop.lo):
            return self.expr(loop.hi)
        return f"{self.expr.cast_to(loop.hi, INDEX_TYPE)} - {self.expr.operand(loop.lo, PREC['-'] + 1)}"

    def config(self, plan: forms.LaunchPlan) -> dict[str, object]:
        """Trip counts, guard and grid/block sizes of the plain launch of ``plan.chain`` (host side),
        with the planned block shape and the rows and planes a thread takes."""
        chain = plan.chain
        if not chain:
            return {"trips": [], "guard": None, "grid": ["1u"], "block": ["1u"]}
        dims = sorted(loop.par for loop in chain)  # type: ignore[type-var]
        assert dims == sorted("xyz"[: len(chain)]), f"par dims {dims} must be x, x y or x y z"
        shape = plan.block
        trips, grid, counts = [], ["1u", "1u", "1u"], []
        for n, loop in enumerate(chain):
            a = "xyz".index(loop.par)  # type: ignore[arg-type]
            t = self._trips(loop, chain[:n], trips)
            counts.append(t)
            per = shape[a] * (plan.rows if loop.par == "y" else plan.stream if loop.par == "z" else 1)
            grid[a] = f"{GRID_FN}({t}, {per}u, {GRID_CAPS[a]}u)"
        block = [f"{b}u" for b in shape]
        if len(chain) == 1 and shape[0] % 64 == 0:
            # NOTE: a 1-D grid-stride launch may run with fewer threads per block than
            # ``shape`` (transpile_block, decided at run time from the trip count): adi's
            # 4000-iteration sweeps in blocks of 256 used 16 of 132 SMs (2x slower than
            # blocks of 32 on the H200).  The kernel reads blockDim, so only the host changes.
            t = counts[0]
            block[0] = f"{BLOCK_FN}({t}, {shape[0]}u)"
            grid[0] = f"{GRID_FN}({t}, {block[0]}, {GRID_CAPS[0]}u)"
        return {"trips": trips, "guard": " && ".join(f"{t} > 0" for t in counts),
                "grid": grid, "block": block}

    def _trips(self, loop: ir.For, outer: Sequence[ir.For], trips: list[dict[str, str]]) -> str:
        """The host variable holding ``loop``'s trip count (its definitions appended to ``trips``).

        A loop whose bounds read outer par variables (``passes.map_gpu.triangular``: affine in them,
        the outer bounds host-computable) gets the largest trip count over the corners of the outer
        ranges, where an affine count is largest: the grid covers the triangle's bounding box and
        the kernel's own bounds, evaluated per thread, leave the rest idle."""
        reads = var_names(loop.lo) | var_names(loop.hi)
        corners = [o for o in outer if o.var in reads]
        t = self.host_namer.fresh(f"{loop.var}_n")
        if not corners:
            trips.append({"name": t, "expr": self.trip_count(loop)})
            return t
        names = []
        for ends in itertools.product(*[(o.lo, ir.binary("-", o.hi, ir.const(1, o.hi.ty))) for o in corners]):
            at = {o.var: ir.cast(e, o.ty) for o, e in zip(corners, ends)}
            name = self.host_namer.fresh(f"{loop.var}_n")
            trips.append({"name": name, "expr": self.trip_count(dataclasses.replace(
                loop, lo=ir.substitute(loop.lo, at), hi=ir.substitute(loop.hi, at)))})
            names.append(name)
        acc = names[0]
        for name in names[1:]:
            top = t if name == names[-1] else self.host_namer.fresh(f"{loop.var}_n")
            trips.append({"name": top, "expr": f"{acc} > {name} ? {acc} : {name}"})
            acc = top
        return acc

    # -- the host side

    def context(self) -> dict[str, object]:
        """The template context of this kernel."""
        host = _HostPrinter(self)
        first_step: list[int] = []  # per top-level statement: the index of its first step
        for s in self.k.body:
            first_step.append(len(host.steps))
            host.emit([s])
            host.flush()
        steps = host.steps
        for st in steps:  # every launch at its final indentation (one-block and fused loops move them)
            if st["kind"] == "launch":
                st["lines"] = _launch_lines(st, self.names["err"], self.names["stream"])

        from transpile.cuda import (
            dropin as dropin_host,  # the drop-in's transfers and host path (dropin.cu.j2)
        )
        from transpile.cuda import host as cuda_host

        arrays = cuda_host.arrays(self)
        self.copies = arrays
        plan = cuda_host.plan(self.k, {n: bool(a["copy_in"]) for n, a in arrays.items()},
                              {n: bool(a["copy_out"]) for n, a in arrays.items()})
        for n, a in arrays.items():
            a["in_at"], a["out_after"] = cuda_host.skip_copy_in(plan.in_at[n], str(a["skip_in"])), plan.out_after[n]
        for point, stmt in reversed(list(enumerate(plan.starts, start=1))):  # the drop-in's copies between phases
            steps.insert(first_step[stmt], {"kind": "hook", "point": point})
        scalar_params = [p.name for p in self.k.params if isinstance(p.ty, ir.Scalar)]
        return {
            "name": self.name,
            "kernels": [g for k in self.kernels for g in (k, *self.folds.get(str(k["name"]), ()))],
            "steps": steps,
            "names": self.names,
            "prototype": self._prototype(),
            "c_params": [self._c_param(p, device=False) for p in self.k.c_params],
            "ret": None if self.k.ret is None else {"ctype": return_ctype(self.k), "name": self.ident(self.k.ret)},
            "device_params": [self._c_param(p, device=True) for p in self.k.params]
            + [f"{STREAM_TYPE} {self.names['stream']}"],
            "device_param_names": [self.ident(p.name) for p in self.k.params] + [self.names["stream"]],
            "device_args": [arrays[p.name]["dev"] if p.name in arrays else self.ident(p.name)
                            for p in self.k.params] + [DEFAULT_STREAM],
            "arrays": list(arrays.values()),
            "dropin": {**cuda_host.dropin(self), "last": plan.last, "phased": bool(plan.starts),
                       "host": dropin_host.host_path(self, self.original, list(arrays.values()))},
            "hoisted": [f"const {INDEX_TYPE} {h} = {self.expr(d)};"
                        for a in self.arrays for h, d in self.hoisted.get(a, [])],
            "allocs": [f"{ctype(ty.elem)} *{self.ident(a)}" for a, ty in self.allocs.items()]
            + [decl for decl, _ in self.scratch],
            "frees": [self.ident(a) for a in self.allocs] + [n for _, n in self.scratch]
            + ([self.names["scal"]] if self.device_scalars else []),
            "device_scalars": [f"{ctype(self.scalars[s])} {self.ident(s)}" for s in self.device_scalars],
            "scalar_inits": [self.ident(s) for s in scalar_params if s in self.device_scalars],
        }

    def _c_param(self, p: ir.Param, *, device: bool) -> str:
        if not device and p.ctype is not None:  # the drop-in: the C type as written (transpile/frontend/header.py)
            return f"{p.ctype}{'' if p.ctype.endswith('*') else ' '}{self.ident(p.name)}"
        if isinstance(p.ty, ir.Scalar):
            return f"{ctype(p.ty)} {self.ident(p.name)}"
        const = "const " if device and p.intent == "in" else ""
        return f"{const}{ctype(p.ty.elem)} *{self.ident(p.name)}"

    def _prototype(self) -> str:
        """The original C declaration, for a comment."""
        parts = []
        for p in self.k.c_params:
            if isinstance(p.ty, ir.Scalar):
                parts.append(f"{ctype(p.ty)} {p.name}")
            elif p.pointer:
                parts.append(f"{ctype(p.ty.elem)} *{p.name}")
            else:
                parts.append(f"{ctype(p.ty.elem)} {p.name}" + "".join(f"[{self.expr(d)}]" for d in p.ty.dims))
        return f"{return_ctype(self.k)} {self.name}({', '.join(parts) or 'void'});"


def _func(f: ir.Func) -> dict[str, object]:
    used = ir.identifiers(f)
    namer = Namer(used | RESERVED)
    rename = {n: namer.fresh(n + "_") for n in sorted(used & RESERVED)}
    expr = ExprPrinter(rename=rename)
    params = ", ".join(f"{ctype(p.ty)} {expr.ident(p.name)}" for p in f.params  # type: ignore[arg-type]
                       ) or "void"
    ret = "void" if f.ret is None else ctype(f.ret)
    return {"signature": f"{MAYBE_UNUSED} {HOST_DEVICE} {ret} {f.name}({params})",
            "body": StmtPrinter(expr, namer).emit(f.body)}


def emit(module: ir.Module, *, source: str, tiling: tile.Options | None = None,
         host: ir.Module | None = None) -> str:
    """The CUDA translation unit for ``module``, whose kernels must be mapped (``passes.map_gpu``).

    ``source`` names the input in the header comment; ``tiling`` overrides the
    tiled matmul path's defaults (:mod:`passes.tile`); ``host``, the module before lowering, gives
    each drop-in a host path (:mod:`transpile.cuda.dropin`).
    """
    return regions.clean(_render(module, source=source, tiling=tiling, host=host))


def emit_regions(module: ir.Module, *, source: str, tiling: tile.Options | None = None
                 ) -> tuple[str, list[regions.Span]]:
    """:func:`emit`'s text and the CUDA-sensitive regions the emitters marked in it."""
    return regions.strip(_render(module, source=source, tiling=tiling))


@dataclass(frozen=True)
class LaunchInfo:
    """What the emitter made of one ``Launch``: its ``__global__`` name, its shape and block size.

    ``shape``: ``plain`` (one thread per iteration of the par loops), ``serial``
    (one thread), ``block``/``rows``/``cols`` (parallel reductions,
    :mod:`transpile.cuda.reduce`), ``sweep`` (row and column reductions in one pass and a fold
    launch, :mod:`transpile.cuda.sweep`), ``tiled`` (FMA register tiles) or ``mma`` (fp64
    tensor cores): the values of :class:`transpile.cuda.forms.Form`.  ``launch`` is the IR node,
    ``block`` the threads per block (x, y, z), ``plan`` the form and its parameters as decided before
    printing (:class:`transpile.cuda.forms.LaunchPlan`; the cost model reads it).
    """

    kernel: str
    shape: str
    launch: ir.Launch
    block: tuple[int, ...]
    plan: forms.LaunchPlan | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class HostLoopInfo:
    """What the emitter made of one host loop (a ``For`` outside launches that holds launches):
    ``plan`` as decided before printing (:class:`transpile.cuda.forms.HostLoopPlan`); ``oneblock``,
    the kernel that runs the whole loop in one block of ``oneblock_threads`` threads when the sizes
    allow; ``steps``, the kernel that runs several time steps a launch; both None: the host loops over
    the launches one by one."""

    plan: forms.HostLoopPlan
    oneblock: str | None = None
    oneblock_threads: int = 0
    steps: str | None = None


@dataclass(frozen=True)
class KernelFacts:
    """What the emitter made of one IR kernel (a C function): each launch and each host loop, as
    printed (program order for launches; a host loop after the loops inside it), the other
    ``__global__`` functions a launch brought (a fold, an FMA kernel beside a tensor-core one:
    ``folds``, by launch kernel name), and the drop-in's copies per array parameter
    (``copies``: :func:`transpile.cuda.host.arrays`, with ``in_at`` and ``out_after``)."""

    launches: tuple[LaunchInfo, ...]
    loops: tuple[HostLoopInfo, ...]
    folds: Mapping[str, tuple[str, ...]]
    copies: Mapping[str, Mapping[str, object]]


def emit_with_facts(module: ir.Module, *, source: str, tiling: tile.Options | None = None,
                    host: ir.Module | None = None) -> tuple[str, dict[str, KernelFacts]]:
    """:func:`emit`'s text and, per kernel name, what the emitter made of it (:class:`KernelFacts`;
    one rendering, the text byte for byte :func:`emit`'s)."""
    text, emitted = _render_emitters(module, source=source, tiling=tiling, host=host)
    facts = {k.name: KernelFacts(tuple(e.launch_log), tuple(e.loop_log),
                                 {name: tuple(str(f["name"]) for f in fs) for name, fs in e.folds.items()},
                                 dict(e.copies))
             for k, (e, _) in zip(module.kernels, emitted)}
    return regions.clean(text), facts


def launches(module: ir.Module, *, tiling: tile.Options | None = None) -> list[LaunchInfo]:
    """Every launch of the mapped ``module`` as :func:`emit` would emit it, in emission order."""
    return [li for infos in launches_by_kernel(module, tiling=tiling).values() for li in infos]


def launches_by_kernel(module: ir.Module, *, tiling: tile.Options | None = None) -> dict[str, list[LaunchInfo]]:
    """:func:`launches`, grouped by the IR kernel they belong to (kernel name -> its launches)."""
    return {k.name: e.launch_log for k, (e, _) in zip(module.kernels, _emitted(module, tiling))}


def emit_with_launches(module: ir.Module, *, source: str, tiling: tile.Options | None = None,
                       host: ir.Module | None = None) -> tuple[str, dict[str, list[LaunchInfo]]]:
    """:func:`emit`'s text and :func:`launches_by_kernel` of the same emission (one rendering)."""
    text, launches = _render_logged(module, source=source, tiling=tiling, host=host)
    return regions.clean(text), launches


def _render(module: ir.Module, *, source: str, tiling: tile.Options | None, host: ir.Module | None = None) -> str:
    """The translation unit with region markers (:mod:`transpile.cuda.regions`)."""
    return _render_logged(module, source=source, tiling=tiling, host=host)[0]


def _render_logged(module: ir.Module, *, source: str, tiling: tile.Options | None, host: ir.Module | None = None
                   ) -> tuple[str, dict[str, list[LaunchInfo]]]:
    """:func:`_render`, and each kernel's launches as its emitter logged them."""
    text, emitted = _render_emitters(module, source=source, tiling=tiling, host=host)
    return text, {k.name: e.launch_log for k, (e, _) in zip(module.kernels, emitted)}


def _render_emitters(module: ir.Module, *, source: str, tiling: tile.Options | None, host: ir.Module | None
                     ) -> tuple[str, list[tuple[_KernelEmitter, dict[str, object]]]]:
    """The translation unit with region markers, and each kernel's emitter and template context."""
    assert "\n" not in source, f"bad source name {source!r}"
    emitted = _emitted(module, tiling, host)
    funcs = [_func(f) for f in module.funcs]
    text = environment().get_template(TEMPLATE).render(source=source, funcs=funcs, kernels=[c for _, c in emitted])
    return text, emitted


def _emitted(module: ir.Module, tiling: tile.Options | None, host: ir.Module | None = None
             ) -> list[tuple[_KernelEmitter, dict[str, object]]]:
    """Each kernel's emitter, after it made the kernel's template context, and that context;
    ``host``: the module before lowering (each drop-in's host path)."""
    cuda_names.check(module)
    module_names = {f.name for f in module.funcs} | {k.name for k in module.kernels}
    generated = {f"{k.name}_{s}" for k in module.kernels for s in ("device", "scalars")}
    generated |= {f"{k.name}_kernel{n}" for k in module.kernels
                  for n in range(sum(isinstance(x, ir.Launch) for x in ir.walk(k)))}
    assert not generated & module_names, f"generated names clash: {sorted(generated & module_names)}"
    # The forms under this emission's options (passes/launch_forms.py: the pipeline's last step made
    # them under the same options, and then this returns each kernel as it is; the schedule search
    # emits one lowered module under many).
    emitters = [_KernelEmitter(launch_forms.run(k, options=tiling), module_names | generated, tiling)
                for k in module.kernels]
    originals = {k.name: k for k in host.kernels} if host is not None else {}
    for e in emitters:
        e.original = originals.get(e.name)
    return [(e, e.context()) for e in emitters]
