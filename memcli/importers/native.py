"""The native format (see ``memcli.events``): events pass through unchanged."""

from __future__ import annotations

from memcli.events import DEFAULT_SOURCE_EVENT
from memcli.models import TRACE_TYPES


class NativeImporter:
    name = "native"
    source_event = DEFAULT_SOURCE_EVENT

    def sniff(self, values) -> int:
        # memory items of `memcli export --with-memory` (memcli.store.memory_records) are native too
        objects = [v for _, v in values if isinstance(v, dict) and "record_type" not in v]
        if not objects and any(isinstance(v, dict) and "record_type" in v for _, v in values):
            return 90
        if objects and all(v.get("trace_type") in TRACE_TYPES for v in objects[:5]):
            return 90
        if objects and "trace_type" in objects[0]:
            return 60
        return 0

    def events(self, values, result):
        return values


IMPORTER = NativeImporter()
