"""Intermediate-structured generation: ask for IR text, parse and check it, send errors back.

:func:`extract_ir` takes the program out of an answer: the first fenced block
tagged ``ir``/``loopir``, else the first fenced block of any kind (so a CUDA
or C block is simply an IR parse error), else nothing.  :func:`converse` runs
one conversation for at most ``rounds`` answers: each answer is parsed with
the lark grammar (:func:`transpile.ir.text.parse`) and checked
(:func:`transpile.ir.check.check`); a failure, with its ``line:col``, the
offending line and the expected tokens, is the next user message.  Nothing
in an answer is ever executed or used as a file name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from transpile import ir
from transpile.diagnostics import TranspileError
from transpile.ir import check as ircheck
from transpile.ir import text
from transpile.llm.client import LLMClient, LLMError, Message
from transpile.llm.prompts import repair_message

_OPEN = re.compile(r"[ \t]*(```+|~~~+)[ \t]*([A-Za-z0-9_+.-]*)")
_IR_TAGS = ("ir", "loopir")
#: Error messages sent back to the model are cut to this length (a huge line in a hostile answer).
_MAX_ERROR = 2000


def fenced_blocks(answer: str) -> list[tuple[str, str]]:
    """Fenced blocks as (tag, body), scanned line by line (linear time on any input)."""
    out: list[tuple[str, str]] = []
    fence: str | None = None
    tag, body = "", []  # type: tuple[str, list[str]]
    for line in answer.splitlines():
        if fence is None:
            m = _OPEN.match(line)
            if m:
                fence, tag, body = m.group(1), m.group(2).lower(), []
        elif line.strip() == fence:
            out.append((tag, "\n".join(body) + "\n"))
            fence = None
        else:
            body.append(line)
    return out


def tagged_block(answer: str, tags: tuple[str, ...]) -> str | None:
    """The first fenced block of ``answer`` tagged one of ``tags``, else the first fenced block; None without one."""
    blocks = fenced_blocks(answer)
    for tag, body in blocks:
        if tag in tags:
            return body
    return blocks[0][1] if blocks else None


def extract_ir(answer: str) -> str | None:
    """The program in ``answer``: a fenced ``ir`` block, else the first fenced block; None without one."""
    return tagged_block(answer, _IR_TAGS)


def check_ir(source: str, filename: str) -> ir.Module:
    """Parse and check one answer's IR; exactly one kernel. Raises :class:`TranspileError`."""
    module = text.parse(source, filename)
    if len(module.kernels) != 1:
        raise TranspileError(None, f"expected exactly one kernel, found {len(module.kernels)}")
    ircheck.check(module)
    for node in ir.walk(module):
        # The compiler decides what runs in parallel; a model's `par` would only be trusted by the verifier.
        if isinstance(node, ir.Launch) or (isinstance(node, ir.For) and node.par):
            raise TranspileError(node.loc, "write plain sequential loops: no `launch` or `par` "
                                           "(the compiler finds the parallelism)", source=source)
    from passes import uninit

    for f in uninit.check(module.kernels[0]):
        if f.definite:  # the same refusal as for C (transpile/cli.py), fed back to the model
            raise TranspileError(f.loc, f.message, source=source)
    return module


@dataclass
class Answer:
    """An accepted program: the module, its text as the model wrote it, and the rounds it took."""

    module: ir.Module
    source: str
    rounds: int


def converse(client: LLMClient, messages: list[Message], *, conversation: str, rounds: int,
             filename: str) -> Answer:
    """Run one conversation until an answer parses and checks, for at most ``rounds`` answers."""
    last = "no answer"
    for r in range(1, rounds + 1):
        answer = client.chat(messages, conversation=conversation)
        messages.append({"role": "assistant", "content": answer})
        source = extract_ir(answer)
        if not answer.strip():
            error = "the answer was empty"
        elif source is None:
            error = "the answer holds no fenced code block: put the program in one ```ir block"
        else:
            try:
                return Answer(check_ir(source, filename), source, r)
            except TranspileError as e:
                error = str(e)
                if len(error) > _MAX_ERROR:
                    error = error[:_MAX_ERROR] + " [...]"
        last = error.splitlines()[0] if error else "no answer"
        messages.append(repair_message(error))
    raise LLMError(f"the model gave no valid IR for the {conversation} in {rounds} rounds (last problem: {last})")
