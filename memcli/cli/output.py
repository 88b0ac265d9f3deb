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

from memcli.api import neutral
from memcli.errors import UsageError
from memcli.sizes import format_size as fmt_bytes  # noqa: F401  (the one size format; old name)

TABLE_BATCH = 200
PIPE_WIDTH = 120
CLIP_MARK = "…"
FLEX_ROOM = 32  # cells a text column wants before time columns give up their ISO stamps
SQUEEZE_DROPS = 2  # columns of drop rank 1-2 also give their room to a squeezed text column



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


def fmt_usd(amount: float | None) -> str:
    """US dollars: ``$1.2345``, or six decimals under a cent (``$0.000075``); "" for None."""
    if amount is None:
        return ""
    return f"${amount:.4f}" if amount >= 0.01 else f"${amount:.6f}"


def fmt_age(ts: float | None, now: float | None = None) -> str:
    """Epoch seconds as people say it where an ISO stamp does not fit: ``just now``, ``5m ago``,
    ``3h ago``, ``4d ago`` (within a week), else the UTC date ``2026-11-02``; "" for None."""
    if ts is None:
        return ""
    import time

    age = (time.time() if now is None else now) - ts
    if 0 <= age < 60:
        return "just now"
    if 0 <= age < 3600:
        return f"{int(age // 60)}m ago"
    if 0 <= age < 86400:
        return f"{int(age // 3600)}h ago"
    if 0 <= age < 7 * 86400:
        return f"{int(age // 86400)}d ago"
    return fmt_ts(ts)[:10]


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


def wrap(text: str, cells: int) -> list[str]:
    """``text`` folded at spaces into lines of at most ``cells`` cells (a word longer than a
    line is cut where it must be); at least one line."""
    if cells < 8 or _cell_len(text) <= cells:
        return [text]
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        candidate = f"{line} {word}" if line else word
        if _cell_len(candidate) <= cells:
            line = candidate
            continue
        if line:
            lines.append(line)
        while _cell_len(word) > cells:
            head = _cut(word, cells)
            lines.append(head)
            word = word[len(head):]
        line = word
    lines.append(line)
    return lines


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
    (at most ``max_width``) and cut longer cells with ``…``. An ``id_width`` column (names) may
    shrink down to that many cells, shortened in the middle with ``…`` so both ends stay
    readable; a ``prefix`` one (record and call ids) is shortened at its end instead, to a
    prefix that ``memcli get`` expands (``tooluse_01Ab…``), never shorter than the first batch
    needs to tell its ids apart. A column with a ``drop`` rank is left out when the table cannot fit otherwise
    (rank 1 first); a column that is empty in the first batch is left out before any other.
    A column with a ``narrow`` form (a function of the row: times as ``3h ago``) shows it in
    every row when, with the wide forms, the text (flex) columns would get less than
    :data:`FLEX_ROOM` cells each (or their natural width): room for the ask.
    ``style`` (a Rich style, or a function of the cell's value returning one) applies on a
    terminal only; a function sees the value itself, never the padded or clipped cell.
    """

    __slots__ = ("header", "value", "flex", "min_width", "max_width", "align", "style", "id_width", "drop", "prefix",
                 "narrow")

    def __init__(self, header: str, value: str | Callable[[Any], Any], *, flex: bool = False, min_width: int = 12,
                 max_width: int | None = None, align: str = "left",
                 style: str | Callable[[str], str | None] | None = None, id_width: int | None = None,
                 drop: int | None = None, prefix: bool = False, narrow: Callable[[Any], Any] | None = None):
        self.header = header
        self.value = value
        self.flex = flex
        self.min_width = min_width
        self.max_width = max_width
        self.align = align
        self.style = style
        self.id_width = id_width
        self.drop = drop
        self.prefix = prefix
        self.narrow = narrow

    def cell(self, row, *, narrow: bool = False) -> str:
        if narrow and self.narrow is not None:
            value = self.narrow(row)
        elif callable(self.value):
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
        text = neutral(value if isinstance(value, str) else str(value))
        return one_line(text) if ("\n" in text or "\t" in text or "  " in text) else text

    def style_of(self, value: str) -> str | None:
        return self.style(value) if callable(self.style) else self.style


def cut_middle(text: str, cells: int) -> str:
    """``text`` in at most ``cells`` cells, its middle replaced by ``…`` (ids keep both ends)."""
    if _cell_len(text) <= cells:
        return text
    if cells <= 1:
        return _cut(text, cells)
    tail_cells = (cells - 1) // 2
    head = _cut(text, cells - 1 - tail_cells)
    tail = text[len(text) - tail_cells:] if tail_cells else ""
    while tail and _cell_len(tail) > tail_cells:
        tail = tail[1:]
    return f"{head}{CLIP_MARK}{tail}"


def cut_end(text: str, cells: int) -> str:
    """``text`` in at most ``cells`` cells: a prefix ending with ``…`` (an id ``get`` expands)."""
    if _cell_len(text) <= cells:
        return text
    return _cut(text, max(cells - 1, 0)) + CLIP_MARK


def _distinct_prefix(values: list[str]) -> int:
    """The shortest prefix length (in characters) that tells the distinct ``values`` apart."""
    ordered = sorted(set(v for v in values if v))
    longest = 0
    for a, b in zip(ordered, ordered[1:]):
        common = 0
        while common < min(len(a), len(b)) and a[common] == b[common]:
            common += 1
        longest = max(longest, common + 1)
    return longest


def _fit(columns: list[Column], header: list[str], natural: list[int], shown: list[int], total: int,
         id_floor: dict[int, int] | None = None) -> dict[int, int]:
    """Widths of the ``shown`` columns: natural, then flexible columns shrunk (widest first) to
    their floor, then id columns shrunk to their ``id_width`` (a prefix column: no shorter than
    ``id_floor`` says), while the row is wider than ``total``."""
    widths = {i: natural[i] for i in shown}
    excess = sum(widths.values()) + 2 * (len(shown) - 1) - total
    flex = [i for i in shown if columns[i].flex]
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
    for i in sorted((i for i in shown if columns[i].id_width), key=lambda k: widths[k], reverse=True):
        if excess <= 0:
            break
        floor = max(columns[i].id_width, _cell_len(header[i]), (id_floor or {}).get(i, 0))
        step = min(excess, max(widths[i] - floor, 0))
        widths[i] -= step
        excess -= step
    return widths


def _layout(columns: list[Column], header: list[str], cells: list[list[str]], total: int,
            clip_cells: bool) -> dict[int, int]:
    """Which columns are shown, with their widths (column index -> width, in column order).

    Without clipping every column keeps its natural width. Otherwise the row is made to fit
    ``total`` cells: flexible columns shrink, then ids; when that is not enough, columns empty
    in ``cells`` are left out, then the ``drop`` columns by rank, each time starting again from
    the natural widths (a dropped column gives its room back to the others)."""
    natural = []
    for i, col in enumerate(columns):
        width = max([_cell_len(header[i])] + [_cell_len(row[i]) for row in cells])
        if col.max_width is not None and clip_cells:
            width = min(width, max(col.max_width, _cell_len(header[i])))
        natural.append(width)
    shown = list(range(len(columns)))
    if not clip_cells:
        return {i: natural[i] for i in shown}
    id_floor = {i: min(natural[i], _distinct_prefix([row[i] for row in cells]) + 1)
                for i, col in enumerate(columns) if col.prefix}
    if sum(natural) + 2 * (len(shown) - 1) > total and cells:
        # a squeezed row first gives up the columns with nothing in them: their room goes to the text
        shown = [i for i in shown if any(row[i] for row in cells)] or shown
    while True:
        widths = _fit(columns, header, natural, shown, total, id_floor)
        empty = [i for i in shown if cells and all(not row[i] for row in cells)]
        ranked = sorted((i for i in shown if columns[i].drop is not None), key=lambda k: columns[k].drop)
        squeezed = any(columns[i].flex and widths[i] < min(natural[i], FLEX_ROOM) for i in shown)
        first = [i for i in ranked if columns[i].drop <= SQUEEZE_DROPS]
        if len(shown) == 1 or (sum(widths.values()) + 2 * (len(shown) - 1) <= total
                               and not (squeezed and first)):
            return widths
        # too wide, or a text column squeezed while a column of the first ranks can give it room
        victims = empty or (ranked if sum(widths.values()) + 2 * (len(shown) - 1) > total else first)
        if not victims:
            return widths
        shown.remove(victims[0])


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
        """One line made of text segments; a segment is ``text`` or ``(text, style)``. Control
        characters in the text are shown, never sent (:func:`memcli.neutral.neutral`): the
        only escape sequences written are the view's own styles, on a terminal."""
        if not self.colour:
            self.stream.write(neutral("".join(s if isinstance(s, str) else s[0] for s in segments)) + "\n")
            return
        from rich.text import Text

        text = Text(no_wrap=True, overflow="ignore", end="\n")
        for s in segments:
            if isinstance(s, str):
                text.append(neutral(s))
            else:
                text.append(neutral(s[0]), style=s[1] or "")
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
        room = self.width - indent - width - 2
        for key, value in items:
            parts = wrap(str(value), room) if self.clip_content else [str(value)]
            self.line(" " * indent, (_pad(key, width, "left"), key_style), "  ", parts[0])
            for part in parts[1:]:  # continuation lines hang under the value
                self.line(" " * (indent + width + 2), part)

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
        note on stderr. The layout (which columns, how wide) is fixed from the first
        :data:`TABLE_BATCH` rows to fit the view's width (see :func:`_layout`)."""
        header = [c.header for c in columns]
        layout: dict[int, int] | None = None
        count = 0
        batch: list[list[str]] = []
        narrow = [i for i, c in enumerate(columns) if c.narrow is not None] if self.clip_content else []
        narrowed: bool | None = None if narrow else False   # decided on the first batch
        alternatives: list[dict[int, str]] = []

        def flush() -> None:
            nonlocal layout, narrowed
            if layout is None:
                if narrowed is None:
                    natural = [max([_cell_len(header[i])] + [_cell_len(row[i]) for row in batch])
                               for i in range(len(columns))]
                    fixed = sum(w for w, c in zip(natural, columns) if not c.flex) + 2 * (len(columns) - 1)
                    wanted = sum(min(w, FLEX_ROOM) for w, c in zip(natural, columns) if c.flex)
                    narrowed = self.width - fixed < wanted  # the text columns would get less than they want
                    if narrowed:
                        for cells, alt in zip(batch, alternatives):
                            for i, text in alt.items():
                                cells[i] = text
                    alternatives.clear()
                layout = _layout(columns, header, batch, self.width, self.clip_content)
                self._row(header, layout, columns, header=True)
            for cells in batch:
                self._row(cells, layout, columns)
            batch.clear()

        for row in rows:
            batch.append([c.cell(row, narrow=bool(narrowed)) for c in columns])
            if narrowed is None:
                alternatives.append({i: columns[i].cell(row, narrow=True) for i in narrow})
            count += 1
            if len(batch) >= TABLE_BATCH:
                flush()
        if batch or (count == 0 and empty is None):
            flush()
        if count == 0 and empty:
            print(f"memcli: {empty}", file=sys.stderr)
        return count

    def _row(self, cells: list[str], layout: dict[int, int], columns: list[Column], *, header: bool = False) -> None:
        segments: list = []
        last = next(reversed(layout))
        used = 0
        for i, width in layout.items():
            col = columns[i]
            text = value = cells[i]
            if self.clip_content and _cell_len(text) > width:
                if col.flex:
                    text = clip(text, width)
                elif col.prefix and not header:
                    text = cut_end(text, width)
                elif col.id_width or header:
                    text = cut_middle(text, width)
                elif col.max_width is not None and _cell_len(text) > col.max_width:
                    text = _cut(text, max(col.max_width - 1, 0)) + CLIP_MARK
                # else: a longer cell than the first batch had (a number is never cut) pushes its row out
            if i != last or col.align == "right":
                text = _pad(text, width, "left" if header and col.align != "right" else col.align)
            segments.append((text, "bold" if header else col.style_of(value)))
            used += _cell_len(text)
            if i != last:
                segments.append("  ")
                used += 2
        if self.clip_content and used > self.width:  # never wider than the view
            segments = _cut_segments(segments, self.width)
        if not self.colour:
            self.stream.write("".join(s if isinstance(s, str) else s[0] for s in segments).rstrip() + "\n")
        else:
            self.line(*segments)


def _cut_segments(segments: list, cells: int) -> list:
    """``segments`` (text or (text, style)) cut to ``cells`` cells, the last one ending with ``…``."""
    out: list = []
    room = cells
    for seg in segments:
        text, style = (seg, None) if isinstance(seg, str) else seg
        if _cell_len(text) < room:
            out.append(seg)
            room -= _cell_len(text)
            continue
        out.append((_cut(text, max(room - 1, 0)).rstrip() + CLIP_MARK, style))
        break
    return out


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
        """A status line on stderr (never stdout); control characters shown, not sent."""
        print(f"memcli: {neutral(message)}", file=sys.stderr)


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
