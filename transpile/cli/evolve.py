"""``transpile evolve FILES... -o DIR``: schedule searches for several files under one time budget.

Every file gets its own :class:`transpile.search.evolve.Search`.
:func:`transpile.search.evolve.search_many` runs them round by round. A search stops
by its own rules: near its roofline after generation 0, nothing passing,
converged, or out of rounds. The budget it leaves goes to the files still
searching, so the time goes to the kernels in between.

Each file's chosen CUDA is written atomically as ``DIR/STEM.cu``. A file that
fails (front-end error, nothing verified) gets a ``file:line:col: error:``
line and no output, the others are still written, and the exit status is 1.
Cached choices are reused, and their output is verified again, as
``transpile FILE --evolve`` does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from transpile.diagnostics import TranspileError


@click.command("evolve")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--out-dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for the chosen CUDA, one STEM.cu per file.")
@click.option("--rounds", type=click.IntRange(1, 50), default=4, show_default=True,
              help="Generations per file at most.")
@click.option("--time", "time_budget", type=click.FloatRange(1.0), default=1800.0, show_default=True,
              help="Seconds for all the files together.")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--size", "sizes", multiple=True, metavar="N=V",
              help="Size parameter value to price or time at (applies to every file that has N).")
@click.option("--measure", type=click.Choice(["auto", "model", "gpu"]), default="auto", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON line per file on stdout instead of the table.")
def evolve_cmd(files: tuple[Path, ...], out_dir: Path, rounds: int, time_budget: float, seed: int,
               sizes: tuple[str, ...], measure: str, as_json: bool) -> None:
    """Search schedules for FILES under one shared time budget; write OUT_DIR/STEM.cu for each."""
    from transpile.guard import guard as _guard

    _guard(lambda: _run(files, out_dir, rounds, time_budget, seed, sizes, measure, as_json))


def _run(files: tuple[Path, ...], out_dir: Path, rounds: int, time_budget: float, seed: int,
         sizes: tuple[str, ...], measure: str, as_json: bool) -> None:
    from transpile import driver
    from transpile.cli import write_atomic
    from transpile.search import evolve
    from transpile.verify.cli import parse_sizes

    stems = [f.stem for f in files]
    twice = sorted({s for s in stems if stems.count(s) > 1})
    if twice:
        raise TranspileError(None, f"two inputs would both write {twice[0]}.cu; rename one")
    measure = evolve.resolve_measure(measure)
    extra = parse_sizes(sizes)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TranspileError(None, f"cannot create '{out_dir}': {e.strerror}") from None
    cache = evolve.Cache()
    results: dict[Path, dict[str, Any]] = {}
    searches: dict[Path, tuple[Any, Any, str, Any]] = {}
    for f in files:
        try:
            module = driver.load(f)  # the front end and the checks every compile makes
            settings = evolve.Settings(rounds=rounds, seed=seed, measure=measure,
                                       sizes={**evolve.default_sizes(module),
                                              **{k: v for k, v in extra.items() if _has_param(module, k)}})
            device = evolve.device_name(settings)
            key = evolve.Cache.key(module, settings, device)
            hit = evolve.cached(cache, key, module, f, settings)
            if hit is not None:
                _verify_warn(module, hit.lowered, hit.text, f)
                results[f] = {"outcome": hit}
                continue
            check = evolve.verify_candidate(f, gpu=measure == "gpu", sizes=settings.sizes, seed=seed)
            searches[f] = (evolve.Search(module, f.name, check, settings), module, key, device)
        except TranspileError as e:
            results[f] = {"error": str(e)}
    evolve.search_many([s for s, _, _, _ in searches.values()], time_budget=time_budget)
    for f, (search, module, key, device) in searches.items():
        outcome = evolve.finish(search, cache, key, device)
        if outcome is None and (outcome := evolve.fallback(search)) is not None:
            try:
                _verify_warn(module, outcome.lowered, outcome.text, f)  # warns why
            except TranspileError as e:
                results[f] = {"error": str(e)}
                continue
        results[f] = ({"outcome": outcome, "search": search} if outcome is not None else
                      {"error": f"{f}: error: no candidate schedule passed verification ({search.stopped})"})
    failed = 0
    for f in files:
        r = results[f]
        dest = out_dir / f"{f.stem}.cu"
        if "error" in r:
            failed += 1
            line = {"file": str(f), "status": "error", "message": r["error"]}
            click.echo(r["error"], err=True)
        else:
            outcome, search = r["outcome"], r.get("search")
            write_atomic(dest, outcome.text)
            line = {"file": str(f), "status": "ok", "output": str(dest), "cache_hit": outcome.cache_hit,
                    "summary": outcome.summary,
                    "generations": search.generation if search else None,
                    "candidates": len(search.trials) if search else None,
                    "stopped": search.stopped if search else "cache hit"}
        if as_json:
            click.echo(json.dumps(line, sort_keys=True))
        elif "error" not in r:
            click.echo(f"{f}: {line['summary']}")
    if failed:
        sys.exit(1)


def _has_param(module: Any, name: str) -> bool:
    return any(p.name == name for k in module.kernels for p in k.params)


def _verify_warn(module: Any, lowered: Any, text: str, f: Path) -> None:
    """Verify a cached or fallback schedule's CUDA as the compile does, under the ``warn`` policy."""
    from transpile import driver
    from transpile.cli import _report

    opts = driver.Options(verify="warn")
    _report(driver.verify(module, lowered, text, f, opts), policy="warn",
            replay=f"replay: transpile verify OUT.cu --against {f.name} --quick")
