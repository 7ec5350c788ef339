"""Derive the extent of a flat pointer parameter from its index range.

A C kernel that takes ``double *A`` and indexes it by hand (``A[i*n + j]``)
says nothing about how big ``A`` is; the IR wants an extent.  We take every
access ``A[e]`` with its enclosing loops, maximise the (affine) index ``e``
over the iteration domain and add one:

* The index is an affine form in the loop variables whose coefficients are
  polynomials over scalar parameters (``i*n + j`` has coefficient ``n`` for
  ``i``).  Loop bounds must be affine in the outer loop variables.
* Loop variables are eliminated innermost first: ``x`` in ``[lo, hi - 1]``
  is replaced by ``hi - 1`` when its coefficient is >= 0 and by ``lo`` when it
  is <= 0; bounds that mention outer variables are substituted, so a
  triangular nest maximises correctly.  When the sign is unknown both
  substitutions are kept and the maximum of the two is taken.
* Scalar parameters are assumed >= 0 (they are sizes), so a polynomial with
  non-negative coefficients over them is non-negative.
* The extent is ``max(...) + 1`` over all accesses, with dominated
  candidates dropped and the rest combined by ``Select``-based maxima.

An element of an unsigned type of at most 16 bits read in the index (``hist[in[i]]`` with
``uint8_t *in``) is a value in ``0..2^bits - 1``, maximised as a loop variable over that range
would be (extent 256 for a byte).  Anything else (an index that reads other memory or a local,
``i*j``, ``i/2``) is an error telling the user to declare the parameter as an array with an explicit
extent.  The result is sound (never too small) but may over-approximate.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from transpile import ir
from transpile.diagnostics import Loc
from transpile.ir.cscalars import fold, int_const

# A polynomial over "atoms" (scalar-parameter Vars, or opaque parameter-only
# expressions such as ``n / 2``): monomial (sorted atoms) -> coefficient.
Mono = tuple[ir.Expr, ...]
Poly = dict[Mono, int]


class NotAffine(Exception):
    """The index (or a loop bound) is not affine; ``reason`` completes 'it ...'."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Aff:
    """``sum(coeffs[v] * v) + const`` over loop variables ``v``."""

    coeffs: dict[str, Poly]
    const: Poly


def _key(atom: ir.Expr) -> str:
    return repr(atom)  # repr excludes loc, so equal atoms share a key


def padd(a: Poly, b: Poly, k: int = 1) -> Poly:
    """``a + k*b``."""
    out = dict(a)
    for m, c in b.items():
        out[m] = out.get(m, 0) + k * c
        if out[m] == 0:
            del out[m]
    return out


def _pmul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            m = tuple(sorted(ma + mb, key=_key))
            out[m] = out.get(m, 0) + ca * cb
            if out[m] == 0:
                del out[m]
    return out


def _aadd(a: Aff, b: Aff, k: int = 1) -> Aff:
    coeffs = dict(a.coeffs)
    for v, p in b.coeffs.items():
        coeffs[v] = padd(coeffs.get(v, {}), p, k)
        if not coeffs[v]:
            del coeffs[v]
    return Aff(coeffs, padd(a.const, b.const, k))


def _ascale(a: Aff, p: Poly) -> Aff:
    coeffs = {v: _pmul(c, p) for v, c in a.coeffs.items()}
    return Aff({v: c for v, c in coeffs.items() if c}, _pmul(a.const, p))


def _const_aff(value: int) -> Aff:
    return Aff({}, {(): value} if value else {})


def to_affine(e: ir.Expr, loopvars: set[str], params: set[str]) -> Aff:
    """``e`` as an affine form in ``loopvars`` over the scalar ``params``."""
    v = fold(e)
    if v is not None:
        if isinstance(v, float):
            raise NotAffine("is not an integer")
        return _const_aff(v)
    if isinstance(e, ir.Var):
        if e.name in loopvars:
            return Aff({e.name: {(): 1}}, {})
        if e.name in params:
            return Aff({}, {(e,): 1})
        raise NotAffine(f"reads '{e.name}', which is neither a loop variable nor an unmodified "
                        "scalar parameter")
    if isinstance(e, ir.Index):
        if not e.ty.is_signed and e.ty.bits <= NARROW_BITS:
            # an element of a narrow unsigned type (a byte's histogram: hist[in[i]]): a value of its
            # own in 0..2^bits - 1, eliminated by _maximise like a loop variable over that range
            return Aff({f"{_NARROW}{e.ty.bits}@{id(e)}": {(): 1}}, {})
        raise NotAffine(f"reads memory ('{e.array}[...]')")
    if isinstance(e, ir.Cast) and e.ty.is_int and e.operand.ty.is_int:
        if e.ty.bits < e.operand.ty.bits or (e.ty.bits == e.operand.ty.bits and e.ty.is_signed != e.operand.ty.is_signed):
            if any(isinstance(n, ir.Index) for n in ir.walk(e.operand)):
                raise NotAffine("reads memory converted to a narrower or differently signed type")
        return to_affine(e.operand, loopvars, params)
    if isinstance(e, ir.Unary) and e.op == "-":
        return _ascale(to_affine(e.operand, loopvars, params), {(): -1})
    if isinstance(e, ir.Binary) and e.op in ("+", "-"):
        a, b = to_affine(e.lhs, loopvars, params), to_affine(e.rhs, loopvars, params)
        return _aadd(a, b, 1 if e.op == "+" else -1)
    if isinstance(e, ir.Binary) and e.op == "*":
        a, b = to_affine(e.lhs, loopvars, params), to_affine(e.rhs, loopvars, params)
        if a.coeffs and b.coeffs:
            raise NotAffine("multiplies loop variables together")
        if a.coeffs:
            return _ascale(a, b.const)
        return _ascale(b, a.const)
    if isinstance(e, ir.Binary) and e.op == "<<":
        s = fold(e.rhs)
        if isinstance(s, int) and 0 <= s < 63:
            return _ascale(to_affine(e.lhs, loopvars, params), {(): 1 << s})
    # Anything else is acceptable only as an opaque atom over parameters.
    for n in ir.walk(e):
        if isinstance(n, ir.Var) and n.name in loopvars:
            raise NotAffine("is not an affine function of the loop variables")
        if isinstance(n, ir.Index):
            raise NotAffine(f"reads memory ('{n.array}[...]')")
        if isinstance(n, ir.Var) and n.name not in params:
            raise NotAffine(f"reads '{n.name}', which is neither a loop variable nor an "
                            "unmodified scalar parameter")
    if e.ty.is_float:
        raise NotAffine("is not an integer")
    return Aff({}, {(e,): 1})


#: Elements of unsigned types of at most this many bits may appear in an index: each is a value in
#: 0..2^bits - 1 (a histogram over bytes); wider ones could need an extent of gigabytes.
NARROW_BITS = 16
_NARROW = "$u"


def reads_elements(form: Aff) -> bool:
    """Whether ``form`` holds narrow unsigned elements read from memory (:data:`NARROW_BITS`): an index
    that depends on data, which no choice of row length splits into subscripts."""
    return any(v.startswith(_NARROW) for v in form.coeffs)


def _atom_nonneg(e: ir.Expr) -> bool:
    v = fold(e)
    if v is not None:
        return v >= 0
    if isinstance(e, ir.Var):
        return True  # scalar parameters are sizes: assumed >= 0
    if isinstance(e, ir.Cast):
        return _atom_nonneg(e.operand)
    if isinstance(e, ir.Binary) and e.op in ("+", "*", "/", "%", ">>", "&", "|"):
        return _atom_nonneg(e.lhs) and _atom_nonneg(e.rhs)
    if isinstance(e, ir.Select):
        return _atom_nonneg(e.then) and _atom_nonneg(e.orelse)
    return False


def _sign(p: Poly) -> str:
    """'nonneg', 'nonpos' or 'unknown' (params assumed >= 0)."""
    if all(all(_atom_nonneg(a) for a in m) for m in p):
        if all(c >= 0 for c in p.values()):
            return "nonneg"
        if all(c <= 0 for c in p.values()):
            return "nonpos"
    return "unknown"


def loop_accesses(stmts: tuple[ir.Stmt, ...], array: str,
                   loops: tuple[ir.For, ...]) -> Iterator[tuple[ir.Index, tuple[ir.For, ...]]]:
    """Each access to ``array`` under ``stmts`` with its enclosing loops (outermost first)."""

    def exprs(*es: ir.Expr | None) -> Iterator[tuple[ir.Index, tuple[ir.For, ...]]]:
        for e in es:
            if e is not None:
                for n in ir.walk(e):
                    if isinstance(n, ir.Index) and n.array == array:
                        yield n, loops

    for s in stmts:
        if isinstance(s, ir.Decl):
            yield from exprs(s.init)
        elif isinstance(s, ir.Assign):
            yield from exprs(s.target, s.value)
        elif isinstance(s, ir.If):
            yield from exprs(s.cond)
            yield from loop_accesses(s.then, array, loops)
            yield from loop_accesses(s.orelse, array, loops)
        elif isinstance(s, ir.For):
            yield from exprs(s.lo, s.hi)
            yield from loop_accesses(s.body, array, loops + (s,))
        elif isinstance(s, ir.Return):
            yield from exprs(s.value)


_MAX_FORMS = 64


def _maximise(index: ir.Expr, loops: tuple[ir.For, ...], params: set[str]) -> list[Poly]:
    """Upper bounds (as polynomials over params) of ``index`` over the loop domain."""
    names = [f.var for f in loops]
    forms = [to_affine(index, set(names), params)]
    for k in range(len(loops) - 1, -1, -1):
        loop, outer = loops[k], set(names[:k])

        def bound(e: ir.Expr, loop: ir.For = loop, outer: set[str] = outer) -> Aff:
            # only the bound a maximum needs is read: 'for (i2 = i; i2 < n; i2++)' (a remainder loop)
            # bounds an increasing index by n alone
            try:
                return to_affine(e, outer, params)
            except NotAffine as err:
                raise NotAffine(f"is used in a loop over '{loop.var}' whose bounds are not affine "
                                f"(a bound {err.reason})") from None

        new: list[Aff] = []
        for form in forms:
            c = form.coeffs.get(loop.var)
            if not c:
                new.append(form)
                continue
            rest = Aff({v: p for v, p in form.coeffs.items() if v != loop.var}, form.const)
            sign = _sign(c)
            if sign != "nonpos":
                new.append(_aadd(rest, _ascale(_aadd(bound(loop.hi), _const_aff(1), -1), c)))
            if sign != "nonneg":
                new.append(_aadd(rest, _ascale(bound(loop.lo), c)))
        forms = _dedupe(new)
        if len(forms) > _MAX_FORMS:
            raise NotAffine("has too many candidate maxima (coefficients of unknown sign)")
    # Narrow unsigned elements read in the index (to_affine): each over 0..2^bits - 1.
    while any(v.startswith(_NARROW) for f in forms for v in f.coeffs):
        new = []
        for form in forms:
            var = next((v for v in form.coeffs if v.startswith(_NARROW)), None)
            if var is None:
                new.append(form)
                continue
            c = form.coeffs[var]
            rest = Aff({v: p for v, p in form.coeffs.items() if v != var}, form.const)
            top = (1 << int(var[len(_NARROW):var.index("@")])) - 1
            sign = _sign(c)
            if sign != "nonpos":
                new.append(_aadd(rest, _ascale(_const_aff(top), c)))
            if sign != "nonneg":
                new.append(rest)
        forms = _dedupe(new)
        if len(forms) > _MAX_FORMS:
            raise NotAffine("has too many candidate maxima (coefficients of unknown sign)")
    return [f.const for f in forms]


def _dedupe(forms: list[Aff]) -> list[Aff]:
    out: list[Aff] = []
    for f in forms:
        if all(f.coeffs != g.coeffs or f.const != g.const for g in out):
            out.append(f)
    return out


def _prune(polys: list[Poly]) -> list[Poly]:
    """Drop candidates that another candidate dominates (difference >= 0)."""
    out: list[Poly] = []
    for p in polys:
        if any(_sign(padd(q, p, -1)) == "nonneg" for q in out):
            continue
        out = [q for q in out if _sign(padd(p, q, -1)) != "nonneg"]
        out.append(p)
    return out


def poly_expr(p: Poly, loc: Loc | None, order: dict[str, int] | None = None) -> ir.Expr:
    """A C-typed IR expression for ``p`` (positive terms first, higher degree first).

    Within a term, parameters appear in ``order`` (their position in the signature).
    """
    rank = order or {}

    def atom_key(a: ir.Expr) -> tuple[int, str]:
        return (rank.get(a.name, len(rank)) if isinstance(a, ir.Var) else len(rank) + 1, _key(a))

    terms = sorted(((tuple(sorted(m, key=atom_key)), c) for m, c in p.items()),
                   key=lambda mc: (mc[1] < 0, -len(mc[0]), [atom_key(a) for a in mc[0]]))
    expr: ir.Expr | None = None
    for mono, coef in terms:
        term: ir.Expr | None = None
        for atom in mono:
            term = atom if term is None else ir.binary("*", term, atom, loc=loc)
        mag = abs(coef)
        if term is None:
            term = int_const(mag, loc)
        elif mag != 1:
            term = ir.binary("*", int_const(mag, loc), term, loc=loc)
        if expr is None:
            expr = term if coef > 0 else ir.unary("-", term, loc=loc)
        else:
            expr = ir.binary("+" if coef > 0 else "-", expr, term, loc=loc)
    return expr if expr is not None else int_const(0, loc)


def derive_extent(body: tuple[ir.Stmt, ...], array: str, dim: int, params: list[str],
                  loc: Loc | None) -> tuple[ir.Expr | None, ir.Index | None, str]:
    """The extent of dimension ``dim`` of ``array`` implied by its accesses in ``body``.

    ``params`` are the scalar parameters that ``body`` never assigns, in
    signature order (used to order factors: ``n * m``).  Returns
    ``(extent, None, "")`` or, when the index range cannot be derived,
    ``(None, offending access, reason)``.
    """
    candidates: list[Poly] = []
    for access, loops in loop_accesses(body, array, ()):
        try:
            ups = _maximise(access.indices[dim], loops, set(params))
        except NotAffine as e:
            return None, access, e.reason
        candidates.extend(padd(u, {(): 1}) for u in ups)
    if not candidates:
        return int_const(0, loc), None, ""
    best = _prune(candidates)
    order = {name: i for i, name in enumerate(params)}
    exprs = [poly_expr(p, loc, order) for p in sorted(best, key=repr)]
    out = exprs[0]
    for other in exprs[1:]:
        out = ir.select(ir.binary(">", out, other, loc=loc), out, other, loc=loc)
    return out, None, ""
