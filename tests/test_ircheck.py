"""IR invariant checker: each invariant has a violating case that is reported at its node."""

from __future__ import annotations

import dataclasses

import pytest

from transpile import ir
from transpile.diagnostics import Loc, TranspileError
from transpile.ir import check as ircheck

L = Loc("k.ir", 3, 5)
n = ir.Var("n", ir.I32)
i = ir.Var("i", ir.I32)
zero = ir.Const(0, ir.I32)


def arr(name: str, intent: ir.Intent = "inout", elem: ir.Scalar = ir.F64) -> ir.Param:
    return ir.Param(name, ir.ArrayType(elem, (n,)), intent)


def kernel(*body: ir.Stmt, params: tuple[ir.Param, ...] | None = None) -> ir.Module:
    ps = params if params is not None else (ir.Param("n", ir.I32), arr("A"))
    return ir.Module((), (ir.Kernel("k", ps, tuple(body)),))


def loop(*body: ir.Stmt, var: str = "i", par: str | None = None, step: int = 1) -> ir.For:
    return ir.For(var, ir.I32, zero, n, step, tuple(body), par)


def a_at(ix: ir.Expr = i) -> ir.Index:
    return ir.Index("A", (ix,), ir.F64)


GOOD = kernel(loop(ir.assign(a_at(), ir.Const(1.0, ir.F64), "+")))


def test_valid_kernel_passes() -> None:
    ircheck.check(GOOD)
    mapped = kernel(ir.Launch((loop(ir.assign(a_at(), ir.Const(1.0, ir.F64)), par="x"),)))
    ircheck.check(mapped)


BAD_CASES = {
    "undeclared": (kernel(loop(ir.assign(a_at(), ir.Var("x", ir.F64, loc=L)))), "'x' is not a visible scalar"),
    "wrong var type": (kernel(loop(ir.assign(a_at(), ir.Cast(ir.Var("n", ir.F64, loc=L), ir.F64)))),
                       "'n' has type i32"),
    "rank": (kernel(loop(ir.Assign(ir.Index("A", (i, i), ir.F64, loc=L), ir.Const(1.0, ir.F64)))),
             "has 1 dimension(s), indexed with 2"),
    "float index": (kernel(loop(ir.Assign(a_at(ir.Const(1.0, ir.F64, loc=L)), ir.Const(1.0, ir.F64)))),
                    "array index must be an integer"),
    "assign type": (kernel(loop(ir.Assign(a_at(), ir.Const(1, ir.I32, loc=L), loc=L))), "assigned value has type i32"),
    "intent": (kernel(loop(ir.assign(a_at(), ir.Const(1.0, ir.F64))),
                      params=(ir.Param("n", ir.I32), dataclasses.replace(arr("A", "in"), loc=L))),
               "written but has intent 'in'"),
    "read out": (kernel(loop(ir.assign(a_at(), ir.Const(1.0, ir.F64), "+")),
                        params=(ir.Param("n", ir.I32), dataclasses.replace(arr("A", "out"), loc=L))),
                 "read but has intent 'out'"),
    "loop var assigned": (kernel(loop(ir.Assign(ir.Var("i", ir.I32), zero, loc=L))), "loop variable 'i'"),
    "bound written": (kernel(ir.Decl("m", ir.I32, n),
                             ir.For("i", ir.I32, zero, ir.Var("m", ir.I32, loc=L), 1,
                                    (ir.Assign(ir.Var("m", ir.I32), zero),))),
                      "loop bound reads 'm'"),
    "zero step": (kernel(dataclasses.replace(loop(), step=0, loc=L)), "nonzero"),
    "duplicate decl": (kernel(ir.Decl("t", ir.F64), ir.Decl("t", ir.F64, loc=L)), "declared twice"),
    "binary mismatch": (kernel(ir.Decl("t", ir.F64, ir.Binary("+", ir.Const(1.0, ir.F64), ir.Const(1, ir.I32), ir.F64, loc=L))),
                        "right operand of '+'"),
    "float modulo": (kernel(ir.Decl("t", ir.F64, ir.Binary("%", ir.Const(1.0, ir.F64), ir.Const(1.0, ir.F64), ir.F64, loc=L))),
                     "'%' needs integer operands"),
    "narrow literal": (kernel(ir.Decl("t", ir.I8, ir.Const(1, ir.I8, loc=L))), "literal of type i8"),
    "literal range": (kernel(ir.Decl("t", ir.I32, ir.Const(2**31, ir.I32, loc=L))), "out of range"),
    "unknown call": (kernel(ir.Decl("t", ir.F64, ir.Call("frob", (), ir.F64, loc=L))), "unknown function 'frob'"),
    "call arg type": (kernel(ir.Decl("t", ir.F64, ir.Call("sqrt", (ir.Const(1.0, ir.F32, loc=L),), ir.F64))),
                      "argument of 'sqrt'"),
    "return in kernel": (kernel(ir.Return(None, loc=L)), "'return' outside"),
    "par outside launch": (kernel(dataclasses.replace(loop(ir.assign(a_at(), ir.Const(1.0, ir.F64))), par="x", loc=L)),
                           "'par' loop"),
    "nested launch": (kernel(ir.Launch((ir.If(ir.Const(1, ir.I32), (ir.Launch((), loc=L),)),))), "top level"),
    "par order": (kernel(ir.Launch((ir.For("j", ir.I32, zero, n, 1, (loop(ir.assign(a_at(), ir.Const(1.0, ir.F64)), par="y"),), "x"),), loc=L)),
                  "par dimensions"),
    "shadowing loop": (kernel(loop(dataclasses.replace(loop(), loc=L))), "shadows"),
    "trap in loop": (kernel(loop(ir.Trap("stop", loc=L))), "'trap' is only allowed in host code"),
    "trap in launch": (kernel(ir.Launch((ir.If(n, (ir.Trap("stop", loc=L),)),))), "'trap' is only allowed"),
    "trap in func": (ir.Module((ir.Func("f", (), None, (ir.Trap("stop", loc=L),)),), ()), "'trap' outside a kernel"),
}


def test_trap_in_host_code_passes() -> None:
    """A trap at the top level or in a top-level ``if`` (an else branch, a nested ``if``) is host code."""
    stop = ir.Trap("stop")
    ircheck.check(kernel(stop, ir.If(n, (stop,), (ir.If(n, (stop,)),)), GOOD.kernels[0].body[0]))


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_violation_is_reported_at_its_node(case: str) -> None:
    module, needle = BAD_CASES[case]
    with pytest.raises(TranspileError) as e:
        ircheck.check(module)
    assert needle in e.value.msg
    assert str(e.value).startswith("k.ir:3:5: error: invalid IR: "), str(e.value)
