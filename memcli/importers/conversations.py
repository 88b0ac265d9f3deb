"""Files that hold many conversations, and the agents ``--split`` makes of them.

An importer whose format allows several conversations in one file (a dataset of records, NDJSON
of request bodies, an eval log with several samples) has ``conversations(values)``: the input as
a list of :class:`Conversation`, each read on its own by the importer's ``events`` (its ids form
their own hash chain, so a conversation keeps its ids whatever else the file holds).

Naming rule of ``--split``: conversation *i* becomes agent ``AGENT.<key>`` where ``<key>`` is the
conversation's own id (``id``, ``instance_id``... as the format defines it) sanitised to the
agent-id alphabet (``[A-Za-z0-9._-]``, other runs of characters become ``-``) — when *every*
conversation has one and they stay distinct after sanitising; otherwise ``<key>`` is the 1-based
index ``i`` for all of them.
"""

from __future__ import annotations

import re
from itertools import chain
from typing import Callable, Iterable, Iterator, NamedTuple

from memcli.errors import InputError
from memcli.store.layout import AGENT_ID_RE

ID_FIELDS = ("id", "conversation_id", "session_id", "sessionId", "instance_id", "uuid")


class Conversation(NamedTuple):
    index: int       # 1-based position in the file
    key: str | None  # the conversation's own id, if it has one
    line: int        # the input line it starts on
    values: list     # (line, value) pairs for the importer's ``events``

    def label(self) -> str:
        own = f" ({self.key})" if self.key is not None else ""
        return f"conversation {self.index}{own} at line {self.line}"


def own_id(document: dict, fields: Iterable[str] = ID_FIELDS) -> str | None:
    """The first of ``fields`` holding a non-empty string or an integer, as a string."""
    for field in fields:
        value = document.get(field)
        if isinstance(value, str) and value.strip():
            return value
        if type(value) is int:
            return str(value)
    return None


def by_document(values: Iterable, is_document: Callable[[object], bool],
                key_of: Callable[[dict], str | None] = own_id) -> Iterator[Conversation]:
    """Each value ``is_document`` accepts is one conversation. Input that starts with other values
    (messages one per line or array element) is one conversation, read lazily so that a large
    message list streams as before; a document after such a run is an error in it."""
    values = iter(values)
    first = next(values, None)
    if first is None:
        return
    if isinstance(first[1], Exception) or not is_document(first[1]):
        yield Conversation(1, None, first[0], _bare_run(first, values, is_document))
        return
    index = 0
    for line, value in chain([first], values):
        index += 1
        if isinstance(value, Exception) or not is_document(value):
            yield Conversation(index, None, line, [(line, value)])
        else:
            yield Conversation(index, key_of(value), line, [(line, value)])


def _bare_run(first, values, is_document):
    yield first
    for line, value in values:
        if not isinstance(value, Exception) and is_document(value):
            yield line, InputError("a whole conversation after messages of another one: this file mixes"
                                   " conversations; import them separately", line=line)
            return
        yield line, value


def sanitise(key: str, room: int) -> str | None:
    """``key`` in the agent-id alphabet, at most ``room`` characters; None when nothing is left."""
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", key)
    text = re.sub(r"\.{2,}", ".", text)
    text = text.lstrip("._-")[:room].rstrip(".")
    return text or None


def agent_names(agent: str, conversations: list[Conversation]) -> list[str]:
    """The agent of each conversation under the naming rule (module docstring)."""
    room = 127 - len(agent)
    keys = [sanitise(c.key, room) if c.key is not None else None for c in conversations]
    if any(k is None for k in keys) or len(set(keys)) != len(keys):
        keys = [str(c.index) for c in conversations]
    names = [f"{agent}.{k}" for k in keys]
    for name in names:
        if not AGENT_ID_RE.fullmatch(name) or ".." in name:
            from memcli.errors import UsageError

            raise UsageError(f"agent id {agent!r} is too long to add a conversation key ({name!r})")
    return names
