"""Row coarsening of plain launches (``tile.Options.rows``, the ``rows`` knob of ``--evolve``).

Each thread runs ``rows`` consecutive iterations of the ``y`` par loop, unrolled inside the ``x``
loop, with a guard for the last, partial group.  The emitted kernels must still pass the
verifier's stages (a)-(c) (the quick shapes include sizes that ``rows`` does not divide).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from passes import tile
from transpile import cuda, frontend, pipeline
from transpile.verify import Options, verify_module

KERNELS = Path(__file__).resolve().parent / "kernels"


def emit(name: str, opts: tile.Options) -> tuple[object, object, str]:
    module = frontend.load(KERNELS / f"{name}.c")
    lowered = pipeline.lower(module)
    return module, lowered, cuda.emit(lowered, source=f"{name}.c", tiling=opts)


def test_the_y_loop_strides_by_rows_and_the_x_loop_holds_the_unrolled_rows() -> None:
    _, lowered, text = emit("jacobi_2d", tile.Options(rows=4))
    body = text[text.index("kernel_jacobi_2d_kernel0("):]
    body = body[: body.index("\n}\n")]
    assert "((long long)blockIdx.y * blockDim.y + threadIdx.y) * 4" in body
    assert "gridDim.y * blockDim.y * 4" in body
    # the unrolled rows sit inside the x loop (where loads of shared rows can be reused)
    assert body.index("j_g = ") < body.index("#pragma unroll") < body.index("const int i = (int)row;")
    # Two versions: a thread's four rows all in range run unguarded (shared loads may be reused),
    # the last, partial group guards each row.
    full, partial = body.index("if (i_g + 4 <= i_hi) {"), body.index("} else {")
    assert full < body.index("const int i = (int)row;") < partial < body.index("if (row1 < i_hi)")
    assert not re.search(r"if \(row < i_hi\)", body)
    # the grid has a quarter of the blocks along y
    assert "transpile_grid(i_n, 32u, 65535u)" in text  # 8 threads x 4 rows
    plain = cuda.emit(lowered, source="jacobi_2d.c")  # type: ignore[arg-type]
    assert "transpile_grid(i_n, 8u, 65535u)" in plain and "#pragma unroll" not in plain


def test_rows_leave_one_dimensional_and_specialised_launches_alone() -> None:
    _, lowered, text = emit("gemm", tile.Options(rows=4))
    assert text == cuda.emit(lowered, source="gemm.c", tiling=tile.Options())  # type: ignore[arg-type]
    _, lowered, text = emit("jacobi_1d", tile.Options(rows=4))
    assert text == cuda.emit(lowered, source="jacobi_1d.c", tiling=tile.Options())  # type: ignore[arg-type]


@pytest.mark.parametrize("name, rows", [("jacobi_2d", 3), ("heat_3d", 3), ("fdtd_2d", 2), ("deriche", 3)])
def test_row_coarsened_kernels_pass_verification(name: str, rows: int) -> None:
    opts = tile.Options(rows=rows)
    module, lowered, text = emit(name, opts)
    assert "#pragma unroll" in text, "the kernel has a 2-D or 3-D plain launch"
    reports = verify_module(module, text, source=KERNELS / f"{name}.c", lowered=lowered,  # type: ignore[arg-type]
                            options=Options(mode="quick", full_seeds=1, sanitizer=False, stages="abc", gpu=False,
                                            seed=11))
    assert [r.verdict for r in reports] == ["pass"] * len(reports), [r.reason for r in reports]


def test_rows_are_validated() -> None:
    assert tile.Options(rows=0).problem() is None  # automatic
    assert tile.Options(rows=-1).problem() is not None
    assert tile.Options(rows=17).problem() is not None
    assert tile.Options(rows=16).problem() is None


def test_cli_rows_and_block_flags(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "j.cu"
    cmd = [sys.executable, "-m", "transpile.cli", str(KERNELS / "jacobi_2d.c"), "--no-verify", "-o", str(out)]
    ok = subprocess.run(cmd + ["--rows", "4", "--block", "32x4", "--block", "128"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    text = out.read_text()
    assert "dim3(32u, 4u, 1u)" in text and "* 4;" in text and "#pragma unroll" in text
    for bad, why in ((["--block", "32x4x2x1"], "XxYxZ"), (["--block", "2048"], "32..1024"), (["--rows", "0"], "1<=x<=16")):
        out.unlink(missing_ok=True)
        proc = subprocess.run(cmd + bad, capture_output=True, text=True)
        assert proc.returncode == 2 and why in proc.stderr and not out.exists(), proc.stderr


def test_evolve_keeps_the_rows_and_blocks_the_user_set(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    out = tmp_path / "j.cu"
    env = {**os.environ, "TRANSPILE_EVOLVE_CACHE_DIR": str(tmp_path / "evolve")}  # builds: shared
    cmd = [sys.executable, "-m", "transpile.cli", str(KERNELS / "jacobi_2d.c"), "--evolve", "--evolve-rounds", "1",
           "--evolve-measure", "model", "--rows", "4", "--block", "32x4", "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "dim3(32u, 4u, 1u)" in text and "gridDim.y * blockDim.y * 4" in text
    rows = [ln for ln in proc.stderr.splitlines() if ln.startswith("  0 ")]
    assert len(rows) >= 2 and all("block2=32x4x1" in ln and "rows=4" in ln for ln in rows)  # fixed: not searched


def test_automatic_rows_coarsen_the_launches_that_share_rows_only() -> None:
    """Left at 0, a plain launch reading one array at several ``y`` offsets (a stencil) gets
    ``AUTO_ROWS`` rows per thread; every other launch, and the naive mapping, gets one."""
    from dataclasses import replace

    from tests.test_stream import chains as par_chains

    auto = tile.Options()
    for name in ("jacobi_2d", "fdtd_2d", "heat_3d"):
        _, lowered, text = emit(name, auto)
        rows = [tile.launch_rows(auto, c) for c in par_chains(lowered)]
        if name == "heat_3d":  # 3-D: the thread streams through planes instead (test_stream.py)
            assert rows == [1, 1] and [tile.launch_stream(auto, c) for c in par_chains(lowered)] == [tile.AUTO_STREAM] * 2
            assert tile.launch_rows(tile.Options(stream=1), par_chains(lowered)[0]) == tile.AUTO_ROWS
        else:
            assert tile.AUTO_ROWS in rows, (name, rows)
        assert "#pragma unroll" in text
        assert all(tile.launch_rows(replace(auto, enabled=False), c) == 1 for c in par_chains(lowered))
        assert all(tile.launch_rows(tile.Options(rows=3), c) in (1, 3) for c in par_chains(lowered))
    for name in ("gemver", "doitgen", "correlation", "2mm"):
        _, lowered, text = emit(name, auto)
        assert all(tile.launch_rows(auto, c) == 1 for c in par_chains(lowered)), name
        assert text == cuda.emit(lowered, source=f"{name}.c", tiling=tile.Options(rows=1))  # type: ignore[arg-type]


def test_only_two_dimensional_launches_get_the_unguarded_row_group() -> None:
    """heat-3d's 3-D body copied twice needed 80 registers instead of 64 on sm_90 and ran 0.84x."""
    _, _, text = emit("heat_3d", tile.Options(rows=2))
    body = text[text.index("kernel_heat_3d_kernel0("):]
    body = body[: body.index("\n}\n")]
    assert "#pragma unroll" in body and "+ 2 <= j_hi" not in body and "if (row < j_hi)" in body
    _, _, text = emit("jacobi_2d", tile.Options(rows=2))
    assert "if (i_g + 2 <= i_hi) {" in text
