"""Launch forms decided before printing (transpile/cuda/forms.py): the plan is made before any text,
the emitter prints the planned form, and what it reports (LaunchInfo) is the plan's."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from passes import tile
from transpile import cuda, frontend, ir, pipeline
from transpile.cuda import forms
from transpile.cuda.printer import BLOCK_FN

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "tests" / "kernels").glob("*.c")) + sorted((ROOT / "examples").glob("*.c"))
OPTIONS = {"default": None, "no-mma": tile.Options(mma=False), "sm80": tile.Options(arch=80),
           "naive-rows": tile.Options(shared=False, rows=2, blocks=((64, 1, 1), (32, 4, 1), (8, 8, 4)))}


@functools.cache
def _lowered(path: Path) -> ir.Module:
    return pipeline.lower(frontend.load(path))


def _launch_blocks(text: str, kernel: str) -> list[tuple[int, ...]]:
    """The block of every launch of ``kernel`` in ``text``, read from the printed ``dim3(...)``: the
    largest number of threads each expression gives (``256u``, ``transpile_block(n, 256u)``)."""
    out = []
    for m in re.finditer(rf"\b{re.escape(kernel)}<<<", text):
        pos, parts = m.end(), []
        for _ in range(2):  # dim3(grid), dim3(block)
            assert text.startswith("dim3(", pos), text[pos:pos + 40]
            depth, start = 0, pos + len("dim3(")
            for end in range(pos + 4, len(text)):
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                if depth == 0:
                    break
            parts.append(text[start:end])
            pos = end + 1 + len(", ")
        block = []
        for item in re.split(r",\s*(?![^()]*\))", parts[1]):
            b = re.fullmatch(rf"(?:{BLOCK_FN}\(\w+, )?(\d+)u\)?", item.strip())
            assert b is not None, item
            block.append(int(b.group(1)))
        out.append(tuple(block))
    return out


@pytest.mark.parametrize("options", OPTIONS.values(), ids=list(OPTIONS))
@pytest.mark.parametrize("path", SOURCES, ids=[p.stem for p in SOURCES])
def test_the_printed_launch_is_the_planned_one(path: Path, options: tile.Options | None) -> None:
    lowered = _lowered(path)
    text, by_kernel = cuda.emit_with_launches(lowered, source=path.name, tiling=options)
    names = {f.name for f in lowered.funcs} | {k.name for k in lowered.kernels}
    for k in lowered.kernels:
        infos = by_kernel[k.name]
        # Planned before printing: a fresh emitter has every launch's form before it prints anything.
        planned = cuda._KernelEmitter(k, names | {f"{x.name}_kernel{n}" for x in lowered.kernels for n in range(99)},
                                      options).plan
        assert [p.form.value for p in planned.launches] == [li.shape for li in infos]
        assert [p.launch for p in planned.launches] == [li.launch for li in infos]
        for li in infos:
            assert li.plan is not None and li.plan.form.value == li.shape
            assert li.block == forms.block_threads(li.plan)
            printed = _launch_blocks(text, li.kernel)
            assert printed and all(b == li.block for b in printed), (li.kernel, printed, li.block)


def test_a_tensor_core_plan_fits_before_printing() -> None:
    """mma.fit decides the tensor-core form from the tiling plan alone; --no-mma leaves the FMA form."""
    lowered = _lowered(ROOT / "tests" / "kernels" / "gemm.c")
    shapes = [li.shape for li in cuda.launches(lowered)]
    assert "mma" in shapes
    infos = cuda.launches(lowered, tiling=tile.Options(mma=False))
    assert "mma" not in [li.shape for li in infos] and "tiled" in [li.shape for li in infos]
    (mma,) = [li.plan for li in cuda.launches(lowered) if li.shape == "mma"]
    assert mma is not None and mma.tile is not None and mma.mma is not None


def test_host_loops_are_planned_before_printing() -> None:
    """A one-block loop and fused time steps are recorded per host loop (jacobi-1d: both)."""
    lowered = _lowered(ROOT / "tests" / "kernels" / "jacobi_1d.c")
    (k,) = lowered.kernels
    plan = cuda._KernelEmitter(k, {k.name}).plan
    assert plan.loops and all(lp.loop in k.body for lp in plan.loops)
    assert any(lp.oneblock for lp in plan.loops)
    text = cuda.emit(lowered, source="jacobi_1d.c")
    assert ("one block runs the whole loop" in text) == any(lp.oneblock for lp in plan.loops)
