"""pydantic-ai with toolscout: the model sees only the tools found for the prompt.

    python examples/pydantic_ai_toolset.py "what's the weather in Berlin?"

Runs offline: a FunctionModel stands in for the LLM (it calls the first tool it is shown).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset

import toolscout
from toolscout.integrations.pydanticai import FoundToolset


def get_weather(city: str) -> str:
    """Current weather and temperature for a city."""
    return f"Sunny in {city}, 21 °C"


def send_email(to: str, subject: str, body: str) -> str:
    """Send an email message to a recipient."""
    return f"sent to {to}"


def create_event(title: str, start: str) -> str:
    """Create a calendar event at a start time."""
    return f"created {title}"


def convert_currency(amount: float, source: str, target: str) -> str:
    """Convert an amount of money between currencies."""
    return f"{amount} {source} in {target}"


SEEN: list[list[str]] = []


def llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls the first tool it is shown, then answers with that tool's result."""
    SEEN.append([t.name for t in info.function_tools])
    last = messages[-1].parts[-1]
    if getattr(last, "part_kind", "") == "tool-return":
        return ModelResponse(parts=[TextPart(str(last.content))])
    tool = info.function_tools[0]
    args = {name: "Berlin" for name in tool.parameters_json_schema.get("properties", {})}
    return ModelResponse(parts=[ToolCallPart(tool.name, args)])


def main(prompt: str, db: Path, cache_dir: Path | None = None) -> str:
    tools = FunctionToolset([get_weather, send_email, create_event, convert_currency])
    with tempfile.TemporaryDirectory() as tmp:
        engine = toolscout.Engine.open(db=str(db), cache_dir=str(cache_dir or tmp))
        try:
            found = FoundToolset(tools, engine=engine, limit=2)
            found.index()
            agent = Agent(FunctionModel(llm), toolsets=[found])
            return str(asyncio.run(agent.run(prompt)).output)
        finally:
            engine.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        print(
            main(
                sys.argv[1] if len(sys.argv) > 1 else "what's the weather in Berlin?",
                Path(tmp) / "t.db",
            )
        )
        print("tools shown to the model:", SEEN[0])
