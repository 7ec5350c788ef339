"""The dataset: one JSON record per input (C, ``.ir`` text or spec), and the loader.

:func:`record_for` compiles one input the way ``transpile FILE`` does (front
end, :func:`transpile.pipeline.lower`, :func:`transpile.cuda.emit_regions`,
:func:`transpile.verify.verify_module`) once per *candidate* schedule, and
returns the record: source, IR, each candidate's CUDA with the region spans
the emitters marked (:mod:`transpile.cuda.regions`), the verifier's record, the
inputs it used, and the errors met on the way.  A failure is recorded, never
raised, so one bad file cannot end an export; it is a module-level function
of JSON-able arguments so that :mod:`transpile.search.evaluate` can run it as a task
in another process (``transpile dataset --jobs N``, :mod:`transpile.cli.dataset`).

:func:`load` reads a ``.jsonl`` file back, validating every line against the
JSON Schema shipped in ``transpile/schemas/dataset.schema.json`` and against
the checks a schema cannot express (:func:`problems`).  The format is
documented in docs/dataset.md.
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
import re
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cache
from pathlib import Path
from typing import Any

from transpile import __version__, ir, toolchain
from transpile.cuda import regions
from transpile.diagnostics import Loc, TranspileError

SCHEMA_VERSION = 1
KINDS = {".c": "c", ".ir": "ir", ".txt": "spec"}
"""Input suffix -> record kind."""
DEFAULT_CANDIDATES = ("default", "naive")
VERIFY_MODE = "quick"
"""The verifier's mode for every candidate: the compile command's small shapes (docs/verify.md)."""

Record = dict[str, Any]


# ---------------------------------------------------------------------------
# Candidates


@dataclass(frozen=True)
class Candidate:
    """One schedule to emit: the pipeline's and the tiling pass's own options."""

    name: str
    naive: bool = False
    reassociate: bool = True
    tile: tuple[int, int] | None = None
    coarsen: tuple[int, int] | None = None
    shared: bool = True
    mma: bool = True

    def tiling(self) -> Any:
        """The :class:`passes.tile.Options` of this candidate, built as the compile command builds them."""
        import dataclasses

        from transpile.search.evolve import Schedule

        # The same schedule --evolve would name (no reassociation means no tensor cores either).
        d = Schedule()
        sched = Schedule(tile=self.tile or d.tile, coarsen=self.coarsen or d.coarsen, shared=self.shared,
                         mma=self.mma, reassociate=self.reassociate)
        return dataclasses.replace(sched.options(), enabled=not self.naive)

    def options(self) -> dict[str, Any]:
        """The options as recorded (``candidates[].options``)."""
        t = self.tiling()
        return {"naive": self.naive, "reassociate": self.reassociate, "tiled": t.enabled,
                "tile": list(t.tile), "coarsen": list(t.coarsen), "shared": t.shared, "mma": t.mma}


FIXED_CANDIDATES: dict[str, Candidate] = {
    "default": Candidate("default"),
    "naive": Candidate("naive", naive=True),
    "no-shared": Candidate("no-shared", shared=False),
    "no-reassociate": Candidate("no-reassociate", reassociate=False),
    "no-mma": Candidate("no-mma", mma=False),
}
"""The named candidates (``tile:BMxBN[:TMxTN]`` are parsed); the schema's name pattern lists the same."""


def parse_candidates(names: str | Sequence[str]) -> list[Candidate]:
    """Candidates from ``default,naive,no-shared,no-mma,no-reassociate,tile:BMxBN[:TMxTN]``; ValueError if bad."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",")]
    out: list[Candidate] = []
    for name in names:
        if not name:
            continue
        cand = FIXED_CANDIDATES.get(name) or _tile_candidate(name)
        if cand.name in (c.name for c in out):
            raise ValueError(f"candidate {name!r} given twice")
        out.append(cand)
    if not out:
        raise ValueError("no candidates given")
    return out


def _tile_candidate(name: str) -> Candidate:
    m = re.fullmatch(r"tile:(\d+)x(\d+)(?::(\d+)x(\d+))?", name)
    if m is None:
        raise ValueError(f"unknown candidate {name!r} (expected {', '.join(FIXED_CANDIDATES)} or tile:BMxBN[:TMxTN])")
    coarsen = (int(m[3]), int(m[4])) if m[3] else None
    cand = Candidate(name, tile=(int(m[1]), int(m[2])), coarsen=coarsen)
    problem = cand.tiling().problem()
    if problem is not None:
        raise ValueError(f"candidate {name!r}: {problem}")
    return cand


# ---------------------------------------------------------------------------
# One record


def kind_of(path: Path) -> str | None:
    """The record kind of an input file, by suffix (None: not an input)."""
    return KINDS.get(path.suffix)


def record_for(path: str, *, candidates: Sequence[str] = DEFAULT_CANDIDATES, seed: int = 1,
               stages: str = "abcdef", include_dirs: Sequence[str] = (), defines: Sequence[str] = (),
               llm: dict[str, Any] | None = None) -> Record:
    """The record of one input file (see docs/dataset.md); failures are recorded in it, not raised
    (only a path without a dataset suffix is a ValueError).

    ``candidates`` are names for :func:`parse_candidates`; ``seed`` is the
    verifier's (and the LLM cross-check's); ``stages`` the verifier stages to
    attempt (``a`` always runs); ``llm`` the :class:`~transpile.llm.client.LLMConfig`
    fields for a spec (the API key comes from the environment).
    """
    t0 = time.perf_counter()
    p = Path(path)
    rec = skeleton(path, seed=seed)
    try:
        module = _front_end(p, rec, include_dirs=include_dirs, defines=defines, llm=llm or {}, seed=seed)
        if module is not None:
            rec["functions"] = [k.name for k in module.kernels]
            from transpile.ir import text

            rec["ir"] = text.show(module)
            _candidates(rec, module, p, parse_candidates(candidates), seed=seed, stages=stages,
                        include_dirs=include_dirs, defines=defines)
    except Exception as e:  # our bug: recorded for this file, the export goes on
        rec["errors"].append(_internal(e))
    rec["ok"] = any(c["verified"] for c in rec["candidates"])
    rec["seconds"] = round(time.perf_counter() - t0, 3)
    return rec


def skeleton(path: str, *, seed: int) -> Record:
    """A record with the source filled in and nothing compiled (also the error record's base)."""
    p = Path(path)
    kind = kind_of(p)
    if kind is None:  # the caller's mistake (the CLI filters inputs by suffix)
        raise ValueError(f"{path}: not a dataset input (expected {', '.join(KINDS)})")
    text: str | None = None
    errors: list[dict[str, Any]] = []
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        errors.append(error("read", f"{path}: cannot read: {getattr(e, 'strerror', None) or e}"))
    return {
        "schema_version": SCHEMA_VERSION,
        "id": f"{kind}:{p.stem}",
        "kind": kind,
        "source": {"path": str(path), "name": p.name, "text": text,
                   "sha256": hashlib.sha256(text.encode()).hexdigest() if text is not None else None},
        "functions": [],
        "ir": None,
        "spec": {"text": text, "model": None, "rounds": {}, "crosscheck": "", "usage": None} if kind == "spec" else None,
        "candidates": [],
        "inputs": {"seed": seed, "mode": VERIFY_MODE, "kernels": []},
        "errors": errors,
        "ok": False,
        "tool": tool_info(),
        "seconds": 0.0,
    }


def error_record(path: str, message: str, *, seed: int, stage: str = "export") -> Record:
    """The record of a file whose task failed as a whole (timeout, crashed worker)."""
    rec = skeleton(path, seed=seed)
    rec["errors"].append(error(stage, message))
    return rec


def error(stage: str, message: str, *, location: str | None = None, candidate: str | None = None) -> dict[str, Any]:
    """One ``errors[]`` entry."""
    return {"stage": stage, "candidate": candidate, "location": location, "message": message}


def _from_diagnostic(stage: str, e: TranspileError, candidate: str | None = None) -> dict[str, Any]:
    return error(stage, e.msg, location=str(e.loc) if e.loc is not None else None, candidate=candidate)


def _internal(e: BaseException, candidate: str | None = None) -> dict[str, Any]:
    tb = traceback.format_exception(type(e), e, e.__traceback__)
    return error("internal", f"internal compiler error: {type(e).__name__}: {e}\n{''.join(tb[-3:])}".strip(),
                 candidate=candidate)


def _front_end(p: Path, rec: Record, *, include_dirs: Sequence[str], defines: Sequence[str],
               llm: dict[str, Any], seed: int) -> ir.Module | None:
    """The front-end IR (None after a recorded failure)."""
    if rec["source"]["text"] is None:
        return None
    try:
        if rec["kind"] == "spec":
            return _spec_ir(p, rec, llm, seed)
        from transpile import driver

        # the front end and the checks every compile makes of its input
        return driver.load(p, driver.Options(include_dirs=tuple(include_dirs), defines=tuple(defines)))
    except TranspileError as e:
        rec["errors"].append(_from_diagnostic("llm" if rec["kind"] == "spec" else "front-end", e))
        return None


def _spec_ir(p: Path, rec: Record, llm: dict[str, Any], seed: int) -> ir.Module:
    """The agreed IR of a natural-language spec (the LLM conversations are summarised in ``spec``)."""
    from transpile.llm.client import LLMClient, LLMConfig
    from transpile.llm.fromtext import Result, agreed_ir, read_spec

    given = {k: v for k, v in llm.items() if v is not None}
    if given.get("log"):
        given["log"] = Path(given["log"])
    cfg = LLMConfig.from_env(**given)
    res = Result(ir.Module((), ()), "")
    rec["spec"]["model"] = cfg.model
    read_spec(p)  # the size and emptiness checks, before any request
    client = LLMClient(cfg)
    try:
        return agreed_ir(p, cfg, seed=seed, client=client, result=res)
    finally:
        u = client.usage
        rec["spec"].update(rounds=dict(res.rounds), crosscheck=res.crosscheck,
                           usage={"requests": u.requests, "prompt_tokens": u.prompt_tokens,
                                  "completion_tokens": u.completion_tokens})


def _candidates(rec: Record, module: ir.Module, p: Path, cands: list[Candidate], *, seed: int, stages: str,
                include_dirs: Sequence[str], defines: Sequence[str]) -> None:
    """Emit and verify every candidate into ``rec["candidates"]``; ``rec["inputs"]`` from the reports."""
    from transpile import cuda, pipeline
    from transpile.ir import text
    from transpile.verify import Options, verify_module

    # The verifier's reference: gcc for C, the interpreter on the (agreed) IR otherwise.
    reference = p if rec["kind"] == "c" else p.with_suffix(".ir")
    by_text: dict[str, Record] = {}
    shapes: dict[str, list[Any]] = {}
    for cand in cands:
        t0 = time.perf_counter()
        c: Record = {"name": cand.name, "options": cand.options(), "same_as": None, "ir": None, "cuda": None,
                     "functions": [], "regions": [], "verify": {"verdict": "not run", "reports": []},
                     "verified": False, "error": None, "seconds": 0.0}
        rec["candidates"].append(c)
        try:
            lowered = pipeline.lower(module, naive=cand.naive, reassociate=cand.reassociate)
            c["ir"] = text.show(lowered)
            cu, spans = cuda.emit_regions(lowered, source=p.name, tiling=cand.tiling())
            c["cuda"] = cu
            c["functions"] = function_extents(cu)
            c["regions"] = [{**s.as_dict(), "function": _enclosing(c["functions"], s.start)} for s in spans]
            same = by_text.get(cu)
            if same is not None:  # the schedule changed nothing: do not verify the same text twice
                c["same_as"], c["verify"], c["verified"] = same["name"], same["verify"], same["verified"]
            else:
                by_text[cu] = c
                opts = Options(seed=seed, mode=VERIFY_MODE, stages="a" + stages.replace("a", ""),
                               full_seeds=1, sanitizer=False)
                reports = verify_module(module, cu, source=reference, lowered=lowered, include_dirs=include_dirs,
                                        defines=defines, options=opts)
                c["verify"] = _verify_record(reports, len(module.kernels))
                c["verified"] = c["verify"]["verdict"] == "pass"
                for r in c["verify"]["reports"]:
                    if r["shapes"] and r["kernel"] not in shapes:
                        shapes[r["kernel"]] = r["shapes"]
        except TranspileError as e:
            c["error"] = e.headline
            rec["errors"].append(_from_diagnostic("compile", e, cand.name))
        except Exception as e:  # our bug, in one candidate: the others still run
            entry = _internal(e, cand.name)
            c["error"] = entry["message"].splitlines()[0]
            rec["errors"].append(entry)
        c["seconds"] = round(time.perf_counter() - t0, 3)
    rec["inputs"]["kernels"] = [{"kernel": k, "shapes": shapes[k]} for k in rec["functions"] if k in shapes]


def _verify_record(reports: list[Any], kernels: int) -> Record:
    """``candidates[].verify``: the overall verdict and each kernel's report (``Report.to_json``)."""
    # Through dumps: numpy scalars become plain numbers; then NaN/inf (not JSON) become null.
    as_json = [_finite(json.loads(r.dumps())) for r in reports]
    verdicts = [r["verdict"] for r in as_json]
    bad = [v for v in verdicts if v != "pass"]
    if bad:
        verdict = bad[0]
    elif len(verdicts) < kernels:
        verdict = "fail"  # the verifier stops after a failing kernel; cannot happen without one
    else:
        verdict = "pass"
    return {"verdict": verdict, "reports": as_json}


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by None (strict JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def tool_info() -> dict[str, Any]:
    """``tool``: what made the record, and when."""
    return {"name": "transpile", "version": __version__, "nvcc": toolchain.nvcc_version(),
            "python": platform.python_version(),
            "date": datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")}


# ---------------------------------------------------------------------------
# Functions of the emitted text

_SKIP = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|^[ \t]*#[^\n]*', re.S | re.M)
_DECOR = re.compile(r"__launch_bounds__\s*\([^)]*\)|__attribute__\s*\(\(.*?\)\)|\[\[.*?\]\]", re.S)


def function_extents(cu: str) -> list[dict[str, Any]]:
    """The top-level function definitions of emitted CUDA: name, kind, ``[start, end)`` offsets.

    A brace scan of our own output (comments, strings and preprocessor lines
    skipped): a definition runs from the first character of its header to its
    closing brace.  Regions are attributed to the function that contains them.
    """
    blank = _SKIP.sub(lambda m: " " * len(m[0]), cu)  # same offsets, nothing that can hide a brace
    out: list[dict[str, Any]] = []
    depth, head, opened = 0, 0, 0
    for m in re.finditer(r"[{};]", blank):
        ch = m[0]
        if ch == "{":
            if depth == 0:
                opened = m.start()
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                fn = _function(blank, head, opened, m.end())
                if fn is not None:
                    out.append(fn)
                head = m.end()
        elif ch == ";" and depth == 0:
            head = m.end()
    return out


def _function(blank: str, head: int, opened: int, end: int) -> dict[str, Any] | None:
    header = blank[head:opened]
    name = re.search(r"([A-Za-z_]\w*)\s*\(", _DECOR.sub(lambda m: " " * len(m[0]), header))
    if name is None:
        return None
    words = set(re.findall(r"\w+", header[:name.start()]))
    kind = ("global" if "__global__" in words else "host-device" if {"__host__", "__device__"} <= words
            else "device" if "__device__" in words else "host")
    start = head + len(header) - len(header.lstrip())
    return {"name": name[1], "kind": kind, "start": start, "end": end}


def _enclosing(functions: list[dict[str, Any]], offset: int) -> str | None:
    return next((f["name"] for f in functions if f["start"] <= offset < f["end"]), None)


# ---------------------------------------------------------------------------
# Loading and validation


class DatasetError(TranspileError):
    """A dataset file that is not what docs/dataset.md describes (``file:line:col: error: ...``)."""


@cache
def schema() -> dict[str, Any]:
    """The record schema (JSON Schema draft 2020-12), shipped with the package."""
    from importlib.resources import files

    return json.loads((files("transpile") / "schemas" / "dataset.schema.json").read_text())


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(schema())
    return Draft202012Validator(schema())


def problems(record: Any) -> list[str]:
    """Why ``record`` is not a valid record: schema violations, then the checks a schema cannot make."""
    found = [f"{'/'.join(str(x) for x in e.absolute_path) or '(record)'}: {e.message}"
             for e in sorted(_validator().iter_errors(record), key=lambda e: list(map(str, e.absolute_path)))]
    return found or _semantic(record)


def _semantic(rec: Record) -> list[str]:
    out: list[str] = []
    if (rec["kind"] == "spec") != (rec["spec"] is not None):
        out.append(f"spec: must be {'an object' if rec['kind'] == 'spec' else 'null'} for kind {rec['kind']!r}")
    names: list[str] = []
    for n, c in enumerate(rec["candidates"]):
        where = f"candidates/{n}"
        if c["name"] in names:
            out.append(f"{where}: duplicate candidate name")
        if c["same_as"] is not None and c["same_as"] not in names:
            out.append(f"{where}: same_as names no earlier candidate: {c['same_as']!r}")
        names.append(c["name"])
        if c["verified"] != (c["verify"]["verdict"] == "pass"):
            out.append(f"{where}: verified is {c['verified']} but the verdict is {c['verify']['verdict']!r}")
        cu = c["cuda"]
        if cu is None:
            if c["verified"] or c["regions"] or c["functions"]:
                out.append(f"{where}: no cuda, yet verified, regions or functions are given")
            continue
        fns = {f["name"]: f for f in c["functions"]}
        for m, f in enumerate(c["functions"]):
            if not 0 <= f["start"] <= f["end"] <= len(cu):
                out.append(f"{where}/functions/{m}: {f['name']} [{f['start']}, {f['end']}) is outside the cuda "
                           f"text ({len(cu)} characters) or reversed")
        for m, r in enumerate(c["regions"]):
            span = f"{where}/regions/{m}: {r['label']} [{r['start']}, {r['end']})"
            if r["label"] not in regions.LABELS:
                out.append(f"{span} has an unknown label (known: {', '.join(regions.LABELS)})")
            if not 0 <= r["start"] <= r["end"] <= len(cu):
                out.append(f"{span} is outside the cuda text ({len(cu)} characters) or reversed")
            fn = fns.get(r["function"]) if r["function"] is not None else None
            if r["function"] is not None and (fn is None or not fn["start"] <= r["start"] <= r["end"] <= fn["end"]):
                out.append(f"{span} is not inside a function named {r['function']!r}")
    if rec["ok"] != any(c["verified"] for c in rec["candidates"]):
        out.append(f"ok is {rec['ok']} but {'some' if not rec['ok'] else 'no'} candidate is verified")
    return out


def load(path: str | Path, *, validate: bool = True) -> list[Record]:
    """The records of a dataset file (JSON Lines; blank lines skipped).

    With ``validate``, each record is checked (:func:`problems`) and ids must be
    unique; the first bad line raises :class:`DatasetError` located at it.
    """
    p = Path(path)
    try:
        lines = p.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(None, f"{p}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    records: list[Record] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise DatasetError(Loc(str(p), lineno, e.colno), f"not a JSON value: {e.msg}") from None
        if validate:
            found = problems(rec)
            if not found and rec["id"] in seen:
                found = [f"id {rec['id']!r} repeats the record on line {seen[rec['id']]}"]
            if found:
                ident = rec.get("id") if isinstance(rec, dict) else None
                more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
                raise DatasetError(Loc(str(p), lineno, 1),
                                   f"invalid record{f' {ident!r}' if isinstance(ident, str) else ''}: "
                                   f"{found[0]}{more}")
            seen[rec["id"]] = lineno
        records.append(rec)
    return records
