"""``--from codex``: Codex CLI rollouts (memcli.importers.codex)."""

from __future__ import annotations

import pytest

from memcli.errors import InputError
from memcli.importers import get_importer
from memcli.importers.codex import HELD_BACK
from memcli.tool_interactions import pair_tool_traces
from tests.import_helpers import comparable, import_values, shape, statuses, traces

_clock = iter(range(10_000))


def line(kind, payload, ts=None):
    ts = ts or f"2026-02-23T11:{next(_clock) % 60:02d}:00.000Z"
    return {"timestamp": ts, "type": kind, "payload": payload}


def item(payload, **kw):
    return line("response_item", payload, **kw)


def event(payload, **kw):
    return line("event_msg", payload, **kw)


def message(role, text, kind="input_text", ts=None, **extra):
    return item({"type": "message", "role": role, "content": [{"type": kind, "text": text}], **extra}, ts=ts)


def tokens(input_tokens, output_tokens):
    last = {"input_tokens": input_tokens, "cached_input_tokens": input_tokens // 2, "output_tokens": output_tokens,
            "reasoning_output_tokens": 1, "total_tokens": input_tokens + output_tokens}
    return event({"type": "token_count", "info": {"total_token_usage": last, "last_token_usage": last}})


def rollout():
    return [
        line("session_meta", {"id": "019c-sess", "cwd": "/repo", "base_instructions": {"text": "You are Codex."}}),
        message("developer", "<permissions instructions>sandboxed</permissions instructions>"),
        message("user", "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>be nice</INSTRUCTIONS>"),
        message("user", "<environment_context>cwd=/repo</environment_context>"),
        event({"type": "task_started", "turn_id": "t1"}),
        message("user", "list the files"),
        event({"type": "user_message", "message": "list the files", "images": []}),
        line("turn_context", {"turn_id": "t1", "model": "gpt-5-codex"}),
        tokens(0, 0) | {"payload": {"type": "token_count", "info": None}},
        event({"type": "agent_reasoning", "text": "Listing"}),
        item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Listing"}], "encrypted_content": "gAAA"}),
        message("assistant", "Running ls and a patch.", "output_text", phase="commentary"),
        item({"type": "function_call", "name": "exec_command", "arguments": '{"cmd": "ls"}', "call_id": "call_1"}),
        item({"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch", "call_id": "call_2", "status": "completed"}),
        tokens(17000, 350),
        item({"type": "function_call_output", "call_id": "call_1", "output": "a.txt\nb.txt"}),
        item({"type": "custom_tool_call_output", "call_id": "call_2", "output": "Success."}),
        tokens(17000, 350),  # repeated figures, nothing new to attach them to
        item({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "x"}}),
        message("assistant", "Done.", "output_text", phase="final_answer"),
        tokens(18000, 20),
        event({"type": "task_complete", "turn_id": "t1"}),
        event({"type": "task_started", "turn_id": "t2"}),
        message("user", "thanks"),
        event({"type": "user_message", "message": "thanks", "images": []}),
        message("assistant", "You're welcome.", "output_text"),
        tokens(18100, 5),
    ]


def test_rollout_user_turns_context_tools_reasoning_and_usage(memory_dir, tmp_path):
    result = import_values(memory_dir, "a", rollout(), "auto", tmp_path=tmp_path)
    assert result.format == "codex" and result.detected
    assert result.skipped == {"web_search_call items (server-side searches, no output to pair)": 1}
    got = traces(memory_dir, "a")
    assert shape(got) == [
        ("user", "turn_0001", 1, ("system",), "You are Codex."),
        ("user", "turn_0001", 2, ("developer",), "<permissions instructions>sandboxed</permissions instructions>"),
        ("user", "turn_0001", 3, ("context",), "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>be nice</INSTRUCTIONS>"),
        ("user", "turn_0001", 4, ("context",), "<environment_context>cwd=/repo</environment_context>"),
        ("user", "turn_0001", 5, (), "list the files"),
        ("assistant", "turn_0001", 6, ("reasoning",), "Listing"),
        ("assistant", "turn_0001", 7, (), "Running ls and a patch."),
        ("tool_call", "turn_0001", 8, (), "call_1"),
        ("tool_call", "turn_0001", 9, (), "call_2"),
        ("tool_result", "turn_0001", 10, (), "call_1"),
        ("tool_result", "turn_0001", 11, (), "call_2"),
        ("assistant", "turn_0001", 12, (), "Done."),
        ("user", "turn_0002", 1, (), "thanks"),
        ("assistant", "turn_0002", 2, (), "You're welcome."),
    ]
    assert statuses(got) == {"SUCCESS": 2}
    exec_call, patch = got[7], got[8]
    assert exec_call.tool_args == {"cmd": "ls"} and exec_call.tool_name == "exec_command"
    assert patch.tool_args == {"input": "*** Begin Patch\n*** End Patch"}
    assert patch.extra["tool_args_verbatim"] is True and patch.extra["tool_kind"] == "custom"
    assert got[9].tool_result == "a.txt\nb.txt" and got[9].tool_name == "exec_command"
    # token_count closes the model's response: usage on its first assistant trace, once
    usage = {t.content: t.usage for t in got if t.usage}
    assert usage == {
        "Listing": {"prompt_tokens": 17000, "completion_tokens": 350, "input_tokens": 17000,
                    "cached_input_tokens": 8500, "output_tokens": 350, "reasoning_output_tokens": 1,
                    "total_tokens": 17350},
        "Done.": {"prompt_tokens": 18000, "completion_tokens": 20, "input_tokens": 18000, "cached_input_tokens": 9000,
                  "output_tokens": 20, "reasoning_output_tokens": 1, "total_tokens": 18020},
        "You're welcome.": {"prompt_tokens": 18100, "completion_tokens": 5, "input_tokens": 18100,
                            "cached_input_tokens": 9050, "output_tokens": 5, "reasoning_output_tokens": 1,
                            "total_tokens": 18105},
    }
    assert got[6].extra["model"] == "gpt-5-codex" and got[6].extra["phase"] == "commentary"
    assert {t.extra["session_id"] for t in got} == {"019c-sess"}
    assert {t.source_event for t in got} == {"codex"}


def test_the_user_message_event_may_come_first(memory_dir, tmp_path):
    lines = [
        line("session_meta", {"id": "s2"}),
        event({"type": "user_message", "message": "List the files", "images": ["data:image/png;base64,AAAA"]}),
        event({"type": "task_started", "turn_id": "t"}),
        item({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "List the files"}, {"type": "input_image", "image_url": None}]}),
        message("assistant", "ok", "output_text"),
        event({"type": "user_message", "message": "typed but never sent to the model"}),
        message("assistant", "still going", "output_text"),
    ]
    result = import_values(memory_dir, "a", lines, "codex", tmp_path=tmp_path)
    got = traces(memory_dir, "a")
    assert shape(got) == [
        ("user", "turn_0001", 1, (), "List the files"),
        ("assistant", "turn_0001", 2, (), "ok"),
        ("user", "turn_0002", 1, (), "typed but never sent to the model"),  # an event alone is an ask too
        ("assistant", "turn_0002", 2, (), "still going"),
    ]
    assert got[0].media == {"images": ["data:image/png;base64,AAAA"]}  # the event's copy of the image
    assert result.skipped == {"image parts without a URL": 1}


def test_injected_context_keeps_its_place_in_the_file(memory_dir, tmp_path):
    lines = [
        line("session_meta", {"id": "s6"}),
        message("user", "project notes Codex injected (no known marker)"),
        message("developer", "sandbox rules"),
        event({"type": "task_started", "turn_id": "t"}),
        message("user", "the real question"),
        event({"type": "user_message", "message": "the real question"}),
    ]
    import_values(memory_dir, "a", lines, "codex", tmp_path=tmp_path)
    assert shape(traces(memory_dir, "a")) == [
        ("user", "turn_0001", 1, ("context",), "project notes Codex injected (no known marker)"),
        ("user", "turn_0001", 2, ("developer",), "sandbox rules"),
        ("user", "turn_0001", 3, (), "the real question"),
    ]


def test_every_prefix_then_the_whole_file_equals_the_whole_file(memory_dir, tmp_path):
    lines = rollout()
    import_values(memory_dir, "whole", lines, "codex", tmp_path=tmp_path, name="w.jsonl")
    again = import_values(memory_dir, "whole", lines, "codex", tmp_path=tmp_path, name="w.jsonl")
    assert again.appended == 0 and again.duplicates == 14
    whole = comparable(traces(memory_dir, "whole"))
    for cut in range(1, len(lines)):
        agent = f"cut{cut}"
        import_values(memory_dir, agent, lines[:cut], "codex", tmp_path=tmp_path, name="c.jsonl")
        import_values(memory_dir, agent, lines, "codex", tmp_path=tmp_path, name="c.jsonl")
        assert comparable(traces(memory_dir, agent)) == whole, f"cut after line {cut}"


def test_a_user_message_at_the_end_waits_for_its_event(memory_dir, tmp_path):
    lines = rollout()
    cut = 6  # ends with the real ask; its user_message event is not written yet
    first = import_values(memory_dir, "a", lines[:cut], "codex", tmp_path=tmp_path, name="c.jsonl")
    assert first.skipped == {HELD_BACK: 1}
    assert [t.content for t in traces(memory_dir, "a")][-1].startswith("<environment_context>")
    import_values(memory_dir, "a", lines, "codex", tmp_path=tmp_path, name="c.jsonl")
    asks = [t for t in traces(memory_dir, "a") if t.trace_type == "user" and not t.is_context]
    assert [t.content for t in asks] == ["list the files", "thanks"]


def test_outputs_errors_reused_ids_orphans_and_compaction(memory_dir, tmp_path):
    lines = [
        line("session_meta", {"id": "s3"}),
        message("user", "go"),
        event({"type": "user_message", "message": "go"}),
        item({"type": "function_call", "name": "shell", "arguments": '{"command": ["false"]}', "call_id": "c1"}),
        item({"type": "function_call_output", "call_id": "c1",
              "output": '{"output":"","metadata":{"exit_code":1,"duration_seconds":0.1}}'}),
        item({"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}),
        item({"type": "function_call_output", "call_id": "c1", "output": {"content": "denied", "success": False}}),
        item({"type": "local_shell_call", "call_id": "c2", "status": "completed",
              "action": {"type": "exec", "command": ["ls"]}}),
        item({"type": "function_call_output", "call_id": "c2", "output": [
            {"type": "input_text", "text": "shot:"}, {"type": "input_image", "image_url": "data:image/png;base64,QQ=="}]}),
        item({"type": "function_call_output", "call_id": "nobody", "output": "?"}),
        line("compacted", {"message": "Summary of the work so far.", "replacement_history": []}),
        line("compacted", {"message": "", "replacement_history": [{"type": "message", "role": "user", "content": []}]}),
        item({"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}}),
        item({"type": "context_compaction", "id": "cmp_1", "encrypted_content": "gAAAA"}),
        item({"type": "image_generation_call", "id": "ig1", "status": "completed", "result": "AAAA"}),
    ]
    result = import_values(memory_dir, "a", lines, "codex", tmp_path=tmp_path)
    assert result.skipped == {"image_generation_call items": 1}
    got = traces(memory_dir, "a")
    interactions = pair_tool_traces(got)
    assert [(i.tool_call_id, i.tool_name, i.status.value) for i in interactions] == [
        ("c1", "shell", "ERROR"), ("c1", "shell", "ERROR"), ("c2", "local_shell", "SUCCESS"), ("nobody", None, "ORPHAN")]
    assert interactions[1].error == "denied"
    assert interactions[2].arguments == {"type": "exec", "command": ["ls"]}
    shot = next(t for t in got if t.tool_call_id == "c2" and t.trace_type == "tool_result")
    assert (shot.tool_result, shot.media) == ("shot:", {"images": ["data:image/png;base64,QQ=="]})
    summary, remote = [t for t in got if "compact_summary" in t.tags]
    assert summary.content == "Summary of the work so far." and summary.is_context
    assert summary.extra["harness_compaction"] == {"harness": "codex"}
    # a compaction whose text is empty still keeps what Codex carried on with
    assert remote.content == "" and remote.is_context
    assert remote.extra["replacement_history"] == [{"type": "message", "role": "user", "content": []}]


def test_a_compactions_summary_written_as_a_user_message_is_never_an_ask(memory_dir, tmp_path):
    """Codex hands a compaction's summary to the model as a user message beginning "Another
    language model started to solve this problem..." (no user_message event of its own). Were it
    written to the rollout, the next ask's event (written before its message) paired with it: the
    summary became the ask and the person's message context. It is context; the ask stays theirs."""
    handoff = ("Another language model started to solve this problem and produced a summary of its thinking "
               "process. Here is the summary produced by the other language model:\nparser.py is strict now.")
    lines = [
        line("session_meta", {"id": "s3"}),
        message("user", "make parser.py strict"),
        event({"type": "user_message", "message": "make parser.py strict"}),
        message("assistant", "done", "output_text"),
        line("compacted", {"message": handoff, "replacement_history": []}),
        message("user", handoff),
        event({"type": "user_message", "message": "now lexer.py"}),
        message("user", "now lexer.py"),
        message("assistant", "lexer done", "output_text"),
    ]
    import_values(memory_dir, "a", lines, "codex", tmp_path=tmp_path)
    assert shape(traces(memory_dir, "a")) == [
        ("user", "turn_0001", 1, (), "make parser.py strict"),
        ("assistant", "turn_0001", 2, (), "done"),
        ("user", "turn_0001", 3, ("compact_summary",), handoff),
        ("user", "turn_0001", 4, ("context",), handoff),
        ("user", "turn_0002", 1, (), "now lexer.py"),
        ("assistant", "turn_0002", 2, (), "lexer done"),
    ]
    older = [{"id": "old", "timestamp": "2025-05-01T10:00:00Z", "instructions": None},
             {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the bug"}]},
             {"type": "message", "role": "user", "content": [{"type": "input_text", "text": handoff}]}]
    import_values(memory_dir, "b", older, "codex", tmp_path=tmp_path)
    assert [t.tags for t in traces(memory_dir, "b")] == [[], ["context"]]   # older rollouts: the text decides


def test_older_rollouts_without_events_use_the_text(memory_dir, tmp_path):
    lines = [
        {"id": "old-session", "timestamp": "2025-05-01T10:00:00Z", "instructions": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<user_instructions>x</user_instructions>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the bug"}]},
        {"type": "function_call", "name": "shell", "arguments": '{"command": ["ls"]}', "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "fixed"}]},
    ]
    result = import_values(memory_dir, "a", lines, "auto", tmp_path=tmp_path)
    assert result.format == "codex"
    assert shape(traces(memory_dir, "a")) == [
        ("user", "turn_0001", 1, ("context",), "<user_instructions>x</user_instructions>"),
        ("user", "turn_0001", 2, (), "fix the bug"),
        ("tool_call", "turn_0001", 3, (), "c1"),
        ("tool_result", "turn_0001", 4, (), "c1"),
        ("assistant", "turn_0001", 5, (), "fixed"),
    ]


def test_unreadable_timestamps_keep_the_previous_one(memory_dir, tmp_path):
    lines = [
        line("session_meta", {"id": "s4"}, ts="2026-02-23T11:00:00Z"),
        message("developer", "rules", ts="2026-02-23T11:00:00Z"),
        message("user", "hi", ts="[trimmed for fixture]"),
        event({"type": "user_message", "message": "hi"}, ts="2026-02-23T11:00:01Z"),
    ]
    result = import_values(memory_dir, "a", lines, "codex", tmp_path=tmp_path)
    assert result.skipped == {"unreadable timestamps (the previous one was used)": 1}
    rules, ask = traces(memory_dir, "a")
    assert ask.ts == rules.ts == pytest.approx(1771844400.0)


def test_resumed_sessions_keep_one_system_prompt(memory_dir, tmp_path):
    meta = line("session_meta", {"id": "s5", "base_instructions": {"text": "You are Codex."}})
    result = import_values(memory_dir, "a", [meta, message("user", "a"), event({"type": "user_message", "message": "a"}),
                                              meta, message("user", "b"), event({"type": "user_message", "message": "b"})],
                           "codex", tmp_path=tmp_path)
    assert (result.appended, result.duplicates) == (3, 0)


def test_fields_of_the_wrong_type_are_skipped_not_a_crash(memory_dir, tmp_path):
    lines = [
        line("session_meta", {"id": "s7"}),
        {"timestamp": "2026-02-23T11:00:00Z", "type": ["response_item"], "payload": {}},
        item({"type": {"oops": 1}, "call_id": "c"}),
        item({"type": "function_call", "name": ["x"], "arguments": [1, 2], "call_id": "c9"}),
        event({"type": "user_message", "message": "go", "kind": ["plain"]}),
        message("assistant", "ok", "output_text"),
    ]
    result = import_values(memory_dir, "a", lines, "codex", tmp_path=tmp_path)
    assert result.skipped == {"lines without a payload": 1, "items without a type": 1}
    got = traces(memory_dir, "a")
    assert [(t.trace_type, t.tool_name, t.tool_args, t.content) for t in got] == [
        ("tool_call", "function_call", {"input": "[1,2]"}, ""),
        ("user", None, None, "go"),
        ("assistant", None, None, "ok"),
    ]


def test_not_a_rollout_is_an_error():
    from memcli.ingest.pipeline import IngestResult

    events = list(get_importer("codex").events(iter([(1, {"role": "user", "content": "x"}), (2, {})]), IngestResult("a")))
    assert len(events) == 1 and isinstance(events[0][1], InputError)
    assert str(events[0][1]) == ('line 1: expected a Codex rollout line (an object with "type" and "payload"), '
                                 'got an object with keys role, content; it looks like OpenAI Chat Completions '
                                 'messages (--from openai)')


def test_sniffing_one_line_is_enough_for_a_stream():
    importer = get_importer("codex")
    assert importer.sniff([(1, rollout()[0])]) > 90
    assert importer.sniff([(1, {"type": "user", "uuid": "u", "message": {}})]) == 0
