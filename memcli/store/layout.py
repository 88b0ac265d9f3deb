"""Where things live on disk (docs/design.md §1) and which agent ids are allowed.

:data:`LAYOUT` below is the one list of every file and directory a memory directory holds, with
what each is; docs/design.md §1 is generated from it (``docs/gen_store_layout.py``, checked by
tests/test_docs.py), so the page cannot drift from the code.

The agent's lock lives outside its directory so that ``clear`` can remove the whole directory
while holding the lock, and the lock file itself is never deleted (a deleted lock file lets a
waiter and a newcomer lock two different inodes at once).

Agent ids must match ``^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`` and contain no ``..``; anything else
is refused before a path is built. The agent directory and the lock directory must not be
symlinks (someone could plant one to make memcli write elsewhere): they are checked with lstat.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from memcli.errors import InvalidAgentIdError, StoreError

AGENT_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")

ACTIVE = "raw_traces.jsonl"
ARCHIVE = "raw_traces_archive.jsonl"
EPISODIC = "episodic.jsonl"
SEMANTIC = "semantic.jsonl"
MEMORY_FILES = "memory_files.jsonl"
STATE = ".state.json"
IDS = ".ids"
INGEST_MARKER = ".ingest.pending"
COMPACTION_JOURNAL = ".compaction.journal"
TOKEN_COUNTS = ".token-counts"
LEDGER = ".compactions.jsonl"
RESULT_SUMMARIES = "result_summaries.jsonl"
SOURCE_META = ".source.json"
BREAKER = ".compaction.json"
REWRITE_JOURNAL = ".rewrite.pending"
SEARCH_INDEX = ".search.sqlite"
SEARCH_VECTORS = ".search.vectors"
STORE_ID = ".store-id"
LOCKS = ".locks"
SYNC = ".sync"
DATA_FILES = (ACTIVE, ARCHIVE, EPISODIC, SEMANTIC, MEMORY_FILES, LEDGER, RESULT_SUMMARIES)

# Every path of a memory directory, as docs/design.md §1 shows it: (path, what it is). Indented
# two spaces per level; ``/`` ends a directory.
LAYOUT = (
    ("<memory dir>/", "--dir, else $MEMCLI_DIR, else ./memory"),
    (f"  {STORE_ID}", "this store's id in a shared database (docs/remote.md)"),
    (f"  {LOCKS}/<agent_id>.lock", "per-agent write lock (flock), never deleted"),
    (f"  {LOCKS}/<agent_id>.compact.lock", "one compaction per agent at a time"),
    (f"  {SYNC}/<source>.json", "what `memcli sync` has read of each session file (docs/sync.md)"),
    ("  agents/<agent_id>/", ""),
    (f"    {ACTIVE}", "active RAW_TRACE records (since the last compaction)"),
    (f"    {ARCHIVE}", "every RAW_TRACE compacted away, append-only"),
    (f"    {EPISODIC}", "EPISODIC summaries, append-only"),
    (f"    {SEMANTIC}", "SEMANTIC facts, append-only"),
    (f"    {MEMORY_FILES}", "working memory: the /memories tree's changes, append-only"),
    (f"    {LEDGER}", "the compaction ledger, append-only (`memcli compactions`)"),
    (f"    {RESULT_SUMMARIES}", "summaries of tool results keyed by trace id, append-only (`memcli summarize-results`)"),
    (f"    {STATE}", "state cache: turns, seq, unanswered calls (rebuildable)"),
    (f"    {IDS}", "id index: 16 bytes per trace id (rebuildable)"),
    (f"    {TOKEN_COUNTS}", "token counts of texts counted before (rebuildable)"),
    (f"    {SEARCH_INDEX}", "search index: SQLite FTS5 (a cache; docs/memory-as-tools.md)"),
    (f"    {SEARCH_VECTORS}", "hybrid search's embeddings, named by the index (a cache too)"),
    (f"    {BREAKER}", "the compaction circuit breaker: consecutive failures"),
    (f"    {SOURCE_META}", "where a synced agent came from: source, path, title, resume"),
    (f"    {INGEST_MARKER}", "rollback marker of an ingest in progress"),
    (f"    {COMPACTION_JOURNAL}", "the commit of a compaction or uncompact in progress"),
    (f"    {REWRITE_JOURNAL}", "a journaled rewrite in progress (doctor --repair, redaction)"),
)

DIR_MODE = 0o700
FILE_MODE = 0o600


def resolve_memory_dir(option: str | os.PathLike | None = None, env: dict | None = None) -> Path:
    """``--dir`` > ``$MEMCLI_DIR`` > ``./memory``."""
    if option is not None and str(option).strip():
        return Path(option)
    environ = os.environ if env is None else env
    value = environ.get("MEMCLI_DIR", "").strip()
    if value:
        return Path(value)
    return Path.cwd() / "memory"


def validate_agent_id(agent_id: str) -> str:
    if not isinstance(agent_id, str) or not AGENT_ID_RE.fullmatch(agent_id) or ".." in agent_id:
        shown = repr(agent_id) if isinstance(agent_id, str) and len(agent_id) <= 80 else "the given id"
        raise InvalidAgentIdError(
            f"invalid agent id {shown}: use 1-128 characters from A-Z a-z 0-9 . _ -, "
            "starting with a letter or digit, without '..'"
        )
    return agent_id


def _check_not_symlink(path: Path) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise StoreError(f"{path} is a symlink; memcli refuses to follow it (someone may have planted it)")
    if not stat.S_ISDIR(st.st_mode):
        raise StoreError(f"{path} exists and is not a directory")


def ensure_dir(path: Path) -> None:
    """Create ``path`` (and parents) with mode 0700 whatever the umask; refuse symlinks."""
    _check_not_symlink(path)
    if path.is_dir():
        return
    if not path.parent.exists():
        ensure_dir(path.parent)
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        pass
    except OSError as exc:
        raise StoreError(f"cannot create {path}: {exc.strerror}") from exc
    _check_not_symlink(path)
    try:
        os.chmod(path, DIR_MODE)  # umask may have removed bits we want; never add others
    except OSError:
        pass


class AgentPaths:
    __slots__ = ("memory_dir", "agent_id")

    def __init__(self, memory_dir: Path, agent_id: str):
        self.memory_dir, self.agent_id = memory_dir, agent_id

    def __eq__(self, other) -> bool:
        return isinstance(other, AgentPaths) and (self.memory_dir, self.agent_id) == (other.memory_dir, other.agent_id)

    def __hash__(self) -> int:
        return hash((self.memory_dir, self.agent_id))

    @property
    def agents_dir(self) -> Path:
        return self.memory_dir / "agents"

    @property
    def dir(self) -> Path:
        return self.memory_dir / "agents" / self.agent_id

    @property
    def lock_dir(self) -> Path:
        return self.memory_dir / ".locks"

    @property
    def lock(self) -> Path:
        return self.lock_dir / f"{self.agent_id}.lock"

    @property
    def active(self) -> Path:
        return self.dir / ACTIVE

    @property
    def archive(self) -> Path:
        return self.dir / ARCHIVE

    @property
    def episodic(self) -> Path:
        return self.dir / EPISODIC

    @property
    def semantic(self) -> Path:
        return self.dir / SEMANTIC

    @property
    def memory_files(self) -> Path:
        return self.dir / MEMORY_FILES

    @property
    def state(self) -> Path:
        return self.dir / STATE

    @property
    def ids(self) -> Path:
        return self.dir / IDS

    @property
    def ingest_marker(self) -> Path:
        return self.dir / INGEST_MARKER

    @property
    def compaction_journal(self) -> Path:
        return self.dir / COMPACTION_JOURNAL

    @property
    def ledger(self) -> Path:
        return self.dir / LEDGER

    @property
    def result_summaries(self) -> Path:
        return self.dir / RESULT_SUMMARIES

    @property
    def token_counts(self) -> Path:
        return self.dir / TOKEN_COUNTS

    def exists(self) -> bool:
        """An agent exists when its directory holds at least one data file — not when all it
        holds is an interrupted first import, which the next write rolls back to nothing."""
        _check_not_symlink(self.dir)
        present = [name for name in DATA_FILES if (self.dir / name).exists()]
        if set(present) <= {ACTIVE, EPISODIC} and ACTIVE in present and self.first_import_pending():
            return False
        return bool(present)

    def first_import_pending(self) -> bool:
        """Whether an unfinished ingest (``.ingest.pending``) is all the active file holds: it
        started from an empty active file and no other data file has anything."""
        try:
            marker = self.ingest_marker.read_bytes()
        except OSError:
            return False
        import orjson

        try:
            marker = orjson.loads(marker)
            before = marker["active_size"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return False
        if before != 0:
            return False
        for name in DATA_FILES[1:]:
            if name == EPISODIC and marker.get("episodic_size") == 0:
                continue   # the harness items of that same ingest (memcli.store.harness_items)
            try:
                if (self.dir / name).stat().st_size:
                    return False
            except FileNotFoundError:
                continue
        return True

    def ensure(self) -> None:
        ensure_dir(self.dir)


def agent_paths(memory_dir: str | os.PathLike, agent_id: str) -> AgentPaths:
    return AgentPaths(Path(memory_dir), validate_agent_id(agent_id))


_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple:
    """Sort key reading digit runs as numbers: ``tau.2`` before ``tau.10``."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in _DIGITS.split(name) if part)


def list_agent_ids(memory_dir: str | os.PathLike) -> list[str]:
    """Agents in a store, in natural order (``tau.2`` before ``tau.10``); directories that are
    not valid agent ids are ignored."""
    agents = Path(memory_dir) / "agents"
    try:
        names = os.listdir(agents)
    except FileNotFoundError:
        return []
    out = []
    for name in sorted(names, key=natural_key):
        if AGENT_ID_RE.fullmatch(name) and ".." not in name:
            paths = AgentPaths(Path(memory_dir), name)
            try:
                if paths.exists():
                    out.append(name)
            except StoreError:
                continue
    return out
