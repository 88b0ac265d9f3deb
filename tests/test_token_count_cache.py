"""Fast ``snapshot``/``stats`` (issue 17): the tokenizer's start-up is not paid on every call.

Counts of texts counted before come from the agent's rebuildable cache
(``agents/<id>/.token-counts``, memcli/store/token_counts.py); totals are exactly those of
tiktoken without the cache; a damaged cache is ignored and rewritten; ``clear`` removes it.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys

import orjson
import pytest

import memcli.tokens as tokens
from memcli.store.token_counts import MAGIC, TokenCountCache
from tests.helpers import REPO, proc_env

CACHE = ".token-counts"


@pytest.fixture
def sample(memory_dir):
    shutil.copytree(REPO / "sample_memory", memory_dir)
    return memory_dir


def _stats_tokens(cli, *args) -> int:
    result = cli("stats", "coder", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return orjson.loads(result.stdout)["tokens"]["estimate"]


def _uncached_stats_tokens(memory_dir, model=None) -> int:
    from memcli.inspect.stats import compute_stats
    from memcli.store.agent import AgentStore

    return compute_stats(AgentStore(memory_dir, "coder"), model=model).tokens.estimate


def _snapshot(cli, *args):
    result = cli("snapshot", "coder", *args)
    assert result.exit_code == 0, result.stderr
    return result.stdout, result.stderr


@pytest.fixture
def no_tokenizer(monkeypatch):
    """Fail if anything loads a tiktoken encoding."""
    def refuse(name):
        raise AssertionError(f"the {name} encoding was loaded")

    def install():
        monkeypatch.setattr(tokens, "_encoding", refuse)

    return install


def test_counts_are_the_same_cold_warm_and_without_cache(cli, sample, no_tokenizer):
    expected = _uncached_stats_tokens(sample)
    expected_4o = _uncached_stats_tokens(sample, "gpt-4o")
    assert not (sample / "agents" / "coder" / CACHE).exists()
    cold = _stats_tokens(cli)
    payload, note = _snapshot(cli)
    assert (sample / "agents" / "coder" / CACHE).is_file()
    assert _stats_tokens(cli, "--model", "gpt-4o") == expected_4o
    no_tokenizer()
    assert cold == _stats_tokens(cli) == expected
    assert _stats_tokens(cli, "--model", "gpt-4o") == expected_4o
    assert _snapshot(cli) == (payload, note)  # the same payload, the same token figure and method
    assert "(tiktoken o200k_base)" in note


def test_a_damaged_cache_is_ignored_and_rewritten(cli, sample):
    expected = _uncached_stats_tokens(sample)
    path = sample / "agents" / "coder" / CACHE
    _stats_tokens(cli)
    good = path.read_bytes()
    for damaged in (b"", b"garbage\n", good[:-5], MAGIC + b"\xff\xff\xff\xff", good[:len(MAGIC) + 4] + good[-7:]):
        path.write_bytes(damaged)
        assert _stats_tokens(cli) == expected
        assert TokenCountCache(path).valid
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_wrong_count_in_the_cache_is_what_a_cache_gives(cli, sample):
    """The cache is what answers: proof the warm path does not count again (and that the key is
    the text, so a cache rebuilt from the files gives the same numbers)."""
    path = sample / "agents" / "coder" / CACHE
    before = _stats_tokens(cli)
    cache = TokenCountCache(path)
    cache.counts = {key: n + 1 for key, n in cache.counts.items()}
    cache.added = 1
    assert cache.save()
    assert _stats_tokens(cli) > before
    path.unlink()
    assert _stats_tokens(cli) == before


def test_warm_commands_do_not_import_tiktoken(sample):
    env = proc_env({"MEMCLI_DIR": str(sample)})
    for args in (["stats", "coder"], ["snapshot", "coder"]):
        subprocess.run([sys.executable, "-m", "memcli", *args], env=env, capture_output=True, check=True)
        warm = subprocess.run([sys.executable, "-X", "importtime", "-m", "memcli", *args], env=env,
                              capture_output=True, text=True, check=True)
        imported = [line.split("|")[-1].strip() for line in warm.stderr.splitlines() if line.startswith("import time")]
        assert "memcli.cli.app" in imported and "tiktoken" not in imported, args


def test_clear_removes_the_cache(cli, sample):
    _stats_tokens(cli)
    assert cli("clear", "coder", "--keep-memory", "--yes").exit_code == 0
    assert not (sample / "agents" / "coder" / CACHE).exists()


def test_an_unwritable_place_leaves_no_file_and_no_error(cli, sample, tmp_path, monkeypatch):
    cache = TokenCountCache(tmp_path / "gone" / CACHE)   # e.g. the agent was cleared meanwhile
    cache.record(1, 1)
    assert cache.save() is False and not (tmp_path / "gone").exists()
    real_replace = os.replace

    def refuse(src, dst):
        raise PermissionError(13, "read-only", str(dst))

    monkeypatch.setattr(os, "replace", refuse)
    assert _stats_tokens(cli) == _uncached_stats_tokens(sample)
    monkeypatch.setattr(os, "replace", real_replace)
    assert sorted(p.name for p in (sample / "agents" / "coder").iterdir() if p.name.startswith(CACHE)) == []


def test_cache_round_trip_and_limit(tmp_path, monkeypatch):
    import memcli.store.token_counts as module

    path = tmp_path / CACHE
    cache = TokenCountCache(path)
    assert not cache.valid and cache.lookup(1) is None and not cache.save()  # nothing learned: no file
    assert not path.exists()
    cache.record(1, 10)
    cache.record(2**64 - 1, 7)
    assert cache.save()
    again = TokenCountCache(path)
    assert again.valid and again.counts == {1: 10, 2**64 - 1: 7}
    monkeypatch.setattr(module, "MAX_ENTRIES", 3)
    again.lookup(1)          # used by this command: kept
    for key in (10, 11):
        again.record(key, key)
    assert again.save()
    assert TokenCountCache(path).counts == {1: 10, 10: 10, 11: 11}  # 2**64-1, unused, went
    assert not list(tmp_path.glob("*.tmp"))


def test_counter_uses_the_memo_and_loads_the_encoding_only_on_a_miss():
    class Memo(dict):   # counts by key, as a memo that is not the store's cache keeps them
        def known(self, encoding, text):
            return self.get(tokens.text_key(encoding, text))

        def learn(self, encoding, text, n):
            self[tokens.text_key(encoding, text)] = n

    memo = Memo()
    counter = tokens.TokenCounter(memo=memo)
    n = counter.count("hello world, counted once")
    assert memo == {tokens.text_key("cl100k_base", "hello world, counted once"): n}
    warm = tokens.TokenCounter(memo=memo)
    assert warm.count("hello world, counted once") == n and warm.remembered == 1
    assert warm._loaded is tokens._UNLOADED and warm.exact  # answered without loading tiktoken
    with tokens.counting_memo(memo):
        assert tokens.TokenCounter().memo is memo
    assert tokens.TokenCounter().memo is None
    assert tokens.text_key("cl100k_base", "x") != tokens.text_key("o200k_base", "x")


def test_a_command_that_counts_many_texts_keeps_only_its_newest_counts(tmp_path):
    """``keep_new``: of the counts a command adds, the newest ``keep_new`` (a quarter more at
    most, between trims) are held and saved, oldest forgotten first; counts it loaded stay."""
    path = tmp_path / CACHE
    first = TokenCountCache(path)
    for key in range(100, 103):
        first.record(key, key)
    assert first.save()
    cache = TokenCountCache(path, keep_new=4)
    for key in range(1, 12):
        cache.record(key, key * 10)
        assert len(cache.new) <= 5 and list(cache.new) == list(range(1, key + 1))[-len(cache.new):]
    cache.record(11, 110)   # known already: nothing moves
    assert list(cache.new) == [7, 8, 9, 10, 11] and cache.used == {7, 8, 9, 10, 11}   # trimmed at 6, 8, 10
    assert cache.counts == {100: 100, 101: 101, 102: 102, 7: 70, 8: 80, 9: 90, 10: 100, 11: 110}
    assert cache.save()
    assert TokenCountCache(path).counts == cache.counts


def test_the_key_of_a_text_is_blake2b_of_the_text_personalized_by_the_encoding():
    """The cache file holds these keys: they must not change from one memcli to the next."""
    from hashlib import blake2b

    for encoding, text in [("o200k_base", "hello"), ("cl100k_base", "hello"), ("o200k_base", "\ud800 lone"),
                           ("an-encoding-name-longer-than-16", "x" * 5000), ("o200k_base", "é")]:
        digest = blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8, person=encoding.encode()[:16])
        assert tokens.text_key(encoding, text) == int.from_bytes(digest.digest(), "little")
    assert tokens.text_key("o200k_base", "a") != tokens.text_key("o200k_base", "b")


def _learned(path, keep_new, texts, *, by_key):
    """A cache at ``path`` that learned ``texts`` (a list of (encoding, text)) as a counter
    teaches it: by text, or (``by_key``) each text's key recorded directly; saved."""
    cache = TokenCountCache(path, keep_new)
    for encoding, text in texts:
        if cache.known(encoding, text) is None:
            if by_key:
                cache.record(tokens.text_key(encoding, text), len(text))
            else:
                cache.learn(encoding, text, len(text))
    cache.save()
    return path.read_bytes()


@pytest.mark.parametrize("keep_new", [None, 4, 7])
def test_a_cache_that_learns_by_text_saves_what_recording_each_key_saves(tmp_path, monkeypatch, keep_new):
    """While a cache holds no key it keeps what it learns by text and computes the keys of the
    counts it keeps only (the ones it forgets are never hashed); the file it saves is the one
    recording every key at once gives: same counts, same order — from no file, from a file, with
    texts counted twice, forgotten and counted again, and with two encodings."""
    import memcli.store.token_counts as module

    monkeypatch.setattr(module, "MAX_ENTRIES", 12)
    one = [("o200k_base", f"text {i}") for i in range(30)]
    mixed = one[:5] + one[:3] + [("cl100k_base", "other")] + one[5:] + one[:2] + [("o200k_base", "last")]
    for name, texts in [("cold", one), ("short", one[:14]), ("over", one[:17]), ("mixed", mixed),
                        ("again", one + one[:10])]:
        for start in (None, [("o200k_base", "saved before"), ("o200k_base", "text 3")]):
            files = []
            for by_key in (True, False):
                path = tmp_path / f"{name}-{by_key}-{bool(start)}"
                if start:
                    _learned(path, None, start, by_key=True)
                files.append(_learned(path, keep_new, texts, by_key=by_key))
            assert files[0] == files[1], (name, start)
            assert len(files[0]) > len(MAGIC) + 4

    hashed = []
    real = module.text_key
    monkeypatch.setattr(module, "text_key", lambda e, t: hashed.append(t) or real(e, t))
    _learned(tmp_path / "counted", 7, one, by_key=False)
    assert len(hashed) <= 7 + 1 and set(hashed) <= {t for _, t in one[-9:]}   # only what it saved


def test_a_cache_learning_by_text_answers_what_it_learned_and_reads_by_key(tmp_path):
    key = {t: tokens.text_key("o200k_base", t) for t in "abcde"}
    cache = TokenCountCache(tmp_path / CACHE, keep_new=2)
    cache.learn("o200k_base", "a", 1)
    assert cache.known("o200k_base", "a") == 1 and cache.known("cl100k_base", "a") is None
    for n, text in enumerate("bcd", 2):
        cache.learn("o200k_base", text, n)   # the 4th is over 2 + 1: trimmed to the newest 2
    assert cache.known("o200k_base", "a") is None and cache.known("o200k_base", "b") is None
    assert cache.known("o200k_base", "d") == 4 and cache.held == 2 and cache.added == 4
    assert cache.lookup(key["c"]) == 3     # read by key: the texts are keyed first
    assert cache.counts == {key["c"]: 3, key["d"]: 4} and list(cache.new) == [key["c"], key["d"]]
    cache.learn("o200k_base", "e", 5)      # a key is held now: learned by key
    assert cache.known("o200k_base", "e") == 5 and list(cache.new) == [key["c"], key["d"], key["e"]]


def test_a_text_with_lone_surrogates_counts_as_tiktoken_counts_it():
    """The bundled tokenizer is tiktoken's BPE core; a text it cannot take as UTF-8 (lone
    surrogates, which stored text may hold) is counted as tiktoken's Encoding counts it."""
    import tiktoken

    counter = tokens.TokenCounter("gpt-4o")
    assert counter.count("warm up") == 2
    if not isinstance(counter._loaded, tokens._Tokenizer):
        pytest.skip("the encoding is tiktoken's own (TIKTOKEN_CACHE_DIR is set)")
    fields = tokens._bundled_fields("o200k_base")   # what the counter's core was built from
    reference = tiktoken.Encoding(name="o200k_base", pat_str=fields["pat_str"],
                                  mergeable_ranks=fields["mergeable_ranks"], special_tokens=fields["special_tokens"])
    for text in ["plain text", "a \ud800 lone surrogate", "\udfff", "mixed é \ud83d\ude00 and \ud83d",
                 "<|endoftext|> is ordinary here"]:
        assert counter.count(text) == len(reference.encode_ordinary(text)), text


def test_a_tiktoken_whose_core_cannot_be_built_directly_still_counts_exactly(monkeypatch):
    """The bundled tokenizer builds tiktoken's core itself; when that fails (a tiktoken whose
    core takes other arguments) tiktoken's own Encoding is built instead — counts stay exact,
    never estimates."""
    class OtherCore(tokens._Tokenizer):
        def __init__(self, *args, **kwargs):
            raise TypeError("CoreBPE() takes other arguments")

    assert isinstance(tokens._bundled_encoding("cl100k_base"), tokens._Tokenizer)
    monkeypatch.setattr(tokens, "_Tokenizer", OtherCore)
    encoding = tokens._bundled_encoding("cl100k_base")
    assert type(encoding).__name__ == "Encoding" and encoding.encode_ordinary("hello world") == [15339, 1917]
