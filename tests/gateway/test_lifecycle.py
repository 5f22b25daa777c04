"""The gateway's lifecycle: a start that never answers fails at its timeout, and stopping the
real ``toolscout mcp --gateway`` (stdio and streamable HTTP) with SIGTERM or SIGINT leaves no
upstream server running, even one that ignores end of input and SIGTERM while stuck in a call."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from support.upstreams import BIN, UPSTREAM
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.errors import UpstreamError
from toolscout.gateway import Gateway
from toolscout.ingest.mcpconfig import ServerSpec

TOOLSCOUT = str(BIN / "toolscout")
#: Bound on every wait below; the gateway needs about 4.5 s to kill a stubborn server.
WAIT = 30.0


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped has exited)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_until(predicate: Callable[[], bool], what: str) -> float:
    """Seconds until ``predicate`` holds; fails after WAIT."""
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > WAIT:
            pytest.fail(f"{what} within {WAIT} s")
        time.sleep(0.05)
    return time.monotonic() - start


def test_a_start_that_never_answers_fails_at_its_timeout_and_its_server_is_killed(
    gw_engine: Engine, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    script = tmp_path / "mute.py"
    script.write_text(
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "sys.stdin.read()\n"
        "time.sleep(3600)\n",
        encoding="utf-8",
    )
    mute = ServerSpec(
        name="up", transport="stdio", command=sys.executable, args=(str(script),), timeout=1.5
    )

    async def main() -> float:
        async with Gateway(gw_engine, [mute]) as g:
            start = time.monotonic()
            with pytest.raises(UpstreamError, match=r"no answer within 1\.5 s"):
                await g.call("up::echo", {"text": "x"})
            return time.monotonic() - start

    elapsed = anyio.run(main)
    print(f"start timeout 1.5 s: the call failed after {elapsed:.2f} s")
    # The server ignores SIGTERM, so its shutdown takes the SDK's graces (end of input, 2 s,
    # SIGTERM, then SIGKILL): a caller waiting for it would wait 1.5 + 2 s at the least.
    assert 1.0 <= elapsed < 3.0, elapsed  # the server's shutdown is not the caller's wait
    assert not alive(int(pid_file.read_text()))


def _config(tmp_path: Path) -> tuple[Path, Path, Path]:
    """An MCP config naming one stubborn upstream, its pid file and its call log."""
    pids, calls = tmp_path / "pids.txt", tmp_path / "calls.txt"
    config = tmp_path / "mcp.json"
    entry = {
        "command": sys.executable,
        "args": [str(UPSTREAM), "stdio"],
        "env": {"UPSTREAM_STUBBORN": "1", "UPSTREAM_PIDS": str(pids), "UPSTREAM_CALLS": str(calls)},
        "timeout": 120,
    }
    config.write_text(json.dumps({"mcpServers": {"up": entry}}), encoding="utf-8")
    return config, pids, calls


def _env(settings: Settings) -> dict[str, str]:
    env = {
        "TOOLSCOUT_DB": settings.db,
        "TOOLSCOUT_CACHE_DIR": settings.cache_dir,
        "TOOLSCOUT_EMBED_THREADS": "1",
        "PATH": str(BIN) + ":/usr/bin:/bin",
    }
    if "PYTHONPATH" in os.environ:  # a checkout run without installing it
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def _kill_left_over(pids: Path) -> None:
    """SIGKILL an upstream a failed test left behind (it ignores everything else)."""
    if pids.exists():
        upstream = int(pids.read_text(encoding="utf-8").split()[0])
        if alive(upstream):
            os.kill(upstream, signal.SIGKILL)


async def _stop_during_a_stuck_call(
    client: Client, calls: Path, stop: Callable[[], Awaitable[None]]
) -> None:
    """Start the upstream (one call), leave a call stuck in it, then run ``stop``."""
    result = await client.call_tool("call_tool", {"id": "up::pid", "arguments": {}})
    assert not result.is_error, result

    async def hang() -> None:
        try:
            await client.call_tool("call_tool", {"id": "up::hang", "arguments": {}})
        except Exception:  # the gateway goes away under it
            return

    async with anyio.create_task_group() as tg:
        tg.start_soon(hang)
        with anyio.fail_after(WAIT):
            while not calls.exists():
                await anyio.sleep(0.05)
        await stop()
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_the_stdio_gateway_stops_a_stubborn_upstream_stuck_in_a_call(
    gateway_settings: Settings, tmp_path: Path, sig: signal.Signals
) -> None:
    config, pids, calls = _config(tmp_path)
    params = StdioServerParameters(
        command=TOOLSCOUT,
        args=["mcp", "--gateway", "--mcp-config", str(config)],
        env=_env(gateway_settings),
    )
    found: dict[str, int | bool] = {}

    async def main() -> None:
        async def stop() -> None:
            upstream, gateway = map(int, pids.read_text(encoding="utf-8").split())
            found.update(upstream=upstream, gateway=gateway)
            os.kill(gateway, sig)
            took = await anyio.to_thread.run_sync(
                lambda: wait_until(lambda: not alive(gateway), "the gateway did not exit")
            )
            found["left_over"] = alive(upstream)
            print(f"stdio gateway, {sig.name}: exited {took:.2f} s after the signal")

        async with Client(stdio_client(params), read_timeout_seconds=120) as client:
            await _stop_during_a_stuck_call(client, calls, stop)

    try:
        anyio.run(main)
    finally:
        _kill_left_over(pids)
    assert not found["left_over"], "the upstream outlived the gateway"


class HttpGateway:
    """A real ``toolscout mcp --http --gateway`` over ``config``, its stderr read as it comes."""

    def __init__(self, settings: Settings, config: Path) -> None:
        self.proc = subprocess.Popen(
            [TOOLSCOUT, "mcp", "--http", "--gateway", "--port", "0", "--mcp-config", str(config)],
            env=_env(settings),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.urls: queue.Queue[str] = queue.Queue()
        self.shutting_down = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            match = re.search(r"Uvicorn running on (http://\S+:\d+)", line)
            if match:
                self.urls.put(match.group(1))
            if "Shutting down" in line:
                self.shutting_down.set()

    def url(self) -> str:
        return self.urls.get(timeout=120) + "/mcp"

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=WAIT)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_the_http_gateway_stops_a_stubborn_upstream_stuck_in_a_call(
    gateway_settings: Settings, tmp_path: Path, sig: signal.Signals
) -> None:
    config, pids, calls = _config(tmp_path)
    gw = HttpGateway(gateway_settings, config)
    proc = gw.proc
    try:
        url = gw.url()

        async def stop() -> None:
            start = time.monotonic()
            proc.send_signal(sig)
            await anyio.to_thread.run_sync(lambda: proc.wait(timeout=WAIT))
            took = time.monotonic() - start
            print(f"HTTP gateway, {sig.name}: exited {took:.2f} s after the signal")

        async def main() -> None:
            async with Client(url, read_timeout_seconds=120) as client:
                await _stop_during_a_stuck_call(client, calls, stop)

        anyio.run(main)
        upstream, gateway = map(int, pids.read_text(encoding="utf-8").split())
        left_over = alive(upstream)
    finally:
        gw.close()
        _kill_left_over(pids)
    assert gateway == proc.pid
    assert not left_over, "the upstream outlived the gateway"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_second_signal_to_the_http_gateway_kills_its_upstreams_at_once(
    gateway_settings: Settings, tmp_path: Path, sig: signal.Signals
) -> None:
    # The first signal starts the graceful stop: 5 s for running requests, then each server
    # gets end of input, SIGTERM and SIGKILL, 2 s apart. The upstream notes when its input ends,
    # so a server killed at once (no end of input first) is told apart without timing it.
    config, pids, calls = _config(tmp_path)
    eof = tmp_path / "eof.txt"
    entry = json.loads(config.read_text(encoding="utf-8"))
    entry["mcpServers"]["up"]["env"]["UPSTREAM_EOF"] = str(eof)
    config.write_text(json.dumps(entry), encoding="utf-8")
    gw = HttpGateway(gateway_settings, config)
    proc = gw.proc
    stopped: list[float] = []
    try:
        url = gw.url()

        async def stop() -> None:
            proc.send_signal(sig)
            await anyio.to_thread.run_sync(lambda: gw.shutting_down.wait(WAIT))
            assert gw.shutting_down.is_set(), "the first signal did not start the stop"
            start = time.monotonic()
            proc.send_signal(sig)
            await anyio.to_thread.run_sync(lambda: proc.wait(timeout=WAIT))
            stopped.append(time.monotonic() - start)
            print(f"HTTP gateway, second {sig.name}: exited {stopped[0]:.2f} s after it")

        async def main() -> None:
            try:
                async with Client(url, read_timeout_seconds=120) as client:
                    await _stop_during_a_stuck_call(client, calls, stop)
            except Exception:
                if not stopped:
                    raise  # the client may fail to close over a connection cut at once

        anyio.run(main)
        upstream = int(pids.read_text(encoding="utf-8").split()[0])
        left_over = alive(upstream)
    finally:
        gw.close()
        _kill_left_over(pids)
    assert not left_over, "the upstream outlived the gateway"
    assert not eof.exists(), "the upstream was closed gracefully, not killed at once"
