"""Calls through the gateway's library object to real upstream servers over stdio and HTTP:
results as the server sent them, validation, policy, audit, crash, hang, slow and down."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from support.gateway_runs import run, text
from support.upstreams import UPSTREAM, upstream_spec
from toolscout.engine import Engine
from toolscout.errors import CallDenied, InvalidArguments, UpstreamError
from toolscout.gateway import AuditLog, Gateway, Limits, Policy
from toolscout.ingest.mcpconfig import ServerSpec


def test_call_returns_the_upstream_result_as_it_is(gw_engine: Engine) -> None:
    gateway = Gateway(gw_engine, [upstream_spec()])

    async def body(g: Gateway) -> tuple[types.CallToolResult, ...]:
        return (
            await g.call("up::echo", {"text": "hi", "times": 2}),
            await g.call("up::add", {"a": 2, "b": 3}),
            await g.call("up::fail", {"reason": "no disk"}),
        )

    echo, added, failed = run(gateway, body)
    assert text(echo) == "hi hi" and not echo.is_error
    assert added.structured_content == {"sum": 5}
    assert failed.is_error and text(failed) == "failed: no disk"


def test_one_session_serves_every_call_of_a_server(gw_engine: Engine) -> None:
    gateway = Gateway(gw_engine, [upstream_spec()])

    async def body(g: Gateway) -> list[Any]:
        return [(await g.call("up::pid", {})).structured_content for _ in range(3)]

    pids = run(gateway, body)
    assert len({json.dumps(p) for p in pids}) == 1
    assert gateway.pool.upstreams["up"].starts == 1


def test_invalid_arguments_name_the_field_and_never_reach_the_server(gw_engine: Engine) -> None:
    gateway = Gateway(gw_engine, [upstream_spec()])

    async def body(g: Gateway) -> list[InvalidArguments]:
        errors = []
        for args in ({"a": "two", "b": 3}, {"a": 1}, {"text": "x", "times": "many"}):
            tool = "up::echo" if "text" in args else "up::add"
            with pytest.raises(InvalidArguments) as caught:
                await g.call(tool, args)
            errors.append(caught.value)
        return errors

    wrong_type, missing, nested = run(gateway, body)
    assert wrong_type.field == "a" and "integer" in wrong_type.message
    assert missing.field == "b" and "required" in missing.message
    assert nested.field == "times"
    assert gateway.pool.upstreams["up"].starts == 0


def test_denied_and_destructive_tools_are_refused_before_the_server(gw_engine: Engine) -> None:
    denied = Gateway(gw_engine, [upstream_spec()], policy=Policy(deny=("up::echo",)))
    default = Gateway(gw_engine, [upstream_spec()])

    async def refused(g: Gateway, tool: str, args: dict[str, Any]) -> CallDenied:
        with pytest.raises(CallDenied) as caught:
            await g.call(tool, args)
        return caught.value

    assert "gateway.deny" in run(denied, lambda g: refused(g, "up::echo", {"text": "x"})).reason
    wipe = run(default, lambda g: refused(g, "up::wipe", {"path": "/"}))
    assert "allow_destructive" in wipe.reason
    assert default.pool.upstreams["up"].starts == 0

    allowed = Gateway(gw_engine, [upstream_spec()], policy=Policy(allow_destructive=("up::wipe",)))
    result = run(allowed, lambda g: g.call("up::wipe", {"path": "/tmp/x"}))
    assert text(result) == "wiped /tmp/x"


def test_allow_list_and_read_only_mode_narrow_what_may_be_called(gw_engine: Engine) -> None:
    only_echo = Gateway(gw_engine, [upstream_spec()], policy=Policy(allow=("up::echo",)))
    read_only = Gateway(gw_engine, [upstream_spec()], policy=Policy(read_only=True))

    async def body(g: Gateway, tool: str) -> str:
        with pytest.raises(CallDenied) as caught:
            await g.call(tool, {})
        return caught.value.reason

    assert "gateway.allow" in run(only_echo, lambda g: body(g, "up::pid"))
    assert "read-only" in run(read_only, lambda g: body(g, "up::crash"))
    assert read_only.callable(gw_engine.get_tool("up::pid"))


def test_audit_log_records_keys_and_outcomes_but_no_values(
    gw_engine: Engine, tmp_path: Path
) -> None:
    path = tmp_path / "audit" / "calls.jsonl"
    gateway = Gateway(gw_engine, [upstream_spec()], audit=AuditLog(path))

    async def body(g: Gateway) -> None:
        await g.call("up::echo", {"text": "secret-value"})
        with pytest.raises(InvalidArguments):
            await g.call("up::add", {"a": "secret-value"})
        with pytest.raises(CallDenied):
            await g.call("up::wipe", {"path": "secret-value"})
        await g.call("up::fail", {"reason": "r"})

    run(gateway, body)
    raw = path.read_text(encoding="utf-8")
    assert "secret-value" not in raw
    lines = [json.loads(line) for line in raw.splitlines()]
    assert [line["outcome"] for line in lines] == [
        "ok",
        "invalid_arguments",
        "denied",
        "tool_error",
    ]
    assert lines[0]["tool"] == "up::echo" and lines[0]["argument_keys"] == ["text"]
    assert lines[0]["server"] == "up" and lines[0]["duration_ms"] >= 0
    assert "error" in lines[1] and "time" in lines[0]


def test_audit_log_keeps_values_when_asked(gw_engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    gateway = Gateway(gw_engine, [upstream_spec()], audit=AuditLog(path, values=True))
    run(gateway, lambda g: g.call("up::echo", {"text": "kept"}))
    assert json.loads(path.read_text(encoding="utf-8"))["arguments"] == {"text": "kept"}


def test_crashed_server_is_restarted_by_the_next_call(gw_engine: Engine, tmp_path: Path) -> None:
    marker = tmp_path / "pids.txt"
    gateway = Gateway(gw_engine, [upstream_spec(marker=marker)])

    async def body(g: Gateway) -> tuple[str, Any]:
        await g.call("up::pid", {})
        with pytest.raises(UpstreamError) as caught:
            await g.call("up::crash", {})
        after = await g.call("up::pid", {})
        return str(caught.value), after.structured_content

    message, after = run(gateway, body)
    assert "connection closed" in message and "next call starts the server again" in message
    pids = marker.read_text(encoding="utf-8").split()
    assert len(pids) == 2 and after == {"result": int(pids[1])}
    assert gateway.pool.upstreams["up"].starts == 2


def test_read_only_call_after_an_idle_crash_is_retried_on_a_new_session(
    gw_engine: Engine, tmp_path: Path
) -> None:
    marker = tmp_path / "pids.txt"
    gateway = Gateway(gw_engine, [upstream_spec(marker=marker)])

    async def body(g: Gateway) -> Any:
        await g.call("up::pid", {})
        first = int(marker.read_text(encoding="utf-8").split()[0])
        subprocess.run(["kill", "-9", str(first)], check=True)
        with anyio.fail_after(20):
            while Path(f"/proc/{first}").exists():
                await anyio.sleep(0.05)
        return (await g.call("up::pid", {})).structured_content

    after = run(gateway, body)
    assert after == {"result": int(marker.read_text(encoding="utf-8").split()[1])}


def test_hanging_call_times_out_with_a_clear_error_and_the_session_survives(
    gw_engine: Engine,
) -> None:
    gateway = Gateway(gw_engine, [upstream_spec()], limits={"up": Limits(timeout=1.5)})

    async def body(g: Gateway) -> tuple[str, str]:
        with pytest.raises(UpstreamError) as caught:
            await g.call("up::hang", {})
        return str(caught.value), text(await g.call("up::echo", {"text": "still here"}))

    message, after = run(gateway, body)
    assert "no answer within 1.5 s" in message and "'up'" in message
    assert after == "still here"


def test_calls_beyond_the_concurrency_limit_wait_for_a_free_slot(
    gw_engine: Engine,
) -> None:
    limits = {"up": Limits(timeout=2.0, max_concurrency=1)}
    gateway = Gateway(gw_engine, [upstream_spec()], limits=limits)

    async def body(g: Gateway) -> list[str]:
        outcomes: list[str] = []

        async def attempt(tool: str) -> None:
            try:
                await g.call(tool, {})
                outcomes.append(f"{tool} ok")
            except UpstreamError:
                outcomes.append(f"{tool} timed out")

        await g.call("up::pid", {})  # started, so only the slot is waited for
        async with anyio.create_task_group() as tg:
            tg.start_soon(attempt, "up::hang")
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(attempt, "up::pid")
        return outcomes

    # The second call could only run once the first gave its slot back.
    assert run(gateway, body) == ["up::hang timed out", "up::pid ok"]


def test_a_slow_call_within_its_timeout_answers(gw_engine: Engine) -> None:
    gateway = Gateway(gw_engine, [upstream_spec()], limits={"up": Limits(timeout=20)})
    result = run(gateway, lambda g: g.call("up::sleep", {"seconds": 0.3}))
    assert text(result) == "slept 0.3"


def test_server_that_never_answers_fails_within_its_timeout_then_at_once(
    gw_engine: Engine, tmp_path: Path
) -> None:
    script = tmp_path / "mute.py"
    script.write_text("import sys\nsys.stdin.read()\n", encoding="utf-8")
    mute = ServerSpec(
        name="up", transport="stdio", command=sys.executable, args=(str(script),), timeout=1.0
    )
    gateway = Gateway(gw_engine, [mute])

    async def body(g: Gateway) -> list[str]:
        messages = []
        for _ in range(2):
            with pytest.raises(UpstreamError) as caught:
                await g.call("up::echo", {"text": "x"})
            messages.append(str(caught.value))
        return messages

    first, second = run(gateway, body)
    assert "'up'" in first and ("1 s" in first or "cannot be started" in first)
    assert "cannot be started" in second


def test_server_that_exits_at_start_fails_with_its_stderr(
    gw_engine: Engine, tmp_path: Path
) -> None:
    script = tmp_path / "broken.py"
    script.write_text(
        "import sys\nprint('fatal: TOKEN is not set', file=sys.stderr)\nsys.exit(3)\n",
        encoding="utf-8",
    )
    broken = ServerSpec(
        name="up", transport="stdio", command=sys.executable, args=(str(script),), timeout=20
    )
    gateway = Gateway(gw_engine, [broken])

    async def body(g: Gateway) -> str:
        with pytest.raises(UpstreamError) as caught:
            await g.call("up::echo", {"text": "x"})
        return str(caught.value)

    assert "TOKEN is not set" in run(gateway, body)


def test_progress_is_relayed_to_the_caller(gw_engine: Engine) -> None:
    gateway = Gateway(gw_engine, [upstream_spec()])
    seen: list[tuple[float, float | None, str | None]] = []

    async def report(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    result = run(gateway, lambda g: g.call("up::count", {"steps": 3}, progress=report))
    assert text(result) == "counted to 3"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


def test_a_cancelled_call_is_audited_and_leaves_the_session_usable(
    gw_engine: Engine, tmp_path: Path
) -> None:
    path = tmp_path / "calls.jsonl"
    gateway = Gateway(gw_engine, [upstream_spec()], audit=AuditLog(path))

    async def body(g: Gateway) -> str:
        await g.call("up::pid", {})
        with anyio.move_on_after(0.5):
            await g.call("up::hang", {})
        return text(await g.call("up::echo", {"text": "after"}))

    assert run(gateway, body) == "after"
    outcomes = [json.loads(line)["outcome"] for line in path.read_text().splitlines()]
    assert outcomes == ["ok", "cancelled", "ok"]


def test_unknown_server_and_prompts_are_refused_clearly(gw_engine: Engine) -> None:
    gateway = Gateway(gw_engine, [])

    async def body(g: Gateway) -> str:
        with pytest.raises(UpstreamError) as caught:
            await g.call("up::echo", {"text": "x"})
        return str(caught.value)

    assert "not configured" in run(gateway, body)


@pytest.fixture
def http_upstream() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, str(UPSTREAM), "http"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    port: list[str] = []
    reader = threading.Thread(target=lambda: port.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout=60)
    try:
        assert port and port[0].strip(), "upstream HTTP server did not start"
        yield f"http://127.0.0.1:{port[0].strip()}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_calls_reach_an_upstream_over_streamable_http(
    gw_engine: Engine, http_upstream: str
) -> None:
    spec = ServerSpec(name="up", transport="http", url=http_upstream, timeout=20)
    gateway = Gateway(gw_engine, [spec])
    seen: list[float] = []

    async def report(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async def body(g: Gateway) -> tuple[types.CallToolResult, types.CallToolResult]:
        return await g.call("up::add", {"a": 1, "b": 1}), await g.call(
            "up::count", {"steps": 2}, progress=report
        )

    added, counted = run(gateway, body)
    assert added.structured_content == {"sum": 2}
    assert text(counted) == "counted to 2" and seen == [1, 2]
