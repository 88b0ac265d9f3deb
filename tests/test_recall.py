"""The snapshot's memory bundle: pinned facts first, and ``--recall QUERY|auto`` choosing live
summaries and facts by relevance within ``--memory-tokens`` (fixture: tests/inspect_fixtures.py;
live items there: ep_3, sem_2, sem_3)."""

from __future__ import annotations

import json

import pytest

from tests.helpers import ok
from tests.inspect_fixtures import build_fixture_store


@pytest.fixture
def fx(memory_dir):
    return build_fixture_store(memory_dir)


def bundle(text: str) -> tuple[list[str], list[str]]:
    """(episodic lines, semantic lines) of a text snapshot's memory bundle."""
    episodic, semantic, section = [], [], None
    for line in text.splitlines():
        if line.startswith("[MEMORY:EPISODIC]"):
            section = episodic
        elif line.startswith("[MEMORY:SEMANTIC]"):
            section = semantic
        elif line.startswith("["):
            section = None
        elif section is not None and line.strip() and line.strip() != "(none)":
            section.append(line)
    return episodic, semantic


def remember(cli, text, *flags):
    return json.loads(ok(cli("remember", "fx", text, *flags, "--json")).stdout)["id"]


def test_pinned_facts_come_first_in_the_default_bundle(cli, fx):
    before = bundle(ok(cli("snapshot", "fx", "-p", "text")).stdout)
    assert before == (["1) Set up the project and read the README."],
                      ["- Tests live in tests/.", "- The project uses pytest with xdist."])
    remember(cli, "Never deploy on Fridays.", "--pin")
    remember(cli, "The API is on port 8080.")
    _, semantic = bundle(ok(cli("snapshot", "fx", "-p", "text")).stdout)
    assert semantic == ["- Never deploy on Fridays.", "- Tests live in tests/.", "- The project uses pytest with xdist.",
                        "- The API is on port 8080."]


def test_recall_picks_matching_live_items_and_says_why(cli, fx):
    pin = remember(cli, "Never deploy on Fridays.", "--pin")
    port = remember(cli, "The API is on port 8080.")
    result = ok(cli("snapshot", "fx", "-p", "text", "--recall", "pytest xdist"))
    episodic, semantic = bundle(result.stdout)
    # sem_1 matches too but is superseded; sem_2 and the port fact do not match
    assert semantic == ["- Never deploy on Fridays.", "- The project uses pytest with xdist."]
    assert episodic == ["1) Set up the project and read the README."]  # the most recent summary
    note = next(line for line in result.stderr.splitlines() if "recall 'pytest xdist'" in line)
    assert note.startswith(f"memcli: note: recall 'pytest xdist': {pin} (pinned), sem_3 (score ")
    assert "ep_3 (most recent summary)" in note and port not in note
    assert note.endswith(" of 2,000 memory tokens")


def test_recall_any_word_and_determinism(cli, fx):
    remember(cli, "The API is on port 8080.")
    first = ok(cli("snapshot", "fx", "-p", "text", "--recall", "port README zebra"))
    second = ok(cli("snapshot", "fx", "-p", "text", "--recall", "port README zebra"))
    assert first.stdout == second.stdout and first.stderr == second.stderr
    episodic, semantic = bundle(first.stdout)
    assert semantic == ["- The API is on port 8080."] and episodic == ["1) Set up the project and read the README."]


def test_recall_auto_uses_the_latest_user_ask(cli, fx):
    prod = remember(cli, "Production rollouts need a change ticket.")
    remember(cli, "The API is on port 8080.")
    result = ok(cli("snapshot", "fx", "-p", "text", "--recall", "auto"))
    assert bundle(result.stdout)[1][0] == "- Production rollouts need a change ticket."  # the best match first
    assert "recall 'Deploy it to production. Check every service" in result.stderr and prod in result.stderr


def test_the_budget_bounds_what_recall_adds_but_never_drops_pinned(cli, fx):
    long_pin = remember(cli, "Pinned: " + "always be careful " * 40, "--pin")
    result = ok(cli("snapshot", "fx", "-p", "text", "--recall", "pytest tests", "--memory-tokens", "20"))
    episodic, semantic = bundle(result.stdout)
    assert episodic == [] and len(semantic) == 1 and semantic[0].startswith("- Pinned: always")
    assert f"{long_pin} (pinned)" in result.stderr
    assert "did not fit the 20-token budget" in result.stderr
    assert "recall: 2 more matching items did not fit --memory-tokens 20" in result.stderr  # sem_3, sem_2


def test_recall_auto_without_a_user_ask_falls_back(cli, memory_dir):
    ok(cli("remember", "solo", "Only a fact here."))
    result = ok(cli("snapshot", "solo", "-p", "text", "--recall", "auto"))
    assert bundle(result.stdout)[1] == ["- Only a fact here."]
    assert "recall auto: no user ask in the active history" in result.stderr


def test_bad_recall_options_are_usage_errors(cli, fx):
    assert cli("snapshot", "fx", "--recall", " ").exit_code == 2
    assert cli("snapshot", "fx", "--recall", "x", "--memory-tokens", "-1").exit_code == 2
