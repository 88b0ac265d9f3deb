"""The shared PostgreSQL store (``push``, ``pull``, ``search --remote``, ``mcp --remote``) against a
real server (tests/pg_server.py: skipped where PostgreSQL is missing, failing under CI)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import orjson
import psycopg
import pytest

import memcli
from tests.helpers import REPO, proc_env, read_jsonl, run_memcli, store_digest


def sample(memory_dir, *agents):
    """The committed sample agents, compacted once, with a working-memory file and a fact."""
    for agent in agents or ("coder", "support"):
        shutil.copytree(REPO / "sample_memory" / "agents" / agent, memory_dir / "agents" / agent)
    mem = memcli.Memory(memory_dir)
    coder = mem.agent("coder")
    coder.compact()
    coder.memory_tool({"command": "create", "path": "/memories/notes.md", "file_text": "use the SPRING10 code\n"})
    coder.remember("Discount codes live in pricing.py", tags=["pricing"])
    return mem


def rows(url, sql="SELECT count(*) FROM memcli_records", *args):
    with psycopg.connect(url) as conn:
        return conn.execute(sql, args).fetchall()


def local_counts(memory_dir, agent):
    """data file -> records, as the local files hold them."""
    from memcli.store.layout import DATA_FILES

    base = memory_dir / "agents" / agent
    counts = {name: len(read_jsonl(base / name)) for name in DATA_FILES if (base / name).exists()}
    return {name: n for name, n in counts.items() if n}     # an emptied file has no rows remotely


def remote_counts(url, agent):
    return dict(rows(url, """SELECT r.file, count(*) FROM memcli_records r JOIN memcli_agents a USING (agent_key)
                             WHERE a.name = %s GROUP BY r.file""", agent))


def events(n, start=0, word="alpha"):
    out = []
    for i in range(start, start + n):
        out.append({"id": f"u{i}", "trace_type": "user", "content": f"question {i} about {word} number{i}"})
        out.append({"id": f"a{i}", "trace_type": "assistant", "content": f"answer {i} for {word}"})
    return out


# ---------------------------------------------------------------------------- push and pull

def test_pull_restores_an_agent_whose_export_is_byte_identical(memory_dir, tmp_path, pg_url, cli):
    mem = sample(memory_dir)
    res = cli("push", "--all", "--to", pg_url, "--json")
    assert res.exit_code == 0, res.stderr
    pushed = orjson.loads(res.stdout)
    assert [p["agent"] for p in pushed] == ["coder", "support"]
    assert remote_counts(pg_url, "coder") == local_counts(memory_dir, "coder")
    other = tmp_path / "other"
    res = cli("--dir", other, "pull", "coder", "--from", pg_url)
    assert res.exit_code == 0, res.stderr
    for fmt in ("jsonl", "markdown"):
        assert mem.agent("coder").export(fmt, with_memory=True) == memcli.Memory(other).agent("coder").export(
            fmt, with_memory=True)
    for name, count in local_counts(memory_dir, "coder").items():
        assert (other / "agents/coder" / name).read_bytes() == (memory_dir / "agents/coder" / name).read_bytes(), name
        assert count
    assert memcli.Memory(other).agent("coder").memory_files() == {"/memories/notes.md": "use the SPRING10 code\n"}
    # an existing agent is never overwritten; --as restores under another name
    before = store_digest(other)
    res = cli("--dir", other, "pull", "coder", "--from", pg_url)
    assert res.exit_code == 1 and "already exists" in res.stderr and store_digest(other) == before
    assert cli("--dir", other, "pull", "coder", "--from", pg_url, "--as", "coder2").exit_code == 0


def test_a_second_push_adds_nothing_and_compaction_moves_are_reflected(memory_dir, pg_url):
    mem = memcli.Memory(memory_dir)
    agent = mem.agent("a")
    agent.ingest(events(300))
    first = mem.push(["a"], to=pg_url)
    assert first.records == 600 and first.agents[0].changed == 600
    again = mem.push(["a"], to=pg_url)
    assert again.records == 0 and again.agents[0].changed == 0
    assert rows(pg_url) == [(600,)]
    agent.compact(force=True)
    moved = mem.push(["a"], to=pg_url)
    assert moved.agents[0].rewritten == ["raw_traces.jsonl"]
    assert remote_counts(pg_url, "a") == local_counts(memory_dir, "a")
    tiers = dict(rows(pg_url, "SELECT tier, count(*) FROM memcli_records WHERE kind = 'trace' GROUP BY tier"))
    local = local_counts(memory_dir, "a")
    assert tiers == {"active": local["raw_traces.jsonl"], "archive": local["raw_traces_archive.jsonl"]}
    assert sum(tiers.values()) == 600
    # the ids are the local ids, each once
    archived = {r["id"] for r in read_jsonl(memory_dir / "agents/a/raw_traces_archive.jsonl")}
    assert {r[0] for r in rows(pg_url, "SELECT id FROM memcli_records WHERE tier = 'archive'")} == archived
    # cleared and written again: the rows it no longer has are gone
    agent.clear()
    agent.ingest(events(2, word="beta"))
    mem.push(["a"], to=pg_url)
    assert remote_counts(pg_url, "a") == {"raw_traces.jsonl": 4}


def test_every_data_file_is_carried_generically(memory_dir, pg_url, tmp_path, monkeypatch):
    """A data file added to layout.DATA_FILES later (a compaction ledger, say) is pushed and pulled
    without a change to memcli.remote."""
    from memcli.remote import pull as pull_mod
    from memcli.remote import push as push_mod
    from memcli.store import layout, restore

    files = layout.DATA_FILES + ("ledger.jsonl",)
    for module in (layout, push_mod, pull_mod, restore):
        monkeypatch.setattr(module, "DATA_FILES", files)
    monkeypatch.setattr(push_mod, "FILE_ORDER", (layout.ARCHIVE,) + tuple(f for f in files if f != layout.ARCHIVE))
    mem = memcli.Memory(memory_dir)
    mem.agent("a").ingest(events(2))
    ledger = memory_dir / "agents/a/ledger.jsonl"
    ledger.write_bytes(b'{"id": "cmp_1", "moved": 3}\n{"no_id": true}\n')
    mem.push(["a"], to=pg_url)
    memcli.Memory(tmp_path / "o").pull("a", from_=pg_url)
    assert (tmp_path / "o/agents/a/ledger.jsonl").read_bytes() == ledger.read_bytes()


# ---------------------------------------------------------------------------- interruptions

def line_offsets(path):
    """The byte offset of each line of a JSONL file."""
    offsets, pos = [], 0
    for line in path.read_bytes().splitlines(keepends=True):
        offsets.append(pos)
        pos += len(line)
    return offsets


def stored_position(url, file="raw_traces.jsonl"):
    found = rows(url, "SELECT pos FROM memcli_positions WHERE file = %s", file)
    return found[0][0] if found else 0


def test_kill_9_mid_push_then_the_next_push_completes_it_without_duplicates(memory_dir, tmp_path, pg_url):
    """Killed with several batches in flight (three connections): the stored position is a prefix
    of committed rows, the next push sends exactly what lies after it and adds what is missing, and
    a pull gives the file back byte for byte."""
    mem = memcli.Memory(memory_dir)
    mem.agent("big").ingest(events(2000))
    offsets = line_offsets(memory_dir / "agents/big/raw_traces.jsonl")
    env = {"MEMCLI_PUSH_BATCH_BYTES": "20000", "MEMCLI_PUSH_CONNECTIONS": "3", "MEMCLI_DIR": str(memory_dir)}
    for point in ("push:staged@3", "push:committed@5"):
        done = run_memcli("push", "big", "--to", pg_url, env={**env, "MEMCLI_CRASH_AT": point})
        assert done.returncode == -9, done.stderr
        stored = stored_position(pg_url)
        before = sum(1 for o in offsets if o < stored)
        assert rows(pg_url, "SELECT count(*) FROM memcli_records WHERE pos < %s", stored) == [(before,)]
    committed = rows(pg_url)[0][0]
    assert 0 < committed < 4000
    after = sum(1 for o in offsets if o >= stored_position(pg_url))
    done = run_memcli("push", "big", "--to", pg_url, "--json", env=env)
    assert done.returncode == 0, done.stderr
    pushed = orjson.loads(done.stdout)[0]
    assert pushed["records"] == after and pushed["changed"] == 4000 - committed   # resumed, not restarted
    assert rows(pg_url) == [(4000,)]
    assert rows(pg_url, "SELECT count(DISTINCT id) FROM memcli_records") == [(4000,)]
    assert stored_position(pg_url) == (memory_dir / "agents/big/raw_traces.jsonl").stat().st_size
    memcli.Memory(tmp_path / "o").pull("big", from_=pg_url)
    assert (tmp_path / "o/agents/big/raw_traces.jsonl").read_bytes() == (
        memory_dir / "agents/big/raw_traces.jsonl").read_bytes()


def test_batches_committed_out_of_order_leave_the_position_at_the_committed_prefix(memory_dir, pg_url, monkeypatch):
    """The first batch fails after later ones committed: the stored position stays before it, the
    next push adds exactly what is missing, and an id the file has twice keeps its later line
    although the batch with the earlier one is upserted after it."""
    import time

    from memcli.remote import push as push_mod

    monkeypatch.setattr(push_mod, "BATCH_BYTES", 20_000)
    monkeypatch.setattr(push_mod, "CONNECTIONS", 3)
    mem = memcli.Memory(memory_dir)
    mem.agent("big").ingest(events(1000))
    path = memory_dir / "agents/big/raw_traces.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    assert lines[200].startswith(b'{"id":"u100",')
    lines[200] = lines[200].replace(b'{"id":"u100",', b'{"id":"u0",')      # in the second batch
    path.write_bytes(b"".join(lines))
    original = push_mod._Pusher._stage_and_upsert

    def first_batch_fails_after_the_second_committed(self, cur, key, rows, **kw):
        if rows.split(b"\t", 4)[3] == b"0":
            deadline = time.monotonic() + 60
            while not rows_of(pg_url, "u0"):
                assert time.monotonic() < deadline, "the second batch never committed"
                time.sleep(0.02)
            original(self, cur, key, rows, **kw)
            raise RuntimeError("the process dies before the first batch commits")
        return original(self, cur, key, rows, **kw)

    monkeypatch.setattr(push_mod._Pusher, "_stage_and_upsert", first_batch_fails_after_the_second_committed)
    with pytest.raises(RuntimeError):
        mem.push(["big"], to=pg_url)
    committed = rows(pg_url)[0][0]
    assert 0 < committed < 1999 and stored_position(pg_url) == 0
    assert rows_of(pg_url, "u1") == [] and rows_of(pg_url, "u0") == [(lines[200].rstrip(b"\n").decode(),)]
    monkeypatch.setattr(push_mod._Pusher, "_stage_and_upsert", original)
    again = mem.push(["big"], to=pg_url)
    assert again.records == 2000 and again.agents[0].changed == 1999 - committed
    assert rows(pg_url) == [(1999,)] and stored_position(pg_url) == path.stat().st_size
    assert rows_of(pg_url, "u0") == [(lines[200].rstrip(b"\n").decode(),)]     # the later line


def rows_of(url, rid):
    return rows(url, "SELECT line FROM memcli_records WHERE id = %s", rid)


def test_a_lost_connection_mid_push_is_retried_from_the_last_commit(memory_dir, pg_url, monkeypatch):
    from memcli.remote import push as push_mod

    monkeypatch.setattr(push_mod, "BATCH_BYTES", 20_000)
    mem = memcli.Memory(memory_dir)
    mem.agent("big").ingest(events(1000))
    killed = []

    def progress(agent, n):
        if not killed:
            with psycopg.connect(pg_url, autocommit=True) as admin:
                killed.append(admin.execute("""SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE application_name = 'memcli' AND pid <> pg_backend_pid()""").fetchall())

    result = mem.push(["big"], to=pg_url, progress=progress)
    assert killed and killed[0] and result.agents[0].retries == 1
    assert rows(pg_url) == [(2000,)]
    # batches that committed beyond the stored position before the drop are sent again as no-ops
    assert result.records >= 2000 and result.agents[0].changed == 2000


# ---------------------------------------------------------------------------- many machines

def test_two_stores_pushing_the_same_agent_names_stay_apart(tmp_path, pg_url, cli):
    one, two = tmp_path / "one", tmp_path / "two"
    memcli.Memory(one).agent("coder").ingest(events(3, word="apples"))
    memcli.Memory(two).agent("coder").ingest(events(5, word="pears"))
    for store in (one, two):
        assert cli("--dir", store, "push", "coder", "--to", pg_url).exit_code == 0
    ids = {path: (path / ".store-id").read_text().strip() for path in (one, two)}
    assert ids[one] != ids[two]
    assert sorted(rows(pg_url, "SELECT store_id, name FROM memcli_agents")) == sorted(
        (ids[p], "coder") for p in (one, two))
    assert rows(pg_url) == [(16,)]
    res = cli("--dir", tmp_path / "x", "pull", "coder", "--from", pg_url)
    assert res.exit_code == 2 and "pushed from 2 stores" in res.stderr and ids[one] in res.stderr
    assert cli("--dir", tmp_path / "x", "pull", f"{ids[two]}/coder", "--from", pg_url).exit_code == 0
    assert len(read_jsonl(tmp_path / "x/agents/coder/raw_traces.jsonl")) == 10
    res = cli("search", "--remote", pg_url, "--all", "apples", "--json")
    assert {h["agent"] for h in orjson.loads(res.stdout)} == {f"{ids[one]}/coder"}
    # mapped: pushed with one store id, the two machines' agents are one
    for store in (one, two):
        assert cli("--dir", store, "push", "coder", "--to", pg_url, "--store-id", "team").exit_code == 0
    assert rows(pg_url, "SELECT count(*) FROM memcli_records r JOIN memcli_agents a USING (agent_key) "
                        "WHERE a.store_id = 'team'") == [(10,)]


@pytest.mark.slow
def test_concurrent_pushers_lose_and_duplicate_nothing(tmp_path, pg_url):
    stores = []
    for s in range(3):
        store = tmp_path / f"s{s}"
        mem = memcli.Memory(store)
        for a in range(4):
            mem.agent(f"agent{a}").ingest(events(100 + a, word=f"w{s}"))
        stores.append(store)
    env = proc_env({"MEMCLI_PUSH_BATCH_BYTES": "5000"})
    procs = [subprocess.Popen([sys.executable, "-m", "memcli", "--dir", str(store), "push", "--all", "--to", pg_url],
                              env=env, stderr=subprocess.PIPE)
             for store in stores for _ in range(2)]     # each store pushed twice at once
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    expected = 3 * sum(2 * (100 + a) for a in range(4))
    assert rows(pg_url) == [(expected,)]
    assert rows(pg_url, "SELECT count(*) FROM memcli_agents") == [(12,)]


def test_a_push_waiting_for_another_push_of_the_agent_sends_the_files_as_they_are_when_its_turn_comes(
        memory_dir, pg_url):
    """Two pushes of one agent run one after the other, and each opens the local files only when
    its turn comes: a push that waited while a compaction moved traces sends them as archived
    (opened before, it would have filed them as active again after the newer push)."""
    import time

    mem = memcli.Memory(memory_dir)
    agent = mem.agent("a")
    agent.ingest(events(300))
    mem.push(["a"], to=pg_url)
    key = rows(pg_url, "SELECT agent_key FROM memcli_agents")[0][0]
    with psycopg.connect(pg_url, autocommit=True) as other_push:
        other_push.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (f"memcli push {key}",))
        proc = subprocess.Popen([sys.executable, "-m", "memcli", "--dir", str(memory_dir), "push", "a", "--to", pg_url],
                                env=proc_env(), stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while not rows(pg_url, "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() else "no wait"
            time.sleep(0.05)
        assert agent.compact(force=True).compacted
        other_push.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (f"memcli push {key}",))
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert b"s for another push of '" in err and b"/a' to finish" in err     # said, after the wait
    local = local_counts(memory_dir, "a")
    tiers = dict(rows(pg_url, "SELECT tier, count(*) FROM memcli_records WHERE kind = 'trace' GROUP BY tier"))
    assert tiers == {"active": local["raw_traces.jsonl"], "archive": local["raw_traces_archive.jsonl"]}
    assert mem.push(["a"], to=pg_url).records == 0


# ---------------------------------------------------------------------------- bad servers

def test_an_unreachable_server_is_one_line_without_the_password_and_the_store_is_untouched(memory_dir, cli):
    sample(memory_dir, "coder")
    before = store_digest(memory_dir)
    with socket_port() as port:
        url = f"postgresql://alice:s3cretpw@127.0.0.1:{port}/team"
        res = cli("push", "coder", "--to", url)
    assert res.exit_code == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(f"memcli: error: cannot connect to PostgreSQL at 127.0.0.1:{port}/team: ")
    assert "refused" in lines[0] and "s3cretpw" not in res.stderr + res.stdout
    assert store_digest(memory_dir) == before
    res = cli("push", "coder", "--to", "postgresql://x:pw@[bad")
    assert res.exit_code == 2 and "pw" not in res.stderr


def test_a_refusing_server_names_its_reason(memory_dir, pg_server, cli):
    sample(memory_dir, "coder")
    res = cli("push", "coder", "--to", pg_server.url("nosuchdb"))
    assert res.exit_code == 1 and 'database "nosuchdb" does not exist' in res.stderr
    assert f"127.0.0.1:{pg_server.port}/nosuchdb" in res.stderr


def test_url_from_the_environment_and_none_at_all(memory_dir, pg_url, cli, monkeypatch):
    sample(memory_dir, "coder")
    assert cli("push", "coder").exit_code == 2
    monkeypatch.setenv("MEMCLI_REMOTE", pg_url)
    assert cli("push", "coder").exit_code == 0
    res = cli("search", "--remote", "", "coder", "discount", "--json")
    assert res.exit_code == 0 and orjson.loads(res.stdout)


def test_a_schema_from_a_newer_memcli_is_refused_with_the_versions(memory_dir, tmp_path, pg_url, cli):
    sample(memory_dir, "coder")
    assert cli("push", "coder", "--to", pg_url).exit_code == 0
    with psycopg.connect(pg_url) as conn:
        conn.execute("UPDATE memcli_meta SET value = '99' WHERE key = 'schema_version'")
    before = rows(pg_url)
    for args in (("push", "coder", "--to", pg_url), ("--dir", tmp_path / "o", "pull", "coder", "--from", pg_url),
                 ("search", "--remote", pg_url, "coder", "discount")):
        res = cli(*args)
        assert res.exit_code == 1, args
        assert "schema version 99, newer than this memcli's (1" in res.stderr
    assert rows(pg_url) == before and not (tmp_path / "o/agents/coder").exists()


def socket_port():
    """A port nothing listens on, held closed for the duration."""
    import contextlib
    import socket

    @contextlib.contextmanager
    def held():
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        try:
            yield s.getsockname()[1]
        finally:
            s.close()
    return held()


# ---------------------------------------------------------------------------- search --remote

def test_search_remote_has_the_local_hit_shape(memory_dir, pg_url, cli):
    sample(memory_dir)
    assert cli("push", "--all", "--to", pg_url).exit_code == 0
    local = orjson.loads(cli("search", "coder", "discount order", "--json").stdout)
    remote = orjson.loads(cli("search", "--remote", pg_url, "coder", "discount order", "--json").stdout)
    assert remote and set(remote[0]) == set(local[0]) | {"agent"}
    # ranked differently (ts_rank_cd, PostgreSQL's parser), the same records match one word
    local = orjson.loads(cli("search", "coder", "discounts", "-n", "1000", "--json").stdout)
    every = orjson.loads(cli("search", "--remote", pg_url, "coder", "discounts", "-n", "1000", "--json").stdout)
    # (the local search shows identical texts as one hit with a count)
    assert {h["id"] for h in local} <= {h["id"] for h in every} and sum(h["count"] for h in local) == len(every)
    store = (memory_dir / ".store-id").read_text().strip()
    assert {h["agent"] for h in remote} == {f"{store}/coder"}
    # a question: stop words dropped, words stemmed
    hits = orjson.loads(cli("search", "--remote", pg_url, "--all", "what were the discounted orders?",
                            "--json").stdout)
    assert hits and all("discount" in h["snippet"].lower() or "order" in h["snippet"].lower() for h in hits)
    # kinds, and the any-word fallback with its note
    facts = orjson.loads(cli("search", "--remote", pg_url, "--all", "pricing", "--kind", "semantic", "--json").stdout)
    assert [h["kind"] for h in facts] == ["semantic"]
    res = cli("search", "--remote", pg_url, "--all", "discount zzzunknownword", "--json")
    assert orjson.loads(res.stdout) and "showing records with any of them" in res.stderr
    assert cli("search", "--remote", pg_url, "nosuch", "discount").exit_code == 3
    human = cli("search", "--remote", pg_url, "coder", "discount", "-n", "1")
    assert f"{store}/coder" in human.stdout


# ---------------------------------------------------------------------------- mcp --remote

def test_mcp_remote_serves_the_shared_store_and_remember_writes_there(memory_dir, tmp_path, pg_url):
    import json

    import anyio
    from mcp.shared.memory import create_connected_server_and_client_session

    from memcli.mcp.server import build_server

    sample(memory_dir, "coder")
    memcli.Memory(memory_dir).push(["coder"], to=pg_url)

    async def main():
        server = build_server(tmp_path / "unused", "coder", remote=pg_url)
        async with create_connected_server_and_client_session(server._mcp_server) as session:
            names = {t.name for t in (await session.list_tools()).tools}
            calls = [await session.call_tool(name, args) for name, args in [
                ("memory_search", {"query": "discount", "limit": 2}),
                ("memory_recent", {"turns": 1}),
                ("memory_remember", {"fact": "The team uses SPRING10 for tests", "tags": ["team"]}),
            ]]
            first = json.loads(calls[0].content[0].text)["hits"][0]
            got = await session.call_tool("memory_get", {"id": first["id"]})
            fact_id = json.loads(calls[2].content[0].text)["id"]
            found = await session.call_tool("memory_search", {"query": "SPRING10 team"})
            gone = await session.call_tool("memory_forget", {"id": fact_id, "reason": "wrong"})
            again = await session.call_tool("memory_forget", {"id": fact_id})
            lost = await session.call_tool("memory_search", {"query": "SPRING10 team", "kind": "semantic"})
            kept = await session.call_tool("memory_search", {"query": "SPRING10 team", "history": True})
            out["kept"] = {h["id"]: h["status"] for h in json.loads(kept.content[0].text)["hits"]}
            out["found"] = [h["id"] for h in json.loads(found.content[0].text)["hits"]]
            out["lost"] = [h["id"] for h in json.loads(lost.content[0].text)["hits"]]
            out["fact"] = fact_id
            return names, calls, got, gone, again

    out = {}
    anyio.run(lambda: _store(out, main))
    names, calls, got, gone, again = out["v"]
    assert names == {"memory_search", "memory_get", "memory_recent", "memory_remember", "memory_forget", "memory"}
    assert not any(c.isError for c in calls), calls
    assert json.loads(got.content[0].text)["record"]["id"]
    recent = json.loads(calls[1].content[0].text)["turns"]
    last = read_jsonl(memory_dir / "agents/coder/raw_traces.jsonl")[-1]
    assert recent[-1]["traces"][-1]["id"] == last["id"]
    assert json.loads(gone.content[0].text)["tombstone_id"]
    assert json.loads(again.content[0].text)["already_superseded_by"]
    assert out["found"][0] == out["fact"] and out["fact"] not in out["lost"]   # forgotten: out of search
    assert out["kept"][out["fact"]] == "superseded"                             # unless history is asked
    # the fact and its tombstone are in the shared store: a pull has them after the pushed facts
    memcli.Memory(tmp_path / "o").pull("coder", from_=pg_url)
    facts = read_jsonl(tmp_path / "o/agents/coder/semantic.jsonl")
    assert facts[:-2] == read_jsonl(memory_dir / "agents/coder/semantic.jsonl")
    assert facts[-2]["fact"] == "The team uses SPRING10 for tests" and facts[-1]["forgotten"] == facts[-2]["id"]
    # a later push from the agent's machine keeps them
    memcli.Memory(memory_dir).agent("coder").compact(force=True)
    memcli.Memory(memory_dir).push(["coder"], to=pg_url)
    assert rows(pg_url, "SELECT count(*) FROM memcli_records WHERE pos >= %s", 1 << 60) == [(2,)]


async def _store(out, main):
    out["v"] = await main()


def test_pull_refuses_a_data_file_this_memcli_does_not_know(memory_dir, tmp_path, pg_url, cli):
    memcli.Memory(memory_dir).agent("a").ingest(events(2))
    memcli.Memory(memory_dir).push(["a"], to=pg_url)
    with psycopg.connect(pg_url) as conn:
        conn.execute("UPDATE memcli_records SET file = '../../evil.jsonl' WHERE id = 'u0'")
    res = cli("--dir", tmp_path / "o", "pull", "a", "--from", pg_url)
    assert res.exit_code == 1 and "data files this memcli does not know (../../evil.jsonl)" in res.stderr
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").rglob("*.jsonl"))


@pytest.mark.slow
def test_a_word_in_most_records_ranks_a_bounded_sample_and_says_so(memory_dir, pg_url, cli):
    memcli.Memory(memory_dir).agent("a").ingest(events(4_000, word="everywhere"))
    memcli.Memory(memory_dir).push(["a"], to=pg_url)
    res = cli("search", "--remote", pg_url, "a", "everywhere", "--json")
    assert res.exit_code == 0 and len(orjson.loads(res.stdout)) == 10
    assert "ranked a sample of about 5,000" in res.stderr
    res = cli("search", "--remote", pg_url, "a", "number3999", "--json")
    assert [h["id"] for h in orjson.loads(res.stdout)] == ["u3999"] and "sample" not in res.stderr


def test_uncompact_and_the_compaction_ledger_follow_a_push(memory_dir, tmp_path, pg_url):
    from memcli.store.layout import LEDGER

    mem = memcli.Memory(memory_dir)
    agent = mem.agent("a")
    agent.ingest(events(200))
    agent.compact(force=True)
    mem.push(["a"], to=pg_url)
    agent.uncompact()
    mem.push(["a"], to=pg_url)
    assert remote_counts(pg_url, "a") == local_counts(memory_dir, "a")
    assert LEDGER in local_counts(memory_dir, "a")
    memcli.Memory(tmp_path / "o").pull("a", from_=pg_url)
    assert memcli.Memory(tmp_path / "o").agent("a").export(with_memory=True) == agent.export(with_memory=True)
    for name in local_counts(memory_dir, "a"):
        assert (tmp_path / "o/agents/a" / name).read_bytes() == (memory_dir / "agents/a" / name).read_bytes(), name


def test_mcp_remote_survives_a_dropped_connection(memory_dir, pg_url):
    from memcli.mcp.tools import RemoteMemoryTools

    sample(memory_dir, "coder")
    memcli.Memory(memory_dir).push(["coder"], to=pg_url)
    tools = RemoteMemoryTools(memcli.Memory(memory_dir).remote(pg_url), "coder")
    assert tools.search(None, "discount")["hits"]
    with psycopg.connect(pg_url, autocommit=True) as admin:
        assert admin.execute("""SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                                WHERE application_name = 'memcli' AND pid <> pg_backend_pid()""").fetchall()
    assert tools.search(None, "discount")["hits"]       # opened again, answered
    first = tools.remember(None, "Deploys need a ticket")["id"]
    assert tools.remember(None, "Deploys  need a ticket")["id"] == first     # the same fact: nothing written
    assert rows(pg_url, "SELECT count(*) FROM memcli_records WHERE line LIKE '%%need a ticket%%'") == [(1,)]


def test_a_server_that_allows_one_connection_gets_the_push_over_one(memory_dir, pg_url, monkeypatch):
    from memcli.remote import push as push_mod

    monkeypatch.setattr(push_mod, "BATCH_BYTES", 20_000)
    db = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("CREATE ROLE solo LOGIN CONNECTION LIMIT 1")
        admin.execute(f"ALTER DATABASE {db} OWNER TO solo")
        admin.execute("ALTER SCHEMA public OWNER TO solo")
    mem = memcli.Memory(memory_dir)
    mem.agent("big").ingest(events(500))
    result = mem.push(["big"], to=pg_url.replace("memcli@", "solo@"))
    assert result.records == 1000 and rows(pg_url) == [(1000,)]
    # a count that is not one is refused before anything is sent
    monkeypatch.setenv("MEMCLI_PUSH_CONNECTIONS", "three")
    with pytest.raises(memcli.errors.UsageError, match="MEMCLI_PUSH_CONNECTIONS: a whole number from 1 to 64, got 'three'"):
        mem.push(["big"], to=pg_url)
