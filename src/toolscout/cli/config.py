"""``toolscout config init|show``: the configuration file and the settings in effect."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from toolscout.cli import app, console
from toolscout.cli.options import JsonOption, settings
from toolscout.config.settings import config_file, default_config_file, default_db
from toolscout.errors import ConfigError

config_app = typer.Typer(help="The configuration file and the settings in effect.")
app.add_typer(config_app, name="config")

SECRETS = ("api_key", "read_key", "embed_api_key", "llm_api_key")
TEMPLATE = """\
# toolscout configuration (TOML). Precedence: command-line arguments, TOOLSCOUT_* environment
# variables, this file, defaults. Every setting: `toolscout config show`.

# db = "{db}"                # SQLite path, or postgresql://user@host/dbname
# ann_min_tools = 20000      # SQLite: from this many tools an HNSW index answers (0: always)
# lex_min_tools = 1000       # SQLite: from this many tools a BM25 index in memory answers
# embed_model = "local:quality"   # larger model: `toolscout model install quality` first
# enrich = "offline"         # none | offline | llm
# learned_ranker = true      # false: the hand-set adaptive fusion's order and scores

# Sources `toolscout sync` and `watch` use when given no arguments:
# mcp_configs = ["~/.config/Claude/claude_desktop_config.json"]
# tools_dirs = ["~/workspace"]
# catalogs = []             # catalog files, OpenAPI documents or their http(s) URLs

# Secrets REST API credentials may name (name = "value" lines; chmod 600):
# secrets_file = "~/.config/toolscout/secrets.toml"

# A REST API described by OpenAPI: indexed by `sync`, callable through the gateway.
# [apis.shop]
# spec = "https://shop.example.com/openapi.json"
# headers_from_env = {{ "X-API-Key" = "SHOP_KEY" }}   # credentials stay in the environment
# headers_from_secrets = {{ "X-API-Key" = "shop_key" }}   # ... or in secrets_file
"""


@config_app.command("init")
def init(
    path: Annotated[
        Path | None,
        typer.Option(help="Where to write (default: the user config directory's config.toml)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented configuration file to start from."""
    target = (path or default_config_file()).expanduser()
    if target.exists() and not force:
        raise ConfigError(f"{target}: already exists; edit it, or pass --force to overwrite it")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        TEMPLATE.format(db=default_db()),
        encoding="utf-8",
    )
    console.print(f"wrote {target}", highlight=False, markup=False)


@config_app.command("show")
def show(as_json: JsonOption = False) -> None:
    """Print the configuration file in use and every setting in effect (keys masked)."""
    current = settings(None).model_dump(mode="json")
    for key in SECRETS:
        if current.get(key):
            current[key] = "***"
    used = config_file()
    if as_json:
        console.print_json(json.dumps({"config_file": str(used) if used else None, **current}))
        return
    hint = f"none (`toolscout config init` creates {default_config_file()})"
    console.print(f"config file: {used or hint}", highlight=False, markup=False, soft_wrap=True)
    for key, value in current.items():
        console.print(f"{key} = {json.dumps(value)}", highlight=False, markup=False)
