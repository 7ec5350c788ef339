"""Atomic updates in CUDA (passes/atomics.py's marks): the ``atomicAdd`` text, and privatised bins.

A 1-D launch whose ``atomic`` loop updates one 1-D array of few elements (a histogram of up to
:data:`PRIVATE_BYTES` bytes of bins) gets a second form: each block keeps its own copy of the bins
in shared memory (zeroed, updated with shared-memory atomics, then added to the array with one
global atomic a non-zero bin), so the threads of a block contend in their SM's shared memory
instead of every thread's update crossing to the L2 and serialising there on a few addresses.
The host chooses the form at each launch (the bins' size is a run-time value): shared bins when
they fit (:data:`PRIVATE_ENV` overrides the limit; 0: never), with at most
:data:`PRIVATE_BLOCKS_PER_SM` blocks a multiprocessor, since every block adds its whole copy.
Summing a block's updates first is the reassociation the mark already allows (integer bins:
exact).  The verifier's stage (c) runs both forms (its shapes' bins always fit; run G forces
global bins).
"""

from __future__ import annotations

from collections.abc import Callable

from transpile import ir
from transpile.cuda.printer import BLOCK_DIM, THREAD_IDX, add_text, ctype

PRIVATE_ENV = "TRANSPILE_PRIVATE_BINS_BYTES"
PRIVATE_BYTES = 32768
"""Bytes of bins a block keeps in shared memory at most (8192 int bins): with 8 blocks a
multiprocessor that is 256 KiB an SM, within an H100's 228 KiB only at 7 blocks; the occupancy
calculator then runs fewer blocks, not wrong ones."""
PRIVATE_BLOCKS_PER_SM = 8


def private_array(launch: ir.Launch, chain: list[ir.For], dims: dict[str, tuple[ir.Expr, ...]],
                  params: frozenset[str]) -> str | None:
    """The one array a 1-D ``atomic`` launch may keep in shared memory, or None: the launch is one
    ``par(x)`` loop marked ``atomic`` with exactly one array, of rank 1, whose extent reads only
    kernel parameters (``params``; the host sizes the shared copy from it)."""
    if len(chain) != 1 or len(launch.body) != 1 or launch.body[0] is not chain[0]:
        return None
    names = {a for n in ir.walk(launch) if isinstance(n, ir.For) for a in n.atomic}
    if len(names) != 1:
        return None
    (name,) = names
    shape = dims.get(name)
    if shape is None or len(shape) != 1:
        return None
    if any(isinstance(n, ir.Index) or (isinstance(n, ir.Var) and n.name not in params) for n in ir.walk(shape[0])):
        return None
    return name


def private_kernel(body_shared: list[str], body_global: list[str], flag: str, name: str, shared: str,
                   extent: str, ty: ir.Scalar, mark: Callable[[str, str], str]) -> list[str]:
    """The kernel body with both forms: ``flag`` (the host's choice) set, the bins ``shared`` (a
    ``ty *`` into dynamic shared memory) zeroed, ``body_shared`` (updates into them), then each
    non-zero bin added to ``name``; else ``body_global``.  ``extent``: the bins' count (C text);
    ``mark``: the printer's region marker, (label, text) -> text."""
    t = ctype(ty)
    k = f"{shared}_k"

    def loop(line: str) -> list[str]:
        head = mark("index", f"long long {k} = {THREAD_IDX}.x") + "; " + mark("guard", f"{k} < {extent}") + "; " + \
            mark("index", f"{k} += {BLOCK_DIM}.x")
        return [f"    for ({head}) {{", f"      {line}", "    }"]

    barrier = "    " + mark("barrier", "__syncthreads();")
    flush = add_text(f"&{name}[{k}]", f"{shared}_v", ty, "+")
    return [
        f"  if ({flag}) {{  // bins in shared memory, one copy a block",
        "    " + mark("shared", f"extern __shared__ __align__(16) unsigned char {shared}_raw[];"),
        f"    {t} *{shared} = ({t} *){shared}_raw;",
        *loop(f"{shared}[{k}] = ({t})0;"),
        barrier,
        *("  " + line for line in body_shared),
        barrier,
        *loop(f"const {t} {shared}_v = {shared}[{k}]; if ({shared}_v != ({t})0) {{ {flush} }}"),
        "  } else {  // bins in global memory",
        *("  " + line for line in body_global),
        "  }",
    ]
