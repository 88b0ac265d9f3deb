"""`memcli compact --model` against the answers real models give (issue 22, point 3).

A fake that echoes the checklist as one clean JSON object is not what comes back from a model:
Claude writes ``<analysis>…</analysis><summary>…</summary>`` (its own compaction format), local
reasoning models put a ``<think>`` block first, some ignore JSON mode and write the sections as
markdown, JSON comes with trailing commas, ``//`` comments or raw line breaks in strings, asks
come back between typographic quotes without their final ``?``, files relative to the project
root, an answer stops at the output limit (``finish_reason: "length"``), a server leaves out
``usage`` or refuses ``response_format`` in its own words. Each is served by a local
OpenAI-compatible server (tests/compact_fixtures.py) to the real ``memcli compact --model
openai/... --api-base`` path (CLI and ``memcli.Memory(...).agent(...).compact``), over LiteLLM.

A good answer is kept at its first request (no false rejection, no paid retry); a bad one is
sent back saying what was wrong; the ledger counts what was really spent.
"""

from __future__ import annotations

import orjson
import pytest

from memcli.compaction.llm import Required, extract_json
from memcli.compaction.summarizer import Turn
from memcli.models import RawTrace
from tests.compact_fixtures import completion, good_answer, transcript_items
from tests.harness_fixtures import ClaudeSession
from tests.helpers import agent_dir, read_jsonl, tree_digest
from tests.test_compact_llm import _llm_env  # noqa: F401  (autouse: a dummy key, no backoff)

PRICED = "openai/gpt-4o-mini"      # LiteLLM prices it: 0.15 $/M input, 0.6 $/M output
UNKNOWN = "openai/test-model"      # not in LiteLLM's map: --max-context-tokens sizes the chunks
ROOT = "/home/me/shop"
ASKS = ("The build fails with `TypeError: generate is not a function`: fix it in src/build/generate.ts, "
        "and don't touch the user's config.",
        "Update the README with the new \"build\" steps?",
        "Corrige l'erreur dans la fonction de paiement et réessaie le déploiement.")
FILES = (f"{ROOT}/src/build/generate.ts", f"{ROOT}/README.md", f"{ROOT}/src/pay/checkout.ts")


def _session() -> bytes:
    """A Claude Code session (its own line format, tests/harness_fixtures.py): three turns that
    edit files under the project (absolute paths), then ordinary work."""
    s = ClaudeSession("answers", cwd=ROOT)
    for ask, path in zip(ASKS, FILES, strict=True):
        s.ask(ask)
        s.tool("Read", {"file_path": path}, "\n".join(f"export function step{n}() {{ return {n}; }}" for n in range(60)))
        s.tool("Edit", {"file_path": path, "old_string": "generate()", "new_string": "generate.run()"}, "ok")
        s.tool("Bash", {"command": "npm run build"}, "built in 2.1s")
        s.say(f"Done: {path} edited, the build passes.")
    for k in range(5):
        s.ask(f"Now refactor module {k}.")
        s.work(k)
    return s.jsonl()


def _ingest(cli, tmp_path):
    path = tmp_path / "session.jsonl"
    path.write_bytes(_session())
    result = cli("ingest", "a", str(path))
    assert result.exit_code == 0, result.stderr


def _compact(cli, srv, *args, model=PRICED):
    return cli("compact", "a", "--model", model, "--api-base", srv.api_base, "--tail-turns", "2", *args)


def _data(memory_dir) -> dict:
    digest = tree_digest(agent_dir(memory_dir, "a"))
    digest.pop(".compaction.json", None)   # the circuit breaker counts failures
    return digest


def _summary(memory_dir) -> str:
    (episodic,) = read_jsonl(agent_dir(memory_dir, "a") / "episodic.jsonl")
    return episodic["summary"]


def _ledger(cli) -> dict:
    return orjson.loads(cli("compactions", "a", "--json").stdout)[-1]["llm"]


def sections(body) -> str:
    """A good summary of the request ``body`` as a model writes it: markdown headings, asks
    between typographic quotes without their final punctuation, files relative to the project
    root with identifiers in backticks."""
    asks, files = transcript_items(body)
    quoted = ("“" + a.translate(str.maketrans({"'": "’", '"': "”"})).rstrip(".?!") + "”" for a in asks)
    return ("## Primary request and intent\nFix the build, document it, fix the payment function.\n\n"
            "## Files and code sections\n"
            + "\n".join(f"- `{f.removeprefix(ROOT + '/')}`: `generate()` → `generate.run()`" for f in files)
            + "\n\n## All user messages\n" + "\n".join(f"- {q}" for q in quoted)
            + "\n\n## Next step\nRun `npm test`.")


ANALYSIS = ("<analysis>\nChronologically: the user reported {\"error\": \"TypeError\"} in the build; "
            "I edited the files.\n</analysis>\n\n")
WRAPPERS = {   # how the same good summary comes back from different models
    "claude: analysis and summary blocks": lambda text: f"{ANALYSIS}<summary>\n{text}\n</summary>",
    "claude: analysis, then the JSON": lambda text: ANALYSIS + good_answer(text),
    "reasoning model: <think> first": lambda text: "<think>\nThe JSON must hold {\"episodic_summary\"}."
                                                    "\n</think>\n" + good_answer(text),
    "markdown sections, no JSON": lambda text: text,
    "fenced JSON after prose": lambda text: f"Here is the summary:\n```json\n{good_answer(text)}\n```",
    "JSON with trailing commas": lambda text: good_answer(text)[:-2] + ",],}",
    "JSON with // comments": lambda text: '{\n  // what the agent needs\n  "episodic_summary": '
                                          + orjson.dumps(text).decode() + ', /* none */ "semantic_facts": []}',
    "JSON with raw line breaks in a string": lambda text: good_answer(text).replace("\\n", "\n"),
}


@pytest.mark.parametrize("wrapper", list(WRAPPERS))
def test_a_good_answer_in_a_real_model_shape_is_kept_at_the_first_request(cli, memory_dir, server, tmp_path, wrapper):
    _ingest(cli, tmp_path)
    srv = server(lambda body, i: (200, WRAPPERS[wrapper](sections(body)), 0))
    result = _compact(cli, srv)
    assert result.exit_code == 0, result.stderr
    assert len(srv.requests) == 1 and "asked again" not in result.stderr   # no false rejection, no paid retry
    kept = _summary(memory_dir)
    assert kept == sections(srv.requests[0].body)   # the summary itself: no <analysis>, no JSON around it
    asks, files = transcript_items(srv.requests[0].body)
    assert list(asks[:3]) == list(ASKS) and list(files[:3]) == list(FILES)   # the window held what is checked
    llm = _ledger(cli)
    assert (llm["requests"], llm["input_tokens"], llm["output_tokens"]) == (1, 10, 10)


def test_json_is_read_leniently_and_the_summary_object_is_the_one_taken():
    text = "Fixed https://github.com/acme/shop/pull/482 // reviewed, see /* the diff */"
    answer = ('<analysis>{"episodic_summary": "draft"</analysis>\nNote {"a": 1}\n{"episodic_summary": '
              + orjson.dumps(text).decode() + ", // the summary\n \"semantic_facts\": [\"Uses pnpm\",],}")
    assert extract_json(answer) == {"episodic_summary": text, "semantic_facts": ["Uses pnpm"]}
    # an object without the summary is still what the validation is shown (it says what it lacks)
    assert extract_json('Sure. {"summary": "wrong field"}') == {"summary": "wrong field"}
    # prose without the asked sections is no summary
    with pytest.raises(Exception, match="no JSON object in the answer"):
        extract_json("I will now summarize the conversation. Primary request and intent: fix it.")


def _trace(tid, kind, content="", **kw):
    return RawTrace(id=tid, ts=1.0, turn_id="turn_0001", seq=0, trace_type=kind, content=content,
                    source_event="{}", **kw)


def test_asks_and_files_as_models_rewrite_them_are_named():
    asks = ["Fix the crash in /home/me/shop/src/cart/total.py please",
            "Corrige l'erreur dans la fonction de paiement et réessaie le déploiement.",
            "Исправь ошибку в функции оплаты и повтори развертывание",
            "Don't touch the user's config; update the project's README",
            "Look at ./src/app.py first"]
    required = Required(asks, [f"{ROOT}/README.md", "C:\\work\\shop\\src\\app.py"])
    answer = ("- fix the crash in `src/cart/total.py`\n"
              "- “Corrige l’erreur dans la fonction de paiement et réessaie le déploiement”\n"
              "- «Исправь ошибку в функции оплаты, повтори развертывание»\n"
              "- “Don’t touch the user’s config; update the project’s README”\n"
              "- look at src/app.py first\n- edited src\\app.py and /home/me/shop/README.md")
    missing = required.missing(answer)
    assert (missing.asks, missing.files) == ([], [])
    # what is not named stays missing: a translated ask lacks its words, a file its path
    missing = required.missing("- fixed cart/total.py\n- fixed the payment function and retried the deployment\n"
                               "- edited app.py")
    assert [a for a, _ in missing.asks] == asks[1:]
    assert missing.asks[0][1] == ["corrige", "l'erreur", "dans", "fonction", "paiement", "réessaie", "déploiement"]
    assert missing.files == [f"{ROOT}/README.md", "C:\\work\\shop\\src\\app.py"]


def test_a_file_at_the_project_top_is_named_from_there_when_the_agent_read_the_project():
    """Only README.md was edited (one directory: where does the project start?); the files the
    agent read under /home/me/shop/src tell: ``README.md`` names it."""
    read = _trace("r", "tool_call", tool_name="Read", tool_call_id="k1", tool_args={"file_path": f"{ROOT}/src/app.ts"})
    grep = _trace("g", "tool_call", tool_name="Grep", tool_call_id="k2", tool_args={"pattern": "x", "path": f"{ROOT}/src"})
    edit = _trace("e", "tool_call", tool_name="Edit", tool_call_id="k3", tool_args={"file_path": f"{ROOT}/README.md"})
    done = _trace("d", "tool_result", tool_name="Edit", tool_call_id="k3", tool_result="ok")
    ask = _trace("u", "user", "Update the README")
    assert Required.of([Turn("turn_0001", [ask, read, edit, done])]).missing("Edited `README.md`.").files == []
    assert Required.of([Turn("turn_0001", [ask, grep, edit, done])]).root == f"{ROOT}/"
    # without anything else seen, one directory says nothing
    alone = Required.of([Turn("turn_0001", [ask, edit, done])])
    assert alone.files == [f"{ROOT}/README.md"] and alone.missing("Edited `README.md`.").files == alone.files


def _cut(body) -> dict:
    payload = completion(good_answer(sections(body))[:150])
    payload["choices"][0]["finish_reason"] = "length"
    return payload


def test_an_answer_cut_at_the_output_limit_is_asked_again_shorter(cli, memory_dir, server, tmp_path):
    _ingest(cli, tmp_path)
    srv = server(lambda body, i: (200, _cut(body) if i == 0 else good_answer(sections(body)), 0))
    result = _compact(cli, srv)
    assert result.exit_code == 0, result.stderr
    assert len(srv.requests) == 2
    retry = srv.requests[1].user
    assert "Your previous answer for this transcript was cut off at the output limit before it ended. Write the " \
           "whole JSON object again, shorter: keep every user ask and modified file, and shorten the rest." in retry
    assert (f'memcli: {PRICED}, turn_0001–turn_0006: attempt 1: invalid answer: cut off at the output limit '
            '(finish_reason "length"); asked again (attempt 2 of 3)') in result.stderr.splitlines()
    assert _ledger(cli)["requests"] == 2


def test_a_cut_answer_is_never_kept_even_when_what_came_parses(cli, memory_dir, server, tmp_path):
    """``<summary>`` opened and never closed: the cut text reads as a summary, but its end (the
    current work, the next step) is missing: refused, nothing written."""
    _ingest(cli, tmp_path)
    before = _data(memory_dir)

    def cut_block(body, i):
        payload = completion(f"{ANALYSIS}<summary>\n{sections(body)}")
        payload["choices"][0]["finish_reason"] = "length"
        return 200, payload, 0

    srv = server(cut_block)
    result = _compact(cli, srv, "--retries", "1")
    assert result.exit_code == 1 and len(srv.requests) == 2
    assert "attempt 2: invalid answer: cut off at the output limit" in result.stderr
    assert "nothing was written" in result.stderr
    assert _data(memory_dir) == before


def test_an_unusable_answer_is_asked_again_saying_why(cli, memory_dir, server, tmp_path):
    _ingest(cli, tmp_path)
    srv = server(lambda body, i: (200, "I have read the transcript and will summarize it." if i == 0
                                  else good_answer(sections(body)), 0))
    result = _compact(cli, srv)
    assert result.exit_code == 0, result.stderr
    assert len(srv.requests) == 2
    assert ("Your previous answer for this transcript could not be used (no JSON object in the answer: 'I have read "
            "the transcript and will summarize it.'). Answer with exactly one JSON object, {\"episodic_summary\": "
            "..., \"semantic_facts\": [...]}, and nothing before or after it.") in srv.requests[1].user
    assert "<missing>" not in srv.requests[1].user


def test_an_answer_without_usage_is_counted_not_free(cli, memory_dir, server, tmp_path):
    from memcli.compaction.llm import LiteLLMSummarizer

    _ingest(cli, tmp_path)

    def no_usage(body, i):
        payload = completion(good_answer(sections(body)))
        del payload["usage"]
        return 200, payload, 0

    srv = server(no_usage)
    result = _compact(cli, srv)
    assert result.exit_code == 0, result.stderr
    counter = LiteLLMSummarizer(PRICED).counter
    body = srv.requests[0].body
    sent = counter.count("\n".join(m["content"] for m in body["messages"]))
    answered = counter.count(good_answer(sections(body)))
    llm = _ledger(cli)
    assert (llm["requests"], llm["input_tokens"], llm["output_tokens"]) == (1, sent, answered)
    assert llm["cost_usd"] == pytest.approx(sent * 0.15e-6 + answered * 0.6e-6)
    assert sent > 1000   # the whole prompt, not a token or two


@pytest.mark.parametrize("refusal", [
    "json mode is not supported for this model",
    "Unsupported value: 'response_format.type' does not support 'json_object' with this model.",
    "'response_format.type' must be 'json_schema' or 'text'",
    "grammar-based sampling is not available on this server",
])
def test_a_server_that_refuses_json_mode_in_its_own_words_is_asked_without_it(cli, memory_dir, server, tmp_path,
                                                                                refusal):
    _ingest(cli, tmp_path)

    def strict(body, i):
        if "response_format" in body:
            return 400, {"error": {"message": refusal, "type": "invalid_request_error", "code": 400}}, 0
        return 200, good_answer(sections(body)), 0

    srv = server(strict)
    result = _compact(cli, srv)
    assert result.exit_code == 0, result.stderr
    assert ["response_format" in r.body for r in srv.requests] == [True, False]
    assert _ledger(cli)["requests"] == 1   # the refusal was not an answer


def test_json_mode_refused_once_is_not_asked_again_for_the_other_chunks(cli, memory_dir, server, tmp_path):
    _ingest(cli, tmp_path)

    def strict(body, i):
        if "response_format" in body:
            return 400, {"error": {"message": "json mode is not supported", "code": 400}}, 0
        return 200, good_answer(sections(body)), 0

    srv = server(strict)
    result = _compact(cli, srv, "--max-context-tokens", "3000", "--concurrency", "1", "--target-tokens", "50000",
                      model=UNKNOWN)
    assert result.exit_code == 0, result.stderr
    chunks = _ledger(cli)["requests"]
    assert chunks >= 2
    assert ["response_format" in r.body for r in srv.requests] == [True] + [False] * chunks


def test_max_cost_makes_the_answer_reserve_a_limit_the_server_keeps(cli, memory_dir, server, tmp_path):
    """The cost bound prices each answer at the reserve: under ``--max-cost`` the request says so
    (``max_tokens``); without a limit the provider's own default stands."""
    from memcli.compaction.llm import LiteLLMSummarizer

    _ingest(cli, tmp_path)
    srv = server(lambda body, i: (200, good_answer(sections(body)), 0))
    assert _compact(cli, srv, "--dry-run").exit_code == 0
    result = _compact(cli, srv, "--max-cost", "1")
    assert result.exit_code == 0, result.stderr
    assert srv.requests[0].body["max_tokens"] == LiteLLMSummarizer(PRICED).output_tokens() == 4096
    result = _compact(cli, srv, "--force", "--tail-turns", "0")
    assert result.exit_code == 0, result.stderr
    assert "max_tokens" not in srv.requests[1].body


def test_a_chunked_window_of_claude_style_answers_keeps_every_chunks_asks(cli, memory_dir, server, tmp_path):
    _ingest(cli, tmp_path)
    srv = server(lambda body, i: (200, f"{ANALYSIS}<summary>\n{sections(body)}\n</summary>", 0))
    result = _compact(cli, srv, "--max-context-tokens", "3000", "--concurrency", "2", "--target-tokens", "50000",
                      model=UNKNOWN)
    assert result.exit_code == 0, result.stderr
    assert len(srv.requests) == _ledger(cli)["requests"] >= 2   # one request per chunk, none again
    summary = _summary(memory_dir)
    assert "<analysis>" not in summary and "Chronologically" not in summary
    for request in srv.requests:
        assert sections(request.body) in summary
    for ask in ASKS:   # every chunk's asks, as the model quoted them
        assert "“" + ask.translate(str.maketrans({"'": "’", '"': "”"})).rstrip(".?!") + "”" in summary


def test_the_library_takes_the_same_answers(memory_dir, server, tmp_path):
    import memcli

    path = tmp_path / "session.jsonl"
    path.write_bytes(_session())
    agent = memcli.Memory(memory_dir).agent("a")
    agent.ingest(str(path))
    srv = server(lambda body, i: (200, f"{ANALYSIS}<summary>\n{sections(body)}\n</summary>", 0))
    result = agent.compact(model=PRICED, api_base=srv.api_base, tail_turns=2)
    assert result.compacted and len(srv.requests) == 1
    assert result.summary == sections(srv.requests[0].body)
    assert (result.llm["requests"], result.llm["input_tokens"], result.llm["output_tokens"]) == (1, 10, 10)


DETAIL = "\nDetail line about the work done." * 120


def _shortening(requests_for_long: int = 99, leave_out: str | None = None):
    """A model that writes DETAIL after a good summary, and when asked to shorten a summary gives
    it back without DETAIL — the first time without ``leave_out`` — once it has been asked
    ``requests_for_long`` times."""
    state = {"shorten": 0}

    def model(body, i):
        system, user = (m["content"] for m in body["messages"])
        if not system.startswith("You shorten"):
            return 200, good_answer(sections(body) + DETAIL), 0
        state["shorten"] += 1
        text = user.split("<summary>\n", 1)[1].split("\n</summary>", 1)[0].replace("\\u003c", "<")
        if state["shorten"] <= requests_for_long:
            return 200, good_answer(text), 0   # still as long
        short = text.replace(DETAIL, "")
        if leave_out and state["shorten"] == requests_for_long + 1:
            short = "\n".join(line for line in short.splitlines() if leave_out not in line)
        return 200, good_answer(short), 0
    return model


def test_a_summary_over_its_budget_is_asked_shorter_before_anything_is_written(cli, memory_dir, server, tmp_path):
    """``--target-tokens 1500``: the model's summary leaves the snapshot over it. Before, the
    command paid for it and exited 1 suggesting a larger target; now the summary is sent back to
    be rewritten within the room left, checked like any answer (a file left out is asked for)."""
    _ingest(cli, tmp_path)
    srv = server(_shortening(requests_for_long=0, leave_out="README.md"))
    result = _compact(cli, srv, "--target-tokens", "1500", "--json")
    assert result.exit_code == 0, result.stderr
    assert orjson.loads(result.stdout)["tokens_after"] <= 1500
    assert len(srv.requests) == 3   # the summary, its rewrite, the rewrite again naming README.md
    first, again = srv.requests[1].user, srv.requests[2].user
    assert "Detail line about the work done." in first and first.endswith("Return the JSON object now.")
    assert "<missing>\n- modified file: /home/me/shop/README.md\n</missing>" in again
    assert _summary(memory_dir) == sections(srv.requests[0].body)
    notes = [line for line in result.stderr.splitlines() if "budget" in line or "asked again" in line]
    assert len(notes) == 2 and notes[0].startswith(f"memcli: {PRICED}, turn_0001–turn_0006: the summary is ")
    assert ", over its budget: asked to rewrite it within " in notes[0]
    assert "attempt 1: the summary left out 1 modified file; asked again (attempt 2 of 3)" in notes[1]
    assert _ledger(cli)["requests"] == 3


def test_a_summary_that_cannot_be_shortened_fails_an_explicit_target_cleanly(cli, memory_dir, server, tmp_path):
    _ingest(cli, tmp_path)
    before = _data(memory_dir)
    srv = server(_shortening())
    result = _compact(cli, srv, "--target-tokens", "1500", "--retries", "1")
    assert result.exit_code == 1 and len(srv.requests) == 3
    error = next(line for line in result.stderr.splitlines() if line.startswith("memcli: error:"))
    assert error.startswith(f"memcli: error: {PRICED} gave no valid summary for turn_0001–turn_0006 within ")
    assert " tokens after 2 attempts (attempt 1: invalid answer: the summary is " in error
    assert error.endswith("spent: 3 requests, 30 input + 30 output tokens, $0.000023; nothing was written")
    assert _data(memory_dir) == before


def test_without_an_explicit_target_a_summary_that_stays_long_is_written_and_said(cli, memory_dir, server, tmp_path):
    """The default target (half of a small context): a model that will not shorten costs its
    retries, then the summary is kept as written (as before), and the command says so."""
    _ingest(cli, tmp_path)
    srv = server(_shortening())
    result = _compact(cli, srv, "--max-context-tokens", "6000", "--retries", "1", model=UNKNOWN)
    assert result.exit_code == 0, result.stderr
    chunks = sum(1 for r in srv.requests if not r.system.startswith("You shorten"))
    assert chunks == 2 and len(srv.requests) == chunks + 2
    lines = result.stderr.splitlines()
    stays = next(k for k, line in enumerate(lines) if line.startswith("memcli: the summary stays above its budget: "))
    assert "asked again (attempt 2 of 2)" in lines[stays - 1]    # said after the requests it tells of
    assert lines[stays].endswith("spent: 4 requests, 40 input + 40 output tokens, price unknown")
    assert DETAIL.strip() in _summary(memory_dir)
    assert _ledger(cli)["requests"] == 4


def test_a_summary_too_large_for_one_request_is_not_sent_to_be_shortened(cli, memory_dir, server, tmp_path):
    _ingest(cli, tmp_path)
    srv = server(_shortening())
    result = _compact(cli, srv, "--max-context-tokens", "3000", model=UNKNOWN)
    assert result.exit_code == 0, result.stderr
    assert not any(r.system.startswith("You shorten") for r in srv.requests)   # nothing paid for a request that cannot fit
    (stays,) = [line for line in result.stderr.splitlines() if "stays above its budget" in line]
    assert stays.startswith(f"memcli: the summary stays above its budget: {UNKNOWN}: the summary of turn_0001–turn_0008 (")
    assert "tokens) is too large to rewrite in one request (the model's context leaves " in stays


def test_a_summary_written_as_json_sections_is_kept_as_their_text(cli, memory_dir, server, tmp_path):
    """JSON mode and "these sections" give an object of sections, facts under ``text`` with a
    confidence in words: the same content, kept at the first request as the text of its sections."""
    _ingest(cli, tmp_path)

    def model(body, i):
        asks, files = transcript_items(body)
        return 200, orjson.dumps({"episodic_summary": {
            "Primary request and intent": "Fix the build, document it, fix the payment function.",
            "Files and code sections": [{"file": f.removeprefix(ROOT + "/"), "change": "generate.run()"} for f in files],
            "All user messages": asks, "Pending tasks": [], "Next step": "Run `npm test`."},
            "semantic_facts": [{"text": "The project builds with `npm run build`", "tags": "build, npm",
                                "confidence": "high"}]}).decode(), 0

    srv = server(model)
    result = _compact(cli, srv)
    assert result.exit_code == 0, result.stderr
    assert len(srv.requests) == 1
    asks, files = transcript_items(srv.requests[0].body)
    assert _summary(memory_dir) == (
        "Primary request and intent:\nFix the build, document it, fix the payment function.\n\n"
        "Files and code sections:\n" + "\n".join(f"- file: {f.removeprefix(ROOT + '/')}\n  change: generate.run()"
                                                 for f in files)
        + "\n\nAll user messages:\n" + "\n".join(f"- {a}" for a in asks) + "\n\nNext step:\nRun `npm test`.")
    (fact,) = read_jsonl(agent_dir(memory_dir, "a") / "semantic.jsonl")
    assert (fact["fact"], fact["tags"], fact["confidence"]) == ("The project builds with `npm run build`", ["build", "npm"], 0.9)


def test_claude_over_the_anthropic_messages_api_answering_in_its_own_format(cli, memory_dir, server, tmp_path,
                                                                          monkeypatch):
    """``--model anthropic/claude-sonnet-4-5``: LiteLLM speaks the Messages API (``/v1/messages``,
    content blocks, ``stop_reason``, ``usage.input_tokens``); Claude answers with
    ``<analysis>``/``<summary>``; ``stop_reason: "max_tokens"`` is an answer cut off; the ledger
    prices both answers at Claude's price (3 $/M input, 15 $/M output)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-dummy")
    _ingest(cli, tmp_path)

    def claude(body, i):
        user = body["messages"][-1]["content"]
        user = user if isinstance(user, str) else "".join(block.get("text", "") for block in user)
        text = f"{ANALYSIS}<summary>\n{sections({'messages': [{'content': user}]})}\n</summary>"
        return 200, {"id": f"msg_{i}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "text", "text": text[:300] if i == 0 else text}],
                     "stop_reason": "max_tokens" if i == 0 else "end_turn", "stop_sequence": None,
                     "usage": {"input_tokens": 1000, "output_tokens": 200}}, 0

    srv = server(claude)
    result = cli("compact", "a", "--model", "anthropic/claude-sonnet-4-5", "--api-base",
                 srv.api_base.removesuffix("/v1"), "--tail-turns", "2")
    assert result.exit_code == 0, result.stderr
    assert [r.path for r in srv.requests] == ["/v1/messages"] * 2
    assert "attempt 1: invalid answer: cut off at the output limit" in result.stderr
    assert "<analysis>" not in _summary(memory_dir) and "## All user messages" in _summary(memory_dir)
    llm = _ledger(cli)
    assert (llm["requests"], llm["input_tokens"], llm["output_tokens"]) == (2, 2000, 400)
    assert llm["cost_usd"] == pytest.approx(2 * (1000 * 3e-6 + 200 * 15e-6))


def test_an_ask_translated_into_the_answers_language_is_sent_back_with_its_own_words(cli, memory_dir, server,
                                                                                      tmp_path):
    _ingest(cli, tmp_path)
    french = ASKS[2]
    english = "Fix the error in the payment function and retry the deployment."

    def model(body, i):
        text = sections(body)
        return 200, good_answer(text if i else text.replace(
            "“" + french.replace("'", "’").rstrip(".") + "”", english)), 0

    srv = server(model)
    result = _compact(cli, srv)
    assert result.exit_code == 0, result.stderr
    assert len(srv.requests) == 2
    block = srv.requests[1].user.split("<missing>\n", 1)[1].split("\n</missing>", 1)[0]
    assert block == f'- user ask "{french}": name corrige, l\'erreur, dans, fonction, paiement, réessaie, déploiement'


TRACEBACK = """I get this error when I open the profile page, can you fix it?

Traceback (most recent call last):
  File "/home/me/.venv/lib/python3.12/site-packages/django/core/handlers/exception.py", line 55, in inner
    response = get_response(request)
  File "/home/me/.venv/lib/python3.12/site-packages/django/core/handlers/base.py", line 197, in _get_response
    response = wrapped_callback(request, *callback_args, **callback_kwargs)
  File "/home/me/shop/accounts/views.py", line 42, in get_profile
    return render(request, "profile.html", {"user": user_map[request.user.id]})
KeyError: 'user_id'"""


@pytest.mark.parametrize("cut", [200, 190])   # at the prompt's 200 characters, or at the word before
def test_a_pasted_traceback_quoted_verbatim_up_to_200_characters_is_named(cli, memory_dir, server, tmp_path, cut):
    """The prompt asks for each ask "verbatim up to 200 characters": a model doing just that
    for a pasted traceback was sent back to name the site-packages paths deep inside it."""
    s = ClaudeSession("paste", cwd=ROOT)
    s.ask(TRACEBACK)
    s.tool("Edit", {"file_path": f"{ROOT}/accounts/views.py", "old_string": "user_map[request.user.id]",
                    "new_string": "user_map.get(request.user.id)"}, "ok")
    s.say("Fixed: get_profile no longer raises KeyError.")
    for k in range(3):
        s.ask(f"Now refactor module {k}.")
        s.work(k)
    path = tmp_path / "paste.jsonl"
    path.write_bytes(s.jsonl())
    assert cli("ingest", "a", str(path)).exit_code == 0

    def model(body, i):
        asks, files = transcript_items(body)
        quoted = "\n".join(f'- "{" ".join(a.split())[:cut]}"' for a in asks)
        return 200, good_answer("## All user messages\n" + quoted + "\n## Files and code sections\n"
                                + "\n".join(f"- {f}" for f in files)), 0

    srv = server(model)
    result = _compact(cli, srv)
    assert result.exit_code == 0, result.stderr
    assert len(srv.requests) == 1 and "asked again" not in result.stderr


def test_a_turn_larger_than_a_request_is_read_whole_in_parts_not_clipped(cli, memory_dir, server, tmp_path):
    """One ask, then a long stretch of work (the usual coding-agent turn) with a small-context
    model: the turn went out as one request with every field clipped to a few dozen characters
    (paths and test names cut); now its traces go out whole, in consecutive parts, each once."""
    s = ClaudeSession("long", cwd=ROOT)
    s.ask("Make every module read its config through load_config, and keep the suite green.")
    for k in range(12):
        s.work(k)
    for k in range(2):
        s.ask(f"Now document module {k}.")
        s.work(20 + k, steps=2)
    path = tmp_path / "long.jsonl"
    path.write_bytes(s.jsonl())
    assert cli("ingest", "a", str(path)).exit_code == 0

    def model(body, i):
        asks, files = transcript_items(body)
        return 200, good_answer("## All user messages\n" + "\n".join(f"- {a}" for a in asks)
                                + "\n## Files and code sections\n" + "\n".join(f"- {f}" for f in files)), 0

    srv = server(model)
    result = _compact(cli, srv, "--max-context-tokens", "4000", "--target-tokens", "50000", "--concurrency", "1",
                      model=UNKNOWN)
    assert result.exit_code == 0, result.stderr
    assert len(srv.requests) >= 3
    blocks = [r.user.split("<transcript", 1)[1].split("\n</transcript>", 1)[0] for r in srv.requests]
    assert not any("characters clipped" in b for b in blocks)
    lines = [orjson.loads(line) for b in blocks for line in b.split("\n")[1:]]
    assert sum(1 for t in lines if t["type"] == "tool_call") == 12 * 4   # each call once, whole
    summary = _summary(memory_dir)
    assert summary.startswith(f"turn_0001, summarized in {len(srv.requests)} parts:\n\n[turn_0001]\n")
    for k in range(12):
        assert f"{ROOT}/src/pkg_{k}/module_{k}.py" in summary
    assert sum(1 for r in srv.requests if "Make every module read its config" in r.user.split("<checklist>")[0]) == 1


def test_a_dry_run_with_a_model_prices_without_loading_litellm(cli, memory_dir, tmp_path):
    """``compact --model openai/gpt-4o-mini --dry-run`` calls no model: it priced its estimate
    with LiteLLM imported (~3 s of a 6 s command); the map is read as a file instead, for the
    same figure LiteLLM gives."""
    import subprocess
    import sys

    from tests.helpers import proc_env

    _ingest(cli, tmp_path)
    code = ("import sys; from memcli.cli.app import build_app\n"
            "try:\n    build_app('compact')(['--dir', sys.argv[1], 'compact', 'a', '--model', 'openai/gpt-4o-mini', "
            "'--dry-run', '--json'], prog_name='memcli')\n"
            "except SystemExit as e:\n    print(e.code, 'litellm' in sys.modules, file=sys.stderr)")
    run = subprocess.run([sys.executable, "-c", code, str(memory_dir)], capture_output=True, text=True,
                         env=proc_env(), timeout=120)
    assert run.stderr.split()[-2:] == ["0", "False"], run.stderr
    estimate = orjson.loads(run.stdout)["estimate"]
    assert estimate["cost_usd"] == pytest.approx(estimate["input_tokens"] * 0.15e-6 + estimate["max_output_tokens"] * 0.6e-6)


@pytest.mark.parametrize("model, flat", [
    ("openai/gpt-4o-mini", True), ("anthropic/claude-sonnet-4-5", True), ("deepseek/deepseek-chat", True),
    ("gemini/gemini-2.5-pro", False),          # priced by tiers of prompt size: LiteLLM's own rule
    ("openrouter/openai/gpt-4o-mini", False),  # another provider's entry: LiteLLM says no price
    ("openai/test-model", False)])
def test_an_estimate_priced_from_the_map_is_what_litellm_says(model, flat):
    from memcli.compaction.llm import LiteLLMSummarizer, flat_price
    from memcli.tokens import import_litellm

    assert (flat_price(model) is not None) == flat
    summarizer = LiteLLMSummarizer(model)
    estimated, priced = summarizer.price(None, 123_456, 7_890), summarizer.price(import_litellm(), 123_456, 7_890)
    assert estimated == pytest.approx(priced) if priced is not None else estimated is None


def test_an_answer_with_no_choice_or_a_filtered_one_is_asked_again(cli, memory_dir, server, tmp_path):
    """A 200 whose ``choices`` is empty stopped the run at once ("IndexError: list index out
    of range"); a content filter's empty answer was "empty answer", and its answer cut short was
    committed. All are asked again."""
    _ingest(cli, tmp_path)

    def model(body, i):
        payload = completion(good_answer(sections(body)))
        if i == 0:
            payload["choices"] = []
        elif i == 1:
            payload["choices"][0].update(message={"role": "assistant", "content": None}, finish_reason="content_filter")
        elif i == 2:
            payload["choices"][0]["finish_reason"] = "content_filter"   # the whole answer, yet filtered
        return 200, payload, 0

    srv = server(model)
    result = _compact(cli, srv, "--retries", "3")
    assert result.exit_code == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if "asked again" in line]
    assert [n.split(": attempt ", 1)[1] for n in notes] == [
        "1: invalid answer: empty answer; asked again (attempt 2 of 4)",
        '2: invalid answer: the provider\'s content filter withheld the answer (finish_reason "content_filter"); '
        "asked again (attempt 3 of 4)",
        '3: invalid answer: the provider\'s content filter cut the answer (finish_reason "content_filter"); '
        "asked again (attempt 4 of 4)"]
    assert _ledger(cli)["requests"] == 4
