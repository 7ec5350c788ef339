"""Map a kernel onto the GPU: host scalar code, single-thread launches and parallel launches (v0).

**Precondition**: valid IR (``ircheck.check``).  A kernel that already contains a
``Launch`` is taken as mapped and returned unchanged (the same object).

**Postcondition**: every top-level statement is either

* a *host statement*: a scalar ``Decl``/``Assign``/``If`` that touches no array
  and reads and writes only *host scalars* (scalar params and top-level
  ``Decl`` statements never written inside a ``Launch``); or a bare ``Decl`` (no
  initialiser) of a *device scalar*, i.e. a top-level scalar written inside
  some ``Launch`` (the emitter keeps it in device memory); or an ``Alloc``
  (the host allocates the local array in device memory; its extents must not
  read a scalar already changed on the device, else :class:`TranspileError`); or
* a ``Launch``: either one top-level ``For`` nest whose outermost perfectly
  nested loops (up to 3) are ``par`` (innermost ``x``, then ``y``, ``z``), or a
  run of consecutive statements executed by one GPU thread.

Top-level ``Decl`` statements of device scalars used by only one ``Launch`` move into it
as launch-local variables.  Program order is preserved.

The parallelism test is :func:`_parallel`: a loop is mapped only if the
exact dependence analysis (:mod:`passes.deps`, isl) finds no dependence
carried by it, it has unit step, and its bounds are computable on the host
(rectangular, host scalars only).  Scalars declared inside the loop body are
private to an iteration; any other scalar written in the loop is a carried
dependence.  Known limitation: a sequential time loop around parallel nests
(stencils) becomes one single-thread launch: correct but slow.

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
from collections.abc import Callable

from passes import deps
from transpile import ir
from transpile.diagnostics import TranspileError

#: ``par`` dimension names, innermost first.
_DIMS = ("x", "y", "z")


def run(kernel: ir.Kernel) -> ir.Kernel:
    """Group ``kernel``'s top-level statements into host code and ``Launch`` regions."""
    if any(isinstance(s, ir.Launch) for s in kernel.body):
        return kernel
    on_device, device_scalars = _place(kernel)
    if not any(on_device):
        return kernel
    top = _top_scalars(kernel)
    host_scalars = frozenset(top - device_scalars)
    # NOTE: loop ids are keyed by node identity, so they must be computed on
    # this very kernel object, before any rebuilding below.
    ids = deps.loop_ids(kernel)
    carried = deps.carried_loops(deps.analyze(kernel))
    parallel = frozenset(ids[k] for k in ids) - carried

    # Each item: ("host", [stmt], False) or ("launch", [stmts], is it a parallel nest?).
    items: list[tuple[str, list[ir.Stmt], bool]] = []
    for stmt, dev in zip(kernel.body, on_device):
        if not dev:
            items.append(("host", [stmt], False))
            continue
        nest = (_mark_parallel(stmt, host_scalars, lambda lp: ids[id(lp)] in parallel)
                if isinstance(stmt, ir.For) else None)
        if nest is not None:
            items.append(("launch", [nest], True))
        elif items and items[-1][0] == "launch" and not items[-1][2]:
            items[-1][1].append(stmt)
        else:
            items.append(("launch", [stmt], False))

    body: list[ir.Stmt] = []
    for n, (kind, stmts, _parallel) in enumerate(items):
        if kind == "host":
            body.extend(stmts)
            continue
        others = [s for m, it in enumerate(items) if m != n for s in it[1]]
        used_elsewhere = set().union(*(_names(s) for s in others)) if others else set()
        launch_body: list[ir.Stmt] = []
        for s in stmts:
            if isinstance(s, ir.Decl) and s.name in used_elsewhere:
                # A device scalar shared between launches: declared on the host
                # (the emitter allocates it), initialised inside this launch.
                body.append(dataclasses.replace(s, init=None))
                if s.init is not None:
                    launch_body.append(ir.Assign(ir.Var(s.name, s.ty, loc=s.loc), s.init, loc=s.loc))
            else:
                launch_body.append(s)
        body.append(ir.Launch(tuple(launch_body), loc=stmts[0].loc))
    return dataclasses.replace(kernel, body=tuple(body))


def _top_scalars(kernel: ir.Kernel) -> set[str]:
    """Scalar parameters and top-level ``Decl`` statements: the candidates for host scalars."""
    names = {p.name for p in kernel.params if isinstance(p.ty, ir.Scalar)}
    names |= {s.name for s in kernel.body if isinstance(s, ir.Decl)}
    return names


def _place(kernel: ir.Kernel) -> tuple[list[bool], set[str]]:
    """Which top-level statements go to the device, and the resulting device scalars.

    Iterates to a fixpoint: a scalar written by a device statement is a device
    scalar, and a host statement that touches a device scalar moves to the
    device (which may make more scalars device scalars).
    """
    top = _top_scalars(kernel)
    on_device = [not _host_shaped(s) for s in kernel.body]
    while True:
        device_scalars = set()
        for s, dev in zip(kernel.body, on_device):
            if dev:
                device_scalars |= _writes(s) & top
        changed = False
        for n, s in enumerate(kernel.body):
            if not on_device[n] and not isinstance(s, ir.Alloc) and (_reads(s) | _writes(s)) & device_scalars:
                on_device[n] = changed = True
        if not changed:
            break
    written: set[str] = set()
    for s, dev in zip(kernel.body, on_device):
        written |= _writes(s) & device_scalars if dev else set()
        if isinstance(s, ir.Alloc) and _reads(s) & written:
            # The host allocates local arrays, so it must know their extents.
            raise TranspileError(s.loc, f"the extent of local array '{s.name}' depends on a scalar "
                                        "computed on the GPU; not supported")
    return on_device, device_scalars


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
    return False


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


def _writes(node: ir.Node) -> set[str]:
    """Names of the scalar variables assigned under ``node`` (an initialised Decl writes its name)."""
    out: set[str] = set()
    for n in ir.walk(node):
        if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var):
            out.add(n.target.name)
        elif isinstance(n, ir.Decl) and n.init is not None:
            out.add(n.name)
    return out


def _names(node: ir.Node) -> set[str]:
    """Every scalar variable name referenced or declared under ``node``."""
    out = {n.name for n in ir.walk(node) if isinstance(n, (ir.Var, ir.Decl))}
    return out | {n.var for n in ir.walk(node) if isinstance(n, ir.For)}


def _mark_parallel(nest: ir.For, host_scalars: frozenset[str],
                   independent: Callable[[ir.For], bool]) -> ir.For | None:
    """``nest`` with its outermost provably parallel perfectly nested loops marked ``par``.

    None if not even the outermost loop can be marked.
    """
    chain = [nest]
    while len(chain) < len(_DIMS) and len(chain[-1].body) == 1 and isinstance(chain[-1].body[0], ir.For):
        chain.append(chain[-1].body[0])
    depth = 0
    for loop in chain:
        if not _parallel(loop, host_scalars, independent):
            break
        depth += 1
    if depth == 0:
        return None

    def mark(loop: ir.For, level: int) -> ir.For:
        body = loop.body if level == depth - 1 else (mark(loop.body[0], level + 1),)  # type: ignore[arg-type]
        return dataclasses.replace(loop, body=body, par=_DIMS[depth - 1 - level])

    return mark(nest, 0)


def _parallel(loop: ir.For, host_scalars: frozenset[str], independent: Callable[[ir.For], bool]) -> bool:
    """Can ``loop`` be spread over GPU threads?  (False when unsure.)

    (1) unit step (the grid-stride loop counts up by one); (2) bounds read only
    host scalars (no arrays, no outer loop variables: rectangular, computable on
    the host); (3) the dependence analysis finds no dependence carried by the
    loop (``independent``), which covers arrays and scalars alike.
    """
    if loop.step != 1:
        return False
    for bound in (loop.lo, loop.hi):
        if not _scalar_only(bound) or not _reads(bound) <= host_scalars:
            return False
    return independent(loop)
