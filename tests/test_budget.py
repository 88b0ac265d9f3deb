"""The compaction trigger of docs/design.md §4 (shared by stats and compact --if-needed)."""

from memcli.compaction.policy import CompactionPolicy, budget_status
from memcli.store.agent import AgentStore


def test_provider_reported_prompt_tokens_decide(cli, memory_dir):
    cli("ingest", "a", input=[{"trace_type": "user", "content": "q"},
                              {"trace_type": "assistant", "content": "a", "usage": {"prompt_tokens": 90_000}},
                              {"trace_type": "assistant", "content": "b"}])
    status = budget_status(AgentStore(memory_dir, "a"), max_context_tokens=100_000, policy=CompactionPolicy())
    assert (status.source, status.prompt_tokens) == ("provider", 90_000)
    assert status.input_budget == 100_000 - 4_096 - 1_024
    assert status.threshold == int(0.8 * status.input_budget) and status.due
    status = budget_status(AgentStore(memory_dir, "a"), max_context_tokens=200_000)
    assert not status.due
    assert "not due" in status.explain()


def test_estimate_when_no_usage_is_reported(cli, memory_dir):
    cli("ingest", "a", input=[{"trace_type": "user", "content": "word " * 4000}])
    store = AgentStore(memory_dir, "a")
    status = budget_status(store, max_context_tokens=5_000)
    assert status.source == "estimate"
    assert 3_900 < status.prompt_tokens < 4_200
    assert status.input_budget == 5_000 - 1_250 - 1_024  # reserved output capped at a quarter of the context
    assert status.due
    assert not budget_status(store, max_context_tokens=20_000).due


def test_model_map_gives_the_context_size(cli, memory_dir):
    cli("ingest", "a", input=[{"trace_type": "user", "content": "q"}])
    status = budget_status(AgentStore(memory_dir, "a"), model="openai/gpt-4o")
    assert status.max_context_tokens == 128_000 and "LiteLLM model map" in status.context_source
    status = budget_status(AgentStore(memory_dir, "a"), model="some/unknown-model")
    assert status.max_context_tokens == 200_000


def test_usage_reported_before_the_last_compaction_is_ignored(cli, memory_dir):
    """Right after a compaction the newest usage still describes the old, bigger prompt."""
    turns = []
    for i in range(8):
        # long answers, short asks: the summary keeps asks verbatim, so moving the turns must shrink
        turns += [{"trace_type": "user", "content": f"question {i}"},
                  {"trace_type": "assistant", "content": "answer " + "word " * 300, "usage": {"prompt_tokens": 150_000}}]
    cli("ingest", "a", input=turns)
    store = AgentStore(memory_dir, "a")
    assert budget_status(store, max_context_tokens=160_000).source == "provider"
    assert cli("compact", "a").exit_code == 0
    status = budget_status(store, max_context_tokens=160_000)
    assert status.source == "estimate" and not status.due
    # the next call the agent makes reports a fresh figure, which counts again
    cli("ingest", "a", input=[{"trace_type": "assistant", "content": "x", "usage": {"prompt_tokens": 9_000}}])
    status = budget_status(store, max_context_tokens=160_000)
    assert (status.source, status.prompt_tokens) == ("provider", 9_000)


def test_usage_on_a_tool_only_reply_counts(cli, memory_dir):
    cli("ingest", "a", input=[{"trace_type": "user", "content": "q"},
                              {"trace_type": "assistant", "content": "a", "usage": {"prompt_tokens": 1_000}},
                              {"trace_type": "tool_call", "tool_name": "t", "tool_call_id": "c",
                               "usage": {"prompt_tokens": 5_000}}])
    assert budget_status(AgentStore(memory_dir, "a")).prompt_tokens == 5_000


def test_usage_a_harness_reported_for_its_own_prompt_decides_nothing(cli, memory_dir, tmp_path):
    """An agent imported from a Claude Code session mirrors it: the usage on its lines is Claude
    Code's prompt (its system prompt, tools, its whole context: 62,562 tokens in the spotter
    session's hook rhythm), not the working snapshot (7,820), and ``--if-needed`` compacted on it
    nearly every round. The snapshot's own count decides; a native agent's usage still does."""
    import orjson

    usage = {"input_tokens": 3, "cache_creation_input_tokens": 500, "cache_read_input_tokens": 62_000, "output_tokens": 9}
    lines = [{"type": "user", "uuid": "u1", "sessionId": "s", "timestamp": "2026-02-11T20:36:45Z",
              "message": {"role": "user", "content": "Implement spotter-gqc"}},
             {"type": "assistant", "uuid": "a1", "sessionId": "s", "timestamp": "2026-02-11T20:36:50Z",
              "message": {"id": "msg_1", "role": "assistant", "content": [{"type": "text", "text": "On it."}],
                          "usage": usage}}]
    session = tmp_path / "session.jsonl"
    session.write_bytes(b"".join(orjson.dumps(v) + b"\n" for v in lines))
    assert cli("ingest", "cc", str(session)).exit_code == 0
    status = budget_status(AgentStore(memory_dir, "cc"), max_context_tokens=20_000)
    assert status.source == "estimate" and status.prompt_tokens < 1_000 and not status.due
    result = cli("compact", "cc", "--if-needed", "--max-context-tokens", "20000")
    assert result.exit_code == 0 and "nothing to do" in result.stderr + result.stdout
    # the same usage piped in as native events (an agent whose prompts are memcli's snapshots)
    native = tmp_path / "events.ndjson"
    native.write_bytes(orjson.dumps({"trace_type": "user", "content": "Implement spotter-gqc"}) + b"\n" + orjson.dumps(
        {"trace_type": "assistant", "content": "On it.", "usage": {"prompt_tokens": 62_503}}) + b"\n")
    assert cli("ingest", "n", str(native)).exit_code == 0
    status = budget_status(AgentStore(memory_dir, "n"), max_context_tokens=20_000)
    assert (status.source, status.prompt_tokens, status.due) == ("provider", 62_503, True)


def test_a_native_agent_that_holds_a_harness_compaction_is_decided_by_its_count(cli, memory_dir):
    """The usage reported after a harness's own compaction measured its summary, not the traces
    the snapshot still renders: a native agent (its usage otherwise decides) counts then."""
    events = [{"trace_type": "user", "content": "q"},
              {"trace_type": "user", "content": "summary of the work so far", "tags": ["compact_summary"],
               "harness_compaction": {"harness": "claude-code", "trigger": "auto"}},
              {"trace_type": "assistant", "content": "a", "usage": {"prompt_tokens": 90_000}}]
    assert cli("ingest", "h", input=events).exit_code == 0
    assert cli("ingest", "n", input=[events[0], events[2]]).exit_code == 0
    assert budget_status(AgentStore(memory_dir, "h"), max_context_tokens=100_000).source == "estimate"
    assert budget_status(AgentStore(memory_dir, "n"), max_context_tokens=100_000).source == "provider"
