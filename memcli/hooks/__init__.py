"""Harness hooks (docs/hooks.md): memcli wired into the hooks of the agent harness a user runs.

* :mod:`memcli.hooks.harnesses` — Claude Code, Codex and Gemini CLI: where their hook settings
  live, which events memcli uses, what each lacks;
* :mod:`memcli.hooks.settings` — ``hooks install|uninstall|status``: merge memcli's entries into
  a settings file and take exactly those out again;
* :mod:`memcli.hooks.run` — ``hook HARNESS EVENT``: the payload in, the transcript imported, the
  memory to give back after a compaction or on resume out (:mod:`memcli.hooks.context`).
"""
