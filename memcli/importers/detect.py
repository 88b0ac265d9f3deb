"""What ``--from auto`` says when no importer claims the input: the keys it saw, a known format
memcli does not read (named), or the supported format whose typical keys it shares most."""

from __future__ import annotations


def _objects(values: list) -> list[dict]:
    """The first records: top-level objects, and the elements of a document's first list."""
    out = []
    for value in values[:64]:
        if isinstance(value, dict):
            out.append(value)
            for inner in value.values():
                if isinstance(inner, list) and inner and isinstance(inner[0], dict):
                    out.extend(v for v in inner[:8] if isinstance(v, dict))
                    break
        elif isinstance(value, list):
            out.extend(v for v in value[:8] if isinstance(v, dict))
    return out


def seen_keys(values: list) -> set[str]:
    keys: set[str] = set()
    for obj in _objects(values):
        keys.update(k for k in obj if isinstance(k, str))
    return keys


def resembles(keys: set[str], registry):
    """The registry entry sharing the most typical keys with ``keys`` (at least two), or None."""
    best, best_score = None, 1
    for fmt in registry:
        score = len(keys & fmt.keys)
        if score > best_score:
            best, best_score = fmt, score
    return best


# (what it is, test on the first records): formats people have that memcli does not import
def _any(values, test) -> bool:
    return any(isinstance(v, dict) and test(v) for v in _objects(values)[:16])


KNOWN_FOREIGN = (
    ("an OpenAI Batch API file (requests or results by custom_id)",
     lambda v: "custom_id" in v and ("body" in v or "response" in v or "result" in v)),
    ("SWE-bench predictions (patches, no conversation)", lambda v: "instance_id" in v and "model_patch" in v),
    ("LangSmith runs", lambda v: "run_type" in v and "inputs" in v),
    ("a Gemini CLI logs.json (your prompts only, no replies; its chats/session-*.json files import)",
     lambda v: "sessionId" in v and "messageId" in v and "message" in v and "type" in v),
)


def known_foreign_format(values: list) -> str | None:
    for what, test in KNOWN_FOREIGN:
        if _any(values, test):
            return what
    return None
