"""``transpile opt FILE -p a,b{k=v},c``: run passes by name and print the IR, like ``mlir-opt``.

Each name is a key of ``passes.REGISTRY`` (the pass module's file name with ``-`` for ``_``), or
``default`` for the whole default pipeline (``transpile.pipeline.lower``).  Options in braces are the
pass's keyword-only parameters (``reduce-gpu{reassociate=false}``); a value is ``true``/``false``, an
integer, a float or a bare word.  The IR is checked (``ircheck``) before the first pass and after
every pass, unless ``--no-verify-each``; ``--print-ir-after-all`` writes it to stderr after each one.

This is what a pass's file test runs (``tests/passes/<pass>/*.ir``; see ``tests/test_pass_files.py``).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from transpile import ir


@dataclass(frozen=True, slots=True)
class PassStep:
    """One entry of ``-p``: a registered pass (or ``default``) and its keyword options."""

    name: str
    options: tuple[tuple[str, object], ...] = ()

    def __str__(self) -> str:
        if not self.options:
            return self.name
        return self.name + "{" + ",".join(f"{k}={_show_value(v)}" for k, v in self.options) + "}"


def _show_value(v: object) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def parse_pipeline(spec: str) -> list[PassStep]:
    """The steps of a ``-p`` value: names separated by commas, each with optional ``{k=v,...}``.

    Raises ``click.UsageError`` naming the problem (unbalanced braces, an empty name, an unknown pass,
    an option the pass does not take)."""
    steps: list[PassStep] = []
    for item in _split_top(spec):
        name, _, rest = item.partition("{")
        name = name.strip()
        if not name:
            raise click.UsageError(f"-p '{spec}': an empty pass name")
        options: list[tuple[str, object]] = []
        if rest:
            if not rest.endswith("}"):
                raise click.UsageError(f"-p '{spec}': '{item}' has no closing '}}'")
            for opt in filter(None, (o.strip() for o in rest[:-1].split(","))):
                key, eq, value = opt.partition("=")
                if not eq or not key.strip():
                    raise click.UsageError(f"-p '{spec}': option '{opt}' of '{name}' is not KEY=VALUE")
                options.append((key.strip().replace("-", "_"), _value(value.strip())))
        step = PassStep(name, tuple(options))
        _check_step(step)
        steps.append(step)
    return steps


def _split_top(spec: str) -> list[str]:
    """``spec`` split at the commas outside braces."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(spec):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                raise click.UsageError(f"-p '{spec}': unbalanced '}}'")
        elif ch == "," and depth == 0:
            items.append(spec[start:i])
            start = i + 1
    if depth:
        raise click.UsageError(f"-p '{spec}': unbalanced '{{'")
    items.append(spec[start:])
    return [s for s in (x.strip() for x in items) if s]


def _value(text: str) -> object:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def _options_of(name: str) -> dict[str, inspect.Parameter]:
    """The keyword-only parameters the step ``name`` accepts."""
    if name == "default":
        from transpile import pipeline

        fn: Callable[..., Any] = pipeline.lower
        hidden = {"verify_each", "dump_ir", "budget"}
    else:
        import passes

        fn = passes.REGISTRY[name].run
        hidden = set()
    return {p.name: p for p in inspect.signature(fn).parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name not in hidden}


def _check_step(step: PassStep) -> None:
    import passes

    if step.name != "default" and step.name not in passes.REGISTRY:
        known = ", ".join(sorted(passes.REGISTRY))
        raise click.UsageError(f"unknown pass '{step.name}' (passes: {known}; 'default' runs the whole pipeline)")
    accepted = _options_of(step.name)
    for key, value in step.options:
        if key not in accepted:
            takes = ", ".join(sorted(accepted)) or "none"
            raise click.UsageError(f"pass '{step.name}' has no option '{key}' (its options: {takes})")
        default = accepted[key].default
        if isinstance(default, bool) and not isinstance(value, bool):
            raise click.UsageError(f"option '{key}' of '{step.name}' takes true or false, not '{value}'")


def run_pipeline(module: ir.Module, steps: list[PassStep], *, verify_each: bool = True,
                 after: Callable[[PassStep, ir.Module], None] | None = None) -> ir.Module:
    """``module`` after every step in order, each applied to every kernel; the IR checked before the
    first step and after each one when ``verify_each``; ``after(step, module)`` called after each."""
    from transpile.ir import check as ircheck

    if verify_each:
        ircheck.check(module)
    for step in steps:
        opts = dict(step.options)
        if step.name == "default":
            from transpile import pipeline

            module = pipeline.lower(module, verify_each=verify_each, **opts)  # type: ignore[arg-type]
        else:
            import passes

            run = passes.REGISTRY[step.name].run
            kernels = tuple(run(k, **opts) for k in module.kernels)
            if any(a is not b for a, b in zip(kernels, module.kernels)):
                module = ir.Module(module.funcs, kernels, loc=module.loc)
            if verify_each:
                ircheck.check(module)
        if after is not None:
            after(step, module)
    return module


@click.command("opt")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("-p", "--passes", "spec", default="", metavar="PASSES",
              help="Comma-separated passes to run in order, each with optional {KEY=VALUE,...} "
                   "(e.g. privatize,reduce-gpu{reassociate=false},map-gpu); 'default' is the whole pipeline.")
@click.option("-o", "output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the IR here (default: stdout).")
@click.option("--function", "function", metavar="NAME", default=None, help="The C function to read.")
@click.option("-I", "include_dirs", multiple=True, metavar="DIR", help="Add DIR to the include path (C input).")
@click.option("-D", "defines", multiple=True, metavar="NAME[=VALUE]", help="Define a preprocessor macro (C input).")
@click.option("--verify-each/--no-verify-each", default=True, show_default=True,
              help="Check the IR's invariants before the first pass and after every pass.")
@click.option("--print-ir-after-all", is_flag=True, help="Write the IR to stderr after every pass.")
@click.option("--list", "list_passes", is_flag=True, help="List the passes and their options, and exit.")
def opt_cmd(file: Path | None, spec: str, output: Path | None, function: str | None, include_dirs: tuple[str, ...],
            defines: tuple[str, ...], verify_each: bool, print_ir_after_all: bool, list_passes: bool) -> None:
    """Run passes by name over FILE (.ir, or .c through the front end) and print the IR text form.

    \b
    Examples:
      transpile opt k.ir -p privatize,distribute,map-gpu
      transpile opt gemm.c -p default -o gemm.mapped.ir
      transpile opt k.ir -p 'reduce-gpu{reassociate=false},map-gpu'
    """
    from transpile import frontend
    from transpile.fsutil import write_atomic
    from transpile.guard import guard
    from transpile.ir import text

    if list_passes:
        import passes

        for name in [*sorted(passes.REGISTRY), "default"]:
            opts = _options_of(name)
            shown = ",".join(f"{k}={_show_value(p.default)}" for k, p in opts.items())
            click.echo(f"{name}{'{' + shown + '}' if shown else ''}")
        return
    if file is None:
        raise click.UsageError("missing FILE (or --list)")
    steps = parse_pipeline(spec)

    def action() -> None:
        assert file is not None
        module = frontend.load(file, function=function, include_dirs=include_dirs, defines=defines)

        def after(step: PassStep, m: ir.Module) -> None:
            if print_ir_after_all:
                click.echo(f"// -----// IR after {step} //----- //", err=True)
                click.echo(text.show(m), err=True, nl=False)

        result = text.show(run_pipeline(module, steps, verify_each=verify_each, after=after))
        if output is None:
            sys.stdout.write(result)
        else:
            write_atomic(output, result)

    guard(action)
