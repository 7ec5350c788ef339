"""The adversary corpus (tests/adversary/**/*.cu): every cheat rejected, every honest control accepted.

Each .cu file starts with a header of ``// key: value`` lines:

* ``class``: the cheat's class (issue 38's numbering) or ``control``;
* ``wrong for``: the legitimate input or call sequence on which the cheat is wrong;
* ``against``: the C reference, beside the file;
* ``expect``: ``reject`` or ``accept``;
* ``gpu-only`` (optional): why only a GPU exposes it; such files are skipped here (and listed by
  :func:`test_gpu_only_files_are_listed`).

The files are verified with the CPU stages (``transpile verify X.cu --against REF.c --no-gpu``,
without nvcc's stage (b)) in quick mode, the mode the compile command uses.  Each file is a g++ build
of the simulator library (cached by content) and about 12 to 25 checked calls: several seconds a file,
so the file tests are marked slow (xdist starts them first).
"""

from __future__ import annotations

import shutil
import zlib
from pathlib import Path

import pytest

from transpile.verify import Options, verify_file

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "adversary"
FILES = sorted(CORPUS.rglob("*.cu"))
KEYS = ("class", "wrong for", "against", "expect")

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None,
                               reason="the simulator and the reference need g++ and gcc")


def header(path: Path) -> dict[str, str]:
    """The ``// key: value`` lines at the top of ``path`` (continuation lines join the previous key)."""
    out: dict[str, str] = {}
    last = None
    for line in path.read_text().splitlines():
        if not line.startswith("//"):
            break
        body = line[2:].strip()
        key, sep, value = body.partition(":")
        if sep and key.strip() in (*KEYS, "gpu-only", "mode"):
            last = key.strip()
            out[last] = value.strip()
        elif last is not None:
            out[last] += " " + body
    return out


def _id(p: Path) -> str:
    return str(p.relative_to(CORPUS).with_suffix(""))


def test_corpus_headers_are_complete() -> None:
    assert FILES, "no adversary files"
    for p in FILES:
        h = header(p)
        missing = [k for k in KEYS if not h.get(k)]
        assert not missing, f"{p}: header lacks {missing}"
        assert h["expect"] in ("reject", "accept"), p
        assert (p.parent / h["against"]).exists(), f"{p}: no reference {h['against']}"
    judge = [p for p in FILES if p.parent.name == "judge"]
    cheats = [p for p in judge if header(p)["expect"] == "reject"]
    assert len(cheats) >= 25 and len(judge) - len(cheats) >= 8
    assert {header(p)["class"].split()[0] for p in cheats} == {"2", "3", "4", "5"}


def test_gpu_only_files_are_listed() -> None:
    """Files only a GPU can judge: named here so that a run shows them (they are skipped below)."""
    for p in FILES:
        h = header(p)
        if "gpu-only" in h:
            print(f"gpu-only: {_id(p)}: {h['gpu-only']}")


@pytest.mark.sample(3)
@needs_gxx
@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=[_id(p) for p in FILES])
def test_adversary_file(path: Path) -> None:
    h = header(path)
    if "gpu-only" in h:
        pytest.skip(f"gpu-only: {h['gpu-only']}")
    seed = 1000 + zlib.crc32(path.name.encode()) % 100000
    report = verify_file(path, path.parent / h["against"],
                         options=Options(seed=seed, mode=h.get("mode", "quick").split()[0], stages="ac",
                                         gpu=False))
    if h["expect"] == "reject":
        assert report.verdict == "fail", (
            f"{path.name} (wrong for: {h['wrong for']}) was not rejected:\n{report.summary()}")
        assert report.failure is not None and report.failure.key != "a", report.summary()
    else:
        assert report.ok and report.stage("c").status == "pass", report.summary()
