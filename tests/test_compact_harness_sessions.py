"""What the offline summary keeps from sessions of other harnesses and build tools, built by rule
from each producer's documented format and checked from the CLI (``memcli ingest`` →
``memcli compact`` → the episodic item): a Codex rollout (``shell`` / ``exec_command`` outputs
that state their exit status in text, ``apply_patch``, ``update_plan``), Copilot CLI and Gemini
CLI shell results, cargo / go / tsc failures with colour codes, non-English and long asks."""

from __future__ import annotations

import orjson

from tests.helpers import agent_dir, read_jsonl

# ------------------------------------------------------------------------------ Codex rollouts

class Rollout:
    """A Codex CLI rollout as Codex writes it (``{"timestamp", "type", "payload"}`` lines)."""

    def __init__(self, session: str = "019c0000-aaaa-bbbb-cccc-000000000001"):
        self.lines: list[dict] = []
        self.calls = 0
        self._line("session_meta", {"id": session, "cwd": "/home/u/my proj"})
        self._item({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>\n  <cwd>/home/u/my proj</cwd>\n</environment_context>"}]})

    def _line(self, kind: str, payload: dict) -> None:
        n = len(self.lines)
        self.lines.append({"timestamp": f"2026-03-10T08:{n // 60:02d}:{n % 60:02d}.000Z", "type": kind,
                           "payload": payload})

    def _item(self, payload: dict) -> None:
        self._line("response_item", payload)

    def ask(self, text: str) -> None:
        self._item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        self._line("event_msg", {"type": "user_message", "message": text, "kind": "plain"})

    def say(self, text: str) -> None:
        self._item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
        seen = sum(len(orjson.dumps(line)) for line in self.lines) // 4   # about what the model was sent
        self._line("event_msg", {"type": "token_count", "info": {"last_token_usage": {"input_tokens": 900 + seen,
                                                                                      "output_tokens": 40}}})

    def call(self, name: str, args, output: str) -> None:
        self.calls += 1
        call_id = f"call_{self.calls:03d}"
        if isinstance(args, str):   # a free-form tool (apply_patch)
            self._item({"type": "custom_tool_call", "name": name, "call_id": call_id, "input": args})
            self._item({"type": "custom_tool_call_output", "call_id": call_id, "output": output})
        else:
            self._item({"type": "function_call", "name": name, "call_id": call_id, "arguments": orjson.dumps(args).decode()})
            self._item({"type": "function_call_output", "call_id": call_id, "output": output})

    def exec(self, cmd: str, code: int, output: str) -> None:
        """The unified ``exec_command`` tool: its output text states the exit status after an id and a time."""
        self.call("exec_command", {"cmd": cmd, "workdir": "/home/u/my proj"},
                  f"Chunk ID: 7f3a2b\nWall time: 1.2041 seconds\nProcess exited with code {code}\n"
                  f"Original token count: 120\nOutput:\n{output}")

    def shell(self, cmd: str, code: int, output: str) -> None:
        """The ``shell`` tool (argv list): ``Exit code: N`` first."""
        self.call("shell", {"command": ["bash", "-lc", cmd]}, f"Exit code: {code}\nWall time: 0.4 seconds\nOutput:\n{output}")

    def patch(self, body: str) -> None:
        files = [line.split(": ", 1)[1] for line in body.splitlines() if line.startswith("*** ")]
        self.call("apply_patch", f"*** Begin Patch\n{body}\n*** End Patch",
                  "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\n"
                  + "".join(f"M {f}\n" for f in files))

    def text(self) -> str:
        return "".join(orjson.dumps(line).decode() + "\n" for line in self.lines)


PADDING = "\n".join(f"    let value_{n} = table.get(\"key_{n}\").unwrap_or_default();" for n in range(60))


def _summary(cli, memory_dir, tmp_path, name: str, text: str, fmt: str, *compact_args) -> str:
    src = tmp_path / f"{name}.jsonl"
    src.write_text(text)
    assert cli("ingest", name, src, "--from", fmt).exit_code == 0
    result = cli("compact", name, *compact_args)
    assert result.exit_code == 0 and "compacted" in result.stderr, result.stderr
    summary = read_jsonl(agent_dir(memory_dir, name) / "episodic.jsonl")[-1]["summary"]
    return summary


def _compacted(cli, memory_dir, tmp_path, rollout: Rollout) -> str:
    """The summary of a Codex rollout compacted but for its last turn."""
    return _summary(cli, memory_dir, tmp_path, "cx", rollout.text(), "codex", "--tail-turns", "1", "--keep-steps", "0")


def _line(summary: str, head: str) -> str:
    return next(line for line in summary.split("\n") if line.startswith(head))


CARGO_PANIC = ("   Compiling config-loader v0.3.1 (/home/u/my proj/crates/config-loader)\n     Running unittests src/lib.rs\n"
               "running 12 tests\ntest parser::tests::empty_key ... FAILED\n\nfailures:\n\n"
               "---- parser::tests::empty_key stdout ----\n"
               "thread 'parser::tests::empty_key' panicked at crates/config-loader/src/parser.rs:88:14:\n"
               "called `Option::unwrap()` on a `None` value\n\ntest result: FAILED. 11 passed; 1 failed; 0 ignored\n"
               "error: test failed, to rerun pass `-p config-loader --lib`")
CARGO_E0599 = ("\x1b[1m\x1b[32m   Compiling\x1b[0m config-loader v0.3.1\n\x1b[0m\x1b[1m\x1b[38;5;9merror[E0599]\x1b[0m"
               "\x1b[1m: no variant named `EmptyKey` found for enum `ConfigError`\x1b[0m\n"
               "  --> crates/config-loader/src/parser.rs:88:58\nwarning: unused import: `std::fmt`\n"
               "error: could not compile `config-loader` (lib) due to 1 previous error")
CARGO_OK = ("   Compiling config-loader v0.3.1\n     Running unittests src/lib.rs\nrunning 13 tests\n"
            "test result: ok. 13 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n"
            "   Doc-tests config_loader\nrunning 0 tests\ntest result: ok. 0 passed; 0 failed; 0 ignored")


def test_codex_commands_that_state_their_exit_status_in_text_are_failures_with_their_informative_line(
        cli, memory_dir, tmp_path):
    """Codex does not mark a failed command as an error: its ``exec_command`` / ``shell`` output
    says ``Process exited with code 101`` / ``Exit code: 1``. Those are failures (the summary
    said "0 failed" and listed none), named by their informative line (a Rust panic's message,
    rustc's error code under colour codes, go's failing test), resolved by a later run that covers
    them (``go test -run TestCheckEmptyKey`` picks the test that failed), which is named; a
    passing cargo run is told by its result line, not ``running 13 tests``."""
    r = Rollout()
    r.ask("Fix the panic in parse_config_entry (crates/config-loader/src/parser.rs).")
    r.exec("cargo test -p config-loader", 101, CARGO_PANIC)
    r.patch("*** Update File: crates/config-loader/src/parser.rs\n@@\n-    let first = key.chars().next().unwrap();\n"
            "+    let first = key.chars().next().ok_or(ConfigError::EmptyKey)?;")
    r.exec("cargo test -p config-loader", 101, CARGO_E0599)
    r.patch("*** Update File: crates/config-loader/src/error.rs\n@@ pub enum ConfigError {\n+    EmptyKey,")
    r.exec("cargo test -p config-loader", 0, CARGO_OK)
    r.say("Fixed: parse_config_entry returns ConfigError::EmptyKey.")
    r.ask("Now go test in tools/cfgcheck.")
    r.shell("cd tools/cfgcheck && go test ./...", 1, "--- FAIL: TestCheckEmptyKey (0.00s)\n"
            "    check_test.go:21: CheckFile(\"testdata/empty.toml\") = <nil>, want ErrEmptyKey\nFAIL\n"
            "FAIL\texample.com/cfgcheck\t0.012s\nFAIL")
    r.shell("cd tools/cfgcheck && go test -run TestCheckEmptyKey ./...", 0, "ok  \texample.com/cfgcheck\t0.010s")
    r.say("go test passes.")
    r.ask("Thanks.")
    summary = _compacted(cli, memory_dir, tmp_path, r)
    assert summary.split("\n")[0].endswith(": 19 traces, 7 tool calls, 3 failed.")
    assert _line(summary, "Failed: ") == (
        "Failed: `cd tools/cfgcheck && go test ./...` ×1 (exit code 1 --- FAIL: TestCheckEmptyKey (0.00s) — "
        "check_test.go:21: CheckFile(\"testdata/empty.toml\") = <nil>, want ErrEmptyKey) — fixed later (a later "
        "`go test -run TestCheckEmptyKey ./...` passed); `cargo test -p config-loader` ×2 (exit code 101 error[E0599]: no variant named `EmptyKey` "
        "found for enum `ConfigError`; before: exit code 101 test parser::tests::empty_key ... FAILED — panicked at "
        "crates/config-loader/src/parser.rs:88:14: called `Option::unwrap()` on a `None` value) — passed later")
    assert _line(summary, "Commands (latest outcome): ") == (
        "Commands (latest outcome): `cd tools/cfgcheck && go test -run TestCheckEmptyKey ./...`: ok "
        "example.com/cfgcheck 0.010s; `cargo test -p config-loader`: test result: ok. 13 passed; 0 failed; 0 ignored; "
        "0 measured; 0 filtered out; finished in 0.01s")
    assert "\x1b" not in summary


def test_copilot_and_gemini_cli_shell_results_that_state_a_failure_are_failures(cli, memory_dir, tmp_path):
    """Copilot CLI ends a command's output with ``<exited with exit code 1>`` (its call still
    ``success: true``); Gemini CLI's ``run_shell_command`` says ``Exit Code: 1`` among its own
    lines (``Command:``, ``Directory:``, ``Error: (none)``, ``Signal:``): both are failures, named
    by the output's informative line, never by the harness's lines."""
    def ev(n, kind, data):
        return {"type": kind, "id": f"e{n}", "timestamp": f"2026-02-01T09:00:{n:02d}.000Z", "parentId": None,
                "data": data}

    copilot = [ev(0, "session.start", {"sessionId": "s1", "context": {"cwd": "/repo"}}),
               ev(1, "user.message", {"content": "Run the tests."}),
               ev(4, "assistant.message", {"messageId": "mr", "content": "", "toolRequests": [
                   {"toolCallId": "cr", "name": "view", "arguments": {"path": "/repo/tests/test_a.py"}}]}),
               ev(5, "tool.execution_complete", {"toolCallId": "cr", "success": True, "result": {"content": PADDING}})]
    for n, (code, out) in enumerate([(1, "FAILED tests/test_a.py::test_zone - KeyError: 'zone'\n1 failed in 0.1s"),
                                     (0, "3 passed in 0.2s")]):
        copilot += [ev(10 * n + 2, "assistant.message", {"messageId": f"m{n}", "content": "", "toolRequests": [
                        {"toolCallId": f"c{n}", "name": "bash", "arguments": {"command": "pytest -q"}}]}),
                    ev(10 * n + 3, "tool.execution_complete", {"toolCallId": f"c{n}", "success": True, "result": {
                        "content": f"{out}\n<exited with exit code {code}>"}})]
    copilot += [ev(40, "assistant.message", {"messageId": "m9", "content": "Green now."}),
                ev(41, "user.message", {"content": "Good."})]
    summary = _summary(cli, memory_dir, tmp_path, "cp", "".join(orjson.dumps(e).decode() + "\n" for e in copilot),
                       "copilot-cli", "--tail-turns", "1", "--keep-steps", "0")
    assert _line(summary, "Failed: ") == ("Failed: `pytest -q` ×1 (exit code 1 FAILED tests/test_a.py::test_zone - "
                                          "KeyError: 'zone') — passed later")
    assert _line(summary, "Commands (latest outcome): ") == "Commands (latest outcome): `pytest -q`: 3 passed in 0.2s"

    def shell_call(n, command, output, code):
        return {"id": f"t{n}", "name": "run_shell_command", "args": {"command": command}, "status": "success",
                "result": [{"functionResponse": {"id": f"t{n}", "name": "run_shell_command", "response": {
                    "output": f"Command: {command}\nDirectory: (root)\nOutput: {output}\nError: (none)\n"
                              f"Exit Code: {code}\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 4242"}}}]}

    gemini = {"sessionId": "5f3c", "projectHash": "ab12", "startTime": "2026-02-01T10:00:00Z",
              "lastUpdated": "2026-02-01T10:01:00Z", "messages": [
                  {"id": "m1", "timestamp": "2026-02-01T10:00:00Z", "type": "user", "content": "Build it."},
                  {"id": "m2", "timestamp": "2026-02-01T10:00:05Z", "type": "gemini", "content": "", "toolCalls": [
                      shell_call(1, "cargo build", "error[E0425]: cannot find value `cfg` in this scope\n"
                                                   " --> src/main.rs:4:13", 101)]},
                  {"id": "m3", "timestamp": "2026-02-01T10:00:07Z", "type": "gemini", "content": "", "toolCalls": [{
                      "id": "r1", "name": "read_file", "args": {"absolute_path": "/repo/src/main.rs"}, "status": "success",
                      "result": [{"functionResponse": {"id": "r1", "name": "read_file", "response": {"output": PADDING}}}]}]},
                  {"id": "m5", "timestamp": "2026-02-01T10:00:09Z", "type": "gemini", "content": "It fails on cfg."},
                  {"id": "m4", "timestamp": "2026-02-01T10:00:10Z", "type": "user", "content": "Fix it."}]}
    summary = _summary(cli, memory_dir, tmp_path, "gm", orjson.dumps(gemini).decode(), "gemini-cli",
                       "--tail-turns", "1", "--keep-steps", "0")
    assert _line(summary, "Failed: ") == ("Failed: `cargo build` ×1 (exit code 101 error[E0425]: cannot find value "
                                          "`cfg` in this scope) — still failing")


def test_gemini_cli_shell_labels_and_an_empty_output_are_not_the_failure():
    """Gemini CLI's ``run_shell_command`` (older versions) labels the output ``Stdout:`` /
    ``Stderr:``, and a command that printed nothing says ``Output: (empty)``: the failure is the
    output's informative line without its label, or the exit status — never the echoed
    ``Command:`` line (it was "Command: make deploy", or "Stdout: FAILED …")."""
    from memcli.compaction.offline import error_brief

    tail = "Error: (none)\nExit Code: {}\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 4242"
    labelled = ("Command: pytest -q tests/test_a.py\nDirectory: (root)\nStdout: FAILED tests/test_a.py::test_x - "
                "KeyError: 'A'\n1 failed\nStderr: (empty)\n" + tail.format(1))
    assert error_brief(labelled) == "FAILED tests/test_a.py::test_x - KeyError: 'A'"
    assert error_brief("Command: make deploy\nDirectory: (root)\nOutput: (empty)\n" + tail.format(2)) == "Exit Code: 2"


def _copilot(events: list[tuple[str, dict]]) -> str:
    """Copilot CLI ``events.jsonl`` lines from (type, data) pairs."""
    lines = [{"type": "session.start", "id": "e0", "timestamp": "2026-02-01T09:00:00.000Z", "parentId": None,
              "data": {"sessionId": "s2", "context": {"cwd": "/repo"}}}]
    for n, (kind, data) in enumerate(events, 1):
        lines.append({"type": kind, "id": f"e{n}", "timestamp": f"2026-02-01T09:{n // 60:02d}:{n % 60:02d}.000Z",
                      "parentId": None, "data": data})
    return "".join(orjson.dumps(line).decode() + "\n" for line in lines)


def test_parallel_copilot_subagents_get_a_line_each_with_the_task_that_started_them(cli, memory_dir, tmp_path):
    """Two Copilot CLI subagents run at once (their events interleaved, each marked with the
    ``parentToolCallId`` of the ``task`` call that started it): one line each, with the task
    from that call, its own file, failure and conclusion (they were merged into one)."""
    def task(call, prompt):
        return ("assistant.message", {"messageId": f"m{call}", "content": "", "toolRequests": [
            {"toolCallId": call, "name": "task", "arguments": {"description": prompt.split(":")[0], "prompt": prompt}}]})

    def side(parent, kind, data):
        return kind, {**data, "parentToolCallId": parent}

    events = [("user.message", {"content": "Review billing and shipping in parallel."}),
              task("t1", "Billing: fix src/billing.py rounding"), task("t2", "Shipping: fix the zone lookup"),
              side("t1", "assistant.message", {"messageId": "b1", "content": "", "toolRequests": [
                  {"toolCallId": "b-e1", "name": "edit", "arguments": {"path": "/repo/src/billing.py",
                                                                       "old_str": "round(x)", "new_str": "round_half_up(x)"}}]}),
              side("t2", "assistant.message", {"messageId": "s1", "content": "", "toolRequests": [
                  {"toolCallId": "s-e1", "name": "bash", "arguments": {"command": "pytest -q tests/test_shipping.py"}}]}),
              side("t1", "tool.execution_complete", {"toolCallId": "b-e1", "success": True, "result": {"content": "ok"}}),
              side("t2", "tool.execution_complete", {"toolCallId": "s-e1", "success": True, "result": {
                  "content": "FAILED tests/test_shipping.py::test_rate - KeyError: 'zone'\n<exited with exit code 1>"}}),
              side("t1", "assistant.message", {"messageId": "b2", "content": "Billing rounds half up now."}),
              side("t2", "assistant.message", {"messageId": "s2", "content": "Shipping still fails on zone."}),
              ("tool.execution_complete", {"toolCallId": "t1", "success": True, "result": {"content": "Billing done."}}),
              ("tool.execution_complete", {"toolCallId": "t2", "success": True, "result": {"content": "Shipping fails."}}),
              ("assistant.message", {"messageId": "m8", "content": "", "toolRequests": [
                  {"toolCallId": "v1", "name": "view", "arguments": {"path": "/repo/src/zones.py"}}]}),
              ("tool.execution_complete", {"toolCallId": "v1", "success": True, "result": {"content": PADDING}}),
              ("assistant.message", {"messageId": "m9", "content": "Billing is done; shipping needs a zone."}),
              ("user.message", {"content": "Add the zone then."})]
    summary = _summary(cli, memory_dir, tmp_path, "cp2", _copilot(events), "copilot-cli",
                       "--tail-turns", "1", "--keep-steps", "0")
    block = summary.split("Subagents:\n", 1)[1].split("\nFiles modified", 1)[0].split("\n")
    assert block == [
        '- agent t1 (turn_0001) · task "Billing: fix src/billing.py rounding" · changed: /repo/src/billing.py · '
        '1 tool call · concluded: "Billing rounds half up now."',
        '- agent t2 (turn_0001) · task "Shipping: fix the zone lookup" · 1 failed (last: `pytest -q '
        "tests/test_shipping.py`: exit code 1 FAILED tests/test_shipping.py::test_rate - KeyError: 'zone') · "
        'concluded: "Shipping still fails on zone."']


def test_an_opencode_command_that_exits_non_zero_is_a_failure(cli, memory_dir, tmp_path):
    """opencode's ``bash`` tool completes whatever the command's exit status; the status is in
    the part's ``metadata.exit``. A non-zero one is a failure in the summary (with the output's
    informative line: jest's failing test and its message), resolved by a later run of the family."""
    n = [0]

    def part(tool, args, output, code=0, meta=True):
        n[0] += 1
        state = {"status": "completed", "input": args, "output": output, "title": tool,
                 "time": {"start": 1770000000000 + n[0], "end": 1770000000001 + n[0]}}
        if meta:
            state["metadata"] = {"output": output, "exit": code, "description": "run"}
        return {"id": f"prt_{n[0]:04d}", "type": "tool", "callID": f"call_{n[0]}", "tool": tool, "state": state}

    def message(role, parts, mid):
        return {"info": {"id": f"msg_{mid}", "role": role, "time": {"created": 1770000000000 + mid * 1000}},
                "parts": parts}

    jest_fail = ("FAIL src/cart.test.ts\n  ● Cart › adds item\n\n    expect(received).toBe(expected)\n\n"
                 "    Expected: 2\n    Received: 1\n\nTests:       1 failed, 4 passed, 5 total")
    session = {"info": {"id": "ses_01", "directory": "/repo", "title": "cart"}, "messages": [
        message("user", [{"id": "prt_u1", "type": "text", "text": "Make the cart tests pass."}], 1),
        message("assistant", [part("read", {"filePath": "/repo/src/cart.ts"}, PADDING, meta=False),
                              part("bash", {"command": "npx jest src/cart.test.ts"}, jest_fail, 1),
                              part("edit", {"filePath": "/repo/src/cart.ts", "oldString": "count = 0",
                                            "newString": "count = items.length"}, "", meta=False),
                              part("bash", {"command": "npx jest"}, "Tests:       5 passed, 5 total", 0),
                              {"id": "prt_t1", "type": "text", "text": "The cart counts its items now."}], 2),
        message("user", [{"id": "prt_u2", "type": "text", "text": "Thanks."}], 3)]}
    summary = _summary(cli, memory_dir, tmp_path, "oc", orjson.dumps(session).decode(), "opencode",
                       "--tail-turns", "1", "--keep-steps", "0")
    assert _line(summary, "Failed: ") == ("Failed: `npx jest src/cart.test.ts` ×1 (exit code 1 ● Cart › adds item — "
                                          "expect(received).toBe(expected)) — fixed later (a later `npx jest` passed)")
    assert _line(summary, "Commands (latest outcome): ") == "Commands (latest outcome): `npx jest`: Tests: 5 passed, 5 total"
    assert _line(summary, "Files modified: ") == "Files modified: /repo/src/cart.ts (items.length)"
    # the turn line names the failing command; its informative line is said once, in Failed:
    assert "(1 failed; last: `npx jest src/cart.test.ts`) · assistant: " in summary
    assert summary.count("● Cart › adds item") == 1


WRITES = [   # (harness, tool, arguments as the harness records them, files written, a shell command)
    ("opencode", "edit", {"filePath": "/repo/src/a.ts", "oldString": "x", "newString": "y"}, ["/repo/src/a.ts"], None),
    ("opencode", "write", {"filePath": "/repo/src/b.ts", "content": "export const b = 1"}, ["/repo/src/b.ts"], None),
    ("opencode", "patch", {"patchText": "*** Begin Patch\n*** Update File: src/c.ts\n+x\n*** End Patch"},
     ["src/c.ts"], None),
    ("goose", "developer__text_editor", {"command": "write", "path": "/repo/notes.md", "file_text": "# Notes"},
     ["/repo/notes.md"], None),
    ("goose", "developer__text_editor", {"command": "str_replace", "path": "/repo/a.py", "old_str": "a", "new_str": "b"},
     ["/repo/a.py"], None),
    ("goose", "developer__text_editor", {"command": "view", "path": "/repo/a.py"}, [], None),
    ("goose", "developer__shell", {"command": "cargo build"}, [], "cargo build"),
    ("gemini-cli", "replace", {"file_path": "/repo/main.go", "old_string": "a", "new_string": "b"}, ["/repo/main.go"], None),
    ("gemini-cli", "write_file", {"file_path": "/repo/my dir/x.go", "content": "package x"}, ["/repo/my dir/x.go"], None),
    ("cursor", "edit_file", {"target_file": "src/app.tsx", "instructions": "i", "code_edit": "// ..."}, ["src/app.tsx"], None),
    ("cursor", "search_replace", {"file_path": "src/app.tsx", "old_string": "a", "new_string": "b"}, ["src/app.tsx"], None),
    ("copilot-cli", "create", {"path": "/repo/new.py", "file_text": "x = 1"}, ["/repo/new.py"], None),
]


def test_each_harness_s_file_writes_are_files_modified_and_an_editor_verb_is_no_command():
    """opencode's camelCase ``filePath``/``oldString``/``newString`` and ``patchText``, Goose's
    text editor ``write`` (it was taken for a shell command named ``write``), Gemini CLI, Cursor and
    Copilot CLI writes: each names the file it modified."""
    from memcli.compaction.offline import command_of, written_paths

    assert [(written_paths(tool, args), command_of(args)) for _, tool, args, _, _ in WRITES] == [
        (files, command) for _, _, _, files, command in WRITES]


LONG_ASK = ("Die Funktion `parse_config_entry` in \"crates/config loader/src/parser.rs\" wirft bei leeren Schlüsseln "
            "einen Panic; bitte behebe das so, dass `ConfigError::EmptyKey` zurückgegeben wird, und ergänze einen Test "
            "in crates/config-loader/tests/parse_empty_key.rs. Danach muss `cargo test -p config-loader` grün sein, "
            "und vergiss nicht den Eintrag in CHANGELOG.md unter ## Unreleased (Issue #482, siehe "
            "https://git.example.com/acme/config/issues/482). Bitte keine Änderungen an der öffentlichen API von "
            "ConfigLoader::from_path, und halte dich an rustfmt mit max_width = 110.")


def test_a_long_non_english_ask_stays_verbatim_when_the_summary_has_room(cli, memory_dir, tmp_path):
    """An ask of 560 characters (German, a path with a space, a URL, identifiers) is kept whole
    on its turn line: it was cut at 200 characters, mid-sentence, with room to spare."""
    r = Rollout()
    r.ask(LONG_ASK)
    for n in range(6):
        r.exec(f"sed -n '1,80p' crates/config-loader/src/part_{n}.rs", 0, PADDING)
    r.say("I read the parser; the panic is the unwrap on the first character.")
    r.ask("Go on.")
    summary = _compacted(cli, memory_dir, tmp_path, r)
    assert f'- turn_0001 · user: "{LONG_ASK}" · tools: exec_command ×6' in summary


def test_a_clipped_ask_is_never_cut_inside_a_path_or_an_identifier():
    from memcli.compaction.offline import clip_ask

    path = "crates/config-loader/src/very/deeply/nested/module/with/a/long/path/parse_config_entry_impl.rs"
    ask = "word " * 38 + path + " and the rest of the ask"
    assert clip_ask(ask, 200) == ("word " * 38).strip() + " …"        # the path crosses the limit: it goes whole
    assert clip_ask(ask, 150) == ("word " * 31).strip() + " …"
    assert clip_ask("word " * 39 + "parse_config_entry and more", 200) == ("word " * 39) + "parse_config_entry …"
    # a path with a space, quoted, is not cut in two: it goes whole, or stays whole when it ends near
    long_path = "crates/config loader/src/" + "nested/" * 12 + "parser.rs"
    assert clip_ask(f'Fix the panic in "{long_path}" now please', 30) == 'Fix the panic in …'
    assert clip_ask('Fix the panic in "crates/config loader/src/parser.rs" now please', 40) == \
        'Fix the panic in "crates/config loader/src/parser.rs" …'
    assert clip_ask("Run `cargo test -p config-loader --lib` then push it", 24) == "Run `cargo test -p config-loader --lib` …"


def test_an_ask_is_not_clipped_to_make_room_for_the_failures_and_commands(cli, memory_dir, tmp_path):
    """A window of long asks and failing commands with short outputs: the summary is over the
    quarter of the window it aims at, and the asks were clipped for it (to ~260 characters) while
    the failures stayed whole; asks are clipped only over the summary's budget."""
    r = Rollout()
    for n in range(4):
        r.ask(LONG_ASK.replace("#482", f"#48{n}"))
        r.exec(f"cargo test -p config-loader --test case_{n}", 101, f"error[E0599]: no variant named `Case{n}`")
        r.say(f"Case {n} fails to build.")
    r.ask("Go on.")
    summary = _compacted(cli, memory_dir, tmp_path, r)
    assert summary.count(f'user: "{LONG_ASK[:100]}') == 4
    assert f'user: "{LONG_ASK.replace("#482", "#483")}"' in summary
    assert "URLs:" not in summary   # the ask's URL, shown in the ask, is not listed again


def test_a_rollup_of_rollups_keeps_every_ask_and_says_each_header_once(cli, memory_dir):
    """Eight compactions of three turns each (at most 3 live summaries: rollups of rollups): the
    rollup keeps the asks of the oldest turns too, each whole, and one "Earlier history" header
    (nested rollups gave the oldest summaries a third of a third… of the room: their asks were
    all left out, while the newest kept their tool lines)."""
    def turn(n):
        return [{"trace_type": "user", "content": f"Round {n}: migrate services/billing_{n}/handler.py to "
                                                  f"AsyncBillingClient_{n} and keep INVOICE_{n}_URL (BILL-{1000 + n})"},
                {"trace_type": "tool_call", "tool_name": "Edit", "tool_call_id": f"c{n}", "tool_args": {
                    "file_path": f"services/billing_{n}/handler.py", "old_string": "client = Billing()",
                    "new_string": f"client = AsyncBillingClient_{n}(os.environ['INVOICE_{n}_URL'])"}},
                {"trace_type": "tool_result", "tool_name": "Edit", "tool_call_id": f"c{n}", "tool_result": "ok"},
                {"trace_type": "tool_call", "tool_name": "Bash", "tool_call_id": f"d{n}",
                 "tool_args": {"command": f"pytest -q tests/test_billing_{n}.py"}},
                {"trace_type": "tool_result", "tool_name": "Bash", "tool_call_id": f"d{n}",
                 "tool_result": PADDING + "\n3 passed in 0.2s"},
                {"trace_type": "assistant", "content": f"Billing {n} uses AsyncBillingClient_{n} now."}]

    for r in range(8):
        assert cli("ingest", "r", input=[e for n in range(3 * r, 3 * r + 3) for e in turn(n)]).exit_code == 0
        assert cli("compact", "r", "--tail-turns", "1", "--keep-steps", "0").exit_code == 0
    items = {i["id"]: i for i in read_jsonl(agent_dir(memory_dir, "r") / "episodic.jsonl")}
    gone = {s for i in items.values() for s in i.get("supersedes", ())}
    rollup = next(i for i in items.values() if i["id"] not in gone and "rollup" in i["tags"])
    text = rollup["summary"]
    # the offline summaries merge into one (merge_summary_texts): one header adding them up, one files line
    assert text.startswith("Earlier history (turn_0001–turn_0020), rolled up from 7 summaries:\n"
                           "[turn_0001–turn_0020] (7 summaries)\n20 turns (turn_0001–turn_0020), ")
    assert ": 120 traces, 40 tool calls, 0 failed.\n- turn_0001 · user: " in text
    assert text.count("Earlier history") == 1 and text.count("Files modified: ") == 1
    for n in range(20):
        assert f'user: "Round {n}: migrate services/billing_{n}/handler.py to AsyncBillingClient_{n} and keep ' \
               f'INVOICE_{n}_URL (BILL-{1000 + n})"' in text, n


def test_a_rollup_of_many_summaries_stays_within_its_size_and_counts_the_oldest():
    from memcli.compaction.compactor import ROLLUP_CHARS, _rollup_text
    from memcli.models import EpisodicItem

    def item(n, text, tags=("compaction",)):
        return EpisodicItem(f"ep_{n}", 1.0, [f"turn_{n:04d}"], text, list(tags))

    items = [item(n, f"1 turn (turn_{n:04d}): 6 traces.\n- turn_{n:04d} · user: \"Ask {n} about services/s_{n}.py\"\n"
                     f"Files modified: services/s_{n}.py") for n in range(1, 60)]
    first = _rollup_text(items[:40])
    rolled = _rollup_text([EpisodicItem("ep_r", 1.0, [f"turn_{n:04d}" for n in range(1, 41)], first,
                                        ["compaction", "rollup"]), *items[40:]])
    assert len(first) <= ROLLUP_CHARS and len(rolled) <= ROLLUP_CHARS
    assert rolled.startswith("Earlier history (turn_0001–turn_0059), rolled up from 59 summaries:\n[turn_0001–turn_0024]\n"
                             "24 older summaries left out at the rollup's size (`memcli show AGENT --archive` has their "
                             "turns)\n[turn_0025]\n")
    assert rolled.count("Earlier history") == 1
    assert all(f'"Ask {n} about services/s_{n}.py"' in rolled for n in range(25, 60))


def test_the_vocabulary_takes_no_identifier_cut_where_a_long_text_stops_being_read():
    """Only a text's first 8,000 characters are read for the vocabulary; the identifier that
    crosses that point was kept cut (``unwrap_or_defaul``, ``table.ge``)."""
    from memcli.compaction.offline import VOCAB_TEXT_CHARS, _TurnDigest
    from memcli.compaction.summarizer import Turn
    from memcli.models import RawTrace

    line = "    let value = table.get(key).unwrap_or_default();\n"
    output = line * (VOCAB_TEXT_CHARS // len(line) + 2)
    assert not output[VOCAB_TEXT_CHARS - 1:VOCAB_TEXT_CHARS + 1].isspace()   # the limit falls inside a name
    traces = [RawTrace("t-1", 1.0, "turn_0001", 1, "user", "Read src/lib.rs", "x"),
              RawTrace("t-2", 2.0, "turn_0001", 2, "tool_call", "", "x", tool_name="Read", tool_call_id="c1",
                       tool_args={"file_path": "src/lib.rs"}),
              RawTrace("t-3", 3.0, "turn_0001", 3, "tool_result", "", "x", tool_name="Read", tool_call_id="c1",
                       tool_result=output)]
    vocab = _TurnDigest.of(Turn("turn_0001", traces)).vocab
    assert {"table.get", "unwrap_or_default"} <= set(vocab)
    assert all(name in ("table.get", "unwrap_or_default", "src/lib.rs") for name in vocab), sorted(vocab)


def test_commands_of_a_family_that_failed_alike_say_their_informative_line_once(cli, memory_dir, tmp_path):
    """Three test files fail on the same import error, then one of them on its own assertion:
    the import error is said once for the three runs (it was repeated for each)."""
    r = Rollout()
    r.ask("Run the billing tests one file at a time.")
    why = ("____ ERROR collecting tests/test_{0}.py ____\nE   ImportError: cannot import name 'OrderTotal' from "
           "'app.api'\nERROR tests/test_{0}.py\n!!!!! Interrupted: 1 error during collection !!!!!")
    for name in ("orders", "refunds", "invoices"):
        r.exec(f"pytest -q tests/test_{name}.py", 2, why.format("x"))
    r.exec("pytest -q tests/test_ledger.py", 1, "FAILED tests/test_ledger.py::test_round - assert 1 == 2")
    r.exec("cat app/api.py", 0, PADDING)
    r.say("OrderTotal is gone from app.api.")
    r.ask("Restore it.")
    summary = _compacted(cli, memory_dir, tmp_path, r)
    assert _line(summary, "Failed: ") == (
        "Failed: `pytest -q tests/test_ledger.py` ×1 (exit code 1 FAILED tests/test_ledger.py::test_round - assert "
        "1 == 2) — still failing; `pytest -q tests/test_invoices.py` ×1, `pytest -q tests/test_refunds.py` ×1, "
        "`pytest -q tests/test_orders.py` ×1 (exit code 2 ERROR tests/test_x.py — E ImportError: cannot import "
        "name 'OrderTotal' from 'app.api') — still failing")


def test_a_test_runner_given_other_files_is_one_family():
    """``pytest tests/test_orders.py`` failing, then ``pytest -q`` passing: fixed later (the file
    argument had made them two families, so the failure stayed "still failing")."""
    from memcli.compaction.offline import command_family

    assert command_family("pytest tests/test_orders.py") == command_family("pytest -q") == "pytest"
    assert command_family("npx jest src/cart.test.ts") == command_family("npx jest") == "npx jest"
    assert command_family("mypy src/app.py") == "mypy" and command_family("tsc -p web/tsconfig.json") == "tsc"
    assert command_family("ruff check src/") == "ruff check" != command_family("ruff format src/")
    assert command_family("bun run build") == "bun run build" and command_family("bun test a.test.ts") == "bun test"
    assert command_family("cat a.txt") != command_family("cat b.txt")   # a file's reader is not a runner


def _bash_run(seq: int, command: str, *, out=None, code: int = 0, err: str | None = None, tags=None) -> list:
    """A Bash call of turn_0001 at ``seq`` and its result: ``{"exit_code": code, "stdout": out}``,
    or the error ``err``."""
    from memcli.models import RawTrace

    return [RawTrace(f"c{seq}", float(seq), "turn_0001", seq, "tool_call", "", "x", tool_name="Bash",
                     tool_call_id=f"k{seq}", tool_args={"command": command}, tags=tags),
            RawTrace(f"r{seq}", seq + 0.5, "turn_0001", seq + 1, "tool_result", "", "x", tool_name="Bash",
                     tool_call_id=f"k{seq}", tool_result=None if err else {"exit_code": code, "stdout": out},
                     tool_error=err, tags=tags)]


def test_a_script_run_with_the_interpreter_s_versioned_name_fixes_its_failure():
    """A real session: ``python gen.py`` failed (``command not found: python``), then ``python3
    gen.py`` passed; the summary said "still failing". The interpreter's version is no other
    program (the later run is named as it was); another script is another run."""
    from memcli.compaction.offline import OfflineSummarizer, run_scope
    from memcli.compaction.summarizer import Turn
    from memcli.models import RawTrace

    traces = [RawTrace("u", 0.0, "turn_0001", 1, "user", "Run the generator.", "x"),
              *_bash_run(10, "python /workspace/gen.py", err="Exit code 127\n(eval):1: command not found: python"),
              *_bash_run(20, "python3 /workspace/gen.py", out="Generated numbers: [94, 17]")]
    summary = OfflineSummarizer().summarize([Turn("turn_0001", traces)]).episodic_summary
    assert "— fixed later (a later `python3 /workspace/gen.py` passed)" in summary, summary
    assert run_scope("python3.11 gen.py") == run_scope("python gen.py") != run_scope("python other.py")
    assert run_scope("cd api && python3 -m pytest -q") == run_scope("cd api && python -m pytest")
    assert run_scope("python3.12 -m venv .venv") == run_scope("python3 -m venv .venv")
    assert run_scope("which python3") != run_scope("which python")   # what it looks for: not the program


def test_a_run_of_other_files_passing_does_not_fix_a_failing_test(cli, memory_dir, tmp_path):
    """``pytest tests/test_router.py`` failing, then ``pytest tests/test_cache.py`` passing: the
    router's test is still failing (both were one family, so the summary said "fixed later (a
    later `pytest` passed)" and a tight summary dropped the open failure for the fixed ones). The
    whole suite passing later fixes it; so does its own directory."""
    r = Rollout()
    r.ask("Port the router and the cache to settings.")
    r.exec("pytest -q tests/test_router.py", 1, "FAILED tests/test_router.py::test_roundtrip - RouterError")
    r.exec("pytest -q tests/test_cache.py", 0, "9 passed in 0.3s")
    r.say("The cache is done; the router still fails.")
    r.ask("Go on.")
    summary = _compacted(cli, memory_dir, tmp_path, r)
    assert _line(summary, "Failed: ") == ("Failed: `pytest -q tests/test_router.py` ×1 (exit code 1 FAILED "
                                          "tests/test_router.py::test_roundtrip - RouterError) — still failing")


def test_a_later_run_fixes_a_failure_only_when_it_covers_it():
    """``_Fixes.by`` (:mod:`memcli.compaction.offline`): the same scope passing, the whole suite, the
    file's directory or the file itself fix a failing test, whatever runs the runner (``uv run``,
    ``python -m``, after ``source … &&``) — and the run that fixed it is named; another file, a
    narrower selection (``-k``, ``--testNamePattern=``, ``--deselect``), another directory
    (``cd``) or a run before the failure do not."""
    from memcli.compaction.offline import _Fixes, command_family, run_scope, runs_recorded

    def fixed_later(command, scopes, failure=""):   # the run that fixed ``command``, or None
        return _Fixes(scopes).by(command, failure)

    def scopes(*runs):   # what a window keeps of its runs: scope -> (failed, the run's name), latest last
        out = {}
        for command, failed in runs:
            for scope, name in runs_recorded(command, failed):
                out.pop(scope, None)
                out[scope] = (failed, name)
        return out

    failing = ("pytest -q tests/api/test_router.py::test_roundtrip", True)
    assert run_scope(failing[0]) == "pytest\ttests/api/test_router.py::test_roundtrip"
    assert run_scope("cd app && FOO=1 uv run pytest tests/ -k 'slow or fast' -n 4 | tail") == \
        "pytest@app\t-k=slow or fast\x1ftests/"
    assert run_scope("timeout 60s npx jest --testNamePattern=Button a.test.ts") == "jest\t--testNamePattern=Button\x1fa.test.ts"
    assert run_scope("source .venv/bin/activate && pytest -kfoo tests/a.py") == "pytest\t-k=foo\x1ftests/a.py"
    assert run_scope("git commit -m pytest") == "git commit" and run_scope("echo pytest x") == "echo pytest"
    # a here-document's body is no command of the line (nor read: its first line says what runs)
    assert run_scope("cat > run.sh <<'EOF'\ncd api && pytest tests/\nEOF") == "cat"
    assert run_scope("pytest tests/a.py 2>&1 | tail -5") == "pytest\ttests/a.py"
    assert command_family("ls -la | grep x") == "ls" and command_family("npm test >> log 2>&1") == "npm test"
    # a line's family is the chain of the commands it runs that do work (it may have stopped at any)
    assert command_family("npm install && npm run build; echo done") == "npm install && npm run build"
    assert command_family("make test && echo OK || echo FAIL") == "make test" and command_family("echo hi") == "echo hi"
    assert command_family("for f in a b; do python check.py $f; done") == "python check.py"
    assert command_family("(cd api && pytest)") == "pytest" and command_family("pytest |& tee log") == "pytest"
    assert command_family("\npytest -q") == "pytest" and run_scope("pytest tests/a.py \\\n  tests/b.py") == \
        "pytest\ttests/a.py\x1ftests/b.py"
    assert run_scope("go test -timeout 30s -tags integration ./...") == "go test\t./..."
    assert run_scope("cargo test -p alpha") == "cargo test\t-p=alpha"
    for later, by in (("pytest -q", "pytest"), ("pytest tests/api/", "pytest tests/api/"),
                      ("pytest tests/api/test_router.py", "pytest tests/api/test_router.py"),
                      ("python -m pytest -x", "python -m pytest"),
                      ("source venv/bin/activate && uv run pytest -q tests/api/test_router.py::test_roundtrip",
                       "uv run pytest tests/api/test_router.py::test_roundtrip")):
        assert fixed_later(failing[0], scopes(failing, (later, False))) == by, later
    for later in ("pytest tests/api/test_cache.py", "pytest -k slow", "pytest -k=slow", "pytest --deselect "
                  "tests/api/test_router.py::test_roundtrip", "pytest tests/api/test_router.py::test_other",
                  "mypy tests/api/test_router.py", "cd web && pytest"):
        assert fixed_later(failing[0], scopes(failing, (later, False))) is None, later
    assert fixed_later(failing[0], scopes(("pytest -q", False), failing)) is None   # passed before it failed
    assert fixed_later("git add x", scopes(("git add x", True), ("git add -f x", False))) == "git add"
    # a chain that failed may have stopped at its first command: its last one alone does not answer
    assert fixed_later("cargo build && git push", scopes(("cargo build && git push", True), ("git push", False))) \
        is None
    # a chain of && that passed ran each of its commands and each passed: it fixes each alone
    assert fixed_later("cargo build --release", scopes(("cargo build --release", True),
                                                       ("cargo fmt && cargo build --release", False))) == "cargo build"
    assert fixed_later("npm run build", scopes(("npm run build", True),
                                               ("npm install left-pad && npm run build", False))) == "npm run build"
    assert fixed_later("npm run build", scopes(("npm run build", True),
                                               ("npm install left-pad; npm run build", False))) is None   # not &&
    assert fixed_later("for f in a b; do python check.py $f; done", scopes(
        ("for f in a b; do python check.py $f; done", True), ("for i in 1 2; do echo $i; done", False))) is None
    # the run that fixed it is named by its runner's command, not by the line's last one
    assert fixed_later(failing[0], scopes(failing, ("pytest && git add -A && git commit -m wip", False))) == "pytest"
    assert fixed_later("cargo test -p alpha", scopes(("cargo test -p alpha", True), ("cargo test -p beta", False))) \
        is None
    # a chain holding a runner is the chain: its runner alone does not answer for it
    assert fixed_later("npm run lint && npm test", scopes(("npm run lint && npm test", True), ("npm test", False))) \
        is None
    assert fixed_later("pytest tests/c.py", scopes(("pytest tests/c.py", True),
                                                   ("pytest tests/a.py; pytest tests/b.py", False))) is None
    assert fixed_later("go test ./...", scopes(("go test ./...", True), ("go test -json ./pkg/a/...", False))) is None
    assert fixed_later("go test ./...", scopes(("go test ./...", True), ("timeout 120 go test -json ./...", False))) \
        == "go test ./..."   # named past ``timeout 120``; -json takes no value
    assert fixed_later("pytest -q", scopes(("pytest -q", True), ("pytest -k user", False)),
                       "FAILED tests/test_api.py::test_login - KeyError: 'user'") is None   # a word, not the test
    assert fixed_later("pytest -q", scopes(("pytest -q", True), ("pytest -k test_login", False)),
                       "FAILED tests/test_api.py::test_login - KeyError: 'user'") == "pytest -k test_login"
    assert run_scope('bash -lc "cd api && pytest tests/a.py"') == "pytest@api\ttests/a.py"
    # a pass says nothing when the line's status is another command's, or no test ran
    for later in ("npm test 2>&1 | tail -30", "npm test || true", "npm test; echo $?", "npm test -- --listTests"):
        assert fixed_later("npm test", scopes(("npm test", True), (later, False))) is None, later
    assert fixed_later("cargo test", scopes(("cargo test", True), ("cargo test --no-run", False))) is None
    assert fixed_later("pytest -q", scopes(("pytest -q", True), ("pytest --collect-only -q", False))) is None
    # a pick fixes a failure only when it names every test the failure names
    assert fixed_later("go test ./...", scopes(("go test ./...", True), ("go test -run TestX ./...", False)),
                       "--- FAIL: TestX (0.00s) — --- FAIL: TestY (0.01s)") is None
    # the same runner's other spellings: npm run test, pytest ., vitest run; unittest modules
    assert fixed_later("npm test", scopes(("npm test", True), ("npm run test", False))) == "npm run test"
    assert fixed_later("pytest tests/test_a.py", scopes(("pytest tests/test_a.py", True), ("pytest .", False))) == \
        "pytest ."
    assert fixed_later("npx vitest run src/a.test.ts", scopes(("npx vitest run src/a.test.ts", True),
                                                              ("npx vitest run", False))) == "npx vitest"
    assert fixed_later("python -m unittest tests.test_a", scopes(("python -m unittest tests.test_a", True),
                                                                 ("python -m unittest tests.test_b", False))) is None
    # a family is what runs, past where it runs: uv run's, npx's command, git -C, npm --prefix, make -C
    for failing_, passing in (("uv run ruff check .", "uv run ruff format ."), ("npx playwright test",
                              "npx playwright install"), ("git -C /repo push", "git -C /repo status"),
                              ("npm --prefix web test", "npm --prefix web run build"),
                              ("make -C backend test", "make -C backend lint")):
        assert fixed_later(failing_, scopes((failing_, True), (passing, False))) is None, failing_
    assert run_scope("if pytest -q; then echo ok; fi") == "pytest" and run_scope("# tests\npytest -q") == "pytest"
    assert fixed_later("npx jest src/a.test.ts", scopes(("npx jest src/a.test.ts", True), ("npx jest", False))) == \
        "npx jest"
    assert fixed_later("npx jest src/a.test.ts", scopes(("npx jest src/a.test.ts", True),
                                                        ("npx jest --testNamePattern=Button", False))) is None
    # a pick of the test the failure names covers it; a pick of another, or leaving it out, does not
    go_failing = ("go test ./...", True)
    assert fixed_later("go test ./...", scopes(go_failing, ("go test -run TestEmpty ./...", False)),
                       "--- FAIL: TestEmpty (0.00s)") == "go test -run TestEmpty ./..."
    assert fixed_later("go test ./...", scopes(go_failing, ("go test -run TestOther ./...", False)),
                       "--- FAIL: TestEmpty (0.00s)") is None
    assert fixed_later("go test ./...", scopes(go_failing, ("go test -run '^TestEmpty$' ./...", False)),
                       "--- FAIL: TestEmpty (0.00s)") == "go test -run ^TestEmpty$ ./..."
    assert fixed_later("go test ./...", scopes(go_failing, ("go test -run TestEmpty ./...", False)),
                       "--- FAIL: TestEmptyKey (0.00s)") is None   # a whole name, not a part of one
    assert fixed_later("pytest -q", scopes(("pytest -q", True), ("pytest -m slow", False)),
                       "FAILED tests/slow/test_a.py::test_x") is None   # a marker is no name
    assert fixed_later("pytest -q", scopes(("pytest -q", True), ("pytest --deselect tests/a.py::test_x", False)),
                       "FAILED tests/a.py::test_x - KeyError") is None
    # a program's own test subcommand is a runner too: go's ./... is everything under it, mix's file:line a test
    assert run_scope("go test ./pkg/a") == "go test\t./pkg/a" and run_scope("npm test -- src/a.test.ts") == \
        "npm test\tsrc/a.test.ts"
    assert fixed_later("go test ./pkg/a", scopes(("go test ./pkg/a", True), ("go test ./...", False))) == \
        "go test ./..."
    assert fixed_later("go test ./pkg/a", scopes(("go test ./pkg/a", True), ("go test ./pkg/b", False))) is None
    assert fixed_later("mix test test/a_test.exs:12", scopes(("mix test test/a_test.exs:12", True),
                                                             ("mix test test/a_test.exs", False))) == \
        "mix test test/a_test.exs"


def test_commands_whose_labels_are_one_answer_together():
    """Two commands with the same first 80 characters have one label in the Failed line: the
    one that failed is not "passed later" because the other passed."""
    from memcli.compaction.offline import _command_label, _Fixes, failures_line, runs_recorded

    base = "cd /Users/alice/projects/acme-order-service/backend && uv run pytest -q -x --no-header tests/integration/"
    failing, passing = base + "test_orders.py", base + "test_users.py"
    assert _command_label(failing) == _command_label(passing)
    scopes = {}
    for command, failed in ((failing, True), (passing, False)):
        for scope, name in runs_recorded(command, failed):
            scopes.pop(scope, None)
            scopes[scope] = (failed, name)
    label = _command_label(failing)
    line = failures_line({label: 1}, {label: ["FAILED tests/integration/test_orders.py::test_x - KeyError"]},
                         {failing: [False, True, "x", []], passing: [False, False, "", []]}, _Fixes(scopes))
    assert line.endswith("— still failing"), line


def test_a_subagent_s_run_before_the_failure_does_not_fix_it():
    """The runs of one turn are taken in the order of its traces, the main agent's and its
    subagents' interleaved: a subagent's passing ``pytest`` that came before the main agent's
    failing ``pytest tests/test_a.py`` does not fix it (the main agent's runs were taken first,
    then the subagents', so it did)."""
    from memcli.compaction.offline import OfflineSummarizer
    from memcli.compaction.summarizer import Turn
    from memcli.models import RawTrace

    traces = [RawTrace("u", 0.0, "turn_0001", 1, "user", "Check the suite, and fix tests/test_a.py.", "x"),
              RawTrace("t", 1.0, "turn_0001", 2, "tool_call", "", "x", tool_name="Task", tool_call_id="task",
                       tool_args={"description": "run the suite", "prompt": "Run the whole suite."}),
              *_bash_run(3, "pytest -q", out="12 passed in 0.4s", tags=["sidechain"]),
              RawTrace("tr", 6.0, "turn_0001", 5, "tool_result", "", "x", tool_name="Task", tool_call_id="task",
                       tool_result="All 12 passed."),
              *_bash_run(6, "pytest -q tests/test_a.py", code=1, out="FAILED tests/test_a.py::test_x - KeyError: 'id'")]
    summary = OfflineSummarizer().summarize([Turn("turn_0001", traces)]).episodic_summary
    assert "`pytest -q tests/test_a.py` ×1 (exit code 1 FAILED tests/test_a.py::test_x - KeyError: 'id') — still " \
           "failing" in summary, summary


def test_the_plan_is_the_main_agent_s_not_a_subagent_s_todo_list():
    """A real Claude Code session: the main agent wrote its plan, then a subagent its own todo list
    for its task; the summary's ``Plan:`` showed the subagent's list as the session's plan."""
    from memcli.compaction.offline import OfflineSummarizer
    from memcli.compaction.summarizer import Turn
    from memcli.models import RawTrace

    def todo(seq, items, tags=None):
        return RawTrace(f"t{seq}", float(seq), "turn_0001", seq, "tool_call", "", "x", tool_name="TodoWrite",
                        tool_call_id=f"c{seq}", tool_args={"todos": [{"content": c, "status": st} for c, st in items]},
                        tags=tags)

    traces = [RawTrace("u", 0.0, "turn_0001", 1, "user", "Build the todo app.", "x"),
              todo(2, [("Set up the Next.js project", "completed"), ("Create the data models", "in_progress")]),
              RawTrace("t", 3.0, "turn_0001", 3, "tool_call", "", "x", tool_name="Task", tool_call_id="task",
                       tool_args={"description": "hooks", "prompt": "Write the useTodos hook."}),
              todo(4, [("Create useTodos hook", "in_progress")], tags=["sidechain"]),
              RawTrace("tr", 5.0, "turn_0001", 5, "tool_result", "", "x", tool_name="Task", tool_call_id="task",
                       tool_result="The hook is written.")]
    summary = OfflineSummarizer().summarize([Turn("turn_0001", traces)]).episodic_summary
    assert "Plan: [completed] Set up the Next.js project; [in_progress] Create the data models" in summary, summary
    assert "useTodos hook" not in summary.split("Plan: ")[1].split("\n")[0]


def test_the_latest_plan_of_each_harness_s_todo_tool_is_kept_whole_on_one_line():
    """Gemini CLI's ``write_todos`` (``description``), Copilot CLI's ``update_todo`` (a markdown
    checklist), Goose's ``todo__todo_write`` (one too), a todo text with a line break: each is the
    plan, one line per summary line."""
    from memcli.compaction.offline import OfflineSummarizer
    from memcli.compaction.summarizer import Turn
    from memcli.models import RawTrace

    def plan(tool, args):
        traces = [RawTrace("t-1", 1.0, "turn_0001", 1, "user", "Plan it.", "x"),
                  RawTrace("t-2", 2.0, "turn_0001", 2, "tool_call", "", "x", tool_name=tool, tool_call_id="c1",
                           tool_args=args),
                  RawTrace("t-3", 3.0, "turn_0001", 3, "tool_result", "", "x", tool_name=tool, tool_call_id="c1",
                           tool_result="ok")]
        text = OfflineSummarizer().summarize([Turn("turn_0001", traces)]).episodic_summary
        return next(line for line in text.split("\n") if line.startswith("Plan: "))

    assert plan("write_todos", {"todos": [{"description": "Read src/main.rs", "status": "completed"},
                                          {"description": "Fix the cfg lookup", "status": "in_progress"}]}) == \
        "Plan: [completed] Read src/main.rs; [in_progress] Fix the cfg lookup"
    assert plan("update_todo", {"todos": "- [x] Reproduce the KeyError\n- [ ] Add the zone\n  - [ ] Test it"}) == \
        "Plan: [completed] Reproduce the KeyError; [pending] Add the zone; [pending] Test it"
    assert plan("TodoWrite", {"todos": [{"content": "Port the importer\nthen the tests"}]}) == \
        "Plan: Port the importer then the tests"
    # Goose's todo extension: its whole checklist as text (a Goose session had no Plan line)
    assert plan("todo__todo_write", {"content": "- [x] Read the config\n- [ ] Add the retry"}) == \
        "Plan: [completed] Read the config; [pending] Add the retry"


def test_a_failed_edit_names_its_file_and_is_fixed_by_a_later_write_of_it():
    """Claude Code's Edit failing (``<tool_use_error>String to replace not found…``) then passing
    on a retry, a Write refused in one turn and done in the next: each failure names its file,
    without the markup, and says it was fixed (they were listed as "Edit ×1 (<tool_use_error>…)",
    as if still open); a failed read stays open."""
    from memcli.compaction.offline import OfflineSummarizer
    from memcli.compaction.summarizer import Turn
    from memcli.models import RawTrace

    def turn(n, ask, calls):
        tid = f"turn_{n:04d}"
        out = [RawTrace(f"{tid}-0", n * 10.0, tid, 0, "user", ask, "x")]
        for k, (tool, args, error) in enumerate(calls, 1):
            out += [RawTrace(f"{tid}-c{k}", n * 10.0 + k, tid, 2 * k, "tool_call", "", "x", tool_name=tool,
                             tool_call_id=f"{tid}-{k}", tool_args=args),
                    RawTrace(f"{tid}-r{k}", n * 10.0 + k, tid, 2 * k + 1, "tool_result", "", "x", tool_name=tool,
                             tool_call_id=f"{tid}-{k}", tool_result=None if error else "ok", tool_error=error)]
        return Turn(tid, out)

    edit = {"file_path": "app/orders.py", "old_string": "def totl(", "new_string": "def grand_total("}
    turns = [turn(1, "Rename total to grand_total in app/orders.py.", [
                 ("Edit", edit, "<tool_use_error>String to replace not found in file.\nString: def totl(</tool_use_error>"),
                 ("Edit", {**edit, "old_string": "def total("}, None),
                 ("Read", {"file_path": "app/missing.py"}, "File does not exist.")]),
             turn(2, "Document it in docs/api.md.", [
                 ("Write", {"file_path": "docs/api.md", "content": "# API"},
                  "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>")]),
             turn(3, "Go on.", [("Write", {"file_path": "docs/api.md", "content": "# API"}, None),
                                ("Edit", {"file_path": "docs/notes.md", "old_string": "a", "new_string": "b"},
                                 "File is read-only."),
                                ("Write", {"file_path": "docs/notes.md", "content": "n"}, "EACCES: permission denied")])]
    text = OfflineSummarizer().summarize(turns).episodic_summary
    # a failed write no later write mended is still failing (it said nothing at all), each of
    # two of one file (the second had taken the first's place: the first said nothing)
    assert next(line for line in text.split("\n") if line.startswith("Failed: ")) == (
        "Failed: Write docs/notes.md ×1 (EACCES: permission denied) — still failing; "
        "Edit docs/notes.md ×1 (File is read-only.) — still failing; "
        "Read app/missing.py ×1 (File does not exist.); Write docs/api.md ×1 (File has not been read yet. "
        "Read it first before writing to it.) — fixed later (a later write of docs/api.md passed); Edit "
        "app/orders.py ×1 (String to replace not found in file.) — fixed later (a later write of app/orders.py "
        "passed)")


# ------------------------------------------------------------------ the budget, on every format

def _codex_long() -> str:
    """One Codex turn of 120 steps (reads, patches, failing and passing cargo runs, notes), a plan,
    then three short turns."""
    r = Rollout()
    r.ask(LONG_ASK)
    for n in range(120):
        if n % 10 == 3:
            r.exec(f"cargo test -p config-loader case_{n}", 101, CARGO_PANIC)
        elif n % 7 == 0:
            r.patch(f"*** Update File: crates/config-loader/src/mod_{n}.rs\n@@\n-fn old_{n}() {{}}\n"
                    f"+fn parse_case_{n}(input: &str) -> Result<Entry, ConfigError> {{ todo!() }}")
        else:
            r.exec(f"rg -n 'case_{n}' crates/", 0, PADDING)
        if n % 5 == 0:
            r.say(f"Status: case {n} handled; next I look at mod_{n + 1}.")
    r.call("update_plan", {"plan": [{"step": f"case group {k}", "status": "completed" if k < 3 else "pending"}
                                    for k in range(6)]}, "Plan updated")
    r.exec("cargo test -p config-loader", 0, CARGO_OK)
    r.say("All cases pass.")
    for k in range(3):
        r.ask(f"Follow-up {k}: tidy crates/config-loader/src/mod_{k}.rs")
        r.exec(f"cargo fmt -- crates/config-loader/src/mod_{k}.rs", 0, PADDING)
        r.say(f"Tidied mod_{k}.")
    return r.text()


def _copilot_long() -> str:
    events = []
    for t in range(12):
        events.append(("user.message", {"content": f"Step {t}: make tests/test_zone_{t}.py pass (zone lookup)."}))
        for k in range(4):
            call = f"c{t}-{k}"
            events.append(("assistant.message", {"messageId": f"m{call}", "content": f"Running check {k}.",
                                                 "toolRequests": [{"toolCallId": call, "name": "bash", "arguments": {
                                                     "command": f"pytest -q tests/test_zone_{t}.py -k case_{k}"}}]}))
            code = 1 if k < 2 else 0
            out = (f"FAILED tests/test_zone_{t}.py::test_case_{k} - KeyError: 'zone_{t}'" if code else PADDING)
            events.append(("tool.execution_complete", {"toolCallId": call, "success": True, "result": {
                "content": f"{out}\n<exited with exit code {code}>"}}))
        events.append(("assistant.message", {"messageId": f"e{t}", "content": f"Zone {t} passes now."}))
    return _copilot(events)


def _opencode_long() -> str:
    messages, n = [], 0
    for t in range(10):
        n += 1
        messages.append({"info": {"id": f"msg_{n:04d}", "role": "user", "time": {"created": 1770000000000 + n * 1000}},
                         "parts": [{"id": f"prt_u{t}", "type": "text", "text": f"Task {t}: fix src/cart_{t}.ts"}]})
        parts = []
        for k in range(5):
            state = {"status": "completed", "input": {"command": f"npx jest src/cart_{t}.test.ts -t case{k}"},
                     "output": PADDING if k else "FAIL src/cart.test.ts\n  ● Cart › adds item\n\n    TypeError: x",
                     "metadata": {"exit": 0 if k else 1}}
            parts.append({"id": f"prt_{t}_{k}", "type": "tool", "callID": f"call_{t}_{k}", "tool": "bash",
                          "state": state})
        parts.append({"id": f"prt_{t}_e", "type": "tool", "callID": f"call_{t}_e", "tool": "edit", "state": {
            "status": "completed", "input": {"filePath": f"src/cart_{t}.ts", "oldString": "a", "newString": "b"},
            "output": ""}})
        parts.append({"id": f"prt_{t}_t", "type": "text", "text": f"Cart {t} fixed."})
        n += 1
        messages.append({"info": {"id": f"msg_{n:04d}", "role": "assistant", "time": {"created": 1770000000000 + n * 1000}},
                         "parts": parts})
    return orjson.dumps({"info": {"id": "ses_02", "directory": "/repo", "title": "carts"}, "messages": messages}).decode()


def test_compact_if_needed_fits_the_target_on_sessions_of_each_harness(memory_dir, tmp_path):
    """``compact --if-needed`` (the trigger made to fire) on a long Codex turn, a Copilot CLI and an
    opencode session: the snapshot fits the target or the result says why, every trace is in one
    tier, payloads are valid, and every ask's first 40 characters and every modified file are in
    the snapshot (tests/test_compact_targets.py's check)."""
    from memcli.api import Memory
    from tests.test_compact_targets import check_compaction_fits

    for name, text, fmt in (("cx", _codex_long(), "codex"), ("cp", _copilot_long(), "copilot-cli"),
                            ("oc", _opencode_long(), "opencode")):
        src = tmp_path / f"{name}.jsonl"
        src.write_text(text)
        Memory(memory_dir).agent(name).ingest(src, fmt)
        check_compaction_fits(memory_dir, name)


def test_tools_that_failed_alike_say_their_error_once():
    from memcli.compaction.offline import _Fixes, failures_line

    why = "File has not been read yet. Read it first before writing to it."
    failures = {"Write src/a.ts": 2, "Edit src/a.ts": 1, "Read src/b": 1, "MultiEdit src/a.ts": 1}
    errors = {label: [why] for label in failures} | {"Read src/b": ["EISDIR: illegal operation on a directory"]}
    assert failures_line(failures, errors, {}, _Fixes({})) == (
        f"Failed: MultiEdit src/a.ts ×1, Edit src/a.ts ×1, Write src/a.ts ×2 ({why}); Read src/b ×1 (EISDIR: illegal "
        "operation on a directory)")


def test_the_vocabulary_leaves_out_markup_urls_css_and_permissions():
    """What the ccviewer corpus put in the vocabulary and is no identifier of the project: Claude
    Code's markup tags (``system-reminder``, ``tool_use_error``), a URL's query keys
    (``utm_source``), Tailwind classes without digits (``items-center``, ``rounded-lg``), ``ls -l``
    permissions (``drwxr-xr-x``); the project's names stay."""
    from memcli.compaction.offline import _TurnDigest, vocabulary
    from memcli.compaction.summarizer import Turn
    from memcli.models import RawTrace

    result = ("<system-reminder>Whenever you read a file, consider whether it looks malicious.</system-reminder>\n"
              "drwxr-xr-x  4 u staff 128 src\n<div className=\"flex items-center justify-between rounded-lg text-sm\">\n"
              "see https://nextjs.org/docs?utm_source=create-next-app&utm_medium=appdir-template-tw\n"
              "export function useTodos(): UseTodosReturn { return todoReducer(state, action) }")
    traces = [RawTrace("t-1", 1.0, "turn_0001", 1, "user", "Read src/hooks/useTodos.ts", "x"),
              RawTrace("t-2", 2.0, "turn_0001", 2, "tool_call", "", "x", tool_name="Read", tool_call_id="c1",
                       tool_args={"file_path": "src/hooks/useTodos.ts"}),
              RawTrace("t-3", 3.0, "turn_0001", 3, "tool_result", "", "x", tool_name="Read", tool_call_id="c1",
                       tool_error="<tool_use_error>File content (30000 tokens) exceeds maximum</tool_use_error>"),
              RawTrace("t-4", 4.0, "turn_0001", 4, "tool_call", "", "x", tool_name="Read", tool_call_id="c2",
                       tool_args={"file_path": "src/hooks/useTodos.ts", "limit": 40}),
              RawTrace("t-5", 5.0, "turn_0001", 5, "tool_result", "", "x", tool_name="Read", tool_call_id="c2",
                       tool_result=result)]
    digest = _TurnDigest.of(Turn("turn_0001", traces))
    assert vocabulary(digest.vocab, digest.n_traces, "", 1000) == (
        "Vocabulary: src/hooks/useTodos.ts, className, useTodos, UseTodosReturn, todoReducer")


def test_an_outcome_two_command_lines_told_is_said_once():
    """``bd sync && bd ready`` (its own family) and ``bd sync`` both told the sync's line: the
    commands line says it once, after both commands, newest first; the others stay."""
    from memcli.compaction.offline import commands_line

    outcomes = {"bd ready": ("bd sync --from-main && bd ready", "Import complete: 0 created, 93 unchanged"),
                "pytest": ("pytest -q", "12 passed in 0.4s"),
                "bd sync": ("bd sync --from-main", "Import complete: 0 created, 93 unchanged")}
    assert commands_line(outcomes, {"bd ready": False, "pytest": False, "bd sync": False}) == (
        "Commands (latest outcome): `bd sync --from-main`, `bd sync --from-main && bd ready`: Import complete: 0 "
        "created, 93 unchanged; `pytest -q`: 12 passed in 0.4s")


def test_the_names_an_edit_touched_are_the_project_s_not_css():
    """An edit of a LiveView template adds ``border-radius`` and ``text-decoration`` (CSS) and
    ``project.id``: the files line names ``project.id`` only."""
    from memcli.compaction.offline import changed_names

    args = {"file_path": "lib/app_web/live/pane_list_live.ex",
            "old_string": '<a href="/">', "new_string": '<a style="border-radius: 4px; text-decoration: none" '
                                                        'href={"/projects/#{project.id}"}>'}
    assert changed_names(args, [args["file_path"]]) == {args["file_path"]: ["project.id"]}


def test_the_names_an_edit_took_out_are_what_changed_too_the_first_few():
    """``raise LedgerSchema38Error(url)`` replaced by a settings lookup: the file no longer raises
    it, and the test that fails with it runs again after — a harness's summary names it. The names
    an edit brought in come first, then the first few it took out (a deleted function's body is
    not listed whole)."""
    from memcli.compaction.offline import MAX_REMOVED_NAMES, changed_names

    args = {"file_path": "src/ledger/schema_38.py", "old_string": "raise LedgerSchema38Error(url)",
            "new_string": "return fetch(url, timeout=settings['ledger.schema_38.timeout'])"}
    assert changed_names(args, ["src/ledger/schema_38.py"]) == {
        "src/ledger/schema_38.py": ["ledger.schema_38.timeout", "LedgerSchema38Error"]}
    body = "\n".join(f"    total_{k} = compute_{k}(order)" for k in range(12))
    names = changed_names({"file_path": "a.py", "old_string": "def legacy_total(order):\n" + body,
                           "new_string": "return new_total(order)"}, ["a.py"])["a.py"]
    assert names[:4] == ["legacy_total", "new_total", "total_0", "compute_0"]   # defined, brought in, taken out
    assert len(names) <= 2 + MAX_REMOVED_NAMES


def test_the_names_an_edit_defines_are_definitions_not_prose_attributes_or_parameters():
    """A real Elixir session's files line named ``true`` (``@impl true``) beside ``mount``; Elixir's
    ``fn msg ->`` named its parameter, and a comment ("# this function returns …", " * Todo
    interface with …") its next word. A definition is a line that begins with its keyword."""
    from memcli.compaction.offline import changed_names

    elixir = ("  @impl true\n  def mount(params, _session, socket) do\n"
              "    Enum.map(rows, fn msg -> msg.id end)\n  end\n\n  defp truncate(text, max) when max > 0, do: text\n"
              "  # this function returns the socket\n")
    typescript = ("/**\n * Core Todo interface representing a single todo item\n */\nexport interface Todo {\n"
                  "  id: string\n}\n// the function handling every action\nexport default function todoReducer(s, a) {\n"
                  "- interface with properties\n")
    others = ("pub(crate) async fn load_config<T>(path: T) {}\nenum class Color { RED }\nfunc Sum[T any](xs []T) T {}\n"
              "case class Point(x: Int)\ntypedef struct Node {\nlocal function walk(node)\ntemplate <class T> T id(T x);\n"
              "    @objc func handleTap(_ s: Any) {\n@MainActor final class ViewModel: ObservableObject {\n"
              "[Serializable] public class Order { }\nfunc (s *Server) Handle(w Writer) {\n"
              "module.exports = function createApp(opts) {\n    class that wraps the client\n"
              "export default class extends Base {\nstatic struct config cfg;\n"
              # a component or hook bound to a name, a Go struct, a TypeScript type (a real Next.js
              # session's TodoApp.tsx had no name; a Go config.go no Config); a count, a call, prose: none
              "export const TodoApp: React.FC = () => {\nexport const useTodos = (initial: Todo[] = []) => {\n"
              "type Config struct {\nexport type Props<T> = {\nconst x = 5;\nvar total = items.reduce((a, b) => a)\n"
              "type that is\n")
    assert changed_names({"file_path": "lib/live.ex", "content": elixir}, ["lib/live.ex"]) == {
        "lib/live.ex": ["mount", "truncate"]}
    assert changed_names({"file_path": "src/todo.ts", "content": typescript}, ["src/todo.ts"]) == {
        "src/todo.ts": ["Todo", "todoReducer"]}
    assert changed_names({"file_path": "x", "content": others}, ["x"]) == {
        "x": ["load_config", "Color", "Sum", "Point", "Node", "walk", "handleTap", "ViewModel", "Order", "Handle",
              "createApp", "TodoApp", "useTodos", "Config", "Props"]}
    # a patch: its lines without their marks, and the scope an anchor names (Codex's ``@@ class …``)
    patch = ("*** Begin Patch\n*** Update File: src/billing.py\n@@ class BillingSchema:\n-    def old(self):\n"
             "+    def load(self):\n+        # the class that wraps it\n*** End Patch")
    assert changed_names({"input": patch}, []) == {"src/billing.py": ["BillingSchema", "old", "load"]}
    # a unified hunk's header names its scope too, and a context line without its space stays whole
    hunk = ("*** Begin Patch\n*** Update File: app.py\n@@ -10,3 +10,4 @@ def handler(event):\n-    a = 1\n"
            "+    a = 2\ndef other(x):\n*** End Patch")
    assert changed_names({"input": hunk}, []) == {"app.py": ["handler", "other"]}


def test_cjk_asks_and_replies_are_clipped_at_the_limit_not_to_their_first_words():
    """Chinese and Japanese have no spaces: each character is a word. A 800-character ask clipped
    at 200 kept 17 characters (back to the last space, before "src/orders.py" …), and a reply
    clipped at 600 the same."""
    from memcli.compaction.offline import clip, clip_ask

    ask = "请修复 src/orders.py 中的折扣计算错误，" + "订单总额应该应用折扣率并且测试需要通过。" * 40
    assert clip_ask(ask, 200) == ask[:200] + " …"
    assert clip(ask, 100) == ask[:100] + " …"
    assert clip("注文番号1042の合計が100.0になっています。割引が適用されていません。", 20) == "注文番号1042の合計が100.0になっ …"
    assert clip_ask("请修复 src/orders_service_impl.py 的错误", 8) == "请修复 src/orders_service_impl.py …"   # a path stays whole


def test_a_subagent_s_task_is_clipped_on_its_line_as_a_reply_is():
    """A subagent's task is the prompt the main agent wrote: up to 600 characters on its line (it
    followed the asks' 2,000, so five subagents' prompts could fill a summary)."""
    from memcli.compaction.offline import _Subagent

    agent = _Subagent("agent a1", "turn_0001")
    agent.task = "Review the billing module and report. " * 60
    line = agent.line()
    assert line.startswith('- agent a1 (turn_0001) · task "Review the billing module') and 600 < len(line) < 640


def test_a_cline_command_whose_result_says_it_failed_is_a_failure(cli, memory_dir, tmp_path):
    """Cline and Roo Code write a command's end into the result text: ``Command executed in
    terminal within working directory '/repo'. Command execution was not successful, … \\nExit
    code: 1``; the call itself is no error. It is a failure with its informative line."""
    env = "<environment_details>\n# Current Mode\nACT MODE\n</environment_details>"
    ran = "Command executed in terminal within working directory '/repo'."

    def run(n, command, code, output):
        status = (" Command execution was not successful, inspect the cause and adjust as needed.\nExit code: 1"
                  if code else " Exit code: 0")
        return [{"role": "assistant", "ts": 1770000000000 + 2000 * n, "content": [
                    {"type": "tool_use", "id": f"toolu_{n}", "name": "execute_command",
                     "input": {"command": command, "requires_approval": False}}]},
                {"role": "user", "ts": 1770000001000 + 2000 * n, "content": [
                    {"type": "text", "text": f"[execute_command for '{command}'] Result:\n{ran}{status}\nOutput:\n{output}"},
                    {"type": "text", "text": env}]}]

    history = [{"role": "user", "ts": 1770000000000, "content": [
                   {"type": "text", "text": "<task>\nMake the zone tests pass\n</task>"}, {"type": "text", "text": env}]},
               *run(1, "pytest -q tests/test_zone.py", 1, "FAILED tests/test_zone.py::test_rate - KeyError: 'zone'"),
               *run(2, "cat src/zones.py", 0, PADDING),
               *run(3, "pytest -q", 0, "12 passed in 0.4s"),
               {"role": "assistant", "ts": 1770000009000, "content": [{"type": "text", "text": "All green."}]},
               {"role": "user", "ts": 1770000010000, "content": [{"type": "text", "text": "Thanks."}]}]
    summary = _summary(cli, memory_dir, tmp_path, "cl", orjson.dumps(history).decode(), "cline",
                       "--tail-turns", "1", "--keep-steps", "0")
    assert _line(summary, "Failed: ") == ("Failed: `pytest -q tests/test_zone.py` ×1 (exit code 1 FAILED "
                                          "tests/test_zone.py::test_rate - KeyError: 'zone') — fixed later (a later "
                                          "`pytest` passed)")


def test_a_patch_that_renames_a_file_names_both_and_its_changes_go_to_the_new_one():
    from memcli.compaction.offline import changed_names, written_paths

    patch = ("*** Begin Patch\n*** Update File: src/old_name.py\n*** Move to: src/new_name.py\n@@\n-def load():\n"
             "+def load_config():\n*** End Patch")
    assert written_paths("apply_patch", {"input": patch}) == ["src/old_name.py", "src/new_name.py"]
    assert changed_names({"input": patch}, []) == {"src/old_name.py": [], "src/new_name.py": ["load", "load_config"]}


def test_files_a_shell_command_writes_are_files_modified():
    """Agents write files from the shell too: a here-document (``cat > x <<'EOF'``, ``cat <<EOF >
    x``, ``tee x <<EOF``, a quoted path with a space) or ``sed -i``; each is a file modified, with
    the names it defines. Scratch files and plain redirections are not."""
    from memcli.compaction.offline import changed_names, written_paths

    def writes(command):
        return written_paths("Bash", {"command": command})

    assert writes("cat > src/config.py <<'EOF'\ndef load_config(path):\n    return Config(path)\nEOF") == ["src/config.py"]
    assert writes("cat <<EOF > src/app/settings.py\nDEBUG = False\nEOF") == ["src/app/settings.py"]
    assert writes('cd web && cat >> "docs/my notes.md" <<EOF\nhi\nEOF') == ["docs/my notes.md"]
    assert writes("tee src/a.ts > /dev/null <<EOF\nexport const a = 1\nEOF") == ["src/a.ts"]
    assert writes("sed -i 's/total/grand_total/g' app/orders.py") == ["app/orders.py"]
    assert writes("sed -i.bak -e 's/a/b/' lib/x.rb && git diff") == ["lib/x.rb"]
    assert writes("cat > /tmp/scratch.txt <<EOF\nx\nEOF") == writes("echo hi > out.txt") == writes("ls -la") == []
    assert writes("sed -i 's/a/b/' src/*.py") == []   # a glob names no one file
    # a rename names both files (a real OpenHands session renamed its game, and no line said so),
    # a copy its target, touch what it creates; scratch, globs and words that only look alike not
    assert writes("mv /workspace/game_2048.py /workspace/2048.py") == ["/workspace/game_2048.py", "/workspace/2048.py"]
    assert writes("cd web && git mv -f src/old.ts src/new.ts") == ["src/old.ts", "src/new.ts"]
    assert writes("cp -r templates/base.html app/index.html") == ["app/index.html"]
    assert writes("touch src/__init__.py tests/__init__.py") == ["src/__init__.py", "tests/__init__.py"]
    assert writes("cp a.txt /tmp/b.txt") == writes("mv src/*.py lib/") == writes("echo mv && npm run cp") == []
    # not an option's value, a comment's words nor a directory: what lands in it
    assert writes("mv app_old.py app.py  # rename to the final name") == ["app_old.py", "app.py"]
    assert writes('touch -d "2 days ago" app.py') == writes("touch -r setup.py app.py") == ["app.py"]
    assert writes("cp -t backup/ app.py") == ["backup/app.py"]
    assert writes("mv -t dir a.py b.py") == ["a.py", "b.py", "dir/a.py", "dir/b.py"]
    assert writes("mv util.py ..") == ["util.py", "../util.py"] and writes("mv a.py lib") == ["a.py", "lib/a.py"]
    assert writes("sudo mv a.conf /etc/x.conf") == ["a.conf", "/etc/x.conf"]
    assert written_paths("exec_command", {"cmd": "cat > src/config.py <<'EOF'\nx = 1\nEOF"}) == ["src/config.py"]
    assert changed_names({"command": "cat > src/config.py <<'EOF'\ndef load_config(path):\n    return 1\nclass Config:"
                                     "\n    pass\nEOF"}, ["src/config.py"]) == {"src/config.py": ["load_config", "Config"]}


def test_a_failed_codex_patch_names_its_file_and_is_fixed_by_a_later_patch_of_it(cli, memory_dir, tmp_path):
    """Codex's apply_patch failing (``Failed to find expected lines``) then applied on a retry:
    the failure names the patched file (it was "apply_patch" for every file) and is fixed."""
    r = Rollout()
    r.ask("Rename load to load_config in src/config.rs")
    r.call("apply_patch", "*** Begin Patch\n*** Update File: src/config.rs\n@@\n-fn lod() {}\n+fn load_config() {}\n"
                          "*** End Patch", "Exit code: 1\nWall time: 0 seconds\nOutput:\nFailed to find expected lines in "
                                           "src/config.rs:\nfn lod() {}")
    r.patch("*** Update File: src/config.rs\n@@\n-fn load() {}\n+fn load_config() {}")
    r.exec("cat src/config.rs", 0, PADDING)
    r.say("Renamed.")
    r.ask("Thanks.")
    summary = _compacted(cli, memory_dir, tmp_path, r)
    assert _line(summary, "Failed: ") == (
        "Failed: apply_patch src/config.rs ×1 (exit code 1 Failed to find expected lines in src/config.rs:) — fixed "
        "later (a later write of src/config.rs passed)")


def test_a_call_the_user_refused_is_stopped_by_the_user_not_still_failing():
    from memcli.compaction.offline import _Fixes, failures_line

    refused = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
               "edit, the new_string was NOT written to the file).")
    line = failures_line({"`rm -rf build`": 1, "`pytest -q`": 1},
                         {"`rm -rf build`": [refused], "`pytest -q`": ["FAILED tests/test_a.py::test_b - assert 1 == 2"]},
                         {"rm -rf build": [False, True, refused, []], "pytest -q": [False, True, "x", []]},
                         _Fixes({"rm": (True, "rm"), "pytest": (True, "pytest")}))
    assert line == ("Failed: `pytest -q` ×1 (FAILED tests/test_a.py::test_b - assert 1 == 2) — still failing; "
                    f"`rm -rf build` ×1 ({refused}) — stopped by the user")


def test_a_build_or_deploy_that_finished_is_its_outcome():
    from memcli.compaction.offline import outcome_line

    assert outcome_line("   Compiling cfg v0.3.1\n    Finished `release` profile [optimized] target(s) in 12.3s") == \
        "Finished `release` profile [optimized] target(s) in 12.3s"
    assert outcome_line("aws_s3_bucket.b: Creating...\nApply complete! Resources: 3 added, 1 changed, 0 destroyed.") == \
        "Apply complete! Resources: 3 added, 1 changed, 0 destroyed."
    assert outcome_line("vite v5.0.0 building for production...\n✓ 34 modules transformed.\n✓ built in 738ms") == \
        "✓ built in 738ms"
    # Gemini CLI's and Codex's output labels are no part of it (a Gemini session said "Stdout: 9 passed")
    assert outcome_line("Command: pytest -q\nDirectory: (root)\nStdout: 9 passed in 0.3s\nStderr: (empty)\n"
                        "Exit Code: 0") == "9 passed in 0.3s"


def test_a_script_s_own_subcommands_are_families_of_their_own():
    """``python manage.py migrate`` failing is not fixed by ``python manage.py test`` passing
    (both were the family ``python manage.py``); a script given a file is one family."""
    from memcli.compaction.offline import command_family

    assert command_family("python3 manage.py migrate --noinput") == "python3 manage.py migrate"
    assert command_family("python3 manage.py test app") == "python3 manage.py test"
    assert command_family("bash ./deploy.sh staging") == "bash ./deploy.sh staging"
    assert command_family("python script.py data/in.csv") == command_family("python script.py") == "python script.py"


def test_a_refused_call_of_any_tool_is_said_in_one_sentence_after_the_open_failures():
    """Claude Code's refusal text goes on with instructions to the model (``STOP what you are
    doing …``): a refused call is the sentence that says the person said no, and a refused tool
    that is no command (``TaskOutput``) is "stopped by the user" after the failures still open
    (it led the line with 220 characters of the harness's instructions)."""
    from memcli.compaction.offline import _Fixes, error_brief, failures_line

    refused = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
               "edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to "
               "tell you how to proceed.")
    said = "The user doesn't want to proceed with this tool use."
    assert error_brief(refused) == said
    assert error_brief("Error: Operation cancelled by user") == "Error: Operation cancelled by user"
    line = failures_line({"`pytest -q`": 1, "TaskOutput": 1},
                         {"`pytest -q`": ["FAILED tests/test_a.py::test_b - assert 1 == 2"], "TaskOutput": [said]},
                         {"pytest -q": [False, True, "x", []]}, _Fixes({"pytest": (True, "pytest")}))
    assert line == ("Failed: `pytest -q` ×1 (FAILED tests/test_a.py::test_b - assert 1 == 2) — still failing; "
                    f"TaskOutput ×1 ({said}) — stopped by the user")
