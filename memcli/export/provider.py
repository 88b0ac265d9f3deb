"""``--format openai`` / ``--format anthropic``: the whole history as a provider message list.

The mapping from traces to provider messages (tool calls and results as native structures,
pairing, role alternation) is the snapshot renderers' job (:mod:`memcli.renderers`, DESIGN.md §5);
export must not write it a second time. This module is the one seam between the two:
:func:`write_provider_messages` hands the history to the renderer and streams its output.

Until the renderers are part of this build, asking for these formats is a usage error, raised
before any output is opened.
"""

from __future__ import annotations

from typing import BinaryIO

from memcli.errors import UsageError

PROVIDER_FORMATS = {"openai": "openai-chat", "anthropic": "anthropic"}


def require_renderers(fmt: str):
    """The renderers module, or a UsageError saying this build has none."""
    try:
        import memcli.renderers as renderers
    except ModuleNotFoundError as exc:
        if exc.name not in ("memcli.renderers",):
            raise
        raise UsageError(
            f"--format {fmt} needs the snapshot renderers, which this build does not have yet",
            hint="--format jsonl, json or markdown work now",
        ) from None
    return renderers


def write_provider_messages(fmt: str, history, out: BinaryIO, flt, *, with_memory: bool, result,
                            progress=None) -> None:
    """Write the (filtered) history as one provider payload (a JSON message list) to ``out``.

    Wiring point for the renderers: render ``history.iter_trace_records(progress)`` (filtered
    with ``flt.matches``; plus the live memory when ``with_memory``) with the renderer named
    ``PROVIDER_FORMATS[fmt]`` — same pairing rules as ``snapshot`` — and count ``result.traces``.
    """
    require_renderers(fmt)
    raise UsageError(f"--format {fmt} is not wired to the snapshot renderers in this build")
