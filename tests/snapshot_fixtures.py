"""A small store with every case the snapshot renderers must get right, with fixed ids and times.

Agent ``fixture`` (through memcli's own ingest, so turns and linkage are the real ones):

* turn 1: a stored system prompt and harness context, a user ask with two images (URL and data:
  URL), a reasoning trace, an assistant text, two parallel calls answered out of order;
* turn 2: a call reusing turn 1's id ``call_1`` that fails (error result), a call whose id has
  characters no provider accepts, and a call (``call_3``) whose result — with an image — is only
  stored after turn 3's user message (it still belongs to turn 2);
* turn 3: a result nobody called (orphan) and a subagent's sidechain message;
* turn 4: a user ask with a voice note (audio data: URL) and a call still pending.

Memory: two live episodic summaries (a third is superseded) and two live facts (one superseded).
"""

from __future__ import annotations

from pathlib import Path

from memcli.ingest.pipeline import ingest_events
from memcli.store import jsonl
from memcli.store.agent import AgentStore
from tests.events import A, U

AGENT = "fixture"
BASE_TS = 1767261600.0  # 2026-01-01T10:00:00Z
PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
WAV = "data:audio/wav;base64,UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="
BUILD_LOG = "\n".join(
    ["$ make", "cc -O2 -c src/main.c -o build/main.o"]
    + [f"  [{i:02d}/40] compiling src/module_{i:02d}.c" for i in range(1, 41)]
    + ["make: cc: No such file or directory", "make: *** [Makefile:12: build/main.o] Error 127"])


def CALL(call_id, name, args):
    return {"trace_type": "tool_call", "tool_call_id": call_id, "tool_name": name, "tool_args": args}


def RES(call_id, name, result=None, error=None, **kw):
    event = {"trace_type": "tool_result", "tool_call_id": call_id, "tool_name": name, **kw}
    if error is not None:
        event["tool_error"] = error
    else:
        event["tool_result"] = result
    return event


EVENTS = [
    U("You are a careful build engineer. Answer in one or two sentences.", tags=["system"]),
    U("<environment>cwd=/repo os=linux</environment>", tags=["context"]),
    U("Why does the build fail? Screenshots attached.",
      media={"images": ["https://example.com/screens/build.png", PNG]}),
    A("The build log and setup.cfg should tell.", tags=["reasoning"]),
    A("Let me read the build log and the config."),
    CALL("call_1", "read_file", {"path": "build.log"}),
    CALL("call_2", "read_file", {"path": "setup.cfg"}),
    RES("call_2", "read_file", "[metadata]\nname = demo\nversion = 0.3.1\n"),
    RES("call_1", "read_file", BUILD_LOG),
    A("The compiler `cc` is not installed, so make stops with error 127."),
    U("Run the tests and look for TODOs, then take a screenshot of the report."),
    CALL("call_1", "run_tests", {"path": "tests", "verbose": True}),
    CALL("fc.tool:7/grep", "grep", {"pattern": "TODO", "path": "src"}),
    RES("call_1", "run_tests", error="exit status 1\nFAILED tests/test_build.py::test_compiler - FileNotFoundError: 'cc'"),
    RES("fc.tool:7/grep", "grep", ["src/main.c:12: // TODO: drop the legacy flag"]),
    CALL("call_3", "screenshot", {"url": "http://localhost:8000/report"}),
    U("Any news?"),
    RES("call_3", "screenshot", "Saved report.png (1 failed, 11 passed)", media={"images": [PNG]}),
    RES("call_ghost", "read_file", "stale output of a call from another session"),
    A("Scanning the repository for compiler settings.", tags=["sidechain"]),
    A("The tests fail for the same reason: no C compiler. The report shows 1 failed, 11 passed."),
    U("Install the compiler and rebuild; details in the voice note.", media={"audio": [WAV]}),
    A("Installing gcc now."),
    CALL("call_4", "shell", {"cmd": "apt-get install -y gcc && make"}),
]

EPISODIC = [
    {"id": "ep_1", "ts": BASE_TS - 900, "turn_ids": ["turn_a"], "summary": "An old summary, rolled up since.",
     "tags": [], "salience": 0.2},
    {"id": "ep_2", "ts": BASE_TS - 600, "turn_ids": ["turn_b"],
     "summary": "The user set up the repository and asked for reproducible builds.", "tags": ["setup"],
     "salience": 0.5},
    {"id": "ep_3", "ts": BASE_TS - 300, "turn_ids": ["turn_a", "turn_c"],
     "summary": "Earlier builds passed on the CI image, which ships gcc 13.", "tags": ["ci"], "salience": 0.6,
     "supersedes": ["ep_1"]},
]
SEMANTIC = [
    {"id": "fact_1", "ts": BASE_TS - 500, "fact": "The user prefers long explanations.", "tags": ["preference"],
     "confidence": 0.4, "salience": 0.3},
    {"id": "fact_2", "ts": BASE_TS - 400, "fact": "The project builds with make and a C compiler.",
     "tags": ["build"], "confidence": 0.9, "salience": 0.7},
    {"id": "fact_3", "ts": BASE_TS - 200, "fact": "The user prefers short answers.", "tags": ["preference"],
     "confidence": 0.9, "salience": 0.8, "supersedes": ["fact_1"]},
]


def make_fixture_store(memory_dir: Path, agent: str = AGENT) -> AgentStore:
    store = AgentStore(memory_dir, agent)
    events = [{"id": f"fx-{i + 1:02d}", "ts": BASE_TS + 10 * i, **e} for i, e in enumerate(EVENTS)]
    ingest_events(store, ((i + 1, e) for i, e in enumerate(events)), source_event="fixture")
    jsonl.append_records(store.paths.episodic, EPISODIC)
    jsonl.append_records(store.paths.semantic, SEMANTIC)
    return store
