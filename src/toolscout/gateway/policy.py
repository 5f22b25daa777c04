"""Which tools the gateway may call.

Patterns are shell-style globs over toolscout ids (``time::*``, ``git::git_*``,
``*::delete_*``); a bare server name (``time``) means every tool of that server. The checks,
in order:

1. a tool matching ``deny`` is refused;
2. with ``allow`` non-empty, a tool matching none of it is refused;
3. with ``read_only``, a tool not annotated ``readOnlyHint: true`` is refused;
4. a tool annotated ``destructiveHint: true`` is refused unless it matches
   ``allow_destructive`` (an explicit allow: ``allow`` patterns do not count, and a wildcard
   that names no server, such as ``*``, is not accepted there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from toolscout.errors import CallDenied, ConfigError
from toolscout.models import Tool


def _expand(pattern: str) -> str:
    return pattern if "::" in pattern or any(c in pattern for c in "*?[") else f"{pattern}::*"


def _matches(tool_id: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(tool_id, _expand(p)) for p in patterns)


def _hint(tool: Tool, key: str) -> bool:
    return tool.annotations.get(key) is True


@dataclass(frozen=True)
class Policy:
    """Allow/deny lists, the destructive-tool rule and read-only mode (see the module doc)."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    allow_destructive: tuple[str, ...] = ()
    read_only: bool = False

    def __post_init__(self) -> None:
        for pattern in self.allow_destructive:
            server = _expand(pattern).split("::", 1)[0]
            if not server or any(c in server for c in "*?["):
                raise ConfigError(
                    f"gateway.allow_destructive: {pattern!r} must name a server "
                    f"(e.g. 'git::git_reset' or 'git'), not a wildcard over every server"
                )

    def check(self, tool: Tool) -> None:
        """Refuse a call the policy does not allow.

        Raises:
            CallDenied: naming the tool and the rule that refused it.
        """
        if _matches(tool.id, self.deny):
            raise CallDenied(tool.id, "denied by gateway.deny")
        if self.allow and not _matches(tool.id, self.allow):
            raise CallDenied(tool.id, "not in gateway.allow")
        if self.read_only and not _hint(tool, "readOnlyHint"):
            raise CallDenied(
                tool.id, "the gateway is read-only and this tool is not annotated readOnlyHint"
            )
        if _hint(tool, "destructiveHint") and not _matches(tool.id, self.allow_destructive):
            raise CallDenied(
                tool.id,
                "annotated destructiveHint; add it to gateway.allow_destructive to allow calls",
            )

    def allows(self, tool: Tool) -> bool:
        """Whether :meth:`check` would pass (used to keep refused tools out of the tool list)."""
        try:
            self.check(tool)
        except CallDenied:
            return False
        return True
