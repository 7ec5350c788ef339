"""Delinearize: a flat pointer indexed by hand (``A[i*m + j]``) becomes the matrix it stands for.

C code often takes ``double *A`` and computes row-major offsets itself.  Such a
subscript multiplies a loop variable by a parameter, so it is not affine: the
dependence test drops it, every loop touching ``A`` looks like it carries a
dependence, and the whole nest runs in one GPU thread.  This pass recovers the
dimensions, after the idea of Grosser et al., "On recovering multi-dimensional
arrays in Polly" (IMPACT 2015), in the simple form that hand-written offsets take:

* Each subscript is an affine form in the loop variables whose coefficients
  are polynomials over scalar parameters (:func:`transpile.ir.affine.to_affine`).
* Sizes are peeled innermost first: a parameter ``m`` that divides every
  parametric coefficient splits ``e = o*m + r`` (``r`` holds the terms without
  ``m``, which must then have integer coefficients); ``o`` is peeled again
  (``i*n*m + j*m + k`` gives sizes ``[n][m]`` and subscripts ``[i][j][k]``).
  A parameter-only term ``c*m`` is tried in ``o`` first, then in ``r``
  (``(i-1)*m + j`` is row ``i-1``; ``i*m + m-1-j`` is row ``i``).
* Each remainder ``r`` must be proven ``0 <= r < m`` by isl on its access's
  iteration domain (the loops' affine bounds, a superset of what runs),
  wherever the reference is valid: sizes are non-negative and a pointer is
  not indexed below its start (what the drop-in's clamped copies assume).
  Then ``(o, r) -> o*m + r`` is one-to-one on what the accesses touch, so two
  references meet at one element exactly when their new subscripts are equal.
* Every reference of the array must split with the same sizes; an array
  with one reference that does not (``A[k]`` with ``k`` up to ``n*m``, a
  remainder not proven in range) is left flat.  ``A[i*lda + k]`` with ``k < K``
  stays flat too: nothing says ``K <= lda``.

The outer extent is the derived maximum of the outer subscripts plus one
(:func:`transpile.ir.affine.derive_extent`).  The parameter stays a
pointer: the drop-in keeps the C signature ``double *A``, and the copies
cover the same flattened range as before.

**Precondition**: any valid kernel; kernels holding a ``Launch`` are returned
unchanged (the pass belongs before mapping).  **Postcondition**: a pointer
parameter may have several extents; its element ``[o][r]`` is flat element
``o*m + r``, as in C.

Before::

    kernel k(i32 n, i32 m, f32 a, inout f32* x[n * m]) {
      for i in 0..n { for j in 0..m { x[i * m + j] = a * x[i * m + j]; } }
    }

After::

    kernel k(i32 n, i32 m, f32 a, inout f32* x[n][m]) {
      for i in 0..n { for j in 0..m { x[i][j] = a * x[i][j]; } }
    }
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

import islpy as isl

from passes import accesses as acc_mod
from passes import deps
from passes import footprint as fp
from transpile import ir
from transpile.diagnostics import Loc
from transpile.ir import affine as ext
from transpile.ir.affine import Aff, NotAffine, Poly, to_affine
from transpile.ir.cscalars import C_NAMES
from transpile.ir.text import show_expr

#: isl work allowed for one range proof; past it the proof fails (the array stays flat).
MAX_OPERATIONS = 200_000


@dataclass(frozen=True, slots=True)
class Refusal:
    """Pointer ``array`` keeps its flat index, which is not affine (``reference`` at ``loc``): why."""

    array: str
    loc: Loc | None
    reason: str
    declare: str = ""  # the C parameter that states the layout (``double A[][lda]``), where one is known

    @property
    def message(self) -> str:
        hint = (f"; if every index stays in its row, declare the parameter as an array ('{self.declare}')"
                if self.declare else "")
        return (f"'{self.array}' is indexed by hand and stays flat ({self.reason}): loops that touch it stay "
                f"sequential{hint}")


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with each delinearizable pointer parameter given its dimensions (see the module docstring)."""
    plans = {p.name: plan for p, plan in _plans(kernel) if isinstance(plan, _Plan)}
    if not plans:
        return kernel
    # A flat array parameter ('float b[n * n]') is a pointer in C (C11 6.7.6.3p7): split, it is one, as a
    # pointer parameter is, so its caller's block of memory keeps its flat layout.
    params = tuple(dataclasses.replace(p, ty=ir.ArrayType(p.ty.elem, plans[p.name].dims), pointer=True)  # type: ignore[union-attr]
                   if p.name in plans else p for p in kernel.params)
    # One rewrite for every array: the plans' references are distinct nodes of the same body.
    split = {k: subs for plan in plans.values() for k, subs in plan.split.items()}
    return dataclasses.replace(kernel, params=params, body=_Rewrite(split).block(kernel.body))


def refusals(kernel: ir.Kernel) -> list[Refusal]:
    """The pointer parameters of ``kernel`` whose index is not affine and that :func:`run` leaves flat."""
    return [plan for p, plan in _plans(kernel) if isinstance(plan, Refusal) and p.pointer]


@dataclass(frozen=True, slots=True)
class _Names:
    """What the proofs and the rebuilt subscripts need to know of the kernel's scalars."""

    params: frozenset[str]  # loop-invariant integers (accesses.parameters): free in the proofs
    order: list[str]  # the scalar parameters among them, in signature order: the candidate sizes
    atoms: dict[str, ir.Var]  # each of those as to_affine's polynomials hold it (a Var with its type)


@dataclass(frozen=True, slots=True)
class _Plan:
    dims: tuple[ir.Expr, ...]  # the view's extents: the derived outer one, then the sizes
    split: dict[int, tuple[ir.Expr, ...]]  # id(reference) -> its new subscripts


def _plans(kernel: ir.Kernel) -> Iterator[tuple[ir.Param, _Plan | Refusal]]:
    """Per flat pointer parameter with a non-affine index: how to split it, or why not."""
    if ir.is_mapped(kernel):
        return
    params = acc_mod.parameters(kernel)
    scalars = [q for q in kernel.params if q.name in params]
    names = _Names(params, [q.name for q in scalars], {q.name: ir.Var(q.name, q.ty) for q in scalars})  # type: ignore[arg-type]
    for p in kernel.params:
        if isinstance(p.ty, ir.ArrayType) and p.ty.rank == 1:  # a pointer, or a flat array ('a[n * n]')
            plan = _plan(kernel, p, names)
            if plan is not None:
                yield p, plan


def _plan(kernel: ir.Kernel, p: ir.Param, names: _Names) -> _Plan | Refusal | None:
    """None where there is nothing to do (every index affine with integer coefficients)."""
    params, order = names.params, names.order
    refs = list(ext.loop_accesses(kernel.body, p.name, ()))
    if len(refs) != sum(isinstance(n, ir.Index) and n.array == p.name for n in ir.walk(kernel)):
        return None  # a reference outside a plain statement: leave the array alone
    forms = []
    for node, loops in refs:
        try:
            forms.append(to_affine(node.indices[0], {lp.var for lp in loops}, set(params)))
        except NotAffine as e:
            return Refusal(p.name, node.loc, f"its index '{show_expr(node.indices[0])}' {e.reason}")
    if any(ext.reads_elements(f) for f in forms):
        return None  # an index read from memory (a byte histogram's hist[in[i]]): data, not rows and columns
    # Only an index the dependence test cannot read needs splitting.
    flat = [(node, loops, f) for (node, loops), f in zip(refs, forms)
            if acc_mod.affine(node.indices[0], params | {lp.var for lp in loops}) is None]
    if not flat:
        return None
    sizes = max((_sizes(f, loops, names) for _, loops, f in flat), key=len)
    if not sizes:
        node, loops, form = flat[0]
        candidates = _candidates(form, names)
        # The split over the first candidate says why it fails.
        why = str(_split(form, candidates[:1], loops, names)) if candidates else \
            "no size parameter multiplies every parametric term"
        return Refusal(p.name, node.loc, f"in '{show_expr(node.indices[0])}', {why}",
                       _declaration(p, tuple(candidates[:1])))
    split: dict[int, tuple[ir.Expr, ...]] = {}
    for (node, loops), form in zip(refs, forms):
        subs = _split(form, sizes, loops, names)
        if isinstance(subs, str):
            return Refusal(p.name, node.loc, f"in '{show_expr(node.indices[0])}', {subs}", _declaration(p, sizes))
        exprs = tuple(_expr(s, loops, node.indices[0], order) for s in subs)
        if split.setdefault(id(node), exprs) != exprs:
            return None  # one node shared by two places that split differently
    body = _Rewrite(split).block(kernel.body)
    outer, _, _ = ext.derive_extent(body, p.name, 0, order, p.loc)
    if outer is None or not {n.name for n in ir.walk(outer) if isinstance(n, ir.Var)} <= set(order):
        return Refusal(p.name, p.loc, "the range of its row index cannot be derived from the parameters")
    return _Plan((outer, *(dataclasses.replace(names.atoms[s], loc=p.loc) for s in sizes)), split)


def _declaration(p: ir.Param, sizes: tuple[str, ...]) -> str:
    """The C array parameter with row lengths ``sizes`` (``double A[][lda]``); '' without sizes.

    Declared so, ``A[i][k]`` with ``k`` past its row is undefined in C: the user states what the loop
    bounds could not show, and the out-of-bounds check reports the sizes where it does not hold."""
    if not sizes:
        return ""
    return f"{C_NAMES[p.ty.elem.name]} {p.name}[]" + "".join(f"[{s}]" for s in sizes)  # type: ignore[union-attr]


def _candidates(form: Aff, names: _Names) -> list[str]:
    """The size parameters in every term of ``form`` that the dependence test cannot read (a loop
    variable times a parameter, a product of parameters), in name order."""
    monos = [m for c in form.coeffs.values() for m in c if m] + [m for m in form.const if len(m) > 1]
    if not monos:
        return []
    atoms = [{a.name for a in m if isinstance(a, ir.Var) and a.name in names.atoms} for m in monos]
    return sorted(set.intersection(*atoms))


def _sizes(form: Aff, loops: tuple[ir.For, ...], names: _Names) -> tuple[str, ...]:
    """The sizes ``form`` splits over, outermost first; () if none.

    Candidates (:func:`_candidates`) are tried in order, each one proven by the split itself, and
    the quotient is split again (``i*n*m + j*m + k``: ``m``, then ``n``).
    """
    for size in _candidates(form, names):
        parts = _split(form, (size,), loops, names)
        if not isinstance(parts, str):
            return (*_sizes(parts[0], loops, names), size)
    return ()


def _divide(p: Poly, size: str) -> tuple[Poly, Poly]:
    """``p = q*size + r``: (q, r), ``r`` the monomials without ``size``."""
    q: Poly = {}
    r: Poly = {}
    for m, c in p.items():
        at = next((k for k, a in enumerate(m) if isinstance(a, ir.Var) and a.name == size), None)
        if at is None:
            r[m] = c
        else:
            q[m[:at] + m[at + 1:]] = c
    return q, r


def _split(form: Aff, sizes: tuple[str, ...] | list[str], loops: tuple[ir.For, ...],
           names: _Names) -> tuple[Aff, ...] | str:
    """``form`` as subscripts ``(o, r_1, ..., r_k)`` over ``sizes``, each ``r`` proven in range; or why not."""
    subs: list[Aff] = []
    for size in reversed(sizes):
        coeffs = {v: _divide(c, size) for v, c in form.coeffs.items()}
        if any(set(r) - {()} for _, r in coeffs.values()):
            return f"a loop variable's coefficient is not a multiple of '{size}'"
        q_const, r_const = _divide(form.const, size)
        atom = names.atoms[size]
        # Expanded, ``(i-1)*m + j`` is ``i*m - m + j`` and ``(n-1)*m + m-1`` is ``n*m - 1``: the remainder
        # may need a few multiples of the size moved over from the quotient (``-1 + m``, row ``n - 1``).
        for t in (0, 1, -1, 2, -2):
            r = Aff({v: r for v, (_, r) in coeffs.items() if r}, ext.padd(r_const, {(atom,): t}))
            if _in_range(r, size, loops, names.params):
                subs.append(r)
                form = Aff({v: q for v, (q, _) in coeffs.items() if q}, ext.padd(q_const, {(): -t}))
                break
        else:
            rest = show_expr(_expr(Aff({v: r for v, (_, r) in coeffs.items() if r}, r_const), loops,
                                   ir.Const(0, ir.I32), names.order))
            return f"nothing proves 0 <= {rest} < {size}"
    return (form, *reversed(subs))


def _in_range(r: Aff, size: str, loops: tuple[ir.For, ...], params: frozenset[str]) -> bool:
    """isl proves ``0 <= r < size`` on the domain of ``loops`` wherever the reference is valid.

    Valid: ``size >= 0`` (sizes are non-negative) and a flat index ``>= 0`` (a pointer is not indexed
    below its start).  Both are what the drop-in assumes already (the copy ranges are clamped to
    ``[0, extent)``).  At ``size = 0`` the flat index is the remainder itself, so a remainder ``< 0``
    there is an invalid reference, not a counterexample (correlation's ``corr[(m-1)*m + (m-1)]``
    outside every loop); one ``>= 0`` is (``x[i*m]`` touches ``x[0]`` for every ``i`` when ``m = 0``).
    """
    affine = _as_affine(r, params)
    if affine is None:
        return False
    names = {lp.var: f"i{k}" for k, lp in enumerate(loops)}
    text = deps.render_affine(affine, names)
    cons = deps.domain_constraints(loops, names, params)
    pnames = sorted({deps.param_name(q) for q in params})
    s = deps.param_name(size)
    out_of_range = f"(({s} >= 1 and ({text} < 0 or {text} >= {s})) or ({s} = 0 and {text} >= 0))"
    src = f"[{', '.join(pnames)}] -> {{ [{', '.join(names.values())}] : {' and '.join([*cons, out_of_range])} }}"
    try:
        with fp.isl_limit(MAX_OPERATIONS):
            return fp.isl_set(src).is_empty()
    except isl.Error:  # past MAX_OPERATIONS
        return False


def _as_affine(form: Aff, params: frozenset[str]) -> acc_mod.Affine | None:
    """``form`` as an integer affine form over loop variables and parameters, if it is one."""
    coeffs: dict[str, int] = {}
    for v, c in form.coeffs.items():
        if set(c) - {()}:
            return None
        coeffs[v] = c.get((), 0)
    const = 0
    for m, c in form.const.items():
        if not m:
            const += c
        elif len(m) == 1 and isinstance(m[0], ir.Var) and m[0].name in params:
            coeffs[m[0].name] = coeffs.get(m[0].name, 0) + c
        else:
            return None
    return acc_mod.Affine.of(coeffs, const)


def _expr(form: Aff, loops: tuple[ir.For, ...], like: ir.Expr, order: list[str]) -> ir.Expr:
    """``form`` as an IR expression (loop variables before parameters in each sum)."""
    poly: Poly = dict(form.const)
    for lp in loops:
        for m, c in form.coeffs.get(lp.var, {}).items():
            key = (ir.Var(lp.var, lp.ty), *m)
            poly[key] = poly.get(key, 0) + c
    rank = {name: k for k, name in enumerate([lp.var for lp in loops] + order)}
    return ext.poly_expr(poly, like.loc, rank)


class _Rewrite(ir.Transformer):
    """Replace the references of one array by their split subscripts (found by node identity)."""

    def __init__(self, split: dict[int, tuple[ir.Expr, ...]]) -> None:
        self.split = split

    def block(self, body: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        return tuple(self.transform(s) for s in body)

    def visit_Index(self, n: ir.Index) -> ir.Expr:
        subs = self.split.get(id(n))
        return self.generic_visit(n) if subs is None else dataclasses.replace(n, indices=subs)
