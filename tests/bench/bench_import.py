"""Importing recorded transcripts (``memcli ingest --from ...``): a 1 MB transcript of each format,
generated here with the shapes of the real ones (split assistant messages, parallel tool calls,
~1 KB tool outputs, token counts).

Rows per format:

* ``import <format> <size>``: library ``ingest()`` of the transcript into a fresh agent (format
  detection, mapping, validation, linking, durable append), against the baseline of ingesting
  the very same traces as native NDJSON without their turn_id/seq (what the importer adds on
  top of plain ingest);
* ``re-import <format>``: importing the unchanged file again (everything is "already present"
  — a CI job syncing a live transcript does this every run), against the first import; it must
  not cost more (1.25x allows for noise on a shared machine);
* ``split 300 conversations``: ``ingest(..., split=True)`` of a tau-bench-like file of 300
  records into 300 agents, against importing the same 300 conversations from 300 files of one
  conversation each (what a user would script with ``jq`` without ``--split``).

Formats written as their producers write them: NDJSON (Claude Code, Codex, OpenAI, Anthropic,
Responses items), a JSON array (Gemini contents, OpenHands events, Cline messages), one document
(an inspect_ai log with one sample, a ShareGPT dataset of one record).

``MEMCLI_BENCH_IMPORT_MB`` sets the transcript size (default 1). Times are the best of
``MEMCLI_BENCH_REPEAT`` (default 3) runs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import orjson

from memcli.ingest.api import ingest

SIZE_MB = float(os.environ.get("MEMCLI_BENCH_IMPORT_MB", "1"))
REPEAT = int(os.environ.get("MEMCLI_BENCH_REPEAT", "3"))
OUTPUT = ("line of tool output, the kind of thing ls or pytest prints\n" * 18)[:1000]


def _ts(i: int) -> str:
    return f"2026-01-01T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}.000Z"


def claude_code(turn: int) -> list:
    base = f"{turn:06d}"
    line = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/repo",
            "sessionId": "bench-session", "version": "2.0.0", "gitBranch": "main"}
    usage = {"input_tokens": 9, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 20000, "output_tokens": 120}

    def assistant(n, block):
        return {**line, "type": "assistant", "uuid": f"{base}-a{n}", "timestamp": _ts(turn * 10 + n),
                "requestId": f"req_{base}", "message": {"id": f"msg_{base}", "type": "message", "role": "assistant",
                                                         "model": "claude-sonnet-4", "content": [block], "usage": usage}}
    return [
        {**line, "type": "user", "uuid": f"{base}-u", "timestamp": _ts(turn * 10),
         "message": {"role": "user", "content": f"Please fix failing test number {turn} in the suite."}},
        assistant(1, {"type": "text", "text": "I'll look at the test and the code it exercises."}),
        assistant(2, {"type": "tool_use", "id": f"toolu_{base}a", "name": "Bash", "input": {"command": "pytest -x"}}),
        assistant(3, {"type": "tool_use", "id": f"toolu_{base}b", "name": "Read", "input": {"file_path": "app.py"}}),
        {**line, "type": "user", "uuid": f"{base}-r1", "timestamp": _ts(turn * 10 + 4),
         "message": {"role": "user", "content": [{"tool_use_id": f"toolu_{base}a", "type": "tool_result", "content": OUTPUT, "is_error": True}]}},
        {**line, "type": "user", "uuid": f"{base}-r2", "timestamp": _ts(turn * 10 + 5),
         "message": {"role": "user", "content": [{"tool_use_id": f"toolu_{base}b", "type": "tool_result", "content": OUTPUT}]}},
        assistant(6, {"type": "text", "text": "Fixed: the comparison was off by one."}),
        {"type": "file-history-snapshot", "messageId": f"{base}-u", "snapshot": {"trackedFileBackups": {}}},
    ]


def codex(turn: int) -> list:
    base = f"{turn:06d}"
    usage = {"input_tokens": 20000, "cached_input_tokens": 18000, "output_tokens": 300, "reasoning_output_tokens": 100,
             "total_tokens": 20300}
    ask = f"Please fix failing test number {turn} in the suite."

    def line(i, kind, payload):
        return {"timestamp": _ts(turn * 20 + i), "type": kind, "payload": payload}
    lines = [] if turn else [line(0, "session_meta", {"id": "bench-session", "cwd": "/repo"})]
    return lines + [
        line(1, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ask}]}),
        line(2, "event_msg", {"type": "user_message", "message": ask, "images": []}),
        line(3, "turn_context", {"turn_id": base, "cwd": "/repo", "model": "gpt-5-codex"}),
        line(4, "response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Looking at the test"}],
                                  "encrypted_content": "gAAAA" * 40}),
        line(5, "response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Running the tests."}]}),
        line(6, "response_item", {"type": "function_call", "name": "exec_command", "arguments": '{"cmd":"pytest -x"}', "call_id": f"call_{base}a"}),
        line(7, "response_item", {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch", "call_id": f"call_{base}b"}),
        line(8, "event_msg", {"type": "token_count", "info": {"total_token_usage": usage, "last_token_usage": usage}}),
        line(9, "response_item", {"type": "function_call_output", "call_id": f"call_{base}a", "output": OUTPUT}),
        line(10, "response_item", {"type": "custom_tool_call_output", "call_id": f"call_{base}b", "output": OUTPUT}),
        line(11, "event_msg", {"type": "agent_message", "message": "Fixed."}),
        line(12, "response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Fixed."}]}),
    ]


def openai(turn: int) -> list:
    base = f"{turn:06d}"
    head = [{"role": "system", "content": "You are a careful coding agent."}] if turn == 0 else []
    return head + [
        {"role": "user", "content": f"Please fix failing test number {turn} in the suite."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{base}a", "type": "function", "function": {"name": "bash", "arguments": '{"command":"pytest -x"}'}},
            {"id": f"call_{base}b", "type": "function", "function": {"name": "read", "arguments": '{"path":"app.py"}'}}]},
        {"role": "tool", "tool_call_id": f"call_{base}a", "name": "bash", "content": OUTPUT},
        {"role": "tool", "tool_call_id": f"call_{base}b", "name": "read", "content": OUTPUT},
        {"role": "assistant", "content": "Fixed: the comparison was off by one."},
    ]


def anthropic(turn: int) -> list:
    base = f"{turn:06d}"
    return [
        {"role": "user", "content": f"Please fix failing test number {turn} in the suite."},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Run the tests first.", "signature": "Eq" * 60},
            {"type": "tool_use", "id": f"toolu_{base}a", "name": "bash", "input": {"command": "pytest -x"}},
            {"type": "tool_use", "id": f"toolu_{base}b", "name": "read", "input": {"path": "app.py"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{base}a", "content": OUTPUT, "is_error": True},
            {"type": "tool_result", "tool_use_id": f"toolu_{base}b", "content": [{"type": "text", "text": OUTPUT}]}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Fixed: the comparison was off by one."}]},
    ]


def openai_responses(turn: int) -> list:
    base = f"{turn:06d}"
    return [
        {"type": "message", "role": "user", "content": f"Please fix failing test number {turn} in the suite."},
        {"type": "reasoning", "id": f"rs_{base}", "summary": [{"type": "summary_text", "text": "Run the tests first."}],
         "encrypted_content": "gAAAA" * 40},
        {"type": "function_call", "call_id": f"call_{base}a", "name": "bash", "arguments": '{"command":"pytest -x"}'},
        {"type": "function_call", "call_id": f"call_{base}b", "name": "read", "arguments": '{"path":"app.py"}'},
        {"type": "function_call_output", "call_id": f"call_{base}a", "output": OUTPUT},
        {"type": "function_call_output", "call_id": f"call_{base}b", "output": OUTPUT},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Fixed: the comparison was off by one."}]},
    ]


def gemini(turn: int) -> list:
    return [
        {"role": "user", "parts": [{"text": f"Please fix failing test number {turn} in the suite."}]},
        {"role": "model", "parts": [{"text": "Run the tests first.", "thought": True},
                                    {"functionCall": {"name": "bash", "args": {"command": "pytest -x"}}, "thoughtSignature": "c2ln" * 20},
                                    {"functionCall": {"name": "read", "args": {"path": "app.py"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "bash", "response": {"error": OUTPUT}}},
                                   {"functionResponse": {"name": "read", "response": {"output": OUTPUT}}}]},
        {"role": "model", "parts": [{"text": "Fixed: the comparison was off by one."}]},
    ]


def openhands(turn: int) -> list:
    base = turn * 10

    def meta(n, name, args):
        return {"function_name": name, "tool_call_id": f"toolu_{base + n}", "total_calls_in_response": 1,
                "model_response": {"id": f"resp-{base + n}", "model": "claude-sonnet-4",
                                   "usage": {"prompt_tokens": 20000, "completion_tokens": 120},
                                   "choices": [{"message": {"role": "assistant", "tool_calls": [
                                       {"id": f"toolu_{base + n}", "type": "function",
                                        "function": {"name": name, "arguments": orjson.dumps(args).decode()}}]}}]}}
    run, read = meta(1, "execute_bash", {"command": "pytest -x"}), meta(3, "str_replace_editor", {"command": "view", "path": "app.py"})
    return [
        {"id": base, "timestamp": _ts(base), "source": "user", "action": "message", "message": "ask",
         "args": {"content": f"Please fix failing test number {turn} in the suite.", "image_urls": None}},
        {"id": base + 1, "timestamp": _ts(base + 1), "source": "agent", "action": "run", "message": "Running pytest",
         "args": {"command": "pytest -x", "thought": "Run the tests first.", "blocking": False}, "tool_call_metadata": run},
        {"id": base + 2, "timestamp": _ts(base + 2), "source": "agent", "observation": "run", "cause": base + 1,
         "content": OUTPUT, "extras": {"command": "pytest -x", "metadata": {"exit_code": 1}}, "tool_call_metadata": run},
        {"id": base + 3, "timestamp": _ts(base + 3), "source": "agent", "action": "read", "message": "Reading app.py",
         "args": {"path": "app.py", "thought": ""}, "tool_call_metadata": read},
        {"id": base + 4, "timestamp": _ts(base + 4), "source": "agent", "observation": "read", "cause": base + 3,
         "content": OUTPUT, "extras": {"path": "app.py"}, "tool_call_metadata": read},
        {"id": base + 5, "timestamp": _ts(base + 5), "source": "agent", "action": "message",
         "args": {"content": "Fixed: the comparison was off by one.", "wait_for_response": True}},
    ]


def inspect(turn: int) -> list:
    base = f"{turn:06d}"
    return [
        {"id": f"u{base}", "role": "user", "content": f"Please fix failing test number {turn} in the suite."},
        {"id": f"a{base}", "role": "assistant", "content": [{"type": "reasoning", "reasoning": "Run the tests first."}],
         "tool_calls": [{"id": f"c{base}a", "function": "bash", "arguments": {"cmd": "pytest -x"}},
                        {"id": f"c{base}b", "function": "read", "arguments": {"path": "app.py"}}]},
        {"id": f"t{base}a", "role": "tool", "tool_call_id": f"c{base}a", "function": "bash", "content": OUTPUT,
         "error": {"type": "unknown", "message": "exit 1"}},
        {"id": f"t{base}b", "role": "tool", "tool_call_id": f"c{base}b", "function": "read", "content": OUTPUT},
        {"id": f"f{base}", "role": "assistant", "content": "Fixed: the comparison was off by one."},
    ]


def sharegpt(turn: int) -> list:
    return [
        {"from": "human", "value": f"Please fix failing test number {turn} in the suite."},
        {"from": "function_call", "value": '{"name": "bash", "arguments": {"command": "pytest -x"}}'},
        {"from": "observation", "value": OUTPUT},
        {"from": "function_call", "value": '{"name": "read", "arguments": {"path": "app.py"}}'},
        {"from": "observation", "value": OUTPUT},
        {"from": "gpt", "value": "Fixed: the comparison was off by one."},
    ]


def cline(turn: int) -> list:
    env = "<environment_details>\n# Current Mode\nACT MODE\n</environment_details>"
    ts = 1_737_000_000_000 + turn * 10_000
    return [
        {"role": "user", "ts": ts, "content": [{"type": "text", "text": f"<task>\nPlease fix failing test number {turn}\n</task>"},
                                               {"type": "text", "text": env}]},
        {"role": "assistant", "ts": ts + 1, "modelInfo": {"modelId": "claude-sonnet-4"}, "content": [
            {"type": "text", "text": "Run the tests first."},
            {"type": "tool_use", "id": f"toolu_{turn}a", "name": "execute_command", "input": {"command": "pytest -x"}},
            {"type": "tool_use", "id": f"toolu_{turn}b", "name": "read_file", "input": {"path": "app.py"}}]},
        {"role": "user", "ts": ts + 2, "content": [
            {"type": "text", "text": f"[execute_command for 'pytest -x'] Result:\n{OUTPUT}"},
            {"type": "text", "text": f"[read_file for 'app.py'] Result:\n{OUTPUT}"}, {"type": "text", "text": env}]},
        {"role": "assistant", "ts": ts + 3, "content": [{"type": "text", "text": "Fixed: the comparison was off by one."}]},
    ]


GENERATORS = {"claude-code": claude_code, "codex": codex, "openai": openai, "anthropic": anthropic,
              "openai-responses": openai_responses, "gemini": gemini, "openhands": openhands, "inspect": inspect,
              "sharegpt": sharegpt, "cline": cline}
_ARRAY = frozenset({"gemini", "openhands", "cline"})


def transcript(fmt: str, size: int) -> bytes:
    out, total, turn = [], 0, 0
    while total < size:
        for value in GENERATORS[fmt](turn):
            line = orjson.dumps(value) + b"\n"
            out.append(line)
            total += len(line)
        turn += 1
    if fmt in _ARRAY:
        return b"[" + b",".join(out) + b"]\n"
    if fmt == "inspect":
        items = b"[" + b",".join(out) + b"]"
        return b'{"version":2,"status":"success","eval":{"task":"bench","model":"openai/gpt-4o"},"samples":[' \
               b'{"id":"s1","epoch":1,"input":"x","target":"y","messages":' + items + b"}]}\n"
    if fmt == "sharegpt":
        return b'[{"id":"r1","conversations":[' + b",".join(out) + b"]}]\n"
    return b"".join(out)


def split_file(conversations: int) -> list[bytes]:
    """A tau-bench-like array of records, each with its own message list; and each record alone."""
    records = []
    for i in range(conversations):
        messages = [m for turn in range(3) for m in openai(turn + i * 3)]
        records.append(orjson.dumps({"task_id": i, "trial": 0, "traj": messages}))
    return records


def _best_interleaved(*fns) -> list[float]:
    """Best wall time of each function, runs interleaved so that a busy moment of a shared
    machine does not land on one of them only."""
    best = [float("inf")] * len(fns)
    for _ in range(REPEAT):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def run() -> list[dict]:
    rows = []
    size = int(SIZE_MB * 1_000_000)
    work = Path(tempfile.mkdtemp(prefix="memcli-bench-import-"))
    try:
        for fmt in GENERATORS:
            source = work / f"{fmt}.jsonl"
            source.write_bytes(transcript(fmt, size))
            counter = iter(range(1_000_000))

            def fresh_import():
                return ingest(work / "mem", f"{fmt}-{next(counter)}", source, fmt="auto")

            result = fresh_import()
            assert result.format == fmt and result.detected, (fmt, result.format)
            events = result.appended
            stored = (work / "mem" / "agents" / f"{fmt}-0" / "raw_traces.jsonl").read_bytes().splitlines()
            native = work / f"{fmt}.native.jsonl"
            # the same traces as native events (ids kept; turns and seqs left to the linker, as for imports)
            native.write_bytes(b"".join(orjson.dumps({k: v for k, v in orjson.loads(line).items()
                                                      if k not in ("turn_id", "seq")}) + b"\n" for line in stored))
            imported, native_time, again = _best_interleaved(
                fresh_import,
                lambda: ingest(work / "mem", f"native-{next(counter)}", native, fmt="native"),
                lambda: ingest(work / "mem", f"{fmt}-0", source, fmt="auto"))
            mb = source.stat().st_size / 1e6
            rows.append({
                "name": f"import {fmt} {mb:.1f} MB", "value": imported, "baseline": native_time, "unit": "s",
                "target": 3.0,
                "note": f"{imported * 1000:.0f} ms for {mb:.1f} MB ({events} traces, {events / imported:,.0f} traces/s); "
                        f"baseline: the same traces as native NDJSON ({native_time * 1000:.0f} ms)",
            })
            rows.append({
                "name": f"re-import {fmt} (nothing new)", "value": again, "baseline": imported, "unit": "s",
                "target": 1.25,
                "note": f"{again * 1000:.0f} ms; baseline: the first import (a re-import still maps, validates and "
                        "redacts every event before its id is found present, so it saves only the writing)",
            })
        rows.append(_split_row(work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def _split_row(work: Path) -> dict:
    records = split_file(300)
    many = work / "many.json"
    many.write_bytes(b"[" + b",\n".join(records) + b"]")
    singles = []
    for i, record in enumerate(records):
        single = work / f"one-{i}.json"
        single.write_bytes(record)
        singles.append(single)
    counter = iter(range(1_000_000))

    def split():
        result = ingest(work / "mem", f"split-{next(counter)}", many, split=True)
        assert len(result.agents) == 300
        return result

    def one_by_one():
        run = next(counter)
        for i, single in enumerate(singles):
            ingest(work / "mem", f"one-{run}.{i + 1}", single)

    split_time, singles_time = _best_interleaved(split, one_by_one)
    mb = many.stat().st_size / 1e6
    return {"name": "split 300 conversations", "value": split_time, "baseline": singles_time, "unit": "s",
            "target": 1.5,
            "note": f"{split_time * 1000:.0f} ms for {mb:.1f} MB into 300 agents (--split validates all first); "
                    f"baseline: the 300 conversations from 300 files ({singles_time * 1000:.0f} ms)"}


if __name__ == "__main__":
    for row in run():
        print(row)
