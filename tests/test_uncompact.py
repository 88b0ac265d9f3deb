"""Compactions you can see and undo (issue 23): the ledger (`compactions`), `uncompact` byte for
byte (whole turns, steps, rollups and merged facts, several undone newest first), its refusals,
compactions made before the ledger, its crash matrix, and the model's tokens and cost."""

from __future__ import annotations

import signal

import orjson
import pytest

from tests.compact_fixtures import conversation, faithful_answer, long_turn
from tests.helpers import agent_dir, read_jsonl, run_memcli
from tests.test_reliability import UNDO_POINTS as UNDO_STEPS

LEDGER = ".compactions.jsonl"


def _files(memory_dir, agent="a"):
    d = agent_dir(memory_dir, agent)
    return {name: (d / name).read_bytes() if (d / name).exists() else b""
            for name in ("raw_traces.jsonl", "raw_traces_archive.jsonl")}


def _snapshot(cli, agent="a"):
    result = cli("snapshot", agent)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def _ingest(cli, events, agent="a"):
    result = cli("ingest", agent, input=events)
    assert result.exit_code == 0, result.stderr


def _compact(cli, *args, agent="a"):
    result = cli("compact", agent, *args)
    assert result.exit_code == 0, result.stderr
    assert "compacted" in result.stderr, result.stderr
    return result


def _compactions(cli, agent="a"):
    result = cli("compactions", agent, "--json")
    assert result.exit_code == 0, result.stderr
    return orjson.loads(result.stdout)


def test_compact_then_uncompact_gives_back_the_active_file_and_the_snapshot(cli, memory_dir):
    _ingest(cli, conversation(10))
    before, snap = _files(memory_dir), _snapshot(cli)
    _compact(cli)
    (entry,) = _compactions(cli)
    assert (entry["turn_range"], entry["whole_turns"], entry["traces"], entry["undone"]) == \
        ("turn_0001–turn_0006", 6, 24, False)
    assert entry["tokens_before"] > entry["tokens_after"] > 0 and entry["summarizer"] == "offline"
    assert entry["llm"] is None
    result = cli("uncompact", "a")
    assert result.exit_code == 0, result.stderr
    assert f"undid {entry['id']} of 'a': 24 traces (turn_0001–turn_0006) back in the active file" in result.stderr
    assert _files(memory_dir) == before
    assert _snapshot(cli) == snap
    (entry,) = _compactions(cli)
    assert entry["undone"] is True and entry["undone_by"].startswith("unc_")
    # its summary is superseded: memory shows nothing live
    assert cli("memory", "a", "--json").stdout.strip() in ("[]", "")


def test_a_step_compaction_is_undone_byte_for_byte(cli, memory_dir):
    _ingest(cli, long_turn(30))
    before, snap = _files(memory_dir), _snapshot(cli)
    _compact(cli, "--target-tokens", "1500")
    (entry,) = _compactions(cli)
    assert entry["steps"] > 0 and entry["whole_turns"] == 0
    assert read_jsonl(agent_dir(memory_dir, "a") / "raw_traces.jsonl")[0]["id"] == "ask"  # the ask stayed
    assert cli("uncompact", "a").exit_code == 0
    assert _files(memory_dir) == before
    assert _snapshot(cli) == snap


def test_several_compactions_with_rollups_and_merged_facts_undone_newest_first(cli, memory_dir):
    """Five compactions (the fourth and fifth roll the summaries up; a repeated preference merges
    into one fact); undoing them newest first gives back every intermediate state, then the start."""
    from memcli.api import Memory

    agent = Memory(memory_dir).agent("a")
    events = conversation(15, big=1500)
    for turn in (1, 4, 7, 10, 13):                       # the same preference in every window
        events[1 + 4 * (turn - 1)]["content"] += " Always answer in English."
    _ingest(cli, events)
    states = []
    for tail in (12, 9, 6, 3, 1):
        states.append((_files(memory_dir), _snapshot(cli)))
        result = agent.compact(tail_turns=tail, keep_steps=0)
        assert result.compacted, result.reason
    entries = _compactions(cli)
    assert len(entries) == 5
    assert any(entry["superseded"]["episodic"] for entry in entries)   # a rollup happened
    assert any(entry["superseded"]["semantic"] for entry in entries)   # a fact merged
    for k in range(4, -1, -1):
        done = agent.uncompact()
        assert done.compaction_id == entries[k]["id"]
        # each state is back: the traces byte for byte, the snapshot with its memory bundle
        assert _files(memory_dir) == states[k][0]
        assert _snapshot(cli) == states[k][1]
    assert _files(memory_dir)["raw_traces_archive.jsonl"] == b""
    assert all(entry["undone"] for entry in _compactions(cli))


def test_the_memory_bundle_comes_back_in_its_order(cli, memory_dir):
    """A merged fact moved to the newest place; undoing the merge puts it back where it was."""
    from memcli.api import Memory

    agent = Memory(memory_dir).agent("a")
    events = conversation(4, big=1500)
    events[1]["content"] += " Always answer in English."
    _ingest(cli, events)
    agent.compact(tail_turns=1)
    agent.remember("The deploy key lives in vault.")
    more = conversation(3, prefix="q", system=False, big=1500)
    more[0]["content"] += " Always answer in English."
    _ingest(cli, more)
    snap = _snapshot(cli)
    facts = snap[snap.index("[MEMORY:SEMANTIC]"):]
    assert facts.index("Always answer in English") < facts.index("The deploy key lives in vault.")
    result = agent.compact(tail_turns=1)
    assert result.facts_merged == 1
    after = _snapshot(cli)
    facts = after[after.index("[MEMORY:SEMANTIC]"):]
    assert facts.index("Always answer in English") > facts.index("The deploy key lives in vault.")  # moved
    agent.uncompact()
    assert _snapshot(cli) == snap


def test_refusals(cli, memory_dir):
    _ingest(cli, conversation(12))
    result = cli("uncompact", "a")
    assert result.exit_code == 1 and "has no compaction to undo" in result.stderr
    _compact(cli, "--tail-turns", "8")
    _compact(cli, "--tail-turns", "4")
    first, second = (e["id"] for e in _compactions(cli))
    before = _files(memory_dir)
    result = cli("uncompact", "a", "cmp_nosuchthing")
    assert result.exit_code == 3 and "has no compaction 'cmp_nosuchthing'" in result.stderr
    result = cli("uncompact", "a", first)
    assert result.exit_code == 1
    assert f"cannot be undone while the newer {second} stands: undo goes newest first" in result.stderr
    assert _files(memory_dir) == before                                 # nothing changed
    assert cli("uncompact", "a", second).exit_code == 0
    result = cli("uncompact", "a", second)
    assert result.exit_code == 1 and f"compaction {second} of 'a' is already undone (by unc_" in result.stderr
    assert cli("uncompact", "a", "--json").exit_code == 0               # the first, now the newest standing
    result = cli("uncompact", "nobody")
    assert result.exit_code == 3


def test_an_id_as_a_narrow_list_shows_it_is_undone(cli, memory_dir):
    """A narrow list (a pipe's 80 columns, a model's column) showed a compaction id shortened in
    its middle (``cmp_01a22…4bab1614dc``), which nothing took back: ``uncompact`` refused it (exit
    3). The list shortens it to a prefix that tells the ids apart, which ``uncompact`` expands;
    a prefix of several ids is refused, naming them."""
    _ingest(cli, conversation(12))
    _compact(cli, "--tail-turns", "8")
    _compact(cli, "--tail-turns", "4")
    first, second = (e["id"] for e in _compactions(cli))
    rows = cli("compactions", "a", "--width", "50").stdout.splitlines()[1:]
    shown = [row.split()[0] for row in rows]
    assert all(s.endswith("…") and len(s) < len(second) for s in shown)
    assert [first.startswith(shown[0][:-1]), second.startswith(shown[1][:-1])] == [True, True]
    result = cli("uncompact", "a", shown[1])
    assert result.exit_code == 0 and f"undid {second} of 'a'" in result.stderr
    common = next(i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b)
    before = _files(memory_dir)
    result = cli("uncompact", "a", first[:common])   # (the newer one is undone: both still match)
    assert result.exit_code == 2 and f"is the start of 2 compaction ids of 'a': {first}, {second}" in result.stderr
    assert _files(memory_dir) == before
    assert cli("uncompact", "a", first[:common + 1]).exit_code == 0


def test_the_list_in_each_format(cli, memory_dir):
    _ingest(cli, conversation(10))
    _compact(cli)
    human = cli("compactions", "a", "--width", "200")
    assert human.exit_code == 0
    header, row = human.stdout.splitlines()
    assert header.split() == ["id", "time", "moved", "turns", "tokens", "summarizer", "model", "tokens,", "cost", "undone"]
    assert "6 turns, 24 traces  turn_0001–turn_0006" in row and "offline" in row
    (entry,) = [orjson.loads(line) for line in cli("compactions", "a", "--ndjson").stdout.splitlines()]
    assert entry == _compactions(cli)[0]
    assert cli("compactions", "nobody").exit_code == 3
    _ingest(cli, conversation(1, prefix="b"), agent="b")
    empty = cli("compactions", "b")
    assert empty.exit_code == 0 and empty.stdout == "" and "has no compactions" in empty.stderr


def test_a_sliding_window_compaction_is_recorded_and_undone(cli, memory_dir):
    _ingest(cli, conversation(10))
    before, snap = _files(memory_dir), _snapshot(cli)
    _compact(cli, "--strategy", "sliding-window")
    (entry,) = _compactions(cli)
    assert (entry["strategy"], entry["summarizer"], entry["items"]) == \
        ("sliding-window", None, {"episodic": [], "semantic": []})
    assert cli("uncompact", "a").exit_code == 0
    assert (_files(memory_dir), _snapshot(cli)) == (before, snap)


@pytest.mark.parametrize("args", [(), ("--target-tokens", "1500")], ids=["turns", "steps"])
def test_a_compaction_made_before_the_ledger_is_listed_and_undone(cli, memory_dir, args):
    _ingest(cli, conversation(10) if not args else long_turn(30))
    before, snap = _files(memory_dir), _snapshot(cli)
    _compact(cli, *args)
    (agent_dir(memory_dir, "a") / LEDGER).unlink()                      # as an older memcli left it
    (entry,) = _compactions(cli)
    assert (entry["recorded"], entry["tokens_before"]) == (False, None)
    if not args:
        assert (entry["turn_range"], entry["traces"]) == ("turn_0001–turn_0006", 24)
    assert "(not recorded)" in cli("compactions", "a", "--width", "200").stdout
    result = cli("uncompact", "a")
    assert result.exit_code == 0, result.stderr
    assert "made before the ledger" in result.stderr
    assert _files(memory_dir) == before                                # turn and seq order is the file's here
    assert _snapshot(cli) == snap
    assert _compactions(cli)[0]["undone"] is True


def test_an_unidentifiable_old_compaction_is_refused(cli, memory_dir):
    _ingest(cli, conversation(10))
    _compact(cli)
    d = agent_dir(memory_dir, "a")
    (d / LEDGER).unlink()
    archive = d / "raw_traces_archive.jsonl"
    archive.write_bytes(b"".join(archive.read_bytes().splitlines(keepends=True)[:-1]))  # one trace lost
    before = _files(memory_dir)
    result = cli("uncompact", "a")
    assert result.exit_code == 1 and "cannot be undone: the archive does not end with its 24 traces" in result.stderr
    assert _files(memory_dir) == before




@pytest.mark.parametrize("step", UNDO_STEPS)
def test_uncompact_killed_at_every_step_is_finished_by_the_next_command(memory_dir, step):
    events = conversation(12, big=200)
    events[5]["content"] += " Always answer in English."
    assert run_memcli("ingest", "a", input=events).returncode == 0
    before = _files(memory_dir)
    assert run_memcli("compact", "a").returncode == 0
    crashed = run_memcli("uncompact", "a", env={"MEMCLI_CRASH_AT": f"uncompact:{step}", "MEMCLI_TEST_COPY_BLOCK": "700"})
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert (agent_dir(memory_dir, "a") / ".compaction.journal").exists()
    if step == "journal":
        doctor = run_memcli("doctor", "a")
        assert doctor.returncode == 1 and b"an uncompact did not finish (cmp_" in doctor.stdout + doctor.stderr
    late = [{"id": "late", "trace_type": "user", "content": "still there?"}]
    after = run_memcli("ingest", "a", input=late)
    assert after.returncode == 0, after.stderr
    assert "finished an interrupted uncompact" in after.stderr.decode() or step == "state"
    d = agent_dir(memory_dir, "a")
    assert not (d / ".compaction.journal").exists()
    files = _files(memory_dir)
    assert files["raw_traces_archive.jsonl"] == b""
    assert files["raw_traces.jsonl"].startswith(before["raw_traces.jsonl"])
    assert [r["id"] for r in read_jsonl(d / "raw_traces.jsonl")][-1] == "late"
    kinds = [r["kind"] for r in read_jsonl(d / LEDGER)]
    assert kinds == ["compaction", "uncompact"]
    live = run_memcli("memory", "a", "--json")
    assert orjson.loads(live.stdout) == []                              # the summary and fact superseded, once
    assert len({r["id"] for r in read_jsonl(d / "episodic.jsonl")}) == len(read_jsonl(d / "episodic.jsonl"))


# --------------------------------------------------------------------------- the model's tokens and cost

MODEL = "openai/test-model"


def test_an_llm_compaction_records_its_tokens_and_cost(cli, memory_dir, server, llm_env):
    _ingest(cli, conversation(8))
    srv = server(lambda body, i: (200, faithful_answer(body), 0))   # usage: 10 prompt, 10 completion tokens
    result = cli("compact", "a", "--model", "openai/gpt-4o-mini", "--api-base", srv.api_base)
    assert result.exit_code == 0, result.stderr
    (entry,) = _compactions(cli)
    llm = entry["llm"]
    assert (llm["model"], llm["requests"], llm["input_tokens"], llm["output_tokens"]) == ("openai/gpt-4o-mini", 1, 10, 10)
    assert llm["cost_usd"] == pytest.approx(10 * 0.15e-6 + 10 * 0.6e-6)   # LiteLLM's price of gpt-4o-mini
    assert entry["summarizer"] == "openai/gpt-4o-mini"
    # a model LiteLLM has no price for: tokens only, and the list says so
    _ingest(cli, conversation(8, prefix="u"))
    result = cli("compact", "a", "--model", MODEL, "--api-base", srv.api_base)
    assert result.exit_code == 0, result.stderr
    second = _compactions(cli)[1]["llm"]
    assert (second["input_tokens"], second["output_tokens"], second["cost_usd"]) == (10, 10, None)
    assert "price unknown" in cli("compactions", "a", "--width", "250").stdout
    stats = cli("stats", "a", "--json")
    assert stats.exit_code == 0
    cost = orjson.loads(stats.stdout)["compaction_cost"]
    assert (cost["requests"], cost["input_tokens"], cost["output_tokens"], cost["unpriced"]) == (2, 20, 20, 1)
    assert cost["cost_usd"] == pytest.approx(llm["cost_usd"])
    assert "2 requests, 20 input + 20 output tokens, $0.000008 (1 without a known price)" in cli("stats", "a").stdout


def test_max_cost_refuses_before_the_first_request(cli, memory_dir, server, llm_env):
    _ingest(cli, conversation(8, big=2000))
    before = _files(memory_dir)
    srv = server(lambda body, i: (200, faithful_answer(body), 0))
    result = cli("compact", "a", "--model", "openai/gpt-4o-mini", "--api-base", srv.api_base, "--max-cost", "0.0001")
    assert result.exit_code == 1
    assert "--max-cost 0.0001: compacting 'a' with openai/gpt-4o-mini would cost up to $" in result.stderr
    assert "nothing was sent or written" in result.stderr
    assert srv.requests == [] and _files(memory_dir) == before
    # its dry run exited 0 without a word of it: it says the real run would be refused
    result = cli("compact", "a", "--model", "openai/gpt-4o-mini", "--api-base", srv.api_base, "--max-cost", "0.0001",
                 "--dry-run")
    assert result.exit_code == 0
    assert ("memcli: without --dry-run this compaction would be refused: --max-cost 0.0001: compacting 'a' with "
            "openai/gpt-4o-mini would cost up to $") in result.stderr
    assert srv.requests == [] and _files(memory_dir) == before
    # an unknown price cannot be bounded
    result = cli("compact", "a", "--model", MODEL, "--api-base", srv.api_base, "--max-cost", "5")
    assert result.exit_code == 1 and "LiteLLM has no price for openai/test-model" in result.stderr
    assert srv.requests == []
    # within the budget it runs
    result = cli("compact", "a", "--model", "openai/gpt-4o-mini", "--api-base", srv.api_base, "--max-cost", "1")
    assert result.exit_code == 0, result.stderr
    assert len(srv.requests) == 1


def test_dry_run_shows_the_summary_it_would_write(cli, memory_dir, server, llm_env):
    _ingest(cli, conversation(10))
    preview = cli("compact", "a", "--dry-run", "--json")
    assert preview.exit_code == 0
    planned = orjson.loads(preview.stdout)["summary"]
    human = cli("compact", "a", "--dry-run").stdout
    assert "summary        (the summary it would write):" in human
    assert "\n    " + planned.splitlines()[0] in human
    _compact(cli)
    (episodic,) = read_jsonl(agent_dir(memory_dir, "a") / "episodic.jsonl")
    assert episodic["summary"] == planned                                 # the exact text
    # with a model: the offline digest it would condense, and the estimate; nothing sent
    cli("uncompact", "a")
    srv = server(lambda body, i: (200, faithful_answer(body), 0))
    result = cli("compact", "a", "--model", "openai/gpt-4o-mini", "--api-base", srv.api_base, "--dry-run", "--json")
    assert result.exit_code == 0, result.stderr
    data = orjson.loads(result.stdout)
    assert data["summary"] == planned
    estimate = data["estimate"]
    assert estimate["requests"] == 1 and estimate["input_tokens"] > 300 and estimate["cost_usd"] > 0
    human = cli("compact", "a", "--model", "openai/gpt-4o-mini", "--api-base", srv.api_base, "--dry-run").stdout
    assert "model request  1 to openai/gpt-4o-mini:" in human and "(the offline digest the model would condense)" in human
    assert srv.requests == []


# --------------------------------------------------------------------------- backups keep the shape

@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_a_backup_of_a_compacted_agent_restores_the_same_snapshot_memory_and_archive(cli, memory_dir, fmt):
    events = conversation(10, big=1500) + long_turn(20)
    events[5]["content"] += " Always answer in English."
    _ingest(cli, events)
    _compact(cli)                                             # whole turns
    _compact(cli, "--target-tokens", "3000")                  # and steps of the open turn
    backup = cli("export", "a", "--with-memory", "-f", fmt)
    assert backup.exit_code == 0
    restored = cli("ingest", "copy", input=backup.stdout_bytes)
    assert restored.exit_code == 0, restored.stderr
    assert "archived, as in the export" in restored.stderr
    src, copy = agent_dir(memory_dir, "a"), agent_dir(memory_dir, "copy")
    for name in ("raw_traces.jsonl", "raw_traces_archive.jsonl", "episodic.jsonl", "semantic.jsonl", LEDGER):
        assert read_jsonl(copy / name) == read_jsonl(src / name), name
    assert _snapshot(cli, "copy") == _snapshot(cli, "a")
    assert _compactions(cli, "copy") == _compactions(cli, "a")
    # restoring twice changes nothing
    again = cli("ingest", "copy", input=backup.stdout_bytes)
    assert again.exit_code == 0
    assert read_jsonl(copy / "raw_traces_archive.jsonl") == read_jsonl(src / "raw_traces_archive.jsonl")
    assert read_jsonl(copy / LEDGER) == read_jsonl(src / LEDGER)
    # and the copy's compactions undo as the original's do
    for agent in ("a", "copy"):
        assert cli("uncompact", agent).exit_code == 0
        assert cli("uncompact", agent).exit_code == 0
    assert read_jsonl(copy / "raw_traces.jsonl") == read_jsonl(src / "raw_traces.jsonl")
    assert read_jsonl(copy / "raw_traces_archive.jsonl") == [] == read_jsonl(src / "raw_traces_archive.jsonl")
    assert _snapshot(cli, "copy") == _snapshot(cli, "a")


def test_an_export_whose_archive_is_cut_short_under_it_fails(cli, memory_dir):
    """An uncompact cuts the archive back; an export reading it at that moment stops with an
    error instead of writing a backup without those traces."""
    from memcli.errors import StoreError
    from memcli.export.reader import open_history
    from memcli.store.agent import AgentStore

    _ingest(cli, conversation(10))
    _compact(cli)
    with open_history(AgentStore(memory_dir, "a")) as history:
        assert cli("uncompact", "a").exit_code == 0
        with pytest.raises(StoreError, match="raw_traces_archive.jsonl was cut short while it was read"):
            list(history.iter_trace_blocks())


def test_spending_no_model_price_is_known_for_is_unknown_not_zero(cli, memory_dir, server, llm_env):
    """Only a model LiteLLM has no price for: ``stats`` said ``$0.000000 (1 without a known price)``
    and ``cost_usd: 0.0`` — a guess; it is unknown."""
    _ingest(cli, conversation(8))
    srv = server(lambda body, i: (200, faithful_answer(body), 0))
    assert cli("compact", "a", "--model", MODEL, "--api-base", srv.api_base).exit_code == 0
    cost = orjson.loads(cli("stats", "a", "--json").stdout)["compaction_cost"]
    assert (cost["records"], cost["unpriced"], cost["cost_usd"]) == (1, 1, None)
    assert "1 request, 10 input + 10 output tokens, price unknown\n" in cli("stats", "a").stdout
