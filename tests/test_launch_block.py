"""1-D plain launches pick their threads per block at run time (``transpile_block``).

The emitted helper halves the block (through multiples of 32) while the grid would have fewer
blocks than the device has SMs; ``transpile.search.costmodel.runtime_block`` prices launches by the same
rule.  These tests run the emitted C++ helper itself (through the CPU simulator's build, which
reports 132 SMs like an H200) against the Python rule, and check which launches get it.
"""

from __future__ import annotations

import ctypes
import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transpile import cuda, frontend, pipeline
from transpile.search import costmodel
from transpile.sim.build import build as sim_build

KERNELS = Path(__file__).parent / "kernels"
SMS = 132  # what the simulator's cudaDeviceGetAttribute reports


def _emit(path: Path) -> str:
    return cuda.emit(pipeline.lower(frontend.load(path)), source=path.name)


@pytest.fixture(scope="module")
def helper(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    """The emitted ``transpile_block`` of a real module, exported through a probe function."""
    text = _emit(KERNELS / "jacobi_1d.c")
    assert "transpile_block(" in text
    text += ('\nextern "C" unsigned int probe_block(long long n, unsigned int block)'
             " { return transpile_block(n, block); }\n")
    d = tmp_path_factory.mktemp("block")
    (d / "probe.cu").write_text(text)
    lib = ctypes.CDLL(str(sim_build(d / "probe.cu", d).library))
    lib.probe_block.restype = ctypes.c_uint
    lib.probe_block.argtypes = [ctypes.c_longlong, ctypes.c_uint]
    return lib


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 1 << 40), block=st.sampled_from([32, 64, 96, 128, 192, 256, 512, 1024]))
def test_emitted_helper_matches_the_cost_model(helper: ctypes.CDLL, n: int, block: int) -> None:
    got = helper.probe_block(n, block)
    assert got == costmodel.runtime_block(n, block, SMS)
    assert got % 32 == 0 and got <= block
    # Either the grid fills the SMs, or the block cannot be halved any further.
    assert math.ceil(n / got) >= SMS or got % 64 != 0


@pytest.mark.parametrize(("n", "want"), [(3998, 32), (132 * 256, 256), (132 * 256 - 1, 256), (131 * 256, 128), (1, 32), (10**9, 256)])
def test_rule(n: int, want: int) -> None:
    assert costmodel.runtime_block(n, 256, SMS) == want


def test_only_one_dimensional_plain_launches_get_it() -> None:
    # adi: two 1-D sweeps of n - 2 rows; gemm: a tiled 2-D launch; jacobi-2d: plain 2-D launches.
    adi = _emit(KERNELS / "adi.c")
    launches = re.findall(r"<<<dim3\((.*?)\), dim3\((.*?)\), 0", adi)
    assert len(launches) == 2
    for grid, block in launches:
        m = re.fullmatch(r"transpile_block\((\w+), 256u\), 1u, 1u", block)
        assert m is not None, block
        assert grid.startswith(f"transpile_grid({m.group(1)}, transpile_block({m.group(1)}, 256u), ")
    for name in ("gemm.c", "jacobi_2d.c"):
        launches = re.findall(r"<<<(.*?)>>>", _emit(KERNELS / name))
        assert launches and not any("transpile_block(" in launch for launch in launches)
