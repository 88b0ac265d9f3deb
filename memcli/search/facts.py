"""Facts by hand: ``memcli remember`` and ``memcli forget`` (docs/design.md §8). Nothing is deleted.

``remember`` appends a SEMANTIC record to ``semantic.jsonl`` under the agent lock::

    {"id": "sem_…", "ts": …, "fact": "…", "tags": [...], "confidence": 1.0, "salience": 0.5,
     "supersedes": ["sem_old"], "source": "remember"}

* ``--pin`` adds the tag ``pinned`` (salience 1.0): a pinned fact always enters the snapshot's
  memory bundle, first. A tag rather than a new field, so AutoByteus (and ``show --tag``-style
  filters) see it as plain data.
* ``--supersedes ID`` names an existing semantic fact that the new one replaces (readers then
  skip the old one). Only a fact: a summary is taken out with ``forget``.
* The text and the tags go through the same redaction as ingest (:func:`memcli.redact.redact_text`):
  a credential in a remembered fact is stored as ``[REDACTED:<kind>]``.
* **The same fact once.** When a live fact already says the same text (after redaction, with
  whitespace runs counted as one space) and has every tag asked for, nothing is written: the
  existing fact's record is returned (``existing`` is true). With a tag it lacks (``--pin`` on
  an unpinned fact), the new fact carries both tag sets and supersedes the old one. So a
  ``forget`` of that id takes the fact out of recall: no second copy stays behind.

``forget ID`` appends a *tombstone* to the file of the item it takes out (semantic or episodic)::

    {"id": "sem_…", "ts": …, "fact": "(forgotten sem_old: reason)", "tags": ["forgotten"],
     "confidence": 0.0, "salience": 0.0, "supersedes": ["sem_old", "<its own id>"],
     "source": "forget", "forgotten": "sem_old", "reason": "…"}

The tombstone supersedes the item, and itself, so every reader that skips superseded items (the
one rule: an id listed in some item's ``supersedes``) skips both. Forgetting an item that is
already superseded writes nothing and says by what. Traces cannot be forgotten: they are the
history.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from memcli.errors import RecordNotFoundError, UsageError
from memcli.ids import EPISODIC_PREFIX, SEMANTIC_PREFIX, new_id
from memcli.models import PINNED_TAG, EpisodicItem, SemanticItem, to_record
from memcli.store import jsonl
from memcli.store.agent import AgentStore

FORGOTTEN_TAG = "forgotten"
MAX_FACT_CHARS = 20_000


@dataclass
class Remembered:
    record: dict
    redacted: int = 0
    superseded: list[str] = field(default_factory=list)
    existing: bool = False          # the same live fact was already there: nothing written


def _same_text(text: str) -> str:
    return " ".join(text.split())


def _live_same_fact(paths, fact: str) -> dict | None:
    """The newest live semantic record whose fact is ``fact`` (whitespace normalised)."""
    return live_same_fact([record for _, _, record in jsonl.iter_records(paths.semantic)], fact)


def live_same_fact(records: list[dict], fact: str) -> dict | None:
    """:func:`_live_same_fact` over the semantic records ``records`` (file order)."""
    from memcli.models import superseded_ids

    gone = superseded_ids(records)
    wanted = _same_text(fact)
    for record in reversed(records):
        text = record.get("fact")
        if isinstance(text, str) and record.get("id") not in gone and _same_text(text) == wanted:
            return record
    return None


@dataclass
class Forgotten:
    target: str
    tier: str                       # episodic or semantic
    tombstone: dict | None          # None when nothing was written
    already_superseded_by: str | None = None


def _redact(text: str) -> tuple[str, int]:
    """Ingest's redaction (every pattern, no pre-check: a fact is one short text)."""
    from memcli.redact import redact_text

    return redact_text(text)


def _clean_tags(tags) -> list[str]:
    out: list[str] = []
    for tag in tags or ():
        if not isinstance(tag, str) or not tag.strip():
            raise UsageError(f"{{tag}}: a tag must be a non-empty string, got {tag!r}", param="tag")
        tag = tag.strip()
        if tag not in out:
            out.append(tag)
    return out


def _find_memory(paths, record_id: str) -> tuple[str, dict, str | None] | None:
    """(tier, record, id of the item that supersedes it) for an episodic/semantic id
    (superseded as :func:`memcli.models.superseded_ids` says)."""
    from memcli.models import superseded_ids

    for tier, path in (("episodic", paths.episodic), ("semantic", paths.semantic)):
        records = [record for _, _, record in jsonl.iter_records(path)]
        found = next((r for r in records if r.get("id") == record_id), None)
        if found is not None:
            return tier, found, superseded_ids(records).get(record_id)
    return None


def _not_found(store: AgentStore, record_id: str, what: str) -> RecordNotFoundError:
    return RecordNotFoundError(
        f"no {what} with id {record_id!r} in agent {store.agent_id!r} "
        f"(looked in {store.paths.episodic.name} and {store.paths.semantic.name} under {store.paths.dir})",
        hint=f"`memcli memory {store.agent_id} --all` lists the summaries and facts with their ids")


def _refuse_trace(store: AgentStore, record_id: str, verb: str) -> None:
    found = store.find(record_id)
    if found is not None and found[0] in ("active", "archive"):
        raise UsageError(f"{record_id!r} is a trace ({found[0]}): traces are the agent's history and cannot be "
                         f"{verb}; {verb} takes a semantic fact" + (" or an episodic summary" if verb == "forgotten" else ""))


def remember(store: AgentStore, text: str, *, tags=(), pin: bool = False, supersedes: list[str] | None = None
             ) -> Remembered:
    """Append a fact (module docstring). Creates the agent if it does not exist yet."""
    fact, redacted_tags, redacted = prepare_fact(text, tags, pin)
    wanted = [s for s in dict.fromkeys(supersedes or ()) if s]
    with store.writer() as session:
        replaced = []
        for old in wanted:
            found = _find_memory(session.paths, old)
            if found is None:
                _refuse_trace(store, old, "superseded")
                raise _not_found(store, old, "fact")
            if found[0] != "semantic":
                raise UsageError(f"{{supersedes}} {old!r}: that is an episodic summary; a fact can only replace a fact "
                                 f"(`memcli forget {store.agent_id} {old}` takes a summary out)", param="supersedes")
            replaced.append(old)
        same = _live_same_fact(session.paths, fact)
        if same is not None:
            redacted_tags = merge_same(same, redacted_tags, replaced)
            if redacted_tags is None:
                return Remembered(same, redacted, [], existing=True)
        record = fact_record(fact, redacted_tags, replaced)
        _append(session, "semantic", record)
    return Remembered(record, redacted, replaced)


def merge_same(same: dict, tags: list[str], replaced: list[str]) -> list[str] | None:
    """The same live fact is there: None when it has every tag and nothing is replaced (nothing to
    write), else the tags of the new record, which also supersedes it (added to ``replaced``)."""
    have = same.get("tags") if isinstance(same.get("tags"), list) else []
    if not replaced and set(tags) <= set(have):
        return None
    if same.get("id") not in replaced:
        replaced.append(same["id"])
    return list(dict.fromkeys([*have, *tags]))


def prepare_fact(text: str, tags, pin: bool) -> tuple[str, list[str], int]:
    """A fact's text and tags checked and redacted: (fact, tags, secrets redacted)."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError("the fact is empty: give the text to remember")
    text = text.strip()
    if len(text) > MAX_FACT_CHARS:
        raise UsageError(f"the fact is {len(text):,} characters; at most {MAX_FACT_CHARS:,} (a fact is a sentence "
                         "or two: put documents into traces with `memcli ingest`)")
    clean = _clean_tags(tags)
    if pin and PINNED_TAG not in clean:
        clean.insert(0, PINNED_TAG)
    fact, redacted = _redact(text)
    redacted_tags = []
    for tag in clean:
        tag, n = _redact(tag)
        redacted += n
        redacted_tags.append(tag)
    return fact, redacted_tags, redacted


def fact_record(fact: str, tags: list[str], replaced: list[str]) -> dict:
    """The SEMANTIC record ``remember`` appends (module docstring)."""
    item = SemanticItem(id=new_id(SEMANTIC_PREFIX), ts=time.time(), fact=fact, tags=tags,
                        confidence=1.0, salience=1.0 if PINNED_TAG in tags else 0.5,
                        supersedes=replaced, extra={"source": "remember"})
    return to_record(item)


def forget(store: AgentStore, record_id: str, *, reason: str | None = None) -> Forgotten:
    """Take a fact or summary out with a tombstone (module docstring)."""
    store.require()
    if not isinstance(record_id, str) or not record_id.strip():
        raise UsageError("give the id of the fact or summary to forget")
    record_id = record_id.strip()
    reason_text = forget_reason(reason)
    with store.writer(create=False) as session:
        found = _find_memory(session.paths, record_id)
        if found is None:
            _refuse_trace(store, record_id, "forgotten")
            raise _not_found(store, record_id, "fact or summary")
        tier, _, superseded_by = found
        if superseded_by is not None:
            return Forgotten(record_id, tier, None, superseded_by)
        record = tombstone_record(record_id, tier, reason_text)
        _append(session, tier, record)
    return Forgotten(record_id, tier, record)


def forget_reason(reason: str | None) -> str | None:
    return _redact(reason.strip())[0] if isinstance(reason, str) and reason.strip() else None


def tombstone_record(record_id: str, tier: str, reason_text: str | None) -> dict:
    """The tombstone ``forget`` appends to the ``tier`` (semantic or episodic) file (module docstring)."""
    label = f"(forgotten {record_id}" + (f": {reason_text})" if reason_text else ")")
    extra = {"source": "forget", "forgotten": record_id}
    if reason_text:
        extra["reason"] = reason_text
    if tier == "semantic":
        own = new_id(SEMANTIC_PREFIX)
        item = SemanticItem(id=own, ts=time.time(), fact=label, tags=[FORGOTTEN_TAG], confidence=0.0,
                            salience=0.0, supersedes=[record_id, own], extra=extra)
    else:
        own = new_id(EPISODIC_PREFIX)
        item = EpisodicItem(id=own, ts=time.time(), turn_ids=[], summary=label, tags=[FORGOTTEN_TAG],
                            salience=0.0, supersedes=[record_id, own], extra=extra)
    return to_record(item)


def _append(session, tier: str, record: dict) -> None:
    """One memory record, durably, through the write session (under the agent lock)."""
    session.append_memory(tier, [record])
