"""Anthropic's memory tool (``memory_20250818``) answered from the agent's store.

:func:`memory_tool` takes one command — the ``input`` object of a ``tool_use`` block named
``memory``: ``view``, ``create``, ``str_replace``, ``insert``, ``delete`` or ``rename`` — and
returns exactly the text the official SDK's reference implementation
(``anthropic.lib.tools._beta_builtin_memory_tool.BetaLocalFilesystemMemoryTool``) returns for it;
a command that implementation refuses raises :class:`MemoryToolRefused`, whose message is the
SDK's error text (the ``tool_result`` to send back with ``is_error: true``). Where Anthropic's
API documentation and the SDK disagree, the SDK is followed. The files are not on disk: they are
the replay of the agent's ``memory_files.jsonl`` (memcli.store.memory_files).

Same behaviour, in particular:

* paths must start with ``/memories``; ``.``/``..`` are resolved and a path that leaves the
  tree is refused; results quote the path as the command gave it (``/memories/`` lists
  ``/memories//notes.md``, as the SDK does);
* ``view`` of a file numbers every line (``str(n).rjust(6) + "\\t" + line``; a trailing newline
  gives a last, empty line); ``view_range`` ``[start, end]`` slices like the SDK (``-1``: to the
  end; out-of-range values give fewer lines, not an error); ``view`` of a directory lists two
  levels, sorted by name, hidden names (``.x``) left out, each with a size as the SDK formats it
  (file sizes are the UTF-8 bytes; a directory is shown as ``4K``, what a directory's size is
  on common Linux file systems — the SDK prints whatever the file system reports);
* ``create`` refuses an existing path; ``str_replace`` refuses an ``old_str`` that is absent or
  appears more than once (listing the lines); ``insert`` takes ``insert_line`` in ``[0, lines]``
  and ends the file with a newline; ``delete`` of a directory removes what is under it;
  ``rename`` refuses an existing destination; the root cannot be deleted or renamed;
* numbers are read as the SDK's models read them: ``1``, ``"1"``, ``1.0`` are 1.

Where the SDK does not refuse cleanly but fails with a Python exception (a missing field, a
parent path that is a file, moving a directory into itself, text that is not valid UTF-8), or
leaves something behind on a refusal (an empty file for a ``create`` without ``file_text``, the
destination's parent directories for a ``rename`` of a missing path), memcli refuses with its own
message and writes nothing: a refused command never changes the store.

memcli's own rules on top: a file holds at most 100 KB (:data:`MAX_FILE_BYTES` UTF-8 bytes) and
the tree at most :data:`MAX_FILES` files (the limits of Anthropic's memory stores); text is
redacted like ingested traces (:func:`memcli.redact.redact_text`) before it is stored, and every
answer is computed from what is stored. Every change is checked against the tree replayed under
the agent lock and appended under that lock (:meth:`WriteSession.append_memory_file`), so
concurrent callers each edit the latest version. Reads take no lock and do not create the agent.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from memcli.errors import MemoryToolRefused
from memcli.store.memory_files import MAX_FILE_BYTES, MAX_FILES, MEMORY_FILE_PREFIX, ROOT, MemoryTree, splice

COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")
TOOL_DEFINITION = {"type": "memory_20250818", "name": "memory"}
MAX_LINES = 999999
LINE_NUMBER_WIDTH = len(str(MAX_LINES))
DIRECTORY_SIZE = 4096


@dataclass
class MemoryToolResult:
    text: str
    record: dict | None = None   # the change appended, None for a view
    redacted: int = 0            # secrets replaced before storing


# --------------------------------------------------------------------------- helpers (as the SDK)

def format_file_size(size: int) -> str:
    """The SDK's ``_format_file_size``: ``0B``, ``512B``, ``1.5K``, ``4K``, ``2.0M``."""
    if size == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    i = min(int(size.bit_length() - 1) // 10, len(units) - 1)
    value = size / (1024 ** i)
    return f"{int(value)}{units[i]}" if value == int(value) else f"{value:.1f}{units[i]}"


def _split_lines_keeping_cr(content: str) -> list[str]:
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _numbered(lines: list[str], start: int) -> list[str]:
    return [f"{str(i + start).rjust(LINE_NUMBER_WIDTH)}\t{line}" for i, line in enumerate(lines)]


def _lax_int(value, name: str) -> int:
    """An integer as the SDK's models accept one (``1``, ``"1"``, ``1.0``, ``True``)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise MemoryToolRefused(f"Invalid `{name}` parameter: expected an integer, got {_shown(value)}.")


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _field(command: dict, name: str, kind=str):
    value = command.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        what = "a string" if kind is str else "an integer"
        got = "nothing" if name not in command else _shown(value)
        raise MemoryToolRefused(f"Missing or invalid `{name}` parameter: expected {what}, got {got}.")
    return value


def resolve_path(path, name: str = "path") -> str:
    """The canonical tree path for a command's path (its parameter ``name``), checked as the
    SDK's ``_validate_path``."""
    if not isinstance(path, str):
        raise MemoryToolRefused(f"Missing or invalid `{name}` parameter: expected a string, got {_shown(path)}.")
    if not path.startswith(ROOT):
        raise MemoryToolRefused(f"Path must start with /memories, got: {path}")
    if "\x00" in path:
        raise MemoryToolRefused(f"Path {path!r} contains a NUL character")
    relative = path[len(ROOT):].lstrip("/")
    # the SDK resolves <base>/memories/<relative> on disk: ".." may climb above the root and, in
    # principle, come back down; the base directory is not known here, so climbing above it
    # counts as escaping
    stack = ["memories"]
    for part in relative.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not stack:
                raise MemoryToolRefused(f"Path {path} would escape /memories directory")
            stack.pop()
        else:
            stack.append(part)
    if not stack or stack[0] != "memories":
        raise MemoryToolRefused(f"Path {path} would escape /memories directory")
    return "/" + "/".join(stack)


def _utf8_size(text: str, path: str) -> int:
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise MemoryToolRefused(f"The text for {path} is not valid UTF-8 (it holds a lone surrogate).") from None


def _check_size(text: str, path: str) -> None:
    size = _utf8_size(text, path)
    if size > MAX_FILE_BYTES:
        raise MemoryToolRefused(
            f"File {path} would be {size:,} bytes; a memory file holds at most {MAX_FILE_BYTES:,} bytes (100 KB). "
            "Split it into smaller files.")


def _redact(text: str) -> tuple[str, int]:
    from memcli.redact import redact_text

    return redact_text(text)


# --------------------------------------------------------------------------- commands

def _view(tree: MemoryTree, command: dict) -> str:
    path = command.get("path")
    canon = resolve_path(path)
    kind = tree.kind(canon)
    if kind is None:
        raise MemoryToolRefused(f"The path {path} does not exist. Please provide a valid path.")
    if kind == "dir":
        items: list[tuple[str, str]] = []

        def collect(dir_path: str, relative: str, depth: int) -> None:
            if depth > 2:
                return
            for name in tree.children(dir_path):
                if name.startswith("."):
                    continue
                item_relative = f"{relative}/{name}" if relative else name
                child = f"{dir_path}/{name}"
                if child in tree.dirs:
                    items.append((format_file_size(DIRECTORY_SIZE), f"{item_relative}/"))
                    if depth < 2:
                        collect(child, item_relative, depth + 1)
                else:
                    items.append((format_file_size(len(tree.files[child].encode("utf-8"))), item_relative))

        collect(canon, "", 1)
        header = f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:"
        lines = [f"{format_file_size(DIRECTORY_SIZE)}\t{path}"]
        lines.extend(f"{size}\t{path}/{item}" for size, item in items)
        return f"{header}\n" + "\n".join(lines)

    lines = tree.files[canon].split("\n")
    if len(lines) > MAX_LINES:
        raise MemoryToolRefused(f"File {path} exceeds maximum line limit of 999,999 lines.")
    display, start_num = lines, 1
    view_range = command.get("view_range")
    if view_range and not isinstance(view_range, (list, tuple)):
        raise MemoryToolRefused(
            f"Invalid `view_range` parameter: expected [start_line, end_line], got {_shown(view_range)}.")
    if view_range and len(view_range) == 2:
        first = _lax_int(view_range[0], "view_range")
        last = _lax_int(view_range[1], "view_range")
        start = max(1, first) - 1
        end = len(lines) if last == -1 else last
        display, start_num = lines[start:end], start + 1
    return f"Here's the content of {path} with line numbers:\n" + "\n".join(_numbered(display, start_num))


def _existing_file(tree: MemoryTree, path) -> str:
    canon = resolve_path(path)
    kind = tree.kind(canon)
    if kind is None:
        raise MemoryToolRefused(f"The path {path} does not exist. Please provide a valid path.")
    if kind != "file":
        raise MemoryToolRefused(f"The path {path} is not a file.")
    return canon


def _create(tree: MemoryTree, command: dict) -> tuple[str, dict, int]:
    path = command.get("path")
    canon = resolve_path(path)
    if tree.kind(canon) is not None:
        raise MemoryToolRefused(f"File {path} already exists")
    blocking = tree.blocking_file(canon)
    if blocking is not None:
        raise MemoryToolRefused(f"Cannot create {path}: {blocking} is a file, not a directory")
    text = _field(command, "file_text")
    if len(tree.files) >= MAX_FILES:
        raise MemoryToolRefused(
            f"Cannot create {path}: /memories already holds {len(tree.files):,} files, the most it can hold "
            f"({MAX_FILES:,}). Delete or merge files first.")
    _check_size(text, path)
    stored, redacted = _redact(text)
    _check_size(stored, path)
    return f"File created successfully at: {path}", {"op": "create", "path": canon, "content": stored}, redacted


def _edit_record(op: str, canon: str, old: str, new: str, path: str) -> tuple[dict, str, int]:
    _check_size(new, path)
    stored, redacted = _redact(new)
    _check_size(stored, path)
    at, cut, text = splice(old, stored)
    return {"op": op, "path": canon, "at": at, "cut": cut, "text": text}, stored, redacted


def _str_replace(tree: MemoryTree, command: dict) -> tuple[str, dict, int]:
    path = command.get("path")
    canon = _existing_file(tree, path)
    content = tree.files[canon]
    old_str = _field(command, "old_str")
    count = content.count(old_str)
    if count == 0:
        raise MemoryToolRefused(
            f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}.")
    if count > 1:
        matching_lines: list[int] = []
        start = 0
        while True:
            pos = content.find(old_str, start)
            if pos == -1:
                break
            matching_lines.append(content[:pos].count("\n") + 1)
            start = pos + 1
        raise MemoryToolRefused(
            f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines: "
            f"{', '.join(map(str, matching_lines))}. Please ensure it is unique")
    new_str = _field(command, "new_str")
    pos = content.find(old_str)
    changed_line_index = content[:pos].count("\n")
    record, stored, redacted = _edit_record("str_replace", canon, content, content.replace(old_str, new_str), path)
    new_lines = stored.split("\n")
    context_start = max(0, changed_line_index - 2)
    context_end = min(len(new_lines), changed_line_index + 3)
    snippet = [f"{str(n).rjust(LINE_NUMBER_WIDTH)}\t{new_lines[n - 1]}" for n in range(context_start + 1, context_end + 1)]
    text = "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n" + "\n".join(snippet)
    return text, record, redacted


def _insert(tree: MemoryTree, command: dict) -> tuple[str, dict, int]:
    path = command.get("path")
    canon = _existing_file(tree, path)
    content = tree.files[canon]
    lines = _split_lines_keeping_cr(content)
    if "insert_line" not in command or command["insert_line"] is None:
        raise MemoryToolRefused("Missing or invalid `insert_line` parameter: expected an integer, got nothing.")
    insert_line = _lax_int(command["insert_line"], "insert_line")
    if insert_line < 0 or insert_line > len(lines):
        raise MemoryToolRefused(
            f"Invalid `insert_line` parameter: {insert_line}. It should be within the range [0, {len(lines)}].")
    insert_text = _field(command, "insert_text")
    lines.insert(insert_line, insert_text.rstrip("\n"))
    new_content = "\n".join(lines)
    if not new_content.endswith("\n"):
        new_content += "\n"
    record, _, redacted = _edit_record("insert", canon, content, new_content, path)
    return f"The file {path} has been edited.", record, redacted


def _delete(tree: MemoryTree, command: dict) -> tuple[str, dict, int]:
    path = command.get("path")
    canon = resolve_path(path)
    if canon == ROOT:
        raise MemoryToolRefused("Cannot delete the /memories directory itself")
    if tree.kind(canon) is None:
        raise MemoryToolRefused(f"The path {path} does not exist")
    return f"Successfully deleted {path}", {"op": "delete", "path": canon}, 0


def _rename(tree: MemoryTree, command: dict) -> tuple[str, dict, int]:
    old_path, new_path = command.get("old_path"), command.get("new_path")
    old = resolve_path(old_path, "old_path")
    new = resolve_path(new_path, "new_path")
    if old == ROOT:
        raise MemoryToolRefused("Cannot rename the /memories directory itself")
    if tree.kind(new) is not None:
        raise MemoryToolRefused(f"The destination {new_path} already exists")
    if tree.kind(old) is None:
        raise MemoryToolRefused(f"The path {old_path} does not exist")
    if new.startswith(old + "/"):
        raise MemoryToolRefused(f"Cannot move {old_path} into itself ({new_path})")
    blocking = tree.blocking_file(new)
    if blocking is not None:
        raise MemoryToolRefused(f"Cannot rename {old_path} to {new_path}: {blocking} is a file, not a directory")
    return (f"Successfully renamed {old_path} to {new_path}",
            {"op": "rename", "path": old, "new_path": new}, 0)


_CHANGES = {"create": _create, "str_replace": _str_replace, "insert": _insert, "delete": _delete, "rename": _rename}


# --------------------------------------------------------------------------- entry points

def _store_of(store_or_agent):
    """An AgentStore, or the store of a ``memcli.Memory(...).agent(...)`` (its ``.store``)."""
    from memcli.store.agent import AgentStore

    if isinstance(store_or_agent, AgentStore):
        return store_or_agent
    store = getattr(store_or_agent, "store", None)
    if isinstance(store, AgentStore):
        return store
    raise TypeError(f"expected an AgentStore or a memcli.Memory(...).agent(...), got {type(store_or_agent).__name__}")


def parse_command(data: bytes | str) -> dict:
    """One command from JSON text (what ``memcli memory-tool`` reads on stdin)."""
    import orjson

    try:
        command = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise MemoryToolRefused(f"The memory tool input is not valid JSON: {exc}") from None
    if not isinstance(command, dict):
        raise MemoryToolRefused(
            f"The memory tool input must be a JSON object (the tool_use input), got {type(command).__name__}.")
    return command


def answer(command: dict, *, tree, exists, changing) -> MemoryToolResult:
    """One command against a working-memory log wherever it is kept — the agent's file here, the
    shared store's rows for ``mcp --remote`` (memcli.remote.tools) — so both answer alike:
    ``tree()`` is the tree now (for a view), ``exists()`` whether the agent exists (a refusal must
    not create it), ``changing()`` a context manager giving ``(tree, append)`` under the writer's
    lock: the tree replayed there and the function that appends one record durably."""
    if not isinstance(command, dict):
        raise MemoryToolRefused(
            f"The memory tool input must be an object (the tool_use input), got {type(command).__name__}.")
    name = command.get("command")
    if name == "view":
        return MemoryToolResult(_view(tree(), command))
    change = _CHANGES.get(name) if isinstance(name, str) else None
    if change is None:
        raise MemoryToolRefused(f"Unknown command: {name}")
    from memcli.ids import new_id

    if not exists():
        change(MemoryTree(), command)  # a refusal must not create the agent
    with changing() as (current, append):
        text, record, redacted = change(current, command)
        record = {"id": new_id(MEMORY_FILE_PREFIX), "ts": time.time(), **record}
        if redacted:
            record["redacted"] = redacted
        append(record)
    return MemoryToolResult(text, record, redacted)


def run_memory_tool(store_or_agent, command: dict) -> MemoryToolResult:
    """:func:`memory_tool` with what it wrote (the record appended, secrets redacted)."""
    from contextlib import contextmanager

    if not isinstance(command, dict):
        return answer(command, tree=None, exists=None, changing=None)   # refused
    store = _store_of(store_or_agent)

    @contextmanager
    def changing():
        with store.writer() as session:
            yield session.memory_tree(), session.append_memory_file

    return answer(command, tree=store.memory_tree, exists=store.exists, changing=changing)


def memory_tool(store_or_agent, command: dict) -> str:
    """Answer one memory-tool command (module docstring): the ``tool_result`` text, or
    :class:`MemoryToolRefused` carrying the SDK's error text."""
    return run_memory_tool(store_or_agent, command).text
