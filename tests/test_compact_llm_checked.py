"""A model's summary is checked before it is kept (issue 22): it must name every user ask that
moves (verbatim, or with its identifiers and key words) and every modified file by its path.
An answer that leaves something out is sent back, within ``--retries``, with the list of what it
left out; each retry is counted in the tokens and cost and bounded by ``--max-cost``; when the
retries run out the compaction fails as any model failure does: nothing written, exit 1, an
error naming what was missing and what was spent. Over real HTTP (LiteLLM) against a local
OpenAI-compatible server on 127.0.0.1 (tests/compact_fixtures.py)."""

from __future__ import annotations

import re
import unicodedata

import orjson
import pytest

from memcli.compaction.llm import Required
from memcli.compaction.summarizer import Turn
from memcli.models import RawTrace
from tests.compact_fixtures import conversation, faithful_answer, good_answer, transcript_items
from tests.helpers import CORPORA, agent_dir, needs_corpora, read_jsonl, tree_digest
from tests.test_compact_llm import _llm_env  # noqa: F401  (autouse: a dummy key, no backoff)

PRICED = "openai/gpt-4o-mini"             # LiteLLM prices it: 0.15 $/M input, 0.6 $/M output
ONE_ANSWER = 10 * 0.15e-6 + 10 * 0.6e-6   # what the fake server's usage (10 + 10 tokens) costs
CARRIER = "/home/me/shop/src/shipping/carrier.py"
RATES = "/home/me/shop/src/shipping/rates.py"


def _events(turns: int = 8) -> list[dict]:
    """``conversation(turns)`` where turn 2 also edits CARRIER and turn 3 RATES (Edit calls)."""
    events = conversation(turns)
    for n, path in ((2, CARRIER), (3, RATES)):
        at = next(k for k, e in enumerate(events) if e["id"] == f"t-{n}-a")
        events[at:at] = [
            {"id": f"t-{n}-e", "trace_type": "tool_call", "tool_name": "Edit", "tool_call_id": f"edit_{n}",
             "tool_args": {"file_path": path, "old_string": "UPS", "new_string": "DHL"}, "ts": events[at]["ts"] - 1},
            {"id": f"t-{n}-f", "trace_type": "tool_result", "tool_name": "Edit", "tool_call_id": f"edit_{n}",
             "tool_result": "ok", "ts": events[at]["ts"] - 0.5}]
    return events


def _ingest(cli, events=None):
    result = cli("ingest", "a", input=events if events is not None else _events())
    assert result.exit_code == 0, result.stderr


def _data(memory_dir) -> dict:
    digest = tree_digest(agent_dir(memory_dir, "a"))
    digest.pop(".compaction.json", None)   # the circuit breaker counts failures
    return digest


def _compact(cli, srv, *args, model=PRICED):
    return cli("compact", "a", "--model", model, "--api-base", srv.api_base, *args)


def _error(result) -> str:
    return "\n".join(line for line in result.stderr.splitlines() if line.startswith(("memcli: error:", "  hint:")))


def _missing_block(request) -> str | None:
    user = request.user
    if "<missing>\n" not in user:
        return None
    return user.split("<missing>\n", 1)[1].split("\n</missing>", 1)[0]


def test_an_answer_that_leaves_out_a_file_is_sent_back_naming_it(cli, memory_dir, server):
    _ingest(cli)

    def model(body, i):   # forgets rates.py the first time
        return 200, faithful_answer(body, leave_out=(RATES,) if i == 0 else ()), 0

    srv = server(model)
    result = _compact(cli, srv)
    assert result.exit_code == 0, result.stderr
    assert len(srv.requests) == 2
    assert _missing_block(srv.requests[0]) is None
    assert _missing_block(srv.requests[1]) == f"- modified file: {RATES}"
    assert "Your previous answer for this transcript left out what <missing> lists." in srv.requests[1].user
    # the retry carries the same transcript
    first, second = (r.user.split("</transcript>")[0] for r in srv.requests)
    assert first == second
    (episodic,) = read_jsonl(agent_dir(memory_dir, "a") / "episodic.jsonl")
    assert episodic["summary"].endswith(f"Files and code sections: {CARRIER}, {RATES}")
    assert "Not in the model's summary" not in episodic["summary"]
    assert (f"memcli: {PRICED}, turn_0001–turn_0004: attempt 1: the summary left out 1 modified file; asked again "
            "(attempt 2 of 3)") in result.stderr.splitlines()   # a retry is said, not silent
    # both answers are paid for, and the ledger says so
    (entry,) = orjson.loads(cli("compactions", "a", "--json").stdout)
    llm = entry["llm"]
    assert (llm["requests"], llm["input_tokens"], llm["output_tokens"]) == (2, 20, 20)
    assert llm["cost_usd"] == pytest.approx(2 * ONE_ANSWER)


def test_retries_exhausted_fail_cleanly_naming_what_was_missing(cli, memory_dir, server):
    _ingest(cli)
    before = _data(memory_dir)
    srv = server(lambda body, i: (200, faithful_answer(body, leave_out=(RATES, "Where is order A-1003?")), 0))
    result = _compact(cli, srv, "--retries", "2")
    assert result.exit_code == 1
    assert len(srv.requests) == 3   # one try and two retries
    for retry in srv.requests[1:]:  # each retry names exactly what the answer left out
        assert _missing_block(retry) == f'- user ask "Where is order A-1003?": name A-1003\n- modified file: {RATES}'
    left = "the summary left out 1 user ask and 1 modified file"
    assert _error(result) == (
        f"memcli: error: {PRICED} gave no valid summary for turn_0001–turn_0004 after 3 attempts (attempt 1: "
        f"{left}; attempt 2: {left}; attempt 3: {left}); the last answer left out user ask \"Where is order "
        f"A-1003?\" (lacks A-1003); modified file {RATES}; spent: 3 requests, 30 input + 30 output tokens, "
        f"${3 * ONE_ANSWER:.6f}; nothing was written\n"
        "  hint: --retries gives the model more chances; the offline summarizer (no --model) needs no model")
    assert _data(memory_dir) == before   # every data file byte-identical
    breaker = orjson.loads((agent_dir(memory_dir, "a") / ".compaction.json").read_bytes())
    assert breaker["consecutive_failures"] == 1


def test_retries_zero_fails_after_one_request(cli, memory_dir, server):
    _ingest(cli)
    before = _data(memory_dir)
    srv = server(lambda body, i: (200, faithful_answer(body, leave_out=(CARRIER,)), 0))
    result = _compact(cli, srv, "--retries", "0")
    assert result.exit_code == 1 and len(srv.requests) == 1
    assert f"after 1 attempt (attempt 1: the summary left out 1 modified file); the last answer left out " \
           f"modified file {CARRIER}; spent: 1 request, 10 input + 10 output tokens" in result.stderr
    assert _data(memory_dir) == before


def test_asks_are_judged_by_their_identifiers_and_key_words(cli, memory_dir, server):
    ask = ("The checkout page throws TypeError in applyCoupon when the code SAVE-2024 is used twice; "
           "please fix it in src/cart/coupons.ts and add a regression test")
    events = conversation(6)
    events[1]["content"] = ask
    _ingest(cli, events)
    paraphrase = ("Primary request: fix the TypeError thrown by applyCoupon on the checkout page when SAVE-2024 "
                  "is used twice (src/cart/coupons.ts), with a regression test.")
    dropped = paraphrase.replace("SAVE-2024", "a coupon code")

    def model(body, i):
        return 200, faithful_answer(body, dropped if i == 0 else paraphrase, leave_out=(ask,)), 0

    srv = server(model)
    result = _compact(cli, srv)
    assert result.exit_code == 0, result.stderr
    assert len(srv.requests) == 2   # the paraphrase without the code is sent back; with it, kept
    assert _missing_block(srv.requests[1]) == f'- user ask "{ask}": name SAVE-2024'


def test_required_terms_of_an_ask():
    assert Required.terms("Where is order A-1001?") == (["A-1001"], ["order"])
    # a number that ends the sentence is named too (an answer saying "order 9999." passed the check)
    assert Required.terms("Please refund order 1042.") == (["1042"], ["refund", "order"])
    assert Required.terms("Use version 1042.5 or 1042-b") == (["1042-b"], ["version"])
    idents, words = Required.terms("Fix test_parse_config in tests/test_cfg.py, run `make lint`, open PR #482 on port 8080")
    assert idents == ["test_parse_config", "tests/test_cfg.py", "make lint", "#482", "8080"]
    assert Required.terms("see https://example.com/a/b.html and ~/x.py, e.g. os.path.join; set OPENAI_API_KEY") == (
        ["https://example.com/a/b.html", "~/x.py", "os.path.join", "OPENAI_API_KEY"], [])
    assert words == ["open", "port"]
    ask = "Fix test_parse_config in tests/test_cfg.py, run `make lint`, open PR #482 on port 8080"
    text = "fixed test_parse_config in tests/test_cfg.py; `make lint` passes; pr #482 on port 8080."
    assert Required.ask_lacks(ask, text) == []          # every identifier, and half the other words
    assert Required.ask_lacks(ask, text.replace("port 8080", "8080")) == ["open", "port"]
    assert Required.ask_lacks(ask, text.replace("#482", "482")) == ["#482"]
    assert Required.ask_lacks("Implement the deployment configuration", "implemented a deploy config") == []
    assert Required.terms("can you run a command ls -la") == (["-la"], ["command"])
    assert Required.ask_lacks("can you run a command ls -la", "the user asked to run ls -la.") == []
    assert Required.terms("Implement spotter-gqc") == ([], ["implement", "spotter-gqc"])   # hyphenated: whole
    assert Required.ask_lacks("Implement spotter-gqc", "implemented spotter-gqc") == []
    assert Required.ask_lacks("Implement spotter-gqc", "implemented spotter") == ["spotter-gqc"]
    # a long paste is judged by its first identifiers and key words, and what it lacks stays listable
    paste = "Look at this log: " + " ".join(f"worker{k} restarted service_{k} after timeout{k}" for k in range(2000))
    lacks = Required.ask_lacks(paste, "the user pasted a log.")
    assert len(lacks) == 10 + 24 and lacks[:2] == ["worker0", "service_0"]
    opening = Required.terms(paste)
    assert Required.ask_lacks(paste, " ".join(opening[0] + opening[1][:8]).casefold()) == []
    assert Required.ask_lacks("yes", "the user said yes.") == []
    assert Required.ask_lacks("yes", "the user agreed.") == ["yes"]
    # files by path: the whole path or its last two components, never a bare name for a nested file
    assert Required.file_named(CARRIER, "edited shipping/carrier.py.")
    assert Required.file_named(CARRIER, f"edited {CARRIER.casefold()}")
    assert not Required.file_named(CARRIER, "edited carrier.py")
    assert not Required.file_named(CARRIER, "edited shipping/carrier.pyc")
    assert Required.file_named("README.md", "see readme.md")
    # a file at the top of the project the modified files share is named by its name there
    files = ["/home/me/shop/mix.exs", "/home/me/shop/lib/shop/cart.ex", CARRIER]
    required = Required([], files)
    assert required.root == "/home/me/shop/"
    assert required.missing("Files: mix.exs, shop/cart.ex, src/shipping/carrier.py").files == []
    assert required.missing("Files: mix.exs, cart.ex, carrier.py").files == files[1:]
    assert Required([], [CARRIER, RATES]).root == ""     # one directory: no project to speak of


def test_an_ask_or_a_file_is_named_whatever_its_unicode_form():
    """Decomposed (NFD: macOS, some editors) and composed (NFC) letters are the same text, and a
    combining mark is part of its word."""
    ask = "Pourquoi la requête échoue après la mise à jour du modèle ?"
    nfd, nfc = unicodedata.normalize("NFD", ask), unicodedata.normalize("NFC", ask)
    assert nfd != nfc
    assert Required.terms(nfd) == ([], ["pourquoi", "requête", "échoue", "après", "mise", "jour", "modèle"])
    for stored, written in ((nfd, nfc), (nfc, nfd)):
        assert Required([stored], []).missing(f'All user messages: "{written}"').asks == []        # verbatim
        assert Required([stored], []).missing(unicodedata.normalize("NFD" if written is nfd else "NFC",
                                                                    "la requête échouait après la mise à jour")).asks == []
    assert Required([nfd], []).missing("the user asked about the model").asks == [
        (nfd, ["pourquoi", "requête", "échoue", "après", "mise", "jour", "modèle"])]
    path = unicodedata.normalize("NFD", "/home/me/shop/docs/réseau.md")
    assert Required([], [path]).missing(f"Files: {unicodedata.normalize('NFC', path)}").files == []
    assert Required([], [path]).missing("Files: docs/reseau.md").files == [path]
    # Devanagari's vowel signs are combining marks: its words stay whole
    assert Required.terms("परीक्षण सर्वर पर विफल होता है") == ([], ["परीक्षण", "सर्वर", "विफल", "होता"])


def test_a_decomposed_ask_quoted_composed_is_kept_at_the_first_answer(cli, memory_dir, server):
    events = conversation(8)
    events[1]["content"] = unicodedata.normalize("NFD", "Pourquoi la requête échoue après la mise à jour du modèle?")
    _ingest(cli, events)
    srv = server(lambda body, i: (200, good_answer("All user messages:\n" + "\n".join(
        f'- "{unicodedata.normalize("NFC", a)}"' for a in transcript_items(body)[0])), 0))
    result = _compact(cli, srv)
    assert result.exit_code == 0, result.stderr
    assert len(srv.requests) == 1


def test_an_ask_that_stays_in_the_active_file_is_not_required():
    def trace(tid, kind, content="", **kw):
        return RawTrace(id=tid, ts=1.0, turn_id="turn_0001", seq=0, trace_type=kind, content=content,
                        source_event="{}", **kw)

    edit = trace("c", "tool_call", tool_name="Edit", tool_call_id="k", tool_args={"file_path": "src/a.py"})
    done = trace("r", "tool_result", tool_name="Edit", tool_call_id="k", tool_result="ok")
    whole = Turn("turn_0001", [trace("u", "user", "Rename foo_bar"), edit, done])
    steps = Turn("turn_0001", [edit, done], steps_only=True, steps=1, total_steps=3)
    assert (Required.of([whole]).asks, Required.of([whole]).files) == (["Rename foo_bar"], ["src/a.py"])
    assert (Required.of([steps]).asks, Required.of([steps]).files) == ([], ["src/a.py"])
    # a slash command is read as people read it
    slash = ("<command-message>review is running…</command-message>\n<command-name>/review</command-name>\n"
             "<command-args>src/cart</command-args>")
    assert Required.of([Turn("turn_0002", [trace("s", "user", slash)])]).asks == ["/review src/cart"]
    # ... with the <command-contents> some versions add (its closing tags were required "identifiers")
    contents = ("<command-name>test-command</command-name><command-args>--verbose --output /tmp/test.log"
                "</command-args><command-message>Running</command-message><command-contents>{\"text\": \"x\"}"
                "</command-contents>")
    assert Required.of([Turn("turn_0002", [trace("s", "user", contents)])]).asks == [
        "/test-command --verbose --output /tmp/test.log"]


def test_max_cost_bounds_the_retries(cli, memory_dir, server):
    _ingest(cli)
    before = _data(memory_dir)
    # forgets rates.py on the first try of each run
    srv = server(lambda body, i: (200, faithful_answer(body, leave_out=(RATES,) if i in (0, 1) else ()), 0))
    estimate = orjson.loads(_compact(cli, srv, "--dry-run", "--json").stdout)["estimate"]
    assert estimate["requests"] == 1 and srv.requests == []
    limit = float(f"{estimate['cost_usd'] + 1e-6:.9f}")   # the first request fits; a retry does not
    result = _compact(cli, srv, "--max-cost", f"{limit:.9f}")
    assert result.exit_code == 1
    assert len(srv.requests) == 1   # the retry was never sent
    error = _error(result)
    assert error.startswith(f"memcli: error: --max-cost {limit:g}: retrying turn_0001–turn_0004 (attempt 2, the last "
                            "answer left out 1 modified file) would cost up to $")
    assert error.endswith(f"spent: 1 request, 10 input + 10 output tokens, ${ONE_ANSWER:.6f}; nothing was written\n"
                          "  hint: raise --max-cost, lower --retries, or use the offline summarizer")
    assert _data(memory_dir) == before
    # with room for it, the retry goes and both answers are counted
    result = _compact(cli, srv, "--max-cost", f"{3 * estimate['cost_usd']:.9f}")
    assert result.exit_code == 0, result.stderr
    assert len(srv.requests) == 3
    (entry,) = orjson.loads(cli("compactions", "a", "--json").stdout)
    assert entry["llm"]["requests"] == 2 and entry["llm"]["cost_usd"] == pytest.approx(2 * ONE_ANSWER)


def test_a_chunked_window_is_given_whole_and_each_chunk_checked(cli, memory_dir, server):
    _ingest(cli, _events(30))

    def model(body, i):   # the chunk holding turn 3 forgets RATES the first time
        user = body["messages"][-1]["content"]
        forget = RATES in user and "<missing>" not in user
        if i == 0:   # answer once another chunk is in flight (never a guess at the machine's speed)
            srv.wait_for_requests(2)
        return 200, faithful_answer(body, leave_out=(RATES,) if forget else ()), 0

    srv = server(model)
    result = _compact(cli, srv, "--max-context-tokens", "3000", "--concurrency", "3", "--target-tokens", "50000",
                      model="openai/test-model")
    assert result.exit_code == 0, result.stderr
    firsts = [r for r in srv.requests if _missing_block(r) is None]
    retries = [r for r in srv.requests if _missing_block(r) is not None]
    assert len(firsts) >= 3 and len(retries) == 1 and srv.max_overlap() >= 2
    assert _missing_block(retries[0]) == f"- modified file: {RATES}"
    # the chunks share the summary's budget: each is told the same share, within the answer's reserve
    shares = {re.search(r"Keep episodic_summary within about ([\d,]+) tokens", r.user).group(1) for r in firsts}
    assert len(shares) == 1 and 100 <= int(shares.pop().replace(",", "")) <= 3000 // 4
    # every moved turn's ask went out exactly once among the first attempts, in order
    asks = [a for r in firsts for a in transcript_items(r.body)[0]]
    (episodic,) = read_jsonl(agent_dir(memory_dir, "a") / "episodic.jsonl")
    moved = len(episodic["turn_ids"])
    assert sorted(asks) == sorted(f"Where is order A-{1000 + n}?" for n in range(1, moved + 1))
    for n in range(1, moved + 1):   # and the merged summary names them all, and both files
        assert f'"Where is order A-{1000 + n}?"' in episodic["summary"]
    assert CARRIER in episodic["summary"] and RATES in episodic["summary"]


def test_a_rollup_keeps_the_earlier_model_summaries(cli, memory_dir, server):
    """Four compactions with a model: the fourth rolls the three earlier summaries up; each keeps
    its identifiers, and the prompts carried the summaries before them."""
    def model(body, i):
        return 200, faithful_answer(body, f"Part {i + 1}: deploy ticket OPS-{4100 + i} touched "
                                          f"services/billing_v{i + 1}/handler.py. " + "Detail. " * 60), 0

    srv = server(model)
    for n in range(4):
        _ingest(cli, conversation(6, prefix=f"p{n}", system=False))
        result = _compact(cli, srv, "--tail-turns", "2", model="openai/test-model")
        assert result.exit_code == 0, result.stderr
    for i, request in enumerate(srv.requests[1:], start=1):   # the memory block carries the earlier ones
        memory = request.user.split("</memory>", 1)[0]
        assert f"OPS-{4100 + i - 1}" in memory
    episodic = read_jsonl(agent_dir(memory_dir, "a") / "episodic.jsonl")
    (rollup,) = [e for e in episodic if "rollup" in e["tags"]]
    for i in range(3):
        assert f"OPS-{4100 + i}" in rollup["summary"] and f"services/billing_v{i + 1}/handler.py" in rollup["summary"]


def test_a_retry_list_never_takes_more_than_the_checklist_room():
    """500 files left out (one huge turn): the <missing> block stays within the checklist's room
    and says how many more the transcript names."""
    from memcli.compaction.llm import LiteLLMSummarizer, Missing
    from memcli.compaction.summarizer import MemoryContext

    summarizer = LiteLLMSummarizer("openai/test-model", max_context_tokens=8000)
    ask = RawTrace(id="u", ts=1.0, turn_id="turn_0001", seq=0, trace_type="user", content="Rename everything",
                   source_event="{}")
    missing = Missing([], [f"src/module_{k}/file_{k}.py" for k in range(500)])
    user = summarizer.messages([Turn("turn_0001", [ask])], MemoryContext(), missing=missing)[1]["content"]
    block = user.split("<missing>\n", 1)[1].split("\n</missing>", 1)[0]
    lines = block.splitlines()
    assert summarizer.counter.count(block) <= summarizer.checklist_tokens() - 80
    assert lines[0] == "- modified file: src/module_0/file_0.py"
    assert lines[-1] == f"- and {500 - (len(lines) - 1)} more: see the transcript"


SPOTTER = "claude-code/spotter_258c7280_compacted_by_claude-code.jsonl"


@needs_corpora
@pytest.mark.slow
def test_a_real_session_checked_against_what_a_model_writes(cli, memory_dir, server):
    """Claude Code's own session (absolute paths, its asks, its harness summary inside): a model
    that names the files as the project knows them (``lib/spotter/…``) is kept at one request
    per chunk; one that names them by bare file name is sent back, then refused, nothing written."""
    assert cli("ingest", "a", str(CORPORA / SPOTTER)).exit_code == 0
    before = _data(memory_dir)
    root = "/home/USER/projects/spotter-worktrees/spotter-gqc/"

    def relative(body, i):
        asks, files = transcript_items(body)
        assert "Implement spotter-gqc" in asks or not asks   # the harness summary is not an ask
        return 200, good_answer("Primary request and intent:\n" + "".join(f"- {a}\n" for a in asks or ["continued"])
                                + "Files and code sections:\n" + "\n".join(f"- {f.removeprefix(root)}" for f in files)), 0

    def bare(body, i):
        asks, files = transcript_items(body)
        return 200, good_answer("".join(f"{a}\n" for a in asks) + "\n".join(f"- {f.rsplit('/', 1)[1]}" for f in files)), 0

    refused = server(bare)
    result = _compact(cli, refused, "--retries", "1", "--tail-turns", "0", "--concurrency", "1",
                      model="openai/test-model")
    assert result.exit_code == 1 and len(refused.requests) == 2   # the first chunk: one try, one retry
    assert "the last answer left out modified files " + root + "lib/spotter/transcripts/" in result.stderr
    assert root + "lib/spotter/transcripts/message.ex, " in result.stderr
    assert _data(memory_dir) == before
    kept = server(relative)
    result = _compact(cli, kept, "--tail-turns", "0", "--force", model="openai/test-model")
    assert result.exit_code == 0, result.stderr
    chunks = orjson.loads(cli("compactions", "a", "--json").stdout)[-1]["llm"]["requests"]
    assert len(kept.requests) == chunks and all(_missing_block(r) is None for r in kept.requests)


def test_a_target_that_leaves_a_model_less_than_what_it_must_name_is_refused_before_a_request(cli, memory_dir, server):
    """30 files modified: an answer must name them all (~330 tokens). A target leaving the summary
    100 tokens was sent, retried and shortened — four paid requests that could not succeed — and
    the refusal of a lower target had named a minimum with room for 80 tokens of summary."""
    events = _events()
    at = next(k for k, e in enumerate(events) if e["id"] == "t-2-a")
    for k in range(30):
        path = f"/home/me/shop/src/shipping/carriers/regional_carrier_module_{k}.py"
        events[at:at] = [
            {"id": f"t-2-e{k}", "trace_type": "tool_call", "tool_name": "Edit", "tool_call_id": f"e{k}",
             "tool_args": {"file_path": path, "old_string": "UPS", "new_string": "DHL"}, "ts": events[at]["ts"] - 1},
            {"id": f"t-2-f{k}", "trace_type": "tool_result", "tool_name": "Edit", "tool_call_id": f"e{k}",
             "tool_result": "ok", "ts": events[at]["ts"] - 0.5}]
        at += 2
    _ingest(cli, events)
    before = _data(memory_dir)
    srv = server(lambda body, i: (200, faithful_answer(body), 0))
    low = _compact(cli, srv, "--target-tokens", "10", "--tail-turns", "2")
    assert low.exit_code == 1 and srv.requests == []
    must_keep = int(low.stderr.split("must keep: ", 1)[1].split(" ", 1)[0].replace(",", ""))
    hinted = int(low.stderr.split("hint: use --target-tokens ", 1)[1].split(" ", 1)[0].replace(",", ""))
    assert hinted > must_keep + 300, low.stderr   # what must stay, and what the summary must name
    pressed = _compact(cli, srv, "--target-tokens", str(must_keep + 100), "--tail-turns", "2")
    assert pressed.exit_code == 1 and srv.requests == [], pressed.stderr
    error = _error(pressed)
    assert "with a model's summary:" in error and "must name its asks and modified files, about" in error
    assert "nothing was sent or written" in error and "or the offline summarizer (leave out --model)" in error
    assert _data(memory_dir) == before


def test_the_target_a_model_refusal_names_is_not_refused_in_turn_when_earlier_summaries_roll_up(cli, memory_dir):
    """With earlier summaries, what stays grows with the target (their rollup is given more
    room): a refusal named 1,132, and --target-tokens 1,132 was refused in turn ("use 1,475")."""
    import re

    from tests.test_compact_targets import _talk_from

    assert cli("ingest", "a", input=_talk_from(1, 100)).exit_code == 0
    assert cli("compact", "a", "--target-tokens", "3000").exit_code == 0
    assert cli("ingest", "a", input=_talk_from(101, 30)).exit_code == 0
    model = ("--model", PRICED, "--api-base", "http://127.0.0.1:9/v1", "--dry-run")   # no request is sent
    low = cli("compact", "a", "--target-tokens", "50", *model)
    assert low.exit_code == 1, low.stderr
    hinted = re.search(r"use --target-tokens ([\d,]+) or more", low.stderr).group(1)
    result = cli("compact", "a", "--target-tokens", hinted.replace(",", ""), *model)
    assert result.exit_code == 0, result.stderr
