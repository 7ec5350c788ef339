"""Dependence analysis: classic cases with known answers (exact for affine subscripts)."""

from __future__ import annotations

from passes import deps
from transpile import ir

n = ir.Var("n", ir.I32)
i, j = ir.Var("i", ir.I32), ir.Var("j", ir.I32)
zero, one, two = ir.Const(0, ir.I32), ir.Const(1, ir.I32), ir.Const(2, ir.I32)
F1 = ir.Const(1.0, ir.F64)


def add(a: ir.Expr, b: ir.Expr | int) -> ir.Expr:
    return ir.binary("+", a, b if not isinstance(b, int) else ir.Const(b, ir.I32))


def mul(a: ir.Expr, k: int) -> ir.Expr:
    return ir.binary("*", ir.Const(k, ir.I32), a)


def A(*ix: ir.Expr) -> ir.Index:
    return ir.Index("A", ix, ir.F64)


def B(*ix: ir.Expr) -> ir.Index:
    return ir.Index("B", ix, ir.F64)


def loop(var: str, *body: ir.Stmt, lo: ir.Expr = zero, hi: ir.Expr = n, step: int = 1) -> ir.For:
    return ir.For(var, ir.I32, lo, hi, step, body)


def kernel(*body: ir.Stmt, rank: int = 1, extra: tuple[ir.Param, ...] = ()) -> ir.Kernel:
    big = mul(add(n, 2), 2)
    dims = (big,) * rank
    ps = (ir.Param("n", ir.I32), ir.Param("A", ir.ArrayType(ir.F64, dims), "inout"),
          ir.Param("B", ir.ArrayType(ir.F64, dims), "inout")) + extra
    return ir.Kernel("k", ps, body)


def edges(k: ir.Kernel) -> set[tuple[str, str, int, tuple[str, ...], tuple[int | None, ...]]]:
    g = deps.analyze(k)
    return {(d["name"], d["kind"], d["level"], d["direction"], d["distance"]) for _, _, d in g.edges(data=True)}


def test_flow_distance_one() -> None:
    k = kernel(loop("i", ir.assign(A(add(i, 1)), A(i)), lo=zero))
    assert edges(k) == {("A", "flow", 1, ("<",), (1,))}
    assert deps.parallel_loops(k) == set()


def test_anti_distance_one() -> None:
    k = kernel(loop("i", ir.assign(A(i), A(add(i, 1)))))
    assert edges(k) == {("A", "anti", 1, ("<",), (1,))}


def test_independent_copy_is_parallel() -> None:
    k = kernel(loop("i", ir.assign(B(i), A(add(i, 1)))))
    assert edges(k) == set()
    assert deps.parallel_loops(k) == {"S0"}


def test_even_odd_never_overlap() -> None:
    # A[2i] = A[2i+1]: the GCD of the subscripts rules the dependence out.
    k = kernel(loop("i", ir.assign(A(mul(i, 2)), A(add(mul(i, 2), 1)))))
    assert edges(k) == set()


def test_strided_loop() -> None:
    # i = 0, 2, 4, ...: writes even elements, reads odd ones.
    k = kernel(loop("i", ir.assign(A(i), A(add(i, 1))), step=2))
    assert edges(k) == set()
    k = kernel(loop("i", ir.assign(A(i), A(add(i, 2))), step=2))
    assert edges(k) == {("A", "anti", 1, ("<",), (2,))}


def test_downward_loop_distance_is_in_execution_order() -> None:
    # for i = n-1 down to 0: A[i] = A[i+1]  reads what the previous iteration wrote.
    k = kernel(loop("i", ir.assign(A(i), A(add(i, 1))), step=-1))
    assert edges(k) == {("A", "flow", 1, ("<",), (1,))}


def test_coupled_subscripts_transpose() -> None:
    # A[i][j] = A[j][i] over the full square: carried by i (and the pairs meet).
    k = kernel(loop("i", loop("j", ir.assign(A(i, j), A(j, i)))), rank=2)
    levels = {(kind, lv) for _, kind, lv, _, _ in edges(k)}
    assert ("flow", 1) in levels and ("anti", 1) in levels
    assert deps.parallel_loops(k) == {"S1"}  # j carries nothing: A[i][*] vs A[*][i] meet only at i's turn


def test_triangular_bounds() -> None:
    # for i: for j < i: A[i] += A[j]  -- flow carried by i only.
    k = kernel(loop("i", loop("j", ir.assign(A(i), A(j), "+"), hi=i)))
    got = edges(k)
    assert ("A", "flow", 1, ("<", "<"), (None, None)) in got
    assert not [e for e in got if e[1] == "anti" and e[2] == 1]


def test_gemm_reduction_loop_carries() -> None:
    k_ = ir.Var("k", ir.I32)
    body = loop("i", loop("j", loop("k", ir.assign(A(i, j), ir.binary("*", B(i, k_), B(k_, j)), "+"))))
    k = kernel(body, rank=2)
    assert deps.parallel_loops(k) == {"S0", "S1"}
    assert deps.carried_loops(deps.analyze(k)) == {"S2"}


def test_private_scalar_declared_in_loop() -> None:
    t = ir.Var("t", ir.F64)
    k = kernel(loop("i", ir.Decl("t", ir.F64, A(i)), ir.assign(B(i), ir.binary("*", t, t))))
    assert deps.parallel_loops(k) == {"S0"}
    assert ("t", "flow", 0, ("=",), (0,)) in edges(k)


def test_shared_scalar_declared_outside_carries() -> None:
    t = ir.Var("t", ir.F64)
    k = kernel(ir.Decl("t", ir.F64, F1), loop("i", ir.assign(t, A(i)), ir.assign(B(i), t)))
    assert deps.parallel_loops(k) == set()


def test_non_affine_subscript_is_conservative() -> None:
    idx = ir.Param("idx", ir.ArrayType(ir.I32, (n,)), "in")
    at = ir.Index("idx", (i,), ir.I32)
    k = kernel(loop("i", ir.assign(A(at), F1)), extra=(idx,))
    assert deps.parallel_loops(k) == set()  # two iterations may write the same element
    assert ("A", "output", 1, ("<",), (None,)) in edges(k)


def test_format_graph_is_deterministic() -> None:
    k = kernel(loop("i", ir.assign(A(i), A(add(i, 1)))))
    text = deps.format_graph(deps.analyze(k))
    assert text == "S1 -> S1  anti   A        carried by loop S0 (level 1)  dir (<) dist (1)"


def test_division_parameters_are_related_to_their_operand() -> None:
    """``h = n / 2`` (hoisted or written) is no free parameter: an in-place reversal over ``i < h``
    never meets itself (parallel); over ``i < (n + 2) / 2`` two swaps meet (even ``n``)."""
    from transpile.frontend.c import parse_source

    def loops_parallel(src: str) -> bool:
        k = parse_source(src, "k.c").kernels[0]
        from passes import hoist
        k = hoist.run(k)
        loop = next(s for s in k.body if isinstance(s, ir.For))
        return deps.loop_ids(k)[id(loop)] in deps.parallel_loops(k)

    swap = "{ float t = a[i]; a[i] = a[n - 1 - i]; a[n - 1 - i] = t; }"
    assert loops_parallel(f"void k(int n, float a[n]) {{ for (int i = 0; i < n / 2; i++) {swap} }}")
    assert loops_parallel(f"void k(int n, float a[n]) {{ int h = n / 2; for (int i = 0; i < h; i++) {swap} }}")
    assert not loops_parallel(f"void k(int n, float a[n]) {{ for (int i = 0; i < (n + 2) / 2; i++) {swap} }}")
    # one more step for odd n only swaps the middle with itself: still parallel
    assert loops_parallel(f"void k(int n, float a[n]) {{ for (int i = 0; i < (n + 1) / 2; i++) {swap} }}")
    facts = deps.parameter_facts(hoist_kernel("void k(int n, float a[n]) { int h = (n - 1) / 3; for (int i = 0; i < h; i++) a[i] = 0; }"),
                                 frozenset({"n", "h"}))
    assert len(facts) == 1 and "3 * p_h" in facts[0]


def hoist_kernel(src: str) -> ir.Kernel:
    from transpile.frontend.c import parse_source

    return parse_source(src, "k.c").kernels[0]
