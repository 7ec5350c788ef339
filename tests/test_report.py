"""``transpile compile --report FILE.html``: the page a user opens, and the occupancy it computes."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from transpile.cuda.arches import LIMITS, occupancy

ROOT = Path(__file__).resolve().parent.parent
VOID = {"meta", "br", "hr", "img", "link", "input", "wbr"}


def transpile(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "transpile.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=900)


class _Page(HTMLParser):
    """The page's text by section (``h2`` ids), its table rows as cell texts, and every tag balanced."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.section = ""
        self.rows: dict[str, list[list[str]]] = {}
        self.text: dict[str, str] = {}
        self.cell: list[str] | None = None
        self.row: list[str] | None = None
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "link", "img", "iframe"):
            self.external.append(tag)
        for name, value in attrs:
            if name in ("src", "href") and value:
                self.external.append(value)
        if tag in VOID:
            return
        self.stack.append(tag)
        if tag == "h2":
            self.section = dict(attrs).get("id") or ""
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]} ({self.getpos()})"
        self.stack.pop()
        if tag in ("td", "th") and self.cell is not None and self.row is not None:
            self.row.append("".join(self.cell).strip())
            self.cell = None
        elif tag == "tr" and self.row is not None:
            self.rows.setdefault(self.section, []).append(self.row)
            self.row = None

    def handle_data(self, data: str) -> None:
        self.text[self.section] = self.text.get(self.section, "") + data
        if self.cell is not None:
            self.cell.append(data)


def parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text())
    page.close()
    assert page.stack == [], f"tags left open: {page.stack}"
    assert page.external == [], f"the page must be self-contained: {page.external}"
    return page


def row(page: _Page, section: str, first: str, col: int = 0) -> list[str]:
    """The row of ``section``'s table whose cell ``col`` is ``first``."""
    rows = [r for r in page.rows.get(section, []) if len(r) > col and r[col] == first]
    assert rows, f"no row {first!r} in {section}: {page.rows.get(section)}"
    return rows[0]


PERCENT = re.compile(r"^\d+% \(\d+ blocks\)$")


# --- occupancy: hand-computed cases


def test_occupancy_threads_bound_at_full_occupancy() -> None:
    # 256 threads = 8 warps: 64 / 8 = 8 blocks by threads; 32 registers = 1024 a warp, 64 warps -> 8 blocks.
    o = occupancy(90, threads=256, registers=32)
    assert (o.blocks, o.fraction, o.limiter, o.percent) == (8, 1.0, "threads", "100%")


def test_occupancy_registers_round_up_per_warp() -> None:
    # gemm's tensor-core kernel on sm_90: 159 registers -> ceil(159 * 32 / 256) * 256 = 5120 a warp,
    # 65536 / 5120 = 12 warps -> 3 blocks of 4 warps; shared memory would allow 233472 / (34816 + 1024) = 6.
    o = occupancy(90, threads=128, registers=159, smem=34816)
    assert (o.blocks, o.limiter, o.percent) == (3, "registers", "19%")
    assert o.fraction == 3 * 4 / 64


def test_occupancy_shared_memory_bound_with_the_reserved_kilobyte() -> None:
    # sm_80: 164 KB = 167936 bytes; (48 KB + 1 KB reserved) a block -> 3 blocks of 256 threads of 2048.
    o = occupancy(80, threads=256, registers=32, smem=48 * 1024)
    assert (o.blocks, o.limiter, o.fraction) == (3, "shared memory", 0.375)
    # The reservation tells at 40 KB + 1 byte: 167936 / (40961 + 1024) = 3.99 -> 3 blocks (4 without it).
    assert occupancy(80, threads=128, registers=32, smem=40 * 1024 + 1).blocks == 3


def test_occupancy_block_count_bound_per_architecture() -> None:
    # One warp a block: sm_86 holds 16 blocks (16 of its 48 warps), sm_89 24, sm_90 32 (of 64 warps).
    assert (occupancy(86, threads=32, registers=16).blocks, occupancy(86, threads=32, registers=16).limiter) == (16, "blocks")
    assert occupancy(86, threads=32, registers=16).fraction == 16 / 48
    assert occupancy(89, threads=32, registers=16).fraction == 24 / 48
    assert occupancy(90, threads=32, registers=16).fraction == 32 / 64


def test_occupancy_turing_and_a_block_that_cannot_fit() -> None:
    # sm_75 holds 1024 threads: one block of 1024 at 64 registers (2048 a warp, 32 warps) is all of it.
    o = occupancy(75, threads=1024, registers=64)
    assert (o.blocks, o.fraction) == (1, 1.0)
    # 65 registers -> 2304 a warp -> 28 warps: a 32-warp block does not fit.
    o = occupancy(75, threads=1024, registers=65)
    assert (o.blocks, o.fraction, o.limiter) == (0, 0.0, "registers")
    # A partial warp counts as a warp: 48 threads take 2 warps of sm_90's 64.
    assert occupancy(90, threads=48, registers=32).fraction == 32 * 2 / 64


def test_limits_cover_every_target() -> None:
    from transpile.cuda.arches import ARCHES

    assert sorted(LIMITS) == sorted(ARCHES)
    assert all(lim.registers == 65536 for lim in LIMITS.values())


# --- the page, through the command line


@pytest.fixture(scope="module")
def gemm_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[_Page, Path]:
    d = tmp_path_factory.mktemp("gemm")
    proc = transpile("compile", "examples/gemm.c", "-o", str(d / "gemm.cu"), "--report", str(d / "gemm.html"))
    assert proc.returncode == 0, proc.stderr
    return parse(d / "gemm.html"), d / "gemm.cu"


def test_gemm_page_loops_kernels_transfers(gemm_page: tuple[_Page, Path], tmp_path: Path) -> None:
    page, cu = gemm_page
    # The page changes nothing that is emitted.
    proc = transpile("examples/gemm.c", "--no-verify", "-o", str(tmp_path / "plain.cu"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "plain.cu").read_bytes() == cu.read_bytes()
    # Each source loop, its line and text, next to what it became.
    i_loop = row(page, "loops", "examples/gemm.c:36:3")
    assert i_loop[1].startswith("for (i = 0; i < ni; i++)")
    assert "kernel_gemm_kernel0 (mma): grid axis y" in i_loop[2]
    assert "grid axis x" in row(page, "loops", "examples/gemm.c:37:5")[2]
    assert "a loop inside each thread" in row(page, "loops", "examples/gemm.c:39:5")[2]
    # The kernel: its form, block and grid, the source lines it runs, the FMA kernel beside it.
    k = row(page, "kernels", "kernel_gemm_kernel0", 1)
    assert k[2] == "mma" and k[3] == "128×1×1"
    assert k[4] == "⌈nj / 64⌉ × ⌈ni / 64⌉ tiles of 64×64"
    assert "line 36" in k[5] and "kernel_gemm_kernel0_fma" in k[6]
    # Transfers: every array parameter, with its size in bytes and why.
    for name, dims in (("C", "ni × nj"), ("A", "ni × nk"), ("B", "nk × nj")):
        t = row(page, "transfers", name, 1)
        assert t[3] == f"{dims} × 8 bytes", t
    assert row(page, "transfers", "A", 1)[5] == "nothing"
    assert "copied out" in row(page, "transfers", "C", 1)[6]


def test_gemm_page_resources_verdict(gemm_page: tuple[_Page, Path]) -> None:
    page, _ = gemm_page
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH")
    assert "sm_90" in page.text["resources"]
    r = row(page, "resources", "kernel_gemm_kernel0")
    assert int(r[1]) > 0 and r[5] == "128" and PERCENT.match(r[6]), r
    assert PERCENT.match(row(page, "resources", "kernel_gemm_kernel0_fma")[6])
    text = page.text["verification"]
    assert "'kernel_gemm' verified (seed " in text and "stages a,b,c passed" in text
    assert row(page, "verification", "(c)")[2] == "pass"
    assert "needs a GPU: bench/gpu.py" in page.text["performance"]


def test_stencil_page_host_loop_and_plain_kernels(tmp_path: Path) -> None:
    page_path = tmp_path / "j.html"
    proc = transpile("tests/kernels/jacobi_2d.c", "-o", str(tmp_path / "j.cu"), "--report", str(page_path))
    assert proc.returncode == 0, proc.stderr
    page = parse(page_path)
    t_loop = row(page, "loops", "tests/kernels/jacobi_2d.c:9:3")
    assert "host loop" in t_loop[2] and "kernel_jacobi_2d_loop" in t_loop[2]
    assert "kernel_jacobi_2d_kernel0 (plain): grid axis y" in row(page, "loops", "tests/kernels/jacobi_2d.c:10:5")[2]
    assert "kernel_jacobi_2d_kernel1 (plain): grid axis x" in row(page, "loops", "tests/kernels/jacobi_2d.c:14:7")[2]
    for name, lines in (("kernel_jacobi_2d_kernel0", "line 10, line 11"), ("kernel_jacobi_2d_kernel1", "line 13, line 14")):
        k = row(page, "kernels", name, 1)
        assert (k[2], k[3], k[5]) == ("plain", "32×8×1", lines), k
        assert k[4].startswith("⌈(n - 2) / 32⌉ × ⌈(n - 2) / "), k
    assert row(page, "kernels", "kernel_jacobi_2d_loop", 1)[2] == "one-block loop"
    for name in ("A", "B"):
        assert row(page, "transfers", name, 1)[3] == "n × n × 8 bytes"
    if shutil.which("nvcc"):
        r = row(page, "resources", "kernel_jacobi_2d_kernel0")
        assert r[5] == "256" and PERCENT.match(r[6]), r
    assert "'kernel_jacobi_2d' verified (seed " in page.text["verification"]


def test_constant_extents_give_byte_counts(tmp_path: Path) -> None:
    src = tmp_path / "scale.c"
    src.write_text("void scale(double A[100][120], float x[64], double s)\n{\n  int i, j;\n"
                   "  for (i = 0; i < 100; i++)\n    for (j = 0; j < 120; j++)\n      A[i][j] = A[i][j] * s;\n"
                   "  for (i = 0; i < 64; i++)\n    x[i] = 2.0f * x[i];\n}\n")
    proc = transpile(str(src), "--no-verify", "--arch", "sm_80", "-o", str(tmp_path / "s.cu"),
                     "--report", str(tmp_path / "s.html"))
    assert proc.returncode == 0, proc.stderr
    page = parse(tmp_path / "s.html")
    assert row(page, "transfers", "A", 1)[3] == "96,000 bytes"
    assert row(page, "transfers", "x", 1)[3] == "256 bytes"
    assert "Not verified (--no-verify)." in page.text["verification"]
    assert "for (j = 0; j < 120; j++)" in row(page, "loops", f"{src}:5:5")[1]
    if shutil.which("nvcc"):
        assert "sm_80" in page.text["resources"] and "sm_90" not in page.text["resources"]


def test_report_with_emit_ir_is_an_error(tmp_path: Path) -> None:
    proc = transpile("examples/gemm.c", "--emit", "ir", "-o", str(tmp_path / "g.ir"),
                     "--report", str(tmp_path / "r.html"))
    assert proc.returncode == 1, proc.stderr
    assert "error: --report goes with the CUDA output" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "r.html").exists()


def test_page_escapes_what_it_shows() -> None:
    from transpile.cli.report import LoopRow, Page, render

    page = Page("a<b>.c", 90, loops=[LoopRow("a<b>.c:1:1", 1, "for (i = 0; i < n && x > \"y\"; i++)", ["<script>"])])
    text = render(page)
    assert "<script>" not in text and "&lt;script&gt;" in text and "a&lt;b&gt;.c" in text
    p = _Page()
    p.feed(text)
    assert p.stack == []
