"""The command-line options of the LLM path, shared by ``compile --from-text`` and ``repair``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from transpile.llm.client import LLMConfig

F = TypeVar("F", bound=Callable[..., Any])

_OPTIONS = (
    click.option("--llm-base-url", "llm_base_url", metavar="URL", default=None,
                 help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL), e.g. http://localhost:11434/v1."),
    click.option("--model", "llm_model", metavar="NAME", default=None,
                 help="Model name (default: $TRANSPILE_MODEL). The key comes from $OPENAI_API_KEY."),
    click.option("--llm-log", "llm_log", type=click.Path(dir_okay=False, path_type=Path), default=None,
                 help="Append the LLM transcript to FILE (JSON lines)."),
    click.option("--llm-rounds", "llm_rounds", type=click.IntRange(1, 20), default=None,
                 help="Answers per conversation before giving up [default: 4]."),
    click.option("--llm-timeout", "llm_timeout", type=click.FloatRange(0.01), default=None,
                 help="Seconds per request [default: 120]."),
    click.option("--llm-retries", "llm_retries", type=click.IntRange(0, 10), default=None,
                 help="Retries on 429/5xx/timeouts, with exponential backoff [default: 4]."),
    click.option("--llm-max-tokens", "llm_max_tokens", type=click.IntRange(16), default=None,
                 help="Tokens per answer [default: 4096]."),
    click.option("--llm-token-budget", "llm_token_budget", type=click.IntRange(1), default=None,
                 help="Tokens the whole session may spend [default: 200000]."),
)


def llm_options(f: F) -> F:
    """Add the LLM options to a click command (they arrive as ``llm_*`` keyword arguments)."""
    for opt in reversed(_OPTIONS):
        f = opt(f)
    return f


def config(opts: dict[str, Any]) -> LLMConfig:
    """The :class:`LLMConfig` from the ``llm_*`` options (unset ones from the environment / defaults)."""
    import os

    backoff = os.environ.get("TRANSPILE_LLM_BACKOFF")  # tests make retries instant
    return LLMConfig.from_env(
        base_url=opts.get("llm_base_url"), model=opts.get("llm_model"), log=opts.get("llm_log"),
        rounds=opts.get("llm_rounds"), timeout=opts.get("llm_timeout"), retries=opts.get("llm_retries"),
        max_tokens=opts.get("llm_max_tokens"), token_budget=opts.get("llm_token_budget"),
        backoff=float(backoff) if backoff else None)
