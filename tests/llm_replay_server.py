"""A scripted OpenAI-compatible server on 127.0.0.1 for testing the LLM path with the real client.

``POST /v1/chat/completions`` (non-streaming) answers from a *scenario*: for
each conversation role (``generator``, ``reference``, ``arbiter``, ``repair``, told apart
by the first line of the system prompt) a list of steps, consumed one per
request; the last step repeats.  A step is a string (the answer) or a dict
with any of ``answer``, ``status`` (an HTTP error status instead of an
answer, e.g. 429), ``sleep`` (seconds before replying).  A role without a
script falls back to ``specs``: the answer is the hand-written ``NAME.ir`` of
the ``examples/specs/NAME.txt`` whose text appears in the request (arbiter:
``CHOICE: A``).  ``respond(role, body)``, when given, answers first (None: the
script's step): an answer computed from the request, e.g. from its ``seed``
(one per sample of a group) and the turns already in the conversation.
Every request is recorded in ``server.requests``.

    with ReplayServer({"generator": ["```ir\\n...\\n```"]}) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="x")

Run standalone to point ``transpile --from-text`` at the specs:
``python tests/llm_replay_server.py [--port 8765]`` prints the base URL.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SPECS = Path(__file__).resolve().parent.parent / "examples" / "specs"
Step = str | dict[str, Any]


def role_of(messages: list[dict[str, Any]]) -> str:
    """Which conversation a request belongs to, from its system prompt's first line."""
    system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
    first = system.splitlines()[0] if system else ""
    if "repair CUDA" in first:
        return "repair"
    if "review two candidate programs" in first:
        return "arbiter"
    if "reference implementations" in first:
        return "reference"
    return "generator"


def spec_answer(messages: list[dict[str, Any]], role: str) -> str:
    """The hand-written answer for the spec quoted in the request."""
    if role == "arbiter":
        return "Program A follows the description.\nCHOICE: A"
    user = next((str(m.get("content", "")) for m in messages if m.get("role") == "user"), "")
    for txt in sorted(SPECS.glob("*.txt")):
        if txt.read_text().strip() in user:
            return f"```ir\n{txt.with_suffix('.ir').read_text()}```"
    return "I do not know this spec."


class ReplayServer:
    """The server, in a daemon thread, on an ephemeral port; a context manager."""

    def __init__(self, script: Mapping[str, Sequence[Step]] | None = None, *, port: int = 0,
                 respond: Callable[[str, dict[str, Any]], str | None] | None = None) -> None:
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.respond = respond
        self.cursor: dict[str, int] = {}
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
                    return
                n = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(n) or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "bad json", "type": "invalid_request_error"}})
                    return
                messages = body.get("messages") or []
                role = role_of(messages)
                step = server.next_step(role, body)
                if isinstance(step, str):
                    step = {"answer": step}
                if step.get("sleep"):
                    time.sleep(float(step["sleep"]))
                if step.get("status"):
                    status = int(step["status"])
                    self._send(status, {"error": {"message": f"scripted {status}", "type": "scripted"}})
                    return
                answer = step.get("answer")
                if answer is None:
                    answer = spec_answer(messages, role)
                self._send(200, {
                    "id": f"chatcmpl-replay-{len(server.requests)}", "object": "chat.completion",
                    "created": int(time.time()), "model": body.get("model", "replay"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": answer}}],
                    "usage": {"prompt_tokens": sum(len(str(m.get("content", ""))) for m in messages) // 4,
                              "completion_tokens": len(answer) // 4,
                              "total_tokens": 0},
                })

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    if status == 429:
                        self.send_header("Retry-After", "0")
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False  # a handler still sleeping (timeout test) must not hold up close
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    def next_step(self, role: str, body: dict[str, Any]) -> dict[str, Any] | str:
        """Record the request and return this role's next scripted step."""
        with self.lock:
            self.requests.append({"role": role, "body": body})
            answer = self.respond(role, body) if self.respond is not None else None
            if answer is not None:
                return {"answer": answer}
            steps = self.script.get(role)
            if not steps:
                return {}
            i = self.cursor.get(role, 0)
            self.cursor[role] = i + 1
            return steps[min(i, len(steps) - 1)]

    def of(self, role: str) -> list[dict[str, Any]]:
        """The recorded request bodies of one role, in order."""
        return [r["body"] for r in self.requests if r["role"] == role]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ReplayServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    port = ap.parse_args().port
    with ReplayServer(port=port) as srv:
        print(f"OPENAI_BASE_URL={srv.base_url} TRANSPILE_MODEL=replay OPENAI_API_KEY=dummy", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
