"""Bad input gets a clear error naming line and field, exit 1, and every store file unchanged."""

from __future__ import annotations

import os

import pytest

from tests.helpers import ndjson, tree_digest

GOOD = [{"trace_type": "user", "content": "hello"}, {"trace_type": "assistant", "content": "hi"}]

CASES = [
    # (name, input bytes, expected message fragment)
    ("not json", ndjson(GOOD) + b"{oops\n", "line 3: not valid JSON"),
    ("not an object", ndjson(GOOD) + b"[1, 2]\n", "line 3: expected a JSON object, got array"),
    ("string value", ndjson(GOOD[:1]) + b'"just text"\n', "line 2: expected a JSON object, got string"),
    ("unknown trace_type", ndjson(GOOD + [{"trace_type": "system", "content": "x"}]),
     "line 3: field 'trace_type': unknown value 'system'"),
    ("missing trace_type", ndjson(GOOD + [{"content": "x"}]), "line 3: field 'trace_type': missing"),
    ("content not a string", ndjson(GOOD + [{"trace_type": "user", "content": ["a"]}]),
     "line 3: field 'content': expected a string, got array"),
    ("seq not an integer", ndjson(GOOD + [{"trace_type": "user", "seq": "1"}]),
     "line 3: field 'seq': expected an integer, got string"),
    ("seq zero", ndjson(GOOD + [{"trace_type": "user", "seq": 0}]), "line 3: field 'seq': must be 1 or more"),
    ("ts not a time", ndjson(GOOD + [{"trace_type": "user", "ts": "yesterday"}]),
     "line 3: field 'ts': not an ISO-8601 time or epoch seconds"),
    ("ts boolean", ndjson(GOOD + [{"trace_type": "user", "ts": True}]), "line 3: field 'ts': expected a number"),
    ("tool_args not an object", ndjson(GOOD + [{"trace_type": "tool_call", "tool_name": "x",
                                                "tool_call_id": "c", "tool_args": "{}"}]),
     "line 3: field 'tool_args': expected an object, got string"),
    ("tool_result without tool_call_id", ndjson(GOOD + [{"trace_type": "tool_result", "tool_result": 1}]),
     "line 3: field 'tool_call_id': required for a tool_result"),
    ("tool_call without tool_call_id", ndjson(GOOD + [{"trace_type": "tool_call", "tool_name": "x"}]),
     "line 3: field 'tool_call_id': required for a tool_call"),
    ("tool_call without tool_name", ndjson(GOOD + [{"trace_type": "tool_call", "tool_call_id": "c"}]),
     "line 3: field 'tool_name': required for a tool_call"),
    ("tags not strings", ndjson(GOOD + [{"trace_type": "user", "tags": [1]}]),
     "line 3: field 'tags': expected an array of strings"),
    ("media wrong shape", ndjson(GOOD + [{"trace_type": "user", "media": ["a.png"]}]),
     "line 3: field 'media': expected an object of string arrays"),
    ("usage tokens negative", ndjson(GOOD + [{"trace_type": "assistant", "usage": {"prompt_tokens": -1}}]),
     "line 3: field 'usage.prompt_tokens'"),
    ("empty id", ndjson(GOOD + [{"trace_type": "user", "id": ""}]), "line 3: field 'id': must be 1-512 characters"),
    ("invalid utf-8", ndjson(GOOD) + b'{"trace_type": "user", "content": "caf\xe9"}\n', "line 3: invalid UTF-8"),
    # orjson reads 1,024 levels but writes 254: the store's write raised a traceback
    ("nested too deep", ndjson(GOOD) + b'{"trace_type": "user", "content": "x", "meta": ' + b"[" * 300 + b"]" * 300
     + b"}\n", "line 3: not storable: Recursion limit reached (nested more than 254 levels deep)"),
    ("bad json array element", b'[{"trace_type": "user"},\n {"trace_type": 7}\n]', "line 2: field 'trace_type'"),
    ("unclosed json array", b'[{"trace_type": "user"},\n', "not valid JSON (the array is not closed)"),
]


@pytest.fixture
def existing_store(cli, memory_dir):
    assert cli("ingest", "a", input=[{"trace_type": "user", "content": "before"}]).exit_code == 0
    return tree_digest(memory_dir)


@pytest.mark.parametrize("name,data,message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_rejected_whole_and_the_store_stays_byte_identical(cli, memory_dir, existing_store,
                                                                        name, data, message):
    result = cli("ingest", "a", input=data)
    assert result.exit_code == 1, result.stderr
    assert result.stderr.startswith("memcli: error: ")
    assert message in result.stderr
    assert "nothing was written" in result.stderr
    assert "Traceback" not in result.stderr
    assert tree_digest(memory_dir) == existing_store


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
@pytest.mark.parametrize("name,data,message", CASES[:4], ids=[c[0] for c in CASES[:4]])
def test_bad_input_from_a_file_names_the_file_and_the_line(cli, memory_dir, existing_store, tmp_path, stream,
                                                           name, data, message):
    """``ingest AGENT FILE`` said only ``line 420: …``; ``sync`` and the hooks name the file too."""
    path = tmp_path / "events.ndjson"
    path.write_bytes(data)
    result = cli("ingest", "a", str(path), *(["--stream"] if stream else []))
    assert result.exit_code == 1, result.stderr
    assert result.stderr.startswith(f"memcli: error: {path}: {message}")
    if not stream:
        assert tree_digest(memory_dir) == existing_store


@pytest.mark.parametrize("name,data,message", CASES[:6], ids=[c[0] for c in CASES[:6]])
def test_bad_input_for_a_new_agent_creates_no_agent(cli, memory_dir, name, data, message):
    result = cli("ingest", "fresh", input=data)
    assert result.exit_code == 1
    assert not (memory_dir / "agents" / "fresh" / "raw_traces.jsonl").exists()


def test_empty_line_in_the_middle_is_skipped(cli, memory_dir):
    data = ndjson(GOOD[:1]) + b"\n   \n" + ndjson(GOOD[1:])
    result = cli("ingest", "a", input=data)
    assert result.exit_code == 0
    assert "ingested 2 events" in result.stderr


def test_several_bad_lines_are_all_counted(cli, memory_dir):
    data = b"x\n" + ndjson(GOOD) + b"y\n"
    result = cli("ingest", "a", input=data)
    assert result.exit_code == 1
    assert "line 1: not valid JSON" in result.stderr
    assert "1 more invalid event (line 4: not valid JSON" in result.stderr


@pytest.mark.parametrize("agent", ["../evil", "a/b", "/etc", "..", ".hidden", "a..b", "x" * 129, "a b",
                                   "caf\u00e9", "a\x00b", "", "-rf"])
def test_invalid_agent_ids_are_refused_before_any_path_is_built(cli, memory_dir, tmp_path, agent):
    before = tree_digest(tmp_path)
    result = cli("ingest", "--", agent, input=GOOD) if agent.startswith("-") else cli("ingest", agent, input=GOOD)
    assert result.exit_code == 2
    assert "invalid agent id" in result.stderr
    assert tree_digest(tmp_path) == before
    assert not memory_dir.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_memory_dir_is_a_clean_error(cli, tmp_path):
    locked = tmp_path / "ro"
    locked.mkdir(mode=0o500)
    result = cli("--dir", locked / "mem", "ingest", "a", input=GOOD)
    assert result.exit_code == 1
    assert "cannot create" in result.stderr and "Permission denied" in result.stderr


def test_unwritable_memory_dir_is_a_clean_error_even_for_root(cli, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = cli("--dir", blocker, "ingest", "a", input=GOOD)
    assert result.exit_code == 1
    assert result.stderr.startswith("memcli: error: ")
    assert "Traceback" not in result.stderr
    assert blocker.read_text() == "not a directory"


def test_a_refusal_that_names_the_file_already_names_it_once(cli, memory_dir, tmp_path):
    path = tmp_path / "unknown.json"
    path.write_bytes(b'{"foo": 1}\n')
    result = cli("ingest", "a", str(path))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"memcli: error: line 1: cannot tell what format {path} is in (saw keys: foo)\n")
