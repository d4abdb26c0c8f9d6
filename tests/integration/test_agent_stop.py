"""SIGTERM of the agent with events not yet acknowledged: it sends them first while the bus takes them (a few
seconds at most), and what it could not send waits in the spool for the next start."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

from nats.aio.client import Client as NATS

from gpuhealth import bus, subjects
from gpuhealth.events import EVENT_DECODER, SetHealthy
from gpuhealth.natsd import EmbeddedNats
from producers.spool import Spool
from tests.integration.test_agent_outbox import Agent, free_port, stored_events, until

HELD = [f"held {i}" for i in range(5)]


async def operator_reasons(nc: NATS) -> list[str]:
    return sorted(e.reason for e in await stored_events(nc.jetstream()) if isinstance(e, SetHealthy))


def spooled_reasons(where: Path) -> list[str]:
    items, _ = Spool(where).read(1000)
    events = [EVENT_DECODER.decode(payload) for subject, _, payload in items if ".event." in subject]
    return sorted(e.reason for e in events if isinstance(e, SetHealthy))


def say_set_healthy(agent: Agent) -> None:
    for reason in HELD:
        code, _ = agent.post("/v1/health-states/set-healthy?components=memory", {"reason": reason})
        assert code == 200


def terminate(agent: Agent) -> float:
    """SIGTERM; the seconds it took to exit (cleanly)."""
    assert agent.proc is not None
    started = time.monotonic()
    agent.proc.send_signal(signal.SIGTERM)
    assert agent.proc.wait(60) == 0, (agent.tmp / "agent.log").read_text()
    return time.monotonic() - started


async def test_a_terminated_agent_sends_what_its_spool_holds_before_it_exits(
    tmp_path: Path, nats_url: str, nc: NATS
) -> None:
    agent = Agent(tmp_path, nats_url)
    try:
        await agent.start(timeout=60)
        await until(lambda: agent.own_states()["bus"][0] == "Healthy")
        await nc.jetstream().delete_stream(subjects.EVENTS.name)  # the bus refuses the agent's events a while
        say_set_healthy(agent)
        await until(lambda: agent.own_states()["bus"][0] != "Healthy")
        assert agent.proc is not None
        # Frozen, the agent cannot retry: the stream comes back and the SIGTERM arrives with everything unsent.
        agent.proc.send_signal(signal.SIGSTOP)
        await bus.provision(nc.jetstream())
        agent.proc.send_signal(signal.SIGTERM)
        agent.proc.send_signal(signal.SIGCONT)
        assert await asyncio.to_thread(agent.proc.wait, 60) == 0
        assert await operator_reasons(nc) == HELD
        assert Spool(tmp_path / "data" / "agent" / "spool").records == 0
    finally:
        agent.stop()


async def test_a_terminated_agent_without_its_bus_exits_soon_and_sends_its_spool_at_the_next_start(
    tmp_path: Path,
) -> None:
    port = free_port()
    agent = Agent(tmp_path, f"nats://127.0.0.1:{port}")
    server = EmbeddedNats(tmp_path / "nats", auth=None, port=port)
    try:
        await agent.start(timeout=60)
        say_set_healthy(agent)
        took = await asyncio.to_thread(terminate, agent)
        assert took < 30  # the flush is bounded: a few seconds, not the supervisor's patience
        assert spooled_reasons(tmp_path / "data" / "agent" / "spool") == HELD
        url = await server.start()
        nc = await bus.connect(url, "test", retry_for=10)
        await bus.provision(nc.jetstream())
        await agent.start(timeout=60)
        async with asyncio.timeout(60):
            while await operator_reasons(nc) != HELD:
                await asyncio.sleep(0.2)
        await nc.close()
    finally:
        agent.stop()
        await server.stop()
