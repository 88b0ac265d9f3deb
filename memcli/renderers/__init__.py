"""Provider renderers: canonical messages (memcli.messages) -> one provider's request payload.

``get_renderer(name, model=None)`` returns a fresh renderer (it collects notes about what it left
out); ``RENDERERS`` lists the names. Each module holds one provider and documents its mapping:

* ``openai-chat`` (memcli.renderers.openai_chat) — ``{"messages": [...]}``
* ``openai-responses`` (memcli.renderers.openai_responses) — ``{"instructions", "input": [...]}``
* ``anthropic`` (memcli.renderers.anthropic) — ``{"system", "messages": [...]}``
* ``gemini`` (memcli.renderers.gemini) — ``{"system_instruction", "contents": [...]}``
* ``text`` (memcli.renderers.text) — the ``[MEMORY:EPISODIC]`` / ``[MEMORY:SEMANTIC]`` /
  ``[RECENT TURNS]`` layout

The interface (memcli.renderers.base.Renderer) is streaming, so an export of a long history can
reuse it with constant memory::

    from memcli.snapshot.build import build_messages
    renderer = get_renderer("anthropic")
    messages = build_messages(traces, lookahead=10_000, id_capacity=1_000_000)
    for chunk in renderer.iter_chunks(system_text, messages):
        out.write(chunk)
    # renderer.notes.lines(): what was left out, for stderr
"""

from __future__ import annotations

import importlib

from memcli.errors import UsageError

RENDERERS = ("openai-chat", "openai-responses", "anthropic", "gemini", "text")
_MODULES = {"openai-chat": "openai_chat", "openai-responses": "openai_responses", "anthropic": "anthropic",
            "gemini": "gemini", "text": "text"}


# other spellings of a provider: ``export --format openai`` names the same payload, so
# ``snapshot -p openai`` does too
ALIASES = {"openai": "openai-chat"}


def provider_name(name: str) -> str:
    """The renderer ``name`` means (an alias resolved); UsageError naming the choices otherwise."""
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in _MODULES:
        raise UsageError(f"unknown provider {name!r} (expected one of {', '.join(RENDERERS)}; "
                         "openai means openai-chat)")
    return key


def get_renderer(name: str, model: str | None = None):
    module = _MODULES[provider_name(name)]
    return importlib.import_module(f"memcli.renderers.{module}").RENDERER(model)
