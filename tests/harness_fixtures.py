"""Sessions that an agent harness compacted itself, built by rule from the producers' formats.

Nothing here is copied from a transcript: each line is made by the rules the producers document
and write (Claude Code's session JSONL, Codex CLI's rollout JSONL), so the tests can put a
compaction wherever real sessions have one — several in a session, manual ones with
instructions, subagent lines around a boundary, a boundary whose summary never came, a summary
that opens a resumed file.

Claude Code (``~/.claude/projects/<project>/<session>.jsonl``), per compaction:

* a ``system`` line ``subtype: "compact_boundary"``, ``parentUuid: null``, ``logicalParentUuid``
  = the last line before it, ``content: "Conversation compacted"``, ``compactMetadata: {trigger:
  "auto"|"manual", preTokens, [postTokens, durationMs, userContext, messagesSummarized]}``
  (``userContext``: the instructions given to ``/compact``);
* the ``user`` line holding the summary: ``isCompactSummary: true``,
  ``isVisibleInTranscriptOnly: true``, ``parentUuid`` = the boundary;
* for a manual ``/compact``: then the caveat (``isMeta``), the command line
  (``<command-name>/compact</command-name>`` with its ``<command-args>``) and its
  ``<local-command-stdout>``;
* ``file-history-snapshot`` rows may sit between them.

Codex (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``): ``{"timestamp", "type", "payload"}``
lines; a compaction is a ``compacted`` line — older ``{"message"}``, newer ``{"message",
"replacement_history"}`` (a remote compaction writes ``message: ""`` and an encrypted
``compaction`` item in the history) — followed by an ``event_msg`` ``context_compacted``.
"""

from __future__ import annotations

import uuid as _uuid

import orjson

SUMMARY_HEAD = "This session is being continued from a previous conversation that ran out of context."


def uid(session: str, n: int) -> str:
    return str(_uuid.uuid5(_uuid.NAMESPACE_URL, f"memcli-harness/{session}/{n}"))


class ClaudeSession:
    """A Claude Code session written line by line, as Claude Code appends them."""

    def __init__(self, name: str = "s", version: str = "2.1.39", cwd: str = "/home/me/proj"):
        self.name = name
        self.session_id = uid(name, 0)
        self.version = version
        self.cwd = cwd
        self.lines: list[dict] = []
        self.n = 0
        self.parent: str | None = None
        self.calls = 0

    # -------------------------------------------------------------- plumbing
    def _next(self) -> str:
        self.n += 1
        return uid(self.name, self.n)

    def _ts(self) -> str:
        return f"2026-02-01T{10 + self.n // 3600 % 10:02d}:{self.n // 60 % 60:02d}:{self.n % 60:02d}.000Z"

    def _line(self, kind: str, message: dict | None = None, *, chain: bool = True, **extra) -> dict:
        line_uuid = self._next()
        value = {"parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": self.cwd,
                 "sessionId": self.session_id, "version": self.version, "gitBranch": "main", "type": kind}
        if message is not None:
            value["message"] = message
        value.update(uuid=line_uuid, timestamp=self._ts())
        value.update(extra)
        self.lines.append(value)
        if chain:
            self.parent = line_uuid
        return value

    # -------------------------------------------------------------- conversation
    def ask(self, text: str) -> dict:
        return self._line("user", {"role": "user", "content": text})

    def say(self, text: str) -> dict:
        return self._line("assistant", {"id": f"msg_{self.name}_{self.n + 1}", "type": "message",
                                        "role": "assistant", "model": "claude-sonnet-4-5",
                                        "content": [{"type": "text", "text": text}],
                                        "usage": {"input_tokens": 10, "output_tokens": 5}})

    def tool(self, name: str, args: dict, result: str, *, error: bool = False, **extra) -> str:
        self.calls += 1
        call = f"toolu_{self.name}_{self.calls:04d}"
        self._line("assistant", {"id": f"msg_{self.name}_{self.n + 1}", "type": "message", "role": "assistant",
                                 "model": "claude-sonnet-4-5",
                                 "content": [{"type": "tool_use", "id": call, "name": name, "input": args}],
                                 "usage": {"input_tokens": 10, "output_tokens": 5}}, **extra)
        self._line("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                                         "content": result, "is_error": error}]},
                   toolUseResult={"stdout": result, "stderr": ""}, **extra)
        return call

    def work(self, k: int, steps: int = 4) -> None:
        """``steps`` steps of ordinary work on module ``k``: read, edit, test (fails once, then passes)."""
        path = f"src/pkg_{k}/module_{k}.py"
        for s in range(steps):
            kind = s % 4
            if kind == 0:
                self.tool("Read", {"file_path": f"{self.cwd}/{path}"}, f"class Handler{k}:\n    def run_{k}(self): ...")
            elif kind == 1:
                self.tool("Edit", {"file_path": f"{self.cwd}/{path}", "old_string": f"def run_{k}(self): ...",
                                   "new_string": f"def run_{k}(self):\n        return load_config_{k}()"}, "ok")
            elif kind == 2:
                self.tool("Bash", {"command": f"pytest -q tests/test_module_{k}.py"},
                          f"FAILED tests/test_module_{k}.py::test_run_{k} - KeyError: 'CONFIG_{k}'", error=True)
            else:
                self.tool("Bash", {"command": f"pytest -q tests/test_module_{k}.py"}, "3 passed in 0.1s")
        self.say(f"Module {k} now reads its config through load_config_{k}.")

    def subagent(self, agent_id: str, task: str, steps: int = 2) -> None:
        """A Task subagent's lines inline in the main file (``isSidechain``, its ``agentId``)."""
        saved = self.parent
        self.parent = None
        self._line("user", {"role": "user", "content": task}, isSidechain=True, agentId=agent_id)
        for s in range(steps):
            self.tool("Grep", {"pattern": f"helper_{agent_id}_{s}"}, f"src/util/{agent_id}_{s}.py:3: helper",
                      isSidechain=True, agentId=agent_id)
        self.parent = saved

    def snapshot_row(self) -> None:
        self.lines.append({"type": "file-history-snapshot", "messageId": self._next(),
                           "snapshot": {"messageId": uid(self.name, self.n), "trackedFileBackups": {},
                                        "timestamp": self._ts()}, "isSnapshotUpdate": False})

    # -------------------------------------------------------------- compaction
    def boundary(self, trigger: str = "auto", pre_tokens: int | None = 150000, *, instructions: str | None = None,
                 metadata_key: str = "compactMetadata", **more) -> dict:
        meta: dict = {"trigger": trigger}
        if pre_tokens is not None:
            meta["preTokens" if metadata_key == "compactMetadata" else "pre_tokens"] = pre_tokens
        if instructions is not None:
            meta["userContext"] = instructions
        meta.update(more)
        last = self.parent
        self.parent = None
        return self._line("system", content="Conversation compacted", isMeta=False, level="info",
                          logicalParentUuid=last, subtype="compact_boundary", **{metadata_key: meta})

    def summary(self, text: str) -> dict:
        return self._line("user", {"role": "user", "content": f"{SUMMARY_HEAD} The summary below covers the earlier "
                                                             f"portion of the conversation.\n\n{text}"},
                          isVisibleInTranscriptOnly=True, isCompactSummary=True)

    def compact(self, summary: str, trigger: str = "auto", pre_tokens: int = 150000,
                instructions: str | None = None, snapshot_rows: bool = False) -> None:
        """One compaction as Claude Code writes it (module docstring)."""
        if snapshot_rows:
            self.snapshot_row()
        self.boundary(trigger, pre_tokens, instructions=instructions)
        self.summary(summary)
        if trigger == "manual":
            self._line("user", {"role": "user", "content": "Caveat: The messages below were generated by the user "
                                                           "while running local commands. DO NOT respond to these "
                                                           "messages or otherwise consider them in your response "
                                                           "unless the user explicitly asks you to."}, isMeta=True)
            self.ask(f"<command-name>/compact</command-name>\n            <command-message>compact</command-message>\n"
                     f"            <command-args>{instructions or ''}</command-args>")
            self.ask("<local-command-stdout>\x1b[2mCompacted (ctrl+o to see full summary)\x1b[22m</local-command-stdout>")

    def jsonl(self) -> bytes:
        return b"".join(orjson.dumps(v) + b"\n" for v in self.lines)


def claude_session(compactions: int = 2, *, turns_between: int = 2, steps: int = 4, manual: tuple = (),
                   subagents: bool = False, name: str = "s") -> ClaudeSession:
    """A session of ``compactions`` compactions, ``turns_between`` turns of work before each and
    after the last; the ``manual`` ones (0-based) by ``/compact`` with instructions; with
    ``subagents``, two parallel subagents' lines just before each boundary."""
    s = ClaudeSession(name)
    k = 0
    for c in range(compactions + 1):
        for _ in range(turns_between):
            s.ask(f"Make module_{k} read CONFIG_{k} and keep tests/test_module_{k}.py green")
            s.work(k, steps)
            k += 1
        if c == compactions:
            break
        if subagents:
            s.subagent(f"a{c}x", f"find the helpers of module_{k - 1}")
            s.subagent(f"a{c}y", f"list the callers of run_{k - 1}")
        if c in manual:
            s.compact(f"Summary {c}: modules 0..{k - 1} read their config; next module_{k}.", "manual",
                      40000 + c, instructions=f"keep the failing tests of round {c}", snapshot_rows=True)
        else:
            s.compact(f"Summary {c}: modules 0..{k - 1} read their config; next module_{k}.", "auto", 150000 + c)
    return s


# ---------------------------------------------------------------------------- Codex
class CodexRollout:
    """A Codex CLI rollout written line by line."""

    def __init__(self, name: str = "r"):
        self.name = name
        self.session_id = uid(name, 0)
        self.lines: list[dict] = []
        self.n = 0
        self.calls = 0
        self._add("session_meta", {"id": self.session_id, "timestamp": "2026-02-01T10:00:00.000Z",
                                   "cwd": "/home/me/proj", "originator": "codex_cli_rs", "cli_version": "0.46.0",
                                   "instructions": None})
        self._add("turn_context", {"cwd": "/home/me/proj", "approval_policy": "on-request", "model": "gpt-5-codex",
                                   "sandbox_policy": {"mode": "workspace-write"}, "summary": "auto"})

    def _add(self, kind: str, payload: dict) -> None:
        self.n += 1
        self.lines.append({"timestamp": f"2026-02-01T10:{self.n // 60 % 60:02d}:{self.n % 60:02d}.000Z",
                           "type": kind, "payload": payload})

    def ask(self, text: str) -> None:
        self._add("response_item", {"type": "message", "role": "user",
                                    "content": [{"type": "input_text", "text": text}]})
        self._add("event_msg", {"type": "user_message", "message": text, "images": []})

    def say(self, text: str) -> None:
        self._add("response_item", {"type": "message", "role": "assistant",
                                    "content": [{"type": "output_text", "text": text}]})
        self._add("event_msg", {"type": "agent_message", "message": text})
        self.usage()

    def usage(self, tokens: int = 1000) -> None:
        self._add("event_msg", {"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": tokens, "cached_input_tokens": 0, "output_tokens": 10,
                                  "reasoning_output_tokens": 0, "total_tokens": tokens + 10},
            "last_token_usage": {"input_tokens": tokens, "cached_input_tokens": 0, "output_tokens": 10,
                                 "reasoning_output_tokens": 0, "total_tokens": tokens + 10},
            "model_context_window": 272000}})

    def shell(self, command: str, output: str, exit_code: int = 0) -> None:
        self.calls += 1
        call = f"call_{self.name}_{self.calls:04d}"
        self._add("response_item", {"type": "function_call", "name": "shell", "call_id": call,
                                    "arguments": orjson.dumps({"command": ["bash", "-lc", command]}).decode()})
        self.usage()
        self._add("response_item", {"type": "function_call_output", "call_id": call, "output": orjson.dumps(
            {"output": output, "metadata": {"exit_code": exit_code, "duration_seconds": 0.1}}).decode()})

    def work(self, k: int) -> None:
        self.shell(f"sed -n 1,40p src/pkg_{k}/module_{k}.py", f"class Handler{k}:\n    def run_{k}(self): ...")
        self.shell(f"pytest -q tests/test_module_{k}.py", f"FAILED tests/test_module_{k}.py::test_run_{k}", 1)
        self.shell(f"pytest -q tests/test_module_{k}.py", "3 passed in 0.1s")
        self.say(f"Module {k} now reads CONFIG_{k}.")

    def compacted(self, message: str, *, history: bool = True, remote: bool = False, event: bool = True) -> None:
        payload: dict = {"message": "" if remote else message}
        if history:
            items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "earlier ask"}]}]
            if remote:
                items.append({"type": "compaction", "encrypted_content": "gAAAA" + "x" * 40})
            else:
                items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text":
                              "Another language model started to solve this problem and produced a summary of "
                              "its thinking process. ...\n" + message}]})
            payload["replacement_history"] = items
        self._add("compacted", payload)
        if event:
            self._add("event_msg", {"type": "context_compacted"})

    def jsonl(self) -> bytes:
        return b"".join(orjson.dumps(v) + b"\n" for v in self.lines)


def codex_rollout(compactions: int = 2, *, turns_between: int = 2, steps: int = 1, old: tuple = (),
                  remote: tuple = (), name: str = "r") -> CodexRollout:
    """A rollout of ``compactions`` compactions (the ``old`` ones without ``replacement_history``,
    the ``remote`` ones with an empty message and an encrypted item)."""
    r = CodexRollout(name)
    k = 0
    for c in range(compactions + 1):
        for _ in range(turns_between):
            r.ask(f"Make module_{k} read CONFIG_{k}")
            for _ in range(steps):
                r.work(k)
            k += 1
        if c == compactions:
            break
        r.compacted(f"Summary {c}: modules 0..{k - 1} read their config.", history=c not in old, remote=c in remote)
    return r
