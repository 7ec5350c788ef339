"""Entry snapshots: reads that only ever see an array's values at kernel entry read a copy taken then.

An in-place update in which every iteration reads only elements that no
earlier iteration has written yet carries nothing but *anti* dependences
(read, then a later write), and those keep its loop sequential.  trmm is the
example: row ``i`` of ``B`` is updated from rows ``k > i``, which later
iterations of ``i`` overwrite::

    for i in 0..m {
      for j in 0..n {
        for k in i + 1..m { B[i][j] += A[k][i] * B[k][j]; }
        B[i][j] = alpha * B[i][j];
      }
    }

Every instance of the read ``B[k][j]`` sees ``B``'s value at entry (no
instance of any write to ``B`` precedes it and touches its element:
:func:`passes.deps.entry_reads`, exact via isl).  So it may read a copy of
``B`` taken at entry instead, and then no dependence on ``B`` crosses
iterations of ``i``: the nest is a parallel triangular matrix product::

    local f64 B_entry[m][n];
    for e0 in 0..m { for e1 in 0..n { B_entry[e0][e1] = B[e0][e1]; } }
    for i in 0..m { for j in 0..n { for k in i + 1..m { B[i][j] += A[k][i] * B_entry[k][j]; } ... } }

**Precondition**: valid IR without ``Launch`` (runs before distribution).

**Rule.**  For each array parameter ``X`` the kernel writes, the reads of ``X`` that only
ever see entry values (all of them, or none) read ``X_entry``, a kernel-local
array (``Alloc``) of ``X``'s type filled by a copy nest at the top of the
kernel body.  The copy runs before anything else, so ``X_entry`` holds exactly
the values those reads would have seen; every other read and every write is
unchanged.  The snapshot is taken only if it pays: if it makes more loops
parallel (:func:`passes.deps.parallel_loops`; replacing reads by reads of an
array nothing writes can only remove dependences).  The copy costs one read
and one write of ``X`` on the device, and ``X``'s size in device memory.
"""

from __future__ import annotations

import dataclasses

from passes import deps
from passes.builders import copy_nest, fresh_name
from transpile import ir


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with entry snapshots where they make loops parallel (see the module docstring)."""
    if any(isinstance(n, (ir.Launch, ir.Return)) for n in ir.walk(kernel)):
        return kernel
    reads = deps.entry_reads(kernel)
    if not reads:
        return kernel
    before = deps.parallel_count(kernel)
    if before is None:
        return kernel
    taken: list[tuple[str, str, ir.ArrayType]] = []  # (array, snapshot, type)
    used = ir.identifiers(kernel)
    for array in sorted(reads):
        ty = _array_type(kernel, array)
        if ty is None:
            continue
        snap = fresh_name(f"{array}_entry", used)
        body = _Reads({id(n) for n in reads[array]}, snap).block(kernel.body)
        trial = dataclasses.replace(kernel, body=(ir.Alloc(snap, ty, loc=kernel.loc), *body))
        after = deps.parallel_count(trial)
        if after is not None and after > before:
            kernel, before = trial, after
            used.add(snap)
            taken.append((array, snap, ty))
    if not taken:
        return kernel
    # The snapshots' Allocs lead the body (placed by the trials above); their copies follow them,
    # before the kernel's own statements.
    allocs, rest = kernel.body[:len(taken)], kernel.body[len(taken):]
    copies = tuple(copy_nest(snap, (), array, (), ty, "e", used, kernel.loc) for array, snap, ty in reversed(taken))
    return dataclasses.replace(kernel, body=(*allocs, *copies, *rest))


def _array_type(kernel: ir.Kernel, name: str) -> ir.ArrayType | None:
    """The type of array parameter ``name``; None for a local array (its entry values are undefined,
    and it is declared in the body, after where the copy would go)."""
    p = kernel.param(name)
    return p.ty if p is not None and isinstance(p.ty, ir.ArrayType) else None


class _Reads(ir.Transformer):
    """Replaces the array reads whose ids are ``targets`` by reads of ``snap`` (never a write target)."""

    def __init__(self, targets: set[int], snap: str) -> None:
        self.targets, self.snap = targets, snap

    def block(self, body: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        new = tuple(self.transform(s) for s in body)
        return body if all(a is b for a, b in zip(new, body)) else new

    def visit_Assign(self, s: ir.Assign) -> ir.Node:
        # NOTE: the target is not a read, even when the front end shares its node with a read of the
        # same element (``x += e``); only its subscripts are expressions.
        target = s.target
        if isinstance(target, ir.Index):
            indices = tuple(self.transform(i) for i in target.indices)
            if any(a is not b for a, b in zip(indices, target.indices)):
                target = dataclasses.replace(target, indices=indices)
        value = self.transform(s.value)
        if target is s.target and value is s.value:
            return s
        return dataclasses.replace(s, target=target, value=value)

    def visit_Index(self, e: ir.Index) -> ir.Node:
        e2 = self.generic_visit(e)
        if id(e) in self.targets:
            return dataclasses.replace(e2, array=self.snap)
        return e2
