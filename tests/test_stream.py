"""Streaming 3-D plain launches (``tile.Options.stream``, ``--stream``, the ``stream`` knob of ``--evolve``).

A 3-D stencil launch (one array read at several ``z`` offsets: heat-3d) gives each thread
``stream`` consecutive iterations of its ``z`` par loop as a serial loop inside the ``x`` loop, so
that a thread's next plane meets the loads of its previous one in L1, and each block covers fewer
planes with more threads in flight (registers: 40 instead of the 2-row kernel's 64 on sm_90).
The emitted kernels must pass the verifier's stages (a)-(c) at sizes that ``stream`` does not
divide, with several threads along z per block.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from passes import tile
from transpile import cuda, frontend, ir, pipeline
from transpile.search import costmodel
from transpile.verify import Options, verify_module

KERNELS = Path(__file__).resolve().parent / "kernels"


def emit(source: Path, opts: tile.Options) -> tuple[ir.Module, ir.Module, str]:
    module = frontend.load(source)
    lowered = pipeline.lower(module)
    return module, lowered, cuda.emit(lowered, source=source.name, tiling=opts)


def chains(lowered: ir.Module) -> list[list[ir.For]]:
    out = []
    for lp in (s for k in lowered.kernels for s in ir.walk(k) if isinstance(s, ir.Launch)):
        chain, body = [], list(lp.body)
        while len(body) == 1 and isinstance(body[0], ir.For) and body[0].par:
            chain.append(body[0])
            body = list(body[0].body)
        out.append(chain)
    return out


def kernel0(text: str) -> str:
    body = text[text.index("kernel_heat_3d_kernel0("):]
    return body[: body.index("\n}\n")]


def test_the_z_loop_strides_by_planes_and_the_x_loop_holds_the_serial_plane_loop() -> None:
    _, lowered, text = emit(KERNELS / "heat_3d.c", tile.Options(stream=5))
    body = kernel0(text)
    assert "((long long)blockIdx.z * blockDim.z + threadIdx.z) * 5" in body and "gridDim.z * blockDim.z * 5" in body
    assert body.index("k_g = ") < body.index("plane_end = i_g + 5 < i_hi ? i_g + 5 : i_hi;") \
        < body.index("#pragma unroll 1") < body.index("const int i = (int)plane;")
    assert "row" not in body  # no y row coarsening with it
    assert "transpile_grid(i_n, 10u, 65535u)" in text  # block z 2 x 5 planes
    naive = cuda.emit(lowered, source="heat_3d.c", tiling=tile.Options(enabled=False))
    assert "plane" not in naive


def test_automatic_stream_only_for_three_dimensional_stencils(tmp_path: Path) -> None:
    auto = tile.Options()
    _, lowered, _ = emit(KERNELS / "heat_3d.c", auto)
    assert [tile.launch_stream(auto, c) for c in chains(lowered)] == [tile.AUTO_STREAM] * 2
    assert [tile.launch_stream(tile.Options(rows=2), c) for c in chains(lowered)] == [1, 1]  # rows asked instead
    assert [tile.launch_rows(tile.Options(rows=2), c) for c in chains(lowered)] == [2, 2]
    for name in ("jacobi_2d", "fdtd_2d", "gemm"):
        _, lowered, _ = emit(KERNELS / f"{name}.c", auto)
        assert all(tile.launch_stream(auto, c) == 1 for c in chains(lowered)), name
    scale = tmp_path / "scale3d.c"  # 3-D, but each element read at one offset: nothing shared
    scale.write_text("void scale3d(int n, double A[n][n][n], double B[n][n][n]) {\n"
                     "  for (int i = 0; i < n; i++)\n    for (int j = 0; j < n; j++)\n"
                     "      for (int k = 0; k < n; k++)\n        B[i][j][k] = 2.0 * A[i][j][k];\n}\n")
    _, lowered, text = emit(scale, auto)
    (chain,) = chains(lowered)
    assert len(chain) == 3 and tile.launch_stream(auto, chain) == 1 and "plane" not in text


@pytest.mark.parametrize("stream, block", [(3, (32, 4, 2)), (8, (32, 4, 2)), (4, (8, 4, 4))], ids=str)
def test_streaming_kernels_pass_verification(stream: int, block: tuple[int, int, int]) -> None:
    opts = tile.Options(stream=stream, blocks=(tile.DEFAULT_BLOCKS[0], tile.DEFAULT_BLOCKS[1], block))
    module, lowered, text = emit(KERNELS / "heat_3d.c", opts)
    assert "plane" in text
    reports = verify_module(module, text, source=KERNELS / "heat_3d.c", lowered=lowered,
                            options=Options(mode="quick", full_seeds=1, sanitizer=False, stages="abc", gpu=False,
                                            seed=5))
    assert [r.verdict for r in reports] == ["pass"] * len(reports), [r.reason for r in reports]


def test_streaming_is_priced_by_the_planes_it_shares() -> None:
    lowered = pipeline.lower(frontend.load(KERNELS / "heat_3d.c"))
    (k,) = lowered.kernels
    sizes = {"tsteps": 10, "n": 320}
    cache = {}
    for s in (1, 8):
        opts = tile.Options(stream=s)
        est = costmodel.estimate(k, cuda.launches(lowered, tiling=opts), sizes, tiling=opts)
        cache[s] = sum(c.cache_bytes for c in est.launches)
    assert cache[8] < cache[1]


def test_cli_stream_flag(tmp_path: Path) -> None:
    out = tmp_path / "h.cu"
    cmd = [sys.executable, "-m", "transpile.cli", str(KERNELS / "heat_3d.c"), "--no-verify", "-o", str(out)]
    ok = subprocess.run(cmd + ["--stream", "16"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "gridDim.z * blockDim.z * 16" in out.read_text()
    out.unlink()
    bad = subprocess.run(cmd + ["--stream", "65"], capture_output=True, text=True)
    assert bad.returncode == 2 and "1<=x<=64" in bad.stderr and not out.exists(), bad.stderr
    assert tile.Options(stream=65).problem() is not None and tile.Options(stream=64).problem() is None
