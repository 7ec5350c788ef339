"""``transpile --from-text SPEC``: spec -> IR (LLM, repaired, cross-checked) -> pipeline -> verified CUDA.

Steps, each bounded: the generator conversation writes the IR (parse and type
errors go back to it); an independent reference conversation writes a naive
IR; both run in the interpreter on synthesized inputs; a disagreement goes to
an arbiter; the agreed IR is lowered by the default pipeline, emitted, and
verified (stages a-c, and d-f on a GPU) against the agreed IR through the
interpreter.  The caller writes the output only if all of that succeeded.
A ``.ir`` spec is compiled as it is, with no endpoint needed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from transpile import ir
from transpile.diagnostics import Loc, TranspileError
from transpile.ir import text
from transpile.llm import crosscheck, prompts
from transpile.llm.client import LLMClient, LLMConfig
from transpile.llm.generate import converse

MAX_SPEC_CHARS = 20_000


@dataclass
class Result:
    """What ``--from-text`` produced, and how it got there."""

    module: ir.Module
    output: str
    rounds: dict[str, int] = field(default_factory=dict)
    crosscheck: str = ""
    verified: str = ""

    def summary(self) -> str:
        """One line for stderr: rounds per conversation, cross-check, verifier."""
        r = ", ".join(f"{k} {v}" for k, v in self.rounds.items()) or "no LLM"
        return f"transpile: from-text: rounds: {r}; cross-check: {self.crosscheck}; verifier: {self.verified}"


def read_spec(path: Path) -> str:
    """The spec's text (UTF-8, bounded size)."""
    if not path.exists():
        raise TranspileError(None, f"{path}: no such file or directory")
    if path.is_dir():
        raise TranspileError(None, f"{path}: is a directory")
    try:
        spec = path.read_text()
    except UnicodeDecodeError:
        raise TranspileError(Loc(str(path), 1, 1), "file is not UTF-8 text") from None
    if not spec.strip():
        raise TranspileError(Loc(str(path), 1, 1), "the spec is empty")
    if len(spec) > MAX_SPEC_CHARS:
        raise TranspileError(Loc(str(path), 1, 1), f"the spec is longer than {MAX_SPEC_CHARS} characters")
    return spec


def agreed_ir(spec_path: Path, cfg: LLMConfig, *, seed: int = 1, client: LLMClient | None = None,
              result: Result | None = None) -> ir.Module:
    """The IR for the spec that the generator wrote and the cross-check (or the arbiter) accepted."""
    res = result if result is not None else Result(ir.Module((), ()), "")
    if spec_path.suffix == ".ir":  # offline: the spec already is the program
        from transpile import frontend

        res.crosscheck = "not needed (.ir spec)"
        return frontend.load(spec_path)
    cfg.require_endpoint()  # before reading anything else: the hint is the whole message
    spec = read_spec(spec_path)
    client = client or LLMClient(cfg)
    name = f"{spec_path.stem}.answer.ir"
    gen = converse(client, prompts.generator_messages(spec), conversation="generator", rounds=cfg.rounds,
                   filename=name)
    res.rounds["generator"] = gen.rounds
    ref = converse(client, prompts.reference_messages(spec), conversation="reference", rounds=cfg.rounds,
                   filename=f"{spec_path.stem}.reference.ir")
    res.rounds["reference"] = ref.rounds
    outcome = crosscheck.compare(gen.module, ref.module, seed=seed)
    if outcome.evidence is None:
        res.crosscheck = f"agreed on {outcome.inputs} inputs"
        return gen.module
    choice = crosscheck.arbitrate(client, spec, gen.source, ref.source, outcome.evidence, rounds=cfg.rounds)
    res.rounds["arbiter"] = client.usage.by_conversation.get("arbiter", 0)
    res.crosscheck = f"disagreed, arbiter chose the {'generated' if choice == 'A' else 'reference'} program"
    return gen.module if choice == "A" else ref.module


def compile_from_text(spec_path: Path, cfg: LLMConfig, *, emit: str = "cuda", verify: bool = True,
                      verify_each: bool = True, dump_ir: Path | None = None, seed: int = 1,
                      client: LLMClient | None = None) -> Result:
    """Everything but writing the output file: see the module docstring."""
    res = Result(ir.Module((), ()), "")
    module = agreed_ir(spec_path, cfg, seed=seed, client=client, result=res)
    res.module = module
    if emit == "ir":
        res.output = text.show(module)
        res.verified = "not run (--emit ir)"
        return res
    from transpile import driver

    opts = driver.Options(verify_each=verify_each, dump_ir=dump_ir)
    driver.check_input(module)  # the checks every compile makes of its input
    lowered = driver.lower(module, opts)
    res.output = driver.emit(module, lowered, spec_path.name, opts)  # with each drop-in's host path, as a compile
    res.verified = _verify(module, lowered, res.output, spec_path) if verify else "skipped (--no-verify)"
    return res


def _verify(module: ir.Module, lowered: ir.Module, cu_text: str, spec_path: Path) -> str:
    """Verify the emitted CUDA against the agreed IR (interpreter reference); a failure raises."""
    from transpile.verify import Options, verify_module

    reports = verify_module(module, cu_text, source=spec_path.with_suffix(".ir"), lowered=lowered,
                            options=Options(mode="quick", full_seeds=1, sanitizer=False))
    notes = []
    for r in reports:
        if r.verdict != "pass":  # inconclusive too: from a spec, nothing unverified is written
            raise TranspileError(None, f"verification of the generated CUDA for '{r.kernel}' "
                                       f"{'failed' if r.verdict == 'fail' else 'was inconclusive'}: {r.reason}")
        passed = "".join(k for k, s in r.stages.items() if s.status == "pass")
        notes.append(f"{r.kernel}: {r.verdict} (stages passed: {passed or 'none'})")
    return "; ".join(notes)


def cli_from_text(file: Path | None, spec: Path | None, output: str | None, emit: str, llm: dict[str, object],
                  *, verify: bool, verify_each: bool, dump_ir: Path | None, guard: Callable[[Callable[[], None]], None],
                  write: Callable[[Path, str], None]) -> None:
    """The CLI's ``--from-text`` branch: run, print the summary, write ``output`` atomically on success."""
    import sys

    import click

    from transpile.llm.options import config

    if spec is None:
        raise click.UsageError("missing FILE (or --from-text SPEC)")
    if file is not None:
        raise click.UsageError("give either FILE or --from-text SPEC, not both")

    def action() -> None:
        cfg = config(llm)
        if spec.suffix != ".ir":
            cfg.require_endpoint()
        res = compile_from_text(spec, cfg, emit=emit, verify=verify, verify_each=verify_each, dump_ir=dump_ir)
        click.echo(res.summary(), err=True)
        if output == "-":
            sys.stdout.write(res.output)
            return
        # The output name comes from the command line only, never from the model's answer.
        dest = Path(output) if output is not None else spec.with_suffix(".cu" if emit == "cuda" else ".ir")
        if dest.resolve() == spec.resolve():
            raise TranspileError(None, f"output file '{dest}' would overwrite the input")
        write(dest, res.output)

    guard(action)
