"""The summarizer interface of docs/design.md §4 and the validation every summary passes.

A summarizer turns a window of turns into ``{episodic_summary, semantic_facts[{fact, tags,
confidence}]}``. It is given, besides the turns, the live memory (prior episodic summaries and
existing facts, with their ids) so that it continues them instead of repeating them; a fact may
name the existing facts it ``supersedes``.

:func:`validate_summary` is the single gate between a summarizer's raw output and the store:
whatever it returns is a :class:`Summary` whose text is non-empty, not an error message or a
refusal (:func:`reads_like_error`: an error word counts only in an error message's shape, so a
fact that starts "Error codes of …" is a fact), bounded in size, and whose facts are
well-formed. A fact is never a reason to refuse a summary that passed that check: one that reads
like a refusal or an error body ("I'm sorry …", ``{"error": …}``) is dropped, and one in an error
message's shape ("Error: pytest tests/test_calc.py still fails") is kept — the prompt asks for the
failures still unresolved. Recoverable shapes are normalized (tags given as a string become a list, split at
commas; a confidence given as ``"0.8"`` a number clamped to
0..1, one in words (``"high"``) the number of :data:`CONFIDENCE_WORDS`; a fact whose ``supersedes`` names an
unknown id loses that id, a fact under ``text``/``content``/``statement`` instead of ``fact``, an
episodic summary given as an object of sections — as models write "the sections" in JSON mode —
becomes the text of those sections: :func:`sections_text`); anything else raises
:class:`InvalidSummary`, which the LLM summarizer answers with a retry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Iterable

from memcli.models import PINNED_TAG, TAG_SIDECHAIN, RawTrace, is_pinned

MAX_SUMMARY_CHARS = 20_000      # one episodic summary (a chunk's, or the merged one per chunk)
MAX_FACT_CHARS = 1_000
MAX_FACTS = 50                  # per summary; more is clipped, not an error


class InvalidSummary(ValueError):
    """A summarizer output that must not be committed (the message says why)."""


@dataclass
class Fact:
    fact: str
    tags: list = field(default_factory=list)
    confidence: float = 0.5
    supersedes: list = field(default_factory=list)
    source_turn_ids: list = field(default_factory=list)   # when the summarizer knows them


@dataclass
class Summary:
    episodic_summary: str
    semantic_facts: list = field(default_factory=list)   # Fact
    # a smaller summary of the same window, at most this many tokens (the offline one offers it;
    # a compaction whose result would not fit its target asks for it before writing)
    resize: Any = field(default=None, repr=False, compare=False)


@dataclass
class Turn:
    """A turn as a summarizer sees it: its moved traces, in file order. ``steps_only``: only
    the oldest ``steps`` of its ``total_steps`` steps move; its ask stays in the active file."""

    turn_id: str
    traces: list  # RawTrace
    steps_only: bool = False
    steps: int = 0
    total_steps: int = 0


@dataclass
class MemoryContext:
    """Live memory the summarizer continues: prior episodic summaries and existing facts."""

    episodic: list = field(default_factory=list)   # EpisodicItem, oldest first
    facts: list = field(default_factory=list)      # SemanticItem, oldest first
    summary_tokens: int | None = None              # the summary's budget: what the target leaves it
    target_given: bool = False                     # the user set the target: the budget alone sizes the summary
    # the most a summary of the window aims at in tokens when the compaction counted the window:
    # a quarter of its tokens in the working snapshot, at least 250 (memcli.compaction.window.summary_room)
    window_room: int | None = None

    def fact_ids(self) -> set:
        """The ids of the facts a summary may supersede: those compactions wrote and nobody
        pinned. A fact the person or an agent remembered (``remember``), or pinned, is never taken
        out by a summary of a transcript — which is data, and could ask for it."""
        return {f.id for f in self.facts if f.compaction_id and not is_pinned(f)}


class Summarizer:
    """The one summarizer interface: what :func:`memcli.compaction.compactor.compact` asks of a
    summarizer, with the defaults a simple one keeps (the offline, the LiteLLM and the tests'
    fake summarizers derive from it). ``name`` is recorded as the episodic item's ``model``."""

    name: str = "summarizer"
    spent = None           # what a model was paid (memcli.compaction.llm.Spending); None: nothing is paid
    retried: tuple = ()    # one line per request sent again, and why (the compaction says each)

    def preflight(self) -> None:
        """Check what a request needs (a key, a reachable endpoint) before anything is read or
        sent. Default: nothing to check."""

    def limit_cost(self, max_cost: float | None) -> None:
        """Refuse any request that would take the spending past ``max_cost`` US dollars.
        Default: nothing is paid, nothing to limit."""

    def named_tokens(self, turns: list) -> int:
        """The least room a summary of ``turns`` takes whatever it is told (what it must name).
        Default: nothing it must name."""
        return 0

    def context_tokens(self) -> int | None:
        """Tokens one request may hold, or None when the summarizer has no limit (one chunk)."""
        return None

    def split(self, turns: list[Turn], memory: MemoryContext) -> list[list[Turn]]:
        """The window in chunks of whole turns, each summarized by one :meth:`summarize` (used
        when :meth:`context_tokens` is not None). Default: one chunk."""
        return [list(turns)]

    def window_summary(self):
        """An empty summary the compaction feeds as it reads the window (``add``,
        ``whole_turn``, ``finish``: :class:`memcli.compaction.offline.WindowSummary`), or None
        (the default) when the summarizer takes whole :class:`Turn` lists instead."""
        return None

    def summarize(self, turns: list[Turn], memory: MemoryContext | None = None) -> Summary:
        """Summarize ``turns`` (raises CompactionError when no valid summary can be had)."""
        raise NotImplementedError

    def shortener(self, summary: Summary, turns: list):
        """A ``resize`` for ``summary`` (of ``turns``) when it has none (a model's: asked to
        rewrite it within so many tokens), or None (the default): it stays as it is."""
        return None


# --------------------------------------------------------------------------- validation

# An answer that is an error message or a refusal, not a summary: what a provider or a proxy sends
# in place of an answer, or a model declining. The error words count only in an error message's
# shape — "Error: …", "Error 500", "Error code: 429 - …", "Exception (…)", a bare "Error.", an HTTP
# status line alone on its line ("Error 503 Service Unavailable", "HTTP/1.1 404 Not Found",
# "502 Bad Gateway" over nginx's body, "504 Gateway Time-out"), a provider's own sentences ("An
# error occurred while processing your request", "Error processing request: …", "Exception
# occurred: …", "Error while summarizing: …", "Service Unavailable", "Rate limit exceeded", "Rate
# limit reached for …"), a
# JSON error body — and a refusal only as one ("I'm sorry", "Sorry, …", "I can't …", "As an AI …",
# typographic apostrophes too). A sentence that merely starts with those words ("Error codes of
# the API are listed in docs/errors.md", "Error 404 pages are served by nginx", "Error when
# looking up old orders: use the archive API", "Error while loading shared libraries: libssl.so.3
# …", "Rate limit of the API is 5 requests per second", "Sorry state of the build: tests
# failing") is a summary or a fact like any other: a summary of a failing command starts so.
# a model declining, or a page or an error body where an answer was expected: never a fact, whatever
# surrounds it (an error message's shape, "Error: pytest still fails", can be one: see validate_summary)
_REFUSAL_WORDS = (r"i[’']?m sorry|i am sorry|sorry\s*(?:[,.!:;]|[-–—]|$|but\b|i\b)|i cannot\b|i can[’']?t\b|"
                  r"i[’']?m unable|i am unable|as an ai\b|<!doctype|<html|\{\s*\"(?:error\"|type\"\s*:\s*\"error\")")
_ERROR_END = r"\s*(?::|\(|[-–—]\s|\d+\s*(?:[:(.,;]|[-–—]\s|$)|[.!]?\s*$)"
_LINE_END = r"[ \t]*(?:[:(.,;!]|[-–—]\s|$|\r?\n)"   # what ends a status line: the text's end, or its line's
# the reason phrases of HTTP's error statuses (4xx, 5xx), longest first ("Time-out": nginx's spelling)
_HTTP_REASONS = "|".join(sorted({re.escape(s.phrase).replace(r"\ ", r"\s+").replace("Timeout", "Time-?out")
                                 for s in HTTPStatus if s >= 400}, key=len, reverse=True))
_ERROR_TEXT = re.compile(
    rf"^\s*(?:(?:(?:http\s+)?error(?:\s+code)?|exception|internal\s+server\s+error){_ERROR_END}|"
    rf"(?:(?:http\s+)?error\s*:?\s*|http/\d(?:\.\d)?\s+|http\s+|status(?:\s+code)?\s*:?\s*)?[45]\d\d\s*:?\s*"
    rf"(?:{_HTTP_REASONS}){_LINE_END}|"
    rf"(?:{_HTTP_REASONS})[ \t]*[.!]?[ \t]*(?:\r?\n|$)|"   # a reason phrase alone on its line ("Not Found: …" says more)
    rf"http/\d(?:\.\d)?\s+[45]\d\d{_LINE_END}|"
    r"(?:an\s+)?(?:internal\s+)?(?:error|exception)\s+(?:has\s+)?occurred(?:\s*[.:!,;]|\s*$|\s+while\s+processing)|"
    r"error\s+(?:while\s+|when\s+)?processing\s+(?:your\s+|the\s+)?request\b|"
    r"error\s+(?:while|when)\s+(?:summariz|generat|calling\s+the\s+model|contacting|communicating)|"
    r"rate[ _]limit(?:ed\s*(?:[:(.,;!]|[-–—]\s|$)|[ _](?:exceeded|reached|hit)\s*(?:[:(.,;!]|[-–—]\s|for\b|$)"
    r"|\s*[.!]?\s*$)|"
    r"traceback \(most recent call last\)|" + _REFUSAL_WORDS + ")",
    re.IGNORECASE,
)
_REFUSAL_TEXT = re.compile(r"^\s*(?:" + _REFUSAL_WORDS + ")", re.IGNORECASE)


def reads_like_error(text: str) -> bool:
    """Whether a model's answer ``text`` is an error message or a refusal rather than a summary
    (the one check of it: a compaction's summary, a tool result's summary; a fact is only checked
    for a refusal, :data:`_REFUSAL_TEXT`)."""
    return _ERROR_TEXT.match(text) is not None


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidSummary(f"{what} is {type(value).__name__}, not a string")
    return value.strip()


def _tags(value: Any) -> list:
    if value is None:
        return []
    if isinstance(value, str):
        value = value.split(",")    # "build, npm" as models write a list in a string
    if not isinstance(value, list):
        raise InvalidSummary(f"tags is {type(value).__name__}, not a list")
    out = []
    for tag in value:   # (never ``pinned``: only who remembers a fact pins it, not a summary)
        if isinstance(tag, str) and tag.strip() and tag.strip() not in out and tag.strip() != PINNED_TAG:
            out.append(tag.strip()[:64])
    return out[:10]


# a confidence in words, as models write it: the number it stands for
CONFIDENCE_WORDS = {"very high": 0.95, "high": 0.9, "medium": 0.6, "moderate": 0.6, "low": 0.3, "very low": 0.1}


def _confidence(value: Any) -> float:
    if value is None:
        return 0.5
    if isinstance(value, bool):
        raise InvalidSummary("confidence is a boolean, not a number")
    if isinstance(value, str) and value.strip().casefold() in CONFIDENCE_WORDS:
        return CONFIDENCE_WORDS[value.strip().casefold()]
    if isinstance(value, str):
        try:
            value = float(value.strip().rstrip("%")) / (100 if value.strip().endswith("%") else 1)
        except ValueError:
            raise InvalidSummary(f"confidence {value!r} is not a number") from None
    if not isinstance(value, (int, float)) or value != value:
        raise InvalidSummary(f"confidence is {type(value).__name__}, not a number")
    return float(min(max(value, 0.0), 1.0))


_FACT_KEYS = ("fact", "text", "content", "statement")


def sections_text(value: Any, depth: int = 0) -> str:
    """An episodic summary written as JSON (``{"Primary request and intent": "...", "Files and
    code sections": ["a.py: ...", ...]}``) as the text it stands for: each key a heading line
    (``Key:``), strings as they are, list items as ``- `` lines, nested objects as ``key: value``."""
    if isinstance(value, str):
        return value.strip()
    if value is None or isinstance(value, bool) or depth > 4:
        return ""
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        items = (sections_text(v, depth + 1) for v in value)
        return "\n".join("- " + item.replace("\n", "\n  ") for item in items if item)
    if isinstance(value, dict):
        parts = []
        for key, inner in value.items():
            text = sections_text(inner, depth + 1)
            if not text:
                continue
            joiner = "\n" if depth == 0 or "\n" in text else " "
            parts.append(f"{key}:{joiner}{text}")
        return ("\n\n" if depth == 0 else "\n").join(parts)
    return ""


def validate_summary(raw: Any, known_fact_ids: Iterable[str] = ()) -> Summary:
    """The summary in ``raw`` (a parsed JSON object), normalized, or InvalidSummary."""
    if not isinstance(raw, dict):
        raise InvalidSummary(f"expected a JSON object, got {type(raw).__name__}")
    if "episodic_summary" not in raw:
        raise InvalidSummary("no episodic_summary field")
    episodic = raw["episodic_summary"]
    if isinstance(episodic, (dict, list)):
        episodic = sections_text(episodic)
    summary = _text(episodic, "episodic_summary")
    if not summary:
        raise InvalidSummary("episodic_summary is empty")
    if reads_like_error(summary):
        raise InvalidSummary(f"episodic_summary reads like an error or a refusal: {summary[:80]!r}")
    if len(summary) > MAX_SUMMARY_CHARS:
        raise InvalidSummary(f"episodic_summary is {len(summary):,} characters (at most {MAX_SUMMARY_CHARS:,})")
    facts_raw = raw.get("semantic_facts", [])
    if facts_raw is None:
        facts_raw = []
    if not isinstance(facts_raw, list):
        raise InvalidSummary(f"semantic_facts is {type(facts_raw).__name__}, not a list")
    known = set(known_fact_ids)
    facts: list[Fact] = []
    seen: set = set()
    for i, item in enumerate(facts_raw[:MAX_FACTS]):
        if isinstance(item, str):
            item = {"fact": item}
        if not isinstance(item, dict):
            raise InvalidSummary(f"semantic_facts[{i}] is {type(item).__name__}, not an object")
        key = next((k for k in _FACT_KEYS if k in item), "fact")
        text = _text(item.get(key), f"semantic_facts[{i}].{key}")
        if not text:
            raise InvalidSummary(f"semantic_facts[{i}].{key} is empty")
        # the summary passed the check above, so the answer is a summary: a fact in an error message's
        # shape ("Error: pytest tests/test_calc.py still fails") is one about a failure, as the prompt
        # asks for; a refusal or an error body among the facts is dropped, never the paid answer
        if _REFUSAL_TEXT.match(text):
            continue
        text = text[:MAX_FACT_CHARS]
        key = normalize_fact(text)
        if key in seen:
            continue
        seen.add(key)
        supersedes = item.get("supersedes") or []
        if isinstance(supersedes, str):
            supersedes = [supersedes]
        if not isinstance(supersedes, list):
            supersedes = []
        supersedes = [s for s in supersedes if isinstance(s, str) and s in known]
        facts.append(Fact(text, _tags(item.get("tags")), _confidence(item.get("confidence")), supersedes))
    return Summary(summary, facts)


def normalize_fact(text: str) -> str:
    """The identity of a fact for de-duplication: case and whitespace do not matter."""
    return " ".join(text.split()).casefold()


# --------------------------------------------------------------------------- helpers for summarizers

def trace_brief(trace: RawTrace) -> dict:
    """A trace as data for a prompt: only the fields that carry meaning, nothing stamped (a
    result's ``error`` and ``result`` both, when it has both)."""
    out: dict = {"turn": trace.turn_id, "type": trace.trace_type}
    if trace.tags:
        out["tags"] = trace.tags
        if TAG_SIDECHAIN in trace.tags:
            out["subagent"] = (trace.extra or {}).get("agent_id") or "subagent"
    if trace.tool_name:
        out["tool"] = trace.tool_name
    if trace.tool_call_id and trace.trace_type in ("tool_call", "tool_result"):
        out["call_id"] = trace.tool_call_id
    if trace.content:
        out["content"] = trace.content
    if trace.tool_args is not None:
        out["args"] = trace.tool_args
    if trace.tool_error:
        out["error"] = trace.tool_error
    if trace.tool_result is not None:   # a failed command's output too: it says why it failed
        out["result"] = trace.tool_result
    return out


def memory_brief(memory: MemoryContext) -> dict:
    return {
        "prior_episodic_summaries": [
            {"id": e.id, "turns": turn_span(e.turn_ids), "summary": e.summary} for e in memory.episodic
        ],
        "existing_facts": [
            {"id": f.id, "fact": f.fact, "tags": f.tags, "confidence": f.confidence} for f in memory.facts
        ],
    }


def turn_span(turn_ids: list) -> str:
    """``turn_0003–turn_0007`` (first–last), ``turn_0003`` for one turn (the parts of one long
    turn too: not ``turn_0001–turn_0001``), ``""`` for none."""
    if not turn_ids:
        return ""
    return turn_ids[0] if turn_ids[0] == turn_ids[-1] else f"{turn_ids[0]}–{turn_ids[-1]}"

