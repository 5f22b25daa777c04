"""Progress shown on stderr while commands work: embedding bars and MCP servers starting."""

from __future__ import annotations

import resource
import sys
from types import TracebackType

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from toolscout.cli import err_console
from toolscout.errors import IngestError
from toolscout.models import Loaded


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB (Linux reports KB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


class RateColumn(ProgressColumn):
    """Items per second, as rich estimates it from the recent updates (blank until known)."""

    def render(self, task: Task) -> Text:
        speed = task.speed
        return Text("" if speed is None else f"{speed:,.0f}/s", style="progress.data.speed")


def embedding_bar() -> Progress:
    """A transient bar: ``embedding ━━━━ 640/5,270 212/s 0:00:03 ETA 0:00:21`` (it moves every
    few dozen texts)."""
    return Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
    )


class SyncProgress:
    """What ``sync`` shows while it works: servers starting (one line per server as it
    answers or fails), then an embedding bar per source that has something to embed."""

    def __init__(self, servers: int) -> None:
        self.bar = embedding_bar()
        self._servers: TaskID | None = None
        self._embed: TaskID | None = None
        self._count = servers

    def __enter__(self) -> SyncProgress:
        self.bar.__enter__()
        if self._count:
            self._servers = self.bar.add_task(
                f"starting {self._count} MCP servers", total=self._count
            )
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.bar.__exit__(kind, exc, tb)

    def listed(self, name: str, result: Loaded | IngestError) -> None:
        outcome = (
            f"failed: {result}" if isinstance(result, IngestError) else f"{len(result.tools)} items"
        )
        self.bar.console.print(f"  {name}: {outcome}", highlight=False, markup=False)
        if self._servers is not None:
            self.bar.advance(self._servers)

    def source(self, name: str) -> None:
        if self._servers is not None:
            self.bar.remove_task(self._servers)
            self._servers = None
        if self._embed is not None:
            self.bar.remove_task(self._embed)
        self._embed = self.bar.add_task(f"embedding {name}", total=None)

    def embedded(self, done: int, total: int) -> None:
        if self._embed is not None:
            self.bar.update(self._embed, completed=done, total=total)
