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

    def compacted(self, message: str, *, history: bool = True, remote: bool = False, event: bool = True,
                  kept: tuple = ("earlier ask",)) -> None:
        """A compaction; its ``replacement_history`` (``history``) holds the user's messages
        ``kept`` (a local compaction keeps the user's messages, the newest up to 20,000 tokens,
        and puts the summary after them)."""
        payload: dict = {"message": "" if remote else message}
        if history:
            items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
                     for text in kept]
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


# ---------------------------------------------------------------------------- worked sessions
# Sessions of the shapes harnesses compact in practice, for the fidelity benchmark
# (tests/bench/fidelity.py): many files read and a few edited, Edit / MultiEdit / Write with their
# strings, Task subagents, TodoWrite, builds and tests failing then passing, a Codex rollout with
# apply_patch and update_plan; compacted with a summary in each producer's own shape.

_AREAS = ["billing", "orders", "shipping", "auth", "search", "reports", "catalog", "notify", "ledger", "audit"]


def _vocabulary(rng, size: int = 40) -> list[dict]:
    """A project's names: one module per entry, with its class, functions, test, env var, error."""
    out = []
    for k in range(size):
        area = _AREAS[k % len(_AREAS)]
        word = rng.choice(["store", "client", "policy", "router", "index", "queue", "schema", "cache"])
        cls = f"{area.title()}{word.title()}"
        out.append({"file": f"src/{area}/{word}_{k}.py", "cls": cls, "fn": f"{word}_{area}_{k}",
                    "helper": f"_{area}_{word}_helper_{k}", "test": f"tests/{area}/test_{word}_{k}.py",
                    "case": f"test_{word}_{k}_roundtrip", "env": f"{area.upper()}_{word.upper()}_{k}_URL",
                    "error": f"{cls}{k}Error", "key": f"{area}.{word}_{k}.timeout"})
    return out


def worked_session(seed: int, *, steps: int = 160, after: int = 60, dense: bool = True, named: int = 24,
                   big_tail: bool = False, early: bool = False, compactions: int = 1,
                   name: str | None = None) -> ClaudeSession:
    """A Claude Code session of ``steps`` steps of work over a project's vocabulary, compacted by a
    summary in Claude Code's nine sections (``dense``: naming every file read or edited with its
    class and functions and a code snippet of each edit, the ``named`` most recent, as Claude
    Code's do after long sessions; else the 12 files edited last), then ``after`` steps that go on with the pending todo items, the
    files in hand and, at random, files worked on earlier. ``big_tail``: the last step before the
    boundary is a large tool result (a whole log read). ``early``: the first ask names a class,
    a file and an error that the middle of the session never uses, and the work after the
    boundary comes back to them. ``compactions`` > 1: the harness compacts again after each
    ``after`` steps (the benchmark measures the first)."""
    import random

    rng = random.Random(seed)
    s = ClaudeSession(name or f"worked-{seed}")
    pool = _vocabulary(rng)
    first = pool[0] if early else None
    start = 1 if early else 0
    state = {"pos": start, "todos": [], "read": [], "edited": [], "errors": [], "fixed": [], "asks": [],
             "code": {}}

    def ask(text: str) -> None:
        state["asks"].append(text)
        s.ask(text)

    def pick_recent() -> dict:
        state["pos"] = max(start, min(len(pool) - 1, state["pos"] + rng.choice([-1, 0, 1, 1, 2])))
        return pool[state["pos"]]

    def one(n: int, item: dict) -> None:
        other = pool[rng.randrange(start, len(pool))]
        kind = rng.choice(["read", "read", "grep", "edit", "multi", "test", "build", "say"])
        if kind == "read":
            s.tool("Read", {"file_path": f"{s.cwd}/{item['file']}"},
                   f"     1\tfrom src.{other['file'].split('/')[1]} import {other['cls']}\n     2\t\n"
                   f"     3\tclass {item['cls']}:\n     4\t    def {item['fn']}(self, request):\n"
                   f"     5\t        return {item['helper']}(request, os.environ['{item['env']}'])\n"
                   f"     6\t\n     7\tdef {item['helper']}(request, url):\n     8\t    raise {item['error']}(url)\n")
            state["read"].append(item)
        elif kind == "grep":
            s.tool("Grep", {"pattern": item["fn"], "path": "src", "output_mode": "content"},
                   f"{item['file']}:4:    def {item['fn']}(self, request):\n{other['file']}:22:        "
                   f"{item['cls']}().{item['fn']}(req)")
            state["read"].append(other)
        elif kind in ("edit", "multi"):
            old, new = f"raise {item['error']}(url)", f"return fetch(url, timeout=settings['{item['key']}'])"
            if kind == "edit":
                s.tool("Edit", {"file_path": f"{s.cwd}/{item['file']}", "old_string": old, "new_string": new},
                       f"The file {s.cwd}/{item['file']} has been updated.")
            else:
                s.tool("MultiEdit", {"file_path": f"{s.cwd}/{item['file']}", "edits": [
                    {"old_string": old, "new_string": new},
                    {"old_string": f"def {item['helper']}(request, url):",
                     "new_string": f"def {item['helper']}(request, url, *, retries=3):"}]},
                       f"Applied 2 edits to {s.cwd}/{item['file']}")
            state["edited"].append(item)
            state["code"][item["file"]] = new
        elif kind == "test":
            fail = rng.random() < 0.35
            out = (f"FAILED {item['test']}::{item['case']} - {item['error']}: {item['key']} is not set\n"
                   f"1 failed, 11 passed in 0.52s" if fail else "12 passed in 0.48s")
            s.tool("Bash", {"command": f"pytest -q {item['test']}", "description": "Run the module's tests"},
                   out, error=fail)
            (state["errors"] if fail else state["fixed"]).append(item)
        elif kind == "build":
            s.tool("Bash", {"command": "npm run build"}, "> web@1.0.0 build\n> tsc -p . && vite build\n"
                   f"built in 2.1s (dist/{item['fn']}.js)")
        else:
            s.say(f"{item['cls']}.{item['fn']} now takes its timeout from `{item['key']}`; next I check "
                  f"{other['cls']} in {other['file']}.")
        if n % 25 == 5:
            todos = [{"content": f"Port {p['cls']} to settings ({p['file']})", "status": st,
                      "activeForm": f"Porting {p['cls']}"}
                     for p, st in zip(pool[state["pos"]:state["pos"] + 4], ["completed", "in_progress", "pending",
                                                                           "pending"])]
            state["todos"] = todos
            s.tool("TodoWrite", {"todos": todos}, "Todos have been modified successfully.")
        if n % 40 == 20:
            sub = f"a{seed}{n:03d}"
            call = s.tool("Task", {"description": f"Find callers of {item['fn']}", "subagent_type": "general-purpose",
                                   "prompt": f"List every caller of {item['cls']}.{item['fn']} under src/"},
                          f"{item['fn']} is called from {other['file']} ({other['cls']}) and {item['test']}.")
            saved = s.parent
            s.parent = None
            s._line("user", {"role": "user", "content": f"List every caller of {item['cls']}.{item['fn']} under src/"},
                    isSidechain=True, agentId=sub)
            s.tool("Grep", {"pattern": item["fn"]}, f"{other['file']}:22: {item['fn']}", isSidechain=True, agentId=sub)
            s.parent = saved
            del call

    def summary() -> str:
        touched = list(dict.fromkeys(i["file"] for i in reversed(state["read"] + state["edited"]
                                                                 if dense else state["edited"])))
        by_file = {i["file"]: i for i in state["read"] + state["edited"]}
        files = touched[:named] if dense else touched[:12]
        def section(f: str) -> str:
            i = by_file[f]
            if f in state["code"]:
                return (f"   - {f}\n      - {i['cls']}.{i['fn']}: the timeout now comes from settings; "
                        f"{i['helper']} no longer raises {i['error']}\n      ```python\n      {state['code'][f]}\n      ```")
            return f"   - {f}\n      - Read to understand {i['cls']} ({i['fn']}, {i['helper']}; env {i['env']})"
        todos = state["todos"]
        cur = pool[state["pos"]]
        return "\n".join([
            "Summary:", "1. Primary Request and Intent:", *(f"   - {a}" for a in state["asks"]),
            "2. Key Technical Concepts:", "   - per-module timeouts read from settings; pytest; vite build",
            *([f"   - {first['cls']} and {first['error']}"] if first else []),
            "3. Files and Code Sections:", *(section(f) for f in files),
            "4. Errors and fixes:",
            *(f"   - {e['error']} in {e['test']}::{e['case']}: fixed by reading {e['key']}" for e in state["errors"][-5:]),
            "5. Problem Solving:", "   - moved every hard-coded timeout to settings, one module at a time",
            "6. All user messages:", *(f"   - {a}" for a in state["asks"]),
            "7. Pending Tasks:", *(f"   - {t['content']}" for t in todos if t["status"] != "completed"),
            "8. Current Work:", f"   - Editing {cur['file']}: {cur['cls']}.{cur['fn']}",
            "9. Optional Next Step:", f"   - Run pytest -q {cur['test']}"])

    if early:
        ask(f"The {first['cls']} in {first['file']} raises {first['error']} when {first['key']} is unset; "
            f"before we touch it, move every other module's timeout to settings and keep the tests green.")
    else:
        ask(f"Move every module's timeout to settings (starting with {pool[0]['file']}) and keep the tests green.")
    for n in range(steps):
        if n == steps // 3:
            ask("Keep the public names unchanged, and use the `settings` mapping, not env vars, for timeouts.")
        if n == 2 * steps // 3:
            ask(f"Also run npm run build after each module and tell me when {pool[len(pool) // 2]['cls']} is done.")
        one(n, pick_recent())
    if big_tail:
        cur = pool[state["pos"]]
        log = "\n".join(f"2026-02-01T10:{m // 60:02d}:{m % 60:02d} INFO worker-{m % 7} handled request "
                        f"{m:06d} in {m % 97} ms" for m in range(1800))
        s.tool("Read", {"file_path": f"{s.cwd}/logs/{cur['fn']}.log"}, log + f"\nERROR {cur['error']}: {cur['key']}")
    for c in range(compactions):
        s.compact(summary(), "auto", 160000 + c)
        for n in range(after):
            r = rng.random()
            pending = [t for t in state["todos"] if t["status"] != "completed"]
            if early and n % 10 == 3:
                item = first
            elif r < 0.35:
                item = pick_recent()
            elif r < 0.55 and pending:
                label = rng.choice(pending)["content"]
                item = next(p for p in pool if p["file"] in label)
            else:
                item = rng.choice(state["read"] + state["edited"])
            one(steps + c * after + n, item)
    return s


def _wander(rng, pool: list[dict], state: dict):
    """The next item of ``pool`` an agent turns to: mostly on, sometimes back (``state["pos"]``)."""
    def pick() -> dict:
        state["pos"] = max(0, min(len(pool) - 1, state["pos"] + rng.choice([-1, 0, 1, 1, 2])))
        return pool[state["pos"]]
    return pick


def _work(ask, asks: list[str], steps: int, step, after_step=None) -> None:
    """The first ask, ``steps`` steps with the second ask half way, ``after_step(n)`` after each."""
    ask(asks[0])
    for n in range(steps):
        if n == steps // 2:
            ask(asks[1])
        step()
        if after_step is not None:
            after_step(n)


def worked_rollout(seed: int, *, steps: int = 120, after: int = 50, named: int = 10) -> CodexRollout:
    """A Codex CLI rollout of ``steps`` steps (shell reads with ``sed``/``rg``, ``apply_patch``
    edits, ``pytest`` failing then passing, ``update_plan``), compacted locally: a ``compacted``
    line whose ``message`` is the handoff summary Codex's compaction prompt asks for (progress and
    decisions, context and constraints, what remains, the data needed to continue), then ``after``
    steps that go on with the plan's open steps, the files in hand and earlier files."""
    import random

    rng = random.Random(seed)
    r = CodexRollout(f"worked-rollout-{seed}")
    pool = _vocabulary(rng)
    state = {"pos": 0, "plan": [], "seen": [], "edited": [], "errors": []}

    def one(item: dict) -> None:
        kind = rng.choice(["sed", "rg", "patch", "test", "plan"])
        if kind == "sed":
            r.shell(f"sed -n 1,80p {item['file']}", f"class {item['cls']}:\n    def {item['fn']}(self, request):\n"
                    f"        return {item['helper']}(request, os.environ['{item['env']}'])")
            state["seen"].append(item)
        elif kind == "rg":
            r.shell(f"rg -n {item['fn']} src", f"{item['file']}:4:    def {item['fn']}(self, request):")
            state["seen"].append(item)
        elif kind == "patch":
            patch = (f"*** Begin Patch\n*** Update File: {item['file']}\n@@ class {item['cls']}:\n"
                     f"-        raise {item['error']}(url)\n+        return fetch(url, timeout=settings['{item['key']}'])\n"
                     "*** End Patch\n")
            r.calls += 1
            call = f"call_{r.name}_{r.calls:04d}"
            r._add("response_item", {"type": "custom_tool_call", "name": "apply_patch", "call_id": call,
                                     "input": patch, "status": "completed"})
            r._add("response_item", {"type": "custom_tool_call_output", "call_id": call, "output": orjson.dumps(
                {"output": f"Success. Updated the following files:\nM {item['file']}\n",
                 "metadata": {"exit_code": 0, "duration_seconds": 0.0}}).decode()})
            state["edited"].append(item)
        elif kind == "test":
            fail = rng.random() < 0.35
            r.shell(f"pytest -q {item['test']}", f"FAILED {item['test']}::{item['case']} - {item['error']}\n1 failed"
                    if fail else "9 passed in 0.3s", 1 if fail else 0)
            if fail:
                state["errors"].append(item)
        else:
            plan = [{"step": f"Port {p['cls']} ({p['file']})", "status": st}
                    for p, st in zip(pool[state["pos"]:state["pos"] + 3], ["completed", "in_progress", "pending"])]
            state["plan"] = plan
            r.calls += 1
            call = f"call_{r.name}_{r.calls:04d}"
            r._add("response_item", {"type": "function_call", "name": "update_plan", "call_id": call,
                                     "arguments": orjson.dumps({"plan": plan}).decode()})
            r._add("response_item", {"type": "function_call_output", "call_id": call, "output": "Plan updated"})

    pick = _wander(rng, pool, state)
    asks = [f"Move every module's timeout from env vars to settings, starting with {pool[0]['file']}.",
            "Don't rename public functions; run the module's tests after each change."]

    def note(n: int) -> None:
        if n % 15 == 14:
            r.say(f"{pool[state['pos']]['cls']} now reads its timeout from settings.")

    _work(r.ask, asks, steps, lambda: one(pick()), note)
    edited = list(dict.fromkeys(i["file"] for i in reversed(state["edited"])))[:named]
    cur = pool[state["pos"]]
    handoff = "\n".join([
        "## Progress", *(f"- Updated {f}: timeout from settings" for f in edited),
        "## Constraints", *(f"- {a}" for a in asks),
        "## Open issues", *(f"- {e['test']}::{e['case']} failed with {e['error']}" for e in state["errors"][-3:]),
        "## Next steps", *(f"- {p['step']}" for p in state["plan"] if p["status"] != "completed"),
        f"- Continue with {cur['cls']} in {cur['file']}"])
    r.compacted(handoff, kept=tuple(asks))
    todo = [p for p in pool if any(p["file"] in step["step"] for step in state["plan"] if step["status"] != "completed")]
    for n in range(after):
        x = rng.random()
        one(todo[n % len(todo)] if todo and x < 0.25 else pick() if x < 0.6 else rng.choice(state["seen"] + state["edited"]))
    return r


class GeminiSession:
    """A Gemini CLI replay log (``chats/session-*.jsonl``) written record by record: a header,
    ``user`` / ``gemini`` message records (a model message carries its ``toolCalls``, each with
    its ``functionResponse`` result), and for a compression the summary as a new ``user`` record
    holding ``<state_snapshot>``, the model's acknowledgement, and ``{"$set": {"messages": …}}``
    replacing the history with those two."""

    def __init__(self, name: str = "g", cwd: str = "/home/me/proj"):
        self.name, self.cwd, self.n = name, cwd, 0
        self.lines: list[dict] = [{"sessionId": uid(name, 0), "projectHash": "9f" * 32,
                                   "startTime": "2026-03-03T08:00:00.000Z", "lastUpdated": "2026-03-03T08:00:00.000Z"}]

    def _record(self, kind: str, content, **extra) -> dict:
        self.n += 1
        value = {"id": uid(self.name, self.n), "timestamp": f"2026-03-03T{8 + self.n // 3600:02d}:"
                 f"{self.n // 60 % 60:02d}:{self.n % 60:02d}.000Z", "type": kind, "content": content, **extra}
        self.lines.append(value)
        return value

    def ask(self, text: str) -> dict:
        return self._record("user", [{"text": text}])

    def say(self, text: str, calls: list | None = None) -> dict:
        extra = {"model": "gemini-2.5-pro", "tokens": {"input": 100, "output": 10, "cached": 0, "total": 110}}
        if calls:
            extra["toolCalls"] = [{"id": f"{name}-{self.n}-{k}", "name": name, "args": args, "status": "success",
                                   "result": [{"functionResponse": {"id": f"{name}-{self.n}-{k}", "name": name,
                                                                    "response": {"output": output}}}]}
                                  for k, (name, args, output) in enumerate(calls)]
        return self._record("gemini", text, **extra)

    def compress(self, snapshot: str, keep: float = 0.0) -> None:
        """A compression: the summary, the model's acknowledgement, then the newest part of the
        history kept as it was, in the ``$set`` that replaces it — with ``keep`` (Gemini CLI's
        ``COMPRESSION_PRESERVE_THRESHOLD``, 0.3), where its ``findCompressSplitPoint`` splits: at
        the first user message after ``1 - keep`` of the history's characters; with none there,
        nothing kept when the history ends on a model message without tool calls, else from the
        last user message on."""
        history = [v for v in self.lines if v.get("type") in ("user", "gemini")]
        sizes = [len(orjson.dumps(v)) for v in history]
        split = len(history)
        if keep:
            last, before, kept_from = 0, 0, (1 - keep) * sum(sizes)
            for k, size in enumerate(sizes):
                if history[k]["type"] == "user":
                    if before >= kept_from:
                        last = k
                        break
                    last = k
                before += size
            else:
                if history and history[-1]["type"] == "gemini" and not history[-1].get("toolCalls"):
                    last = len(history)
            split = last
        kept = [self._record("user", [{"text": snapshot}]),
                self._record("gemini", "Got it. Thanks for the additional context!"), *history[split:]]
        self.lines.append({"$set": {"messages": kept}})

    def jsonl(self) -> bytes:
        return b"".join(orjson.dumps(v) + b"\n" for v in self.lines)


def worked_gemini(seed: int, *, steps: int = 120, after: int = 50, named: int = 12, keep: float = 0.0) -> GeminiSession:
    """A Gemini CLI session of ``steps`` steps (``read_file``, ``search_file_content``,
    ``replace``, ``run_shell_command`` running the tests, ``write_todos``), compressed by a
    ``<state_snapshot>`` in the sections Gemini CLI's compression prompt asks for (overall goal,
    key knowledge, file system state naming the ``named`` files modified last and the files read,
    recent actions, current plan), then ``after`` steps that go on with the plan's open steps,
    the files in hand and earlier files. ``keep`` (0.3 as Gemini CLI does): the history's newest
    part stays as it was beside the summary (:meth:`GeminiSession.compress`); 0: the summary alone."""
    import random

    rng = random.Random(seed)
    g = GeminiSession(f"worked-gemini-{seed}")
    pool = _vocabulary(rng)
    state = {"pos": 0, "todos": [], "seen": [], "edited": [], "actions": []}

    def one(item: dict) -> None:
        path = f"{g.cwd}/{item['file']}"
        kind = rng.choice(["read", "read", "search", "replace", "test", "todos"])
        if kind == "read":
            g.say("", [("read_file", {"absolute_path": path}, f"class {item['cls']}:\n    def {item['fn']}(self, request):"
                        f"\n        return {item['helper']}(request, os.environ['{item['env']}'])")])
            state["seen"].append(item)
        elif kind == "search":
            g.say("", [("search_file_content", {"pattern": item["fn"]},
                        f"Found 1 match for pattern \"{item['fn']}\":\n---\nFile: {item['file']}\nL4: def {item['fn']}")])
            state["seen"].append(item)
        elif kind == "replace":
            g.say(f"Moving {item['cls']} to settings.", [("replace", {
                "file_path": path, "old_string": f"raise {item['error']}(url)",
                "new_string": f"return fetch(url, timeout=settings['{item['key']}'])"},
                f"Successfully modified file: {path} (1 replacements).")])
            state["edited"].append(item)
            state["actions"].append(f"Replaced the raise of {item['error']} in {item['file']}")
        elif kind == "test":
            fail = rng.random() < 0.35
            out = (f"FAILED {item['test']}::{item['case']} - {item['error']}\n1 failed" if fail else "9 passed in 0.3s")
            g.say("", [("run_shell_command", {"command": f"pytest -q {item['test']}"},
                        f"Command: pytest -q {item['test']}\nStdout: {out}\nExit Code: {1 if fail else 0}")])
            state["actions"].append(f"pytest -q {item['test']}: {'failed with ' + item['error'] if fail else 'passed'}")
        else:
            todos = [{"description": f"Port {p['cls']} ({p['file']})", "status": st}
                     for p, st in zip(pool[state["pos"]:state["pos"] + 3], ["completed", "in_progress", "pending"])]
            state["todos"] = todos
            g.say("", [("write_todos", {"todos": todos}, "Successfully updated the todo list.")])

    pick = _wander(rng, pool, state)
    asks = [f"Move every module's timeout from env vars to settings, starting with {pool[0]['file']}.",
            "Keep the public function names; run the module's tests after each change."]
    _work(g.ask, asks, steps, lambda: one(pick()))
    edited = list(dict.fromkeys(i["file"] for i in reversed(state["edited"])))[:named]
    read = [f for f in dict.fromkeys(i["file"] for i in reversed(state["seen"])) if f not in edited][:named // 2]
    marks = {"completed": "DONE", "in_progress": "IN PROGRESS", "pending": "TODO"}
    g.compress("\n".join([
        "<state_snapshot>", "    <overall_goal>", f"        {asks[0]}", "    </overall_goal>",
        "    <key_knowledge>", *(f"        - {a}" for a in asks[1:]),
        "        - Timeouts are read with settings['<area>.<module>.timeout'].", "    </key_knowledge>",
        "    <file_system_state>", f"        - CWD: `{g.cwd}`", *(f"        - MODIFIED: `{f}`" for f in edited),
        *(f"        - READ: `{f}`" for f in read), "    </file_system_state>",
        "    <recent_actions>", *(f"        - {a}" for a in state["actions"][-5:]), "    </recent_actions>",
        "    <current_plan>", *(f"        {k}. [{marks[t['status']]}] {t['description']}"
                               for k, t in enumerate(state["todos"], 1)), "    </current_plan>",
        "</state_snapshot>"]), keep=keep)
    todo = [p for p in pool if any(p["file"] in t["description"] for t in state["todos"] if t["status"] != "completed")]
    for n in range(after):
        x = rng.random()
        one(todo[n % len(todo)] if todo and x < 0.25 else pick() if x < 0.6 else rng.choice(state["seen"] + state["edited"]))
    return g
