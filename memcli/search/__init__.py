"""Search over an agent's memory (docs/design.md §8): query parsing (:mod:`memcli.search.query`) and
ranked hits from the store's FTS5 index (:mod:`memcli.search.engine`; the index itself, the only
part that writes, is :mod:`memcli.store.search_index`)."""

from memcli.search.engine import Hit, SearchResult, parse_kinds, search
from memcli.search.query import Query, parse_query

__all__ = ["Hit", "Query", "SearchResult", "parse_kinds", "parse_query", "search"]
