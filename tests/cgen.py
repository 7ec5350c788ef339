"""Random PolyBench-shaped C kernels, for differential fuzzing of the whole compiler.

``tests/affine_nests.py`` draws IR nests with arbitrary affine subscripts: the
inputs on which the dependence analysis is most easily wrong, but nests that
rarely take the CUDA back end's specialised paths.  This module draws C source
shaped like the kernels users write and the back end is built for, each shape
with randomised details: matrix products (loop order, transposed operands,
triangular bounds, ``beta`` scaling before or inside), matrix-vector products,
stencils (1-3-D, random taps and radius, time loops, in place or ping-pong),
column and row reductions (sums, means, max), outer-product updates,
element-wise maps with math calls and conditions, recurrences along one
dimension, scalar accumulators in loop bodies, and row programs (a row's
statistics, then maps reading them: softmax, layer norm).  One kernel chains 1-3 such
phases over a shared pool of arrays, so later phases read what earlier ones
wrote.

Every program is well defined for any non-negative sizes (subscripts stay in
their declared extents, no division by a value that can be zero, square roots
of non-negative values) and stays numerically tame (stencil taps sum to at most
one, recurrences contract), so a difference between the gcc reference and the
generated CUDA is the compiler's.

``program(seed)`` returns the C text; ``tests/fuzz_cuda.py`` compiles and
verifies many of them.
"""

from __future__ import annotations

import dataclasses
import random
import re
import textwrap
from collections.abc import Callable

SIZES = ("ni", "nj", "nk")


@dataclasses.dataclass
class Pool:
    """Arrays of one kernel: name -> dimensions (size parameter names)."""

    rng: random.Random
    ty: str
    arrays: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    params: set[str] = dataclasses.field(default_factory=set)
    scalars: set[str] = dataclasses.field(default_factory=set)
    flats: dict[str, str] = dataclasses.field(default_factory=dict)  # pointer name -> element count
    ints: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)  # int arrays
    tags: int = 0  # phases that declared locals or labels so far (tests/cgen.py: _tag)

    def get(self, dims: tuple[str, ...], avoid: tuple[str, ...] = ()) -> str:
        """An array of these dimensions: an existing one half the time, else a new one."""
        self.params.update(dims)
        have = [a for a, d in self.arrays.items() if d == dims and a not in avoid]
        if have and self.rng.random() < 0.5:
            return self.rng.choice(have)
        name = f"{'ABCDEFGHPQRSUVWXYZ'[len(self.arrays) % 18]}{len(self.arrays) // 18 or ''}"
        self.arrays[name] = dims
        return name

    def scalar(self, name: str) -> str:
        self.scalars.add(name)
        return name


def _lit(rng: random.Random, lo: float = 0.1, hi: float = 0.9) -> str:
    return f"{rng.uniform(lo, hi):.3f}"


def _square(p: Pool) -> str:
    return p.rng.choice(SIZES)


def matmul(p: Pool) -> str:
    r = p.rng
    tri = r.random() < 0.3
    if tri:
        n = _square(p)
        di = dj = dk = n
    else:
        di, dj, dk = r.sample(SIZES, 3) if r.random() < 0.7 else (r.choice(SIZES),) * 3
    c = p.get((di, dj))
    a = p.get((di, dk) if r.random() < 0.7 else (dk, di), avoid=(c,))
    b = p.get((dk, dj) if r.random() < 0.7 else (dj, dk), avoid=(c,))
    aref = f"{a}[i][k]" if p.arrays[a] == (di, dk) else f"{a}[k][i]"
    bref = f"{b}[k][j]" if p.arrays[b] == (dk, dj) else f"{b}[j][k]"
    if di == dk and p.arrays[a] == (di, dk) and r.random() < 0.5:
        aref = r.choice([aref, f"{a}[k][i]"])
    alpha = p.scalar("alpha") + " * " if r.random() < 0.6 else ""
    op = r.choice(["+=", "+=", "+=", "-="])
    body = f"{c}[i][j] {op} {alpha}{aref} * {bref};"
    bounds = {"i": f"i < {di}", "j": f"j < {dj}", "k": f"k < {dk}"}
    starts = {"i": "0", "j": "0", "k": "0"}
    if tri:
        kind = r.choice(["k<i", "k<=j", "k>i", "j<=i"])
        if kind == "k<i":
            bounds["k"] = "k < i"
        elif kind == "k<=j":
            bounds["k"] = "k <= j"
        elif kind == "k>i":
            starts["k"] = "i + 1"
        else:
            bounds["j"] = "j <= i"
    deps = {"k": {"i", "j"} & set(bounds["k"].split() + starts["k"].split()),
            "j": {"i"} & set(bounds["j"].split()), "i": set()}
    orders = [o for o in (("i", "j", "k"), ("i", "k", "j"), ("k", "i", "j"), ("j", "i", "k"), ("j", "k", "i"),
                          ("k", "j", "i")) if all(d in o[:o.index(v)] for v in o for d in deps[v])]
    order = r.choice(orders)
    init = r.choice(["none", "zero", "beta", "beta-inside"])
    lines: list[str] = []
    if init in ("zero", "beta") or (init == "beta-inside" and order[0] != "i"):
        rhs = "0.0" if init == "zero" else None
        jb = bounds["j"] if "i" not in bounds["j"] else f"j < {dj}"
        stmt = f"{c}[i][j] = 0.0;" if rhs else f"{c}[i][j] *= {p.scalar('beta')};"
        lines.append(f"for (i = 0; i < {di}; i++)\n  for (j = 0; {jb}; j++)\n    {stmt}")
        init = "none"
    inner = body
    for v in reversed(order):
        loop = f"for ({v} = {starts[v]}; {bounds[v]}; {v}++)"
        if init == "beta-inside" and v == "i":
            jb = bounds["j"]
            inner = (f"{loop} {{\n  for (j = 0; {jb}; j++)\n    {c}[i][j] *= {p.scalar('beta')};\n"
                     f"{_indent(inner)}\n}}")
        else:
            inner = f"{loop}\n{_indent(inner)}"
    lines.append(inner)
    return "\n".join(lines)


def matvec(p: Pool) -> str:
    r = p.rng
    di, dj = r.sample(SIZES, 2) if r.random() < 0.7 else (r.choice(SIZES),) * 2
    y = p.get((di,))
    x = p.get((dj,), avoid=(y,))
    a = p.get((di, dj) if r.random() < 0.6 else (dj, di))
    aref = f"{a}[i][j]" if p.arrays[a] == (di, dj) else f"{a}[j][i]"
    scale = f"{p.scalar('alpha')} * " if r.random() < 0.4 else ""
    body = f"{y}[i] = {y}[i] + {scale}{aref} * {x}[j];"
    if r.random() < 0.5:
        init = f"{y}[i] = 0.0;" if r.random() < 0.5 else f"{y}[i] = {p.scalar('beta')} * {y}[i];"
        return f"for (i = 0; i < {di}; i++) {{\n  {init}\n  for (j = 0; j < {dj}; j++)\n    {body}\n}}"
    if r.random() < 0.5:
        return f"for (j = 0; j < {dj}; j++)\n  for (i = 0; i < {di}; i++)\n    {body}"
    return f"for (i = 0; i < {di}; i++)\n  for (j = 0; j < {dj}; j++)\n    {body}"


def stencil(p: Pool) -> str:
    r = p.rng
    rank = r.choice([1, 2, 2, 3])
    dims = tuple(r.choice(SIZES) for _ in range(rank))
    radius = r.choice([1, 1, 2])
    vs = "ijk"[:rank]
    taps: set[tuple[int, ...]] = set()
    for _ in range(r.randint(2, 6)):
        taps.add(tuple(r.randint(-radius, radius) for _ in range(rank)))
    taps_l = sorted(taps)
    w = 1.0 / len(taps_l)
    def expr(src: str) -> str:
        terms = []
        for t in taps_l:
            sub = "".join(f"[{v}{'+' if o > 0 else '-'}{abs(o)}]" if o else f"[{v}]" for v, o in zip(vs, t))
            terms.append(f"{src}{sub}")
        return f"{w:.4f} * ({' + '.join(terms)})"
    def nest(stmt: str) -> str:
        text = stmt
        for v, d in reversed(list(zip(vs, dims))):
            text = f"for ({v} = {radius}; {v} < {d} - {radius}; {v}++)\n{_indent(text)}"
        return text
    here = "".join(f"[{v}]" for v in vs)
    kind = r.choice(["once", "pingpong", "inplace"])
    a = p.get(dims)
    if kind == "inplace":
        body = nest(f"{a}{here} = {expr(a)};")
    else:
        b = p.get(dims, avoid=(a,))
        body = nest(f"{b}{here} = {expr(a)};")
        if kind == "pingpong":
            body += "\n" + nest(f"{a}{here} = {expr(b)};")
    if kind != "once" and r.random() < 0.7:
        p.params.add("tsteps")
        return f"for (t = 0; t < tsteps; t++) {{\n{_indent(body)}\n}}"
    return body


def reduce(p: Pool) -> str:
    r = p.rng
    di, dj = r.sample(SIZES, 2)
    a = p.get((di, dj))
    col = r.random() < 0.5
    out = p.get((dj,) if col else (di,))
    o, other = ("j", "i") if col else ("i", "j")
    do, dother = (dj, di) if col else (di, dj)
    kind = r.choice(["sum", "mean", "max", "ifmax", "sumsq"])
    if kind in ("sum", "mean", "sumsq"):
        term = f"{a}[i][j] * {a}[i][j]" if kind == "sumsq" else f"{a}[i][j]"
        fin = ""
        if kind == "mean":
            fin = f"\n  {out}[{o}] /= {p.scalar('float_n')};"
        elif kind == "sumsq":
            fin = f"\n  {out}[{o}] = sqrt({out}[{o}]);"
        return (f"for ({o} = 0; {o} < {do}; {o}++) {{\n  {out}[{o}] = 0.0;\n"
                f"  for ({other} = 0; {other} < {dother}; {other}++)\n    {out}[{o}] += {term};{fin}\n}}")
    upd = (f"{out}[{o}] = fmax({out}[{o}], {a}[i][j]);" if kind == "max"
           else f"if ({a}[i][j] > {out}[{o}])\n      {out}[{o}] = {a}[i][j];")
    return (f"for ({o} = 0; {o} < {do}; {o}++) {{\n  {out}[{o}] = -1.0e30;\n"
            f"  for ({other} = 0; {other} < {dother}; {other}++)\n    {upd}\n}}")


def outer(p: Pool) -> str:
    r = p.rng
    di, dj = r.sample(SIZES, 2) if r.random() < 0.7 else (r.choice(SIZES),) * 2
    a = p.get((di, dj))
    terms = []
    for _ in range(r.randint(1, 2)):
        terms.append(f"{p.get((di,))}[i] * {p.get((dj,))}[j]")
    return f"for (i = 0; i < {di}; i++)\n  for (j = 0; j < {dj}; j++)\n    {a}[i][j] = {a}[i][j] + {' + '.join(terms)};"


def _operand(p: Pool, dims: tuple[str, ...], avoid: tuple[str, ...]) -> str:
    """A read of the element-wise loop's point: plain, transposed (square arrays) or a broadcast vector."""
    r = p.rng
    if len(dims) == 2 and dims[0] == dims[1] and r.random() < 0.4:
        return f"{p.get(dims, avoid)}[j][i]"
    if len(dims) == 2 and r.random() < 0.3:
        side = r.randint(0, 1)
        return f"{p.get((dims[side],), avoid)}[{'ij'[side]}]"
    return p.get(dims, avoid) + "".join(f"[{v}]" for v in "ij"[:len(dims)])


def elementwise(p: Pool) -> str:
    r = p.rng
    rank = r.choice([1, 2])
    dims = (r.choice(SIZES),) if rank == 1 else ((r.choice(SIZES),) * 2 if r.random() < 0.4 else tuple(r.sample(SIZES, 2)))
    out = p.get(dims)
    here = "".join(f"[{v}]" for v in "ij"[:rank])
    x = _operand(p, dims, (out,))
    y = _operand(p, dims, (out,))
    f = r.choice([f"sqrt(fabs({x}))", f"exp(-{x} * {x})", f"{x} * {y} + {_lit(r)}", f"fabs({x} - {y})",
                  f"({x} > {y} ? {x} : {y})", f"sin({x}) + cos({y})", f"{x} / (1.0 + fabs({y}))"])
    stmt = f"{out}{here} = {f};"
    if rank == 2 and r.random() < 0.4:
        cond = r.choice(["i <= j", "i > j", "i == j", f"{x} > 0.0"])
        if "[j][i]" in cond and dims[0] != dims[1]:
            cond = "i <= j"
        stmt = f"if ({cond})\n  {stmt}\nelse\n  {out}{here} = {r.choice(['0.0', x, f'{out}{here} * 0.5'])};"
    text = stmt
    for v, d in reversed(list(zip("ij", dims))):
        text = f"for ({v} = 0; {v} < {d}; {v}++)\n{_indent(text)}"
    return text


def recurrence(p: Pool) -> str:
    r = p.rng
    di, dj = r.sample(SIZES, 2)
    a = p.get((di, dj))
    b = p.get((di, dj), avoid=(a,))
    c = _lit(r, 0.2, 0.8)
    if r.random() < 0.5:  # along i, parallel in j
        body = f"{a}[i][j] = {a}[i-1][j] * {c} + {b}[i][j];"
        return f"for (j = 0; j < {dj}; j++)\n  for (i = 1; i < {di}; i++)\n    {body}" if r.random() < 0.5 else \
               f"for (i = 1; i < {di}; i++)\n  for (j = 0; j < {dj}; j++)\n    {body}"
    body = f"{a}[i][j] = {a}[i][j-1] * {c} - {b}[i][j];"
    return f"for (i = 0; i < {di}; i++)\n  for (j = 1; j < {dj}; j++)\n    {body}"


def accumulate(p: Pool) -> str:
    r = p.rng
    di, dk = r.sample(SIZES, 2)
    a = p.get((di, dk))
    x = p.get((dk,))
    y = p.get((di,), avoid=(x,))
    fin = r.choice([f"{y}[i] = acc;", f"{y}[i] = {y}[i] * 0.5 + acc;", f"{y}[i] = acc / (1.0 + fabs(acc));"])
    return (f"for (i = 0; i < {di}; i++) {{\n  {p.ty} acc = 0.0;\n  for (k = 0; k < {dk}; k++)\n"
            f"    acc += {a}[i][k] * {x}[k];\n  {fin}\n}}")


def reversed_scan(p: Pool) -> str:
    """Loops that run down, start late or stride: a reversed copy, a strided update, an index-mixing read."""
    r = p.rng
    n = r.choice(SIZES)
    a = p.get((n,))
    b = p.get((n,), avoid=(a,))
    kind = r.choice(["reverse", "stride", "down", "mirror2"])
    if kind == "reverse":
        return f"for (i = 0; i < {n}; i++)\n  {b}[i] = {a}[{n} - 1 - i] * {_lit(r)};"
    if kind == "stride":
        s = r.choice([2, 3])
        return f"for (i = {r.randint(0, 2)}; i < {n}; i += {s})\n  {a}[i] = {a}[i] + {b}[i / {s}];"
    if kind == "down":
        return f"for (i = {n} - 2; i >= 0; i--)\n  {a}[i] = {a}[i + 1] * {_lit(r)} + {b}[i];"
    m = p.get((n, n))
    return (f"for (i = 0; i < {n}; i++)\n  for (j = i + 1; j < {n}; j++) {{\n"
            f"    {m}[i][j] = {m}[i][j] + {a}[i] * {a}[j];\n    {m}[j][i] = {m}[i][j];\n  }}")


def symmetric(p: Pool) -> str:
    """covariance/syrk-like: an upper triangle computed, then mirrored, in one nest."""
    r = p.rng
    m, n = r.sample(SIZES, 2)
    d = p.get((n, m))
    c = p.get((m, m))
    scale = r.choice(["", f"\n    {c}[i][j] /= ({p.scalar('float_n')} + 1.0);", f"\n    {c}[i][j] *= {_lit(r)};"])
    return (f"for (i = 0; i < {m}; i++)\n  for (j = i; j < {m}; j++) {{\n    {c}[i][j] = 0.0;\n"
            f"    for (k = 0; k < {n}; k++)\n      {c}[i][j] += {d}[k][i] * {d}[k][j];{scale}\n"
            f"    {c}[j][i] = {c}[i][j];\n  }}")


def init(p: Pool) -> str:
    """PolyBench's init style: integer arithmetic of the indices, converted and divided."""
    r = p.rng
    di, dj = r.choice(SIZES), r.choice(SIZES)
    a = p.get((di, dj))
    num = r.choice(["(i * j + 1) % " + di, "(i + j) % 7", "i * (j + 2) % " + dj, "(i - j) / 3"])
    return (f"for (i = 0; i < {di}; i++)\n  for (j = 0; j < {dj}; j++)\n"
            f"    {a}[i][j] = ({p.ty})({num}) / {di} + {a}[i][j];")


def two_statements(p: Pool) -> str:
    """Two statements in one body, the second reading what the first wrote (fusion's business)."""
    r = p.rng
    di, dj = r.choice(SIZES), r.choice(SIZES)
    a = p.get((di, dj))
    b = p.get((di, dj), avoid=(a,))
    c = p.get((di,), avoid=())
    shift = r.choice(["[i][j]", "[i][j]", f"[i][{dj} - 1 - j]"])
    return (f"for (i = 0; i < {di}; i++)\n  for (j = 0; j < {dj}; j++) {{\n"
            f"    {a}[i][j] = {b}[i][j] * {_lit(r)} + {c}[i];\n    {b}{shift} = {a}[i][j] - {b}{shift} * 0.5;\n  }}")


def scalar_chain(p: Pool) -> str:
    """A scalar carried across iterations (durbin-like): sequential, with a parallel inner loop."""
    r = p.rng
    n = r.choice(SIZES)
    a = p.get((n,))
    b = p.get((n,), avoid=(a,))
    return (f"{{\n  {p.ty} s = 1.0;\n  for (i = 0; i < {n}; i++) {{\n    s = s * 0.5 + {a}[i] * 0.25;\n"
            f"    {b}[i] = s;\n  }}\n}}")


def flat(p: Pool) -> str:
    """Pointer parameters indexed by hand (``A[i * m + j]``), which delinearize turns into matrices."""
    r = p.rng
    di, dj = r.sample(SIZES, 2)
    p.params.update((di, dj))
    x, y = f"F{len(p.flats)}", f"F{len(p.flats) + 1}"
    p.flats[x] = f"{di} * {dj}"
    p.flats[y] = f"{di} * {dj}"
    src = p.get((di, dj))
    if r.random() < 0.5:
        return (f"for (i = 0; i < {di}; i++)\n  for (j = 0; j < {dj}; j++)\n"
                f"    {x}[i * {dj} + j] = {y}[j * {di} + i] * {_lit(r)} + {src}[i][j];")
    return (f"for (j = 0; j < {dj}; j++)\n  for (i = 0; i < {di}; i++)\n"
            f"    {x}[i * {dj} + j] -= {src}[i][j] * {y}[i * {dj} + j];")


def relax(p: Pool) -> str:
    """floyd-warshall-like integer min-plus relaxation (or a double max-times one)."""
    r = p.rng
    n = r.choice(SIZES)
    if r.random() < 0.6:
        name = f"I{len(p.ints)}"
        p.ints[name] = (n, n)
        p.params.add(n)
        upd = (f"{name}[i][j] = {name}[i][j] < {name}[i][k] + {name}[k][j] ? {name}[i][j] : "
               f"{name}[i][k] + {name}[k][j];")
    else:
        a = p.get((n, n))
        upd = f"{a}[i][j] = fmax({a}[i][j], {a}[i][k] * {a}[k][j] * 0.5);"
    return f"for (k = 0; k < {n}; k++)\n  for (i = 0; i < {n}; i++)\n    for (j = 0; j < {n}; j++)\n      {upd}"


def local_array(p: Pool) -> str:
    """A scratch array local to the kernel, filled and read per row (doitgen's sum)."""
    r = p.rng
    di, dj = r.sample(SIZES, 2)
    a = p.get((di, dj))
    b = p.get((di, dj), avoid=(a,))
    rev = r.choice(["j", f"{dj} - 1 - j"])
    rows = (f"    for (j = 0; j < {dj}; j++)\n      tmp[j] = {a}[i][j] * 2.0;\n    for (j = 0; j < {dj}; j++)\n"
            f"      {b}[i][j] = tmp[j] + tmp[{rev}];\n")
    if r.random() < 0.5:  # declared in the loop: a new array each iteration
        return f"for (i = 0; i < {di}; i++) {{\n  {p.ty} tmp[{dj}];\n{textwrap.indent(textwrap.dedent(rows), '  ')}}}"
    return f"{{\n  {p.ty} tmp[{dj}];\n  for (i = 0; i < {di}; i++) {{\n{rows}  }}\n}}"


def mathy(p: Pool) -> str:
    """Math calls and casts in an element-wise update, with compound assignment."""
    r = p.rng
    n = r.choice(SIZES)
    a = p.get((n,))
    b = p.get((n,), avoid=(a,))
    e = r.choice([f"pow(fabs({b}[i]), 1.5)", f"log(1.0 + fabs({b}[i]))", f"fmin({b}[i], 0.25)",
                  f"floor({b}[i] * 4.0) / 4.0", f"-{b}[i] * (double)(i % 3)", f"tanh({b}[i])",
                  f"({b}[i] > 0.0 ? {b}[i] : -{b}[i] * 0.5)", f"(double)((int)({b}[i] * 10.0)) * 0.1"])
    op = r.choice(["=", "+=", "-=", "*="])
    return f"for (i = 0; i < {n}; i++)\n  {a}[i] {op} {e};"


def solve(p: Pool) -> str:
    """A triangular solve (trisolv-like): sequential rows, each a reduction over the solved ones."""
    r = p.rng
    n = r.choice(SIZES)
    lmat = p.get((n, n))
    x = p.get((n,))
    rhs = p.get((n,), avoid=(x,))
    if r.random() < 0.5:
        return (f"for (i = 0; i < {n}; i++) {{\n  {x}[i] = {rhs}[i];\n  for (j = 0; j < i; j++)\n"
                f"    {x}[i] -= {lmat}[i][j] * {x}[j];\n  {x}[i] = {x}[i] / (2.0 + fabs({lmat}[i][i]));\n}}")
    return (f"for (i = {n} - 1; i >= 0; i--) {{\n  {x}[i] = {rhs}[i];\n  for (j = i + 1; j < {n}; j++)\n"
            f"    {x}[i] -= {lmat}[i][j] * {x}[j] * 0.5;\n}}")


def factor(p: Pool) -> str:
    """An in-place elimination (lu-like), its multipliers kept at most 1/2 in magnitude."""
    r = p.rng
    n = r.choice(SIZES)
    a = p.get((n, n))
    inner = r.choice(["j = k + 1; j < {n}", "j = 0; j <= k"]).format(n=n)
    upd = f"{a}[i][j] -= {a}[i][k] * {a}[k][j];" if inner.startswith("j = k") else \
        f"{a}[i][j] = {a}[i][j] * 0.5 + {a}[i][k] * 0.25;"
    return (f"for (k = 0; k < {n}; k++) {{\n  for (i = k + 1; i < {n}; i++)\n"
            f"    {a}[i][k] = {a}[i][k] / (2.0 + fabs({a}[k][k]));\n"
            f"  for (i = k + 1; i < {n}; i++)\n    for ({inner}; j++)\n      {upd}\n}}")


def cube(p: Pool) -> str:
    """doitgen-like: a 3-D array times a matrix along its last dimension, through a scratch row."""
    r = p.rng
    dr, dq, dp = r.choice(SIZES), r.choice(SIZES), r.choice(SIZES)
    a = p.get((dr, dq, dp))
    c4 = p.get((dp, dp))
    s = p.get((dp,))
    return (f"for (i = 0; i < {dr}; i++)\n  for (j = 0; j < {dq}; j++) {{\n"
            f"    for (k = 0; k < {dp}; k++) {{\n      {s}[k] = 0.0;\n      for (t = 0; t < {dp}; t++)\n"
            f"        {s}[k] += {a}[i][j][t] * {c4}[t][k];\n    }}\n"
            f"    for (k = 0; k < {dp}; k++)\n      {a}[i][j][k] = {s}[k];\n  }}")


def table(p: Pool) -> str:
    """nussinov-like: an upper-triangular table filled from the bottom row up, by max."""
    r = p.rng
    n = r.choice(SIZES)
    tb = p.get((n, n))
    w = p.get((n,))
    return (f"for (i = {n} - 1; i >= 0; i--)\n  for (j = i + 1; j < {n}; j++) {{\n"
            f"    if (j - 1 >= 0)\n      {tb}[i][j] = fmax({tb}[i][j], {tb}[i][j - 1]);\n"
            f"    if (i + 1 < {n})\n      {tb}[i][j] = fmax({tb}[i][j], {tb}[i + 1][j] + {w}[i] * 0.1);\n"
            f"    for (k = i + 1; k < j; k++)\n      {tb}[i][j] = fmax({tb}[i][j], {tb}[i][k] * 0.5 + {tb}[k + 1][j] * 0.5);\n"
            f"  }}")


def masked(p: Pool) -> str:
    """Reductions under a data-dependent condition: a masked sum, an integer count, a masked min."""
    r = p.rng
    di, dj = r.sample(SIZES, 2)
    a = p.get((di, dj))
    kind = r.choice(["sum", "count", "min"])
    if kind == "count":
        name = f"I{len(p.ints)}"
        p.ints[name] = (di,)
        return (f"for (i = 0; i < {di}; i++) {{\n  {name}[i] = 0;\n  for (j = 0; j < {dj}; j++)\n"
                f"    if ({a}[i][j] > {_lit(r, -0.5, 0.5)})\n      {name}[i] += 1;\n}}")
    out = p.get((dj,))
    if kind == "sum":
        return (f"for (j = 0; j < {dj}; j++) {{\n  {out}[j] = 0.0;\n  for (i = 0; i < {di}; i++)\n"
                f"    if ({a}[i][j] > 0.0)\n      {out}[j] += {a}[i][j];\n}}")
    return (f"for (j = 0; j < {dj}; j++) {{\n  {out}[j] = 1.0e30;\n  for (i = 0; i < {di}; i++)\n"
            f"    if (i % 2 == 0 && {a}[i][j] < {out}[j])\n      {out}[j] = {a}[i][j];\n}}")


def row_program(p: Pool) -> str:
    """Statistics of each row in local scalars, then maps reading them (softmax, layer norm, a row
    norm, centring), some storing a statistic per row: the row programs of transpile/cuda/reduce.py.
    A third of them run over a batch of matrices (``for k { for i { ... } }``, 3-D arrays: one space
    of rows, reduce_gpu.row_batch)."""
    r = p.rng
    di, dj = r.sample(SIZES, 2)
    batch = r.choice(SIZES) if r.random() < 1 / 3 else None
    lead = () if batch is None else (batch,)
    x = p.get((*lead, di, dj))
    y = p.get((*lead, di, dj), avoid=(x,))
    t = p.ty
    kind = r.choice(["softmax", "layernorm", "rownorm", "center"])
    if kind == "softmax":  # s >= 1 whenever the row is not empty (the maximum's term is exp(0))
        body = (f"{t} mx = -1.0e30;\nfor (j = 0; j < {dj}; j++)\n  mx = fmax(mx, {x}[i][j]);\n{t} s = 0.0;\n"
                f"for (j = 0; j < {dj}; j++) {{\n  {y}[i][j] = exp({x}[i][j] - mx);\n  s += {y}[i][j];\n}}\n"
                f"for (j = 0; j < {dj}; j++)\n  {y}[i][j] /= s;")
    elif kind == "layernorm":
        body = (f"{t} mu = 0.0;\nfor (j = 0; j < {dj}; j++)\n  mu += {x}[i][j];\nmu /= {dj} + 1;\n{t} v = 0.0;\n"
                f"for (j = 0; j < {dj}; j++)\n  v += ({x}[i][j] - mu) * ({x}[i][j] - mu);\n"
                f"for (j = 0; j < {dj}; j++)\n  {y}[i][j] = ({x}[i][j] - mu) / sqrt(v / ({dj} + 1) + 1.0);")
    elif kind == "rownorm":
        body = (f"{t} s = 0.0;\nfor (j = 0; j < {dj}; j++)\n  s += {x}[i][j] * {x}[i][j];\n"
                f"for (j = 0; j < {dj}; j++)\n  {y}[i][j] = {x}[i][j] / sqrt(s + 1.0);")
    else:
        body = (f"{t} mu = 0.0;\nfor (j = 0; j < {dj}; j++)\n  mu += {x}[i][j];\nmu = mu / ({dj} + 1);\n"
                f"for (j = 0; j < {dj}; j++)\n  {y}[i][j] = {y}[i][j] * {_lit(r)} + {x}[i][j] - mu;")
    if r.random() < 0.5:  # a statistic stored per row, on thread 0 of the row
        out = p.get((*lead, di))
        stat = body.split(" = ", 1)[0].split()[-1]
        body += f"\n{out}[i] = {out}[i] * {_lit(r)} + {stat};"
    rows = f"for (i = 0; i < {di}; i++) {{\n" + textwrap.indent(body, "  ") + "\n}"
    if batch is None:
        return rows
    return f"for (k = 0; k < {batch}; k++)\n" + textwrap.indent(rows.replace("[i]", "[k][i]"), "  ")


def scatter(p: Pool) -> str:
    """A histogram: counts or weighted bins indexed by an integer array's values (passes/atomics.py),
    over one or two loops."""
    r = p.rng
    di, dj, nb = r.choice(SIZES), r.choice(SIZES), r.choice(SIZES)
    two = r.random() < 0.5
    idx = f"I{len(p.ints)}"
    p.ints[idx] = (di, dj) if two else (di,)
    p.params.update((di, dj, nb) if two else (di, nb))
    at = f"{idx}[i][j]" if two else f"{idx}[i]"
    if r.random() < 0.5:
        bins = f"I{len(p.ints)}"
        p.ints[bins] = (nb,)
        update = f"{bins}[b] += {r.choice(['1', '2', '-1'])};"
    else:
        bins = p.get((nb,))
        w = p.get((di, dj) if two else (di,))
        update = f"{bins}[b] {r.choice(['+=', '-='])} {w}{at[len(idx):]} * {_lit(r)};"
    body = f"int b = ({at} % {nb} + {nb}) % {nb};\n{update}"
    if two:
        return (f"for (i = 0; i < {di}; i++)\n  for (j = 0; j < {dj}; j++) {{\n"
                + textwrap.indent(body, "    ") + "\n  }")
    return f"for (i = 0; i < {di}; i++) {{\n" + textwrap.indent(body, "  ") + "\n}"



# --- Ordinary C (docs/ordinary_c.md): the constructs the front end structures or rewrites, and the loop
# shapes constprop, induction, normalize and ifreduce are for.  Each declares its locals in a block of
# its own with a fresh suffix, so that several phases can share a program.


def _tag(p: Pool) -> str:
    """A suffix for the labels and locals of one phase, unique in its program."""
    p.tags += 1
    return str(p.tags)


def goto_if(p: Pool) -> str:
    """Forward gotos: a skip (``continue``), an if/else made of two jumps, or a jump out of the loop."""
    r = p.rng
    d = r.choice(SIZES)
    x = p.get((d,))
    y = p.get((d,), avoid=(x,))
    t = _tag(p)
    thr = _lit(r, -0.5, 0.5)
    kind = r.choice(["skip", "ifelse", "out", "continue", "over"])
    if kind == "over":  # a jump over a whole loop: a host-level if around it (passes/sink_guard.py)
        p.params.add("tsteps")
        return (f"if (tsteps > {r.choice([0, 1, 2])})\n  goto over{t};\nfor (i = 0; i < {d}; i++)\n"
                f"  {y}[i] = {x}[i] * {_lit(r)} - {y}[i];\nover{t}:;")
    if kind == "skip":
        return (f"for (i = 0; i < {d}; i++) {{\n  if ({x}[i] < {thr})\n    goto skip{t};\n"
                f"  {y}[i] = {x}[i] * {_lit(r)} + {y}[i];\nskip{t}:;\n}}")
    if kind == "continue":
        return (f"for (i = 0; i < {d}; i++) {{\n  if ({x}[i] < {thr})\n    continue;\n"
                f"  {y}[i] = {y}[i] - {x}[i];\n}}")
    if kind == "ifelse":
        return (f"for (i = 0; i < {d}; i++) {{\n  if ({x}[i] > {thr})\n    goto big{t};\n  {y}[i] = {x}[i];\n"
                f"  goto done{t};\nbig{t}:\n  {y}[i] = {x}[i] * {x}[i];\ndone{t}:;\n}}")
    return (f"for (i = 0; i < {d}; i++) {{\n  if ({x}[i] > {thr})\n    goto out{t};\n  {y}[i] = {x}[i] + 1.0;\n}}\n"
            f"out{t}:;")


def switch_case(p: Pool) -> str:
    """A switch on a value derived from the data: plain cases with break, shared cases, fall-through."""
    r = p.rng
    d = r.choice(SIZES)
    x = p.get((d,))
    y = p.get((d,), avoid=(x,))
    sel = f"(((int)({x}[i] * 8.0)) % 3 + 3) % 3"
    if r.random() < 0.25:  # a switch between loops, on a scalar (passes/sink_guard.py)
        p.params.add("tsteps")
        return (f"switch (tsteps % 3) {{\ncase 0:\n  for (i = 0; i < {d}; i++)\n    {y}[i] = {x}[i];\n  break;\n"
                f"case 1:\n  for (i = 1; i < {d}; i++)\n    {y}[i] += {x}[i - 1];\n  break;\n"
                f"default:\n  for (i = 0; i < {d}; i++)\n    {y}[i] *= {_lit(r)};\n}}")
    if r.random() < 0.5:
        cases = (f"  case 0:\n    {y}[i] = {x}[i];\n    break;\n  case 1:\n  case 2:\n    {y}[i] = -{x}[i];\n"
                 f"    break;\n  default:\n    {y}[i] = 0.0;\n")
    else:
        cases = (f"  case 2:\n    {y}[i] += {x}[i];\n  case 1:\n    {y}[i] += {_lit(r)};\n    break;\n"
                 f"  default:\n    {y}[i] *= 0.5;\n")
    return f"for (i = 0; i < {d}; i++) {{\n  switch ({sel}) {{\n{cases}  }}\n}}"


def pointer_walk(p: Pool) -> str:
    """Local pointers into arrays: an offset start, a post-incremented walk, a row of a matrix."""
    r = p.rng
    t = _tag(p)
    ty = p.ty
    kind = r.choice(["offset", "walk", "row", "step"])
    if kind == "row":
        di, dj = r.choice(SIZES), r.choice(SIZES)
        a = p.get((di, dj))
        b = p.get((di, dj), avoid=(a,))
        return (f"for (i = 0; i < {di}; i++) {{\n  {ty} *row{t} = {a}[i];\n  const {ty} *src{t} = &{b}[i][0];\n"
                f"  for (j = 0; j < {dj}; j++)\n    row{t}[j] = src{t}[j] * {_lit(r)} + row{t}[j];\n}}")
    d = r.choice(SIZES)
    x = p.get((d,))
    y = p.get((d,), avoid=(x,))
    if kind == "offset":
        return (f"{{\n  {ty} *p{t} = {y} + 1;\n  for (i = 0; i + 1 < {d}; i++)\n"
                f"    p{t}[i] = {x}[i] + {x}[i + 1];\n}}")
    if kind == "walk":
        return (f"{{\n  {ty} *p{t} = {y};\n  const {ty} *q{t} = {x};\n  for (i = 0; i < {d}; i++)\n"
                f"    *p{t}++ = *q{t}++ * {_lit(r)};\n}}")
    return (f"{{\n  {ty} *p{t} = &{y}[0];\n  for (i = 0; i + 1 < {d}; i += 2) {{\n    p{t}[0] = {x}[i + 1];\n"
            f"    p{t}[1] = {x}[i];\n    p{t} += 2;\n  }}\n}}")


def strided(p: Pool) -> str:
    """Loops of non-unit step, upward and downward: maps (parallel) and recurrences (not)."""
    r = p.rng
    d = r.choice(SIZES)
    x = p.get((d,))
    y = p.get((d,), avoid=(x,))
    s = r.choice([2, 3, 4])
    kind = r.choice(["up", "down", "odd", "rec", "runtime", "runtime_down", "runtime_rec"])
    if kind.startswith("runtime"):  # a step known at run time, positive (BLAS's incx)
        p.params.add("tsteps")
        inc = r.choice(["tsteps + 1", "(tsteps > 1 ? tsteps : 1)", "tsteps * 2 + 1"])
        if kind == "runtime":
            return f"for (i = {r.choice([0, 1])}; i < {d}; i += {inc})\n  {y}[i] = {x}[i] * {_lit(r)} + {y}[i];"
        if kind == "runtime_down":
            return f"for (i = {d} - 1; i >= 0; i -= {inc})\n  {y}[i] = {x}[i] - {y}[i];"
        return f"for (i = 1; i < {d}; i += {inc})\n  {y}[i] = {y}[i - 1] * {_lit(r)} + {x}[i];"
    if kind == "up":
        return f"for (i = 0; i < {d}; i += {s})\n  {y}[i] = {x}[i] * {_lit(r)} + {y}[i];"
    if kind == "down":
        return f"for (i = {d} - 1; i >= 0; i -= {s})\n  {y}[i] = {x}[i] - {y}[i];"
    if kind == "odd":
        return f"for (i = 1; i < {d}; i += 2)\n  {y}[i] = {y}[i - 1] * {_lit(r)} + {x}[i];"
    return f"for (i = {s}; i < {d}; i += {s})\n  {y}[i] = {y}[i - {s}] * {_lit(r)} + {x}[i];"


def induction(p: Pool) -> str:
    """Counters stepped in the loop and read as subscripts; a conditional one (packing) too."""
    r = p.rng
    d = r.choice(SIZES)
    x = p.get((d,))
    y = p.get((d,), avoid=(x,))
    t = _tag(p)
    kind = r.choice(["up", "down", "copy", "pack", "nest"])
    if kind == "nest":  # stepped in the inner loop, read across the outer one (a flat array 'L[ni * nj]')
        di, dj = r.sample(SIZES, 2)
        p.params.update((di, dj))
        f = f"L{t}"
        p.arrays[f] = (f"{di} * {dj}",)
        src = p.get((di, dj))
        return (f"{{\n  int c{t} = 0;\n  for (i = 0; i < {di}; i++)\n    for (j = 0; j < {dj}; j++) {{\n"
                f"      {f}[c{t}] = {src}[i][j] * {_lit(r)} + {f}[c{t}];\n      c{t}++;\n    }}\n}}")
    if kind == "up":
        return (f"{{\n  int c{t} = 0;\n  for (i = 0; i < {d}; i++) {{\n    {y}[c{t}] = {x}[i] + {_lit(r)};\n"
                f"    c{t}++;\n  }}\n}}")
    if kind == "down":
        return (f"{{\n  int c{t} = {d};\n  for (i = 0; i < {d}; i++) {{\n    c{t} -= 1;\n"
                f"    {y}[c{t}] = {x}[i];\n  }}\n}}")
    if kind == "copy":
        return f"for (i = 0; i < {d}; i++) {{\n  int c{t} = {d} - 1 - i;\n  {y}[c{t}] = {x}[c{t}] * {_lit(r)};\n}}"
    return (f"{{\n  int c{t} = 0;\n  for (i = 0; i < {d}; i++) {{\n    if ({x}[i] > 0.0) {{\n"
            f"      {y}[c{t}] = {x}[i];\n      c{t}++;\n    }}\n  }}\n}}")


def if_reduction(p: Pool) -> str:
    """Row reductions written with if: a max or min by comparison, a conditional sum, a count, a sum
    through a temporary, the index of the maximum."""
    r = p.rng
    di, dj = r.sample(SIZES, 2)
    a = p.get((di, dj))
    out = p.get((di,))
    ty = p.ty
    t = _tag(p)
    kind = r.choice(["max", "min", "cond", "temp", "argmax", "argmin", "argmax_last", "argmax_abs"])
    fabs = "fabsf" if ty == "float" else "fabs"
    if kind.startswith("arg") and kind != "argmax":  # value and index (passes/argreduce.py)
        e = f"{fabs}({a}[i][j])" if kind == "argmax_abs" else f"{a}[i][j]"
        op = {"argmin": "<", "argmax_last": ">=", "argmax_abs": ">"}[kind]
        start = "1.0e30" if kind == "argmin" else "-1.0e30"
        body = (f"{ty} m{t} = {start};\nint k{t} = -1;\nfor (j = 0; j < {dj}; j++)\n  if ({e} {op} m{t}) {{\n"
                f"    k{t} = j;\n    m{t} = {e};\n  }}\nm{t} = m{t} * 0.5 + k{t};")
        return f"for (i = 0; i < {di}; i++) {{\n" + textwrap.indent(f"{body}\n{out}[i] = m{t};", "  ") + "\n}"
    if kind == "max":
        body = f"{ty} m{t} = -1.0e30;\nfor (j = 0; j < {dj}; j++)\n  if ({a}[i][j] > m{t})\n    m{t} = {a}[i][j];"
    elif kind == "min":
        body = f"{ty} m{t} = 1.0e30;\nfor (j = 0; j < {dj}; j++)\n  m{t} = {a}[i][j] < m{t} ? {a}[i][j] : m{t};"
    elif kind == "cond":
        body = (f"{ty} m{t} = 0.0;\nfor (j = 0; j < {dj}; j++) {{\n  if ({a}[i][j] > {_lit(r, -0.5, 0.5)})\n"
                f"    m{t} += {a}[i][j];\n  else\n    m{t} -= {_lit(r)};\n}}")
    elif kind == "temp":
        body = f"{ty} m{t} = 0.0;\nfor (j = 0; j < {dj}; j++) {{\n  {ty} v{t} = {a}[i][j] * {a}[i][j];\n  m{t} = m{t} + v{t};\n}}"
    else:
        body = (f"{ty} m{t} = -1.0e30;\nint k{t} = -1;\nfor (j = 0; j < {dj}; j++)\n  if ({a}[i][j] > m{t}) {{\n"
                f"    m{t} = {a}[i][j];\n    k{t} = j;\n  }}\nm{t} = k{t};")
    return f"for (i = 0; i < {di}; i++) {{\n" + textwrap.indent(f"{body}\n{out}[i] = m{t};", "  ") + "\n}"


def search_break(p: Pool) -> str:
    """A loop left by ``break``: the first element over a threshold, per row or in the whole vector."""
    r = p.rng
    t = _tag(p)
    thr = _lit(r, -0.5, 0.9)
    if r.random() < 0.5:
        di, dj = r.sample(SIZES, 2)
        a = p.get((di, dj))
        out = p.get((di,))
        return (f"for (i = 0; i < {di}; i++) {{\n  {out}[i] = -1.0;\n  for (j = 0; j < {dj}; j++) {{\n"
                f"    if ({a}[i][j] > {thr}) {{\n      {out}[i] = j;\n      break;\n    }}\n  }}\n}}")
    d = r.choice(SIZES)
    x = p.get((d,))
    y = p.get((d,), avoid=(x,))
    return (f"{{\n  int f{t} = -1;\n  for (i = 0; i < {d}; i++) {{\n    {y}[i] = {x}[i] * 2.0;\n"
            f"    if ({x}[i] > {thr}) {{\n      f{t} = i;\n      break;\n    }}\n  }}\n"
            f"  if (f{t} >= 0)\n    {y}[f{t}] = -1.0;\n}}")


def halves(p: Pool) -> str:
    """Offsets through ``n / 2`` (disjoint halves: passes/hoist.py) and an element every iteration reads
    that the first one writes (passes/peel.py)."""
    r = p.rng
    d = r.choice(SIZES)
    x = p.get((d,))
    y = p.get((d,), avoid=(x,))
    kind = r.choice(["half", "half_back", "peel", "peel_one", "peel_not"])
    if kind == "half":
        return f"for (i = 0; i < {d} / 2; i++)\n  {y}[i] = {y}[i + {d} / 2] * {_lit(r)} + {x}[i];"
    if kind == "half_back":
        return f"for (i = {d} / 2; i < {d}; i++)\n  {y}[i] = {y}[i - {d} / 2] - {x}[i];"
    if kind == "peel":
        return f"for (i = 0; i < {d}; i++)\n  {y}[i] = {y}[0] * {_lit(r)} + {x}[i];"
    if kind == "peel_one":
        return f"for (i = 1; i < {d}; i++)\n  {y}[i + {r.choice([-1, 0])}] = {y}[1] * {_lit(r)} + {x}[i];"
    return f"for (i = 0; i < {d}; i++)\n  {y}[i] = {y}[{d} - 1] * {_lit(r)} + {x}[i];"  # not the first: sequential


def unrolled(p: Pool) -> str:
    """A loop unrolled by hand, then its remainder loop counting on from the exit value (upward or down);
    the exit value is read once more after it.  (``i=`` without spaces: :func:`_style` must not declare
    the counter in the first loop, which would hide the exit value from the second.)"""
    r = p.rng
    d = r.choice(SIZES)
    x = p.get((d,))
    y = p.get((d,), avoid=(x,))
    u = r.choice([2, 3, 4])
    c = _lit(r)
    if r.random() < 0.6:
        head = r.choice([f"i + {u} <= {d}", f"i < {d} - {u - 1}"])
        body = "\n".join(f"  {y}[i + {k}] = {x}[i + {k}] * {c} + {y}[i + {k}];" for k in range(u))
        return (f"for (i=0; {head}; i += {u}) {{\n{body}\n}}\nfor (; i < {d}; i++)\n"
                f"  {y}[i] = {x}[i] * {c} + {y}[i];\nif (i > 0)\n  {y}[i - 1] += 0.5;")
    body = "\n".join(f"  {y}[i - {k}] = {x}[i - {k}] - {y}[i - {k}];" for k in range(u))
    return (f"for (i={d} - 1; i >= {u - 1}; i -= {u}) {{\n{body}\n}}\nfor (; i >= 0; i--)\n"
            f"  {y}[i] = {x}[i] - {y}[i];\nif ({d} > 0)\n  {y}[i + 1] *= 2.0;")


def early_return(p: Pool) -> str:
    """A ``return`` out of a loop or a nest (the rest of the kernel does not run), or a guard's."""
    r = p.rng
    thr = _lit(r, -0.5, 0.9)
    kind = r.choice(["loop", "nest", "guard"])
    if kind == "guard":
        p.params.add("tsteps")
        return f"if (tsteps > {r.choice([1, 2, 3])})\n  return;"
    if kind == "loop":
        d = r.choice(SIZES)
        x = p.get((d,))
        y = p.get((d,), avoid=(x,))
        return f"for (i = 0; i < {d}; i++) {{\n  if ({x}[i] > {thr})\n    return;\n  {y}[i] = {x}[i] * 2.0;\n}}"
    di, dj = r.sample(SIZES, 2)
    a = p.get((di, dj))
    out = p.get((di,))
    return (f"for (i = 0; i < {di}; i++) {{\n  {out}[i] = 0.0;\n  for (j = 0; j < {dj}; j++) {{\n"
            f"    if ({a}[i][j] > {thr})\n      return;\n    {out}[i] += {a}[i][j];\n  }}\n}}")


def linear_scan(p: Pool) -> str:
    """A first-order linear recurrence over a whole vector (passes/scan.py's scan of affine maps): on an
    element, on a scalar written out, Horner's rule, a coefficient from an array; sometimes with a
    statement reading the previous element (which keeps it sequential)."""
    r = p.rng
    t = _tag(p)
    d = r.choice(SIZES)
    x = p.get((d,))
    y = p.get((d,), avoid=(x,))
    w = p.get((d,), avoid=(x, y))
    c = _lit(r, 0.2, 0.9)
    kind = r.choice(["element", "coefficient", "scalar", "horner", "offset", "reads_previous"])
    if kind == "element":
        return f"for (i = 1; i < {d}; i++)\n  {y}[i] = {c} * {y}[i - 1] + {x}[i];"
    if kind == "coefficient":
        return f"for (i = 1; i < {d}; i++)\n  {y}[i] = {y}[i - 1] * ({w}[i] * 0.5) - {x}[i];"
    if kind == "scalar":
        return (f"{{\n  {p.ty} s{t} = {x}[0];\n  for (i = 0; i < {d}; i++) {{\n    s{t} = s{t} * {c} + {x}[i];\n"
                f"    {y}[i] = s{t} * 2.0;\n  }}\n  {w}[0] = s{t};\n}}")
    if kind == "horner":
        return (f"{{\n  {p.ty} s{t} = 1.0;\n  for (i = 0; i < {d}; i++)\n    s{t} = s{t} * {c} + {x}[i];\n"
                f"  {y}[0] = s{t};\n}}")
    if kind == "offset":
        return f"for (i = 0; i + 1 < {d}; i++)\n  {y}[i + 1] = {x}[i] - {y}[i] * {c};"
    return (f"for (i = 1; i < {d}; i++) {{\n  {y}[i] = {c} * {y}[i - 1] + {x}[i];\n"
            f"  {w}[i] = {y}[i - 1] + {w}[i];\n}}")


ORDINARY = (goto_if, switch_case, pointer_walk, strided, induction, if_reduction, search_break, halves, unrolled,
            early_return, linear_scan)

PHASES = (matmul, matmul, matvec, stencil, stencil, reduce, outer, elementwise, recurrence, accumulate,
          reversed_scan, symmetric, init, two_statements, scalar_chain, flat, relax, local_array, mathy,
          solve, factor, cube, table, masked, row_program, scatter, *ORDINARY)


def _indent(text: str) -> str:
    return "\n".join("  " + line if line else line for line in text.split("\n"))


def _style(rng: random.Random, body: str) -> str:
    """The same program in another hand: loop counters declared in the loop (``int``, ``long`` or
    ``unsigned``-free ``long long``), pre-increments or ``+= 1``, float literals with a suffix."""
    if rng.random() < 0.3:
        ty = rng.choice(["int", "int", "long", "long long"])
        body = re.sub(r"for \(([ijkt]) = ", lambda m: f"for ({ty} {m.group(1)} = ", body)
    if rng.random() < 0.3:
        inc = rng.choice(["++{v}", "{v} += 1", "{v} = {v} + 1"])
        body = re.sub(r"\b([ijkt])\+\+\)", lambda m: inc.format(v=m.group(1)) + ")", body)
    if rng.random() < 0.2:
        body = re.sub(r"(?<![\w.])(0\.5|0\.25|2\.0)(?![\w.])", r"\1f", body)
    return body


def options(seed: int) -> list[str]:
    """Random back-end options for case ``seed`` (an independent stream: the program does not move)."""
    rng = random.Random(~seed)
    opts: list[str] = []
    pick = rng.random()
    if pick < 0.1:
        return ["--naive"]
    if pick < 0.14:  # the schedule search, ranked by the cost model (every candidate it keeps is verified)
        return ["--evolve", "--evolve-rounds", "2", "--evolve-measure", "model", "--evolve-time", "120"]
    if pick < 0.25:
        while True:  # a block of 32..1024 threads, which the CLI requires
            tile, coarsen = rng.choice(["32x32", "64x32", "32x64", "16x64", "128x64"]), \
                rng.choice(["2x2", "4x4", "8x4", "4x8", "2x8"])
            (tm, tn), (cm, cn) = (map(int, x.split("x")) for x in (tile, coarsen))
            if tm % cm == 0 and tn % cn == 0 and 32 <= (tm // cm) * (tn // cn) <= 1024:
                break
        opts += ["--tile", tile, "--coarsen", coarsen]
    for flag in ("--no-shared", "--no-mma", "--no-reassociate"):
        if rng.random() < 0.15:
            opts.append(flag)
    if rng.random() < 0.15:
        opts += ["--rows", str(rng.choice([1, 2, 3, 4]))]
    if rng.random() < 0.1:
        opts += ["--stream", str(rng.choice([1, 2, 5, 8]))]
    if rng.random() < 0.15:
        opts += ["--block", rng.choice(["128", "64", "32x4", "64x2", "16x16", "32x2x2"])]
    return opts


def program(seed: int, kinds: tuple[Callable[[Pool], str], ...] = PHASES) -> str:
    """One random kernel ``kernel_fuzz`` as a C translation unit (its phases drawn from ``kinds``)."""
    return case(seed, kinds=kinds)[0]


def case(seed: int, only: Callable[[Pool], str] | None = None, kinds: tuple[Callable[[Pool], str], ...] = PHASES
         ) -> tuple[str, list[tuple[str, str, tuple[str, ...]]]]:
    """:func:`program`'s text and its parameters as ``(C type, name, extents)``: ``()`` for a scalar,
    the dimensions' size names for an array, ``(count,)`` (a C expression) for a pointer.
    ``only``: one phase of that kind instead of 1-3 random ones drawn from ``kinds`` (``ORDINARY``:
    the ordinary-C constructs only)."""
    rng = random.Random(seed)
    ty = "float" if rng.random() < 0.15 else "double"
    pool = Pool(rng, ty)
    phases = [rng.choice(kinds) for _ in range(rng.choice([1, 1, 2, 2, 3]))] if only is None else [only]
    body = "\n\n".join(ph(pool) for ph in phases)
    sig: list[tuple[str, str, tuple[str, ...]]] = [("int", s, ()) for s in (*SIZES, "tsteps") if s in pool.params]
    sig += [(ty, s, ()) for s in sorted(pool.scalars)]
    sig += [(ty, a, dims) for a, dims in pool.arrays.items()]
    sig += [("int", a, dims) for a, dims in pool.ints.items()]
    sig += [(ty, a, (count,)) for a, count in pool.flats.items()]
    params = [f"{t} *{a}" if a in pool.flats else f"{t} {a}" + "".join(f"[{d}]" for d in dims) for t, a, dims in sig]
    body = _style(rng, body)
    return (f"/* fuzz case {seed} */\n#include <math.h>\n\n"
            f"void kernel_fuzz({', '.join(params)})\n{{\n  int i, j, k, t;\n\n#pragma scop\n"
            f"{_indent(body)}\n#pragma endscop\n}}\n"), sig
