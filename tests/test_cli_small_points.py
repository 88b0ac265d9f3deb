"""The smaller points of issue 17, each as a user meets it: no line said twice, hints only
when they apply, ``--skip-invalid`` with nothing valid fails, the export notes what it leaves
out, markdown does not inline a whole image, one "last activity", ``make demo`` without the
test extras."""

from __future__ import annotations

import base64
import re
import shutil

import orjson
import pytest

from tests.helpers import CORPORA, REPO, agent_dir, needs_corpora, store_digest


@pytest.fixture
def sample(memory_dir):
    shutil.copytree(REPO / "sample_memory", memory_dir)
    return memory_dir


def test_compaction_not_due_is_said_once(cli, sample):
    result = cli("compact", "coder", "--if-needed")
    assert result.exit_code == 0
    assert result.stderr.count("compaction is not due") == 1
    assert result.stderr.startswith("memcli: nothing to do: compaction is not due: ")


def test_compaction_due_is_said_once_too(cli, sample):
    result = cli("compact", "coder", "--if-needed", "--max-context-tokens", "8000", "--dry-run")
    assert result.exit_code == 0 and result.stderr.count("compaction is due") == 1


def test_pinned_traces_are_mentioned_once_in_a_dry_run(cli, sample):
    result = cli("compact", "coder", "--dry-run")
    assert result.exit_code == 0
    assert (result.stdout + result.stderr).count("system/developer trace") == 1
    assert "  traces moved   255 (1 system/developer trace stays)" in result.stdout
    done = cli("compact", "coder")
    assert done.exit_code == 0 and done.stderr.count("system/developer trace") == 1


def test_skip_invalid_is_suggested_only_when_some_event_is_valid(cli, memory_dir):
    bad = [{"trace_type": "bogus"}, {"nope": 1}]
    result = cli("ingest", "a", input=bad)
    assert result.exit_code == 1
    assert "--skip-invalid" not in result.stderr and "no event of the input is valid" in result.stderr
    result = cli("ingest", "a", input=[{"trace_type": "user", "content": "hi"}, *bad])
    assert result.exit_code == 1 and "--skip-invalid ingests the valid ones" in result.stderr


@pytest.mark.parametrize("stream", [False, True])
def test_skip_invalid_with_no_valid_event_fails(cli, memory_dir, tmp_path, stream):
    from tests.helpers import ndjson

    before = store_digest(memory_dir)
    args = ["ingest", "a", "--skip-invalid"] + (["--stream"] if stream else [])
    bad, good = tmp_path / "bad.jsonl", tmp_path / "good.jsonl"
    bad.write_bytes(ndjson([{"trace_type": "bogus"}, {"nope": 1}]))
    good.write_bytes(ndjson([{"trace_type": "user", "content": "hi"}, {"nope": 1}]))
    result = cli(*args[:2], bad, *args[2:])
    assert result.exit_code == 1
    assert "memcli: error: no valid event in the input: 2 invalid (first: line 1: " in result.stderr
    assert "ingested 0 events" not in result.stderr
    assert store_digest(memory_dir) == before or not (agent_dir(memory_dir, "a") / "raw_traces.jsonl").exists()
    assert orjson.loads(cli("agents", "--json").stdout) == []
    ok = cli(*args[:2], good, *args[2:])
    assert ok.exit_code == 0 and "ingested 1 event" in ok.stderr and "skipped line 2" in ok.stderr


def _sidechain_session():
    return [
        {"trace_type": "user", "content": "Plan the release."},
        {"trace_type": "user", "content": "Subagent: list the open issues.", "tags": ["sidechain"]},
        {"trace_type": "assistant", "content": "Three issues are open.", "tags": ["sidechain"]},
        {"trace_type": "assistant", "content": "The release can go out after three fixes."},
    ]


def test_export_openai_notes_the_subagents_it_leaves_out_as_snapshot_does(cli, memory_dir):
    assert cli("ingest", "a", input=_sidechain_session()).exit_code == 0
    snapshot = cli("snapshot", "a")
    note = "memcli: note: left out 2 sidechain traces (a subagent's own conversation, which the main agent did not see)"
    assert snapshot.exit_code == 0 and note in snapshot.stderr.splitlines()
    for fmt in ("openai", "anthropic"):
        exported = cli("export", "a", "--format", fmt)
        assert exported.exit_code == 0 and note in exported.stderr.splitlines(), fmt


@needs_corpora
def test_export_of_a_claude_code_session_with_subagents(cli, memory_dir):
    assert cli("ingest", "cc", CORPORA / "claude-code" / "ccviewer_fe5e1c67_todo-app_438ev.jsonl").exit_code == 0
    snapshot_notes = [n for n in cli("snapshot", "cc").stderr.splitlines() if "sidechain" in n]
    export_notes = [n for n in cli("export", "cc", "--format", "openai").stderr.splitlines() if "sidechain" in n]
    assert snapshot_notes == export_notes and len(export_notes) == 1


def test_markdown_export_does_not_inline_a_whole_image(cli, memory_dir):
    image = "data:image/png;base64," + base64.b64encode(b"\x89PNG" + b"x" * 30_000).decode()
    event = {"id": "u1", "trace_type": "user", "content": "What is in this picture?",
             "media": {"images": [image, "https://example.com/cat.png"]}}
    assert cli("ingest", "a", input=[event]).exit_code == 0
    text = cli("export", "a", "--format", "markdown").stdout
    assert image[40:100] not in text
    assert max(len(line) for line in text.splitlines()) < 200
    assert "- 📎 images: *image/png data, 29.3 KiB, not inlined* (`memcli get a u1` has it)" in text
    assert "- 📎 images: `https://example.com/cat.png`" in text


def test_agents_and_stats_agree_on_last_activity(cli, sample):
    def both():
        listed = {a["agent"]: a["last_activity"] for a in orjson.loads(cli("agents", "--json").stdout)}
        return listed["coder"], orjson.loads(cli("stats", "coder", "--json").stdout)["last_activity"]

    before = both()
    assert before[0] == before[1]
    assert cli("compact", "coder").exit_code == 0  # the compaction is the newest thing that happened
    after = both()
    assert after[0] == after[1] > before[0]


def test_make_demo_installs_without_the_test_extras():
    text = (REPO / "Makefile").read_text()
    demo = re.search(r"^demo: (.*)$", text, re.M).group(1).split()
    assert demo == ["$(DEMO_STAMP)"]
    recipe = re.search(r"^\$\(DEMO_STAMP\):.*\n((?:\t.*\n)+)", text, re.M).group(1)
    assert "pip install -q -e .\n" in recipe and "[test]" not in recipe and "autobyteus" not in recipe
    test_recipe = re.search(r"^\$\(STAMP\):.*\n((?:\t.*\n)+)", text, re.M).group(1)
    assert "-e '.[test]'" in test_recipe  # make test keeps the test extras
