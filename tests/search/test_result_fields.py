"""A search's hits carry the indexed tools as they were written: every field but the schemas
(loaded only when asked), and the content hash that covers the schemas too."""

from __future__ import annotations

from dataclasses import replace

from toolscout.engine import Engine
from toolscout.models import ItemType, Loaded, SearchRequest, Strategy, Tool

SCHEMA = {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}
TOOLS = Loaded(
    "tests",
    [
        Tool(
            "mail.send_email",
            "send_email",
            "Send an email to a recipient",
            input_schema=SCHEMA,
            output_schema={"type": "object"},
            annotations={"readOnlyHint": False, "title": "Send"},
            server="mail",
            source="mail-src",
            category="messaging",
        ),
        Tool(
            "mail.draft",
            "compose_draft",
            "Write an email draft to send to a recipient later; send email drafts",
            input_schema=SCHEMA,
            item_type=ItemType.PROMPT,
            server="mail",
        ),
        Tool("files.read_file", "read_file", "Read a file from the local disk", server="files"),
    ],
)


def test_hits_carry_every_field_of_the_indexed_tool_and_its_full_content_hash(
    engine: Engine,
) -> None:
    engine.index([TOOLS])
    written = {t.id: t for t in TOOLS.tools}
    for strategy in Strategy:
        for schemas in (False, True):
            found = engine.find(
                SearchRequest("send an email", limit=3, strategy=strategy, include_schemas=schemas)
            )
            assert found.tools, strategy
            for hit in found.tools:
                tool = written[hit.tool.id]
                assert hit.tool == replace(tool, input_schema=None, output_schema=None)
                assert hit.tool.to_dict(include_schemas=False) == tool.to_dict(
                    include_schemas=False
                )
                assert hit.tool.content_hash == tool.content_hash
                assert hit.schema == (tool.input_schema if schemas else None)
                assert hit.db_id is not None


#: A tool named by the query, beside one whose name and description hold the same words.
NAMED = Loaded(
    "named",
    [
        Tool("mail.send_email", "send_email", "Deliver a message to one recipient", server="mail"),
        Tool(
            "mail.send_email_now",
            "send_email_now",
            "Send email: send emails, send an email, send email to many people at once",
            server="mail",
        ),
    ],
)


def test_a_query_that_is_a_tools_name_puts_that_tool_first(engine: Engine) -> None:
    """The name is looked up among the first fused hits' stored rows (read without schemas)."""
    engine.index([NAMED])
    for spelling in ("sendEmail", "send-email", "SEND_EMAIL"):
        found = engine.find(SearchRequest(spelling, limit=2))
        assert [h.tool.id for h in found.tools] == ["mail.send_email", "mail.send_email_now"]
