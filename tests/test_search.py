"""``memcli search`` and its index, ``get`` by tool_call_id, ``remember`` / ``forget``, and the
doctor's view of the index — on the known fixture store (tests/inspect_fixtures.py)."""

from __future__ import annotations

import json
import os
import stat

import orjson
import pytest

from memcli.search.query import parse_query
from memcli.store import search_index
from memcli.store.agent import AgentStore
from tests.helpers import ok, read_jsonl, tree_digest
from tests.inspect_fixtures import ACTIVE, ARCHIVE, BASE, SEMANTIC, build_fixture_store


@pytest.fixture
def fx(memory_dir):
    return build_fixture_store(memory_dir)


def data_files(root):
    """Digests of the agent's data files (caches such as .state.json may be written by any write)."""
    return {k: v for k, v in tree_digest(root).items() if not k.startswith(".")}


def hits(cli, *args):
    return [orjson.loads(line) for line in ok(cli("search", *args, "--ndjson")).stdout.splitlines()]


def ids(cli, *args):
    return [h["id"] for h in hits(cli, *args)]


# ------------------------------------------------------------------------------------ query parsing

def test_query_terms_phrases_and_prefixes_are_always_quoted():
    q = parse_query('deploy "read the config" compact* AND NEAR( -x a:b "unbalanced')
    assert [t.text for t in q.terms] == ["deploy", '"read the config"', "compact*", "near", "x", "a:b", "unbalanced"]
    assert q.match_any() == ('"deploy" OR "read the config" OR "compact"* OR "near" OR "x" OR "a b" OR "unbalanced"')
    assert q.dropped == ("and",)
    assert parse_query("*** -- ()").empty
    assert [t.text for t in parse_query("test test TEST").terms] == ["test"]


# ------------------------------------------------------------------------------------ search

def test_a_hit_names_where_the_record_is_and_shows_the_match(cli, fx):
    [hit] = hits(cli, "fx", "README", "--kind", "trace")
    assert hit == {"id": "a5", "kind": "trace", "tier": "archive", "turn": "turn_0002", "ts": BASE + 600,
                   "trace_type": "user", "tool_name": None, "score": hit["score"],
                   "snippet": "What is in **README**?", "count": 1, "status": "live", "superseded_by": None}
    assert hit["score"] > 0
    # every hit expands with get
    assert orjson.loads(ok(cli("get", "fx", hit["id"], "--json")).stdout)["id"] == "a5"


def test_every_kind_is_searched_and_kind_filters(cli, fx):
    assert sorted(ids(cli, "fx", "README")) == ["a5", "ep_3"]            # ep_2 is superseded by ep_3
    assert sorted(ids(cli, "fx", "README", "--history")) == ["a5", "ep_2", "ep_3"]
    assert ids(cli, "fx", "README", "--kind", "episodic") == sorted(ids(cli, "fx", "README", "--kind", "episodic"),
                                                                    key=lambda i: ids(cli, "fx", "README").index(i))
    assert set(ids(cli, "fx", "pytest", "--kind", "semantic")) == {"sem_3"}             # sem_1: superseded
    assert set(ids(cli, "fx", "pytest", "--kind", "semantic", "--history")) == {"sem_1", "sem_3"}
    assert ids(cli, "fx", "pytest", "--kind", "trace") == []
    assert cli("search", "fx", "x", "--kind", "nope").exit_code == 2


def test_tool_names_arguments_results_and_errors_are_searchable(cli, fx):
    assert ids(cli, "fx", "deploy", "--kind", "trace")[0] in ("t14", "t13")
    assert "t14" in ids(cli, "fx", "deploy", "--kind", "trace")
    assert ids(cli, "fx", "config.toml") == ["t04"]
    assert ids(cli, "fx", '"2 failed"') == ["t06"]
    assert ids(cli, "fx", "debug = true", "--kind", "trace") == ["t05", "t07"]   # t07 has "debug" alone


def test_one_ranked_list_every_word_first_then_records_with_some(cli, fx):
    result = ok(cli("search", "fx", "README project", "--ndjson"))
    # only ep_3 has both; the records with one of the words fill the rest of the page
    assert [orjson.loads(line)["id"] for line in result.stdout.splitlines()][0] == "ep_3"
    assert set(ids(cli, "fx", "README project")) == {"ep_3", "a5", "a1", "sem_3"}
    assert "no record has every word" not in result.stderr
    result = ok(cli("search", "fx", "README zebra", "--ndjson"))
    assert {orjson.loads(line)["id"] for line in result.stdout.splitlines()} == {"a5", "ep_3"}
    assert "no record has every word (readme, zebra); showing records with any of them" in result.stderr


def test_phrases_and_prefixes(cli, fx):
    assert ids(cli, "fx", '"all passed"') == ["t10"]
    assert ids(cli, "fx", '"passed all"') == []
    assert set(ids(cli, "fx", "deplo*", "--kind", "trace")) == {"t13", "t14"}


@pytest.mark.parametrize("query", ['"', "AND", "NEAR(", "a:b", "-x", "((", "OR OR", "*x", "col:*", "^", "'",
                                   "\\", "😀 emoji", "NOT README"])
def test_fts_syntax_in_user_text_is_never_an_error(cli, fx, query):
    result = cli("search", "fx", query)
    assert result.exit_code in (0, 2), result.stderr
    assert "Traceback" not in result.stderr and "fts5" not in result.stderr.lower()


def test_a_query_without_words_is_a_usage_error(cli, fx):
    result = cli("search", "fx", "*** ()")
    assert result.exit_code == 2 and "has no word to search for" in result.stderr


def test_limit_since_until(cli, fx):
    assert len(ids(cli, "fx", "run_tests", "--limit", "2")) == 2
    # t03 and t09 are the same call (same text): one hit, the newer, counting 2
    assert set(ids(cli, "fx", "run_tests", "--kind", "trace")) == {"t06", "t09", "t10", "t11"}
    assert {h["id"]: h["count"] for h in hits(cli, "fx", "run_tests", "--kind", "trace")}["t09"] == 2
    assert set(ids(cli, "fx", "run_tests", "--since", str(BASE + 30 * 60))) == {"t09", "t10", "t11"}
    assert set(ids(cli, "fx", "run_tests", "--until", str(BASE + 23 * 60))) == {"t03"}
    assert cli("search", "fx", "x", "--since", "yesterday-ish").exit_code == 2


def test_unknown_agent_is_exit_3(cli, fx):
    assert cli("search", "nobody", "x").exit_code == 3


def test_human_view_two_lines_per_hit(cli, fx):
    result = ok(cli("search", "fx", '"all passed"'))
    lines = result.stdout.splitlines()
    assert lines[0].split()[1:] == ["t10", "trace", "(active)", "turn_0004", "2026-03-02T09:32:00Z", "tool_result",
                                    "run_tests"]
    assert lines[1].strip() == "run_tests **all passed**"


# ------------------------------------------------------------------------------------ the index

def test_the_index_is_a_hidden_0600_file_that_catches_up_by_offset(cli, fx):
    ok(cli("search", "fx", "README"))
    index = fx / ".search.sqlite"
    assert stat.S_IMODE(index.stat().st_mode) == 0o600
    before = index.stat().st_mtime_ns, index.stat().st_size
    # ingest never touches the index
    ok(cli("ingest", "fx", input=[{"trace_type": "user", "content": "The zebra escaped."}]))
    assert (index.stat().st_mtime_ns, index.stat().st_size) == before
    assert len(ids(cli, "fx", "zebra")) == 1
    conn = search_index.connect(AgentStore(fx.parent.parent, "fx").paths)
    counts = {name: search_index.count_rows(conn, name) for name in search_index.FILE_NUMBERS}
    conn.close()
    assert counts == {"active": len(ACTIVE) + 1, "archive": len(ARCHIVE), "episodic": 3, "semantic": 3}


def test_a_rewritten_file_is_indexed_again(cli, fx):
    assert ids(cli, "fx", "Try again") == ["t08"]
    # another active file in place (as compaction or doctor --repair write it): a new inode
    path = fx / "raw_traces.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    tmp = fx / "tmp"
    tmp.write_bytes(b"".join(line for line in lines if b'"t08"' not in line))
    os.replace(tmp, path)
    assert ids(cli, "fx", "Try again") == []
    # truncated in place and other lines appended (an interrupted ingest rolled back, then a new one)
    with open(path, "r+b") as f:
        f.truncate(len(lines[0]))
    with open(path, "ab") as f:
        f.write(orjson.dumps({**ACTIVE[1], "id": "t99", "content": "Different words entirely."}) + b"\n")
    assert ids(cli, "fx", "different words") == ["t99"]
    assert ids(cli, "fx", "config.toml") == []


def test_the_archive_rewritten_rebuilds_the_index(cli, fx):
    ok(cli("search", "fx", "README"))
    path = fx / "raw_traces_archive.jsonl"
    data = path.read_bytes()
    tmp = fx / "tmp"
    tmp.write_bytes(data.replace(b"README", b"MANUAL"))
    os.replace(tmp, path)
    result = ok(cli("search", "fx", "MANUAL", "--ndjson"))
    assert {orjson.loads(line)["id"] for line in result.stdout.splitlines()} == {"a5"}
    assert "rebuilt the search index" in result.stderr


def test_lines_of_an_unfinished_ingest_are_not_indexed(cli, fx):
    path = fx / "raw_traces.jsonl"
    size = path.stat().st_size
    (fx / ".ingest.pending").write_bytes(orjson.dumps({"active_size": size, "ids_count": 0, "state": {}}))
    with open(path, "ab") as f:
        f.write(orjson.dumps({**ACTIVE[1], "id": "t50", "content": "unacknowledged walrus"}) + b"\n")
    store = AgentStore(fx.parent.parent, "fx")
    conn = search_index.connect(store.paths)
    search_index.catch_up(store.paths, conn)
    assert search_index.covered_files(conn)["active"][1] == size
    conn.close()


def test_redacted_secrets_stay_redacted_in_the_index(cli, memory_dir):
    secret = "sk-ant-" + "A1b2C3d4" * 5
    ok(cli("ingest", "sec", input=[{"trace_type": "user", "content": f"my key is {secret} ok"}]))
    assert ids(cli, "sec", secret) == []
    assert ids(cli, "sec", "A1b2C3d4*") == []
    [hit] = hits(cli, "sec", "key")
    assert "[REDACTED:anthropic_key]" in hit["snippet"] and secret not in hit["snippet"]
    index = (memory_dir / "agents" / "sec" / ".search.sqlite")
    raw = index.read_bytes() + (index.with_name(".search.sqlite-wal").read_bytes()
                                if index.with_name(".search.sqlite-wal").exists() else b"")
    assert b"A1b2C3d4" not in raw.lower() and b"a1b2c3d4" not in raw.lower()


def test_clear_removes_the_index(cli, fx):
    ok(cli("search", "fx", "README"))
    ok(cli("clear", "fx", "--keep-memory", "--yes"))
    assert not (fx / ".search.sqlite").exists()
    assert ids(cli, "fx", "README") == ["ep_3"] and set(ids(cli, "fx", "README", "--history")) == {"ep_2", "ep_3"}
    ok(cli("clear", "fx", "--yes"))
    assert not fx.exists()


def index_findings(result):
    return [f for f in json.loads(result.stdout) if f["code"] == "search-index"]


def test_a_corrupt_index_is_reported_and_repaired_by_doctor(cli, fx):
    ok(cli("search", "fx", "README"))
    index = fx / ".search.sqlite"
    for suffix in ("-wal", "-shm"):
        index.with_name(index.name + suffix).unlink(missing_ok=True)
    index.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    data_before = {k: v for k, v in tree_digest(fx).items() if not k.startswith(".search")}
    [finding] = index_findings(cli("doctor", "fx", "--json"))
    assert finding["severity"] == "warning" and finding["fixable"] and not finding["fixed"]
    result = ok(cli("doctor", "fx", "--repair", "--json"))
    [finding] = index_findings(result)
    assert finding["fixed"]
    assert "rebuilt the search index (26 records)" in result.stderr
    assert index_findings(cli("doctor", "fx", "--json")) == []
    assert {k: v for k, v in tree_digest(fx).items() if not k.startswith(".search")} == data_before
    assert ids(cli, "fx", '"all passed"') == ["t10"]


def test_a_drifted_index_is_reported(cli, fx):
    ok(cli("search", "fx", "README"))
    store = AgentStore(fx.parent.parent, "fx")
    conn = search_index.connect(store.paths)
    lo, _ = search_index.file_range("archive")
    conn.execute("DELETE FROM rows WHERE rowid = ?", (lo + 0,))
    conn.close()
    [finding] = index_findings(cli("doctor", "fx", "--json"))
    assert "has drifted: 5 records indexed for raw_traces_archive.jsonl, which holds 6" in finding["message"]


def test_search_rebuilds_an_unusable_index_itself(cli, fx):
    (fx / ".search.sqlite").write_bytes(b"not a database at all" * 100)
    result = ok(cli("search", "fx", '"all passed"', "--ndjson"))
    assert [orjson.loads(line)["id"] for line in result.stdout.splitlines()] == ["t10"]
    assert "not a usable search index" in result.stderr and "rebuilt it" in result.stderr


# ------------------------------------------------------------------------------------ get by tool_call_id

def test_get_by_tool_call_id_shows_call_and_result(cli, fx):
    result = ok(cli("get", "fx", "c2", "--json"))
    doc = json.loads(result.stdout)
    assert doc["tool_call_id"] == "c2" and doc["ambiguous"] is False
    [i] = doc["interactions"]
    assert (i["status"], i["call"]["id"], i["result"]["id"], i["call_tier"], i["result_tier"]) == \
        ("SUCCESS", "t04", "t05", "active", "active")
    assert i["result"]["tool_result"] == {"text": "debug = true"}
    assert result.stderr == "memcli: c2 is a tool call id: its call and result\n"


def test_get_by_a_reused_tool_call_id_says_it_is_ambiguous(cli, fx):
    result = ok(cli("get", "fx", "c1", "--json"))
    doc = json.loads(result.stdout)
    assert doc["ambiguous"] is True
    assert [(i["call"]["id"], i["result"]["id"], i["status"], i["call_tier"]) for i in doc["interactions"]] == [
        ("a2", "a3", "SUCCESS", "archive"), ("t03", "t06", "ERROR", "active"), ("t09", "t10", "SUCCESS", "active")]
    assert "c1 is a tool call id used by 3 calls (the source reused it): all 3 are shown" in result.stderr


def test_get_pending_call_and_unknown_id(cli, fx):
    doc = json.loads(ok(cli("get", "fx", "c3", "--json")).stdout)
    assert doc["interactions"][0]["status"] == "PENDING" and doc["interactions"][0]["result"] is None
    result = cli("get", "fx", "nothing-like-it")
    assert result.exit_code == 3 and "no record with id 'nothing-like-it'" in result.stderr


# ------------------------------------------------------------------------------------ remember / forget

def test_remember_appends_a_fact_exactly(cli, fx):
    result = ok(cli("remember", "fx", "  Staging lives at staging.example.com  ", "--tag", "infra", "--json"))
    record = json.loads(result.stdout)
    stored = read_jsonl(fx / "semantic.jsonl")
    assert stored[:3] == SEMANTIC and stored[3] == record
    assert list(record) == ["id", "ts", "fact", "tags", "confidence", "salience", "source"]
    assert record["id"].startswith("sem_") and record["fact"] == "Staging lives at staging.example.com"
    assert (record["tags"], record["confidence"], record["salience"], record["source"]) == (["infra"], 1.0, 0.5,
                                                                                             "remember")
    assert f"remembered {record['id']} in 'fx'" in result.stderr
    assert ids(cli, "fx", "staging", "--kind", "semantic") == [record["id"]]


def test_remember_pin_supersedes_and_redacts(cli, fx):
    secret = "ghp_" + "x" * 36
    result = ok(cli("remember", "fx", f"CI token is {secret}", "--pin", "--supersedes", "sem_2", "--json"))
    record = json.loads(result.stdout)
    assert record["tags"] == ["pinned"] and record["salience"] == 1.0 and record["supersedes"] == ["sem_2"]
    assert record["fact"] == "CI token is [REDACTED:github_token]"
    assert "(pinned), superseding sem_2; redacted 1 secret" in result.stderr
    live = [e["id"] for e in json.loads(ok(cli("memory", "fx", "--tier", "semantic", "--json")).stdout)]
    assert live == ["sem_3", record["id"]]


def test_remember_refuses_bad_input_and_leaves_files_alone(cli, fx):
    before = tree_digest(fx)
    assert cli("remember", "fx", "   ").exit_code == 2
    assert cli("remember", "fx", "x", "--supersedes", "ep_1").exit_code == 2
    assert cli("remember", "fx", "x", "--supersedes", "t01").exit_code == 2
    result = cli("remember", "fx", "x", "--supersedes", "sem_404")
    assert result.exit_code == 3 and "no fact with id 'sem_404'" in result.stderr
    assert cli("remember", "fx", "x", "--tag", " ").exit_code == 2
    after = tree_digest(fx)
    assert {k: v for k, v in after.items() if not k.startswith(".")} == \
        {k: v for k, v in before.items() if not k.startswith(".")}


def test_remember_creates_a_new_agent(cli, memory_dir):
    ok(cli("remember", "fresh", "Hello"))
    assert [r["fact"] for r in read_jsonl(memory_dir / "agents" / "fresh" / "semantic.jsonl")] == ["Hello"]


def test_forget_writes_a_tombstone_and_every_reader_skips_both(cli, fx):
    result = ok(cli("forget", "fx", "sem_2", "--reason", "moved to src/tests", "--json"))
    tomb = json.loads(result.stdout)
    assert tomb["supersedes"] == ["sem_2", tomb["id"]] and tomb["tags"] == ["forgotten"]
    assert tomb["fact"] == "(forgotten sem_2: moved to src/tests)"
    assert (tomb["forgotten"], tomb["reason"], tomb["source"]) == ("sem_2", "moved to src/tests", "forget")
    assert read_jsonl(fx / "semantic.jsonl")[-1] == tomb
    assert [e["id"] for e in json.loads(ok(cli("memory", "fx", "--json")).stdout)] == ["ep_3", "sem_3"]
    _, semantic = AgentStore(fx.parent.parent, "fx").live_memory()
    assert [i.id for i in semantic] == ["sem_3"]
    # a summary too, in its own file
    tomb2 = json.loads(ok(cli("forget", "fx", "ep_3", "--json")).stdout)
    assert read_jsonl(fx / "episodic.jsonl")[-1] == tomb2 and tomb2["summary"] == "(forgotten ep_3)"
    assert AgentStore(fx.parent.parent, "fx").live_memory()[0] == []


def test_forget_what_is_already_superseded_writes_nothing(cli, fx):
    before = data_files(fx)
    result = ok(cli("forget", "fx", "sem_1"))
    assert "sem_1 is already superseded by sem_3: nothing written" in result.stderr
    assert data_files(fx) == before


def test_forget_refuses_traces_and_unknown_ids(cli, fx):
    before = data_files(fx)
    result = cli("forget", "fx", "t01")
    assert result.exit_code == 2 and "is a trace (active)" in result.stderr
    assert cli("forget", "fx", "sem_404").exit_code == 3
    assert cli("forget", "nobody", "sem_1").exit_code == 3
    assert data_files(fx) == before


# ------------------------------------------------------------------------------------ the Python API

def test_the_python_api_searches_remembers_and_forgets(fx):
    import memcli

    agent = memcli.Memory(fx.parent.parent).agent("fx")
    result = agent.search("README", kind="trace")
    assert [h.id for h in result.hits] == ["a5"] and result.mode == "all"
    assert [h.id for h in agent.search("run_tests", since=BASE + 30 * 60, limit=1).hits] in (["t09"], ["t10"], ["t11"])
    record = agent.remember("Releases are tagged vX.Y.", tags=["release"], pin=True)
    assert record["tags"] == ["pinned", "release"] and read_jsonl(fx / "semantic.jsonl")[-1] == record
    tomb = agent.forget(record["id"], reason="obsolete")
    assert tomb["supersedes"] == [record["id"], tomb["id"]]
    assert agent.forget(record["id"]) is None  # already superseded: nothing written
    with pytest.raises(memcli.MemcliError, match="limit"):
        agent.search("x", limit=0)


def test_a_broad_query_ranks_only_the_newest_matches(cli, fx, monkeypatch):
    from memcli.search import engine

    monkeypatch.setattr(engine, "BROAD_MATCHES", 3)
    result = ok(cli("search", "fx", "run_tests", "--ndjson", "--kind", "trace"))
    # five traces match; the three newest (highest rowids: the end of the active file) are ranked
    assert {orjson.loads(line)["id"] for line in result.stdout.splitlines()} == {"t09", "t10", "t11"}
    assert "more than 3 records match run_tests: ranked the 3 newest of them" in result.stderr
    # a time filter searches everything (no boundary)
    assert len(ids(cli, "fx", "run_tests", "--since", "0", "--kind", "trace")) == 4   # t03 = t09: one hit
    monkeypatch.setattr(engine, "BROAD_MATCHES", 5)
    assert len(ids(cli, "fx", "run_tests", "--kind", "trace")) == 4
    assert "more than" not in ok(cli("search", "fx", "run_tests", "--kind", "trace")).stderr
