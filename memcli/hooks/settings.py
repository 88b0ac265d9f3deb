"""Merging memcli's hook entries into a harness's settings file, and taking them out again.

Invariants:

* **Never overwrite.** Install reads the file, appends one matcher group per event holding memcli's
  one handler (``{"matcher"?, "hooks": [{"type": "command", "command", "timeout"}]}``) and
  writes it back; every other key, event, group and handler stays as it was, in its order. The
  user's own groups are never edited, even one with the same matcher.
* **Exactly undone.** A handler is memcli's when its command runs memcli's ``hook`` command for
  this harness (:func:`is_ours`). Uninstall removes those handlers, then the groups, event lists
  and ``hooks`` object that they leave empty (and held nothing else): the file is JSON-equal to
  what it was before install (only the whitespace may differ). Installing again replaces memcli's
  entries instead of adding a second set.
* **Refuse what cannot be read.** A file that is not valid JSON, whose top level is not an
  object, or whose ``hooks`` / event values do not have the documented shape is refused with its
  path (and line) and left byte-identical.
* Every change is written by :func:`memcli.store.harness_settings.replace_settings`: a backup
  beside the file first, then an atomic replace.

The installed command names memcli by absolute path and carries the store's ``--dir`` (a hook
runs in the harness's environment, not the user's shell): ``/abs/memcli --dir /abs/memory hook
claude-code Stop``, with ``--agent NAME`` when the agent is fixed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from memcli.errors import InputError
from memcli.hooks.harnesses import TIMEOUT_SECONDS, Harness


@dataclass
class SettingsChange:
    harness: str
    scope: str
    path: Path
    events: list[str] = field(default_factory=list)   # events memcli's entries were written (or removed) for
    backup: Path | None = None
    changed: bool = False
    command: str | None = None                         # install: the command of the Stop-like entry


@dataclass
class ScopeStatus:
    scope: str
    path: Path
    exists: bool
    error: str | None = None
    installed: dict = field(default_factory=dict)     # event -> command


def memcli_argv() -> list[str]:
    """How a hook runs this memcli: the ``memcli`` script beside this Python (absolute), else
    ``python -m memcli`` with this Python."""
    script = Path(sys.executable).parent / "memcli"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script.absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "memcli"]


def hook_command(harness: Harness, event: str, memory_dir: Path, agent: str | None = None,
                 argv: list[str] | None = None) -> str:
    parts = (argv or memcli_argv()) + ["--dir", str(Path(memory_dir).absolute()), "hook", harness.name, event]
    if agent:
        parts += ["--agent", agent]
    return shlex.join(parts)


def is_ours(command, harness: str) -> bool:
    """True for a command that runs ``memcli ... hook HARNESS EVENT``."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    for i, word in enumerate(words):
        if word == "hook" and words[i + 1:i + 2] == [harness] and len(words) > i + 2:
            head = words[:i]
            return any(re.search(r"(^|/)memcli$", w) for w in head) or "memcli" in head
    return False


def read_settings(path: Path, events=()) -> dict:
    """The settings object of ``path`` ({} when the file does not exist or is blank); ``hooks``
    must be an object (or null) and each of ``events`` in it a list (other keys under ``hooks``
    are the harness's business: an older Gemini CLI kept ``enabled`` there)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not UTF-8 (byte {exc.start + 1}); it was left as it is") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg}); "
                         "it was left as it is") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: the settings are not a JSON object; it was left as it is")
    hooks = data.get("hooks")
    if hooks is not None:
        if not isinstance(hooks, dict):
            raise InputError(f"{path}: \"hooks\" is not an object; it was left as it is")
        for event in events:
            if event in hooks and not isinstance(hooks[event], list):
                raise InputError(f"{path}: \"hooks\".{event!r} is not a list; it was left as it is")
    return data


def _dump(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _remove_ours(data: dict, harness: str) -> list[str]:
    """Take memcli's handlers for ``harness`` out of ``data`` (in place), pruning what they leave
    empty; the events they were found under."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return []
    found: list[str] = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                kept_groups.append(group)
                continue
            kept = [h for h in handlers if not (isinstance(h, dict) and is_ours(h.get("command"), harness))]
            if len(kept) == len(handlers):
                kept_groups.append(group)
                continue
            if event not in found:
                found.append(event)
            if kept:
                group["hooks"] = kept
                kept_groups.append(group)
        if len(kept_groups) != len(groups):
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
        else:
            hooks[event] = kept_groups
    if found and not hooks:
        del data["hooks"]
    return found


def install(harness: Harness, scope: str, path: Path, memory_dir: Path, agent: str | None = None,
            argv: list[str] | None = None) -> SettingsChange:
    from memcli.store.harness_settings import replace_settings

    data = read_settings(path, [e.name for e in harness.events])
    before = _dump(data) if path.exists() else None
    _remove_ours(data, harness.name)
    if data.get("hooks") is None:
        data["hooks"] = {}
    hooks = data["hooks"]
    change = SettingsChange(harness.name, scope, path)
    for event in harness.events:
        command = hook_command(harness, event.name, memory_dir, agent, argv)
        handler: dict = {"type": "command", "command": command, "timeout": TIMEOUT_SECONDS * harness.timeout_factor}
        if harness.name == "gemini":
            handler = {"name": f"memcli-{event.name}", **handler}  # `/hooks disable memcli-AfterAgent`
        group: dict = {"matcher": event.matcher} if event.matcher else {}
        group["hooks"] = [handler]
        hooks.setdefault(event.name, []).append(group)
        change.events.append(event.name)
        change.command = change.command or command
    after = _dump(data)
    if after != before:
        change.backup = replace_settings(path, after)
        change.changed = True
    return change


def uninstall(harness: Harness, scope: str, path: Path) -> SettingsChange:
    from memcli.store.harness_settings import replace_settings

    change = SettingsChange(harness.name, scope, path)
    if not path.exists():
        return change
    data = read_settings(path, [e.name for e in harness.events])
    change.events = _remove_ours(data, harness.name)
    if change.events:
        change.backup = replace_settings(path, _dump(data))
        change.changed = True
    return change


def status(harness: Harness, scope: str, path: Path) -> ScopeStatus:
    result = ScopeStatus(scope, path, path.exists())
    if not result.exists:
        return result
    try:
        data = read_settings(path, [e.name for e in harness.events])
    except InputError as exc:
        result.error = exc.message
        return result
    for event, groups in (data.get("hooks") or {}).items():
        for group in groups if isinstance(groups, list) else ():
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler in handlers if isinstance(handlers, list) else ():
                if isinstance(handler, dict) and is_ours(handler.get("command"), harness.name):
                    result.installed[event] = handler["command"]
    return result
