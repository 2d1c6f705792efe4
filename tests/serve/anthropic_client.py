"""Why this file exists: the official `anthropic` Python package, not plangate's code,
drives a multi-step task through `plangate serve --anthropic-upstream`
(tests/e2e/serve_anthropic.rs starts the server and its recorded upstream). Each step is
a real SDK call; `tool_use` blocks are run by this file's own executor, so a step the
gate refused can be seen not to reach it.

Usage: python anthropic_client.py BASE_URL TOOLS_JSON_FILE; prints one JSON report.
"""

import json
import sys

import anthropic


def main() -> None:
    base_url, tools_file = sys.argv[1], sys.argv[2]
    with open(tools_file, encoding="utf-8") as f:
        tools = json.load(f)
    client = anthropic.Anthropic(base_url=base_url, api_key="sk-ant-test-client", max_retries=0)
    executed = []

    def execute(block):
        executed.append({"name": block.name, "input": block.input})
        area = block.input["base"] * block.input["height"] / 2
        return str(area)

    report = {"steps": []}
    messages = []

    def step(name, user=None):
        if user is not None:
            messages.append({"role": "user", "content": user})
        raw = client.messages.with_raw_response.create(
            model="recorded", max_tokens=256, messages=messages, tools=tools
        )
        message = raw.parse()
        uses = [b for b in message.content if b.type == "tool_use"]
        messages.append({"role": "assistant", "content": [b.model_dump() for b in message.content]})
        if uses:
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": b.id, "content": execute(b)} for b in uses
                    ],
                }
            )
        texts = [b.text for b in message.content if b.type == "text"]
        report["steps"].append(
            {
                "step": name,
                "decision": raw.headers.get("x-plangate-decision"),
                "reasons": raw.headers.get("x-plangate-reasons"),
                "tool_uses": len(uses),
                "text": texts[-1] if texts else None,
                "stop_reason": message.stop_reason,
                "plangate": ((message.model_extra or {}).get("plangate") or {}).get("decision"),
                "executed_so_far": len(executed),
            }
        )

    # An agreeing step: its tool_use is executed, and the model answers from the result.
    step("agreeing", "correct")
    step("answer")
    # A tool nobody offered, then values the samples invent: refused before the executor.
    step("invented_tool", "invented_tool")
    step("fabricated", "fabricated")
    # A streamed step: the SDK assembles Anthropic's event stream into one message.
    with client.messages.stream(
        model="recorded",
        max_tokens=256,
        messages=messages + [{"role": "user", "content": "correct"}],
        tools=tools,
    ) as stream:
        final = stream.get_final_message()
    report["stream"] = {
        "tool_uses": [b.name for b in final.content if b.type == "tool_use"],
        "input": next(b.input for b in final.content if b.type == "tool_use"),
        "stop_reason": final.stop_reason,
        "plangate": ((final.model_extra or {}).get("plangate") or {}).get("decision"),
    }
    # Errors are parsed by the SDK too: an upstream answering garbage is a 502.
    try:
        client.messages.create(
            model="recorded",
            max_tokens=256,
            messages=messages + [{"role": "user", "content": "garbage"}],
            tools=tools,
        )
        report["error"] = None
    except anthropic.APIStatusError as e:
        body = e.body if isinstance(e.body, dict) else {}
        report["error"] = {
            "status": e.status_code,
            "type": (body.get("error") or {}).get("type"),
            "message": e.message,
        }
    report["executed"] = executed
    print(json.dumps(report))


if __name__ == "__main__":
    main()
