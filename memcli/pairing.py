"""The pairing rule: which unanswered tool call a tool result answers. One implementation, used by
every view — the state cache's unanswered-call map (:mod:`memcli.store.state`), the tool
interaction view (:mod:`memcli.tool_interactions`: ``tools``, ``stats``, ``doctor``), the snapshot
(:mod:`memcli.snapshot.build`) and the markdown export (:mod:`memcli.export.markdown`).

A result answers, among the unanswered calls with its ``tool_call_id`` (transcripts reuse ids),
the oldest one *in the result's own turn* when there is one, else the oldest overall
(first-in-first-out). A result with no unanswered call of its id is an orphan.

A leaf module (standard library only) so that the ingest path, which keeps the state cache,
loads nothing more for it.
"""

from __future__ import annotations

from typing import Callable, MutableMapping, MutableSequence, Sequence, TypeVar

T = TypeVar("T")


def take_open_call(queue: Sequence[T], turn_id: str | None,
                   turn_of: Callable[[T], str | None]) -> int:
    """Index in ``queue`` (unanswered calls with one id, oldest first) of the call a result from
    ``turn_id`` answers: the oldest of that turn, else the oldest. ``turn_of`` gives an entry's turn."""
    if turn_id is not None:
        for index, entry in enumerate(queue):
            if turn_of(entry) == turn_id:
                return index
    return 0


def pop_open_call(open_calls: MutableMapping[str, MutableSequence[T]], call_id: str, turn_id: str | None,
                  turn_of: Callable[[T], str | None]) -> T | None:
    """Remove and return the call a result with ``call_id`` from turn ``turn_id`` answers
    (:func:`take_open_call`), or None when no call with that id is unanswered (an orphan).
    ``open_calls`` maps an id to its unanswered calls, oldest first; an emptied entry is deleted."""
    queue = open_calls.get(call_id)
    if not queue:
        return None
    if len(queue) == 1:   # the only one: whatever its turn (the usual case)
        del open_calls[call_id]
        return queue[0]
    index = take_open_call(queue, turn_id, turn_of)
    entry = queue[index]
    del queue[index]
    if not queue:
        del open_calls[call_id]
    return entry
