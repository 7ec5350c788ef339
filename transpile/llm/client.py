"""A small chat client on the ``openai`` package for any OpenAI-compatible endpoint.

OpenAI, vLLM, Ollama, llama.cpp's server and LM Studio all serve
``POST {base_url}/chat/completions``; this wraps that one call with what the
compiler needs: configuration from flags or the environment, a timeout,
bounded retries with exponential backoff on 429, 5xx, timeouts and connection
errors (our own loop, so the backoff base is configurable and tests do not
sleep), caps on the answer size and on the tokens a session may spend, and a
JSON-lines transcript (``--llm-log``).

The model's answer is returned as a plain string: callers treat it as data.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transpile.diagnostics import TranspileError

NO_ENDPOINT = ("no LLM endpoint configured: set OPENAI_BASE_URL (or --llm-base-url) "
               "and TRANSPILE_MODEL (or --model)")

#: Answers longer than this are cut before parsing (a runaway or hostile answer).
MAX_ANSWER_CHARS = 200_000

Message = dict[str, str]


class LLMError(TranspileError):
    """The endpoint failed (after retries), or a cap was reached."""

    def __init__(self, msg: str) -> None:
        super().__init__(None, msg)


@dataclass
class LLMConfig:
    """Where and how to talk to the model; :meth:`from_env` fills the blanks from the environment."""

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    timeout: float = 120.0
    retries: int = 4
    backoff: float = 1.0             # first retry waits backoff, then 2*backoff, 4*backoff, ...
    max_tokens: int = 4096           # per answer
    token_budget: int = 200_000      # per session (prompt + completion, as the server reports usage)
    rounds: int = 4                  # repair rounds per conversation
    temperature: float = 0.0
    log: Path | None = None

    @classmethod
    def from_env(cls, **overrides: Any) -> LLMConfig:
        """Flags (``overrides``; None means unset) first, then OPENAI_BASE_URL, TRANSPILE_MODEL, OPENAI_API_KEY."""
        given = {k: v for k, v in overrides.items() if v is not None}
        cfg = cls(**given)
        cfg.base_url = cfg.base_url or os.environ.get("OPENAI_BASE_URL") or None
        cfg.model = cfg.model or os.environ.get("TRANSPILE_MODEL") or None
        cfg.api_key = cfg.api_key or os.environ.get("OPENAI_API_KEY") or None
        return cfg

    def require_endpoint(self) -> None:
        """Raise the configuration hint unless both an endpoint and a model are set."""
        if not self.base_url or not self.model:
            raise LLMError(NO_ENDPOINT)


@dataclass
class Usage:
    """What a session has spent."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    by_conversation: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class LLMClient:
    """One session with one endpoint: ``chat(messages, conversation=...) -> str``."""

    def __init__(self, cfg: LLMConfig, *, sleep: Callable[[float], None] = time.sleep) -> None:
        cfg.require_endpoint()
        try:
            import openai
        except ImportError:
            raise LLMError("the 'openai' package is not installed: pip install 'transpile[llm]'") from None
        self.cfg = cfg
        self.usage = Usage()
        self._sleep = sleep
        self._openai = openai
        # A dummy key is fine for local servers (vLLM, Ollama, llama.cpp); the client insists on one.
        self._client = openai.OpenAI(base_url=cfg.base_url, api_key=cfg.api_key or "not-needed",
                                     timeout=cfg.timeout, max_retries=0)

    def chat(self, messages: Sequence[Message], *, conversation: str, seed: int | None = None) -> str:
        """Send ``messages``; the answer's text (possibly empty), after bounded retries.

        ``seed`` is the request's sampling seed (the API's ``seed``: one per sample of a group, so
        samples differ and a run can be replayed where the server honours it); None sends none."""
        if self.usage.total >= self.cfg.token_budget:
            raise LLMError(f"LLM token budget of {self.cfg.token_budget} exhausted "
                           f"({self.usage.requests} requests); raise it with --llm-token-budget")
        o = self._openai
        attempt = 0
        while True:
            t0 = time.monotonic()
            try:
                resp = self._client.chat.completions.create(
                    model=self.cfg.model or "", messages=list(messages),  # type: ignore[arg-type]
                    max_tokens=self.cfg.max_tokens, temperature=self.cfg.temperature,
                    **({} if seed is None else {"seed": seed}))
            except (o.RateLimitError, o.InternalServerError, o.APITimeoutError, o.APIConnectionError) as e:
                why = _describe(e)
                self._log(conversation, messages, None, error=why, seconds=time.monotonic() - t0)
                if attempt >= self.cfg.retries:
                    raise LLMError(f"LLM endpoint {self.cfg.base_url} failed after {attempt + 1} attempts: "
                                   f"{why}") from None
                self._sleep(self.cfg.backoff * (2 ** attempt))
                attempt += 1
                continue
            except o.APIStatusError as e:  # 4xx other than 429: retrying will not help
                why = _describe(e)
                self._log(conversation, messages, None, error=why, seconds=time.monotonic() - t0)
                raise LLMError(f"LLM endpoint {self.cfg.base_url} refused the request: {why}") from None
            except o.OpenAIError as e:
                why = _describe(e)
                self._log(conversation, messages, None, error=why, seconds=time.monotonic() - t0)
                raise LLMError(f"LLM endpoint {self.cfg.base_url}: {why}") from None
            break
        text = _answer_text(resp)
        self.usage.requests += 1
        self.usage.by_conversation[conversation] = self.usage.by_conversation.get(conversation, 0) + 1
        u = getattr(resp, "usage", None)
        self.usage.prompt_tokens += int(getattr(u, "prompt_tokens", 0) or 0)
        self.usage.completion_tokens += int(getattr(u, "completion_tokens", 0) or 0)
        if len(text) > MAX_ANSWER_CHARS:
            text = text[:MAX_ANSWER_CHARS]
        self._log(conversation, messages, text, seconds=time.monotonic() - t0)
        return text

    def _log(self, conversation: str, messages: Sequence[Message], answer: str | None, *,
             error: str | None = None, seconds: float = 0.0) -> None:
        if self.cfg.log is None:
            return
        rec = {"time": round(time.time(), 3), "conversation": conversation, "model": self.cfg.model,
               "messages": list(messages), "answer": answer, "error": error, "seconds": round(seconds, 3),
               "tokens": {"prompt": self.usage.prompt_tokens, "completion": self.usage.completion_tokens}}
        with open(self.cfg.log, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")


def _describe(e: Exception) -> str:
    status = getattr(e, "status_code", None)
    name = type(e).__name__
    return f"{name} (HTTP {status})" if status else name


def _answer_text(resp: Any) -> str:
    """The first choice's content; anything malformed is an empty answer (the caller asks again)."""
    try:
        content = resp.choices[0].message.content
    except (AttributeError, IndexError, TypeError):
        return ""
    return content if isinstance(content, str) else ""
