"""The README's recipe for a file holding main and the offloaded function (issue 41): its commands, run
as written in a scratch directory (``examples`` linked in), build ``gemm``; the GPU one's ``kernel_gemm``
is the program's, and main calls it.  Only the compile runs with ``--no-verify`` (the verifier is tested
elsewhere) and ``./gemm`` is left out (no GPU here)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ("nvcc", "gcc", "g++", "objcopy", "nm", "objdump")


def _cuda_home() -> str | None:
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and (Path(home) / "lib64").is_dir():
            return home
    return None


@pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS) or _cuda_home() is None,
                    reason="nvcc, gcc, binutils and the CUDA runtime library needed")
def test_readme_link_recipe(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- tests/test_readme.py runs this block -->", 1)[1]
    commands = re.search(r"```sh\n(.*?)```", block, re.S).group(1).strip().splitlines()  # type: ignore[union-attr]
    assert commands[-1] == "./gemm"
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    env = {**os.environ, "CUDA_HOME": str(_cuda_home()), "PYTHONPATH": str(ROOT)}
    for cmd in commands[:-1]:
        if cmd.startswith("transpile "):
            cmd += " --no-verify"
        r = subprocess.run(cmd, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"{cmd}\n{r.stderr[-3000:]}"
    defs = subprocess.run(["nm", str(tmp_path / "gemm")], capture_output=True, text=True).stdout
    assert re.search(r"^[0-9a-f]+ T kernel_gemm$", defs, re.M), defs
    gpu = subprocess.run(["nm", str(tmp_path / "gemm_gpu.o")], capture_output=True, text=True).stdout
    addr = int(re.search(r"^([0-9a-f]+) T kernel_gemm$", defs, re.M).group(1), 16)  # type: ignore[union-attr]
    main = subprocess.run(["objdump", "-d", str(tmp_path / "gemm")], capture_output=True, text=True).stdout
    main = main.split("<main>:", 1)[1].split("\n\n", 1)[0]
    assert f"call   {addr:x} <kernel_gemm>" in main, "main does not call the linked kernel_gemm"
    assert "kernel_gemm_device" in gpu  # the definition that won is the GPU object's
