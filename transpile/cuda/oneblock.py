"""One-block host loops: a host loop of small launches run by one block, its launches separated by barriers.

A host loop (``for t { launch; launch; ... }``, :func:`transpile.cuda.is_host_loop`) whose launches
each cover a few thousand iterations costs a launch's overhead per launch: jacobi-1d at n = 4000
launches 2000 kernels of 4000 threads a call (9 ms on the H200, 4.5 us a launch), trisolv at
n = 4000 launches 8000.  When every launch of such a loop is small, one block runs the whole
loop: each launch's body as it is (its grid-stride loops cover the iterations with one block as
with many), one after the other, ``__syncthreads()`` between them.  Within one block a barrier
orders every global memory access before it against every access after it, as the end of a
launch does on a stream, so the launches' order and dependences are kept.

**Which loops** (:func:`passes.launch_forms.oneblock_eligible`, the loop's ``host(oneblock)`` mark): the innermost host loops (no host loop inside) whose body is
launches only, returning nowhere: plain launches (a nest of ``par`` loops around loop-free
statements: a grid whose threads loop would be serialised onto one block, adi's sweeps), launches
without ``par`` loops (one thread, or a one-block reduction: they run in one block anyway), with
the ``par`` loops' bounds affine in the host loop's variable (so each launch's iteration count over
the host loop is largest at its first or last iteration); step of the host loop positive, or
negative over a signed variable.  The emitter confirms what each launch became
(:func:`build`): ``plain``, ``serial`` or a ``block`` reduction without a launch guard, no fold;
the one block has the reductions' block size (one size for all of them) or :data:`THREADS`.
Device scalars stay in device memory: each body loads and stores them as its launch does, and
the barrier after a body makes its stores visible to the next.

**When** (run time, from the sizes): the one-block kernel runs when every launch's iteration
count, at the host loop's first and last iteration, is at most :data:`MAX_ITERATIONS`
(or ``TRANSPILE_ONEBLOCK_MAX`` from the environment, read when the loop is entered; 0 turns the path
off); otherwise the host loop launches as before.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from transpile import ir

if TYPE_CHECKING:
    from transpile.cuda import _KernelEmitter

THREADS = 1024
"""Threads of the one block."""
MAX_ITERATIONS = 8192
"""Most iterations of one launch (per host-loop iteration) for the one-block kernel: 8 a thread."""
ENV = "TRANSPILE_ONEBLOCK_MAX"
"""The environment variable that overrides :data:`MAX_ITERATIONS` when the host loop is entered (0: never
one block; the verifier's stage (c) runs each shape both ways)."""


def build(emitter: _KernelEmitter, loop: ir.For, steps: list[dict[str, object]], kernels: list[dict[str, object]],
          pad: str) -> tuple[dict[str, object], list[str], list[str], str] | None:
    """``(kernel, args, lines, ok)``: the one-block kernel of host loop ``loop``, its launch's arguments,
    the host lines that compute ``ok`` (run it or not), or None.

    ``steps``: the host steps the loop's body became (launch steps only, in order); ``kernels``: the
    kernels those launches became.  ``pad``: the host lines' indentation."""
    by_name = {str(k["name"]): k for k in kernels}
    if any(st.get("kind") != "launch" or st.get("shape") not in ("plain", "serial", "block") for st in steps) or \
            any(str(st["kernel"]) in emitter.folds for st in steps) or \
            any(st["shape"] == "block" and st.get("guard") for st in steps):
        return None
    from transpile.cuda.printer import GLOBAL, INDEX_TYPE, LAUNCH_BOUNDS, KernelParam, ctype, var_names

    # A one-block reduction's body is written for its own block size: the kernel takes it (one size).
    sizes = {str(st["block"][0]).rstrip("u") for st in steps if st["shape"] == "block"}  # type: ignore[index]
    if len(sizes) > 1 or any(str(b) != "1u" for st in steps if st["shape"] == "block"
                             for b in st["block"][1:]):  # type: ignore[index]
        return None
    threads = int(sizes.pop()) if sizes else THREADS
    expr, hn = emitter.expr, emitter.host_namer

    v = expr.ident(loop.var)
    vt = ctype(loop.ty)
    # Parameters: every launch's, once, without the host loop's variable; its bounds by value.
    params: list[KernelParam] = []
    args: list[str] = []
    aliases: dict[str, list[str]] = {}  # launch kernel -> lines naming a shared parameter as its body does
    for st in steps:
        k = by_name[str(st["kernel"])]
        for p, a in zip(k["params"], st["args"]):  # type: ignore[call-overload]
            assert isinstance(p, KernelParam), p
            if a == v:
                continue
            if a in args:  # an array one launch reads (const) and another writes: not const
                at = args.index(a)
                if params[at].const and not p.const:
                    params[at] = dataclasses.replace(params[at], const=False)
                if p.name != params[at].name:
                    aliases.setdefault(str(k["name"]), []).append(f"auto {p.name} = {params[at].name};")
                continue
            # No __restrict__: with it nvcc takes a pointer's target as changed by this thread alone and
            # may keep values in registers across the barriers, where other threads of the block write
            # them (it did with durbin's device scalars, loaded once before the loop: wrong on the H200,
            # run 49).
            params.append(dataclasses.replace(p, restrict=False))
            args.append(a)
    lo, hi = hn.fresh(f"{loop.var}_lo"), hn.fresh(f"{loop.var}_hi")
    params += [KernelParam(INDEX_TYPE, lo), KernelParam(INDEX_TYPE, hi)]
    args += [lo, hi]
    name = emitter.namer.fresh(f"{emitter.name}_loop")
    body = []
    it = emitter.namer.fresh(f"{loop.var}_it")
    if loop.step > 0:
        body.append(f"  for ({INDEX_TYPE} {it} = {lo}; {it} < {hi}; {it} += {loop.step}) {{")
    else:
        body.append(f"  for ({INDEX_TYPE} {it} = {hi} - 1; {it} >= {lo}; {it} -= {-loop.step}) {{")
    if any(loop.var in var_names(st) for st in loop.body):
        body.append(f"    const {vt} {v} = ({vt}){it};")
    for n, st in enumerate(steps):
        k = by_name[str(st["kernel"])]
        lines = [str(x) for x in k["body"]]  # type: ignore[union-attr]
        if n:
            body.append(f"    {emitter.expr.mark('barrier', '__syncthreads();')}  // {steps[n - 1]['kernel']} is done")
        body.append(f"    // {st['kernel']}" + (" (thread 0)" if st["shape"] == "serial" else ""))
        tid0 = f"if ({emitter.expr.mark('index', 'threadIdx.x')} == 0) {{"
        body.append(f"    {tid0}" if st["shape"] == "serial" else "    {")
        body += [f"      {x}" for x in aliases.get(str(k["name"]), [])]
        body += ["    " + x for x in lines]
        body.append("    }")
    body.append(f"    {emitter.expr.mark('barrier', '__syncthreads();')}  // the iteration is done")
    body.append("  }")
    kernel: dict[str, object] = {"name": name, "params": params, "body": body, "threads": threads,
                                 "qualifiers": f"{GLOBAL} void {LAUNCH_BOUNDS}({threads})"}
    # Host: the loop's bounds, each launch's iteration count at the first and last iteration.
    first, last = hn.fresh(f"{loop.var}_first"), hn.fresh(f"{loop.var}_last")
    ok = hn.fresh("one_block")
    m = expr.mark
    env, cap = hn.fresh("one_block_env"), hn.fresh("one_block_max")
    lines = [f"{pad}// The most iterations a launch may have for one block to run the loop: {ENV} in the environment",
             f"{pad}// (0: launch one by one), else {MAX_ITERATIONS}.",
             f'{pad}const char *const {env} = getenv("{ENV}");',
             f"{pad}const {INDEX_TYPE} {cap} = {env} != NULL ? atoll({env}) : {MAX_ITERATIONS}LL;",
             f"{pad}{m('launch', f'const {INDEX_TYPE} {lo} = {expr(loop.lo)};')}",
             f"{pad}{m('launch', f'const {INDEX_TYPE} {hi} = {expr(loop.hi)};')}"]
    counts: list[str] = []
    count_lines: list[str] = []
    for st in steps:
        trips = st.get("trips") or []
        if not trips or st["shape"] != "plain":  # a reduction's block is one block already
            continue
        fn = hn.fresh("iterations")
        count_lines.append(f"{pad}const auto {fn} = [&]({vt} {v}) -> {INDEX_TYPE} {{")
        count_lines.append(f"{pad}  (void){v};  // the counts need not depend on it")
        prod = []
        for t in trips:  # type: ignore[union-attr]
            count_lines.append(f"{pad}  const {INDEX_TYPE} {t['name']} = {t['expr']};")
            prod.append(f"({t['name']} > 0 ? {t['name']} : 0)")
        count_lines.append(f"{pad}  return {' * '.join(prod)};")
        count_lines.append(f"{pad}}};")
        counts += [f"{fn}(({vt}){first}) <= {cap}", f"{fn}(({vt}){last}) <= {cap}"]
    if counts:  # the first and last iterations, where the counts are taken (none for reductions alone)
        if loop.step == 1:
            lines.append(f"{pad}{m('launch', f'const {INDEX_TYPE} {first} = {lo};')}")
            lines.append(f"{pad}{m('launch', f'const {INDEX_TYPE} {last} = {hi} - 1;')}")
        elif loop.step > 0:
            lines.append(f"{pad}{m('launch', f'const {INDEX_TYPE} {first} = {lo};')}")
            lines.append(f"{pad}{m('launch', f'const {INDEX_TYPE} {last} = {lo} + ({hi} - 1 - {lo}) / {loop.step} * {loop.step};')}")
        else:
            lines.append(f"{pad}{m('launch', f'const {INDEX_TYPE} {first} = {hi} - 1;')}")
            lines.append(f"{pad}{m('launch', f'const {INDEX_TYPE} {last} = {hi} - 1 - ({hi} - 1 - {lo}) / {-loop.step} * {-loop.step};')}")
    lines += count_lines
    cond = " && ".join([f"{cap} > 0", f"{hi} > {lo}", *counts])
    lines.append(f"{pad}const bool {ok} = {m('guard', cond)};")
    return kernel, args, lines, ok  # the caller emits: if (ok) { one-block launch } else { the loop }


