"""Secret redaction (on by default at ingest; ``memcli ingest --no-redact`` keeps input raw).

Credentials are replaced by a typed placeholder ``[REDACTED:<kind>]`` in every string of an
event — content, tool arguments, tool results, errors, unknown extra fields, at any depth —
before anything reaches disk; hand-written facts and memory files go through
:func:`redact_value` / :func:`redact_string` the same way. Structural fields (``id``,
``turn_id``, ``tool_call_id``, ``trace_type``, ``source_event``, ``correlation_id``) are left
alone so linking and idempotency keep working, and so are binary payloads — ``media``, base64
``data:`` URLs and ``signature`` fields of signed thinking blocks — where a false match would
corrupt data. Redaction is one-way; what was replaced is counted by kind, never logged.

The rules live in :mod:`memcli.redact.rules` (one table: kind, regex, literal anchors; sources
and refresh procedure there). Each rule is built to leave alone what agents handle all day:
git SHAs, UUIDs, sha256 digests, base64 images, CSS class lists, prose that mentions "Bearer"
or "password", placeholders such as ``${TOKEN}``, ``process.env.TOKEN`` or ``<your-key>``.

Cost: :func:`may_hold_a_secret` is a literal prefilter over raw bytes (a staged chunk of a few
hundred JSON lines at once): every match of every rule contains one of the rule's anchors, so a
"no" is always right. Big inputs are scanned by one Hyperscan database of every anchor (all
literals, ~1 GB/s, compiled in a few ms on first use); small ones (a single event, a fact) by
plain substring tests, so a one-event ``memcli ingest`` never loads it. Without the ``hyperscan``
package the substring tests are used for everything: same results, slower on big inputs. Only
strings whose anchors are present ever see a regex.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections import Counter
from functools import lru_cache
from itertools import accumulate

import orjson

from memcli.redact.rules import (
    AUTH_VALUE,
    RULES,
    Rule,
    fitted_marker,
    secret_field_value,
    secret_name,
)

# structural fields, and binary payloads (base64 media, signed thinking blocks) where a false
# match would corrupt data and a real key is not expected
STRUCTURAL_FIELDS = frozenset({"id", "turn_id", "tool_call_id", "trace_type", "source_event", "correlation_id",
                          "media", "signature"})
_AUTH_KEYS = frozenset({"authorization", "proxy-authorization"})
SMALL_INPUT = 32 * 1024  # below this, substring tests beat starting the Hyperscan scan


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


# ---------------------------------------------------------------------- the prefilter

@lru_cache(maxsize=1)
def _literal_checks() -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    """(case-sensitive anchors, lowercase anchors checked against the lowered input)."""
    exact: list[bytes] = []
    folded: list[bytes] = []
    for rule in RULES:
        target = folded if rule.caseless else exact
        for anchor in rule.anchors:
            encoded = anchor.encode()
            if encoded not in target:
                target.append(encoded)
    return tuple(exact), tuple(folded)


def _may_hold_plain(data: bytes) -> bool:
    exact, folded = _literal_checks()
    for anchor in exact:
        if anchor in data:
            return True
    if folded:
        lowered = data.lower()
        for anchor in folded:
            if anchor in lowered:
                return True
    return False


class _Stop(Exception):
    pass


class _Engine:
    """Hyperscan databases of every rule's prefilter patterns: one of literals, one of the few
    regexes (a regex compiled beside a few hundred literals costs several times its own compile
    time). ``rules_of[db][pattern id]`` lists the indexes of the rules the pattern stands for."""

    def __init__(self, hyperscan):
        self.terminated = hyperscan.ScanTerminated
        literals: dict[bytes, tuple[int, list]] = {}
        regexes: dict[bytes, tuple[int, list]] = {}
        for index, rule in enumerate(RULES):
            caseless = hyperscan.HS_FLAG_CASELESS if rule.caseless else 0
            if rule.hs_regex:
                regexes.setdefault(rule.hs_regex.encode(), (caseless, []))[1].append(index)
            else:
                for literal in rule.hs:
                    literals.setdefault(_hs_escape(literal), (caseless, []))[1].append(index)
        self.databases = [_compile(hyperscan, table) for table in (literals, regexes) if table]
        self.rules_of = [[tuple(rules) for _, rules in table.values()] for table in (literals, regexes) if table]

    def any(self, data: bytes) -> bool:
        try:
            for db in self.databases:
                db.scan(data, match_event_handler=_stop)
        except self.terminated:
            return True
        return False

    def match_ends(self, data: bytes) -> list[int]:
        """The end offset of every anchor occurrence in ``data``."""
        ends: list[int] = []
        for db in self.databases:
            db.scan(data, match_event_handler=lambda _pattern, _start, end, *_: ends.append(end))
        return ends

    def rules(self, data: bytes) -> list[int]:
        found: set[int] = set()
        for db, rules_of in zip(self.databases, self.rules_of, strict=True):
            db.scan(data, match_event_handler=lambda pattern, *_, rules_of=rules_of: found.update(rules_of[pattern]))
        return sorted(found)


@lru_cache(maxsize=1)
def _engine() -> _Engine | None:
    """The Hyperscan engine, or None when the ``hyperscan`` package is missing (or
    ``MEMCLI_NO_HYPERSCAN`` is set: tests run both ways)."""
    if os.environ.get("MEMCLI_NO_HYPERSCAN"):
        return None
    try:
        import hyperscan
    except ImportError:
        return None
    return _Engine(hyperscan)


def _compile(hyperscan, table: dict):
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=list(table), ids=list(range(len(table))), elements=len(table),
               flags=[caseless for caseless, _ in table.values()])
    return db


def _engine_for(size: int) -> _Engine | None:
    """Hyperscan for big inputs, or once it is loaded anyway; substring tests otherwise."""
    if size < SMALL_INPUT and _engine.cache_info().currsize == 0:
        return None
    return _engine()


def _hs_escape(literal: str) -> bytes:
    """A literal as a Hyperscan pattern (every non-alphanumeric character as ``\\xNN``)."""
    return "".join(c if c.isalnum() else f"\\x{ord(c):02x}" if ord(c) < 128 else c for c in literal).encode()


def _stop(*_args):
    return True  # halts the scan at the first anchor


def may_hold_a_secret(data: bytes) -> bool:
    """Cheap pre-check over raw (JSON) bytes: False means no rule can match anywhere in ``data``.

    May say yes wrongly, never no wrongly: every rule's match contains one of its anchors, and
    anchors hold only characters that JSON never escapes."""
    engine = _engine_for(len(data))
    return _may_hold_plain(data) if engine is None else engine.any(data)


def candidate_lines(lines: list[bytes], blob: bytes | None = None) -> list[int]:
    """Indexes of the ``lines`` (raw JSON, no newline inside) in which a rule may match: one
    scan of them all (``blob``: their concatenation, if the caller has it), then only the lines
    an anchor was found in (an anchor never spans lines)."""
    if blob is None:
        blob = b"".join(lines)
    engine = _engine_for(len(blob))
    if engine is None:
        if not _may_hold_plain(blob):
            return []
        return [i for i, line in enumerate(lines) if _may_hold_plain(line)]
    ends = engine.match_ends(blob)
    if not ends:
        return []
    line_ends = list(accumulate(map(len, lines)))
    return sorted({bisect_right(line_ends, end - 1) for end in ends})


# ---------------------------------------------------------------------- redacting

def _rules_for(text: str) -> list[Rule]:
    """The rules whose anchors occur in ``text`` (the only ones worth a regex), in table order."""
    engine = _engine_for(len(text))
    if engine is not None:
        return [RULES[i] for i in engine.rules(text.encode("utf-8", "surrogatepass"))]
    lowered = None
    found = []
    for rule in RULES:
        if rule.caseless:
            if lowered is None:
                lowered = text.lower()
            hay = lowered
        else:
            hay = text
        for anchor in rule.anchors:
            if anchor in hay:
                found.append(rule)
                break
    return found


def redact_string(text: str, counts: Counter | None = None, *, keep_length: bool = False) -> tuple[str, Counter]:
    """(text with secrets replaced, replacements by kind); ``counts`` is added to if given.
    ``keep_length``: markers padded or cut to the secret's length (see ``fitted_marker``)."""
    counts = Counter() if counts is None else counts
    if not text or len(text) < 8:
        return text, counts
    for rule in _rules_for(text):
        text = rule.apply(text, counts, keep_length)
    return text, counts


def redact_text(text: str) -> tuple[str, int]:
    """(text with secrets replaced, how many were replaced)."""
    text, counts = redact_string(text)
    return text, sum(counts.values())


def _is_data_url(value: str) -> bool:
    return value.startswith("data:") and ";base64," in value[:100]


def _walk(value, counts: Counter, keep_length: bool = False):
    if isinstance(value, str):
        if _is_data_url(value):
            return value
        return redact_string(value, counts, keep_length=keep_length)[0]
    if isinstance(value, list):
        return [_walk(item, counts, keep_length) for item in value]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "signature" or key == "media":
                out[key] = item
                continue
            if isinstance(item, str) and isinstance(key, str):
                out[key] = _field(key, item, counts, keep_length)
            else:
                out[key] = _walk(item, counts, keep_length)
        return out
    return value


def _field(key: str, value: str, counts: Counter, keep_length: bool = False) -> str:
    """A string under a key: its own rules first, then what the key says the value is."""
    if _is_data_url(value):
        return value
    low = key.lower()
    if low in _AUTH_KEYS:
        value = _auth_value(value, counts, keep_length)
    before = sum(counts.values())
    value = redact_string(value, counts, keep_length=keep_length)[0]
    if sum(counts.values()) == before and secret_name(low) and secret_field_value(value):
        counts["secret_assignment"] += 1
        return fitted_marker("secret_assignment", len(value)) if keep_length else marker("secret_assignment")
    return value


def _auth_value(value: str, counts: Counter, keep_length: bool = False) -> str:
    """``{"Authorization": "Bearer <token>"}`` / ``"Basic <b64>"``: the scheme stays, the
    credential goes (even a short one: the key says what it is)."""
    match = AUTH_VALUE.match(value)
    if match is None or match.group("secret").startswith("[REDACTED"):
        return value
    kind = "basic_auth" if match.group("scheme").lower() == "basic" else "bearer_token"
    counts[kind] += 1
    secret = match.group("secret")
    replacement = fitted_marker(kind, len(secret)) if keep_length else marker(kind)
    return value[:match.start("secret")] + replacement + value[match.end("secret"):]


def redact_value(value, counts: Counter | None = None):
    """(a copy of any JSON value with secrets replaced in every string, replacements by kind).
    For hand-written facts and memory records; binary payloads are kept as in events."""
    counts = Counter() if counts is None else counts
    return _walk(value, counts), counts


def redact_record(record: dict, *, keep_length: bool = False, skip: frozenset = STRUCTURAL_FIELDS) -> Counter:
    """Redact a stored record (an event, a trace, a memory item) in place, every field but the
    structural ones; returns the replacements by kind (empty: nothing changed)."""
    counts: Counter = Counter()
    for key, value in list(record.items()):
        if key in skip:
            continue
        before = sum(counts.values())
        if isinstance(value, str) and isinstance(key, str):
            new = _field(key, value, counts, keep_length)
        else:
            new = _walk(value, counts, keep_length)
        if sum(counts.values()) != before:
            record[key] = new
    return counts


def redact_event_counts(event: dict, *, prechecked: bool = False) -> Counter:
    """Redact an event in place; returns the replacements by kind (empty: nothing changed).
    ``prechecked``: the caller's prefilter already named this event (skips the cheap check)."""
    if not prechecked and not may_hold_a_secret(orjson.dumps(event)):
        return Counter()
    return redact_record(event)


def redact_event(event: dict) -> int:
    """Redact an event in place; returns the number of secrets replaced."""
    return sum(redact_event_counts(event).values())


def describe_counts(counts: Counter) -> str:
    """``"3 secrets redacted (google_api_key 2, jwt 1)"``; "" when nothing was."""
    total = sum(counts.values())
    if not total:
        return ""
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{total} secret{'s' if total != 1 else ''} redacted ({kinds})"
