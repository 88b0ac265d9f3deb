"""Fixtures for the compaction tests: a local OpenAI-compatible chat server and store builders.

``FakeModelServer`` listens on 127.0.0.1 (a free port) and answers ``POST /v1/chat/completions``
with whatever its ``responder(request, index)`` returns: ``(status, content_or_body, delay)``, or
``(status, content_or_body, delay, headers)`` with headers to send (a 429 gets ``Retry-After: 0``
unless they say otherwise).
A str content becomes a normal chat completion whose message content is that string; a dict is
sent as the JSON body as it is (for error bodies). Every request is recorded with its start and
end time (``time.monotonic``) and its path, so tests can count retries, show that chunks overlapped
and see which endpoint LiteLLM called (``/v1/embeddings`` for the hybrid-search tests).
LiteLLM reaches it as ``model="openai/test-model", api_base=server.api_base``.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

import orjson


@dataclass
class RecordedRequest:
    body: dict
    start: float
    end: float = 0.0
    status: int = 0
    path: str = ""          # /v1/chat/completions, /v1/embeddings ...
    authorization: str | None = None  # the request's Authorization header

    @property
    def system(self) -> str:
        return self.body["messages"][0]["content"]

    @property
    def user(self) -> str:
        return self.body["messages"][-1]["content"]


@dataclass
class FakeModelServer:
    responder: Callable[[dict, int], tuple]
    requests: list = field(default_factory=list)

    def __post_init__(self):
        server_self = self
        lock = self._arrived = threading.Condition()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                record = RecordedRequest(body, time.monotonic(), authorization=self.headers.get("Authorization"),
                                         path=self.path)
                with lock:
                    index = len(server_self.requests)
                    server_self.requests.append(record)
                    lock.notify_all()
                status, payload, delay, *extra = server_self.responder(body, index)   # extra: {header: value}
                if delay:
                    time.sleep(delay)
                if isinstance(payload, str):
                    payload = completion(payload)
                # bytes: a body sent as it is (a proxy's HTML page where a completion was expected)
                data = payload if isinstance(payload, bytes) else orjson.dumps(payload)
                record.status = status
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "text/html" if isinstance(payload, bytes) else "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    headers = {"Retry-After": "0"} if status == 429 else {}
                    for name, value in {**headers, **(extra[0] if extra else {})}.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                record.end = time.monotonic()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def wait_for_requests(self, n: int, timeout: float = 60.0) -> bool:
        """Wait until ``n`` requests have arrived (a responder holding its answer until another
        request is in flight shows concurrency without relying on how fast the machine is)."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.requests) >= n, timeout)

    def max_overlap(self) -> int:
        """The largest number of requests that were in flight at the same moment."""
        events = sorted([(r.start, 1) for r in self.requests] + [(r.end, -1) for r in self.requests])
        best = current = 0
        for _, delta in events:
            current += delta
            best = max(best, current)
        return best


def completion(content: str) -> dict:
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1700000000, "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


def error_body(status: int, message: str) -> dict:
    return {"error": {"message": message, "type": "server_error" if status >= 500 else "rate_limit_error",
                      "code": status}}


def good_answer(summary: str = "The user asked about order A-1042; lookup_order ran; it is with DHL.",
                facts=None) -> str:
    if facts is None:
        facts = [{"fact": "User prefers short answers", "tags": ["preference"], "confidence": 0.9}]
    return orjson.dumps({"episodic_summary": summary, "semantic_facts": facts}).decode()


def transcript_items(body: dict) -> tuple[list[str], list[str]]:
    """The user asks and the files written (``Edit``/``Write`` calls' ``file_path``) in a
    summarizer request's ``<transcript>`` block, in order."""
    from memcli.models import NON_OPENING_TAGS

    user = body["messages"][-1]["content"]
    block = user.split("<transcript", 1)[1].split("\n", 1)[1].split("\n</transcript>", 1)[0]
    asks, files = [], []
    for line in block.splitlines():
        trace = json.loads(line)
        if trace.get("type") == "user" and not NON_OPENING_TAGS.intersection(trace.get("tags") or ()):
            asks.append(trace["content"])
        elif trace.get("type") == "tool_call" and trace.get("tool") in ("Edit", "Write"):
            path = trace["args"]["file_path"]
            files += [path] if path not in files else []
    return asks, files


def faithful_answer(body: dict, summary: str = "The user asked about orders; lookup_order ran.", facts=None,
                    leave_out: tuple = ()) -> str:
    """A good answer to the request ``body`` that names every ask and file of its transcript
    (those in ``leave_out`` aside), as a model that follows the prompt does."""
    asks, files = transcript_items(body)
    text = summary + "\nAll user messages: " + "; ".join(f'"{a}"' for a in asks if a not in leave_out)
    kept = [f for f in files if f not in leave_out]
    if kept:
        text += "\nFiles and code sections: " + ", ".join(kept)
    return good_answer(text, facts)


def conversation(n_turns: int, *, prefix: str = "t", system: bool = True, big: int = 0) -> list[dict]:
    """Native events: a system prompt, then ``n_turns`` turns of user ask, a tool call and its
    result, and an assistant reply, with ids ``{prefix}-{turn}-{k}``. ``big`` pads each tool
    result with that many characters."""
    events = []
    if system:
        events.append({"id": f"{prefix}-sys", "trace_type": "user", "content": "You are a support agent.",
                       "tags": ["system"]})
    for i in range(1, n_turns + 1):
        order = f"A-{1000 + i}"
        events += [
            {"id": f"{prefix}-{i}-u", "trace_type": "user", "content": f"Where is order {order}?"},
            {"id": f"{prefix}-{i}-c", "trace_type": "tool_call", "tool_name": "lookup_order",
             "tool_call_id": f"call_{i}", "tool_args": {"order_id": order}},
            {"id": f"{prefix}-{i}-r", "trace_type": "tool_result", "tool_name": "lookup_order",
             "tool_call_id": f"call_{i}",
             "tool_result": {"order_id": order, "status": "in transit", "note": "x" * big}},
            {"id": f"{prefix}-{i}-a", "trace_type": "assistant", "content": f"Order {order} is with DHL."},
        ]
    # fixed timestamps: the bytes of the store are then the same on every run (the crash tests
    # cut copies at byte offsets and must not depend on how long a float's repr happens to be)
    for k, event in enumerate(events):
        event["ts"] = 1772442000.5 + 60 * k
    return events


def long_turn(steps: int = 40) -> list[dict]:
    """One turn of ``steps`` steps (a note, a call, its result) after one ask, ids ``ask``,
    ``n{i}``, ``c{i}``, ``r{i}``, fixed timestamps: the open turn, where only steps can move."""
    events = [{"id": "ask", "trace_type": "user", "content": "Make the suite pass."}]
    for i in range(steps):
        events += [{"id": f"n{i}", "trace_type": "assistant", "content": f"Step {i}: running the next test file."},
                   {"id": f"c{i}", "trace_type": "tool_call", "tool_name": "Bash", "tool_call_id": f"k{i}",
                    "tool_args": {"command": f"pytest -q tests/test_{i}.py"}},
                   {"id": f"r{i}", "trace_type": "tool_result", "tool_call_id": f"k{i}",
                    "tool_result": " ".join(f"tests/test_{i}.py::test_{k} PASSED" for k in range(12))}]
    for k, event in enumerate(events):
        event["ts"] = 1772442000.5 + k
    return events


def ingest_conversation(cli, turns: int, big: int = 0) -> None:
    """Agent ``a`` of :func:`conversation` (``turns`` turns, tool results padded by ``big``)."""
    result = cli("ingest", "a", input=conversation(turns, big=big))
    assert result.exit_code == 0, result.stderr


def compact_with_model(cli, srv, *args):
    """``memcli compact a --model openai/test-model`` against the server ``srv``."""
    return cli("compact", "a", "--model", "openai/test-model", "--api-base", srv.api_base, *args)
