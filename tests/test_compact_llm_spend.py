"""What a compaction with a model pays for, against a local OpenAI-compatible server: the budget
the model is told is one the compaction can accept (a quarter of the window), a paid answer that
would not make the snapshot smaller is asked to shrink, what was paid for a compaction that
wrote nothing is said and goes to the ledger, a request that timed out is counted as sent (its
bound kept under --max-cost), and a failed chunk's error says what every chunk spent."""

from __future__ import annotations

import re
import threading

import orjson
import pytest

from tests.compact_fixtures import compact_with_model, conversation, faithful_answer, ingest_conversation
from tests.helpers import agent_dir, read_jsonl, tree_digest

MODEL = "openai/test-model"
TOLD = re.compile(r"Keep episodic_summary within about ([\d,]+) tokens")
LONG = "Long summary\n" + "\n".join(f"- detail line {k} about shipping" for k in range(500))   # ~4,000 tokens


pytestmark = pytest.mark.usefixtures("llm_env")


def _ingest(cli, turns=12, big=3000):
    ingest_conversation(cli, turns, big)


_compact = compact_with_model


def _shortening(body) -> bool:
    return body["messages"][0]["content"].startswith("You shorten")


def _short_answer(body, more: str = "") -> str:
    """A rewrite that names every ask of the summary it was given (by its order number), then ``more``."""
    orders = sorted(set(re.findall(r"A-\d+", body["messages"][1]["content"])))
    return orjson.dumps({"episodic_summary": "Orders asked about: " + " ".join(orders) + more}).decode()


def test_the_model_is_told_a_quarter_of_the_window_not_what_the_target_leaves(cli, memory_dir, server):
    """12 turns with big results under the default target: the target leaves ~50,000 tokens, the
    window holds ~3,500; the model was told 4,096 (the answer's reserve), more than the window."""
    _ingest(cli)
    srv = server(lambda body, i: (200, faithful_answer(body), 0))
    result = _compact(cli, srv, "--json")
    assert result.exit_code == 0, result.stderr
    data = orjson.loads(result.stdout)
    assert data["compacted"] and len(srv.requests) == 1
    told = int(TOLD.search(srv.requests[0].user).group(1).replace(",", ""))
    assert told == data["window_tokens"] // 4 and data["target_tokens"] - data["window_tokens"] > 4_096


def test_a_paid_answer_that_would_not_shrink_the_snapshot_is_asked_to_shrink(cli, memory_dir, server):
    """A model that writes ~4,000 tokens for a window of ~3,500: the compaction said "nothing
    written … would not make the working snapshot smaller", exit 0, the answer thrown away."""
    _ingest(cli)
    srv = server(lambda body, i: (200, _short_answer(body) if _shortening(body) else faithful_answer(body, LONG), 0))
    result = _compact(cli, srv)
    assert result.exit_code == 0, result.stderr
    assert [_shortening(r.body) for r in srv.requests] == [False, True]
    assert "the summary is 4,0" in result.stderr and "over its budget: asked to rewrite it within" in result.stderr
    (episodic,) = read_jsonl(agent_dir(memory_dir, "a") / "episodic.jsonl")
    assert episodic["summary"].startswith("Orders asked about: A-1001 A-1002")
    (record,) = read_jsonl(agent_dir(memory_dir, "a") / ".compactions.jsonl")
    assert record["kind"] == "compaction" and record["llm"]["requests"] == 2
    assert record["tokens_after"] < record["tokens_before"]


def test_what_a_compaction_that_wrote_nothing_paid_is_said_and_in_the_ledger(cli, memory_dir, server):
    """The model keeps answering too long, the rewrite too: nothing is written (never worse), and
    the 3 requests paid for are said on stderr and recorded — they were neither."""
    _ingest(cli)
    def model(body, i):   # the rewrite as long as the answer: refused
        return 200, _short_answer(body, "\n" + LONG) if _shortening(body) else faithful_answer(body, LONG), 0

    srv = server(model)
    before = tree_digest(agent_dir(memory_dir, "a"))
    result = _compact(cli, srv, "--retries", "1")
    assert result.exit_code == 0, result.stderr
    assert [_shortening(r.body) for r in srv.requests] == [False, True, True]
    assert "would not make the working snapshot smaller" in result.stderr
    assert "; the model was paid: 3 requests, " in result.stderr and "price unknown (in the ledger)" in result.stderr
    after = tree_digest(agent_dir(memory_dir, "a"))
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert changed == {".compactions.jsonl", ".token-counts"}   # no trace moved, no item written
    (record,) = read_jsonl(agent_dir(memory_dir, "a") / ".compactions.jsonl")
    assert record["kind"] == "unwritten-compaction" and record["turn_range"] == "turn_0001–turn_0008"
    assert record["llm"]["model"] == MODEL and record["llm"]["requests"] == 3 and record["llm"]["cost_usd"] is None
    assert orjson.loads(cli("compactions", "a", "--json").stdout) == []   # it compacted nothing
    stats = orjson.loads(cli("stats", "a", "--json").stdout)
    assert stats["compaction_cost"]["requests"] == 3


def test_what_a_failed_compaction_paid_is_said_on_stderr_only(cli, memory_dir, server):
    """A paid compaction that fails (exit 1: no valid answer within --retries) writes nothing, the
    ledger included, as docs/compaction.md says: its spend is in the error, not in stats."""
    _ingest(cli)
    srv = server(lambda body, i: (200, "not a summary", 0))
    before = tree_digest(agent_dir(memory_dir, "a"))
    result = _compact(cli, srv, "--retries", "1")
    assert result.exit_code == 1 and len(srv.requests) == 2
    assert "; spent: 2 requests, 20 input + 20 output tokens, price unknown; nothing was written" in result.stderr
    after = tree_digest(agent_dir(memory_dir, "a"))
    assert {k for k in after if before.get(k) != after[k]} <= {".compaction.json", ".token-counts"}
    assert ".compactions.jsonl" not in after
    assert orjson.loads(cli("stats", "a", "--json").stdout)["compaction_cost"]["requests"] == 0


PRICED = "openai/gpt-4o-mini"   # LiteLLM prices it: $0.15 per million input tokens, $0.60 output


@pytest.fixture
def never_answered():
    """A responder's answer to the requests it holds: one that never comes while the test runs
    (the client's --timeout ends each: no guess at the machine's speed)."""
    released = threading.Event()
    yield lambda: released.wait(120)
    released.set()


def _estimate(cli, srv, model):
    data = orjson.loads(cli("compact", "a", "--model", model, "--api-base", srv.api_base, "--dry-run", "--json").stdout)
    assert data["estimate"]["requests"] == 1 and srv.requests == []
    return data["estimate"]


def test_a_timed_out_request_keeps_its_bound_under_max_cost(cli, memory_dir, server, never_answered):
    """--max-cost with room for one request's bound, not two: a request that timed out released
    its bound, so the retries went too (3 requests sent, each bounded at the limit's 2/3)."""
    _ingest(cli, turns=8, big=0)
    srv = server(lambda body, i: (200, never_answered() and faithful_answer(body), 0))
    estimate = _estimate(cli, srv, PRICED)
    limit = 1.5 * estimate["cost_usd"]
    before = tree_digest(agent_dir(memory_dir, "a"))
    result = cli("compact", "a", "--model", PRICED, "--api-base", srv.api_base, "--timeout", "0.5",
                 "--max-cost", f"{limit:.9f}")
    assert result.exit_code == 1
    assert len(srv.requests) == 1   # the retry would pass the limit with the first one's bound: not sent
    prompt = estimate["input_tokens"]
    error = result.stderr.split("memcli: error: ", 1)[1]
    assert error.startswith(f"--max-cost {float(f'{limit:.9f}'):g}: retrying turn_0001–turn_0004 (attempt 2) would "
                            f"cost up to ${estimate['cost_usd']:.6f} on top of ${estimate['cost_usd']:.6f} spent or "
                            "committed; ")
    assert f"; spent: 1 request (1 unanswered: its prompt counted), {prompt:,} input + 0 output tokens, " \
           f"${prompt * 0.15e-6:.6f}; nothing was written" in error
    after = tree_digest(agent_dir(memory_dir, "a"))
    assert {k for k in after if before.get(k) != after[k]} <= {".compaction.json", ".token-counts"}


def test_timed_out_requests_are_counted_as_sent(cli, memory_dir, server, never_answered):
    """Requests that timed out were left out of what was spent: the ledger said 1 request of 2,
    and an error after nothing but timeouts said "0 requests, …, $0.000000" for a model that
    has no price."""
    _ingest(cli, turns=8, big=0)
    srv = server(lambda body, i: (200, (i or never_answered()) and faithful_answer(body), 0))
    prompt = _estimate(cli, srv, MODEL)["input_tokens"]
    result = _compact(cli, srv, "--timeout", "0.5")
    assert result.exit_code == 0, result.stderr
    assert len(srv.requests) == 2
    (record,) = read_jsonl(agent_dir(memory_dir, "a") / ".compactions.jsonl")
    # the timed-out request on its prompt, the answer on its reported usage (10 + 10)
    assert record["llm"] == {"model": MODEL, "requests": 2, "input_tokens": prompt + 10, "output_tokens": 10,
                             "cost_usd": None}

    assert cli("ingest", "b", input=conversation(8)).exit_code == 0
    srv = server(lambda body, i: (200, never_answered() and faithful_answer(body), 0))
    result = cli("compact", "b", "--model", MODEL, "--api-base", srv.api_base, "--timeout", "0.5", "--retries", "1")
    assert result.exit_code == 1 and len(srv.requests) == 2
    assert re.search(r"; spent: 2 requests \(2 unanswered: their prompts counted\), [\d,]+ input \+ 0 output tokens, "
                     r"price unknown; nothing was written", result.stderr), result.stderr


@pytest.fixture
def never_accepting():
    """The api_base of a server that listens but never accepts: its queue of connections is full
    (backlog 0, filled by connections of its own), so a client's connection is never made and
    its request never sent — the client's --timeout ends each connect."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)
    probe = socket.socket()
    probe.settimeout(0.2)
    with pytest.raises(TimeoutError):   # the queue is full: a connection is never made
        probe.connect(("127.0.0.1", port))
    probe.close()
    yield f"http://127.0.0.1:{port}/v1"
    for sock in (*fillers, listener):
        sock.close()


def test_a_connect_timeout_is_not_a_sent_request(cli, memory_dir, never_accepting):
    """No connection within --timeout: nothing was sent, nothing can be billed. Connect timeouts
    were counted as sent, paid requests ("spent: 2 requests (2 timed out: their prompts
    counted) … $0.001566"), and under --max-cost each kept its bound, so the retry was refused."""
    _ingest(cli, turns=8, big=0)
    before = tree_digest(agent_dir(memory_dir, "a"))
    base = ["compact", "a", "--model", PRICED, "--api-base", never_accepting, "--timeout", "0.5", "--retries", "1"]
    estimate = orjson.loads(cli(*base, "--dry-run", "--json").stdout)["estimate"]
    for extra in ([], ["--max-cost", f"{1.5 * estimate['cost_usd']:.9f}"]):   # room for one request's bound
        result = cli(*base, *extra)
        assert result.exit_code == 1
        error = result.stderr.split("memcli: error: ", 1)[1]
        assert error.count(f"cannot connect to {never_accepting} (no connection within 0.5 s)") == 2, error  # both tries
        assert "; spent: nothing; nothing was written" in error and "max-cost" not in error
        after = tree_digest(agent_dir(memory_dir, "a"))
        assert {k for k in after if before.get(k) != after[k]} <= {".compaction.json", ".token-counts"}


@pytest.fixture
def closing_after_the_request():
    """A server that reads each request, then closes the connection without an answer."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(1 << 20)

    threading.Thread(target=serve, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    listener.close()


def test_a_request_whose_connection_drops_is_sent_and_unanswered(cli, memory_dir, closing_after_the_request):
    """The server read the request, then closed the connection: the request was sent and may be
    billed. It was reported as LiteLLM's made-up 'server error (HTTP 500): Connection error.' and
    counted as nothing spent; it is counted on its prompt, like a request that timed out."""
    _ingest(cli, turns=8, big=0)
    base = ["compact", "a", "--model", PRICED, "--api-base", closing_after_the_request, "--timeout", "5",
            "--retries", "1"]
    result = cli(*base)
    assert result.exit_code == 1
    error = result.stderr.split("memcli: error: ", 1)[1]
    assert error.count(f"{closing_after_the_request} closed the connection before answering") == 2, error
    assert re.search(r"; spent: 2 requests \(2 unanswered: their prompts counted\), [\d,]+ input \+ 0 output "
                     r"tokens, \$0\.\d+; nothing was written", error), error


def test_a_failed_chunk_says_what_the_whole_compaction_spent(cli, memory_dir, server, monkeypatch):
    """Chunks summarized at once: the chunk of turn_0001 fails (every answer leaves its asks
    out); its error said "spent: 2 requests" while the other chunks' requests, answered after
    it, were paid too."""
    from memcli.compaction import llm

    said = threading.Event()   # the failing chunk has put a figure in its error
    describe = llm.Spending.describe

    def observed(self):
        said.set()
        return describe(self)

    monkeypatch.setattr(llm.Spending, "describe", observed)
    _ingest(cli, turns=40, big=2000)
    before = tree_digest(agent_dir(memory_dir, "a"))

    def model(body, i):
        if '<transcript turns="turn_0001' in body["messages"][1]["content"]:
            return 200, faithful_answer(body, leave_out=tuple(f"Where is order A-{1000 + n}?" for n in range(1, 41))), 0
        said.wait(60)   # the others answer once it has (never a guess at the machine's speed)
        return 200, faithful_answer(body), 0

    srv = server(model)
    result = _compact(cli, srv, "--max-context-tokens", "9000", "--retries", "1", "--concurrency", "8")
    assert result.exit_code == 1
    first = [r for r in srv.requests if '<transcript turns="turn_0001' in r.user]
    n = len(srv.requests)
    assert len(first) == 2 and n > 2   # the failing chunk's 2 attempts, and the other chunks'
    error = result.stderr.split("memcli: error: ", 1)[1]
    assert error.startswith("openai/test-model gave no valid summary for turn_0001–")
    assert f"; spent: {n} requests, {10 * n:,} input + {10 * n:,} output tokens, price unknown; nothing was written" \
        in error
    after = tree_digest(agent_dir(memory_dir, "a"))
    assert {k for k in after if before.get(k) != after[k]} <= {".compaction.json", ".token-counts"}


def test_a_summarizer_used_again_starts_its_limit_afresh(cli, memory_dir, server, never_answered):
    """One LiteLLMSummarizer for two compactions (the Python API): what the first one's timed-out
    request kept committed counted against the second one's --max-cost, which sent nothing."""
    from memcli.compaction.compactor import compact
    from memcli.compaction.llm import LiteLLMSummarizer
    from memcli.errors import CompactionError

    for agent in ("a", "b"):
        assert cli("ingest", agent, input=conversation(8)).exit_code == 0
    srv = server(lambda body, i: (200, (i or never_answered()) and faithful_answer(body), 0))
    estimate = _estimate(cli, srv, PRICED)
    summarizer = LiteLLMSummarizer(PRICED, api_base=srv.api_base, timeout=0.5, retries=1)
    with pytest.raises(CompactionError, match="retrying turn_0001–turn_0004 \\(attempt 2\\) would cost"):
        compact(memory_dir, "a", summarizer=summarizer, max_cost=1.5 * estimate["cost_usd"])
    result = compact(memory_dir, "b", summarizer=summarizer, max_cost=1.5 * estimate["cost_usd"])
    assert result.compacted and len(srv.requests) == 2
    assert result.llm["requests"] == 1 and result.llm["cost_usd"] == pytest.approx(10 * 0.15e-6 + 10 * 0.6e-6)


def _interrupted_compaction(memory_dir, srv, once) -> tuple[int, str, bytes]:
    """``memcli compact a --model`` in a process of its own (agent ``a``: 12 turns), sent SIGINT
    once ``once()`` is true: (exit status, stderr, the active file before it)."""
    import signal
    import subprocess
    import sys
    import time

    from tests.helpers import ndjson, proc_env

    env = proc_env({"OPENAI_API_KEY": "sk-test-dummy", "MEMCLI_RETRY_BACKOFF": "0",
                    "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    ingest = subprocess.run([sys.executable, "-m", "memcli", "--dir", str(memory_dir), "ingest", "a"],
                            input=ndjson(conversation(12)), env=env, capture_output=True, timeout=120)
    assert ingest.returncode == 0, ingest.stderr
    active = (agent_dir(memory_dir, "a") / "raw_traces.jsonl").read_bytes()
    proc = subprocess.Popen([sys.executable, "-m", "memcli", "--dir", str(memory_dir), "compact", "a",
                             "--model", MODEL, "--api-base", srv.api_base, "--tail-turns", "1"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not once() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert once()
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)   # (what the server holds back is not waited for)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, stderr, active


def test_ctrl_c_stops_at_once_and_says_what_was_paid(memory_dir, server):
    """Ctrl-C during a model compaction waited out the answer in flight (25 s), threw it away and
    said nothing of what was paid. It stops at once now (the request threads are not waited
    for): no request after it, the answer paid for before it said and in the ledger (an
    ``unwritten-compaction`` record), the request in flight named, the active file untouched."""
    release = threading.Event()

    def responder(body, i):
        if i == 0:
            return 200, "no JSON here", 0   # an unusable answer, paid for: the retry goes
        release.wait(120)   # the retry: in flight until the test ends
        return 200, faithful_answer(body), 0

    srv = server(responder)
    try:
        status, stderr, active = _interrupted_compaction(memory_dir, srv, lambda: len(srv.requests) >= 2)
    finally:
        release.set()
    assert status == 130, stderr
    assert re.search(r"memcli: interrupted: nothing was written; the model was paid: 1 request, [\d,]+ input \+ "
                     r"[\d,]+ output tokens, [^;]+ \(in the ledger\); 1 request in flight not waited for \(the "
                     r"provider may bill it\)\n", stderr), stderr
    assert stderr.endswith("memcli: interrupted\n") and "Traceback" not in stderr
    assert len(srv.requests) == 2
    (record,) = read_jsonl(agent_dir(memory_dir, "a") / ".compactions.jsonl")
    assert record["kind"] == "unwritten-compaction" and record["llm"]["requests"] == 1
    assert (agent_dir(memory_dir, "a") / "raw_traces.jsonl").read_bytes() == active


def test_ctrl_c_while_waiting_out_a_retry_after_names_no_request_in_flight(memory_dir, server):
    """A second read: a 429 is an answer, but the in-flight count took it for a request still out,
    so Ctrl-C during the wait the provider asked for (the likeliest moment) said "1 request in
    flight"."""
    srv = server(lambda body, i: (429, {"error": {"message": "Rate limit reached"}}, 0, {"Retry-After": "50"}))
    import time

    # (SIGINT well after the 429 went out, inside the 50 s it asked for: the answer has been read)
    status, stderr, _ = _interrupted_compaction(
        memory_dir, srv, lambda: bool(srv.requests) and 0 < srv.requests[0].end < time.monotonic() - 5)
    assert status == 130, stderr
    assert "memcli: interrupted: nothing was written\n" in stderr and "in flight" not in stderr, stderr
    assert len(srv.requests) == 1
