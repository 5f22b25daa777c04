"""The gateway's audit log: one JSON line per call.

Each line holds ``time`` (UTC, ISO 8601), ``tool`` (toolscout id), ``server``,
``argument_keys`` (sorted), ``duration_ms`` and ``outcome``: ``ok``, ``tool_error`` (the
upstream answered with ``isError``), ``invalid_arguments``, ``denied``, ``upstream_error``,
``cancelled`` or ``not_found``; failures add ``error``. Argument values are written
(``arguments``) only when the operator asks for them: they may hold secrets or personal data.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from toolscout.errors import ConfigError


@dataclass(frozen=True)
class CallRecord:
    """What the audit log keeps about one call."""

    tool: str
    server: str | None
    arguments: Mapping[str, Any]
    duration_ms: float
    outcome: str
    error: str | None = None


class AuditLog:
    """Appends :class:`CallRecord` lines to a file (opened once, flushed after every line)."""

    def __init__(self, path: str | Path, *, values: bool = False) -> None:
        """Raises: ConfigError: the file cannot be opened for appending."""
        self.path = Path(path).expanduser()
        self.values = values
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file: IO[str] | None = self.path.open("a", encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"gateway.audit_log: cannot append to {str(self.path)!r}: {exc}"
            ) from exc

    def write(self, record: CallRecord) -> None:
        """Append one line; a closed log drops it."""
        line: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "tool": record.tool,
            "server": record.server,
            "argument_keys": sorted(record.arguments),
            "duration_ms": round(record.duration_ms, 3),
            "outcome": record.outcome,
        }
        if record.error is not None:
            line["error"] = record.error
        if self.values:
            line["arguments"] = dict(record.arguments)
        text = json.dumps(line, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            if self._file is not None:
                self._file.write(text)
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
