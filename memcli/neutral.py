"""Stored text made harmless for people's eyes: the one rule every human view applies.

Transcripts come from tools, and from the web pages and files those tools read, so a stored
message may hold terminal control sequences (a real Claude Code transcript keeps the ANSI
colours of ``<local-command-stdout>``). Printed raw, they would retitle the terminal, clear the
screen, move the cursor or overwrite what the user reads. :func:`neutral` shows each control
character instead of sending it:

* C0 controls (U+0000–U+001F) and DEL (U+007F) become their Unicode control pictures, one cell
  each, so table widths do not move: ESC → ``␛``, BEL → ``␇``, a lone CR → ``␍``, NUL → ``␀``,
  DEL → ``␡``.
* C1 controls (U+0080–U+009F; U+009B is an 8-bit CSI to many terminals) have no picture: they
  are written as ``\\x9b`` (backslash, ``x``, two hex digits).
* Layout stays layout where the view allows it (``layout=True``): ``\\n`` and ``\\t`` are kept,
  and ``\\r\\n`` (a Windows line end) is a ``\\n``. With ``layout=False`` (one line of a table or
  a heading) they are pictures too: ``␊``, ``␉``.

Nothing else changes: printable text, non-ASCII letters, emoji and markup-looking text such as
``[bold]`` are returned as they are (the views print text, never markup). JSON output does not
use this: JSON escapes control characters itself. Invariant: the result holds no character in
U+0000–U+001F, U+007F–U+009F other than ``\\n`` and ``\\t`` (and those only with ``layout``).
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_OR_LAYOUT = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _picture(char: str) -> str:
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    return f"\\x{code:02x}"


_PICTURES = {chr(c): _picture(chr(c)) for c in (*range(0x20), *range(0x7F, 0xA0))}


def neutral(text: str, *, layout: bool = True) -> str:
    """``text`` with every control character shown, not sent (module docstring)."""
    if layout:
        if _CONTROL.search(text) is None:
            return text
        if "\r\n" in text:
            text = text.replace("\r\n", "\n")
        return _CONTROL.sub(lambda m: _PICTURES[m.group()], text)
    if _CONTROL_OR_LAYOUT.search(text) is None:
        return text
    return _CONTROL_OR_LAYOUT.sub(lambda m: _PICTURES[m.group()], text)


# Claude Code's slash-command wrapper, shown as people typed it (turns, show)
_SLASH_COMMAND = re.compile(r"<command-name>\s*(/?[^<\s]*)\s*</command-name>")
_SLASH_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_SLASH_PARTS = re.compile(r"^(?:\s*<(command-message|command-name|command-args|command-contents)>.*?</\1>)+\s*$",
                          re.S)


def readable_text(text: str) -> str:
    """A user message as people read it: Claude Code's slash-command wrapper
    (``<command-message>…</command-message><command-name>/review</command-name>
    <command-args>src/</command-args>``, with or without the ``<command-contents>`` some versions
    add) reads ``/review src/``; any other text is returned as is."""
    if "<command-name>" not in text or not _SLASH_PARTS.match(text):
        return text
    name = _SLASH_COMMAND.search(text)
    if name is None:
        return text
    command = name.group(1) if name.group(1).startswith("/") else "/" + name.group(1)
    args = _SLASH_ARGS.search(text)
    return f"{command} {args.group(1).strip()}".rstrip() if args else command
