"""`memcli export`: the jsonl backup round trip, json, filters, file output that never leaves half a
file, the point-in-time view, memory records, errors."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import orjson
import pytest

from memcli.export.api import export
from memcli.export.reader import open_history
from memcli.store.agent import AgentStore
from tests.export_fixtures import (
    CALL,
    EPISODIC,
    RES,
    SEMANTIC,
    A,
    U,
    archive_turns,
    copy_sample,
    write_memory,
)
from tests.helpers import agent_dir, proc_env, read_jsonl, tree_digest


def traces_of(memory_dir, agent):
    d = agent_dir(memory_dir, agent)
    return read_jsonl(d / "raw_traces_archive.jsonl") + read_jsonl(d / "raw_traces.jsonl")


@pytest.fixture
def sample(memory_dir):
    copy_sample(memory_dir)
    return memory_dir


@pytest.fixture
def archived(sample):
    """coder with its first 30 turns archived and memory items."""
    archive_turns(sample, "coder", 30)
    write_memory(sample, "coder")
    return sample


# ----------------------------------------------------------------------------- jsonl round trip

def test_jsonl_export_is_the_stored_lines_archive_then_active(cli, archived):
    d = agent_dir(archived, "coder")
    result = cli("export", "coder")
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == (d / "raw_traces_archive.jsonl").read_bytes() + (d / "raw_traces.jsonl").read_bytes()
    assert result.stderr == ""  # stdout exports are quiet


def test_jsonl_export_ingested_into_another_agent_reproduces_every_trace(cli, archived):
    original = traces_of(archived, "coder")
    exported = cli("export", "coder").stdout_bytes
    result = cli("ingest", "copy", input=exported)
    assert result.exit_code == 0, result.stderr
    assert f"ingested {len(original)} events" in result.stderr
    copied = read_jsonl(agent_dir(archived, "copy") / "raw_traces.jsonl")
    assert copied == original  # same ids, turns, seqs, ts, every field, same order
    # ingesting the same export again changes nothing, byte for byte
    before = tree_digest(agent_dir(archived, "copy"))
    again = cli("ingest", "copy", input=exported)
    assert again.exit_code == 0 and f"{len(original)} already present" in again.stderr
    assert tree_digest(agent_dir(archived, "copy")) == before
    # and the copy's own export is the same bytes as the original's
    assert cli("export", "copy").stdout_bytes == exported


def test_round_trip_through_a_real_pipe(archived, memcli_proc):
    env = proc_env()
    exporter = subprocess.Popen([sys.executable, "-m", "memcli", "export", "coder"], stdout=subprocess.PIPE, env=env)
    ingester = subprocess.run([sys.executable, "-m", "memcli", "ingest", "copy"], stdin=exporter.stdout,
                              capture_output=True, env=env, timeout=60)
    exporter.stdout.close()
    assert exporter.wait(timeout=60) == 0
    assert ingester.returncode == 0, ingester.stderr
    assert read_jsonl(agent_dir(archived, "copy") / "raw_traces.jsonl") == traces_of(archived, "coder")


def test_round_trip_keeps_unknown_fields_media_usage_and_given_ids(cli, memory_dir):
    events = [
        U("look", id="u1", media={"images": ["https://x/y.png"]}, custom={"k": [1, 2]}),
        CALL("c1", id="c1", args={"path": "a b", "n": 1}, correlation_id="corr"),
        A("thinking", tags=["reasoning"], usage={"prompt_tokens": 10, "completion_tokens": 2}),
        RES("c1", result={"nested": [None, True, 1.5]}, tool_error="boom", tool_result_ref="ref://1"),
        U("next"), RES("nobody", result="orphan"),
    ]
    assert cli("ingest", "a", input=events).exit_code == 0
    out = cli("export", "a").stdout_bytes
    assert cli("ingest", "b", input=out).exit_code == 0
    assert read_jsonl(agent_dir(memory_dir, "b") / "raw_traces.jsonl") == read_jsonl(agent_dir(memory_dir, "a") / "raw_traces.jsonl")


def test_blank_lines_and_an_unterminated_last_line_are_not_exported(cli, memory_dir):
    cli("ingest", "a", input=[U("one"), A("two"), U("three")])
    path = agent_dir(memory_dir, "a") / "raw_traces.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b"\n   \n" + lines[1] + lines[2] + b'{"id": "half')
    out = cli("export", "a").stdout_bytes
    assert out == b"".join(lines)
    assert [r["content"] for r in orjson.loads(cli("export", "a", "-f", "json").stdout_bytes)] == ["one", "two", "three"]


# ----------------------------------------------------------------------------- json

def test_json_is_one_array_of_the_same_records_and_round_trips(cli, archived):
    result = cli("export", "coder", "--format", "json")
    assert result.exit_code == 0
    records = orjson.loads(result.stdout_bytes)
    assert records == traces_of(archived, "coder")
    assert result.stdout_bytes.startswith(b"[\n{") and result.stdout_bytes.endswith(b"}\n]\n")
    assert result.stdout_bytes.count(b"\n") == len(records) + 2  # one element per line
    assert cli("ingest", "copy", input=result.stdout_bytes).exit_code == 0
    assert read_jsonl(agent_dir(archived, "copy") / "raw_traces.jsonl") == records


def test_json_of_an_agent_without_traces_is_an_empty_array(cli, memory_dir):
    write_memory(memory_dir, "mem-only")
    result = cli("export", "mem-only", "-f", "json")
    assert result.exit_code == 0 and result.stdout_bytes == b"[]\n"
    assert cli("export", "mem-only").stdout_bytes == b""


# ----------------------------------------------------------------------------- memory

def test_with_memory_appends_every_item_marked_with_record_type(cli, archived):
    out = cli("export", "coder", "--with-memory").stdout_bytes
    lines = [orjson.loads(line) for line in out.splitlines()]
    traces = traces_of(archived, "coder")
    assert lines[:len(traces)] == traces
    memory = lines[len(traces):]
    assert [m["record_type"] for m in memory] == ["episodic"] * 3 + ["semantic"] * 3 + ["archived"]
    assert [{k: v for k, v in m.items() if k != "record_type"} for m in memory[:-1]] == EPISODIC + SEMANTIC
    archive = read_jsonl(agent_dir(archived, "coder") / "raw_traces_archive.jsonl")
    assert memory[-1] == {"record_type": "archived", "first_id": archive[0]["id"], "last_id": archive[-1]["id"],
                          "traces": len(archive)}   # which traces were archived: ingest archives them again
    assert list(memory[0])[0] == "record_type"


def test_export_with_memory_then_ingest_restores_the_memory_too(cli, archived):
    out = cli("export", "coder", "--with-memory").stdout_bytes
    result = cli("ingest", "copy", input=out)
    assert result.exit_code == 0, result.stderr
    assert "restored 3 episodic and 3 semantic memory items into 'copy'" in result.stderr
    d_src, d_copy = agent_dir(archived, "coder"), agent_dir(archived, "copy")
    assert read_jsonl(d_copy / "episodic.jsonl") == read_jsonl(d_src / "episodic.jsonl")
    assert read_jsonl(d_copy / "semantic.jsonl") == read_jsonl(d_src / "semantic.jsonl")
    # the same split: the archived traces are archived in the copy too
    for name in ("raw_traces_archive.jsonl", "raw_traces.jsonl"):
        assert read_jsonl(d_copy / name) == read_jsonl(d_src / name)
    assert read_jsonl(d_src / "raw_traces_archive.jsonl")
    before = tree_digest(d_copy)
    again = cli("ingest", "copy", input=out)
    assert again.exit_code == 0 and "(6 already present)" in again.stderr
    assert tree_digest(d_copy) == before
    # the json form restores the same way
    assert cli("ingest", "copy2", input=cli("export", "coder", "-f", "json", "--with-memory").stdout_bytes).exit_code == 0
    data_files = {k: v for k, v in before.items() if not k.startswith(".")}  # caches hold inode numbers
    assert {k: v for k, v in tree_digest(agent_dir(archived, "copy2")).items() if not k.startswith(".")} == data_files


def test_memory_only_export_ingests(cli, memory_dir):
    write_memory(memory_dir, "mem-only")
    out = cli("export", "mem-only", "--with-memory").stdout_bytes
    result = cli("ingest", "b", input=out)
    assert result.exit_code == 0, result.stderr
    assert read_jsonl(agent_dir(memory_dir, "b") / "semantic.jsonl") == SEMANTIC


def test_a_bad_memory_record_rejects_the_whole_input(cli, memory_dir):
    bad = [U("hi", id="u1"), {"record_type": "episodic", "id": "ep", "ts": 1.0, "summary": 3, "turn_ids": []}]
    result = cli("ingest", "b", input=bad)
    assert result.exit_code == 1
    assert "line 2: field 'summary': expected a string" in result.stderr
    assert not (agent_dir(memory_dir, "b") / "raw_traces.jsonl").exists()
    wrong_kind = cli("ingest", "b", input=[{"record_type": "procedural", "id": "x"}], )
    assert wrong_kind.exit_code == 1 and "expected 'episodic' or 'semantic'" in wrong_kind.stderr


# ----------------------------------------------------------------------------- filters

def test_turn_filter_takes_ids_and_numbers_and_is_repeatable(cli, sample):
    result = cli("export", "coder", "--turn", "3", "--turn", "turn_0009")
    assert result.exit_code == 0
    records = [orjson.loads(line) for line in result.stdout_bytes.splitlines()]
    assert {r["turn_id"] for r in records} == {"turn_0003", "turn_0009"}
    assert records == [r for r in traces_of(sample, "coder") if r["turn_id"] in ("turn_0003", "turn_0009")]


def test_unknown_turn_is_not_found_and_writes_no_file(cli, sample, tmp_path):
    target = tmp_path / "out.jsonl"
    result = cli("export", "coder", "--turn", "turn_0999", "-o", target)
    assert result.exit_code == 3
    assert "no turn 'turn_0999' in agent 'coder'" in result.stderr
    assert not target.exists() and os.listdir(tmp_path) == ["memory"]


def test_since_and_until_are_inclusive_and_accept_iso_and_epoch(cli, sample):
    all_traces = traces_of(sample, "coder")
    lo, hi = all_traces[10]["ts"], all_traces[20]["ts"]
    out = cli("export", "coder", "--since", str(lo), "--until", str(hi)).stdout_bytes
    assert [orjson.loads(x) for x in out.splitlines()] == [r for r in all_traces if lo <= r["ts"] <= hi]
    iso = cli("export", "coder", "--since", "2026-03-02T10:00:00Z", "--until", "2026-03-02T10:30:00+00:00").stdout_bytes
    assert [orjson.loads(x)["id"] for x in iso.splitlines()] == [
        r["id"] for r in all_traces if 1772445600 <= r["ts"] <= 1772447400]
    # a bare date given to --until means the end of that day
    day = cli("export", "coder", "--since", "2026-03-02", "--until", "2026-03-02").stdout_bytes
    assert len(day.splitlines()) == len(all_traces)
    assert cli("export", "coder", "--until", "2026-03-01").stdout_bytes == b""


@pytest.mark.parametrize("args, message", [
    (["--since", "yesterday-ish"], "--since 'yesterday-ish': not an ISO-8601 time"),
    (["--since", "2026-03-03", "--until", "2026-03-02T00:00:00Z"], "is after --until"),
    (["--format", "yaml"], "Invalid value for '--format'"),
])
def test_bad_options_are_usage_errors(cli, sample, args, message):
    result = cli("export", "coder", *args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_filters_apply_to_memory_items(cli, archived):
    def items(out):
        return [m for m in map(orjson.loads, out.splitlines()) if m.get("record_type") in ("episodic", "semantic")]

    out = cli("export", "coder", "--with-memory", "--turn", "1").stdout_bytes
    assert [m["id"] for m in items(out)] == ["ep_1", "ep_3"]  # the semantic facts come from turn 4
    out = cli("export", "coder", "--with-memory", "--since", "1772443500").stdout_bytes
    assert [m["id"] for m in items(out)] == ["ep_2", "ep_3", "sem_3"]


# ----------------------------------------------------------------------------- file output

def test_output_file_equals_stdout_is_private_and_reports_on_stderr(cli, archived, tmp_path):
    target = tmp_path / "backup.jsonl"
    result = cli("export", "coder", "-o", target)
    assert result.exit_code == 0
    assert result.stdout_bytes == b""
    assert target.read_bytes() == cli("export", "coder").stdout_bytes
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    n = len(traces_of(archived, "coder"))
    assert f"exported {n} traces of 'coder' as jsonl to {target}" in result.stderr
    assert sorted(os.listdir(tmp_path)) == ["backup.jsonl", "memory"]  # no temp file left


def test_a_corrupt_line_mid_archive_fails_and_leaves_no_file(cli, archived, tmp_path):
    archive = agent_dir(archived, "coder") / "raw_traces_archive.jsonl"
    lines = archive.read_bytes().splitlines(keepends=True)
    archive.write_bytes(b"".join(lines[:50]) + b'{"id": "x", "turn_id": \n' + b"".join(lines[50:]))
    target = tmp_path / "backup.md"
    for fmt in ("jsonl", "json", "markdown"):
        result = cli("export", "coder", "-f", fmt, "-o", target)
        assert result.exit_code == 1, fmt
        assert f"{archive}:51: not valid JSON" in result.stderr
        assert not target.exists()
        assert os.listdir(tmp_path) == ["memory"]  # the temp file is gone too
    # an existing file under the target name is left as it was
    target.write_text("previous export\n")
    assert cli("export", "coder", "-o", target).exit_code == 1
    assert target.read_text() == "previous export\n"


def test_a_record_missing_required_fields_is_named_with_its_line(cli, memory_dir):
    cli("ingest", "a", input=[U("one"), A("two")])
    path = agent_dir(memory_dir, "a") / "raw_traces.jsonl"
    with open(path, "ab") as f:
        f.write(b'{"id": "z", "turn_id": "turn_0001", "trace_type": "user"}\n')
    result = cli("export", "a")
    assert result.exit_code == 1
    assert f"{path}:3: not a RawTrace record (missing 'ts')" in result.stderr


@pytest.mark.parametrize("where", ["store", "directory", "missing-parent"])
def test_unusable_targets_are_refused_before_any_work(cli, sample, tmp_path, where):
    target = {"store": agent_dir(sample, "coder") / "raw_traces.jsonl",
              "directory": tmp_path,
              "missing-parent": tmp_path / "nope" / "x.jsonl"}[where]
    before = tree_digest(sample)
    result = cli("export", "coder", "-o", target)
    assert result.exit_code == 2, result.stderr
    assert tree_digest(sample) == before


def test_unknown_and_invalid_agents(cli, sample, tmp_path):
    result = cli("export", "nobody", "-o", tmp_path / "x")
    assert result.exit_code == 3 and "no agent 'nobody'" in result.stderr
    assert not (tmp_path / "x").exists()
    assert cli("export", "../etc").exit_code == 2


@pytest.mark.parametrize("fmt,provider", [("openai", "openai-chat"), ("anthropic", "anthropic")])
def test_provider_formats_are_the_snapshot_renderers_payload_for_the_whole_history(cli, sample, tmp_path,
                                                                                 fmt, provider):
    """export --format openai|anthropic = the snapshot renderer over archive + active."""
    from memcli.renderers import get_renderer
    from memcli.snapshot.build import build_messages
    from memcli.store.agent import AgentStore
    from tests.snapshot_validation import check_payload

    result = cli("export", "coder", "-f", fmt, "-o", tmp_path / "x.json")
    assert result.exit_code == 0, result.stderr
    payload = orjson.loads((tmp_path / "x.json").read_bytes())
    store = AgentStore(sample, "coder")
    traces = [s.trace for s in store.iter_traces(archive=True)]
    expected = b"".join(get_renderer(provider).iter_chunks("", build_messages(iter(traces))))
    assert payload == orjson.loads(expected)
    check_payload(provider, payload)
    assert cli("export", "coder", "-f", fmt).stdout.encode() == (tmp_path / "x.json").read_bytes()


def test_a_reader_that_goes_away_is_not_an_error(sample):
    proc = subprocess.Popen([sys.executable, "-m", "memcli", "export", "coder", "-f", "markdown"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=proc_env())
    proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    stderr = proc.stderr.read()
    proc.wait(timeout=60)
    assert b"Traceback" not in stderr and proc.returncode in (0, 141)


# ----------------------------------------------------------------------------- point-in-time view

def test_the_export_shows_the_agent_as_it_was_when_it_started(cli, memory_dir):
    cli("ingest", "a", input=[U("one"), A("two")])
    store = AgentStore(memory_dir, "a")
    path = agent_dir(memory_dir, "a") / "raw_traces.jsonl"
    with open_history(store) as history:
        cli("ingest", "a", input=[U("three")])               # appended afterwards: not included
        old = path.read_bytes()
        tmp = path.with_name("new")
        tmp.write_bytes(old.splitlines(keepends=True)[2])     # a compaction replaces the file...
        os.replace(tmp, path)
        contents = [r["content"] for r in history.iter_trace_records()]
    assert contents == ["one", "two"]                         # ...we read the one we opened


def test_progress_reports_every_byte_read_against_the_total(sample):
    calls = []
    with open(os.devnull, "wb") as sink:
        result = export(sample, "coder", output=None, stdout=sink, progress=lambda n, total: calls.append((n, total)))
    size = (agent_dir(sample, "coder") / "raw_traces.jsonl").stat().st_size
    assert calls[0] == (0, size)
    assert sum(n for n, _ in calls) == size == result.bytes_read
    assert {total for _, total in calls} == {size}


def test_a_view_is_never_taken_while_a_compaction_is_in_flight(cli, memory_dir, monkeypatch):
    import memcli.export.reader as reader
    from memcli.errors import StoreError

    cli("ingest", "a", input=[U("one")])
    store = AgentStore(memory_dir, "a")
    journal = store.paths.compaction_journal
    journal.write_bytes(b"{}")
    monkeypatch.setattr(store, "recover_if_needed", lambda: None)  # as if another process were compacting
    monkeypatch.setattr(reader, "OPEN_ATTEMPTS", 3)
    monkeypatch.setattr(reader.time, "sleep", lambda s: None)
    with pytest.raises(StoreError, match="kept changing under the export"):
        open_history(store)
    # the compaction finishes between two attempts: the next attempt is taken
    calls = []

    def finish_on_second_attempt():
        calls.append(1)
        if len(calls) == 2:
            journal.unlink()

    monkeypatch.setattr(store, "recover_if_needed", finish_on_second_attempt)
    with open_history(store) as history:
        assert [r["content"] for r in history.iter_trace_records()] == ["one"]
    assert len(calls) == 2
