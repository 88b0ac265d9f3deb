"""Helpers shared by the tests (import as ``from tests.helpers import ...``)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

REPO = Path(__file__).resolve().parent.parent
CORPORA = REPO.parent / "shared" / "corpora"
# Corpus tests carry this marker. Where ../shared/corpora is absent (a user's fresh clone) they are
# not run, and the summary says so once (tests/conftest.py); where it is present, a corpus test
# that finds nothing to ingest fails: an importer regression cannot hide as a skip.
needs_corpora = pytest.mark.corpora


def missing_here(what: str) -> None:
    """A test that needs something this machine lacks (a server, a browser, a package): skipped,
    naming it — except under CI (``CI=true``), where the project's setup installs it, so its
    absence fails the test instead of hiding as a skip."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{what} is missing, and CI must run this test")
    pytest.skip(f"{what} is missing")


def proc_env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    if extra:
        env.update(extra)
    return env


def run_memcli(*args, input=None, env=None, timeout=120, check=False) -> subprocess.CompletedProcess:
    """``python -m memcli ARGS`` in a subprocess, with this checkout on PYTHONPATH."""
    if isinstance(input, (list, tuple)):
        input = ndjson(input)
    if isinstance(input, str):
        input = input.encode()
    return subprocess.run(
        [sys.executable, "-m", "memcli", *[str(a) for a in args]],
        input=input, capture_output=True, env=proc_env(env), timeout=timeout, check=check,
    )


def ndjson(events) -> bytes:
    return b"".join(orjson.dumps(e) + b"\n" for e in events)


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def agent_dir(memory_dir: Path, agent: str) -> Path:
    return memory_dir / "agents" / agent


def store_digest(root: Path) -> dict[str, str]:
    """:func:`tree_digest` without the token count caches (``.token-counts``): read commands may
    fill those (derived, rebuildable); everything else must stay byte-identical."""
    return {name: digest for name, digest in tree_digest(root).items() if not name.endswith(".token-counts")}


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (relative path -> hex), for byte-identical checks."""
    out = {}
    if not root.exists():
        return out
    for path in sorted(root.rglob("*")):
        if path.is_file():
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def agent_traces(memory_dir: Path, agent: str) -> list[dict]:
    """The agent's active traces as stored (raw_traces.jsonl)."""
    return read_jsonl(memory_dir / "agents" / agent / "raw_traces.jsonl")


def synced(memory_dir: Path, home: Path, source: str, **options) -> dict:
    """``memcli sync`` of ``source`` under ``home`` through the API: agent -> its session report."""
    import memcli

    return {s.agent: s for s in memcli.Memory(memory_dir).sync(home=home, source=source, **options).sessions}


def synced_again_reading_nothing(monkeypatch, sync, memory_dir: Path, *readers):
    """Sync (``sync()``), then sync again with every reader in ``readers`` (a dotted name, or an
    ``(object, attribute)`` pair) made to fail if called: the second sync must read no session and
    leave the store byte-identical. Returns the second sync's report."""
    sync()
    before = store_digest(memory_dir)

    def must_not_read(*a, **k):
        raise AssertionError("an unchanged session was read")

    for reader in readers:
        monkeypatch.setattr(*((reader,) if isinstance(reader, str) else reader), must_not_read)
    report = sync()
    assert store_digest(memory_dir) == before
    return report


def ok(result):
    """A CLI result that succeeded (its exit code, stdout and stderr shown when it did not)."""
    assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr)
    return result


def bad_first_lines(invalid: bytes, invalid_message: str) -> tuple[list, dict]:
    """The lines the tests of a JSONL file put first: JSON that is not JSON, JSON that is no
    object, and ``invalid`` (an object that is no record of that file) — each as (line, doctor's
    code, doctor's message) — and, by code, what a writer that refuses to append says of it."""
    lines = [(b"{oops\n", "bad-json", "not valid JSON ("),
             (b"[]\n", "not-an-object", "a JSON list, not an object"),
             (invalid, "invalid-record", invalid_message)]
    refused = {"bad-json": "not valid JSON (", "not-an-object": "expected a JSON object, found list",
               "invalid-record": invalid_message}
    return lines, refused


def doctor_cuts_a_torn_tail(cli, agent: str, path: Path, partial: bytes, line: int) -> None:
    """``path`` ending in ``partial`` (a record cut short, line ``line``): ``memcli doctor AGENT``
    reports it; ``--repair`` cuts it off, the file as it was before, a copy of it kept."""
    good = path.read_bytes()
    path.write_bytes(good + partial)
    result = cli("doctor", agent, "--json")
    assert result.exit_code == 1
    (found,) = orjson.loads(result.stdout)
    assert (found["code"], found["file"], found["line"], found["action"]) == \
        ("torn-tail", str(path), line, f"cut the {len(partial)} partial bytes off (a copy goes to {path.name}.corrupt-lines)")
    result = cli("doctor", agent, "--repair")
    assert result.exit_code == 0, result.stderr
    assert path.read_bytes() == good
    assert (path.parent / (path.name + ".corrupt-lines")).read_bytes() == partial + b"\n"


def doctor_moves_a_bad_first_line_aside(cli, memory_dir: Path, agent: str, path: Path, bad: bytes, code: str,
                                        message: str) -> None:
    """``memcli doctor AGENT`` reports ``path``'s first line (``bad``, a line that is not a record
    of that file) as ``code`` with ``message``, changing nothing; ``--repair`` moves it, byte for
    byte, to ``<file>.corrupt-lines``, and doctor then finds no problem."""
    good = path.read_bytes()[len(bad):]
    before = tree_digest(memory_dir)
    result = cli("doctor", agent, "--json")
    assert result.exit_code == 1
    (found,) = orjson.loads(result.stdout)
    assert (found["severity"], found["code"], found["file"], found["line"], found["fixable"], found["action"]) == \
        ("error", code, str(path), 1, True, f"move the line to {path.name}.corrupt-lines")
    assert found["message"].startswith(message)
    assert tree_digest(memory_dir) == before          # looking changes nothing
    result = cli("doctor", agent, "--repair")
    assert result.exit_code == 0, result.stderr
    assert f"memcli: repaired: {path.name}: moved line 1 ({code}) to {path.name}.corrupt-lines" \
        in result.stderr.splitlines()
    assert path.read_bytes() == good
    assert (path.parent / (path.name + ".corrupt-lines")).read_bytes() == bad
    assert cli("doctor", agent).stderr == f"memcli: doctor: agent '{agent}': no problems\n"


def refused_for_a_bad_first_line(result, path: Path, agent: str, reason: str, command: str, what: str,
                                 written: str = "nothing was written") -> None:
    """``command`` refused (exit 1) to append to ``path`` while its first line is not ``what``
    (memcli.store.jsonl.refusing_bad_lines): the line named with ``reason``, what was written
    (nothing, unless said), and the repair that moves the line aside."""
    assert result.exit_code == 1, result.stderr
    first, hint = result.stderr.splitlines()[:2]
    assert first.startswith(f"memcli: error: {path}:1: {reason}")
    assert first.endswith(f"; {command} appends to this file and refuses while a line of it is not {what}; {written}")
    assert hint == (f"  hint: run `memcli doctor {agent} --repair` (it moves the line to {path.name}.corrupt-lines), "
                    f"then {command} again")
