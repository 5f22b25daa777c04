"""A small real tool catalog (five MCP-style servers, a prompt and a resource) and a helper
that indexes it; shared by the skills tests."""

from __future__ import annotations

from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.models import ItemType, Loaded, Tool


def _tool(server: str, name: str, description: str, *params: str, **kw: object) -> Tool:
    schema = {"type": "object", "properties": {p: {"type": "string"} for p in params}}
    return Tool(
        id=f"{server}::{name}",
        name=name,
        description=description,
        input_schema=schema,
        server=server,
        **kw,  # type: ignore[arg-type]
    )


CATALOG: list[Tool] = [
    _tool("gmail", "send_email", "Send an email message to recipients with a subject and body.",
          "to", "subject", "body"),
    _tool("gmail", "search_emails", "Search the mailbox for email messages matching a query.",
          "query"),
    _tool("gmail", "create_draft", "Create an email draft without sending it.", "to", "body"),
    _tool("gmail", "read_email", "Read one email message and its attachments by id.", "id"),
    _tool("calendar", "create_event", "Create a calendar event or meeting with attendees.",
          "title", "start", "attendees"),
    _tool("calendar", "list_events", "List upcoming calendar events and meetings.", "days"),
    _tool("calendar", "find_free_slots", "Find free time slots in the calendar for a meeting.",
          "duration"),
    _tool("github", "create_pull_request", "Open a pull request in a GitHub repository.",
          "repo", "head", "base"),
    _tool("github", "list_commits", "List commits on a branch of a git repository.", "repo"),
    _tool("github", "merge_pull_request", "Merge a pull request into the base branch.", "repo"),
    _tool("weather", "get_forecast", "Weather forecast with temperature and rain for a city.",
          "city", "days"),
    _tool("weather", "current_weather", "Current weather conditions, temperature and wind.",
          "city"),
    _tool("fs", "read_file", "Read the contents of a file from the local file system.", "path"),
    _tool("fs", "write_file", "Write text to a file on disk, creating it if needed.", "path"),
    _tool("fs", "list_directory", "List the files and folders in a directory.", "path"),
    _tool("stocks", "get_stock_quote", "Latest stock price quote for a ticker symbol.", "symbol"),
    _tool("prompts", "weekly_report", "A prompt that drafts a weekly status report email.",
          item_type=ItemType.PROMPT),
    _tool("docs", "weather_glossary", "A resource listing weather and climate terms.",
          item_type=ItemType.RESOURCE),
]  # fmt: skip


def build(settings: Settings, tools: list[Tool] | None = None) -> Engine:
    engine = Engine.open(settings)
    engine.index([Loaded("tests", list(CATALOG if tools is None else tools))])
    return engine
