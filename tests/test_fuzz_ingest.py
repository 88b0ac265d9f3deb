"""Fuzzed ingest input: no traceback ever escapes, every rejection names a line, and the store is
byte-identical after a rejection. Runs ``MEMCLI_FUZZ_EXAMPLES`` cases per format (default 150;
the reliability run uses thousands)."""

from __future__ import annotations

import io
import os
import random

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcli.errors import InputError, MemcliError
from memcli.ingest.api import ingest
from tests.helpers import tree_digest

EXAMPLES = int(os.environ.get("MEMCLI_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=30))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)), max_leaves=12)
FIELDS = ["trace_type", "content", "id", "ts", "turn_id", "seq", "tool_name", "tool_call_id", "tool_args",
          "tool_result", "tool_error", "tags", "media", "usage", "tokens", "source_event", "harness_compaction"]
native_events = st.fixed_dictionaries(
    {"trace_type": st.sampled_from(["user", "assistant", "tool_call", "tool_result", "bogus", 3, None])},
    optional={name: json_values for name in FIELDS[1:]},
)
# a harness compaction, well-formed or not (its memory item is written by the same commit)
harness_marks = st.one_of(json_values, st.fixed_dictionaries({"harness": st.text(max_size=8)},
                                                             optional={"trigger": json_values, "pre_tokens": json_values}))
harness_events = st.fixed_dictionaries(
    {"trace_type": st.sampled_from(["user", "assistant"]), "harness_compaction": harness_marks},
    optional={"content": json_values, "id": json_values,
              "tags": st.one_of(st.just(["compact_summary"]), json_values)})


def lines_of(items) -> bytes:
    out = []
    for item in items:
        if isinstance(item, bytes):
            out.append(item)
        else:
            out.append(orjson.dumps(item))
    return b"\n".join(out) + b"\n"


inputs = st.lists(st.one_of(native_events, harness_events, json_values, st.binary(max_size=40)), min_size=1, max_size=8)


def _files(memory_dir) -> dict:
    """Every file but the agent's lock file: taking the lock creates it, and it is never deleted
    (docs/design.md §3) — an input rejected under the lock leaves every other file as it was."""
    return {name: digest for name, digest in tree_digest(memory_dir).items() if not name.startswith(".locks/")}


def check_ingest(memory_dir, data: bytes, fmt: str = "auto"):
    before = _files(memory_dir)
    try:
        ingest(memory_dir, "fuzz", stdin=io.BytesIO(data), fmt=fmt)
    except InputError as exc:
        # a bad line is named; an input with no event at all is refused as a whole
        assert exc.line is not None or "line" in str(exc) or str(exc).startswith("no events in the input"), str(exc)
        assert _files(memory_dir) == before, "a rejected input changed the store"
    except MemcliError:
        assert _files(memory_dir) == before


@FUZZ
@given(items=inputs)
def test_fuzzed_native_input_never_crashes_and_never_half_writes(memory_dir, items):
    check_ingest(memory_dir, lines_of(items))


@FUZZ
@given(data=st.binary(max_size=300))
def test_fuzzed_bytes_never_crash(memory_dir, data):
    check_ingest(memory_dir, data)


@FUZZ
@given(items=st.lists(native_events, min_size=1, max_size=6))
def test_fuzzed_json_arrays_never_crash(memory_dir, items):
    check_ingest(memory_dir, orjson.dumps(items, option=orjson.OPT_INDENT_2))


FORMATS = ["openai", "anthropic", "claude-code", "codex"]
from tests.test_import_fuzz import TRANSCRIPTS, mutate  # noqa: E402


@pytest.mark.parametrize("fmt", FORMATS)
@FUZZ
@given(seed=st.integers(0, 2**32), p=st.sampled_from([0.05, 0.2, 0.5]), layout=st.sampled_from(["ndjson", "array"]),
       named=st.booleans())
def test_fuzzed_transcripts_through_the_whole_ingest_path(memory_dir, fmt, seed, p, layout, named):
    """Mutated transcripts of every --from format, named or auto-detected, through the real ingest:
    no traceback, a rejection names a line, and a rejected input leaves the store byte-identical."""
    rng = random.Random(seed)
    items = [mutate(v, rng, p) if rng.random() < 0.5 else v for v in TRANSCRIPTS[fmt]]
    if rng.random() < 0.2:  # sometimes a line that is not JSON at all
        items.insert(rng.randrange(len(items) + 1), b"{not json")
    if layout == "array" and not any(isinstance(i, bytes) for i in items):
        data = orjson.dumps(items)
    else:
        data = lines_of(items)
    if not (memory_dir / "agents" / "fuzz").exists():
        ingest(memory_dir, "fuzz", stdin=io.BytesIO(lines_of([{"trace_type": "user", "content": "seed"}])))
    check_ingest(memory_dir, data, fmt if named else "auto")
