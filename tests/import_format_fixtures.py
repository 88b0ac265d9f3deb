"""Small transcripts of the formats added for issue 13, shaped as their producers write them.
Shared by the format tests and the importer fuzz test."""

from __future__ import annotations

import orjson

T0 = 1_737_000_000_000  # Cline writes epoch milliseconds


def responses_body() -> dict:
    """An OpenAI Responses request body (the shape the API documents, with hosted tool items)."""
    return {"model": "gpt-5", "instructions": "You are terse.", "input": [
        {"role": "user", "content": "Weather in Oslo, and the population?"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Two lookups."}],
         "encrypted_content": "gAAAA"},
        {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "weather", "arguments": '{"city": "Oslo"}'},
        {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "population", "arguments": '{"city": "Oslo"}'},
        {"type": "function_call_output", "call_id": "call_b", "output": "709,000"},
        {"type": "function_call_output", "call_id": "call_a", "output": [
            {"type": "input_text", "text": "rain"}, {"type": "input_image", "image_url": "https://x.test/radar.png"}]},
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "Oslo news"}},
        {"type": "custom_tool_call", "call_id": "call_c", "name": "apply_patch", "input": "*** Begin Patch"},
        {"type": "custom_tool_call_output", "call_id": "call_c", "output": "done"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Rainy; 709k people."}]},
        {"type": "item_reference", "id": "msg_0"},
    ]}


def gemini_request() -> dict:
    return {"system_instruction": {"parts": [{"text": "Be helpful."}]}, "contents": [
        {"role": "user", "parts": [{"text": "What is in this picture?"},
                                   {"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo="}}]},
        {"role": "model", "parts": [{"text": "Let me look.", "thought": True},
                                    {"functionCall": {"name": "describe", "args": {"detail": "high"}},
                                     "thoughtSignature": "c2ln"},
                                    {"functionCall": {"name": "ocr", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "describe", "response": {"output": "a cat"}}},
                                   {"functionResponse": {"name": "ocr", "response": {"error": "no text found"}}}]},
        {"role": "model", "parts": [{"executableCode": {"language": "PYTHON", "code": "print(1+1)"}},
                                    {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2\n"}},
                                    {"text": "A cat; 1+1=2."}]},
    ]}


def gemini_cli_session() -> dict:
    """A Gemini CLI recorded session (ChatRecordingService's ConversationRecord)."""
    return {"sessionId": "5f3c", "projectHash": "ab12", "startTime": "2025-09-01T10:00:00Z",
            "lastUpdated": "2025-09-01T10:01:00Z", "messages": [
                {"id": "m1", "timestamp": "2025-09-01T10:00:00Z", "type": "user", "content": "List files"},
                {"id": "m2", "timestamp": "2025-09-01T10:00:05Z", "type": "gemini", "content": "",
                 "thoughts": [{"subject": "Plan", "description": "use ls", "timestamp": "2025-09-01T10:00:04Z"}],
                 "toolCalls": [{"id": "ls-1", "name": "list_directory", "args": {"path": "."}, "status": "success",
                                "timestamp": "2025-09-01T10:00:05Z",
                                "result": [{"functionResponse": {"id": "ls-1", "name": "list_directory",
                                                                 "response": {"output": "a.txt\nb.txt"}}}]},
                               {"id": "rd-1", "name": "read_file", "args": {"path": "c.txt"}, "status": "error",
                                "result": [{"functionResponse": {"id": "rd-1", "name": "read_file",
                                                                 "response": {"error": "not found"}}}]}],
                 "tokens": {"input": 120, "output": 8, "cached": 0, "total": 128}, "model": "gemini-2.5-pro"},
                {"id": "m3", "timestamp": "2025-09-01T10:00:09Z", "type": "info", "content": "Saved."},
                {"id": "m4", "timestamp": "2025-09-01T10:00:10Z", "type": "gemini", "content": "Two files: a.txt, b.txt.",
                 "model": "gemini-2.5-pro"},
            ]}


def openhands_trajectory() -> list:
    meta = {"function_name": "execute_bash", "tool_call_id": "toolu_1", "total_calls_in_response": 1,
            "model_response": {"id": "resp-1", "model": "claude-sonnet-4", "usage": {"prompt_tokens": 90, "completion_tokens": 12},
                               "choices": [{"message": {"role": "assistant", "tool_calls": [
                                   {"id": "toolu_1", "type": "function",
                                    "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'}}]}}]}}
    return [
        {"id": 0, "timestamp": "2025-01-01T00:00:00", "source": "agent", "action": "system", "message": "sys",
         "args": {"content": "You are OpenHands.", "tools": []}},
        {"id": 1, "timestamp": "2025-01-01T00:00:01", "source": "user", "action": "message", "message": "List files",
         "args": {"content": "List files", "image_urls": ["https://x.test/a.png"], "wait_for_response": False}},
        {"id": 2, "timestamp": "2025-01-01T00:00:02", "source": "environment", "observation": "agent_state_changed",
         "content": "", "extras": {"agent_state": "running"}},
        {"id": 3, "timestamp": "2025-01-01T00:00:03", "source": "agent", "action": "run", "message": "Running ls",
         "args": {"command": "ls", "thought": "Let me look.", "blocking": False}, "tool_call_metadata": meta},
        {"id": 4, "timestamp": "2025-01-01T00:00:04", "source": "agent", "observation": "run", "cause": 3,
         "content": "a.txt", "extras": {"command": "ls", "metadata": {"exit_code": 0}}, "tool_call_metadata": meta},
        {"id": 5, "timestamp": "2025-01-01T00:00:05", "source": "agent", "action": "run", "message": "Running false",
         "args": {"command": "false", "thought": ""}},
        {"id": 6, "timestamp": "2025-01-01T00:00:06", "source": "agent", "observation": "run", "cause": 5,
         "content": "", "extras": {"command": "false", "metadata": {"exit_code": 1}}},
        {"id": 7, "timestamp": "2025-01-01T00:00:07", "source": "agent", "action": "message",
         "args": {"content": "Done: a.txt", "wait_for_response": True}},
    ]


def inspect_log() -> dict:
    def sample(sample_id, epoch):
        return {"id": sample_id, "epoch": epoch, "input": "Compute", "target": "4", "messages": [
            {"id": f"s{sample_id}{epoch}", "role": "system", "content": "Use tools."},
            {"id": f"u{sample_id}{epoch}", "role": "user", "content": [{"type": "text", "text": "2+2?"},
                                                                      {"type": "image", "image": "data:image/png;base64,AAAA"}]},
            {"id": f"a{sample_id}{epoch}", "role": "assistant", "model": "openai/gpt-4o", "content": [
                {"type": "reasoning", "reasoning": "Use python.", "signature": "sig"},
                {"type": "text", "text": "Computing."}],
             "tool_calls": [{"id": "py_1", "function": "python", "arguments": {"code": "print(2+2)"}, "type": "function"},
                            {"id": "sh_1", "function": "bash", "arguments": {"cmd": "ls /nope"}}]},
            {"id": f"t{sample_id}{epoch}", "role": "tool", "tool_call_id": "py_1", "function": "python", "content": "4"},
            {"id": f"e{sample_id}{epoch}", "role": "tool", "tool_call_id": "sh_1", "function": "bash", "content": "",
             "error": {"type": "file_not_found", "message": "ls: /nope: No such file"}},
            {"id": f"f{sample_id}{epoch}", "role": "assistant", "content": "4"},
        ], "output": {"model": "gpt-4o", "usage": {"input_tokens": 50, "output_tokens": 9}}}
    return {"version": 2, "status": "success", "eval": {"task": "math", "model": "openai/gpt-4o"},
            "plan": {}, "results": {}, "stats": {}, "samples": [sample("q1", 1), sample("q2", 1)]}


def sharegpt_records() -> list:
    tools = orjson.dumps([{"name": "lookup", "parameters": {"type": "object"}}]).decode()
    return [
        {"id": "rec-1", "system": "Be kind.", "tools": tools, "conversations": [
            {"from": "human", "value": "Find SK123"},
            {"from": "function_call", "value": '{"name": "lookup", "arguments": {"flight": "SK123"}}'},
            {"from": "observation", "value": '{"status": "on time"}'},
            {"from": "gpt", "value": "SK123 is on time."},
            {"from": "observation", "value": "stray"},
        ]},
        {"id": "rec/2", "messages": [   # LLaMA-Factory's OpenAI-style variant: role + content parts with value
            {"role": "user", "content": [{"type": "text", "value": "Hi"}]},
            {"role": "assistant", "content": [{"type": "text", "value": "Hello!"}]},
        ]},
    ]


def cline_history() -> list:
    """A Cline ``api_conversation_history.json`` built from how Cline writes it (not a real user's
    file: none is public). Cline sends the task as ``<task>`` text plus ``<environment_details>``;
    with XML tool calling the assistant's text holds ``<execute_command>...`` elements; with native
    tool calling it has ``tool_use`` blocks. Either way the tool's output comes back in the next
    user message as a text block ``[<tool> for '<arg>'] Result:\\n<output>``
    (ToolResultUtils.pushToolResult: description + " Result:\\n" + text, when no tool_use id maps);
    errors as formatResponse.toolError, a denial as formatResponse.toolDenied, the user's feedback
    as a following text block, and ``<environment_details>`` last."""
    env = "<environment_details>\n# VSCode Visible Files\nsrc/app.ts\n\n# Current Mode\nACT MODE\n</environment_details>"
    model = {"modelId": "claude-sonnet-4-20250514", "providerId": "anthropic", "mode": "act"}
    return [
        {"role": "user", "ts": T0, "content": [{"type": "text", "text": "<task>\nFix the failing test\n</task>"},
                                               {"type": "text", "text": env}]},
        {"role": "assistant", "ts": T0 + 1000, "modelInfo": model, "id": "req-1", "content": [
            {"type": "text", "text": "<thinking>Run the tests first.</thinking>\n\n<execute_command>\n<command>npm test</command>\n"
                                     "<requires_approval>false</requires_approval>\n</execute_command>"}]},
        {"role": "user", "ts": T0 + 2000, "content": [
            {"type": "text", "text": "[execute_command for 'npm test'] Result:\nCommand executed.\nOutput:\n1 failing"},
            {"type": "text", "text": env}]},
        {"role": "assistant", "ts": T0 + 3000, "modelInfo": model, "id": "req-2", "content": [
            {"type": "text", "text": "I'll read the test."},
            {"type": "tool_use", "id": "toolu_r1", "name": "read_file", "input": {"path": "src/app.test.ts"}},
            {"type": "tool_use", "id": "toolu_w1", "name": "write_to_file", "input": {"path": "/etc/x", "content": "y"}}]},
        {"role": "user", "ts": T0 + 4000, "content": [
            {"type": "text", "text": "[read_file for 'src/app.test.ts'] Result:\nexpect(add(2, 2)).toBe(5)"},
            {"type": "text", "text": "[write_to_file for '/etc/x'] Result:\nThe tool execution failed with the following "
                                     "error:\n<error>\nEACCES: permission denied\n</error>"},
            {"type": "text", "text": env}]},
        {"role": "assistant", "ts": T0 + 5000, "modelInfo": model, "id": "req-3", "content": [
            {"type": "text", "text": "<execute_command>\n<command>rm -rf node_modules</command>\n"
                                     "<requires_approval>true</requires_approval>\n</execute_command>"}]},
        {"role": "user", "ts": T0 + 6000, "content": [
            {"type": "text", "text": "[execute_command for 'rm -rf node_modules'] Result:\nThe user denied this operation."},
            {"type": "text", "text": "The user provided the following feedback:\n<feedback>\nDon't delete things\n</feedback>"},
            {"type": "text", "text": env}]},
        {"role": "assistant", "ts": T0 + 7000, "modelInfo": model, "id": "req-4", "content": [
            {"type": "text", "text": "<attempt_completion>\n<result>\nFixed the expectation.\n</result>\n</attempt_completion>"}]},
        {"role": "user", "ts": T0 + 8000, "content": [
            {"type": "text", "text": "[attempt_completion] Result:"},
            {"type": "text", "text": "The user has provided feedback on the results.\n<feedback>\nthanks\n</feedback>"},
            {"type": "text", "text": env}]},
        {"role": "user", "ts": T0 + 9000, "content": [{"type": "text", "text": "<user_message>\nAlso add a README\n</user_message>"}]},
    ]
