"""The one family of errors the memcli library raises.

Every failure a user can cause or meet (bad input, a corrupt store, an unknown agent, a
compaction that did not produce a valid summary) is a :class:`MemcliError` subclass carrying the
process exit code the CLI uses for it (see docs/cli.md: 1 failure, 2 usage, 3 not found). The CLI turns
these into one clean line on stderr in a single place (``memcli.cli.app``); anything else is a
bug and shows a traceback.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3


class MemcliError(Exception):
    """Base class. ``exit_code`` is what the CLI exits with.

    ``param`` is the parameter the error concerns, as data, by its Python name
    (``target_tokens``), like click's ``param_hint``: each client words it its own way — the CLI
    as a flag (``--target-tokens``), the Python API and the MCP server as the name. The message
    names it (and any other parameters in ``also``) by ``{name}`` placeholders; one without a
    placeholder has the parameter put in front: ``UsageError("must be 1 or more",
    param="target_tokens")`` reads ``target_tokens must be 1 or more``. ``message`` and
    ``str()`` give the parameter names; :meth:`worded` takes the wording of another client."""

    exit_code = EXIT_FAILURE

    def __init__(self, message: str, *, hint: str | None = None, param: str | None = None,
                 also: tuple[str, ...] = ()):
        self.param = param
        self.also = tuple(also)
        self.template = message
        self.hint = hint
        super().__init__(self.worded())

    def worded(self, name=str) -> str:
        """The message with each parameter worded by ``name`` (default: the parameter name)."""
        text = self.template
        if self.param is None:
            return text
        params = (self.param, *self.also)
        if not any("{" + p + "}" in text for p in params):
            text = "{" + self.param + "}" + ("" if text[:1] in (":", ",") else " ") + text
        for p in params:
            text = text.replace("{" + p + "}", name(p))
        return text

    @property
    def message(self) -> str:
        return self.worded()

    @message.setter
    def message(self, text: str) -> None:
        self.template, self.param, self.also = text, None, ()

    def __str__(self) -> str:
        return self.worded()


def as_flag(param: str) -> str:
    """A parameter as the command line spells it: ``target_tokens`` -> ``--target-tokens``."""
    return "--" + param.rstrip("_").replace("_", "-")


class UsageError(MemcliError):
    """A request that cannot be carried out as asked (bad flag value, bad agent id)."""

    exit_code = EXIT_USAGE


class InvalidAgentIdError(UsageError):
    """An agent id that does not match docs/design.md §1; refused before any path is built."""


class NotFoundError(MemcliError):
    """An agent or record that does not exist."""

    exit_code = EXIT_NOT_FOUND


class AgentNotFoundError(NotFoundError):
    pass


class RecordNotFoundError(NotFoundError):
    pass


class TurnNotFoundError(RecordNotFoundError):
    """Turns an agent does not have: the one message every command's ``--turn`` gives (exit 3).

    ``archive_searched`` says whether the archive was looked at too; when it was not, the hint
    names ``--archive``."""

    def __init__(self, agent_id: str, turn_ids, *, archive_searched: bool = True):
        turn_ids = list(turn_ids)
        names = ", ".join(repr(t) for t in turn_ids)
        where = "active or archived" if archive_searched else "active"
        hint = f"`memcli turns {agent_id}{'' if not archive_searched else ' --archive'}` lists its turns"
        if not archive_searched:
            hint += "; add --archive to look in compacted turns too"
        super().__init__(f"no turn{'s' if len(turn_ids) != 1 else ''} {names} in agent {agent_id!r} "
                         f"(looked in its {where} traces)", hint=hint)
        self.turn_ids = turn_ids


class InputError(MemcliError):
    """Input that cannot be ingested. ``line`` is the 1-based input line, ``field`` the field."""

    def __init__(self, message: str, *, line: int | None = None, field: str | None = None,
                 hint: str | None = None):
        self.line = line
        self.field = field
        self.reason = message
        prefix = f"line {line}: " if line is not None else ""
        where = f"field {field!r}: " if field else ""
        super().__init__(f"{prefix}{where}{message}", hint=hint)


class StoreError(MemcliError):
    """The store cannot be read or written (permissions, disk full, lock timeout)."""


class LockTimeoutError(StoreError):
    pass


class CorruptStoreError(StoreError):
    """A store file that does not parse; names the file and the 1-based line."""

    def __init__(self, path: str, line: int, reason: str, *, hint: str | None = None):
        self.path = path
        self.line = line
        self.reason = reason
        super().__init__(
            f"{path}:{line}: {reason}",
            hint=hint or f"run `memcli doctor {_agent_of(path)}` to see every problem and `--repair` to fix what can "
                         "be fixed",
        )


def _agent_of(path: str) -> str:
    """The agent a store file belongs to (``…/agents/<id>/raw_traces.jsonl``), else ``AGENT``."""
    parts = str(path).replace("\\", "/").split("/")
    return parts[-2] if len(parts) >= 3 and parts[-3] == "agents" and parts[-2] else "AGENT"


class CompactionError(MemcliError):
    """A compaction that could not produce a valid result; nothing was written."""


class CompactionBusy(CompactionError):
    """Another compaction of the same agent is running."""


class IntegrityError(MemcliError):
    """`doctor` found problems that remain."""


class MemoryToolRefused(MemcliError):
    """A command the memory tool (memcli.memory_tool) refuses; the message is the text to send
    back as the ``tool_result`` (with ``is_error: true``). Nothing was written."""


class RemoteError(MemcliError):
    """The shared PostgreSQL store cannot be reached or used (memcli.remote); the message names the
    server (host, port, database) and libpq's reason, never the password."""
