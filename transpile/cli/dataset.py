"""``transpile dataset PATHS... -o data.jsonl``: export one record per input (docs/dataset.md).

A directory stands for its ``*.c``, ``*.ir`` and ``*.txt`` files (sorted, not
recursive).  Each file becomes one task, :func:`transpile.search.dataset.record_for`, run
through :func:`transpile.search.evaluate.run_tasks`: in its own process (``--jobs N``
at a time, or on Ray), killed at ``--timeout``.
A file that fails gets a record with its errors (and a diagnostic on stderr)
instead of ending the export; exit status 1, with no output file, only when
no record has any CUDA.  The output is written atomically, in input order.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import click

from transpile.diagnostics import TranspileError
from transpile.llm.options import llm_options
from transpile.search import dataset

TASK = "transpile.search.dataset:record_for"


def expand(paths: Sequence[Path]) -> list[Path]:
    """The input files: files as given, directories as their ``*.c``/``*.ir``/``*.txt`` (sorted); no repeats."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if f.is_file() and dataset.kind_of(f) is not None)
            if not found:
                raise TranspileError(None, f"{p}: directory holds no .c, .ir or .txt file")
            out += found
        elif not p.exists():
            raise TranspileError(None, f"{p}: no such file or directory")
        elif dataset.kind_of(p) is None:
            raise TranspileError(None, f"{p}: unknown input kind '{p.suffix}' (expected .c, .ir or .txt)")
        else:
            out.append(p)
    unique: dict[Path, Path] = {}
    for f in out:
        unique.setdefault(f.resolve(), f)
    return list(unique.values())


def shown(files: Sequence[Path], given: Sequence[Path], *, absolute: bool = False) -> list[str]:
    """The ``source.path`` of each file's record: relative to the current directory when the file is
    under it, else to the directory holding the input it came from (a directory ``/x/kernels`` gives
    ``kernels/gemm.c``, a file ``/x/k.c`` gives ``k.c``), so a dataset does not carry the machine's
    absolute paths; ``absolute``: the resolved path."""
    cwd = Path.cwd().resolve()
    anchors = [g.resolve().parent for g in given]
    out = []
    for f in files:
        full = f.resolve()
        if absolute:
            out.append(str(full))
            continue
        if full.is_relative_to(cwd):
            out.append(str(full.relative_to(cwd)))
            continue
        anchor = next((a for a in anchors if full.is_relative_to(a)), full.parent)
        out.append(str(full.relative_to(anchor)))
    return out


def export(files: Sequence[Path], *, args: dict[str, Any], jobs: int = 1, backend: str = "local",
           address: str | None = None, timeout: float = 600.0,
           progress: Callable[[int, int, dict[str, Any]], None] | None = None,
           paths: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The records of ``files``, in their order; ``args`` are :func:`~transpile.search.dataset.record_for`'s keywords;
    ``paths``: each record's ``source.path`` (:func:`shown`; default: the file as given)."""
    seed = int(args["seed"])
    _preload(specs=args.get("llm") is not None)
    records: list[dict[str, Any] | None] = [None] * len(files)
    done = 0
    for index, rec in _run(files, args, jobs=jobs, backend=backend, address=address, timeout=timeout):
        found = dataset.problems(rec)
        if found:  # our bug: keep the export valid, and say so
            rec = dataset.error_record(str(files[index]), f"internal error: invalid record: {found[0]}",
                                       seed=seed, stage="internal")
        if paths is not None:
            rec["source"]["path"] = paths[index]
        records[index] = rec
        done += 1
        if progress is not None:
            progress(done, len(files), rec)
    out = [r for r in records if r is not None]
    _unique_ids(out)
    return out


def _preload(*, specs: bool) -> None:
    """Do here, before any task is forked, what would otherwise happen in this process during the run.

    The local backend forks each task from a worker thread while this thread goes on; a module this
    thread is importing at that moment stays locked in the child forever (a deadlock in the child the
    first time it imports that module).  So every import this thread needs later (the schema
    validator) happens now, and so do the record's own imports, which the children then inherit
    instead of each importing them again; nvcc's version is asked once, too.
    """
    import numpy  # noqa: F401  # the verifier's

    from transpile import cuda, frontend, pipeline, verify  # noqa: F401  # record_for's
    from transpile.ir import text  # noqa: F401  # record_for's

    if specs:
        from transpile.llm import client, fromtext  # noqa: F401
        try:
            import openai  # noqa: F401  # the client's (its absence is each spec's recorded error)
        except ImportError:
            pass

    dataset.problems({})  # jsonschema imported and the validator built (the answer is a schema error)
    dataset.tool_info()


def _run(files: Sequence[Path], args: dict[str, Any], *, jobs: int, backend: str, address: str | None,
         timeout: float) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, record) in completion order; every file in its own process (:mod:`transpile.search.evaluate`)."""
    from transpile.search import evaluate

    if backend == "ray":
        evaluate.import_ray()  # the clear error before any work
    # Ray workers need not share our working directory: give them absolute paths (the record keeps
    # the path as given, below).
    where = [str(f.resolve()) if backend == "ray" else str(f) for f in files]
    tasks = [evaluate.Task(key=str(i), fn=TASK, args={"path": w, **args}) for i, w in enumerate(where)]
    gpu = bool(set(args["stages"]) & set("def"))  # GPU tasks take turns on a GPU (evaluate's scheduling)
    for o in evaluate.run_tasks(tasks, jobs=jobs, timeout=timeout, backend=backend, address=address, gpu=gpu):
        i = int(o.key)
        if o.ok:
            o.value["source"]["path"] = str(files[i])
            yield i, o.value
        else:
            why = (o.error or o.status).splitlines()[0]
            yield i, dataset.error_record(str(files[i]), f"{o.status}: {why}", seed=int(args["seed"]))


def _unique_ids(records: list[dict[str, Any]]) -> None:
    """``KIND:STEM`` ids made unique by a ``~N`` suffix on repeats (same stem in two directories)."""
    seen: dict[str, int] = {}
    for r in records:
        base = r["id"]
        n = seen.get(base, 0) + 1
        seen[base] = n
        if n > 1:
            r["id"] = f"{base}~{n}"


def _llm_args(llm: dict[str, Any]) -> dict[str, Any]:
    """The LLM configuration as JSON-able task arguments (never the API key: workers read it from the environment)."""
    from transpile.llm.options import config

    cfg = config(llm)
    out = {f.name: getattr(cfg, f.name) for f in fields(cfg) if f.name != "api_key"}
    out["log"] = str(out["log"]) if out["log"] is not None else None
    return out


def _report(done: int, total: int, rec: dict[str, Any]) -> None:
    """One progress line per file on stderr, then its errors as diagnostics."""
    cands = rec["candidates"]
    ok = sum(c["verified"] for c in cands)
    click.echo(f"transpile: dataset: [{done}/{total}] {rec['source']['path']}: {ok}/{len(cands)} candidate(s) "
               f"verified ({rec['seconds']:.1f} s)", err=True)
    for e in rec["errors"]:
        where = e["location"] or rec["source"]["path"]
        cand = f" [{e['candidate']}]" if e["candidate"] else ""
        click.echo(f"{where}: error:{cand} {e['message'].splitlines()[0]}", err=True)


@click.command("dataset")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", required=True, type=str, metavar="FILE", help="The JSON Lines file to write ('-' for stdout).")
@click.option("--candidates", default=",".join(dataset.DEFAULT_CANDIDATES), show_default=True, metavar="LIST",
              help=f"Schedules to emit per input: {', '.join(dataset.FIXED_CANDIDATES)}, tile:BMxBN[:TMxTN].")
@click.option("--seed", type=click.IntRange(0), default=None,
              help="The verifier's seed for every record (default: a fresh one, recorded).")
@click.option("--stages", default="abcdef", show_default=True, metavar="KEYS",
              help="Verifier stages to attempt (a is always run; d-f need a GPU).")
@click.option("-j", "--jobs", type=click.IntRange(1), default=1, show_default=True,
              help="Files exported in parallel, each in its own process.")
@click.option("--backend", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="Where the tasks run: local processes, or a Ray cluster.")
@click.option("--address", default=None, metavar="ADDR", help="The Ray cluster's address (--backend ray).")
@click.option("--timeout", type=click.FloatRange(1.0), default=600.0, show_default=True,
              help="Seconds per file; a file still running is stopped and gets an error record.")
@click.option("-I", "include_dirs", multiple=True, metavar="DIR", help="Include path for C inputs.")
@click.option("-D", "defines", multiple=True, metavar="NAME[=VALUE]", help="Macro for C inputs.")
@click.option("--absolute-paths", is_flag=True,
              help="Record each source's absolute path (default: relative to the current directory, or to "
                   "the input's directory for files outside it).")
@llm_options
def dataset_cmd(paths: tuple[Path, ...], output: str, candidates: str, seed: int | None, stages: str, jobs: int,
                backend: str, address: str | None, timeout: float, include_dirs: tuple[str, ...],
                defines: tuple[str, ...], absolute_paths: bool = False, **llm: Any) -> None:
    """Export a dataset: for each input under PATHS (.c, .ir, or a .txt spec through the LLM), one JSON
    record with the source, the IR, the CUDA of each candidate schedule with its labelled region
    spans, and the verifier's record (docs/dataset.md; read back with transpile.search.dataset.load)."""
    from transpile import cli

    try:
        names = [c.name for c in dataset.parse_candidates(candidates)]
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="'--candidates'") from None
    if set(stages) - set("abcdef"):
        raise click.BadParameter(f"stage keys are a-f, not {stages!r}", param_hint="'--stages'")

    def action() -> None:
        from transpile.verify.stages import new_seed

        files = expand(paths)
        if output != "-" and not Path(output).resolve().parent.is_dir():  # before the long part, not after
            raise TranspileError(None, f"cannot write '{output}': no such directory")
        args = {"candidates": names, "seed": seed if seed is not None else new_seed(), "stages": stages,
                "include_dirs": list(include_dirs), "defines": list(defines),
                "llm": _llm_args(llm) if any(dataset.kind_of(f) == "spec" for f in files) else None}
        records = export(files, args=args, jobs=jobs, backend=backend, address=address, timeout=timeout,
                         progress=_report, paths=shown(files, paths, absolute=absolute_paths))
        exported = [r for r in records if any(c["cuda"] is not None for c in r["candidates"])]
        verified = sum(r["ok"] for r in records)
        click.echo(f"transpile: dataset: {len(records)} record(s), {len(exported)} with CUDA, {verified} with a "
                   f"verified candidate, {len(records) - len(exported)} failed (seed {args['seed']})", err=True)
        if not exported:
            raise TranspileError(None, f"nothing exported: all {len(records)} input(s) failed")
        text = "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in records)
        if output == "-":
            sys.stdout.write(text)
        else:
            cli.write_atomic(Path(output), text)

    cli._guard(action)
