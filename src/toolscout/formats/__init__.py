"""Provider shapes (Anthropic, OpenAI) that every door renders found tools through.

names.py gives each toolscout id a name both providers accept and maps it back; shapes.py
turns tools into each SDK's tool definitions. The REST ``?format=``, the CLI ``--format``,
``SearchResult.to_anthropic()`` / ``.to_openai()`` and the gateway's exposed tool list all
use them, so the package sits beside the gateway, not inside it.
"""

from toolscout.formats.names import NameMap, provider_name, tool_id_from_name
from toolscout.formats.shapes import (
    GroupBy,
    ProviderFormat,
    ProviderTools,
    render,
    to_anthropic,
    to_openai,
)

__all__ = [
    "GroupBy",
    "NameMap",
    "ProviderFormat",
    "ProviderTools",
    "provider_name",
    "render",
    "to_anthropic",
    "to_openai",
    "tool_id_from_name",
]
