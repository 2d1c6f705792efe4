"""Why this file exists: OpenAI's Agents SDK (`openai-agents`), an agent framework
nobody here wrote, runs its own multi-step loop through `plangate serve --upstream` in
chat-completions mode (`OpenAIChatCompletionsModel`); tests/e2e/serve_agents.rs starts
the server and its recorded upstream. The SDK's own tool executor runs the tool, so a
step the gate refused can be seen never to reach it.

Usage: python agents_client.py BASE_URL STEP...; STEP is the first user message of one
run (`correct`, `invented_tool`, `fabricated`, `stream`, `garbage`). Prints one JSON
report: per run, the tool calls the SDK executed, its final output, or its error.
"""

import asyncio
import json
import sys

import openai
from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)

executed = []


@function_tool
def calculate_triangle_area(base: int, height: int, unit: str = "units") -> str:
    """Calculate the area of a triangle given its base and height."""
    executed.append({"base": base, "height": height, "unit": unit})
    return f"{base * height / 2} square {unit}"


async def run(agent, step):
    before = len(executed)
    out = {"step": step}
    try:
        if step == "stream":
            result = Runner.run_streamed(agent, "correct", max_turns=4)
            kinds = set()
            async for event in result.stream_events():
                kinds.add(event.type)
            out["events"] = sorted(kinds)
        else:
            result = await Runner.run(agent, step, max_turns=4)
        out["final_output"] = result.final_output
    except openai.APIStatusError as e:
        out["error"] = {"class": type(e).__name__, "status": e.status_code, "message": e.message}
    out["executed"] = executed[before:]
    return out


async def main() -> None:
    base_url, steps = sys.argv[1], sys.argv[2:]
    set_tracing_disabled(True)
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-test-client", max_retries=0)
    agent = Agent(
        name="geometry",
        instructions="Answer with the tools you are given.",
        tools=[calculate_triangle_area],
        model=OpenAIChatCompletionsModel(model="recorded", openai_client=client),
        model_settings=ModelSettings(temperature=1.0),
    )
    report = [await run(agent, step) for step in steps]
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main())
