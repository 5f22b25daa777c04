"""Small catalogs for the enrichment tests (tens of tools: embedding runs ~60 texts/s)."""

from __future__ import annotations

from toolscout.models import Tool


def _schema(**props: str) -> dict[str, object]:
    return {
        "type": "object",
        "properties": {k: {"type": "string", "description": v} for k, v in props.items()},
    }


def tracker_tools() -> list[Tool]:
    """An issue tracker and a chat server, MCP-style."""
    return [
        Tool(
            id="tracker::create_issue",
            name="create_issue",
            description="Create a new issue.",
            input_schema=_schema(title="Issue title", body="Issue text"),
            server="tracker",
        ),
        Tool(
            id="tracker::delete_issue",
            name="delete_issue",
            description="Delete an issue.",
            input_schema=_schema(issue_id="Issue number"),
            server="tracker",
        ),
        Tool(
            id="tracker::list_issues",
            name="list_issues",
            description="List issues of a repo.",
            input_schema={
                "type": "object",
                "properties": {"state": {"type": "string", "enum": ["open", "closed"]}},
            },
            server="tracker",
        ),
        Tool(
            id="tracker::getRepoStats",
            name="getRepoStats",
            description="Repository statistics.",
            input_schema={
                "type": "object",
                "properties": {"repo": {"type": "string", "default": "octocat/hello-world"}},
            },
            server="tracker",
        ),
        Tool(
            id="chat::send_message",
            name="send_message",
            description="Post a message to a channel.",
            input_schema=_schema(channel="Channel name", text="Message text"),
            server="chat",
        ),
        Tool(
            id="chat::search_messages",
            name="search_messages",
            description="Full-text search over messages.",
            input_schema=_schema(query="Words to find"),
            server="chat",
        ),
    ]


def chinese_tool() -> Tool:
    """A tool whose description and parameters are in Chinese (common in real MCP servers)."""
    return Tool(
        id="maps_cn::geocode",
        name="geocode",
        description="将地址转换为经纬度坐标",
        input_schema=_schema(address="要查询的地址"),
        server="maps_cn",
    )
