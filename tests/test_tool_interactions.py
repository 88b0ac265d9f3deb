from memcli.models import RawTrace, ToolStatus
from memcli.tool_interactions import pair_tool_traces


def T(i, trace_type, call_id=None, **kw):
    return RawTrace(id=f"t{i}", ts=float(i), turn_id=kw.pop("turn", "turn_0001"), seq=i, trace_type=trace_type,
                    content="", source_event="test", tool_call_id=call_id, **kw)


def test_fifo_pairing_statuses_and_orphans():
    traces = [
        T(1, "tool_call", "x", tool_name="a", tool_args={"n": 1}),
        T(2, "tool_call", "x", tool_name="b"),
        T(3, "tool_result", "x", tool_result="for a"),
        T(4, "tool_result", "ghost", tool_result="nobody asked"),
        T(5, "tool_call", "y", tool_name="c"),
        T(6, "tool_result", "x", tool_error="boom"),
        T(7, "tool_call", "z", tool_name="d"),
        T(8, "user"),
        T(9, "tool_result", "y", tool_result=None),
    ]
    got = [(i.tool_call_id, i.tool_name, i.status, i.result, i.error, i.call_trace_id, i.result_trace_id)
           for i in pair_tool_traces(traces)]
    assert got == [
        ("x", "a", ToolStatus.SUCCESS, "for a", None, "t1", "t3"),
        ("x", "b", ToolStatus.ERROR, None, "boom", "t2", "t6"),
        ("ghost", None, ToolStatus.ORPHAN, "nobody asked", None, None, "t4"),
        ("y", "c", ToolStatus.SUCCESS, None, None, "t5", "t9"),
        ("z", "d", ToolStatus.PENDING, None, None, "t7", None),
    ]
