"""The isolated semantic cross-check: two independently written IRs, one interpreter, synthesized inputs.

The text path has no C reference, so the generator's program is compared with
a naive reference program written in a separate conversation.  Both run in
:mod:`transpile.ir.interp` (exact C semantics) on inputs drawn by the verifier's
own synthesis (:mod:`transpile.verify.synth`: small non-square shapes, several
value distributions, poisoned ``out`` arrays) and their outputs are compared
with the verifier's tolerance (:mod:`transpile.verify.checks`).  Signatures
must match position by position (scalar types, array element types, ranks,
intents); names may differ.  A disagreement carries a counterexample small
enough to show the arbiter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from transpile import ir
from transpile.diagnostics import TranspileError
from transpile.llm.client import LLMClient, LLMError
from transpile.llm.prompts import arbiter_messages
from transpile.verify import checks, synth
from transpile.verify.signature import KernelSig, kernel_sig, reduction_depth

#: The interpreter is plain Python: keep the cross-check's shapes small.
WORK_BUDGET = 3e5
#: Per run of one program on one input (a forked child): seconds and bytes of address space.
TIME_LIMIT = 20.0
MEMORY_LIMIT = 4 << 30
DISTS = ("signed", "integers", "uniform")
_CHOICE = re.compile(r"CHOICE\s*:\s*\**\s*([AB])\b", re.IGNORECASE)


@dataclass
class Outcome:
    """The cross-check's result: ``evidence`` is None when the programs agreed on every input."""

    inputs: int
    evidence: str | None


def _describe_param(p: ir.Param) -> str:
    if isinstance(p.ty, ir.ArrayType):
        return f"{p.intent} {p.ty.elem.name}{'*' if p.pointer else ''} array of rank {len(p.ty.dims)}"
    return f"{p.ty} scalar"


def signature_diff(a: ir.Kernel, b: ir.Kernel) -> str | None:
    """How the two kernels' signatures differ (position by position), or None if they match."""
    if len(a.params) != len(b.params):
        return f"program A has {len(a.params)} parameters, program B has {len(b.params)}"
    for i, (p, q) in enumerate(zip(a.params, b.params), 1):
        dp, dq = _describe_param(p), _describe_param(q)
        if dp != dq:
            return f"parameter {i}: program A's '{p.name}' is {dp}, program B's '{q.name}' is {dq}"
    return None


def _fmt_value(v: object) -> str:
    if isinstance(v, np.ndarray):
        with np.printoptions(threshold=64, edgeitems=4, precision=6, suppress=False):
            return np.array2string(v, separator=", ")
    return repr(v.item() if isinstance(v, np.generic) else v)


def _run(module: ir.Module, args: dict[str, object]) -> dict[str, np.ndarray] | str:
    """The outputs, or why there are none: the model's program runs in a forked child with a time
    and memory limit, so a hostile or runaway program is a fault, not a hang."""
    from transpile.ir import interp
    from transpile.verify.proc import ChildError, fork_call

    def child() -> dict[str, np.ndarray] | str:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        try:
            return interp.run(module, module.kernels[0].name, args)
        except TranspileError as e:
            return e.headline
        except MemoryError:
            return f"the program needs more than {MEMORY_LIMIT >> 20} MiB"

    try:
        result: dict[str, np.ndarray] | str = fork_call(child, timeout=TIME_LIMIT, what="the program")
    except ChildError as e:
        return str(e)
    return result


def compare(a: ir.Module, b: ir.Module, *, seed: int) -> Outcome:
    """Run both single-kernel modules on the same synthesized inputs; the first disagreement, if any."""
    ka, kb = a.kernels[0], b.kernels[0]
    diff = signature_diff(ka, kb)
    if diff is not None:
        return Outcome(0, f"their signatures differ: {diff}")
    sig = kernel_sig(ka)
    rename = {p.name: q.name for p, q in zip(ka.params, kb.params)}
    shapes = synth.shapes(sig, ka, mode="quick", work_budget=WORK_BUDGET, byte_budget=4e6)
    shapes.sort(key=lambda s: sum(sig.nbytes(s.scalars).values()))  # smallest counterexample first
    rng = synth.seed_for(seed, 7)
    ran = 0
    for shape in shapes:
        for dist in DISTS:
            args = synth.make_inputs(sig, shape, rng, dist, "random")
            if args is None:
                continue
            ra = _run(a, synth.copy_inputs(args))
            rb = _run(b, {rename[k]: v for k, v in synth.copy_inputs(args).items()})
            if isinstance(ra, str) and isinstance(rb, str):
                continue  # both fault on this input: it says nothing about the spec
            ran += 1
            problem = _disagreement(sig, ka, shape.scalars, args, ra, rb, rename)
            if problem is not None:
                return Outcome(ran, _evidence(sig, args, problem))
    if ran == 0:
        raise LLMError("the cross-check could not run: both programs fault on every synthesized input")
    return Outcome(ran, None)


def _disagreement(sig: KernelSig, k: ir.Kernel, env: Mapping[str, int], args: dict[str, object],
                  ra: dict[str, np.ndarray] | str, rb: dict[str, np.ndarray] | str,
                  rename: dict[str, str]) -> str | None:
    if isinstance(ra, str):
        return f"program A faults: {ra}; program B runs"
    if isinstance(rb, str):
        return f"program B faults: {rb}; program A runs"
    depth = reduction_depth(sig, k, env)
    for out in sig.outputs:
        x, y = ra[out.name], rb[rename[out.name]]
        init = np.asarray(args[out.name])
        if x.shape != y.shape:
            return f"{out.name} has shape {x.shape} in program A and {y.shape} in program B"
        tol = checks.tolerance(out.dtype, depth, 4.0)
        # Either program may be right: compare each way, so that a value one left unwritten is caught.
        c = checks.compare(out.name, x, y, init, tol)
        if c.ok:
            c = checks.compare(out.name, y, x, init, tol)
        if not c.ok:
            first = c.first_bad or (0,) * x.ndim
            at = "".join(f"[{i}]" for i in first)
            return (f"{out.name}{at} is {_fmt_value(x[first])} in program A and {_fmt_value(y[first])} in "
                    f"program B ({c.bad} of {c.total} elements of {out.name} differ)")
    return None


def _evidence(sig: KernelSig, args: dict[str, object], problem: str) -> str:
    lines = ["On this input (arrays listed in row-major order; out arrays start as NaN):"]
    for a in sig.args:
        if a.is_array and a.intent == "out":
            continue
        lines.append(f"  {a.name} = {_fmt_value(args[a.name])}")
    lines.append(problem)
    return "\n".join(lines)


def arbitrate(client: LLMClient, spec: str, a_source: str, b_source: str, evidence: str, *,
              rounds: int) -> str:
    """Ask a fresh conversation which program matches the spec: ``'A'`` or ``'B'``."""
    messages = arbiter_messages(spec, a_source, b_source, evidence)
    for _ in range(max(rounds, 1)):
        answer = client.chat(messages, conversation="arbiter")
        found = _CHOICE.findall(answer)
        if found:
            return found[-1].upper()
        messages.append({"role": "assistant", "content": answer})
        messages.append({"role": "user", "content": "End your answer with a line `CHOICE: A` or `CHOICE: B`."})
    raise LLMError(f"the arbiter named no program in {rounds} rounds")
