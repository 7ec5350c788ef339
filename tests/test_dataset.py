"""``transpile dataset`` and ``transpile.search.dataset.load``: export, schema, loader, CLI (docs/dataset.md)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from transpile.cuda import regions
from transpile.search import dataset

ROOT = Path(__file__).resolve().parent.parent
KERNELS = sorted((ROOT / "tests" / "kernels").glob("*.c"))
SPECS = sorted((ROOT / "examples" / "specs").glob("*.txt"))
LOCATED = re.compile(r"^(\S+:\d+:\d+: |transpile: )error: \S")


def transpile(*args: str, env: dict[str, str] | None = None, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh interpreter, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "transpile.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, timeout=timeout)


# ---------------------------------------------------------------------------
# The export: every test kernel's record, then the CLI over a directory of kernels and the spec
# library (through the replay server)

#: One kernel per emitter shape for the CLI export (every kernel's record is checked by
#: test_every_kernel_record below, in-process, one test each so that xdist spreads them).
SHAPES = ("gemm", "atax", "jacobi_2d", "durbin", "nussinov")
#: Specs exported with the kernels (kinds apart: a matmul, a histogram's atomics, a scan, a row
#: reduction with a second pass, a stencil); every spec's answer is verified by test_llm_specs.
SPEC_SHAPES = ("gemm", "histogram", "prefix_sum", "softmax", "stencil_2d")


@pytest.mark.sample(6)
@pytest.mark.parametrize("path", KERNELS, ids=[p.stem for p in KERNELS])
def test_every_kernel_record(path: Path) -> None:
    """The record ``transpile dataset`` exports for each test kernel (the function its tasks run,
    with the export's arguments below): valid, verified through stage (c), regions in place."""
    rec = dataset.record_for(str(path), seed=11, stages="abc", candidates=["default"])
    assert dataset.problems(rec) == [], dataset.problems(rec)
    assert rec["id"] == f"c:{path.stem}" and rec["inputs"]["seed"] == 11
    json.dumps(rec, allow_nan=False)
    _check_verified(rec, ["default"])
    _check_regions([rec])
    if path.stem == "gemm":
        _check_reemitted(rec)


@pytest.mark.slow
def test_export_kernels_and_specs(tmp_path: Path) -> None:
    """One test (xdist must not run the export once per worker): export, load back with validation, check.

    A directory of kernels (one per emitter shape: SHAPES; every kernel's record is checked by
    test_every_kernel_record) and specs of distinct kinds (SPEC_SHAPES) with the default candidate
    (several candidates per record: the ``small`` record below), ``--jobs 2``, stages (a)-(c).
    """
    pytest.importorskip("openai")
    from tests.llm_replay_server import ReplayServer

    specs_in = [p for p in SPECS if p.stem in SPEC_SHAPES]
    assert len(KERNELS) == 30 and len(specs_in) == len(SPEC_SHAPES)
    chosen = tmp_path / "kernels"
    chosen.mkdir()
    for name in SHAPES:
        shutil.copy(ROOT / "tests" / "kernels" / f"{name}.c", chosen)
    kernels, specs = tmp_path / "kernels.jsonl", tmp_path / "specs.jsonl"
    common = ("--jobs", "2", "--seed", "11", "--stages", "abc")
    proc = transpile("dataset", str(chosen), "-o", str(kernels), *common, "--candidates", "default")
    assert proc.returncode == 0, proc.stderr[-3000:]
    n = len(SHAPES)
    assert f"{n} record(s), {n} with CUDA, {n} with a verified candidate, 0 failed (seed 11)" in proc.stderr
    with ReplayServer({}) as srv:  # every conversation answers from examples/specs/NAME.ir
        sproc = transpile("dataset", *(str(p.relative_to(ROOT)) for p in specs_in), "-o", str(specs), *common,
                          "--candidates", "default", "--llm-base-url", srv.base_url, "--model", "replay",
                          env={"TRANSPILE_LLM_BACKOFF": "0"})
    assert sproc.returncode == 0, sproc.stderr[-3000:]
    krecs, srecs = dataset.load(kernels), dataset.load(specs)  # validates every line
    assert [r["id"] for r in krecs] == [f"c:{name}" for name in sorted(SHAPES)]  # the directory, sorted
    assert [r["id"] for r in srecs] == [f"spec:{p.stem}" for p in specs_in]
    assert {r["inputs"]["seed"] for r in krecs + srecs} == {11}
    for r in krecs:
        _check_verified(r, ["default"])
    for r in srecs:
        _check_verified(r, ["default"])
        _check_spec(r)
    _check_regions(krecs + srecs)
    _check_reemitted(next(r for r in krecs if r["id"] == "c:gemm"))


def _check_verified(r: dict[str, Any], names: list[str]) -> None:
    """Every candidate verified: compiled by nvcc (stage b, with ptxas resources) and run on the simulator."""
    assert r["errors"] == [], (r["id"], r["errors"])
    assert [c["name"] for c in r["candidates"]] == names, r["id"]
    assert r["ok"]
    for c in r["candidates"]:
        assert c["verified"], (r["id"], c["name"], [rep["reason"] for rep in c["verify"]["reports"]])
        assert len(c["verify"]["reports"]) == len(r["functions"])
        for rep in c["verify"]["reports"]:
            assert rep["stages"]["b"]["status"] == "pass" and rep["resources"], (r["id"], c["name"])
            assert rep["stages"]["c"]["status"] == "pass", (r["id"], c["name"])
        for name in r["functions"]:
            assert f'extern "C" void {name}(' in c["cuda"]
    assert [k["kernel"] for k in r["inputs"]["kernels"]] == r["functions"]
    assert all(k["shapes"] and k["shapes"][0]["stage"] == "c" for k in r["inputs"]["kernels"]), r["id"]


def _check_spec(r: dict[str, Any]) -> None:
    from transpile.ir import text

    name = r["id"].split(":")[1]
    s = r["spec"]
    assert s["text"] == (ROOT / "examples" / "specs" / f"{name}.txt").read_text()
    assert s["model"] == "replay" and s["rounds"] == {"generator": 1, "reference": 1}
    assert s["crosscheck"].startswith("agreed") and s["usage"]["requests"] == 2
    assert r["ir"] == text.show(text.parse((ROOT / "examples" / "specs" / f"{name}.ir").read_text()))


def _check_regions(records: list[dict[str, Any]]) -> None:
    """Offsets inside the text and inside the function named (whatever labels the emitters use)."""
    for r in records:
        for c in r["candidates"]:
            fns = {f["name"]: f for f in c["functions"]}
            assert set(r["functions"]) <= set(fns) and any(f["kind"] == "global" for f in fns.values())
            for reg in c["regions"]:
                assert reg["label"] in regions.LABELS and 0 <= reg["start"] <= reg["end"] <= len(c["cuda"])
                if reg["function"] is not None:
                    f = fns[reg["function"]]
                    assert f["start"] <= reg["start"] <= reg["end"] <= f["end"]


def _check_reemitted(r: dict[str, Any]) -> None:
    """The recorded spans are exactly cuda.emit_regions' for the recorded lowered IR and options."""
    from passes import tile
    from transpile import cuda
    from transpile.ir import text

    for c in r["candidates"]:
        o = c["options"]
        tiling = tile.Options(tile=tuple(o["tile"]), coarsen=tuple(o["coarsen"]), shared=o["shared"],
                              enabled=o["tiled"], mma=o["mma"])
        cu, spans = cuda.emit_regions(text.parse(c["ir"]), source=r["source"]["name"], tiling=tiling)
        assert cu == c["cuda"]
        assert [s.as_dict() for s in spans] == [{k: v for k, v in reg.items() if k != "function"}
                                               for reg in c["regions"]]


# ---------------------------------------------------------------------------
# Schema and loader


@pytest.fixture(scope="module")
def small() -> dict[str, Any]:
    """A real record, cheaply: one .ir input, stages (a)-(b)."""
    rec = dataset.record_for(str(ROOT / "examples" / "specs" / "gemm.ir"), seed=3, stages="ab",
                             candidates=["default", "naive", "tile:64x64"])
    assert dataset.problems(rec) == [], dataset.problems(rec)
    return rec


def test_schema_is_valid_and_matches_the_code(small: dict[str, Any]) -> None:
    from jsonschema import Draft202012Validator

    schema = dataset.schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$defs"]["region"]["properties"]["label"]["enum"] == list(regions.LABELS)
    assert schema["properties"]["schema_version"]["const"] == dataset.SCHEMA_VERSION
    names = re.compile(schema["$defs"]["candidate"]["properties"]["name"]["pattern"])
    for n in (*dataset.FIXED_CANDIDATES, "tile:32x32", "tile:32x64:2x4"):
        assert names.fullmatch(n) and dataset.parse_candidates(n)[0].name == n


def test_small_record(small: dict[str, Any]) -> None:
    assert small["kind"] == "ir" and small["functions"] == ["gemm"] and small["spec"] is None
    default, naive, same = small["candidates"]
    assert same["same_as"] == "default" and same["cuda"] == default["cuda"]  # the default options, spelled out
    assert same["verify"] == default["verify"]
    assert naive["same_as"] is None and naive["options"]["naive"] and naive["cuda"] != default["cuda"]
    assert default["verify"]["verdict"] == "unverified" and not small["ok"]  # (c) not attempted: not verified
    assert default["verify"]["reports"][0]["stages"]["b"]["status"] == "pass"
    json.dumps(small, allow_nan=False)


def _broken(rec: dict[str, Any], how: str) -> dict[str, Any]:
    bad = json.loads(json.dumps(rec))
    cand = bad["candidates"][0]
    if how == "label":
        cand["regions"].append({"label": "loop", "start": 0, "end": 1, "function": None})
    elif how == "offset":
        cand["regions"].append({"label": "guard", "start": 0, "end": len(cand["cuda"]) + 1, "function": None})
    elif how == "reversed":
        cand["regions"].append({"label": "guard", "start": 5, "end": 4, "function": None})
    elif how == "function":
        cand["regions"].append({"label": "guard", "start": 0, "end": 1, "function": "nowhere"})
    elif how == "verified":
        cand["verified"] = True
    elif how == "missing":
        del bad["source"]
    elif how == "extra":
        bad["extra"] = 1
    elif how == "kind":
        bad["kind"] = "cuda"
    elif how == "spec":
        bad["spec"] = {"text": "x", "model": None, "rounds": {}, "crosscheck": "", "usage": None}
    return bad


@pytest.mark.sample(2)
@pytest.mark.parametrize("how", ["label", "offset", "reversed", "function", "verified", "missing", "extra",
                                 "kind", "spec"])
def test_broken_record_rejected(small: dict[str, Any], how: str) -> None:
    assert dataset.problems(_broken(small, how))


def test_loader_names_the_bad_line(small: dict[str, Any], tmp_path: Path) -> None:
    second = {**small, "id": "ir:other"}
    path = tmp_path / "d.jsonl"
    lines = [json.dumps(small), "", json.dumps(second), json.dumps(_broken({**small, "id": "ir:third"}, "offset"))]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(dataset.DatasetError) as e:
        dataset.load(path)
    assert str(e.value).startswith(f"{path}:4:1: error: invalid record 'ir:third': candidates/0/regions/")
    assert len(dataset.load(path, validate=False)) == 3
    path.write_text(json.dumps(small) + "\n{not json\n")
    with pytest.raises(dataset.DatasetError, match=rf"^{re.escape(str(path))}:2:2: error: not a JSON value"):
        dataset.load(path)
    path.write_text(json.dumps(small) + "\n" + json.dumps(small) + "\n")
    with pytest.raises(dataset.DatasetError, match=r":2:1: error: .*repeats the record on line 1"):
        dataset.load(path)


def test_function_extents_skip_comments_and_strings() -> None:
    cu = ('// a { brace in a comment\n#define X {\nstatic void h(const char *s = "}{") { if (1) { } }\n'
          '__global__ void __launch_bounds__(256) k_kernel0(int n) {\n  /* } */ }\n'
          'struct S { int a; };\n__host__ __device__ static inline int f(int x) { return x; }\n')
    fns = dataset.function_extents(cu)
    assert [(f["name"], f["kind"]) for f in fns] == [("h", "host"), ("k_kernel0", "global"), ("f", "host-device")]
    assert cu[fns[1]["start"]:fns[1]["end"]].startswith("__global__") and cu[fns[1]["end"] - 1] == "}"


def test_parse_candidates_rejects_bad_names() -> None:
    for bad in ("fast", "tile:0x4", "tile:64x64:3x4", "default,default", ""):
        with pytest.raises(ValueError):
            dataset.parse_candidates(bad)


# ---------------------------------------------------------------------------
# The command line


def test_cli_failure_leaves_no_file(tmp_path: Path) -> None:
    out = tmp_path / "d.jsonl"
    missing = transpile("dataset", "no/such.c", "-o", str(out))
    assert missing.returncode == 1 and LOCATED.match(missing.stderr) and "Traceback" not in missing.stderr
    out.write_text("old\n")  # a failed export keeps the previous file whole
    bad = sorted((ROOT / "tests" / "bad").glob("*.c"))[:2]
    proc = transpile("dataset", *map(str, bad), "-o", str(out), "--stages", "a")
    assert proc.returncode == 1, proc.stderr
    assert "nothing exported" in proc.stderr and "Traceback" not in proc.stderr
    assert re.search(r"^\S+address_of\.c:5:\d+: error: ", proc.stderr, re.M), proc.stderr
    assert out.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["d.jsonl"], "temp file left"
    usage = transpile("dataset", str(bad[0]), "-o", str(out), "--candidates", "fastest")
    assert usage.returncode == 2 and "--candidates" in usage.stderr


def test_cli_records_a_failing_file_and_goes_on(tmp_path: Path) -> None:
    out = tmp_path / "d.jsonl"
    bad = ROOT / "tests" / "bad" / "address_of.c"
    proc = transpile("dataset", str(bad), "examples/specs/saxpy.ir", "examples/specs/dot.txt", "examples/gemm.c",
                     "tests/kernels/gemm.c", "examples/gemm.c", "-o", str(out), "--stages", "a", "--jobs", "2",
                     env={"OPENAI_BASE_URL": "", "TRANSPILE_MODEL": ""})
    assert proc.returncode == 0, proc.stderr
    recs = dataset.load(out)  # in input order, a file named twice exported once, ids unique
    assert [r["id"] for r in recs] == ["c:address_of", "ir:saxpy", "spec:dot", "c:gemm", "c:gemm~2"]
    front = recs[0]["errors"]
    assert [e["stage"] for e in front] == ["front-end"] and front[0]["location"].endswith("address_of.c:5:14")
    assert recs[0]["candidates"] == [] and recs[1]["candidates"][0]["cuda"]
    assert recs[2]["errors"][0]["stage"] == "llm" and "no LLM endpoint" in recs[2]["errors"][0]["message"]
    assert recs[2]["spec"]["text"] == (ROOT / "examples" / "specs" / "dot.txt").read_text()
    assert "address_of.c:5:14: error: taking an address" in proc.stderr


def test_timeout_gives_an_error_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file whose task runs past --timeout is killed and recorded; the others are exported."""
    import time

    from transpile.cli import dataset as datasetcmd

    real = dataset.record_for

    def slow(path: str, **kw: Any) -> dict[str, Any]:
        if path.endswith("dot.ir"):
            time.sleep(60)
        return real(path, **kw)

    monkeypatch.setattr(dataset, "record_for", slow)  # the forked task children inherit it
    files = [ROOT / "examples" / "specs" / n for n in ("dot.ir", "saxpy.ir")]
    recs = datasetcmd.export(files, args={"candidates": ["default"], "seed": 1, "stages": "a"}, jobs=2,
                             timeout=3.0)
    assert [r["id"] for r in recs] == ["ir:dot", "ir:saxpy"]
    assert recs[0]["errors"][0]["stage"] == "export" and recs[0]["errors"][0]["message"].startswith("timeout")
    assert recs[1]["candidates"][0]["cuda"] and recs[1]["errors"] == []


def test_source_paths_are_relative_to_the_inputs(tmp_path: Path) -> None:
    """Absolute inputs outside the current directory are recorded relative to the input's directory."""
    sub = tmp_path / "specs"
    sub.mkdir()
    (sub / "saxpy.ir").write_text((ROOT / "examples" / "specs" / "saxpy.ir").read_text())
    out = tmp_path / "d.jsonl"
    for args, want in (([str(sub)], "specs/saxpy.ir"), ([str(sub / "saxpy.ir")], "saxpy.ir"),
                       ([str(sub), "--absolute-paths"], str((sub / "saxpy.ir").resolve())),
                       (["examples/specs/saxpy.ir"], "examples/specs/saxpy.ir")):
        proc = transpile("dataset", *args, "-o", str(out), "--stages", "a")
        assert proc.returncode == 0, proc.stderr
        (rec,) = dataset.load(out)
        assert rec["source"]["path"] == want
