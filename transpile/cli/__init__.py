"""The ``transpile`` command line.

``transpile FILE.c -o OUT.cu`` compiles; subcommands come later
(``verify``, ``deps``).  Every user-facing failure is printed as a gcc-style
``file:line:col: error: ...`` line with exit status 1; the output file is
written atomically, so a failed run never leaves a partial file behind.
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from transpile import __version__, progress
from transpile.cli import batch
from transpile.diagnostics import TranspileError, silence
from transpile.fsutil import write_atomic
from transpile.guard import guard as _guard
from transpile.llm.options import llm_options

_EPILOG = """\b
Examples:
  transpile gemm.c -o gemm.cu            C -> CUDA (drop-in host function)
  transpile gemm.c --emit ir -o -        print the loop-nest IR
  transpile kernel.ir -o kernel.cu       compile the IR text form
  transpile bench.c -I utilities -D LARGE_DATASET --function kernel_gemm -o k.cu

\b
The emitted .cu defines, for each offloaded function NAME:
  void NAME(<the C signature>)       drop-in: copies host arrays in and out
  cudaError_t NAME_device(..., cudaStream_t)  device pointers, no copies
Link the .cu's object in place of the C function's.

\b
Assumptions: distinct array parameters do not overlap (as with C99
'restrict' and PPCG); pointer parameters indexed by hand (double *A used as
A[i*n + j]) are copied over the index range their loops reach, and scalar
parameters used in those ranges are assumed non-negative; they are analysed
as matrices where the loop bounds prove every column index in [0, n)
(else a flat-index warning).
"""


# Subcommands other than compile, imported when named (startup imports only what the command needs),
# with the head of their help for the command list (tests/test_compile_cost.py keeps it in step).
_LAZY = {
    "dataset": ("transpile.cli.dataset", "dataset_cmd", "Export a dataset: for each input under PATHS (.c, .ir, "
                "or a .txt spec through the LLM), one JSON record"),
    "deps": ("transpile.cli.deps", "deps_cmd", "Print the dependence graph of each kernel of FILE (.c or .ir), as "
             "the passes see it: pointers indexed"),
    "evaluate": ("transpile.cli.evaluate", "evaluate_cmd", "Score the candidate CUDA files of SUBMISSIONS.jsonl with "
                 "the verifier, isolated and in parallel."),
    "evolve": ("transpile.cli.evolve", "evolve_cmd", "Search schedules for FILES under one shared time budget; "
               "write OUT_DIR/STEM.cu for each."),
    "opt": ("transpile.cli.opt", "opt_cmd", "Run passes by name over FILE (.ir, or .c through the front end) and "
            "print the IR text form."),
    "repair": ("transpile.llm.repair", "repair_cmd", "Repair KERNEL.cu with an LLM until it verifies against the "
               "reference (bounded rounds)."),
    "verify": ("transpile.verify.cli", "verify_cmd", "Verify KERNEL.cu, any CUDA file defining the drop-in extern "
               "\"C\" host function, against the reference:"),
}


class _DefaultGroup(click.Group):
    """A group whose default subcommand is ``compile`` (``transpile FILE``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in _LAZY and \
                args[0] not in ("--help", "-h", "--version"):
            args.insert(0, "compile")
        if args and args[0] == "compile":  # -O2, -std=c11, -Wall, -w, -v ... (transpile/cli/options.py)
            from transpile.cli import options as cliopts

            args[1:] = cliopts.normalize(args[1:])
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _LAZY:
            import importlib

            module, attr, _ = _LAZY[cmd_name]
            self.add_command(getattr(importlib.import_module(module), attr))
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Click's command list, without importing the subcommands not yet used (their help head)."""
        from click.utils import make_default_short_help

        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            cmd = self.commands.get(name)
            if cmd is None:
                rows.append((name, make_default_short_help(_LAZY[name][2] + " ...", limit)))
            elif not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_DefaultGroup, epilog=_EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="transpile")
def main() -> None:
    """Compile C loop nests (or the transpile IR text form) to CUDA.

    Run `transpile compile --help` for the compiler's options.
    """


@main.command("compile", epilog=_EPILOG)
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path), nargs=-1)
@batch.options
@click.option("--from-text", "from_text", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="SPEC", help="Compile a natural-language spec through an LLM that writes the IR "
                                   "(docs/text2cuda.md); a .ir SPEC needs no LLM.")
@llm_options
@click.option("-o", "--output", type=str, default=None,
              help="Output file ('-' for stdout). Default: FILE with the suffix .cu (or .ir).")
@click.option("--emit", type=click.Choice(["cuda", "ir", "program"]), default="cuda", show_default=True,
              help="What to write: CUDA source (the drop-in), the front end's IR in text form, or the whole "
                   "C program in one .cu (`nvcc prog.cu -o prog` builds it; FILEs after the first are the "
                   "program's other C files, e.g. polybench.c; docs/program.md).")
@click.option("--function", "function", metavar="NAME", default=None,
              help="The C function to offload. Default: those holding '#pragma scop', "
                   "else every function with loops except main.")
@click.option("-I", "include_dirs", multiple=True, metavar="DIR", help="Add DIR to the include path.")
@click.option("-D", "defines", multiple=True, metavar="NAME[=VALUE]", help="Define a preprocessor macro.")
@click.option("--dump-ir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write the IR after every pass into DIR.")
@click.option("--verify-each/--no-verify-each", default=True, show_default=True,
              help="Check the IR invariants after every pass.")
@click.option("--silence", "silence_ids", multiple=True, metavar="ID",
              help="Silence the warning with this id.")
@click.option("--no-verify", is_flag=True,
              help="Skip verifying the generated CUDA (stages a-c, and d-f on a GPU; see 'transpile verify').")
@click.option("--verify", "verify_policy", type=click.Choice(["error", "warn"]), default="error", show_default=True,
              help="When the verification of the generated CUDA is inconclusive or nothing could run it here: "
                   "'error' exits 1 and writes no output, 'warn' writes it with a warning. A failure is always "
                   "an error.")
@click.option("--naive", is_flag=True,
              help="The baseline mapping only: one thread per iteration of the parallel loops (map-gpu "
                   "alone, no restructuring, tiling or reduction pass).")
@click.option("--no-reassociate", is_flag=True,
              help="Keep float + and * reductions in program order (no parallel reduction of them; like "
                   "leaving out -ffast-math). Integer reductions and float min/max are exact and still run "
                   "in parallel.")
@click.option("--tile", "tile_shape", metavar="MxN", default=None, callback=lambda c, p, v: _pair(v, "--tile"),
              help="Output tile of a block in matmul-like launches, rows x columns (default 64x64).")
@click.option("--coarsen", metavar="TMxTN", default=None, callback=lambda c, p, v: _pair(v, "--coarsen"),
              help="Outputs per thread in matmul-like launches, rows x columns (default 4x4).")
@click.option("--rows", "rows", type=click.IntRange(1, 16), default=None,
              help="Plain 2-D/3-D launches: consecutive iterations of the y loop per thread, unrolled (default: "
                   "2 where one array is read at several y offsets, a stencil; else 1).")
@click.option("--stream", "stream", type=click.IntRange(1, 64), default=None,
              help="Plain 3-D launches: consecutive iterations of the z loop per thread, a serial loop (default: "
                   "8 where one array is read at several z offsets, a stencil; else 1).")
@click.option("--sweep", "sweep", metavar="VxWxUxS", default=None, callback=lambda c, p, v: _sweep(v),
              help="Sweep launches (one pass over a matrix for a row and a column reduction: bicg, mvt): "
                   "columns per lane, warps per block, rows loaded before each fold, blocks per SM "
                   "(default 4x16x2x8).")
@click.option("--block", "blocks", multiple=True, metavar="X[xY[xZ]]", callback=lambda c, p, v: _blocks(v),
              help="Threads per block of plain launches with as many parallel loops as the shape has numbers "
                   "(repeatable; defaults 256, 32x8, 32x4x2).")
@click.option("--no-shared", is_flag=True,
              help="Matmul-like launches: no shared-memory staging (coarsened threads read global memory).")
@click.option("--no-fuse-steps", is_flag=True,
              help="Time loops of stencil launches: launch them one by one, not as one kernel per several "
                   "time steps over tiles with halos (transpile/cuda/steps.py; TRANSPILE_STEPS=0 at run time "
                   "does the same).")
@click.option("--no-mma", is_flag=True,
              help="Matmul-like f64 launches: no fp64 tensor cores (DMMA); the exact-order FMA kernel "
                   "(also implied by --no-reassociate, --tile and --coarsen, which shape it).")
@click.option("--header", "header", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Also write a C header (extern \"C\" guards for C++) with the prototypes of NAME, NAME_device "
                   "and NAME_release (docs/header.md).")
@click.option("--verbose", is_flag=True, help="-v: say what was done (the verifier's stages, the files written).")
@click.option("--quiet", is_flag=True, help="-q: no warnings and no notes; errors only.")
@click.option("--w-off", is_flag=True, hidden=True)  # -w
@click.option("--w-error", multiple=True, hidden=True)  # -Werror, -Werror=ID
@click.option("--w-on", multiple=True, hidden=True)  # -WID
@click.option("--arch", "arch", metavar="sm_XX", default=None,
              help="The one GPU architecture to build for (sm_75 ... sm_120). Default: every one; the "
                   "tensor-core kernels (sm_80/sm_90) come with FMA kernels the host launches elsewhere "
                   "(docs/architectures.md).")
@click.option("--evolve", is_flag=True,
              help="Search schedules (fusion, tiles, micro-tiles, staging, tensor-core shapes, block shapes) and "
                   "keep the fastest verified one: timed on a GPU, else ranked by the structural cost model; "
                   "cached per kernel, sizes and device (docs/evolve.md).")
@click.option("--evolve-rounds", type=click.IntRange(1, 50), default=4, show_default=True,
              help="Generations of the search at most.")
@click.option("--evolve-time", type=click.FloatRange(1.0), default=900.0, show_default=True,
              help="Seconds the search may take at most.")
@click.option("--evolve-seed", type=int, default=1, show_default=True, help="Seed of the search's mutations.")
@click.option("--evolve-size", "evolve_sizes", multiple=True, metavar="N=V",
              help="Size parameter value the candidates are priced or timed at (repeatable; "
                   "default: the verifier's full size).")
@click.option("--evolve-measure", type=click.Choice(["auto", "model", "gpu"]), default="auto", show_default=True,
              help="Rank by GPU timing (verifier stage f) or by the cost model; auto: GPU if there is one.")
@click.option("--evolve-llm", is_flag=True,
              help="Also ask the LLM endpoint (--llm-base-url/--model) each generation for schedule proposals "
                   "and, when timing on a GPU, for an edit of the best candidate's CUDA (verified like any "
                   "candidate).")
@click.option("--report", "report", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="HTML", help="Also write a self-contained HTML page: each source loop and the kernel, "
                                   "host loop or sequential code it became (launch form, block, grid), the "
                                   "transfers per array, ptxas registers/shared memory/spills and occupancy, "
                                   "and the verifier's verdict (docs/cli.md; timing needs a GPU: bench/gpu.py).")
def compile_cmd(file: tuple[Path, ...], output: str | None, emit: str, function: str | None,
                include_dirs: tuple[str, ...], defines: tuple[str, ...], dump_ir: Path | None,
                verify_each: bool, silence_ids: tuple[str, ...], no_verify: bool, naive: bool,
                tile_shape: tuple[int, int] | None, coarsen: tuple[int, int] | None, no_shared: bool,
                report: Path | None = None, from_text: Path | None = None, no_reassociate: bool = False,
                no_mma: bool = False, evolve: bool = False, evolve_rounds: int = 4, evolve_time: float = 900.0,
                evolve_seed: int = 1, evolve_sizes: tuple[str, ...] = (), evolve_measure: str = "auto",
                evolve_llm: bool = False, rows: int | None = None, stream: int | None = None, sweep: tuple[int, int, int, int] | None = None,
                blocks: tuple[tuple[int, int, int], ...] | None = None, no_fuse_steps: bool = False,
                arch: str | None = None, header: Path | None = None, verbose: bool = False, quiet: bool = False,
                w_off: bool = False, w_error: tuple[str, ...] = (), w_on: tuple[str, ...] = (),
                max_pass_seconds: float = batch.DEFAULT_PASS_SECONDS, max_seconds: float = batch.DEFAULT_TOTAL_SECONDS,
                max_memory: float = batch.DEFAULT_MEMORY_MB, jobs: int = 1, verify_policy: str = "error",
                **llm: object) -> None:
    """Compile FILE (.c or .ir; - reads stdin), or a natural-language spec (--from-text SPEC), to CUDA.

    Several FILEs compile in one call, each to DIR/<stem>.cu with -o DIR (-j N: in N processes).
    Also takes the C compiler's -O0..-O3, -std=, -x c, -w, -W..., -Werror, -v and -q (docs/cli.md)."""
    from transpile import diagnostics

    others: tuple[Path, ...] = ()
    if emit == "program" and len(file) > 1:  # one program of several files
        file, others = file[:1], file[1:]
    if len(file) > 1:
        params = click.get_current_context().params
        return batch.compile_many(compile_cmd.callback, params, file, output, emit, jobs)  # type: ignore[arg-type]
    file = file[0] if file else None  # type: ignore[assignment]
    for wid in (*w_on, *(w for w in w_error if w != "all")):
        if wid not in diagnostics.WARNINGS:
            click.echo(f"transpile: warning: unknown warning option '-W{wid}' (known: "
                       f"{', '.join(diagnostics.WARNINGS)}) [-Wunknown-warning-option]", err=True)
    diagnostics.configure(off=w_off or quiet, errors=frozenset(w_error))
    if file is not None and str(file) == "-":
        file, output = _stdin_file(), "-" if output is None else output
    if from_text is not None or file is None:
        if evolve:
            raise click.BadParameter("not supported with --from-text yet: compile the spec to .ir "
                                     "(--emit ir), then run --evolve on the .ir file", param_hint="'--evolve'")
        from transpile.llm.fromtext import cli_from_text

        cli_from_text(file, from_text, output, emit, llm, verify=not no_verify, verify_each=verify_each,
                      dump_ir=dump_ir, guard=_guard, write=write_atomic)
        return
    from passes import tile
    from transpile.search.evolve import Schedule

    defaults = tile.Options()
    b1, b2, b3 = blocks or defaults.blocks
    # Also the schedule --evolve starts from, carrying every knob the user set.  Tensor cores are
    # off with --no-mma, --no-reassociate, and --tile/--coarsen (which shape the FMA tiles instead).
    schedule = Schedule(tile=tile_shape or defaults.tile, coarsen=coarsen or defaults.coarsen, shared=not no_shared,
                        mma=not (no_mma or no_reassociate or tile_shape or coarsen), block1=b1, block2=b2, block3=b3,
                        rows=rows or defaults.rows, stream=stream or defaults.stream, sweep=sweep or defaults.sweep,
                        steps=not no_fuse_steps, reassociate=not no_reassociate)
    tiling = replace(schedule.options(), enabled=not naive, arch=_arch(arch))
    problem = tiling.problem()
    if problem is not None:
        raise click.BadParameter(problem, param_hint="'--tile' / '--coarsen' / '--block' / '--rows' / '--stream' / "
                                                      "'--sweep'")
    for wid in silence_ids:
        silence(wid)
    evolving = None
    if evolve:
        if naive or emit != "cuda" or dump_ir is not None or arch is not None:
            raise click.BadParameter("cannot be combined with --naive (-O0), --emit ir, --dump-ir or --arch",
                                     param_hint="'--evolve' (-O3)")
        given_blocks = {n for n, (b, d) in enumerate(zip(blocks or defaults.blocks, defaults.blocks), 1) if b != d}
        fixed = {k for k, given in (("tile", tile_shape), ("coarsen", coarsen), ("shared", no_shared),
                                    ("mma", no_mma or no_reassociate), ("rows", rows), ("stream", stream),
                                    ("sweep", sweep), ("steps", no_fuse_steps),
                                    ("block1", 1 in given_blocks), ("block2", 2 in given_blocks),
                                    ("block3", 3 in given_blocks)) if given}
        evolving = _EvolveArgs(rounds=evolve_rounds, time=evolve_time, seed=evolve_seed, sizes=evolve_sizes,
                               measure=evolve_measure, fixed=frozenset(fixed), llm=llm if evolve_llm else None,
                               schedule=schedule)
    budget = batch.budget_of(max_pass_seconds, max_seconds, max_memory)
    _guard(lambda: progress.tracked(file.name, lambda: _compile(
        file, output, emit, function, include_dirs, defines, dump_ir, verify_each, not no_verify, naive=naive,
        tiling=tiling, report=report, reassociate=not no_reassociate, evolving=evolving, header=header,
        verbose=verbose, quiet=quiet, budget=budget, verify_policy=verify_policy, others=others)))


def _stdin_file() -> Path:
    """``-``: standard input, saved as ``stdin.c`` in a directory of its own (removed at exit)."""
    import atexit
    import shutil

    d = Path(tempfile.mkdtemp(prefix="transpile-stdin."))
    atexit.register(shutil.rmtree, d, True)
    path = d / "stdin.c"
    path.write_bytes(sys.stdin.buffer.read())
    return path


def _arch(value: str | None) -> int:
    """``--arch``'s value as ``tile.Options.arch`` (0: every architecture)."""
    from transpile.cuda import arches

    if value is None:
        return 0
    try:
        return arches.parse(value)
    except TranspileError as e:
        raise click.BadParameter(e.msg.split(": ", 1)[-1], param_hint="'--arch'") from None


def _sweep(value: str | None) -> tuple[int, int, int, int] | None:
    """``--sweep VxWxUxS`` as ``tile.Options.sweep``."""
    if value is None:
        return None
    dims = _dims(value)
    if dims is None or len(dims) != 4:
        raise click.BadParameter(f"expected VxWxUxS (four positive integers), not {value!r}", param_hint="'--sweep'")
    return (dims[0], dims[1], dims[2], dims[3])


def _blocks(values: tuple[str, ...]) -> tuple[tuple[int, int, int], ...] | None:
    """``--block`` values (``256``, ``32x4``, ``32x4x2``) as ``tile.Options.blocks``: each sets the
    block of launches with as many parallel loops as it has numbers."""
    if not values:
        return None
    from passes import tile

    out: list[tuple[int, int, int]] = list(tile.DEFAULT_BLOCKS)
    for value in values:
        dims = _dims(value)
        if dims is None or not 1 <= len(dims) <= 3 or min(dims) < 1:
            raise click.BadParameter(f"expected X, XxY or XxYxZ with positive integers, not {value!r}",
                                     param_hint="'--block'")
        x, y, z = (dims + [1, 1])[:3]
        out[len(dims) - 1] = (x, y, z)
    return tuple(out)


def _dims(value: str) -> list[int] | None:
    """``"64x32"`` / ``"32x4x2"`` as its integers (any count), None unless every part is digits."""
    parts = value.lower().split("x")
    return [int(p) for p in parts] if all(p.strip().isdigit() for p in parts) else None


def _pair(value: str | None, option: str) -> tuple[int, int] | None:
    """``"64x32"`` as ``(64, 32)``; a malformed value is a usage error (exit 2, no traceback)."""
    if value is None:
        return None
    dims = _dims(value)
    if dims is None or len(dims) != 2:
        raise click.BadParameter(f"expected ROWSxCOLS with positive integers, e.g. 64x64, not {value!r}",
                                 param_hint=f"'{option}'")
    pair = dims[0], dims[1]
    if min(pair) < 1:
        raise click.BadParameter(f"sizes must be positive, not {value!r}", param_hint=f"'{option}'")
    return pair


def _compile(file: Path, output: str | None, emit: str, function: str | None,
             include_dirs: tuple[str, ...], defines: tuple[str, ...], dump_ir: Path | None,
             verify_each: bool, verify: bool = True, *, naive: bool = False,
             tiling: object = None, report: Path | None = None, reassociate: bool = True,
             evolving: _EvolveArgs | None = None, header: Path | None = None, verbose: bool = False,
             quiet: bool = False, budget: object = None,
             verify_policy: str = "error", others: tuple[Path, ...] = ()) -> None:
    from transpile import driver

    if header is not None and emit != "cuda":
        raise TranspileError(None, f"--header goes with the drop-in CUDA output (not --emit {emit})")
    if report is not None and emit == "ir":
        raise TranspileError(None, "--report goes with the CUDA output (not --emit ir)")
    if emit == "program" and file.suffix == ".ir":
        raise TranspileError(None, "--emit program needs a C file: an .ir input has no program around it")
    opts = driver.Options(function=function, include_dirs=include_dirs, defines=defines, naive=naive,
                          reassociate=reassociate, tiling=tiling, budget=budget, verify_each=verify_each,  # type: ignore[arg-type]
                          dump_ir=dump_ir, verify=verify_policy if verify else "off")
    module = driver.load(file, opts)
    if emit == "ir":
        from transpile.ir import text

        result = text.show(module)
        suffix = ".ir"
    else:
        suffix = ".cu"
        outcome = None
        if evolving is not None:
            outcome = _evolve(module, file, evolving, function, include_dirs, defines)
            lowered, result = outcome.lowered, outcome.text
            if outcome.verified:  # the search verified what it chose
                opts = replace(opts, verify="off")
        else:
            lowered = driver.lower(module, opts)
            result = driver.emit(module, lowered, file.name, opts)
        # our own output must pass the verifier before it is written
        reports = driver.verify(module, lowered, result, file, opts)
        _report(reports, verbose=verbose, quiet=quiet, policy=opts.verify,
                replay=f"replay: transpile verify OUT.cu --against {file.name} --quick")
        if report is not None:
            _write_page(report, file, module, lowered, result, opts, reports, verified=verify, outcome=outcome,
                        measure=evolving.measure if evolving is not None else "")
        if header is not None:
            from transpile.frontend import header as c_header

            write_atomic(header, c_header.render(result, source=file.name, guard=header.name))
        if emit == "program":
            from transpile.cuda import program

            result = program.render(result, module, file, others, include_dirs=include_dirs, defines=defines)
    if output == "-":
        sys.stdout.write(result)
        return
    dest = Path(output) if output is not None else file.with_suffix(suffix)
    if dest.is_dir():  # -o DIR: DIR/<stem>.cu
        dest = dest / file.with_suffix(suffix).name
    if dest.resolve() == file.resolve():
        raise TranspileError(None, f"output file '{dest}' would overwrite the input")
    write_atomic(dest, result)
    if verbose:
        click.echo(f"transpile: wrote {dest}" + (f" and {header}" if header is not None else ""), err=True)


def _write_page(path: Path, file: Path, module: Any, lowered: Any, text: str, opts: Any, reports: list[Any], *,
                verified: bool, outcome: Any, measure: str) -> None:
    """``--report``: the HTML page of this compile (:mod:`transpile.cli.report`), written atomically."""
    from transpile.cli import report as page

    tiling = opts.tiling
    evolve = None
    note = ""
    if outcome is not None:
        from transpile.search.evolve import resolve_measure

        tiling = outcome.schedule.options()
        evolve = {"measure": resolve_measure(measure), "summary": outcome.summary, "table": outcome.table,
                  "cache_hit": outcome.cache_hit, "edited": outcome.edited}
        if outcome.verified:
            note = "Verified during the --evolve search: the chosen candidate passed the verifier's stages there."
    if not verified:
        note = "Not verified (--no-verify)."
    facts = page.gather(source=file, module=module, lowered=lowered, text=text, tiling=tiling,
                        reports=[(verdict_line(r), r) for r in reports], verify_note=note,
                        arch=getattr(tiling, "arch", 0), evolve=evolve)
    write_atomic(path, page.render(facts))


class _Bars:
    """One click progress bar per search generation, on stderr."""

    def __init__(self) -> None:
        self.label: str | None = None
        self.bar: Any = None
        self.done = 0

    def progress(self, label: str, done: int, total: int) -> None:
        if label != self.label:
            self.close()
            self.label, self.done = label, 0
            self.bar = click.progressbar(length=max(total, 1), label=f"evolve {label}", file=sys.stderr)
        if done > self.done:
            self.bar.update(done - self.done)
            self.done = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.render_finish()
            self.bar = None


@dataclass(frozen=True)
class _EvolveArgs:
    """The compile command's ``--evolve*`` options (and the tiling the other flags fixed)."""

    rounds: int
    time: float
    seed: int
    sizes: tuple[str, ...]
    measure: str
    fixed: frozenset[str]
    llm: dict[str, object] | None
    schedule: Any  # evolve.Schedule: the base of the search


def _evolve(module: Any, file: Path, ev: _EvolveArgs, function: str | None,
            include_dirs: tuple[str, ...], defines: tuple[str, ...]) -> Any:
    """``--evolve``: the search (transpile.search.evolve), with a progress bar and the final table on stderr."""
    from transpile.search import evolve
    from transpile.verify.cli import parse_sizes

    base = ev.schedule
    measure = evolve.resolve_measure(ev.measure)
    sizes = {**evolve.default_sizes(module), **parse_sizes(ev.sizes)}
    settings = evolve.Settings(rounds=ev.rounds, time_budget=ev.time, seed=ev.seed, sizes=sizes, measure=measure,
                               fixed=ev.fixed, base=base)
    propose = edit = None
    if ev.llm is not None:
        from transpile.llm.client import LLMClient
        from transpile.llm.options import config

        cfg = config(ev.llm)
        cfg.require_endpoint()
        client = LLMClient(cfg)
        propose, edit = evolve.llm_proposer(client), evolve.llm_editor(client)
    bar = _Bars()
    outcome = evolve.compile_evolved(module, file, settings, function=function, include_dirs=include_dirs,
                                     defines=defines, propose=propose, edit=edit, progress=bar.progress)
    bar.close()
    if not outcome.cache_hit:
        click.echo(outcome.table, err=True)
    click.echo(outcome.summary, err=True)
    return outcome


def _report(reports: list[Any], *, verbose: bool = False, quiet: bool = False, policy: str = "error",
            replay: str = "") -> None:
    """Print each kernel's verdict line and notes (-q: neither; -v: each report's summary too), and
    raise the first refusal under ``policy`` (:func:`transpile.driver.refusal`): a failure is an error;
    an inconclusive or unverified result is an error under ``error`` (exit 1, no output file: nothing
    shows the output is right), a warning under ``warn``."""
    from transpile.driver import refusal

    for r in reports:
        if verbose:
            click.echo(r.summary(), err=True)
        if not quiet:
            click.echo(f"transpile: {verdict_line(r)}", err=True)
            for n in r.notes:
                click.echo(f"transpile: note: {n}", err=True)
        problem = refusal(r, policy, replay=replay)
        if problem is not None:
            raise problem
        if r.verdict != "pass" and not quiet:
            click.echo(f"transpile: warning: generated CUDA for '{r.kernel}' not fully verified: {r.reason}",
                       err=True)


def verdict_line(r: Any) -> str:
    """One line for a verifier report: the verdict, the stages passed and the shapes stage (c) tested."""
    c = r.stage("c")
    if r.verdict == "pass":
        ran = ",".join(k for k, s in r.stages.items() if s.status == "pass")
        shapes = [f"{s['shape']} ({', '.join(f'{k}={v}' for k, v in s.get('sizes', {}).items())})"
                  if s.get("sizes") else str(s["shape"]) for s in r.shapes if s.get("stage") == "c"]
        tested = f"; stage (c) tested {len(shapes)} shape(s): {', '.join(shapes)}" if shapes else ""
        return f"'{r.kernel}' verified (seed {r.seed}): stages {ran} passed{tested}"
    where = f"; stage (c): {c.message}" if c.message and r.failure is not c else ""
    return f"'{r.kernel}' {r.verdict} (seed {r.seed}): {r.reason}{where}"




if __name__ == "__main__":
    main()
