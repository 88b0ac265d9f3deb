"""ChatGPT and Claude.ai data exports (``conversations.json``) for the tests.

Written by this project from the exports' documented shape (ChatGPT: conversations with a
``mapping`` tree of nodes, ``current_node``, messages with ``author.role``, ``content.content_type``
and ``recipient``; Claude.ai: conversations with ``chat_messages`` of ``sender`` human/assistant and
Anthropic-style ``content`` blocks). Nothing is copied from a real export.
"""

from __future__ import annotations

import uuid

T0 = 1767261600.0  # 2026-01-01T10:00:00Z


def cid(n: int, kind: str = "cg") -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"memcli-export-test/{kind}/{n}"))


def _node(mapping: dict, node_id: str, parent: str | None, message: dict | None) -> None:
    mapping[node_id] = {"id": node_id, "message": message, "parent": parent, "children": []}
    if parent is not None:
        mapping[parent]["children"].append(node_id)


def cg_message(mid: str, role: str, content: dict, t: float, *, recipient: str = "all", name: str | None = None,
               **metadata) -> dict:
    return {"id": mid, "author": {"role": role, "name": name, "metadata": {}}, "create_time": t,
            "update_time": None, "content": content, "status": "finished_successfully", "end_turn": True,
            "weight": 1.0, "metadata": metadata, "recipient": recipient}


def text(*parts) -> dict:
    return {"content_type": "text", "parts": list(parts)}


def chatgpt_conversation(n: int = 1, turns: int = 2, *, phrase: str = "", branch: bool = True) -> dict:
    """Hidden system root, then per turn: a question, a python call, its output, an answer; with
    ``branch`` an abandoned regenerated answer hangs off the first question."""
    conv_id = cid(n)
    mapping: dict = {}
    root = f"{conv_id[:8]}-root"
    _node(mapping, root, None, None)
    sys_id = f"{conv_id[:8]}-sys"
    _node(mapping, sys_id, root, cg_message(sys_id, "system", text(""), T0, is_visually_hidden_from_conversation=True))
    last = sys_id
    for t in range(turns):
        base = T0 + 100 * t
        ids = [f"{conv_id[:8]}-t{t}-{k}" for k in ("q", "call", "out", "a")]
        _node(mapping, ids[0], last, cg_message(ids[0], "user", text(f"question {t} {phrase}".strip()), base))
        _node(mapping, ids[1], ids[0], cg_message(
            ids[1], "assistant", {"content_type": "code", "language": "unknown", "text": f"print({t} + 1)"},
            base + 1, recipient="python", model_slug="gpt-4o"))
        _node(mapping, ids[2], ids[1], cg_message(
            ids[2], "tool", {"content_type": "execution_output", "text": str(t + 1)}, base + 2, name="python"))
        _node(mapping, ids[3], ids[2], cg_message(ids[3], "assistant", text(f"the answer is {t + 1}"), base + 3,
                                                  model_slug="gpt-4o"))
        if branch and t == 0:
            old = f"{conv_id[:8]}-t0-old"
            _node(mapping, old, ids[0], cg_message(old, "assistant", text("an answer regenerated away"), base + 1))
        last = ids[3]
    return {"title": f"Sums {n}", "create_time": T0, "update_time": T0 + 100 * turns, "mapping": mapping,
            "moderation_results": [], "current_node": last, "plugin_ids": None, "conversation_id": conv_id,
            "conversation_template_id": None, "gizmo_id": None, "is_archived": False, "safe_urls": [], "id": conv_id,
            "default_model_slug": "gpt-4o"}


def chatgpt_add_turn(conv: dict, t: int, question: str) -> dict:
    """The same conversation after one more question and answer (as a later export has it)."""
    conv = {**conv, "mapping": {k: {**v, "children": list(v["children"])} for k, v in conv["mapping"].items()}}
    prefix = conv["id"][:8]
    q, a = f"{prefix}-t{t}-q", f"{prefix}-t{t}-a"
    _node(conv["mapping"], q, conv["current_node"], cg_message(q, "user", text(question), T0 + 100 * t))
    _node(conv["mapping"], a, q, cg_message(a, "assistant", text(f"reply to {question}"), T0 + 100 * t + 1))
    conv["current_node"] = a
    return conv


def ca_iso(t: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def claude_ai_conversation(n: int = 1, turns: int = 2, *, phrase: str = "") -> dict:
    """Per turn: a human question (the first with a pasted attachment), an assistant message with
    thinking, a web_search tool_use and its tool_result (results sit in the assistant's message),
    and a text answer."""
    conv_id = cid(n, "ca")
    messages = []
    for t in range(turns):
        base = T0 + 100 * t
        q = {"uuid": f"{conv_id[:8]}-h{t}", "text": f"find fact {t} {phrase}".strip(),
             "content": [{"type": "text", "text": f"find fact {t} {phrase}".strip(),
                          "start_timestamp": ca_iso(base), "stop_timestamp": ca_iso(base), "citations": []}],
             "sender": "human", "created_at": ca_iso(base), "updated_at": ca_iso(base),
             "attachments": [{"file_name": "notes.txt", "file_size": 11, "file_type": "txt",
                              "extracted_content": "hello notes"}] if t == 0 else [],
             "files": []}
        a = {"uuid": f"{conv_id[:8]}-a{t}", "text": "",
             "content": [{"type": "thinking", "thinking": f"I should search for fact {t}"},
                         {"type": "tool_use", "name": "web_search", "input": {"query": f"fact {t}"}},
                         {"type": "tool_result", "name": "web_search", "is_error": False,
                          "content": [{"type": "text", "text": f"fact {t} is true"}]},
                         {"type": "text", "text": f"fact {t} holds"}],
             "sender": "assistant", "created_at": ca_iso(base + 1), "updated_at": ca_iso(base + 1),
             "attachments": [], "files": []}
        messages += [q, a]
    return {"uuid": conv_id, "name": f"Facts {n}", "summary": "", "created_at": ca_iso(T0),
            "updated_at": ca_iso(T0 + 100 * turns), "account": {"uuid": cid(0, "account")},
            "chat_messages": messages}
