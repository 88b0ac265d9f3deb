"""Token counts and model context sizes, offline.

* Counting uses tiktoken with the encoding that fits the model family: ``o200k_base`` for the
  GPT-4o / GPT-4.1 / GPT-5 / o-series family, ``cl100k_base`` for everything else (older OpenAI
  models, and as the closest public approximation for Claude, Gemini and others — the note
  below says so). tiktoken normally downloads its encodings on first use, which fails offline;
  LiteLLM's wheel ships ``cl100k_base`` and ``o200k_base`` in
  ``litellm/litellm_core_utils/tokenizers/`` (found with ``importlib.util.find_spec``, without
  importing LiteLLM), so unless the user set ``TIKTOKEN_CACHE_DIR`` the encoding is built from
  those files (:func:`_bundled_encoding`). memcli never writes ``os.environ``.
  If no encoding can be loaded, counts fall back to an estimate (UTF-8 bytes / 4) and a note
  saying so is printed once on stderr — never an exception.
* Start-up: tiktoken spends 0.2–0.5 s reading and base64-decoding an encoding's BPE file and
  building its tokenizer — more than the rest of ``snapshot`` or ``stats`` on a small agent. So
  a :class:`TokenCounter` loads its encoding only when it must count a text, and a *count memo*
  (:func:`counting_memo`; the store keeps one per agent, a rebuildable cache file) answers texts
  counted before, keyed by a 64-bit BLAKE2b digest of (encoding, text). A remembered count is
  the same number tiktoken gives for that text; only exact counts are remembered.
* Context sizes come from LiteLLM's model map (``model_prices_and_context_window_backup.json``
  in its wheel), read directly as JSON: the same data ``litellm.get_model_info`` uses, without
  the ~3 s import. The caller's flag overrides them (it must be 1 or more: a UsageError
  otherwise); unknown models without it get 200,000 (docs/design.md §4).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from contextlib import contextmanager
from functools import lru_cache
from hashlib import blake2b
from pathlib import Path
from typing import Iterator, Protocol

import orjson

DEFAULT_CONTEXT_TOKENS = 200_000
DEFAULT_OUTPUT_TOKENS = 4_096
# output reserved for the next reply when budgeting the input: the model's maximum output, capped
# (a 128k-output model does not spend 128k on every reply; reserving that would halve its budget)
MAX_RESERVED_OUTPUT = 8_192
_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o", "gpt-oss")
_warned: set[str] = set()


def warn_once(key: str, message: str) -> None:
    """Print ``message`` on stderr the first time ``key`` is seen in this process."""
    if key not in _warned:
        _warned.add(key)
        print(f"memcli: note: {message}", file=sys.stderr)


def _litellm_dir() -> Path | None:
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).parent


def _bundled_fields(name: str) -> dict | None:
    """The arguments of the tiktoken encoding ``name`` (``pat_str``, ``mergeable_ranks``...)
    read from the BPE files in LiteLLM's wheel (its files are named as tiktoken's cache names
    them: the SHA-1 of the download URL), or None. tiktoken's own constructor runs with its
    ``load_tiktoken_bpe`` bound to a reader of those files — a copy of the function with other
    globals, so nothing global (os.environ, tiktoken's module) changes."""
    import hashlib
    import types
    from binascii import a2b_base64

    root = _litellm_dir()
    folder = root / "litellm_core_utils" / "tokenizers" if root is not None else None
    if folder is None or not folder.is_dir():
        return None
    from tiktoken_ext import openai_public

    constructor = openai_public.ENCODING_CONSTRUCTORS.get(name)
    if constructor is None:
        return None

    def load_bundled(url: str, expected_hash: str | None = None) -> dict:
        data = (folder / hashlib.sha1(url.encode()).hexdigest()).read_bytes()
        if expected_hash and hashlib.sha256(data).hexdigest() != expected_hash:
            raise ValueError(f"{name}: the bundled BPE file does not match its expected hash")
        # what tiktoken's load_tiktoken_bpe builds from its "<base64 token> <rank>" lines
        # (base64.b64decode is a2b_base64 behind checks that cost half of it; the list first,
        # then the dict: about 0.06 s against 0.15 s for o200k_base's 200,000 ranks)
        fields = data.split()
        return dict(zip(list(map(a2b_base64, fields[::2])), map(int, fields[1::2]), strict=True))

    bound = types.FunctionType(constructor.__code__, {**constructor.__globals__, "load_tiktoken_bpe": load_bundled},
                               constructor.__name__, constructor.__defaults__, constructor.__closure__)
    return bound()


def _bundled_encoding(name: str):
    """The encoding ``name`` built from :func:`_bundled_fields`: a :class:`_Tokenizer` (a
    ``tiktoken.Encoding`` if tiktoken's core cannot be built that way), or None."""
    fields = _bundled_fields(name)
    if fields is None:
        return None
    try:
        return _Tokenizer(**fields)
    except (ImportError, AttributeError, TypeError):   # a tiktoken whose core is built otherwise
        import tiktoken

        return tiktoken.Encoding(**fields)


class _Tokenizer:
    """What memcli uses of a ``tiktoken.Encoding``: tiktoken's BPE core, built from the same
    arguments, without the rest (the largest token value, the special tokens' set: 10 ms of
    o200k_base's start-up). ``encode_ordinary`` is the core's own: a text with lone surrogates
    raises UnicodeEncodeError, which :meth:`TokenCounter.count` answers as tiktoken's
    ``Encoding.encode_ordinary`` does. The ranks are not kept: the core holds its own copy, and
    the dict (about 24 MB for o200k_base) would stay in every counting process's peak memory."""

    def __init__(self, name: str, pat_str: str, mergeable_ranks: dict[bytes, int], special_tokens: dict[str, int],
                 explicit_n_vocab: int | None = None):
        from tiktoken import _tiktoken

        self.name = name
        self.encode_ordinary = _tiktoken.CoreBPE(mergeable_ranks, special_tokens, pat_str).encode_ordinary


def bare_model(model: str | None) -> str:
    """``openai/gpt-4o`` -> ``gpt-4o``; ``None`` -> ``""``."""
    if not model:
        return ""
    return model.rsplit("/", 1)[-1].lower()


def encoding_name(model: str | None) -> str:
    name = bare_model(model)
    if name.startswith(_O200K_PREFIXES):
        return "o200k_base"
    return "cl100k_base"


@lru_cache(maxsize=4)
def _encoding(name: str):
    try:
        import tiktoken

        if not (os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")):
            bundled = _bundled_encoding(name)
            if bundled is not None:
                return bundled
        return tiktoken.get_encoding(name)
    except Exception as exc:  # network refused, missing file, broken cache: estimate instead
        warn_once("tiktoken", f"tiktoken encoding {name} is not available offline ({type(exc).__name__}); "
                              "token counts are estimates (UTF-8 bytes / 4)")
        return None


class CountMemo(Protocol):
    """Counts remembered by text: ``known`` gives the count of ``text`` with ``encoding`` or
    None, ``learn`` adds one. A memo that keeps counts by key uses :func:`text_key`."""

    def known(self, encoding: str, text: str) -> int | None: ...

    def learn(self, encoding: str, text: str, tokens: int) -> None: ...


_active_memo: CountMemo | None = None


@contextmanager
def counting_memo(memo: CountMemo | None) -> Iterator[CountMemo | None]:
    """Every :class:`TokenCounter` made inside the block (without a memo of its own) uses ``memo``."""
    global _active_memo
    previous, _active_memo = _active_memo, memo
    try:
        yield memo
    finally:
        _active_memo = previous


def text_key(encoding: str, text: str) -> int:
    """The memo key of ``text`` counted with ``encoding``: 64 bits of BLAKE2b over both (the
    encoding's name, at most 16 bytes of it, as the personalization)."""
    template = _key_templates.get(encoding)
    if template is None:
        template = _key_templates[encoding] = blake2b(digest_size=8, person=encoding.encode()[:16])
    digest = template.copy()   # half the cost of a new blake2b object with its parameters
    digest.update(text.encode("utf-8", "surrogatepass"))
    return int.from_bytes(digest.digest(), "little")


_key_templates: dict = {}   # encoding name -> an empty BLAKE2b state with its parameters


_UNLOADED = object()


class TokenCounter:
    """Counts tokens for one model family. ``exact`` is False when counts are estimates.

    The encoding is loaded on the first text the memo (``memo``, else the one
    :func:`counting_memo` set when the text is counted) does not already know. A counter made
    once and kept (a module's cached counter) thus uses the block it counts in, never the one it
    was made in: it cannot hold on to another agent's cache."""

    def __init__(self, model: str | None = None, memo: CountMemo | None = None):
        self.model = model
        self.encoding_name = encoding_name(model)
        self._memo = memo
        self._loaded = _UNLOADED
        self._encode = None    # the encoding's encode_ordinary, once loaded
        self.remembered = 0    # counts the memo answered
        family = bare_model(model)
        self.approximate_family = bool(family) and not (
            family.startswith(_O200K_PREFIXES) or family.startswith(("gpt-4", "gpt-3.5", "text-embedding")))

    @property
    def memo(self) -> CountMemo | None:
        return self._memo if self._memo is not None else _active_memo

    @property
    def _encoding(self):
        if self._loaded is _UNLOADED:
            self._loaded = _encoding(self.encoding_name)
        return self._loaded

    @property
    def exact(self) -> bool:
        if self._loaded is _UNLOADED and self.remembered:
            return True     # the memo holds exact counts only
        return self._encoding is not None

    def count(self, text: str) -> int:
        if not text:
            return 0
        memo = self._memo
        if memo is None:
            memo = _active_memo
        if memo is not None:
            known = memo.known(self.encoding_name, text)
            if known is not None:
                self.remembered += 1
                return known
        encode = self._encode
        if encode is None:
            encoding = self._encoding
            if encoding is None:
                return (len(text.encode("utf-8", "surrogatepass")) + 3) // 4
            encode = self._encode = encoding.encode_ordinary
        try:
            tokens = len(encode(text))
        except UnicodeEncodeError:   # lone surrogates: replaced, as tiktoken's Encoding.encode_ordinary does
            tokens = len(encode(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")))
        if memo is not None:
            memo.learn(self.encoding_name, text, tokens)
        return tokens

    def count_json(self, value) -> int:
        """Tokens of a JSON value as it would be sent (compact JSON text)."""
        if isinstance(value, str):
            return self.count(value)
        return self.count(orjson.dumps(value).decode())

    def describe(self) -> str:
        if not self.exact:
            return "estimate (UTF-8 bytes / 4; no tiktoken encoding available)"
        if self.approximate_family:
            return f"tiktoken {self.encoding_name} (an approximation for {self.model})"
        return f"tiktoken {self.encoding_name}"


@lru_cache(maxsize=1)
def _model_map() -> dict:
    root = _litellm_dir()
    if root is None:
        return {}
    path = root / "model_prices_and_context_window_backup.json"
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}


def model_info(model: str | None) -> dict | None:
    """LiteLLM's entry for ``model`` (``max_input_tokens``, ``max_output_tokens``, ...) or None."""
    if not model:
        return None
    table = _model_map()
    candidates = [model, model.lower()]
    if "/" in model:
        candidates += [model.split("/", 1)[1], bare_model(model)]
    for key in candidates:
        entry = table.get(key)
        if isinstance(entry, dict) and key != "sample_spec":
            return entry
    return None


def context_window(model: str | None, override: int | None = None) -> tuple[int, int, str]:
    """(max context tokens, output tokens to reserve, where it came from), for the budget
    ``input_budget = max_context - reserved_output - safety_margin`` of docs/design.md §4.

    The reserved output is the model's maximum output capped at ``MAX_RESERVED_OUTPUT``
    (``DEFAULT_OUTPUT_TOKENS`` when unknown)."""
    info = model_info(model) or {}
    out = int(info.get("max_output_tokens") or DEFAULT_OUTPUT_TOKENS)
    reserved = min(out, MAX_RESERVED_OUTPUT)
    if override is not None:
        if override < 1:   # (0 was taken for "no override": the default 200,000, silently)
            from memcli.errors import UsageError

            raise UsageError("{max_context_tokens} must be 1 or more", param="max_context_tokens")
        return int(override), min(reserved, int(override) // 4), "--max-context-tokens"
    context = info.get("max_input_tokens") or info.get("max_tokens")
    if context:
        return int(context), min(reserved, int(context) // 4), f"LiteLLM model map ({model})"
    return DEFAULT_CONTEXT_TOKENS, DEFAULT_OUTPUT_TOKENS, "default (model unknown)"


_litellm = None
_litellm_lock = threading.Lock()


def import_litellm():
    """LiteLLM, imported once (thread-safe), with the model map read locally
    (``LITELLM_LOCAL_MODEL_COST_MAP=True`` set first), debug output and telemetry off. For the
    paths that call a model (compaction's summarizer, search's embeddings) and nothing else."""
    global _litellm
    with _litellm_lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            from memcli.errors import UsageError

            try:
                import litellm
            except ImportError as exc:  # pragma: no cover - litellm is a dependency
                raise UsageError(f"LiteLLM cannot be imported ({exc})") from None
            litellm.suppress_debug_info = True
            litellm.telemetry = False
            _litellm = litellm
    return _litellm
