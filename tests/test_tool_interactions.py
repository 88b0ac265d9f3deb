from memcli.models import RawTrace, ToolStatus
from memcli.tool_interactions import pair_tool_traces


def T(i, trace_type, call_id=None, **kw):
    return RawTrace(id=f"t{i}", ts=float(i), turn_id=kw.pop("turn", "turn_0001"), seq=i, trace_type=trace_type,
                    content="", source_event="test", tool_call_id=call_id, **kw)


def test_fifo_pairing_statuses_and_orphans():
    traces = [
        T(1, "tool_call", "x", tool_name="a", tool_args={"n": 1}),
        T(2, "tool_call", "x", tool_name="b"),
        T(3, "tool_result", "x", tool_result="for a"),
        T(4, "tool_result", "ghost", tool_result="nobody asked"),
        T(5, "tool_call", "y", tool_name="c"),
        T(6, "tool_result", "x", tool_error="boom"),
        T(7, "tool_call", "z", tool_name="d"),
        T(8, "user"),
        T(9, "tool_result", "y", tool_result=None),
    ]
    got = [(i.tool_call_id, i.tool_name, i.status, i.result, i.error, i.call_trace_id, i.result_trace_id)
           for i in pair_tool_traces(traces)]
    assert got == [
        ("x", "a", ToolStatus.SUCCESS, "for a", None, "t1", "t3"),
        ("x", "b", ToolStatus.ERROR, None, "boom", "t2", "t6"),
        ("ghost", None, ToolStatus.ORPHAN, "nobody asked", None, None, "t4"),
        ("y", "c", ToolStatus.SUCCESS, None, None, "t5", "t9"),
        ("z", "d", ToolStatus.PENDING, None, None, "t7", None),
    ]


def test_a_failure_the_harness_wrote_into_the_output_is_an_error_everywhere(memory_dir, cli):
    """Codex, Copilot CLI, Gemini CLI and Cline state a failed command's exit code in its output
    text, and an importer may keep one in the result or beside it: ``tools --status error``,
    ``stats`` and ``turns`` count those as errors, the one rule the compaction summary uses (it
    said "2 failed" where ``stats`` said 0 errors)."""
    import orjson

    events = [
        {"trace_type": "user", "content": "run the tests"},
        {"trace_type": "tool_call", "tool_name": "shell", "tool_call_id": "c1", "tool_args": {"command": "pytest -q"}},
        {"trace_type": "tool_result", "tool_name": "shell", "tool_call_id": "c1",
         "tool_result": "Exit code: 1\nWall time: 0.4 seconds\nOutput:\nFAILED tests/test_a.py::test_one - assert 1 == 2"},
        {"trace_type": "tool_call", "tool_name": "bash", "tool_call_id": "c2", "tool_args": {"command": "make"}},
        {"trace_type": "tool_result", "tool_name": "bash", "tool_call_id": "c2",
         "tool_result": {"exit_code": 2, "stderr": "make: *** [all] Error 2"}},
        {"trace_type": "tool_call", "tool_name": "shell", "tool_call_id": "c3", "tool_args": {"command": "ls"}},
        {"trace_type": "tool_result", "tool_name": "shell", "tool_call_id": "c3",
         "tool_result": "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nsrc tests"},
        {"trace_type": "tool_call", "tool_name": "shell", "tool_call_id": "c4", "tool_args": {"command": "cat x"}},
        {"trace_type": "tool_result", "tool_name": "shell", "tool_call_id": "c4", "tool_error": "No such file"},
    ]
    assert cli("ingest", "a", input=events).exit_code == 0
    listed = cli("tools", "a", "--status", "error", "--json")
    assert listed.exit_code == 0
    assert sorted(row["tool_call_id"] for row in orjson.loads(listed.stdout)) == ["c1", "c2", "c4"]
    stats = orjson.loads(cli("stats", "a", "--json").stdout)
    assert (stats["tool_calls"]["error"], stats["tool_calls"]["success"]) == (3, 1)
    turns = orjson.loads(cli("turns", "a", "--json").stdout)
    assert [t["errors"] for t in turns] == [3]


def test_value_text_is_a_stored_value_as_text():
    from memcli.messages import value_text

    assert [value_text(v) for v in (None, "", "héllo", {"a": [1, "é"]}, [True, None], 2**70)] == [
        "", "", "héllo", '{"a":[1,"é"]}', "[true,null]", "1180591620717411303424"]


def test_a_tool_that_answers_that_it_failed_is_an_error_where_no_exit_code_says_otherwise():
    """A Chat Completions ``tool`` message is text only: tau-bench's environments answer a tool's
    exception as ``Error: <message>`` (73 of the 1,164 answers of the corpus's trajectories), MCP
    clients ``Error executing tool …``, a code tool its traceback. Those were counted successes
    (``stats`` 0 errors, the summary "0 failed" above "not enough seats on flight HAT229"). A
    text that only mentions an error, or an exit code 0 beside the answer, is no failure."""
    from types import SimpleNamespace

    from memcli.tool_interactions import result_failure

    def failure(result, **extra):
        return result_failure(SimpleNamespace(tool_error=None, tool_result=result, extra=extra))

    seats = "Error: not enough seats on flight HAT229"
    assert failure(seats) == (True, seats)
    assert failure("\n  error: pathspec 'x' did not match") == (True, "\n  error: pathspec 'x' did not match")
    assert failure("Error executing tool search: timeout")[0]
    assert failure("Traceback (most recent call last):\n  File \"x.py\"\nKeyError: 'id'")[0]
    assert failure({"content": "ERROR: no such user"})[0]
    for fine in ("Error handling in Rust: the ? operator", "No error: all 12 passed", "Errors: 0",
                 "The tool said Error: x", "", None, {"rows": []}):
        assert failure(fine) == (False, ""), fine
    # an exit status known to be 0 (in the result, kept by the importer, stated in the text) wins
    assert failure({"exit_code": 0, "stdout": "Error: only a line it printed"}) == (False, "")
    assert failure("Error: printed by echo", exit_code=0) == (False, "")
    assert failure("Exit code: 0\nOutput:\nError: printed") == (False, "")
    assert failure({"exit_code": 2, "stderr": "Error: x"}) == (True, "exit code 2\nError: x")


def test_a_tool_answer_saying_error_is_counted_and_summarized_as_a_failure(memory_dir, cli):
    import orjson

    def update(call_id, cabin, answer):
        return [{"trace_type": "tool_call", "tool_name": "update_reservation_flights", "tool_call_id": call_id,
                 "tool_args": {"reservation_id": "OBUT9V", "cabin": cabin}},
                {"trace_type": "tool_result", "tool_name": "update_reservation_flights", "tool_call_id": call_id,
                 "tool_result": answer}]

    events = [
        {"trace_type": "user", "content": "Change my return flight to the fastest one on May 27."},
        *update("c1", "economy", "Error: not enough seats on flight HAT229"),
        {"trace_type": "assistant", "content": "Economy is full on HAT229; shall I try business?"},
        {"trace_type": "user", "content": "Yes, business please."},
        *update("c2", "business", '{"reservation_id": "OBUT9V", "cabin": "business"}'),
        {"trace_type": "assistant", "content": "Done: OBUT9V is now in business."},
        {"trace_type": "user", "content": "Thanks, that is all."},
    ]
    assert cli("ingest", "a", input=events).exit_code == 0
    stats = orjson.loads(cli("stats", "a", "--json").stdout)
    assert (stats["tool_calls"]["error"], stats["tool_calls"]["success"]) == (1, 1)
    done = cli("compact", "a", "--dry-run", "--tail-turns", "1", "--keep-steps", "0")
    assert done.exit_code == 0, done.output
    assert "2 tool calls, 1 failed" in done.stdout
    assert "Failed: update_reservation_flights ×1 (Error: not enough seats on flight HAT229) — passed later" \
        in done.stdout
