"""``memcli pull``: restore an agent from the shared store (memcli.remote, docs/remote.md).

The agent's rows are read file by file in the pusher's order (``ORDER BY file, pos``, streamed by
a server-side cursor) and written as its data files by :func:`memcli.store.restore.restore_agent`
(all files or none; an existing local agent is never overwritten). Every line is the pushed line
byte for byte, so the pulled files — and ``export`` of the pulled agent — are identical to the
pusher's at the time of its push. A file name this memcli does not know (pushed by a newer one)
is refused before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from memcli.errors import RemoteError
from memcli.remote import connect as rc
from memcli.remote import schema
from memcli.store.layout import DATA_FILES


@dataclass
class PullResult:
    agent: str              # the local name
    remote: str             # store_id/name
    files: dict[str, int]   # data file -> records written


def pull(memory_dir, agent: str, url: str | None, *, as_name: str | None = None) -> PullResult:
    from memcli.store.layout import validate_agent_id
    from memcli.store.restore import restore_agent

    url = rc.resolve_url(url, "from_")
    where = rc.describe(url)
    local = validate_agent_id(as_name or agent.rpartition("/")[2])
    conn = rc.connect(url)
    try:
        try:
            schema.check(conn, where)
            key, store_id, name = schema.find_agent(conn, agent, where)
            files = [row[0] for row in conn.execute(
                "SELECT DISTINCT file FROM memcli_records WHERE agent_key = %s", (key,))]
            conn.rollback()
            unknown = sorted(set(files) - set(DATA_FILES))
            if unknown:
                raise RemoteError(f"agent {store_id}/{name} at {where} has data files this memcli does not know "
                                  f"({', '.join(unknown)}): pushed by a newer memcli? upgrade memcli to pull it")

            def lines(file: str):
                with conn.cursor(name="memcli_pull") as cur:
                    cur.itersize = 5000
                    cur.execute("SELECT line FROM memcli_records WHERE agent_key = %s AND file = %s ORDER BY pos",
                                (key, file))
                    for (line,) in cur:
                        yield line.encode("utf-8")
                conn.commit()

            counts = restore_agent(memory_dir, local, ((f, lines(f)) for f in DATA_FILES if f in files))
        except Exception as exc:
            import psycopg

            if isinstance(exc, psycopg.Error):
                raise rc.failed(exc, url, f"pulling {agent!r}") from None
            raise
    finally:
        conn.close()
    return PullResult(local, f"{store_id}/{name}", counts)
