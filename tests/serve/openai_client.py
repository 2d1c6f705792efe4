"""Why this file exists: the official `openai` Python package, not plangate's code,
drives a multi-step task through `plangate serve --upstream` (tests/e2e/serve.rs starts
the server and its recorded upstream). Each step is a real SDK call; tool calls are run
by this file's own executor, so a step the gate refused can be seen not to reach it.

Usage: python openai_client.py BASE_URL TOOLS_JSON_FILE; prints one JSON report.
"""

import json
import sys

import openai
from openai import OpenAI


def main() -> None:
    base_url, tools_file = sys.argv[1], sys.argv[2]
    with open(tools_file, encoding="utf-8") as f:
        tools = json.load(f)
    client = OpenAI(base_url=base_url, api_key="sk-test-client", max_retries=0)
    executed = []

    def execute(call):
        executed.append({"name": call.function.name, "arguments": json.loads(call.function.arguments)})
        return json.dumps({"ok": True})

    report = {"steps": []}
    messages = [{"role": "user", "content": "correct"}]

    def step(name, **extra):
        raw = client.chat.completions.with_raw_response.create(
            model="recorded", messages=messages, tools=tools, **extra
        )
        completion = raw.parse()
        message = completion.choices[0].message
        calls = message.tool_calls or []
        for call in calls:
            result = execute(call)
            messages.append({"role": "assistant", "content": None, "tool_calls": [call.model_dump()]})
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        report["steps"].append(
            {
                "step": name,
                "decision": raw.headers.get("x-plangate-decision"),
                "reasons": raw.headers.get("x-plangate-reasons"),
                "tool_calls": len(calls),
                "content": message.content,
                "finish_reason": completion.choices[0].finish_reason,
                "plangate": (completion.model_extra or {}).get("plangate", {}).get("decision"),
                "executed_so_far": len(executed),
            }
        )

    # An agreeing step: the SDK's answer carries a tool call, which is executed.
    step("agreeing")
    # A step whose choices invent a value: refused, nothing reaches the executor.
    messages.append({"role": "user", "content": "fabricated"})
    step("fabricated")
    # A streamed step: the SDK assembles the chunks into one tool call.
    messages.append({"role": "user", "content": "correct"})
    stream = client.chat.completions.create(
        model="recorded", messages=messages, tools=tools, stream=True
    )
    names, arguments, finish = [], "", None
    for chunk in stream:
        for choice in chunk.choices:
            for tc in choice.delta.tool_calls or []:
                if tc.function and tc.function.name:
                    names.append(tc.function.name)
                if tc.function and tc.function.arguments:
                    arguments += tc.function.arguments
            finish = choice.finish_reason or finish
    report["stream"] = {"names": names, "arguments": json.loads(arguments), "finish_reason": finish}
    # Errors are parsed by the SDK too: an upstream answering garbage is a 502.
    messages.append({"role": "user", "content": "garbage"})
    try:
        client.chat.completions.create(model="recorded", messages=messages, tools=tools)
        report["error"] = None
    except openai.APIStatusError as e:
        report["error"] = {"status": e.status_code, "type": e.body.get("type") if isinstance(e.body, dict) else None,
                           "message": e.message}
    report["executed"] = executed
    print(json.dumps(report))


if __name__ == "__main__":
    main()
