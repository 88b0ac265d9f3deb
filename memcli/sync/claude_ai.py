"""Claude.ai data exports (``conversations.json`` in ``~/Downloads`` or ``~/.memcli/exports``)
as a sync source: one agent per conversation, ``claude-ai.<project or chat>.<uuid>``
(:mod:`memcli.sync.chat_exports`)."""

from memcli.sync.chat_exports import ExportSource

SOURCE = ExportSource("claude-ai", "claude-ai", "https://claude.ai/chat/")
