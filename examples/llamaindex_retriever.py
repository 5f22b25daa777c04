"""LlamaIndex with toolscout as the tool retriever.

    python examples/llamaindex_retriever.py "send a note to my team"

Runs offline: no LLM is needed to see which tools an agent would be given.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from llama_index.core.tools import FunctionTool

import toolscout
from toolscout.integrations.llamaindex import ToolscoutToolRetriever


def get_weather(city: str) -> str:
    """Current weather and temperature for a city."""
    return f"Sunny in {city}"


def send_email(to: str, subject: str, body: str) -> str:
    """Send an email message to a recipient."""
    return f"sent to {to}"


def create_event(title: str, start: str) -> str:
    """Create a calendar event at a start time."""
    return f"created {title}"


def main(query: str, db: Path, cache_dir: Path | None = None) -> list[str]:
    tools = [FunctionTool.from_defaults(fn) for fn in (get_weather, send_email, create_event)]
    with tempfile.TemporaryDirectory() as tmp:
        engine = toolscout.Engine.open(db=str(db), cache_dir=str(cache_dir or tmp))
        try:
            retriever = ToolscoutToolRetriever(engine, tools, limit=1)
            # FunctionAgent(tool_retriever=retriever, llm=...) calls aretrieve the same way.
            return [t.metadata.name for t in retriever.retrieve(query)]
        finally:
            engine.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        print(
            main(sys.argv[1] if len(sys.argv) > 1 else "send a note to my team", Path(tmp) / "t.db")
        )
