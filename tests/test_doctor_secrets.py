"""``memcli doctor --secrets [--repair]``: secrets already on disk are found by file:line and
redacted in place through the store's rewrite path; nothing else changes."""

from __future__ import annotations

import os

import orjson
import pytest

from memcli.store.rewrite import JOURNAL
from tests.helpers import agent_dir, read_jsonl, run_memcli, tree_digest
from tests.secret_samples import LOOK_ALIKES, SAMPLES

GOOGLE = next(secret for kind, _, secret in SAMPLES if kind == "google_api_key")
GITHUB = next(secret for kind, _, secret in SAMPLES if kind == "github_token")


def _events():
    return [
        {"trace_type": "user", "content": f"my key is {GOOGLE}"},
        {"trace_type": "assistant", "content": "plain text " + LOOK_ALIKES[0]},
        {"trace_type": "tool_call", "tool_name": "sh", "tool_call_id": "c1",
         "tool_args": {"password": "hunter22x", "env": [f"GITHUB_TOKEN={GITHUB}"]}},
        {"trace_type": "tool_result", "tool_call_id": "c1", "tool_result": "\n".join(LOOK_ALIKES[:10])},
        {"trace_type": "user", "content": "next turn"},
    ]


@pytest.fixture
def leaky(cli, memory_dir):
    """An agent written with --no-redact (as by an older memcli or another tool)."""
    assert cli("ingest", "a", "--no-redact", input=_events()).exit_code == 0
    return agent_dir(memory_dir, "a")


def test_scan_names_file_line_and_kinds_never_the_secret(cli, leaky):
    before = tree_digest(leaky)
    result = cli("doctor", "a", "--secrets")
    assert result.exit_code == 1
    active = leaky / "raw_traces.jsonl"
    assert result.stdout.splitlines() == [
        f"{active}:1: secret: 1 secret (google_api_key)",
        f"{active}:3: secret: 2 secrets (github_token, secret_assignment)",
    ]
    assert "3 secrets on 2 lines" in result.stderr and "--repair" in result.stderr
    assert GOOGLE not in result.output and GITHUB not in result.output
    assert tree_digest(leaky) == before  # a scan writes nothing
    rows = orjson.loads(cli("doctor", "a", "--secrets", "--json").stdout)
    assert rows[1] == {"file": str(active), "line": 3, "secrets": 2, "fixed": False,
                       "kinds": {"github_token": 1, "secret_assignment": 1}}


def test_repair_rewrites_only_the_lines_with_secrets(cli, leaky):
    active = leaky / "raw_traces.jsonl"
    old_lines = active.read_bytes().splitlines()
    old_inode = os.stat(active).st_ino
    result = cli("doctor", "a", "--secrets", "--repair")
    assert result.exit_code == 0, result.output
    assert "repaired: raw_traces.jsonl: redacted 3 secrets on 2 lines" in result.stderr
    new_lines = active.read_bytes().splitlines()
    assert os.stat(active).st_ino != old_inode  # caches keyed on file identity see a new file
    assert [i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b] == [0, 2]
    assert len(new_lines) == len(old_lines)
    old, new = [orjson.loads(x) for x in old_lines], [orjson.loads(x) for x in new_lines]
    assert new[0] == {**old[0], "content": "my key is [REDACTED:google_api_key]"}
    assert new[2]["tool_args"] == {"password": "[REDACTED:secret_assignment]",
                                   "env": ["GITHUB_TOKEN=[REDACTED:github_token]"]}
    assert {k: v for k, v in new[2].items() if k != "tool_args"} == {k: v for k, v in old[2].items() if k != "tool_args"}
    assert not list(leaky.glob(".*.tmp")) and not (leaky / JOURNAL).exists()
    # the store works on: clean doctor, the next ingest links to the right turn, nothing left
    assert cli("doctor", "a").exit_code == 0
    assert cli("doctor", "a", "--secrets").exit_code == 0
    assert cli("ingest", "a", input=[{"trace_type": "assistant", "content": "ok"}]).exit_code == 0
    assert read_jsonl(active)[-1]["turn_id"] == read_jsonl(active)[-2]["turn_id"]


def test_memory_items_working_memory_and_set_aside_lines_are_scanned(cli, leaky):
    (leaky / "semantic.jsonl").write_bytes(orjson.dumps(
        {"id": "s1", "ts": 1.0, "fact": f"deploy key {GITHUB}", "kind": "fact"}) + b"\n")
    log = leaky / "memory_files.jsonl"
    content = f"notes\nTOKEN={GITHUB}\nend"
    log.write_bytes(orjson.dumps({"id": "wm_1", "ts": 1.0, "op": "create", "path": "/memories/n.md", "content": content})
                    + b"\n" + orjson.dumps({"id": "wm_2", "ts": 2.0, "op": "insert", "path": "/memories/n.md",
                                            "at": len(content) - 3, "cut": 0, "text": "the "}) + b"\n")
    (leaky / "raw_traces.jsonl.corrupt-lines").write_bytes(f'{{"torn": "{GOOGLE}\n'.encode())
    result = cli("doctor", "a", "--secrets", "--repair")
    assert result.exit_code == 0, result.output
    assert GITHUB.encode() not in b"".join(p.read_bytes() for p in leaky.iterdir() if p.is_file())
    assert GOOGLE.encode() not in (leaky / "raw_traces.jsonl.corrupt-lines").read_bytes()
    assert read_jsonl(leaky / "semantic.jsonl")[0]["fact"] == "deploy key [REDACTED:github_token]"
    # working-memory edits address text by character offset: the marker keeps the length
    new_content = read_jsonl(log)[0]["content"]
    assert len(new_content) == len(content) and new_content.endswith("\nend")
    assert new_content.split("\n")[1].startswith("TOKEN=[REDACTED:github_token]***")
    assert read_jsonl(log)[1]["at"] == len(content) - 3


def test_a_crash_mid_rewrite_leaves_old_or_new_files_and_the_next_repair_finishes(leaky, memory_dir):
    active = leaky / "raw_traces.jsonl"
    before = active.read_bytes()
    env = {"MEMCLI_DIR": str(memory_dir), "MEMCLI_CRASH_AT": "rewrite:written"}
    crashed = run_memcli("doctor", "a", "--secrets", "--repair", env=env)
    assert crashed.returncode == -9
    assert active.read_bytes() == before  # not replaced yet
    assert (leaky / JOURNAL).exists() and len(list(leaky.glob(".*.rewrite.tmp"))) == 1
    done = run_memcli("doctor", "a", "--secrets", "--repair", env={"MEMCLI_DIR": str(memory_dir)})
    assert done.returncode == 0, done.stderr
    assert b"cleaned up an interrupted rewrite (1 temp file deleted)" in done.stderr
    assert not list(leaky.glob(".*.tmp")) and not (leaky / JOURNAL).exists()
    assert GOOGLE.encode() not in active.read_bytes()
    assert [r["id"] for r in read_jsonl(active)] == [orjson.loads(x)["id"] for x in before.splitlines()]


def test_a_clean_store_is_left_alone(cli, memory_dir):
    cli("ingest", "a", input=_events())  # redacted at ingest
    before = tree_digest(memory_dir)
    result = cli("doctor", "a", "--secrets", "--repair")
    assert result.exit_code == 0 and "no secrets found" in result.stderr
    assert tree_digest(memory_dir) == before


def test_a_crash_after_the_first_replace_is_finished_by_the_next_repair(leaky, memory_dir):
    (leaky / "semantic.jsonl").write_bytes(orjson.dumps({"id": "s1", "ts": 1.0, "fact": f"key {GITHUB}"}) + b"\n")
    env = {"MEMCLI_DIR": str(memory_dir), "MEMCLI_CRASH_AT": "rewrite:replaced"}
    assert run_memcli("doctor", "a", "--secrets", "--repair", env=env).returncode == -9
    assert GOOGLE.encode() not in (leaky / "raw_traces.jsonl").read_bytes()  # the first file is done, whole
    assert GITHUB.encode() in (leaky / "semantic.jsonl").read_bytes()
    done = run_memcli("doctor", "a", "--secrets", "--repair", env={"MEMCLI_DIR": str(memory_dir)})
    assert done.returncode == 0, done.stderr
    assert GITHUB.encode() not in b"".join(p.read_bytes() for p in leaky.iterdir() if p.is_file())
    assert not list(leaky.glob(".*.tmp")) and not (leaky / JOURNAL).exists()
    assert run_memcli("doctor", "a", env={"MEMCLI_DIR": str(memory_dir)}).returncode == 0


@pytest.mark.slow
def test_repairs_racing_writers_lose_no_event(memory_dir):
    """Writers append (secrets and all, --no-redact) while repairs rewrite the file: every event
    lands exactly once, every line parses, and a last repair leaves no secret."""
    import subprocess
    import sys

    from tests.helpers import ndjson, proc_env

    env = proc_env({"MEMCLI_DIR": str(memory_dir)})
    writers = []
    for w in range(3):
        events = [{"id": f"w{w}_{i}", "trace_type": "user" if i % 2 == 0 else "assistant",
                   "content": f"event {i} of {w}" + (f" key {GOOGLE}" if i % 3 == 0 else "")} for i in range(40)]
        payload = ndjson(events)
        writers.append(subprocess.Popen([sys.executable, "-c", (
            "import subprocess, sys\n"
            "data = sys.stdin.buffer.read().splitlines(keepends=True)\n"
            "for i in range(0, len(data), 4):\n"
            "    subprocess.run([sys.executable, '-m', 'memcli', 'ingest', 'a', '--no-redact'],\n"
            "                   input=b''.join(data[i:i+4]), check=True, capture_output=True)\n")],
            stdin=subprocess.PIPE, env=env))
        writers[-1].stdin.write(payload)
        writers[-1].stdin.close()
    repairs = 0
    while any(p.poll() is None for p in writers):
        subprocess.run([sys.executable, "-m", "memcli", "doctor", "a", "--secrets", "--repair"], env=env,
                       capture_output=True, check=False)
        repairs += 1
    assert all(p.wait() == 0 for p in writers)
    final = subprocess.run([sys.executable, "-m", "memcli", "doctor", "a", "--secrets", "--repair"], env=env,
                           capture_output=True, check=False)
    assert final.returncode == 0, final.stderr
    records = read_jsonl(agent_dir(memory_dir, "a") / "raw_traces.jsonl")
    assert sorted(r["id"] for r in records) == sorted(f"w{w}_{i}" for w in range(3) for i in range(40))
    assert GOOGLE not in (agent_dir(memory_dir, "a") / "raw_traces.jsonl").read_text()
    assert repairs >= 1
    assert subprocess.run([sys.executable, "-m", "memcli", "doctor", "a"], env=env, capture_output=True,
                          check=False).returncode == 0
