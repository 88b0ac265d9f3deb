"""The output layer every read command shares (docs/cli.md: a human view, ``--json``, ``--ndjson``).

A command takes the option bundle with :func:`output_options` and receives an :class:`Output`
as its keyword argument ``out``; it hands its result to one of two calls::

    @output_options
    def turns(ctx: typer.Context, agent: str = typer.Argument(...), *, out: Output) -> None:
        \"\"\"One row per turn.\"\"\"
        out.records(iter_turns(...), human=lambda rows, view: view.table(rows, TURN_COLUMNS))

    out.document(stats, human=render_stats)      # a single record

Options added to the command: ``--json``, ``--ndjson``, ``--width N``, ``--no-clip``.

* ``--json`` — one JSON document. :meth:`Output.records` writes an array element by element as
  the generator yields (never a list built in memory), laid out like ``json.dumps(indent=2)``.
* ``--ndjson`` — one compact JSON object per line.
* neither — the human view. Plain text (no colour, no box-drawing, no Rich import) when stdout is
  not a terminal or ``NO_COLOR`` is set; Rich styles on a terminal.

Records are dicts (key order kept) or dataclass instances, turned into dicts by
:func:`memcli.models.to_record` (declaration order), so keys come out in a stable order. Data
goes to stdout only; :meth:`Output.note` writes to stderr. A closed pipe (``memcli show a | head``)
ends the command quietly with exit 0.

Human views receive a :class:`HumanView`: :meth:`~HumanView.table` streams a table (column widths
fixed from the first :data:`TABLE_BATCH` rows, flexible columns shrunk to the width, cells that do
not fit clipped with ``… (+1,234 chars)``), :meth:`~HumanView.line`, :meth:`~HumanView.text`,
:meth:`~HumanView.fields`, :meth:`~HumanView.json`. Width: ``--width``, else ``$COLUMNS``, else
the terminal's, else :data:`PIPE_WIDTH` when stdout is not a terminal. ``--no-clip`` shows every
cell and text in full.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from typing import Any, Callable, Iterable, Mapping, Optional

import typer

from memcli.errors import UsageError
from memcli.sizes import format_size as fmt_bytes  # noqa: F401  (the one size format; old name)

TABLE_BATCH = 200
PIPE_WIDTH = 120
CLIP_MARK = "…"



# --------------------------------------------------------------------------- small formatters

def fmt_ts(ts: float | None) -> str:
    """Epoch seconds as ``2026-03-02T09:01:31Z`` (UTC, whole seconds); "" for None."""
    if ts is None:
        return ""
    from datetime import datetime, timezone

    try:
        return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return str(ts)


def fmt_int(n: int | None) -> str:
    return "" if n is None else f"{n:,}"


def one_line(text: str) -> str:
    """Whitespace runs (newlines included) collapsed to one space, for table cells."""
    return " ".join(text.split())


def _cell_len(text: str) -> int:
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def _cut(text: str, cells: int) -> str:
    """The longest prefix of ``text`` that fits in ``cells`` terminal cells."""
    if text.isascii():
        return text[:cells]
    from rich.cells import cell_len

    out = text[:cells]
    while out and cell_len(out) > cells:
        out = out[:-1]
    return out


def clip(text: str, limit: int | None) -> str:
    """``text`` cut to ``limit`` cells, ending with ``… (+N chars)`` telling how much is hidden."""
    if limit is None or _cell_len(text) <= limit:
        return text
    widest = len(f"{CLIP_MARK} (+{len(text):,} chars)")  # the note is never wider than this
    room = limit - widest
    if room < max(4, limit // 2):  # the note would crowd out the text: a plain cut
        return _cut(text, max(limit - 1, 0)) + CLIP_MARK
    shown = _cut(text, room)
    return f"{shown}{CLIP_MARK} (+{len(text) - len(shown):,} chars)"


def _pad(text: str, width: int, align: str) -> str:
    gap = width - _cell_len(text)
    if gap <= 0:
        return text
    return (" " * gap + text) if align == "right" else (text + " " * gap)


# --------------------------------------------------------------------------- tables

class Column:
    """One column of a :meth:`HumanView.table`.

    ``value`` is a key of the row (dict key or attribute) or a function of the row returning
    text. A ``flex`` column takes the width left over and clips its cells with the
    ``… (+N chars)`` note; other columns keep the width of their widest cell in the first batch
    (at most ``max_width``) and cut longer cells with ``…``. ``style`` (a Rich style, or a
    function of the cell's text returning one) applies on a terminal only.
    """

    __slots__ = ("header", "value", "flex", "min_width", "max_width", "align", "style")

    def __init__(self, header: str, value: str | Callable[[Any], Any], *, flex: bool = False, min_width: int = 12,
                 max_width: int | None = None, align: str = "left",
                 style: str | Callable[[str], str | None] | None = None):
        self.header = header
        self.value = value
        self.flex = flex
        self.min_width = min_width
        self.max_width = max_width
        self.align = align
        self.style = style

    def cell(self, row) -> str:
        if callable(self.value):
            value = self.value(row)
        elif isinstance(row, Mapping):
            value = row.get(self.value)
        else:
            value = getattr(row, self.value, None)
        if value is None:
            return ""
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, int):
            return f"{value:,}"
        text = value if isinstance(value, str) else str(value)
        return one_line(text) if ("\n" in text or "\t" in text or "  " in text) else text


def _widths(columns: list[Column], header: list[str], cells: list[list[str]], total: int,
            clip_cells: bool) -> list[int]:
    widths = []
    for i, col in enumerate(columns):
        natural = max([_cell_len(header[i])] + [_cell_len(row[i]) for row in cells])
        if col.max_width is not None and clip_cells:
            natural = min(natural, max(col.max_width, _cell_len(header[i])))
        widths.append(natural)
    if not clip_cells:
        return widths
    gaps = 2 * (len(columns) - 1)
    excess = sum(widths) + gaps - total
    flex = [i for i, col in enumerate(columns) if col.flex]
    while excess > 0 and flex:  # shrink the widest flexible column, down to the next widest
        flex.sort(key=lambda k: widths[k], reverse=True)
        i = flex[0]
        floor = max(columns[i].min_width, _cell_len(header[i]))
        if widths[i] <= floor:
            flex.remove(i)
            continue
        next_width = widths[flex[1]] if len(flex) > 1 else floor
        step = max(1, min(excess, widths[i] - max(floor, next_width)))
        widths[i] -= step
        excess -= step
    return widths


# --------------------------------------------------------------------------- the human view

class HumanView:
    """Writes the human view of one command (see the module docstring)."""

    def __init__(self, stream, width: int, *, clip_content: bool = True, colour: bool = False):
        self.stream = stream
        self.width = width
        self.clip_content = clip_content
        self.colour = colour
        self._console = None

    # -- low level
    def line(self, *segments) -> None:
        """One line made of text segments; a segment is ``text`` or ``(text, style)``."""
        if not self.colour:
            self.stream.write("".join(s if isinstance(s, str) else s[0] for s in segments) + "\n")
            return
        from rich.text import Text

        text = Text(no_wrap=True, overflow="ignore", end="\n")
        for s in segments:
            if isinstance(s, str):
                text.append(s)
            else:
                text.append(s[0], style=s[1] or "")
        self._rich().print(text, soft_wrap=True)

    def _rich(self):
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=self.stream, width=self.width, highlight=False, markup=False,
                                    emoji=False, force_terminal=True, soft_wrap=True)
        return self._console

    def blank(self) -> None:
        self.stream.write("\n")

    def clip(self, text: str, limit: int | None) -> str:
        return text if not self.clip_content else clip(text, limit)

    # -- blocks
    def text(self, body: str, *, indent: int = 2, max_chars: int | None = 600, max_lines: int | None = 8,
             style: str | None = None) -> None:
        """A block of text, indented; clipped to ``max_chars``/``max_lines`` with the hidden length."""
        if not body:
            return
        pad = " " * indent
        lines = body.split("\n")
        shown = body
        if self.clip_content:
            if max_lines is not None and len(lines) > max_lines:
                shown = "\n".join(lines[:max_lines])
            if max_chars is not None and len(shown) > max_chars:
                shown = shown[:max_chars]
            if len(shown) < len(body):
                hidden = len(body) - len(shown)
                shown = shown.rstrip("\n") + f"{CLIP_MARK} (+{hidden:,} chars)"
        for part in shown.split("\n"):
            self.line(pad, (part.replace("\t", "    "), style))

    def fields(self, pairs: Iterable[tuple[str, Any]], *, indent: int = 2, key_style: str | None = "bold") -> None:
        """Aligned ``key  value`` lines (None values are skipped)."""
        items = [(k, v) for k, v in pairs if v is not None]
        if not items:
            return
        width = max(_cell_len(k) for k, _ in items)
        for key, value in items:
            self.line(" " * indent, (_pad(key, width, "left"), key_style), "  ", str(value))

    def heading(self, text: str) -> None:
        self.line((text, "bold underline"))

    def json(self, value: Any) -> None:
        """Pretty JSON (a dataclass as its record); Rich-highlighted on a terminal."""
        import orjson

        data = orjson.dumps(as_record(value), option=orjson.OPT_INDENT_2, default=_json_default).decode()
        if self.colour:
            from rich.json import JSON

            self._rich().print(JSON(data), soft_wrap=True)
        else:
            self.stream.write(data + "\n")

    def table(self, rows: Iterable, columns: list[Column], *, empty: str | None = None) -> int:
        """Stream ``rows`` as a table; returns the number of rows written. Without rows: the
        header alone when ``empty`` is None, else nothing on stdout and ``empty`` (if any) as a
        note on stderr."""
        header = [c.header for c in columns]
        widths: list[int] | None = None
        count = 0
        batch: list[list[str]] = []

        def flush() -> None:
            nonlocal widths
            if widths is None:
                widths = _widths(columns, header, batch, self.width, self.clip_content)
                self._row(header, widths, columns, header=True)
            for cells in batch:
                self._row(cells, widths, columns)
            batch.clear()

        for row in rows:
            batch.append([c.cell(row) for c in columns])
            count += 1
            if len(batch) >= TABLE_BATCH:
                flush()
        if batch or (count == 0 and empty is None):
            flush()
        if count == 0 and empty:
            print(f"memcli: {empty}", file=sys.stderr)
        return count

    def _row(self, cells: list[str], widths: list[int], columns: list[Column], *, header: bool = False) -> None:
        segments: list = []
        last = len(cells) - 1
        for i, (text, width, col) in enumerate(zip(cells, widths, columns)):
            # flexible columns clip at their width; others only at their max_width, else a longer
            # cell than the first batch had just pushes its row out (a number is never cut)
            limit = width if col.flex else col.max_width
            if self.clip_content and limit is not None and _cell_len(text) > limit:
                text = clip(text, limit) if col.flex else _cut(text, max(limit - 1, 0)) + CLIP_MARK
            if i < last or col.align == "right":
                text = _pad(text, width, "left" if header and col.align != "right" else col.align)
            style = "bold" if header else (col.style(text) if callable(col.style) else col.style)
            segments.append((text, style))
            if i < last:
                segments.append("  ")
        if not self.colour:
            self.stream.write("".join(s if isinstance(s, str) else s[0] for s in segments).rstrip() + "\n")
        else:
            self.line(*segments)


# --------------------------------------------------------------------------- output

def _is_dataclass_instance(value) -> bool:
    return hasattr(type(value), "__dataclass_fields__") and not isinstance(value, type)


def _json_default(value):
    if _is_dataclass_instance(value):
        from memcli.models import to_record

        return to_record(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def as_record(row) -> Any:
    """What a row looks like in JSON: dataclasses through ``to_record``, anything else as is."""
    if type(row) is dict:
        return row
    if _is_dataclass_instance(row):
        from memcli.models import to_record

        return to_record(row)
    return row


def _colour_wanted(stream) -> bool:
    if os.environ.get("NO_COLOR", "") != "":
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _width(option: int | None, stream) -> int:
    if option:
        return max(option, 20)
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return max(int(columns), 20)
    try:
        if stream.isatty():
            return max(os.get_terminal_size(stream.fileno()).columns, 20)
    except (AttributeError, ValueError, OSError):
        pass
    return PIPE_WIDTH


class Output:
    """Where a read command's result goes, in the mode the user asked for."""

    def __init__(self, mode: str = "human", *, width: int | None = None, clip_content: bool = True):
        if mode not in ("human", "json", "ndjson"):
            raise ValueError(mode)
        self.mode = mode
        self.width_option = width
        self.clip_content = clip_content

    @property
    def human(self) -> bool:
        return self.mode == "human"

    # -- writing
    def _stdout(self):
        return sys.stdout

    def _write_bytes(self, data: bytes) -> None:
        out = self._stdout()
        buffer = getattr(out, "buffer", None)
        if buffer is not None:
            buffer.write(data)
        else:
            out.write(data.decode())

    def view(self) -> HumanView:
        stream = self._stdout()
        return HumanView(stream, _width(self.width_option, stream), clip_content=self.clip_content,
                         colour=_colour_wanted(stream))

    def records(self, rows: Iterable, human: Callable[[Iterable, HumanView], Any]) -> int:
        """Write a stream of records; returns how many were written."""
        import orjson

        count = 0
        if self.mode == "human":
            counted = _Counted(rows)
            human(counted, self.view())
            count = counted.n
        elif self.mode == "ndjson":
            out = self._stdout()
            out.flush()
            for row in rows:
                self._write_bytes(orjson.dumps(as_record(row), default=_json_default) + b"\n")
                count += 1
        else:
            out = self._stdout()
            out.flush()
            opts = orjson.OPT_INDENT_2
            for row in rows:
                body = orjson.dumps(as_record(row), default=_json_default, option=opts)
                self._write_bytes((b"[\n  " if count == 0 else b",\n  ") + body.replace(b"\n", b"\n  "))
                count += 1
            self._write_bytes(b"\n]\n" if count else b"[]\n")
        self._stdout().flush()
        return count

    def document(self, doc: Any, human: Callable[[Any, HumanView], Any]) -> None:
        """Write one record (``--ndjson``: on one line)."""
        import orjson

        if self.mode == "human":
            human(doc, self.view())
        else:
            self._stdout().flush()
            option = orjson.OPT_INDENT_2 if self.mode == "json" else 0
            self._write_bytes(orjson.dumps(as_record(doc), default=_json_default, option=option) + b"\n")
        self._stdout().flush()

    @staticmethod
    def note(message: str) -> None:
        """A status line on stderr (never stdout)."""
        print(f"memcli: {message}", file=sys.stderr)


class _Counted:
    def __init__(self, rows: Iterable):
        self.rows = rows
        self.n = 0

    def __iter__(self):
        for row in self.rows:
            self.n += 1
            yield row


# --------------------------------------------------------------------------- the option bundle

_OPTION_PARAMS = [
    inspect.Parameter("output_json", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                      default=typer.Option(False, "--json", help="Print one JSON document.")),
    inspect.Parameter("output_ndjson", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                      default=typer.Option(False, "--ndjson", help="Print one JSON object per line.")),
    inspect.Parameter("output_width", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[int],
                      default=typer.Option(None, "--width", min=20, metavar="N",
                                           help="Width of the human view (default: $COLUMNS or the terminal's).")),
    inspect.Parameter("output_no_clip", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                      default=typer.Option(False, "--no-clip", help="Show long content in full in the human view.")),
]


def output_options(func: Callable) -> Callable:
    """Give a Typer command ``--json``, ``--ndjson``, ``--width``, ``--no-clip``; the command
    receives them as one :class:`Output` in its keyword argument ``out``."""
    signature = inspect.signature(func)
    params = [p for name, p in signature.parameters.items() if name != "out"]
    params = [p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD)
              if p.kind is inspect.Parameter.KEYWORD_ONLY else p for p in params]

    @functools.wraps(func)
    def command(*args, output_json: bool = False, output_ndjson: bool = False,
                output_width: int | None = None, output_no_clip: bool = False, **kwargs):
        if output_json and output_ndjson:
            raise UsageError("--json and --ndjson cannot be used together")
        mode = "json" if output_json else "ndjson" if output_ndjson else "human"
        kwargs["out"] = Output(mode, width=output_width, clip_content=not output_no_clip)
        return func(*args, **kwargs)

    command.__signature__ = signature.replace(parameters=params + _OPTION_PARAMS)
    annotations = {k: v for k, v in getattr(func, "__annotations__", {}).items() if k not in ("out", "return")}
    annotations.update({p.name: p.annotation for p in _OPTION_PARAMS})
    command.__annotations__ = annotations
    return command
