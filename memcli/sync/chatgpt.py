"""ChatGPT data exports (``conversations.json`` in ``~/Downloads`` or ``~/.memcli/exports``) as a
sync source: one agent per conversation, ``chatgpt.chat.<conversation id>``
(:mod:`memcli.sync.chat_exports`)."""

from memcli.sync.chat_exports import ExportSource

SOURCE = ExportSource("chatgpt", "chatgpt", "https://chatgpt.com/c/")
