"""Reads of local scalars before any assignment: ``check(kernel) -> list[Finding]``.

An analysis, not a transform.  A local declared without an initialiser
(``int k;``, IR ``i32 k;``) holds an indeterminate value until it is assigned;
reading it is undefined behaviour in C, and the CUDA and the C then disagree
in ways the verifier can only report as a mismatch or a crash.  The CLI makes
a *definite* finding an error and a *conditional* one a warning
(``uninitialized``), located at the read, before anything is compiled.

The walk is in execution order with two sets of locals: those *some* path to
the current point may have assigned, and those *every* path has:

* a ``Decl`` without initialiser makes its name unassigned (again, in a loop:
  each iteration's declaration is a new object);
* an ``Assign`` to a variable, a ``Decl`` with an initialiser and a ``For``'s
  own variable assign; an ``If`` joins its branches (some path: either; every
  path: both);
* a loop's body is walked once, as its first iteration (a read before the
  body's first assignment happens whenever the loop runs); afterwards what the
  body may assign counts for later iterations and the code after the loop, and
  what its first iteration assigns on every path counts as assigned on every
  path if its bounds read no enclosing loop's variable (it is taken to run: no
  warning about sizes with no iterations; a triangular loop such as
  ``for j in 0..i`` runs no iteration at ``i = 0``).

A read of a name no path has assigned is *definite* when nothing on the way
to it is conditional (not under an ``if``, not in a branch of ``?:`` or the
right operand of ``&&``/``||``): it runs, with an indeterminate value, on every
call that reaches its loops.  Any other read of a name not assigned on every
path is *conditional* (some path reads it unassigned, or the read may never
run), except a conditional read in a loop of a name that the loop's later
iterations assign (``if (i > 0) use(s); s = ...``: the condition is what
guards it).

**Precondition**: any valid kernel.  **Postcondition**: nothing changed.

Example: ``int i, k; for (i = 0; i < k; i++) A[i] = 0;`` gives one definite
finding, the read of ``k`` in the loop bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from transpile import ir
from transpile.diagnostics import Loc


@dataclass(frozen=True, slots=True)
class Finding:
    """Local ``name`` is read at ``loc`` before any assignment; ``definite``: on every call that
    reaches the read's loops (else only on some paths)."""

    loc: Loc | None
    name: str
    definite: bool

    @property
    def message(self) -> str:
        when = "" if self.definite else " on some paths"
        return (f"'{self.name}' is read before it is assigned{when}: its value is indeterminate "
                "(undefined behaviour in C)")


def check(kernel: ir.Kernel) -> list[Finding]:
    """The first read before assignment of each local of ``kernel`` (definite ones preferred)."""
    walker = _Walker()
    walker.block(kernel.body, set(), set(), certain=True)
    first: dict[str, Finding] = {}
    for f in walker.found:
        if f.name not in first or (f.definite and not first[f.name].definite):
            first[f.name] = f
    return list(first.values())


class _Walker:
    def __init__(self) -> None:
        self.locals: set[str] = set()  # declared without an initialiser somewhere
        self.found: list[Finding] = []
        self.later: set[str] = set()
        self.loops: list[str] = []  # the enclosing loops' variables

    def block(self, body: tuple[ir.Stmt, ...], may: set[str], must: set[str], *, certain: bool,
              later: frozenset[str] | set[str] = frozenset()) -> tuple[set[str], set[str]]:
        """Walk ``body`` with the names some path (``may``) and every path (``must``) has assigned
        on entry; the two sets on exit. ``later``: names a loop's later iterations may have
        assigned (its body's first walk): a read of one under a condition is no finding
        (``if (i > 0) use(s); s = ...``)."""
        saved, self.later = self.later, self.later | set(later)
        try:
            return self._block(body, set(may), set(must), certain)
        finally:
            self.later = saved

    def _block(self, body: tuple[ir.Stmt, ...], may: set[str], must: set[str],
               certain: bool) -> tuple[set[str], set[str]]:
        for s in body:
            if isinstance(s, ir.Decl):
                if s.init is not None:
                    self.expr(s.init, may, must, certain)
                    may.add(s.name)
                    must.add(s.name)
                else:
                    self.locals.add(s.name)
                    may.discard(s.name)
                    must.discard(s.name)
            elif isinstance(s, ir.Assign):
                self.expr(s.value, may, must, certain)
                if isinstance(s.target, ir.Index):
                    for e in s.target.indices:
                        self.expr(e, may, must, certain)
                else:
                    may.add(s.target.name)
                    must.add(s.target.name)
            elif isinstance(s, ir.For):
                self.expr(s.lo, may, must, certain)
                self.expr(s.hi, may, must, certain)
                later = _assigned_in(s.body)
                # the first iteration; a loop whose bounds read no enclosing loop's variable is taken
                # to run (what it assigns on every path of one iteration counts as assigned after it:
                # no warning for sizes with no iterations); a triangular one may not run on some
                # iteration of the loops around it (`for j in 0..i` at i = 0)
                self.loops.append(s.var)
                try:
                    _, first = self.block(s.body, may | {s.var}, must | {s.var}, certain=certain, later=later)
                finally:
                    self.loops.pop()
                may |= later
                if not any(isinstance(n, ir.Var) and n.name in self.loops for e in (s.lo, s.hi)
                           for n in ir.walk(e)):
                    must |= first - {s.var}
            elif isinstance(s, ir.If):
                self.expr(s.cond, may, must, certain)
                may1, must1 = self.block(s.then, may, must, certain=False)
                may2, must2 = self.block(s.orelse, may, must, certain=False)
                may, must = may1 | may2, must1 & must2
            elif isinstance(s, ir.Launch):
                may, must = self.block(s.body, may, must, certain=certain)
            elif isinstance(s, ir.Return):
                if s.value is not None:
                    self.expr(s.value, may, must, certain)
                certain = False  # what follows runs only on paths that did not return
        return may, must

    def expr(self, e: ir.Expr, may: set[str], must: set[str], certain: bool) -> None:
        if isinstance(e, ir.Var):
            name = e.name
            if name in self.locals and name not in must:
                if name not in may and certain:
                    self.found.append(Finding(e.loc, name, True))
                elif certain or name not in self.later:  # a conditional read of a carried name: guarded
                    self.found.append(Finding(e.loc, name, False))
        elif isinstance(e, ir.Select):
            self.expr(e.cond, may, must, certain)
            self.expr(e.then, may, must, False)
            self.expr(e.orelse, may, must, False)
        elif isinstance(e, ir.Binary) and e.op in ("&&", "||"):
            self.expr(e.lhs, may, must, certain)
            self.expr(e.rhs, may, must, False)
        else:
            for c in ir.children(e):
                self.expr(c, may, must, certain)  # type: ignore[arg-type]


def _assigned_in(body: tuple[ir.Stmt, ...]) -> set[str]:
    return set().union(*(ir.scalars_written(s) for s in body))
