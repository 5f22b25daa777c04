"""LangGraph bigtool with toolscout as its retrieve_tools hook.

    python examples/bigtool_agent.py "convert 20 euros to dollars"

Runs offline: a scripted chat model asks retrieve_tools first, then calls the tool it got.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool
from langgraph.store.memory import InMemoryStore
from langgraph_bigtool import create_agent

import toolscout
from toolscout.integrations.bigtool import aretrieve_tools, index_tools, retrieve_tools


@tool
def get_weather(city: str) -> str:
    """Current weather and temperature for a city."""
    return f"Sunny in {city}"


@tool
def convert_currency(amount: float, source: str, target: str) -> str:
    """Convert an amount of money from one currency to another."""
    return f"{amount} {source} = {amount * 1.1:.2f} {target}"


@tool
def send_email(to: str, subject: str) -> str:
    """Send an email message to a recipient."""
    return f"sent to {to}"


class ScriptedModel(GenericFakeChatModel):
    """A chat model that replays messages and accepts bound tools (bigtool binds them)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def main(query: str, db: Path, cache_dir: Path | None = None) -> list[BaseMessage]:
    registry = {t.name: t for t in (get_weather, convert_currency, send_email)}
    script = iter(
        [
            AIMessage(
                "", tool_calls=[{"name": "retrieve_tools", "args": {"query": query}, "id": "1"}]
            ),
            AIMessage(
                "",
                tool_calls=[
                    {
                        "name": "convert_currency",
                        "args": {"amount": 20, "source": "EUR", "target": "USD"},
                        "id": "2",
                    }
                ],
            ),
            AIMessage("20 EUR is about 22 USD."),
        ]
    )
    with tempfile.TemporaryDirectory() as tmp:
        engine = toolscout.Engine.open(db=str(db), cache_dir=str(cache_dir or tmp))
        try:
            index_tools(engine, registry)
            agent = create_agent(
                ScriptedModel(messages=script),
                registry,
                retrieve_tools_function=retrieve_tools(engine, limit=2),
                retrieve_tools_coroutine=aretrieve_tools(engine, limit=2),
            ).compile(store=InMemoryStore())
            state = agent.invoke({"messages": [("user", query)]})
            return list(state["messages"])
        finally:
            engine.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        for message in main(
            sys.argv[1] if len(sys.argv) > 1 else "convert 20 euros to dollars", Path(tmp) / "t.db"
        ):
            print(f"{message.type}: {message.content}")
