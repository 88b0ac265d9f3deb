"""Ingest: input reading (``source``), native validation (``native``), the all-or-nothing and
streaming pipelines (``pipeline``) and the entry point the CLI calls (``api.ingest``)."""
