"""Tests for passes/map_gpu.py: which statements stay on the host, which loops become ``par``.

The kernels are built by hand with the ir.py builders (the C front end and the
text parser are developed separately); ``tests/test_cuda.py`` reuses them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings

from passes import REGISTRY, map_gpu
from transpile import ir
from transpile.diagnostics import TranspileError
from transpile.ir import F32, F64, I32, I64, U32, U64
from transpile.ir import check as ircheck

# ---------------------------------------------------------------------------
# Builders


def v(name: str, ty: ir.Scalar = I32) -> ir.Var:
    return ir.Var(name, ty)


def c(x: int | float, ty: ir.Scalar | None = None) -> ir.Const:
    return ir.const(x, ty or (F64 if isinstance(x, float) else I32))


def at(array: str, *indices: ir.Expr, ty: ir.Scalar = F64) -> ir.Index:
    return ir.Index(array, tuple(indices), ty)


def b(op: str, lhs: ir.Expr, rhs: ir.Expr) -> ir.Expr:
    return ir.binary(op, lhs, rhs)


def loop(var: str, lo: ir.Expr, hi: ir.Expr, *body: ir.Stmt, step: int = 1, ty: ir.Scalar = I32) -> ir.For:
    return ir.For(var, ty, lo, hi, step, tuple(body))


def arr(name: str, intent: ir.Intent, *dims: ir.Expr, elem: ir.Scalar = F64) -> ir.Param:
    return ir.Param(name, ir.ArrayType(elem, tuple(dims)), intent)


def sc(name: str, ty: ir.Scalar = I32) -> ir.Param:
    return ir.Param(name, ty)


def kernel(name: str, params: list[ir.Param], *body: ir.Stmt) -> ir.Kernel:
    return ir.Kernel(name, tuple(params), tuple(body))


n, m = v("n"), v("m")
i, j, k, t = v("i"), v("j"), v("k"), v("t")


def gemm() -> ir.Kernel:
    """PolyBench gemm: the i loop has two statements, so only i is parallel."""
    ni, nj, nk = v("ni"), v("nj"), v("nk")
    alpha, beta = v("alpha", F64), v("beta", F64)
    return kernel(
        "gemm",
        [sc("ni"), sc("nj"), sc("nk"), sc("alpha", F64), sc("beta", F64),
         arr("C", "inout", ni, nj), arr("A", "in", ni, nk), arr("B", "in", nk, nj)],
        loop("i", c(0), ni,
             loop("j", c(0), nj, ir.assign(at("C", i, j), beta, "*")),
             loop("k", c(0), nk,
                  loop("j", c(0), nj,
                       ir.assign(at("C", i, j), b("*", b("*", alpha, at("A", i, k)), at("B", k, j)), "+")))))


def gemm_nest() -> ir.Kernel:
    """gemm with a private accumulator: i and j perfectly nested, both parallel."""
    alpha, beta = v("alpha", F64), v("beta", F64)
    acc = v("acc", F64)
    return kernel(
        "gemm_nest",
        [sc("n"), sc("alpha", F64), sc("beta", F64),
         arr("C", "inout", n, n), arr("A", "in", n, n), arr("B", "in", n, n)],
        loop("i", c(0), n,
             loop("j", c(0), n,
                  ir.Decl("acc", F64, c(0.0)),
                  loop("k", c(0), n, ir.assign(acc, b("*", at("A", i, k), at("B", k, j)), "+")),
                  ir.assign(at("C", i, j), b("+", b("*", alpha, acc), b("*", beta, at("C", i, j)))))))


def axpy() -> ir.Kernel:
    """A 1-D elementwise map."""
    a = v("a", F64)
    return kernel("axpy", [sc("n"), sc("a", F64), arr("x", "in", n), arr("y", "inout", n)],
                  loop("i", c(0), n, ir.assign(at("y", i), b("+", b("*", a, at("x", i)), at("y", i)))))


def jacobi_1d() -> ir.Kernel:
    """A stencil under a sequential time loop: a host loop launching two parallel nests."""
    def avg(src: str) -> ir.Expr:
        s = b("+", b("+", at(src, b("-", i, c(1))), at(src, i)), at(src, b("+", i, c(1))))
        return b("*", c(0.33333), s)
    return kernel(
        "jacobi_1d", [sc("tsteps"), sc("n"), arr("A", "inout", n), arr("B", "inout", n)],
        loop("t", c(0), v("tsteps"),
             loop("i", c(1), b("-", n, c(1)), ir.assign(at("B", i), avg("A"))),
             loop("i", c(1), b("-", n, c(1)), ir.assign(at("A", i), avg("B")))))


def triangular() -> ir.Kernel:
    """A triangular nest: i is parallel; j's bounds read i, and its body is loop-free: j joins the grid."""
    return kernel(
        "lower", [sc("n"), arr("L", "inout", n, n)],
        loop("i", c(0), n,
             loop("j", c(0), b("+", i, c(1)), ir.assign(at("L", i, j), b("/", at("L", i, j), c(2.0))))))


def transpose() -> ir.Kernel:
    """In-place transpose of the upper triangle."""
    return kernel(
        "transpose", [sc("n"), arr("A", "inout", n, n)],
        loop("i", c(0), n,
             loop("j", b("+", i, c(1)), n,
                  ir.Decl("tmp", F64, at("A", i, j)),
                  ir.assign(at("A", i, j), at("A", j, i)),
                  ir.assign(at("A", j, i), v("tmp", F64)))))


def host_scalar() -> ir.Kernel:
    """``f64 c = alpha * 2.0`` stays on the host and is passed by value."""
    alpha, cc = v("alpha", F64), v("c", F64)
    return kernel(
        "scale", [sc("n"), sc("alpha", F64), arr("x", "inout", n)],
        ir.Decl("c", F64, b("*", alpha, c(2.0))),
        ir.If(b(">", n, c(1000)), (ir.assign(cc, c(0.5), "*"),)),
        loop("i", c(0), n, ir.assign(at("x", i), cc, "*")))


def device_scalar() -> ir.Kernel:
    """A sum reduction into a top-level local, stored to an array and read by a parallel loop."""
    s, inv = v("s", F64), v("inv", F64)
    return kernel(
        "normalize", [sc("n"), arr("x", "in", n), arr("y", "out", n), arr("total", "out", c(1))],
        ir.Decl("s", F64, c(0.0)),
        loop("i", c(0), n, ir.assign(s, at("x", i), "+")),
        ir.assign(at("total", c(0)), s),
        ir.Decl("inv", F64, b("/", c(1.0), s)),  # scalar code, but reads a device scalar
        loop("i", c(0), n, ir.assign(at("y", i), b("*", at("x", i), inv))))


def shift() -> ir.Kernel:
    """``A[i] = A[i + 1]``: every write is indexed by i, yet iterations race."""
    return kernel("shift", [sc("n"), arr("A", "inout", n)],
                  loop("i", c(0), b("-", n, c(1)), ir.assign(at("A", i), at("A", b("+", i, c(1))))))


def clamp_func() -> ir.Func:
    """``clamp(x, lo, hi) = fmin(fmax(x, lo), hi)``."""
    x, lo, hi = v("x", F64), v("lo", F64), v("hi", F64)
    fmax, fmin = ir.MATH_FUNCS["fmax"], ir.MATH_FUNCS["fmin"]
    body = ir.call("fmin", (ir.call("fmax", (x, lo), *fmax), hi), *fmin)
    return ir.Func("clamp", (sc("x", F64), sc("lo", F64), sc("hi", F64)), F64, (ir.Return(body),))


def clamp_kernel() -> ir.Kernel:
    """A parallel loop calling a helper function."""
    call = ir.call("clamp", (at("x", i), c(0.0), c(1.0)), (F64, F64, F64), F64)
    return kernel("saturate", [sc("n"), arr("x", "in", n), arr("y", "out", n)],
                  loop("i", c(0), n, ir.assign(at("y", i), call)))


def cube() -> ir.Kernel:
    """A 3-deep perfect nest: z, y, x."""
    return kernel(
        "cube", [sc("n"), sc("m"), arr("A", "in", n, m, c(4)), arr("B", "out", n, m, c(4))],
        loop("i", c(0), n, loop("j", c(0), m, loop("k", c(0), c(4),
             ir.assign(at("B", i, j, k), b("*", at("A", i, j, k), c(2.0)))))))


def mixed() -> ir.Kernel:
    """Odd corners: a scalar param written on the device, downward and unsigned loops, f32, u64/i64 par loops."""
    cnt = v("count")
    u, w = v("u", U32), v("w", U64)
    return kernel(
        "mixed",
        [sc("n"), sc("count"), sc("len", U64), sc("big", I64), arr("x", "inout", n, elem=F32),
         arr("hits", "out", c(1), elem=I32), arr("z", "inout", v("len", U64)),
         arr("q", "inout", v("big", I64), elem=U32)],
        loop("i", c(0), n, ir.If(b(">", at("x", i, ty=F32), c(0.5, F32)), (ir.assign(cnt, c(1), "+"),))),
        ir.assign(at("hits", c(0), ty=I32), cnt),
        loop("i", c(0), n, ir.assign(at("x", i, ty=F32), c(2.0, F32), "*"), step=-1),
        loop("u", c(0, U32), ir.cast(n, U32), ir.assign(at("x", u, ty=F32), ir.cast(u, F32), "-"), step=-2,
             ty=U32),
        loop("w", c(0, U64), v("len", U64), ir.assign(at("z", w), ir.cast(cnt, F64), "+"), ty=U64),
        loop("p", c(0, I64), v("big", I64),
             ir.assign(at("q", v("p", I64), ty=U32), b(">>", at("q", v("p", I64), ty=U32), c(1)), "^"),
             ty=I64))


def scratch() -> ir.Kernel:
    """Kernel-local arrays (``Alloc``): one with fixed extents, one whose extent param changes first."""
    w = ir.ArrayType(F64, (c(2), m))
    return kernel(
        "scratch", [sc("n"), sc("m"), arr("x", "in", n), arr("y", "out", n)],
        ir.Alloc("tmp", ir.ArrayType(F64, (n,))),
        ir.assign(m, c(1), "+"),
        ir.Alloc("w", w),
        loop("i", c(0), n, ir.assign(at("tmp", i), b("*", at("x", i), c(2.0)))),
        loop("i", c(0), m, ir.assign(at("w", c(0), i), c(1.0)), ir.assign(at("w", c(1), i), at("w", c(0), i))),
        loop("i", c(0), n, ir.assign(at("y", i), b("+", at("tmp", b("-", b("-", n, c(1)), i)), at("w", c(1), c(0))))))


def host_loops() -> ir.Kernel:
    """Nested host loops (one downward), a host-loop local and loop variable passed to a launch,
    and a scalar param written by a launch repeated by the host loop (so it lives on the device)."""
    cnt, w, tt = v("count"), v("w"), v("t")
    return kernel(
        "steps", [sc("tsteps"), sc("n"), sc("count"), arr("A", "inout", n), arr("hits", "out", c(1), elem=I32)],
        loop("t", c(0), v("tsteps"),
             ir.Decl("w", I32, b("*", tt, c(2))),
             loop("i", c(0), n, ir.assign(at("A", i), ir.cast(b("+", tt, w), F64), "+")),
             loop("i", c(0), n, ir.If(b(">", at("A", i), c(0.0)), (ir.assign(cnt, c(1), "+"),))),
             loop("s", c(0), c(2),
                  loop("i", c(0), n, ir.assign(at("A", i), b("*", at("A", i), c(0.5)))), step=-1)),
        ir.assign(at("hits", c(0), ty=I32), cnt))


def seidel() -> ir.Kernel:
    """A time loop around a sequential in-place sweep: nothing parallel inside, so one launch."""
    return kernel(
        "seidel", [sc("tsteps"), sc("n"), arr("A", "inout", n)],
        loop("t", c(0), v("tsteps"),
             loop("i", c(1), n, ir.assign(at("A", i), b("+", at("A", b("-", i, c(1))), at("A", i))))))


ALL = [gemm, gemm_nest, axpy, jacobi_1d, triangular, transpose, host_scalar, device_scalar, shift,
       clamp_kernel, cube, mixed, scratch, host_loops, seidel]


# ---------------------------------------------------------------------------
# Helpers


def par_dims(stmt: ir.Stmt) -> list[str | None]:
    """The ``par`` marks of the perfectly nested loops at the head of ``stmt``."""
    out = []
    while isinstance(stmt, ir.For):
        out.append(stmt.par)
        stmt = stmt.body[0] if len(stmt.body) == 1 else None  # type: ignore[assignment]
    return out


def layout(k: ir.Kernel) -> list[object]:
    """Top level as ``'host:Decl'`` etc., and ``('launch', [par dims of its first stmt], n stmts)``."""
    out: list[object] = []
    for s in k.body:
        if isinstance(s, ir.Launch):
            out.append(("launch", par_dims(s.body[0]), len(s.body)))
        else:
            out.append(f"host:{type(s).__name__}")
    return out


def launches(k: ir.Kernel) -> list[ir.Launch]:
    return [s for s in k.body if isinstance(s, ir.Launch)]


# ---------------------------------------------------------------------------
# Tests


def test_registered() -> None:
    assert REGISTRY["map-gpu"] is map_gpu


def test_gemm_outer_loop_only() -> None:
    out = map_gpu.run(gemm())
    assert layout(out) == [("launch", ["x"], 1)]
    # Everything inside the par loop is unchanged.
    nest = launches(out)[0].body[0]
    assert isinstance(nest, ir.For)
    assert dataclasses.replace(nest, par=None) == gemm().body[0]


def test_perfect_nest_gets_y_then_x() -> None:
    out = map_gpu.run(gemm_nest())
    assert layout(out) == [("launch", ["y", "x"], 1)]
    i_loop = launches(out)[0].body[0]
    assert isinstance(i_loop, ir.For) and isinstance(i_loop.body[0], ir.For)
    k_loop = i_loop.body[0].body[1]
    assert isinstance(k_loop, ir.For) and k_loop.par is None


def test_three_deep_nest() -> None:
    assert layout(map_gpu.run(cube())) == [("launch", ["z", "y", "x"], 1)]


def test_elementwise_map() -> None:
    assert layout(map_gpu.run(axpy())) == [("launch", ["x"], 1)]


def test_time_loop_becomes_host_loop() -> None:
    out = map_gpu.run(jacobi_1d())
    assert layout(out) == ["host:For"]
    t_loop = out.body[0]
    assert isinstance(t_loop, ir.For) and t_loop.par is None
    assert [par_dims(s.body[0]) for s in t_loop.body if isinstance(s, ir.Launch)] == [["x"], ["x"]]
    assert len(t_loop.body) == 2


def test_nested_host_loops() -> None:
    out = map_gpu.run(host_loops())
    assert layout(out) == ["host:For", ("launch", [], 1)]
    t_loop = out.body[0]
    assert isinstance(t_loop, ir.For)
    kinds = [("launch", par_dims(s.body[0])) if isinstance(s, ir.Launch) else type(s).__name__
             for s in t_loop.body]
    assert kinds == ["Decl", ("launch", ["x"]), ("launch", [None]), "For"]
    s_loop = t_loop.body[3]
    assert isinstance(s_loop, ir.For) and s_loop.step == -1
    assert [par_dims(x.body[0]) for x in s_loop.body] == [["x"]]  # type: ignore[attr-defined]


def test_time_loop_without_parallel_work_stays_one_launch() -> None:
    assert layout(map_gpu.run(seidel())) == [("launch", [None, None], 1)]


def test_host_loop_reader_of_device_scalar_moves_to_device() -> None:
    s, x_ = v("s", F64), v("x", F64)
    k_ = kernel("k", [sc("n"), sc("T"), arr("A", "inout", n), arr("B", "out", n)],
                ir.Decl("s", F64, c(0.0)),
                ir.Decl("x", F64, c(0.0)),
                loop("t", c(0), v("T"),
                     loop("i", c(0), n, ir.assign(at("A", i), c(1.0), "+")),
                     ir.assign(s, at("A", c(0))),
                     ir.assign(x_, b("*", s, c(2.0))),
                     loop("i", c(0), n, ir.assign(at("B", i), x_))))
    out = map_gpu.run(k_)
    ircheck.check(ir.Module((), (out,)))
    t_loop = out.body[-1]
    assert isinstance(t_loop, ir.For)
    assert [len(x.body) for x in t_loop.body if isinstance(x, ir.Launch)] == [1, 2, 1]
    assert all(isinstance(x, ir.Launch) for x in t_loop.body)


def test_host_loop_bounds_must_not_read_device_scalars() -> None:
    m_ = v("m")
    k_ = kernel("k", [sc("n"), arr("A", "inout", n), arr("idx", "in", c(1), elem=I32)],
                ir.Decl("m", I32, c(0)),
                ir.assign(m_, at("idx", c(0), ty=I32)),
                loop("t", c(0), m_, loop("i", c(0), n, ir.assign(at("A", i), c(1.0), "+"))))
    out = map_gpu.run(k_)
    assert layout(out) == [("launch", [], 3)]


def test_gemm_after_distribution_and_interchange() -> None:
    from passes import distribute, interchange

    out = map_gpu.run(interchange.run(distribute.run(gemm())))
    assert layout(out) == [("launch", ["y", "x"], 1), ("launch", ["y", "x", None], 1)]
    k_loop = launches(out)[1].body[0].body[0].body[0]  # type: ignore[attr-defined]
    assert isinstance(k_loop, ir.For) and k_loop.var == "k" and k_loop.par is None


def test_triangular_inner_loop_joins_the_grid() -> None:
    # j's bounds read i (affine), its body has no loop: passes.map_gpu.triangular.
    assert layout(map_gpu.run(triangular())) == [("launch", ["y", "x"], 1)]


def test_transpose_both_loops_parallel() -> None:
    # Iteration (i, j) swaps A[i][j] and A[j][i] for j > i: different iterations never touch the
    # same pair, so i and j are parallel; j's bounds read i: a triangle of threads.
    assert layout(map_gpu.run(transpose())) == [("launch", ["y", "x"], 1)]


def test_shift_not_parallel() -> None:
    out = map_gpu.run(shift())
    assert layout(out) == [("launch", [None], 1)]


def test_host_scalar_stays_on_host() -> None:
    out = map_gpu.run(host_scalar())
    assert layout(out) == ["host:Decl", "host:If", ("launch", ["x"], 1)]
    assert out.body[:2] == host_scalar().body[:2]


def test_device_scalar_shared_between_launches() -> None:
    k = device_scalar()
    out = map_gpu.run(k)
    s_decl, s_loop, s_store, inv_decl, y_loop = k.body
    assert isinstance(inv_decl, ir.Decl) and inv_decl.init is not None and isinstance(y_loop, ir.For)
    assert out.body == (
        # inv is read by two launches: declared on the host (the emitter keeps it in
        # device memory) and initialised on the device.  s is local to the first launch.
        ir.Decl("inv", F64),
        ir.Launch((s_decl, s_loop, s_store, ir.Assign(v("inv", F64), inv_decl.init))),
        ir.Launch((dataclasses.replace(y_loop, par="x"),)),
    )


def test_single_launch_local_moves_in() -> None:
    """A reduction used by one launch only stays a local of that launch."""
    s = v("s", F64)
    k = kernel("sum", [sc("n"), arr("x", "in", n), arr("out", "out", c(1))],
               ir.Decl("s", F64, c(0.0)),
               loop("i", c(0), n, ir.assign(s, at("x", i), "+")),
               ir.assign(at("out", c(0)), s))
    out = map_gpu.run(k)
    assert out.body == (ir.Launch(k.body),)


def test_fixpoint_moves_readers_of_device_scalars() -> None:
    # count is a scalar param written on the device; ``m2 = count * 2`` must follow it.
    cnt = v("count")
    k = kernel("chain", [sc("n"), sc("count"), arr("x", "in", n), arr("o", "out", c(1), elem=I32)],
               loop("i", c(0), n, ir.assign(cnt, c(1), "+")),
               ir.Decl("m2", I32, b("*", cnt, c(2))),
               ir.Decl("m3", I32, b("+", v("m2"), c(1))),
               ir.assign(at("o", c(0), ty=I32), v("m3")))
    out = map_gpu.run(k)
    assert out.body == (ir.Launch(k.body),)


def test_parallel_nests_are_not_merged() -> None:
    k = kernel("two", [sc("n"), arr("x", "inout", n)],
               loop("i", c(0), n, ir.assign(at("x", i), c(1.0), "+")),
               loop("i", c(0), n, ir.assign(at("x", i), c(2.0), "*")))
    assert layout(map_gpu.run(k)) == [("launch", ["x"], 1), ("launch", ["x"], 1)]


def test_single_thread_statements_merge() -> None:
    k = kernel("seq", [sc("n"), arr("x", "inout", n)],
               ir.assign(at("x", c(0)), c(1.0)),
               loop("i", c(1), n, ir.assign(at("x", i), at("x", b("-", i, c(1)))), step=1),
               ir.assign(at("x", c(0)), c(0.0)))
    assert layout(map_gpu.run(k)) == [("launch", [], 3)]


def _outer_par(nest: ir.For) -> str | None:
    """The ``par`` of ``nest``'s outer loop after mapping it inside a small kernel."""
    d = ir.Decl("d", I32, c(0))
    k = kernel("probe", [sc("n"), arr("x", "inout", n), arr("y", "inout", n, n), arr("z", "in", n)],
               d, nest, ir.assign(v("d"), ir.cast(at("x", c(0)), I32)))  # d: a device scalar
    for s in map_gpu.run(k).body:
        for t in s.body if isinstance(s, ir.Launch) else ():
            if isinstance(t, ir.For) and t.var == "i":
                return t.par
    raise AssertionError("nest not found in a launch")


@pytest.mark.parametrize(
    "why, nest",
    [
        ("step 2", loop("i", c(0), n, ir.assign(at("x", i), c(0.0)), step=2)),
        ("bound reads an array", loop("i", c(0), ir.cast(at("x", c(0)), I32), ir.assign(at("x", i), c(0.0)))),
        ("bound reads a device scalar", loop("i", c(0), v("d"), ir.assign(at("x", i), c(0.0)))),
        ("writes an outer scalar", loop("i", c(0), n, ir.assign(v("d"), i))),
        ("written array read elsewhere", loop("i", c(0), n, ir.assign(at("x", i), at("x", c(0))))),
        ("reads the next element", loop("i", c(0), b("-", n, c(1)), ir.assign(at("x", i), at("x", b("+", i, c(1)))))),
    ],
)
def test_not_parallel(why: str, nest: ir.For) -> None:
    assert _outer_par(nest) is None, why


@pytest.mark.parametrize(
    "why, nest",
    [
        # A 2-D array sliced along dimension 1 by i; a private Decl; reads of other arrays anywhere.
        ("slice and private scalar", loop("i", c(1), n,
                                          ir.Decl("tmp", F64, at("z", c(0))),
                                          ir.assign(at("y", c(0), i), b("+", at("y", c(1), i), v("tmp", F64))))),
        # y[i][0] = y[0][i]: the only element both written and read by an iteration is
        # y[0][0], by iteration 0 alone -- exact analysis proves what slicing rules cannot.
        ("meets only in one iteration", loop("i", c(0), n, ir.assign(at("y", i, c(0)), at("y", c(0), i)))),
    ],
)
def test_parallel(why: str, nest: ir.For) -> None:
    assert _outer_par(nest) == "x", why


def test_helper_func_call_is_parallel() -> None:
    assert layout(map_gpu.run(clamp_kernel())) == [("launch", ["x"], 1)]


def test_allocs_stay_on_the_host() -> None:
    out = map_gpu.run(scratch())
    assert layout(out) == ["host:Alloc", "host:Assign", "host:Alloc", ("launch", ["x"], 1),
                           ("launch", ["x"], 1), ("launch", ["x"], 1)]


def test_alloc_extent_computed_on_device_is_rejected() -> None:
    k = kernel("bad", [sc("n"), sc("m"), arr("x", "in", n)],
               loop("i", c(0), n, ir.assign(m, ir.cast(at("x", i), I32))),
               ir.Alloc("tmp", ir.ArrayType(F64, (m,))),
               ir.assign(at("tmp", c(0)), c(1.0)))
    ircheck.check(ir.Module((), (k,)))
    with pytest.raises(TranspileError, match="local array 'tmp'"):
        map_gpu.run(k)


def test_mapped_ir_is_valid() -> None:
    for make in ALL:
        ircheck.check(ir.Module((clamp_func(),), (make(),)))
        ircheck.check(ir.Module((clamp_func(),), (map_gpu.run(make()),)))


def test_mixed_layout() -> None:
    out = map_gpu.run(mixed())
    # count is written on the device: the loop and the store run on one thread.
    assert layout(out) == [("launch", [None], 4), ("launch", ["x"], 1), ("launch", ["x"], 1)]


@pytest.mark.parametrize("make", ALL, ids=lambda f: f.__name__)
def test_idempotent(make) -> None:  # type: ignore[no-untyped-def]
    once = map_gpu.run(make())
    assert map_gpu.run(once) is once


def test_host_only_kernel_is_identity() -> None:
    k = kernel("noop", [sc("n")], ir.Decl("x", I32, b("+", n, c(1))))
    assert map_gpu.run(k) is k


def test_par_loops_keep_launch_contract() -> None:
    """docs/ir.md: par loops have step 1 and host-computable bounds; dims are x, x y or x y z."""
    def host_level(body: tuple[ir.Stmt, ...]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for s in body:
            if isinstance(s, ir.For) and any(isinstance(x, ir.Launch) for x in ir.walk(s)):
                assert s.par is None
                out.extend(host_level(s.body))  # a host loop
            else:
                out.append(s)
        return out

    for make in ALL:
        out = map_gpu.run(make())
        for s in host_level(out.body):
            if not isinstance(s, ir.Launch):
                assert not any(isinstance(x, (ir.Index, ir.For)) for x in ir.walk(s)), make.__name__
                continue
            dims = [d for d in par_dims(s.body[0]) if d is not None]
            assert dims == ["z", "y", "x"][3 - len(dims):], make.__name__
            if dims:
                assert len(s.body) == 1


# ---------------------------------------------------------------------------
# Properties over random kernels (tests/strategies.py) run by the reference interpreter


strategies = pytest.importorskip("tests.strategies")


def _eval(e: ir.Expr, env: dict[str, int]) -> int:
    """Value of an extent expression over the size parameters."""
    if isinstance(e, ir.Const):
        return int(e.value)
    if isinstance(e, ir.Var):
        return env[e.name]
    assert isinstance(e, ir.Binary) and e.op in "+-*", f"unexpected extent {e!r}"
    a, z = _eval(e.lhs, env), _eval(e.rhs, env)
    return a + z if e.op == "+" else a - z if e.op == "-" else a * z


def random_args(k: ir.Kernel, seed: int = 0, size: int = 3) -> dict[str, object]:
    """Arguments for ``k``: sizes ``size``, other scalars and array elements random but small."""
    import numpy as np

    from transpile.ir.interp import DTYPES

    rng = np.random.default_rng(seed)
    env = strategies.size_args(k, size)
    for p in k.params:  # hand-written kernels: every scalar an extent reads is a size
        if isinstance(p.ty, ir.ArrayType):
            env |= {x.name: size for d in p.ty.dims for x in ir.walk(d) if isinstance(x, ir.Var)}
    args: dict[str, object] = dict(env)

    def values(t: ir.Scalar, shape: tuple[int, ...]) -> np.ndarray:
        if t.is_float:
            return rng.uniform(-2.0, 2.0, shape).astype(DTYPES[t.name])
        return rng.integers(-5 if t.is_signed else 0, 10, shape).astype(DTYPES[t.name])

    for p in k.params:
        if p.name in args:
            continue
        if isinstance(p.ty, ir.Scalar):
            args[p.name] = values(p.ty, ()).item()
        else:
            args[p.name] = values(p.ty.elem, tuple(_eval(d, env) for d in p.ty.dims))
    return args


class _ReversePar(ir.Transformer):
    """Runs every ``par`` loop backwards (sequentially): a parallel loop must not care."""

    def visit_For(self, s: ir.For) -> ir.For:
        s = self.generic_visit(s)
        return dataclasses.replace(s, step=-1, par=None) if s.par is not None else s


def _same(a: dict, z: dict) -> None:  # type: ignore[type-arg]
    import numpy as np

    assert a.keys() == z.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], z[name], err_msg=name)


def assert_preserves_semantics(module: ir.Module, run: Callable[[ir.Kernel], ir.Kernel]) -> ir.Module:
    """Apply a kernel pass to ``module``: valid IR, same interpreter results; returns the new module."""
    from transpile.ir import interp

    out = ir.Module(module.funcs, tuple(run(k) for k in module.kernels))
    ircheck.check(out)
    for k in module.kernels:
        args = random_args(k)
        try:
            expected = interp.run(module, k.name, args)
        except interp.InterpError:
            continue  # a fault in the random program itself
        _same(expected, interp.run(out, k.name, args))
    return out


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.modules())
def test_mapping_is_valid_and_order_independent(module: ir.Module) -> None:
    from transpile.ir import interp

    mapped = ir.Module(module.funcs, tuple(map_gpu.run(k) for k in module.kernels))
    ircheck.check(mapped)
    reversed_ = ir.Module(module.funcs, tuple(_ReversePar().transform(k) for k in mapped.kernels))
    for k, mk in zip(module.kernels, mapped.kernels):
        assert map_gpu.run(mk) is mk
        args = random_args(k)
        try:
            expected = interp.run(module, k.name, args)
        except interp.InterpError:
            continue  # a fault in the random program itself
        _same(expected, interp.run(mapped, k.name, args))
        _same(expected, interp.run(reversed_, k.name, args))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.modules())
def test_pipeline_preserves_semantics_with_par_reversed(module: ir.Module) -> None:
    """The default pipeline (distribute, interchange, map-gpu), also with every par loop run backwards."""
    from transpile import pipeline
    from transpile.ir import interp

    lowered = pipeline.lower(module)
    reversed_ = ir.Module(lowered.funcs, tuple(_ReversePar().transform(k) for k in lowered.kernels))
    for k in module.kernels:
        args = random_args(k)
        try:
            expected = interp.run(module, k.name, args)
        except interp.InterpError:
            continue
        _same(expected, interp.run(lowered, k.name, args))
        _same(expected, interp.run(reversed_, k.name, args))


@pytest.mark.parametrize("make", ALL, ids=lambda f: f.__name__)
def test_hand_written_kernels_keep_semantics(make) -> None:  # type: ignore[no-untyped-def]
    from transpile import pipeline
    from transpile.ir import interp

    module = ir.Module((clamp_func(),), (make(),))
    lowered = pipeline.lower(module)
    reversed_ = ir.Module(lowered.funcs, tuple(_ReversePar().transform(k) for k in lowered.kernels))
    for size in (0, 1, 3, 5):
        args = random_args(module.kernels[0], seed=size, size=size)
        try:
            expected = interp.run(module, make().name, args)
        except interp.InterpError:
            continue  # a fault in the kernel itself at this size
        _same(expected, interp.run(lowered, make().name, args))
        _same(expected, interp.run(reversed_, make().name, args))


def test_a_one_iteration_loop_writing_an_outer_scalar_stays_sequential() -> None:
    # Found by tests/test_costmodel.py's random kernels: isl sees no carried dependence in a loop
    # of one iteration, but a launch of threads cannot write the scalar back (the emitter refused).
    from transpile import cuda, pipeline
    from transpile.ir import text

    src = """kernel k(i32 n, f64 a, inout f64 A[n]) {
  for i in 0..1 {
    for j in 0..1 {
      a = a + 1.0;
    }
  }
  for i in 0..n {
    A[i] = a;
  }
}
"""
    lowered = pipeline.lower(text.parse(src))
    loops = [x for x in ir.walk(lowered) if isinstance(x, ir.For)]
    assert [lp.par for lp in loops if lp.var in ("i", "j") and lp.hi == ir.Const(1, I32)] == [None, None]
    assert any(lp.par == "x" for lp in loops)  # the second nest still runs in parallel
    assert "__global__" in cuda.emit(lowered, source="k.ir")


def test_a_sweep_of_maps_and_row_accumulations_is_launched_as_its_reduction() -> None:
    # Found by tests/fuzz_cuda.py: A[i][j] = ..; D[i] += A[i][j] * E[j] (fused there from two nests).
    # reduce-gpu marks i as a sweep although i carries nothing; map-gpu used to mark it par as
    # well, and the IR check refused a loop both 'par' and 'reduce' (exit 1 on valid C).
    from transpile import cuda, pipeline
    from transpile.ir import text

    src = """kernel k(i32 n, i32 m, inout f64 A[n][m], in f64 B[n], in f64 E[m], inout f64 D[n]) {
  for i in 0..n {
    for j in 0..m {
      A[i][j] = A[i][j] + B[i];
      D[i] += A[i][j] * E[j];
    }
  }
}
"""
    lowered = pipeline.lower(text.parse(src))
    ircheck.check(lowered)
    loops = [x for x in ir.walk(lowered) if isinstance(x, ir.For)]
    assert [(lp.var, lp.par, lp.reduce) for lp in loops] == [("i", None, ("+",)), ("j", None, ())]
    assert "_fold" in cuda.emit(lowered, source="k.ir")  # the sweep emitter's second launch


def test_trap_is_host_code() -> None:
    """A top-level ``if (c) trap`` stays on the host before the launch; one reading a scalar the GPU
    computes has no place (host code only) and is a located error."""
    from transpile.ir import text

    src = ("kernel k(i32 n, i32 s, inout f64 x[n]) {\n  if (0 < n && s <= 0) {\n    trap \"bad step\";\n  }\n"
           "  for i in 0..n {\n    x[i] = x[i] * 2.0;\n  }\n}\n")
    k = map_gpu.run(text.parse(src).kernels[0])
    ircheck.check(ir.Module((), (k,)))
    assert isinstance(k.body[0], ir.If) and isinstance(k.body[0].then[0], ir.Trap)
    assert isinstance(k.body[1], ir.Launch) and k.body[1].body[0].par == "x"
    device = ("kernel k(i32 n, inout f64 x[n]) {\n  i32 m = 0;\n  m = i32(x[0]);\n  if (m < 0) {\n"
              "    trap \"bad\";\n  }\n}\n")
    with pytest.raises(TranspileError) as e:
        map_gpu.run(text.parse(device, "d.ir").kernels[0])
    assert str(e.value).startswith("d.ir:5:5: error: a run-time error check reading 'm'"), str(e.value)
