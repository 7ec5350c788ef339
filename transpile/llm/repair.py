"""``transpile repair K.cu --against REF.c``: the verifier's failure report goes to the model, bounded rounds.

Each round the model sees the C (or IR) reference, the current CUDA and the
verifier's report for it (failed stage, check, first wrong element, sizes,
seed, compiler output) and answers with a whole ``.cu`` file in a fenced
block.  That text is data: it is written under a private temporary directory
with a name we choose, and only compiled and run inside the verifier's stages
(nvcc, then the CPU simulator in a forked child).  The first candidate that
verifies is written atomically to ``-o`` (default ``K.repaired.cu``); if none
does, the exit status is 1 and nothing is written.  The input is never modified.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import click

from transpile.diagnostics import TranspileError
from transpile.llm.client import LLMClient, LLMConfig, LLMError
from transpile.llm.generate import tagged_block
from transpile.llm.options import config, llm_options

REPAIR_TASK = ("You repair CUDA source files. Each file must define an extern \"C\" host function that is a "
               "drop-in replacement for the reference function below (same name and C signature; it copies "
               "the arrays to the device, launches kernels and copies results back).")
_CUDA_TAGS = ("cuda", "cu", "c++", "cpp", "cxx", "c")
MAX_CU_CHARS = 200_000


def extract_cuda(answer: str) -> str | None:
    """The ``.cu`` text in an answer: a fenced block tagged cuda/c++/..., else the first fenced block."""
    return tagged_block(answer, _CUDA_TAGS)


def _report_text(report: object) -> str:
    from transpile.verify.report import Report

    assert isinstance(report, Report), report
    lines = [report.summary()]
    f = report.failure
    if f is not None and f.details:
        lines.append(f"details of the failed stage ({f.key}): {f.details}"[:6000])
    return "\n".join(lines)


def _messages(reference: str, ref_name: str, cu: str, report: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": REPAIR_TASK + "\n\nAnswer with the whole corrected file in one fenced "
                                                       "```cuda block; text outside the block is ignored."},
            {"role": "user", "content": (f"Reference ({ref_name}):\n```\n{reference}\n```\n\n"
                                         f"Current CUDA file:\n```cuda\n{cu}\n```\n\n"
                                         f"The verifier rejected it:\n```\n{report}\n```\n\n"
                                         "Fix the CUDA file.")}]


def repair(cu: Path, reference: Path, cfg: LLMConfig, *, function: str | None = None,
           include_dirs: Sequence[str] = (), defines: Sequence[str] = (), seed: int | None = None,
           client: LLMClient | None = None) -> tuple[str, int]:
    """The first verified repair of ``cu`` and the rounds it took; :class:`LLMError` if none verifies."""
    from transpile.verify.stages import Options, new_seed, verify_file

    def check(path: Path) -> object:
        return verify_file(path, reference, function=function, include_dirs=include_dirs, defines=defines,
                           options=Options(seed=seed_, mode="quick", full_seeds=1, sanitizer=False))

    cfg.require_endpoint()
    seed_ = seed if seed is not None else new_seed()
    original = cu.read_text()
    first = check(cu)
    if first.ok:  # type: ignore[attr-defined]
        return original, 0
    client = client or LLMClient(cfg)
    messages = _messages(reference.read_text(), reference.name, original, _report_text(first))
    last = first.reason  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory(prefix="transpile-repair-") as tmp:
        for r in range(1, cfg.rounds + 1):
            answer = client.chat(messages, conversation="repair")
            messages.append({"role": "assistant", "content": answer})
            text = extract_cuda(answer)
            if text is None or not text.strip():
                problem = "the answer holds no fenced ```cuda block"
            elif len(text) > MAX_CU_CHARS:
                problem = f"the file is longer than {MAX_CU_CHARS} characters"
            else:
                cand = Path(tmp) / f"round{r}" / cu.name  # our name, never one from the answer
                cand.parent.mkdir()
                cand.write_text(text)
                rep = check(cand)
                if rep.ok:  # type: ignore[attr-defined]
                    return text, r
                problem = _report_text(rep)
            last = problem.splitlines()[0]
            messages.append({"role": "user", "content": f"The verifier rejected it:\n```\n{problem}\n```\n"
                                                        "Fix the CUDA file; answer with the whole file."})
    raise LLMError(f"no verified repair of {cu} in {cfg.rounds} rounds (last problem: {last}); "
                   f"{cu} is left untouched")


@click.command("repair")
@click.argument("kernel", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--against", "reference", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The reference: a C file (compiled by gcc) or the IR text form (interpreted).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where the verified repair goes (default: KERNEL with the suffix .repaired.cu).")
@click.option("--function", metavar="NAME", default=None, help="The reference function (default: the only one).")
@click.option("--seed", type=int, default=None, help="The verifier's seed (default: a fresh one).")
@click.option("-I", "include_dirs", multiple=True, metavar="DIR", help="Include path for a C reference.")
@click.option("-D", "defines", multiple=True, metavar="NAME[=VALUE]", help="Macro for a C reference.")
@llm_options
def repair_cmd(kernel: Path, reference: Path, output: Path | None, function: str | None, seed: int | None,
               include_dirs: tuple[str, ...], defines: tuple[str, ...], **llm: object) -> None:
    """Repair KERNEL.cu with an LLM until it verifies against the reference (bounded rounds).

    The input is never modified; the first verified version is written to -o."""
    from transpile.fsutil import write_atomic
    from transpile.guard import guard as _guard

    def action() -> None:
        cfg = config(llm)
        cfg.require_endpoint()
        for p in (kernel, reference):
            if not p.is_file():
                raise TranspileError(None, f"{p}: no such file")
        text, rounds = repair(kernel, reference, cfg, function=function, include_dirs=include_dirs,
                              defines=defines, seed=seed)
        dest = output or kernel.with_suffix(".repaired.cu")
        if rounds == 0:
            click.echo(f"transpile: repair: {kernel} already verifies; nothing to do", err=True)
            return
        write_atomic(dest, text)
        click.echo(f"transpile: repair: verified after {rounds} round(s); written to {dest}", err=True)

    _guard(action)
