"""The building blocks that keep offline compaction fast (docs/design.md §7): each is checked for
giving the same result as the plain way and for doing the work once — by counting calls, never
by timing."""

from __future__ import annotations

import random
from types import SimpleNamespace

import orjson
import pytest

from memcli import tool_interactions
from memcli.compaction import offline
from tests.helpers import CORPORA, needs_corpora


def _plain_vocabulary(text: str) -> tuple:
    """The vocabulary of ``text`` as one regex scan of the whole text finds it: without a
    terminal's colour codes (sent, or written as a string literal writes them), nor numbers,
    ranges and dates (``1_000``, ``97-179``, ``2026-02-11``), nor a newline's escape before a
    capital (``\\nSELECT``)."""
    text = offline._ESCAPE_IN_WORD.sub(" ", offline._ANSI_IN_WORD.sub("", text))
    return tuple(v for v in offline._VOCAB.findall(text) if len(v) >= 4 and not offline._NUMBERISH.fullmatch(v))


def _fresh_vocabulary(text: str) -> tuple:
    offline._VOCAB_CACHE.clear()
    offline._VOCAB_WORDS.clear()
    return offline._vocabulary_of(text)


@pytest.mark.parametrize("text", [
    "", "abc", "Fix src/app/main.py and tests/test_main.py (see MyClass.run_all, PR #12, deadbeef1)",
    "  ~/work/x.toml\tENV_VAR=1\u00a0foo-bar-baz\u3000camelCase\x1cA-1234 ../up/one.ts, 0123456789",
    "a.b.c-d_e/f g", "x" * 50, "see https://example.com/a/b?c=d.e-f and `pytest -q tests/test_x.py::TestY`",
    "\x1b[1mWould you\x1b[0m run \x1b[31mmemcli_store\x1b[0m? term.write(`\\x1b[31mError`) \\033[0;32mOK_DONE",
    "1_000 and 10_000 bytes, ~97-179 on 2026-02-11 in v1_2 __1__ -12_3",
    "node_modules/.pnpm/@jridgewell+gen-mapping@0.3.13/node_modules/x.js and a+b/c",
    "mail a.b+c@ex-ample.co.uk, x@y.z1 or git@github.com:me/r.git; web@1.0.0 @scope/pkg u@h",
    'sql = "\\nSELECT user_id\\nFROM sessions_table\\tWHERE" raise \\nError(x) C:\\new_folder\\Tests\\nNope',
])
def test_vocabulary_by_word_is_the_regex_over_the_text(text):
    assert _fresh_vocabulary(text) == _plain_vocabulary(text)


def test_vocabulary_by_word_matches_on_random_texts():
    rnd = random.Random(22)
    alphabet = "aZz_-./~@ \t\n\u00a0\u2003x9fF.py:é\u3000\x1c(),`'\"+1\x1b[m\\"
    for _ in range(5_000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 40)))
        assert _fresh_vocabulary(text) == _plain_vocabulary(text), text


@needs_corpora
def test_vocabulary_by_word_matches_on_real_sessions():
    texts = []
    for path in sorted((CORPORA / "claude-code").glob("*.jsonl")) + sorted((CORPORA / "codex").glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                stack = [orjson.loads(line)]
            except orjson.JSONDecodeError:
                continue
            while stack:
                value = stack.pop()
                if isinstance(value, str):
                    texts.append(value[:offline.VOCAB_TEXT_CHARS])
                elif isinstance(value, dict):
                    stack.extend(value.values())
                elif isinstance(value, list):
                    stack.extend(value)
    assert len(texts) > 1_000
    offline._VOCAB_CACHE.clear()
    offline._VOCAB_WORDS.clear()
    for text in texts:   # the caches warm as in a compaction: words seen before are not scanned again
        assert offline._vocabulary_of(text) == _plain_vocabulary(text)


class _CountingPattern:
    def __init__(self, pattern):
        self.pattern, self.scanned = pattern, []

    def findall(self, text):
        self.scanned.append(text)
        return self.pattern.findall(text)


def test_each_word_is_scanned_once(monkeypatch):
    counting = _CountingPattern(offline._VOCAB)
    monkeypatch.setattr(offline, "_VOCAB", counting)
    monkeypatch.setattr(offline, "_VOCAB_CACHE", {})
    monkeypatch.setattr(offline, "_VOCAB_WORDS", {})
    first = offline._vocabulary_of("Please check order A-1 and fix src/module_1.py")
    second = offline._vocabulary_of("Please check order A-2 and fix src/module_1.py now")
    assert first == ("src/module_1.py",)
    assert second == ("src/module_1.py",)
    # short words (under 4 characters) and words no identifier fits in (no "/", ".", "-", "_",
    # inner capital or run of hex digits: "Please") are never scanned; each other word once
    assert counting.scanned == ["src/module_1.py"]


def test_words_without_a_hint_hold_no_identifier():
    """The words skipped unscanned (:data:`offline._VOCAB_HINT` finds nothing in them) are words
    in which _VOCAB finds nothing: one of each kind of identifier, and plain words, both ways."""
    identifiers = ["src/app.py", "./run", "README.md", "os.path.join", "msg-1", "snake_case", "camelCase",
                   "CamelCase", "HTTPServer2X", "ENV_VAR", "x_1", "deadbee", "9f8e7d6c5b4a", "A1B", "Ab1C"]
    for word in identifiers:
        assert offline._VOCAB.findall(word), word
        assert offline._VOCAB_HINT.search(word), word
    for word in ["Please", "HTTP", "Order", "668:", "fine;", "passed", "ABCDEF", "abcdef", "Zebra", "x!y"]:
        assert not offline._VOCAB_HINT.search(word), word
        assert not offline._VOCAB.findall(word), word


def test_the_preference_prefilter_drops_no_preference():
    """:func:`offline._may_state_preference` (a substring test before the regex) says what the
    regex says: on each way of stating a preference, in any case, and on random texts."""
    stated = ["Always run the tests.", "NEVER push to main", "I would rather use uv", "I'd prefer to use tabs",
              "From now on, use ruff.", "Going forward keep it short", "don't ever delete data", "Do not ever",
              "Make sure you always lint", "Remember to rebase", "please never force-push", "alwayſ run it", "I PREFER x"]
    plain = ["Please check order A-1", "every evening", "preferences.json", "", "Whatever", "rather"]
    rnd = random.Random(23)
    alphabet = "alwaysneverpreferratherfromnowongoingforwardremembertoI'd .ſAN"
    texts = stated + plain + ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 30))) for _ in range(5_000)]
    for text in texts:
        assert offline._may_state_preference(text) == (offline._PREFERENCE.search(text) is not None), text
    assert all(offline._may_state_preference(t) for t in stated)


def _repeated_session() -> list:
    """Traces of one turn where calls and results come back (other call ids, same arguments and
    outputs): commands that pass with an outcome, fail by exit code or by tool error, an edit, a
    URL, a call answered out of order, an orphan result and a call never answered."""
    from memcli.models import RawTrace

    def call(n, args, result=None, error=None, tool="Bash"):
        return [dict(trace_type="tool_call", tool_name=tool, tool_call_id=f"c{n}", tool_args=args),
                dict(trace_type="tool_result", tool_name=tool, tool_call_id=f"c{n}", tool_result=result,
                     tool_error=error)]

    events = []
    for n in range(0, 30, 10):
        events += [dict(trace_type="user", content=f"Fix tests/test_x.py round {n}, see https://ex.example/a.")]
        events += call(n, {"command": "pytest -q tests/test_x.py"}, {"exit_code": 0, "stdout": "3 passed in 0.1s"})
        events += call(n + 1, {"command": "make lint"}, {"exit_code": 2, "stderr": "E501 line too long (app/x.py:3)"})
        events += call(n + 2, {"command": "git push"}, error="fatal: no upstream https://git.example/r")
        events += call(n + 3, {"file_path": "app/x.py", "old_string": "a = 1", "new_string": "RATE_LIMIT = 2"},
                       {"ok": True}, tool="Edit")
        events += call(n + 4, {"url": "https://docs.example/page"}, {"status": 200, "body": "see fetch_page() at https://docs.example/next."},
                       tool="WebFetch")
        first, second = call(n + 5, {"command": "ls src"}, {"exit_code": 0, "stdout": "app.py"}), \
            call(n + 6, {"command": "ls tests"}, {"exit_code": 0, "stdout": "test_x.py"})
        events += [first[0], second[0], second[1], first[1]]   # answered out of order
        events += [call(n + 7, None, {"exit_code": 0, "stdout": "stray"})[1]]   # an orphan result
        events += [call(n + 8, {"command": "sleep 999"})[0]]   # never answered
        events += [dict(trace_type="assistant", content=f"Round {n}: RATE_LIMIT set in app/x.py.")]
    return [RawTrace(f"t{i}", 1772442000.0 + i, "turn_0001", i, e.pop("trace_type"), e.pop("content", ""), "x", **e)
            for i, e in enumerate(events)]


def _digest_state(d) -> tuple:
    w = d.main
    return (d.line(), d.line(60, full=False), repr(d.vocab), repr(d.urls), d.text_chars, repr(w.calls), w.call_args,
            w.failed, w.last_failure, repr(w.failures), repr(w.commands), repr(w.files), repr(w.changes),
            repr(w.families), repr(w.outcomes), w.unanswered())


def test_repeated_calls_and_results_are_worked_out_once_and_say_the_same(monkeypatch):
    """What a call's arguments and a result object say is remembered by their JSON text
    (:func:`offline._call_of`, :func:`offline._result_of`): a digest fed with the memory is the
    digest fed without it (nothing remembered), and each distinct arguments' command is found once."""
    traces = _repeated_session()
    monkeypatch.setattr(offline, "MEMO_CHARS", -1)   # nothing is remembered: the plain way
    plain = offline._TurnDigest.fed(offline._TurnDigest("turn_0001"), traces)
    assert offline._result_of(traces[2], '{"exit_code":0}') is None
    monkeypatch.undo()
    monkeypatch.setattr(offline, "_CALLS", {})
    monkeypatch.setattr(offline, "_RESULTS", {})
    made = []

    def counting(cls):
        class Counting(cls):
            __slots__ = ()

            def __init__(self, value, text):
                made.append(text)
                super().__init__(value, text)
        return Counting

    monkeypatch.setattr(offline, "_Call", counting(offline._Call))
    monkeypatch.setattr(offline, "_Result", counting(offline._Result))
    remembered = offline._TurnDigest.fed(offline._TurnDigest("turn_0001"), traces)
    assert _digest_state(remembered) == _digest_state(plain)
    # 8 distinct arguments and 7 distinct result objects, each worked out once (3 rounds); the
    # orphan result's missing arguments each time (nothing to remember them by)
    assert len(made) == 8 + 7 + 3 and len(set(made)) == 8 + 7 + 1
    # and each says what the plain functions find in the value
    def urls(text):
        return tuple(u.rstrip(".,;:!?$") for u in offline._URL.findall(text[:2000]))

    for text, said in offline._CALLS.items():
        args = orjson.loads(text)
        command = offline.command_of(args)
        assert (said.command, said.family, said.brief, said.vocab, said.urls) == (
            command, command and offline.command_family(command), offline._arg_brief(args),
            _plain_vocabulary(offline._scanned("\n".join(offline._strings(args)))), urls(text))
    for text, said in offline._RESULTS.items():
        value = orjson.loads(text)
        failed, error = tool_interactions.result_failure(SimpleNamespace(tool_error=None, tool_result=value))
        assert (said.failed, said.error, said.brief, said.vocab, said.urls, said.outcome()) == (
            failed, error, offline.error_brief(error) if failed else "",
            _plain_vocabulary(offline._scanned(error if failed else "\n".join(offline._strings(value)))),
            urls(error if failed else text),
            offline.outcome_line(value))
    assert sum(said.failed for said in offline._RESULTS.values()) == 1
    assert sum(bool(said.outcome()) for said in offline._RESULTS.values()) == 1
    assert "app/x.py" in remembered.main.files and "https://docs.example/page" in remembered.urls
    assert remembered.main.outcomes and remembered.main.failures


# --------------------------------------------------------------------------- token counts from the cache

def _ingested(tmp_path, events):
    from memcli.ingest.api import ingest

    src = tmp_path / "events.ndjson"
    src.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    mem = tmp_path / "memory"
    ingest(mem, "a", src)
    return mem


class _CountingEncoding:
    """A tiktoken encoding that records the texts it is asked to encode."""

    def __init__(self, encoding):
        self.encoding, self.texts = encoding, []

    def encode_ordinary(self, text):
        self.texts.append(text)
        return self.encoding.encode_ordinary(text)


def _counting_encoder(monkeypatch):
    from memcli import tokens

    real = tokens._encoding
    counting: dict = {}

    def encoding(name):
        if name not in counting:
            counting[name] = _CountingEncoding(real(name))
        return counting[name]

    monkeypatch.setattr(tokens, "_encoding", encoding)
    return counting


@pytest.mark.parametrize("events", ["turns", "steps"])
def test_compaction_takes_counts_from_the_cache(tmp_path, monkeypatch, events):
    """Texts `stats` counted before are not counted again by the compaction (the plan, the
    summary budget and the count after it), and the compaction's own new counts (the summary)
    are saved for the next command."""
    import memcli
    from memcli.compaction.compactor import compact
    from memcli.compaction.policy import CompactionPolicy
    from tests.compact_fixtures import conversation, long_turn

    store_events = conversation(12, system=False) if events == "turns" else long_turn(30)
    mem = _ingested(tmp_path, store_events)
    agent = memcli.Memory(mem).agent("a")
    agent.stats()   # counts every text of the working snapshot into agents/a/.token-counts
    cache = mem / "agents" / "a" / ".token-counts"
    assert cache.exists()
    counting = _counting_encoder(monkeypatch)
    policy = CompactionPolicy(tail_turns=2) if events == "turns" else CompactionPolicy(target_tokens=1500)
    result = compact(mem, "a", policy=policy)
    assert result.compacted
    counted = [t for enc in counting.values() for t in enc.texts]
    stored = {e.get("content") for e in store_events} - {None, ""}
    assert counted, "the new summary is counted"
    assert not stored.intersection(counted), "a trace's text was counted again"
    assert any(result.summary in t or t in result.summary for t in counted)
    # the next command finds the summary's count in the cache: nothing is encoded again
    counting.clear()
    assert agent.stats().tokens.estimate == result.tokens_after
    assert [t for enc in counting.values() for t in enc.texts] == []


def test_the_count_cache_holds_no_more_in_memory_than_it_saves(tmp_path, monkeypatch):
    """A command that counts more new texts than the cache file keeps (a compaction of 100,000
    turns) does not hold them all: at most MAX_ENTRIES and a quarter more, and what it saves is
    the newest MAX_ENTRIES, as before."""
    import memcli.store.token_counts as module

    monkeypatch.setattr(module, "MAX_ENTRIES", 8)
    cache = module.TokenCountCache(tmp_path / ".token-counts")
    peak = 0
    for key in range(1, 101):
        cache.record(key, key % 7)
        peak = max(peak, len(cache.counts), len(cache.used))
    assert peak <= 8 + 2
    assert cache.lookup(100) == 100 % 7 and cache.lookup(1) is None
    assert cache.save()
    assert module.TokenCountCache(tmp_path / ".token-counts").counts == {k: k % 7 for k in range(93, 101)}


def test_a_compaction_keeps_the_counts_of_what_stays_not_of_what_it_archives(tmp_path, monkeypatch):
    """A compaction counts every text of the window it archives; the cache holds only the newest
    NEW_COUNTS_KEPT of the counts it adds (memory stays flat however large the window) — and the
    next command still finds every count it needs (what stays is counted last)."""
    import memcli
    from memcli.compaction import compactor
    from memcli.compaction.policy import CompactionPolicy
    from memcli.store.token_counts import TokenCountCache
    from tests.compact_fixtures import conversation

    monkeypatch.setattr(compactor, "NEW_COUNTS_KEPT", 20)
    mem = _ingested(tmp_path, conversation(40, system=False))
    held = []
    real_learn = TokenCountCache.learn

    def learn(self, encoding, text, tokens):
        real_learn(self, encoding, text, tokens)
        held.append(self.held)   # counts held, by key or by text

    monkeypatch.setattr(TokenCountCache, "learn", learn)
    result = compactor.compact(mem, "a", policy=CompactionPolicy(tail_turns=2))
    assert result.compacted and len(held) > 100      # the window's texts were counted ...
    assert max(held) <= 20 + 5                       # ... but not all held
    saved = TokenCountCache(mem / "agents" / "a" / ".token-counts")
    assert saved.valid and len(saved.counts) <= 25
    counting = _counting_encoder(monkeypatch)
    assert memcli.Memory(mem).agent("a").stats().tokens.estimate == result.tokens_after
    assert [t for enc in counting.values() for t in enc.texts] == []   # nothing counted again


def test_a_counter_kept_across_commands_uses_the_cache_of_the_block_it_counts_in(tmp_path):
    """A counter made once and kept (the offline summary's cached counter) must not keep recording
    into the cache of the first command that made it (another agent's, long saved)."""
    from memcli import tokens
    from memcli.store.token_counts import TokenCountCache

    first, second = TokenCountCache(tmp_path / "a"), TokenCountCache(tmp_path / "b")
    with tokens.counting_memo(first):
        counter = tokens.TokenCounter()
        counter.count("counted while the first cache is active")
    with tokens.counting_memo(second):
        counter.count("counted while the second cache is active")
    assert len(first.counts) == 1 and len(second.counts) == 1
    counter.count("counted outside any block")
    assert len(first.counts) == 1 and len(second.counts) == 1


# --------------------------------------------------------------------------- the feed's hand-over

def _feed_calls(mem, tail, keep, monkeypatch, eager: bool):
    """(turns handed over with their trace counts, calls of release, calls that handed none over) of a
    feed over ``mem``; ``eager``: release asked after every trace, not only when the scan may."""
    from memcli.compaction import window
    from memcli.store.agent import AgentStore

    got, calls = [], [0, 0]
    release, trace = window.WholeTurnFeed.release, window.WholeTurnFeed.trace

    def counted(feed):
        head = feed.head
        release(feed)
        calls[0] += 1
        calls[1] += feed.head == head

    def traced(feed, *args):
        trace(feed, *args)
        if eager:
            feed.release()

    monkeypatch.setattr(window.WholeTurnFeed, "release", counted)
    monkeypatch.setattr(window.WholeTurnFeed, "trace", traced)
    store = AgentStore(mem, "a")
    result = window.feed_scan(store, store.paths.active.stat().st_size, tail, keep,
                              lambda tid, traces, steps: got.append((tid, len(traces), steps)))
    monkeypatch.undo()
    return got, result.delivered, calls


@pytest.mark.parametrize("extra, tail, keep, asks", [([], 2, 1, 14), ([], 4, 4, 12), ([], 2, 5, None), ([], 0, 0, None),
                                                     ([("late", "turn_0001")], 2, 1, None),
                                                     ([("late", "turn_0009")], 1, 2, None)])
def test_the_feed_asks_to_hand_over_only_when_a_turn_can_go(tmp_path, monkeypatch, extra, tail, keep, asks):
    """A turn waiting for newer conversation turns is asked about again only when the one it waits
    for arrives, not at each step in between (a turn of ask, call, result and answer: once, not
    three times: ``asks`` calls in all), and what is handed over is what a feed asked after every
    trace hands over (turns that interleave, steps that decide)."""
    from tests.events import A, turns

    events = turns(12) + [A(text, turn_id=turn_id) for text, turn_id in extra] + turns(3, start=13)
    mem = _ingested(tmp_path, events)
    got, delivered, (calls, idle) = _feed_calls(mem, tail, keep, monkeypatch, eager=False)
    assert got and (got, delivered) == _feed_calls(mem, tail, keep, monkeypatch, eager=True)[:2]
    if asks is not None:
        assert (calls, idle) == (asks, asks - len(got))
