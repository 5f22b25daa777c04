"""Input schemas of Python tool files in freeact's generated layout, read without importing them.

The oracle is pydantic itself: the model part of a fixture is imported here (in the test, never
by the reader) and its ``model_json_schema()`` must equal what the static reader produced.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from toolscout.ingest.pyfile import ToolDirectory

# What mcpygen (freeact's generator, via datamodel-code-generator) writes for an MCP tool:
# Field(..., title=), Optional[conint(...)], attribute docstrings as descriptions, an Enum, a
# nested model in a list, Literal, Annotated, defaults.
MODELS = """
from __future__ import annotations

from enum import Enum
from typing import Annotated, List, Literal, Optional

from pydantic import AnyUrl, BaseModel, ConfigDict, Field, conint


class Priority(Enum):
    low = "low"
    high = "high"


class Label(BaseModel):
    name: str = Field(..., description="Label name")
    color: Optional[str] = Field(None, description="Hex colour")


class Params(BaseModel):
    model_config = ConfigDict(
        use_enum_values=True,
    )
    repo: str = Field(..., description="Repository as owner/name")
    url: AnyUrl = Field(..., title="Url")
    max_length: Optional[conint(lt=1000000, gt=0)] = Field(5000, title="Max Length")
    state: Literal["open", "closed"] = "open"
    priority: Optional[Priority] = None
    labels: list[Label] = Field(default_factory=list, description="Labels to add")
    assignees: Optional[List[str]] = None
    count: Annotated[int, Field(ge=1, description="How many issues")] = 1
"""

RUN = '''

from . import CLIENT


def run(params: Params) -> str:
    """Create an issue in a GitHub repository.

    Labels must already exist.
    """
    return CLIENT.run_sync(tool_name="create_issue", tool_args=params.model_dump(exclude_none=True))
'''

DOCUMENTED = '''from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, conint

from . import CLIENT


class Params(BaseModel):
    model_config = ConfigDict(
        use_enum_values=True,
    )
    url: str = Field(..., title="Url")
    """
    URL to fetch
    """
    start_index: Optional[conint(ge=0)] = Field(0, title="Start Index")
    """
    On return output starting at this character index.
    """


async def run(params: Params) -> str:
    """Fetches a URL from the internet and extracts its contents as markdown."""
    return await CLIENT.run(tool_name="fetch", tool_args=params.model_dump(exclude_none=True))
'''

INIT = """import os
from mcpygen.tool_exec.client import ToolRunner

CLIENT = ToolRunner(server_name="github", server_params={}, host="localhost", port=8900)
raise SystemExit("importing a tool package is a bug in the reader")
"""

GENTOOL = '''"""Text translation tool."""

from typing import Literal, Optional


def run(
    text: str,
    target_lang: Literal["de", "fr", "ja"],
    glossary: Optional[dict[str, str]] = None,
    *,
    formality: str = "default",
    max_chars: int = 5000,
) -> str:
    """Translate text to a target language.

    Args:
        text: Text to translate.
        target_lang: Target language code.
        glossary: Fixed translations of terms.
        formality: Tone of the translation.
        max_chars (int): Longest input accepted.

    Returns:
        Translated text.
    """
    raise SystemExit("running a tool is a bug in the reader")
'''


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def runtime_schema(tmp_path: Path, models: str) -> dict[str, Any]:
    """What pydantic itself says about the fixture's Params (imported here, by the test)."""
    path = write(tmp_path / "oracle" / "oracle_models.py", models)
    spec = importlib.util.spec_from_file_location("oracle_models", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["oracle_models"] = module
    try:
        spec.loader.exec_module(module)
        schema: dict[str, Any] = module.Params.model_json_schema()
    finally:
        del sys.modules["oracle_models"]
    return schema


def read_tools(root: Path) -> dict[str, Any]:
    loaded = ToolDirectory(root).read()
    assert loaded.problems == []
    return {t.id: t for t in loaded.tools}


def test_mcptools_params_schema_equals_the_models_own_json_schema(tmp_path: Path) -> None:
    write(tmp_path / "ws/mcptools/github/__init__.py", INIT)
    write(tmp_path / "ws/mcptools/github/create_issue.py", MODELS + RUN)
    tool = read_tools(tmp_path / "ws")["mcptools:github:create_issue"]
    assert tool.input_schema == runtime_schema(tmp_path, MODELS)


def test_mcptools_schema_has_required_types_enums_items_defaults_and_descriptions(
    tmp_path: Path,
) -> None:
    write(tmp_path / "mcptools/github/create_issue.py", MODELS + RUN)
    schema = read_tools(tmp_path)["mcptools:github:create_issue"].input_schema
    props = schema["properties"]
    assert schema["required"] == ["repo", "url"]
    assert props["repo"] == {
        "type": "string",
        "title": "Repo",
        "description": "Repository as owner/name",
    }
    assert props["url"]["format"] == "uri"
    assert props["max_length"]["default"] == 5000
    assert {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 1000000} in props[
        "max_length"
    ]["anyOf"]
    assert props["state"]["enum"] == ["open", "closed"] and props["state"]["default"] == "open"
    assert schema["$defs"]["Priority"]["enum"] == ["low", "high"]
    assert props["labels"]["items"] == {"$ref": "#/$defs/Label"}
    assert schema["$defs"]["Label"]["required"] == ["name"]
    assert props["labels"]["description"] == "Labels to add"
    assert props["count"]["description"] == "How many issues" and props["count"]["minimum"] == 1


def test_attribute_docstrings_become_field_descriptions(tmp_path: Path) -> None:
    write(tmp_path / "mcptools/fetch/fetch.py", DOCUMENTED)
    schema = read_tools(tmp_path)["mcptools:fetch:fetch"].input_schema
    assert schema["required"] == ["url"]
    assert schema["properties"]["url"]["description"] == "URL to fetch"
    start = schema["properties"]["start_index"]
    assert start["description"] == "On return output starting at this character index."
    assert start["default"] == 0


def test_gentools_signature_and_google_args_give_types_required_and_descriptions(
    tmp_path: Path,
) -> None:
    write(tmp_path / "gentools/text/translator/__init__.py", "")
    write(tmp_path / "gentools/text/translator/api.py", GENTOOL)
    tool = read_tools(tmp_path)["gentools:text:translator"]
    assert tool.description.startswith("Translate text to a target language.\n\nArgs:")
    schema = tool.input_schema
    assert schema["required"] == ["text", "target_lang"]
    props = schema["properties"]
    assert props["text"] == {"type": "string", "title": "Text", "description": "Text to translate."}
    assert props["target_lang"]["enum"] == ["de", "fr", "ja"]
    assert props["glossary"]["anyOf"][0] == {
        "type": "object",
        "additionalProperties": {"type": "string"},
    }
    assert props["formality"]["default"] == "default"
    assert props["max_chars"] == {
        "type": "integer",
        "default": 5000,
        "title": "Max Chars",
        "description": "Longest input accepted.",
    }


def test_computed_defaults_and_unknown_types_are_not_evaluated(tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    write(
        tmp_path / "mcptools/misc/sneaky.py",
        f"""
import os
from pydantic import BaseModel, Field
from somewhere import Weird


class Params(BaseModel):
    path: str = Field(default_factory=lambda: os.system("touch {marker}"))
    mode: str = os.system("touch {marker}")
    thing: Weird
    other: __import__("os").system("touch {marker}")


def run(params: Params) -> None:
    \"\"\"Do something sneaky.\"\"\"
""",
    )
    schema = read_tools(tmp_path)["mcptools:misc:sneaky"].input_schema
    assert not marker.exists()
    assert schema["required"] == ["thing", "other"]  # path and mode have (computed) defaults
    assert schema["properties"]["thing"] == {"title": "Thing"}
    assert schema["properties"]["mode"] == {"type": "string", "title": "Mode"}


def test_run_parsed_is_preferred_over_run(tmp_path: Path) -> None:
    write(
        tmp_path / "mcptools/x/both.py",
        'def run(a: int):\n    """Raw."""\n\n\ndef run_parsed(b: str):\n    """Parsed."""\n',
    )
    tool = read_tools(tmp_path)["mcptools:x:both"]
    assert tool.description == "Parsed."
    assert list(tool.input_schema["properties"]) == ["b"]
