"""Search that answers questions (issue 25): stop words, identifiers kept whole, one ranked list
(coverage and proximity first, the rest padding the page), identical texts collapsed, every
matched term highlighted, ``--recent``, forgotten/superseded items marked and left out unless
``--history``, and bad queries refused."""

from __future__ import annotations

import orjson
import pytest

from memcli.search.query import parse_query
from tests.helpers import ok, tree_digest

T0 = 1_767_261_600.0


def hits(cli, agent, *args):
    return [orjson.loads(line) for line in ok(cli("search", agent, *args, "--ndjson")).stdout.splitlines()]


def ids(cli, agent, *args):
    return [h["id"] for h in hits(cli, agent, *args)]


def traces(*texts, gap=60.0):
    """One user trace per text, with ids u1, u2, ... and increasing times."""
    return [{"id": f"u{i}", "trace_type": "user", "content": text, "ts": T0 + i * gap}
            for i, text in enumerate(texts, 1)]


def test_stop_words_are_dropped_outside_quotes_and_identifiers_are_kept_whole():
    q = parse_query("What did we decide about the retry_policy in src/app.py? \"the build\" didn't")
    assert [t.text for t in q.terms] == ["decide", "retry_policy", "src/app.py", '"the build"']
    assert q.dropped == ("what", "did", "we", "about", "the", "in", "didn't".replace("'", ""))
    assert q.match_any() == '"decide" OR "retry policy" OR "src app py" OR "the build"'
    # a stop word inside an identifier stays
    assert [t.words for t in parse_query("is_open os.path.join").terms] == [("is", "open"), ("os", "path", "join")]
    assert [t.text for t in parse_query("the user's retries").terms] == ["users", "retries"]


def test_a_question_finds_the_answer_not_the_lines_that_share_its_stop_words(cli):
    ok(cli("ingest", "q", input=traces(
        "What did it look like? What did you see there?",
        "We decided the retry policy: three retries with exponential backoff.",
        "Retries are noisy in the logs.",
        "What did the build say?",
    )))
    top = hits(cli, "q", "What did the user decide about retries?")
    assert top[0]["id"] == "u2"
    assert "u1" not in [h["id"] for h in top]          # only stop words in common
    assert top[0]["snippet"] == ("We **decided** the **retry** policy: three **retries** with exponential backoff.")


def test_records_with_every_word_first_then_the_rest_fill_the_page(cli):
    ok(cli("ingest", "pad", input=traces(
        "alpha beta gamma together",
        "only alpha here",
        "beta on its own",
        "gamma gamma gamma gamma gamma gamma",
        "nothing relevant",
    )))
    found = ids(cli, "pad", "alpha beta gamma")
    assert found[0] == "u1" and set(found) == {"u1", "u2", "u3", "u4"}
    result = ok(cli("search", "pad", "alpha zeta"))
    assert "no record has every word (alpha, zeta); showing records with any of them" in result.stderr


def test_proximity_ranks_words_standing_together_first(cli):
    filler = " ".join(["filler"] * 60)
    ok(cli("ingest", "near", input=traces(
        f"the deploy step {filler} then the rollback happened",
        f"{filler} deploy rollback was quick {filler}",
    )))
    assert ids(cli, "near", "deploy rollback")[0] == "u2"


def test_identical_texts_are_one_hit_with_a_count(cli):
    events = traces(*(["Command completed successfully with exit code 0"] * 5 + ["exit code 1: build failed"]))
    ok(cli("ingest", "dup", input=events))
    found = hits(cli, "dup", "exit code")
    assert [(h["id"], h["count"]) for h in found] == [("u5", 5), ("u6", 1)] or \
        [(h["id"], h["count"]) for h in found] == [("u6", 1), ("u5", 5)]
    human = ok(cli("search", "dup", "exit code")).stdout
    assert "x5 identical" in human


def test_every_matched_term_is_highlighted(cli):
    ok(cli("ingest", "hl", input=traces("The Deploys failed because the deploy key expired; rotate keys before deploying.")))
    [hit] = hits(cli, "hl", "deploy keys")
    assert hit["snippet"] == ("The **Deploys** failed because the **deploy** **key** expired; rotate **keys** before "
                              "**deploying**.")


def test_recent_weighs_newer_records_up(cli):
    day = 86400.0
    ok(cli("ingest", "rec", input=traces("database migration plan: migration steps and migration order",
                                         "database migration done", gap=30 * day)))
    assert ids(cli, "rec", "migration")[0] == "u1"           # more occurrences
    assert ids(cli, "rec", "migration", "--recent")[0] == "u2"   # a month newer


def test_forgotten_and_superseded_items_are_left_out_unless_history_and_marked(cli):
    ok(cli("ingest", "f", input=traces("hello")))
    old = orjson.loads(ok(cli("remember", "f", "Deploys go out on Tuesdays", "--json")).stdout)["id"]
    new = orjson.loads(ok(cli("remember", "f", "Deploys go out on Thursdays", "--supersedes", old, "--json")).stdout)
    gone = orjson.loads(ok(cli("remember", "f", "Deploy window is 9-11", "--json")).stdout)["id"]
    tomb = orjson.loads(ok(cli("forget", "f", gone, "--json")).stdout)["id"]
    assert ids(cli, "f", "deploys") == [new["id"]]
    every = {h["id"]: (h["status"], h["superseded_by"]) for h in hits(cli, "f", "deploys", "--history")}
    assert every == {new["id"]: ("live", None), old: ("superseded", new["id"]), gone: ("forgotten", tomb)}
    human = ok(cli("search", "f", "deploys", "--history")).stdout
    assert f"[superseded by {new['id']}]" in human and f"[forgotten by {tomb}]" in human


def test_memory_search_leaves_forgotten_facts_out_unless_history(memory_dir, cli):
    from memcli.mcp.tools import MemoryTools

    ok(cli("ingest", "m", input=traces("hello")))
    fact = orjson.loads(ok(cli("remember", "m", "The API key rotates monthly", "--json")).stdout)["id"]
    ok(cli("forget", "m", fact))
    tools = MemoryTools(memory_dir, None)
    assert tools.search("m", "api key rotates")["hits"] == []
    [hit] = tools.search("m", "api key rotates", history=True)["hits"]
    assert (hit["id"], hit["status"]) == (fact, "forgotten")


@pytest.mark.parametrize("query, message", [
    ("", "has no word to search for"),
    ("  ?! ", "has no word to search for"),
    ("what did you do", "has only common words (what, did, you, do)"),
])
def test_an_empty_or_stop_word_query_is_exit_2_and_changes_nothing(cli, memory_dir, query, message):
    ok(cli("ingest", "e", input=traces("hello world")))
    before = tree_digest(memory_dir / "agents" / "e")
    result = cli("search", "e", query)
    assert result.exit_code == 2 and message in result.stderr
    assert tree_digest(memory_dir / "agents" / "e") == before


def test_a_quoted_stop_word_phrase_is_searched(cli):
    ok(cli("ingest", "qp", input=traces("to be or not to be", "be quick")))
    assert ids(cli, "qp", '"to be"') == ["u1"]


def test_the_python_api_takes_the_same_options(memory_dir, cli):
    import memcli

    ok(cli("ingest", "api", input=traces("alpha beta")))
    fact = orjson.loads(ok(cli("remember", "api", "alpha fact", "--json")).stdout)["id"]
    ok(cli("forget", "api", fact))
    agent = memcli.Memory(memory_dir).agent("api")
    assert [h.id for h in agent.search("alpha").hits] == ["u1"]
    assert fact in [h.id for h in agent.search("alpha", history=True, recent=True).hits]
    with pytest.raises(memcli.MemcliError, match="only common words"):
        agent.search("what is it")


def test_boilerplate_matching_hundreds_of_times_does_not_crowd_out_the_rest(cli):
    # 250 identical lines outrank the one that matters by BM25 (shorter): they are one hit, and
    # the search reads on past them so the page still has the others
    events = traces(*(["The manager script needs a version bump."] * 250))
    events.insert(0, {"id": "boss", "trace_type": "user", "ts": T0, "content":
                      "My manager is Bruno Diaz and she wants weekly status reports, in writing, every Friday."})
    ok(cli("ingest", "crowd", input=events))
    found = hits(cli, "crowd", "Who is my manager?")
    assert [(h["id"], h["count"]) for h in found] == [("u250", 250), ("boss", 1)]


def test_search_all_takes_the_same_options_and_refuses_a_stop_word_query_once(cli):
    ok(cli("ingest", "a1", input=traces("deploy the billing service")))
    ok(cli("ingest", "a2", input=traces("billing deploy failed")))
    fact = orjson.loads(ok(cli("remember", "a2", "billing deploys are frozen", "--json")).stdout)["id"]
    ok(cli("forget", "a2", fact))
    found = [orjson.loads(line) for line in ok(cli("search", "--all", "billing deploy", "--ndjson")).stdout.splitlines()]
    assert {h["agent"] for h in found} == {"a1", "a2"} and fact not in {h["id"] for h in found}
    found = [orjson.loads(line) for line in
             ok(cli("search", "--all", "billing deploy", "--history", "--ndjson")).stdout.splitlines()]
    assert {h["id"]: h["status"] for h in found}[fact] == "forgotten"
    result = cli("search", "--all", "what was it")
    assert result.exit_code == 2 and result.stderr.count("only common words") == 1
