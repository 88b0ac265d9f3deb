"""Native event builders shared by the tests: ``U`` (user), ``A`` (assistant), ``CALL`` (tool
call), ``RES`` (tool result), and ``turns(n)``. Each returns a plain dict as ``memcli ingest``
reads it; keyword arguments add or override fields (``id``, ``turn_id``, ``tags``, ``ts`` ...)."""

from __future__ import annotations


def U(text, **kw):
    return {"trace_type": "user", "content": text, **kw}


def A(text, **kw):
    return {"trace_type": "assistant", "content": text, **kw}


def CALL(call_id, name="sh", args=None, **kw):
    return {"trace_type": "tool_call", "tool_name": name, "tool_call_id": call_id,
            "tool_args": args if args is not None else {"cmd": "ls"}, **kw}


def RES(call_id, result="ok", **kw):
    return {"trace_type": "tool_result", "tool_call_id": call_id, "tool_result": result, **kw}


def turns(n: int, *, start: int = 1, with_tools: bool = True) -> list[dict]:
    """``n`` turns of ask, (call, result,) answer — ids ``c<k>`` for the calls."""
    out = []
    for k in range(start, start + n):
        out.append(U(f"question {k}"))
        if with_tools:
            out += [CALL(f"c{k}"), RES(f"c{k}", f"result {k}")]
        out.append(A(f"answer {k}"))
    return out
