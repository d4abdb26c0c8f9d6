"""The agent process without its bus: it runs, serves its API, keeps what it saw through kills, and sends it once."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from nats.js import JetStreamContext

from gpuhealth import bus, subjects
from gpuhealth.config import NodeIdentity
from gpuhealth.events import EVENT_DECODER, Event, NvmlEvent, SetHealthy, encode, new_id, now_ns
from gpuhealth.natsd import EmbeddedNats
from producers.fake_nvml import FakeNvml
from producers.nvml import NvmlProducer
from producers.outbox import Outbox
from producers.spool import Spool


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Agent:
    """``python -m producers.agent`` on a simulated node, its kernel log a file, its NATS maybe nowhere."""

    def __init__(self, tmp: Path, nats_url: str, *extra: str, wrap: tuple[str, ...] = ()) -> None:
        self.tmp, self.url, self.extra, self.wrap = tmp, nats_url, extra, wrap  # wrap: a command that execs the rest
        (tmp / "kmsg").touch()
        self.proc: subprocess.Popen[bytes] | None = None
        self.sources: dict[str, str] = {}

    async def start(self, timeout: float = 60) -> None:
        read_fd, write_fd = os.pipe()
        with (self.tmp / "agent.log").open("ab") as log:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(  # noqa: ASYNC220
                [*self.wrap, sys.executable, "-m", "producers.agent", "--nats", self.url, "--node", "node-1", "--simulate-gpus",
                 "1", "--kmsg-path", str(self.tmp / "kmsg"), "--data-dir", str(self.tmp / "data"), "--sysfs-root",
                 str(self.tmp / "nosys"), "--api-listen", "127.0.0.1:0", "--api-tls", "off", "--ready-fd", str(write_fd), *self.extra],
                pass_fds=(write_fd,), stdout=log, stderr=log,
            )  # fmt: skip
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as ready:
            try:
                line = await asyncio.wait_for(asyncio.to_thread(ready.readline), timeout)
            except TimeoutError:
                self.kill()  # which ends the read, and the thread doing it
                raise AssertionError(f"not ready in {timeout}s:\n{(self.tmp / 'agent.log').read_text()}") from None
        assert line, (self.tmp / "agent.log").read_text()
        self.sources = json.loads(line)["sources"]

    def api(self) -> str:
        return "http://" + self.sources["api"].removeprefix("ok: http://")

    def get(self, path: str) -> Any:
        return json.loads(self.text(path))

    def text(self, path: str) -> str:
        with urllib.request.urlopen(self.api() + path, timeout=10) as r:
            return str(r.read().decode())

    def post(self, path: str, body: object) -> tuple[int, Any]:
        token = (self.tmp / "data" / "agent" / "api-token").read_text().strip()
        req = urllib.request.Request(self.api() + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Authorization": f"Bearer {token}"})  # fmt: skip
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def own_states(self) -> dict[str, tuple[str, str]]:
        return {s["name"]: (s["health"], s["reason"]) for c in self.get("/v1/states")
                if c["component"] == "gpuhealth-agent" for s in c["states"]}  # fmt: skip

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


async def until(predicate: Any, timeout: float = 60) -> None:
    async with asyncio.timeout(timeout):
        while not await asyncio.to_thread(predicate):
            await asyncio.sleep(0.2)


async def stored_events(js: JetStreamContext) -> list[Event]:
    sub = await js.pull_subscribe("gpuhealth.v1.event.>", stream=subjects.EVENTS.name)
    out: list[Event] = []
    try:
        while True:
            try:
                msgs = await sub.fetch(500, timeout=1)
            except TimeoutError:
                return out
            out += [EVENT_DECODER.decode(m.data) for m in msgs]
            for m in msgs:
                await m.ack()
    finally:
        await sub.unsubscribe()


async def test_the_agent_starts_and_answers_without_its_bus_and_says_so(tmp_path: Path) -> None:
    port = free_port()
    agent = Agent(tmp_path, f"nats://127.0.0.1:{port}")
    server = EmbeddedNats(tmp_path / "nats", auth=None, port=port)
    try:
        await agent.start(timeout=30)
        assert agent.sources["bus"].startswith("unavailable") and agent.sources["nvml"] == "ok: 1 GPUs"
        assert agent.get("/healthz") == {"status": "ok", "version": "v1"}
        assert agent.get("/machine-info")["node"] == "node-1"
        assert agent.own_states()["bus"] == ("Unknown", "bus unavailable: not connected yet")
        assert "bus unavailable" in (tmp_path / "agent.log").read_text()
        await server.start()
        await until(lambda: agent.own_states()["bus"] == ("Healthy", "bus ok"))
    finally:
        agent.stop()
        await server.stop()


async def test_what_the_agent_saw_with_the_bus_down_survives_kills_and_is_stored_once(tmp_path: Path) -> None:
    port = free_port()
    agent = Agent(tmp_path, f"nats://127.0.0.1:{port}")
    server = EmbeddedNats(tmp_path / "nats", auth=None, port=port)
    try:
        await agent.start(timeout=30)
        # An operator's word through the local API, while the bus is away: taken once it answers 200 …
        code, answer = agent.post("/v1/health-states/set-healthy?components=accelerator-nvidia-error-xid",
                                  {"reason": "board replaced"})  # fmt: skip
        assert (code, answer["events"]) == (200, 1)
        agent.kill()  # … even if the agent dies right after, and again before the bus comes back.
        await agent.start(timeout=30)
        agent.kill()
        await agent.start(timeout=30)
        await server.start()
        nc = await bus.connect(server.url, "test", retry_for=10)
        js = nc.jetstream()
        await bus.provision(js)  # as the services do; the agent only creates what is missing

        def said(events: list[Event]) -> list[SetHealthy]:
            return [e for e in events if isinstance(e, SetHealthy) and e.reason == "board replaced"]

        async def arrived() -> list[SetHealthy]:
            async with asyncio.timeout(60):
                while not (found := said(await stored_events(js))):
                    await asyncio.sleep(0.2)
            return found

        (first,) = await arrived()
        assert (first.target_component, first.node) == ("accelerator-nvidia-error-xid", "node-1")
        agent.kill()  # acknowledged: a restart must not send it again
        await agent.start(timeout=30)
        await until(lambda: agent.own_states()["bus"][0] == "Healthy")
        assert [e.id for e in said(await stored_events(js))] == [first.id]
        await nc.close()
    finally:
        agent.stop()
        await server.stop()


async def test_a_full_spool_refuses_new_records_and_says_so(tmp_path: Path) -> None:
    agent = Agent(tmp_path, f"nats://127.0.0.1:{free_port()}", "--spool-max-bytes", "4000")
    try:
        await agent.start(timeout=30)
        codes = [agent.post("/v1/health-states/set-healthy?components=memory", {"reason": f"try {i}"})[0]
                 for i in range(20)]  # fmt: skip
        assert codes[0] == 200 and codes[-1] == 503, codes
        refused = codes.count(503)
        health, reason = agent.own_states()["spool"]
        assert health == "Degraded" and reason.startswith("spool full") and f"{refused} refused" in reason
        assert f"gpuhealth_agent_spool_refused_total {float(refused)}" in agent.text("/metrics")
    finally:
        agent.stop()


async def test_nvml_faults_seen_with_the_bus_down_reach_the_stream_after_a_crash(
    tmp_path: Path, nats_url: str, identity: NodeIdentity
) -> None:
    # The finding: an NVML Xid 79 and an ECC DBE, seen while the stream refused writes, died with the agent.
    fake = FakeNvml(1, seed=identity.node)
    outbox = Outbox(Spool(tmp_path / "spool"))
    nvml = NvmlProducer(fake, identity, tmp_path / "nosys", outbox.publish, poll_interval=3600)
    await nvml.open()
    stop = asyncio.Event()
    task = asyncio.create_task(nvml.run(stop))
    fake.inject_xid(0, 79)
    fake.inject_ecc(0, double_bit=True)
    async with asyncio.timeout(20):
        while outbox.spool.records < 2:
            await asyncio.sleep(0.05)
    # The crash: nothing closed, nothing flushed, no sender ever ran.
    stop.set()
    task.cancel()
    nvml.close()
    del outbox
    restarted = Outbox(Spool(tmp_path / "spool"))
    nc = await bus.connect(nats_url, "test", retry_for=10)
    js = nc.jetstream()
    await bus.provision(js)
    sender = asyncio.create_task(restarted.run_connected(js, stop := asyncio.Event()))
    async with asyncio.timeout(20):
        while restarted.spool.records:
            await asyncio.sleep(0.05)
    stop.set()
    await sender
    kinds = [(e.kind, e.xid) for e in await stored_events(js) if isinstance(e, NvmlEvent)]
    assert kinds == [("xid", 79), ("ecc_dbe", None)]
    await nc.close()


def operator_said(identity: NodeIdentity, reason: str) -> tuple[str, str, bytes]:
    e = SetHealthy(id=new_id(), time=now_ns(), cluster=identity.cluster, node=identity.node, source="api",
                   component="operator", target_component="memory", user="test", reason=reason)  # fmt: skip
    return subjects.event_subject(identity.node, "api"), e.id, encode(e)


async def test_events_the_spool_cannot_write_go_from_memory_and_into_the_spool_once_it_writes(
    tmp_path: Path, nats_url: str, identity: NodeIdentity
) -> None:
    # A file where the spool's directory should be: every write fails, as on a read-only or full data dir.
    where = tmp_path / "spool"
    where.write_bytes(b"")
    outbox = Outbox(Spool(where))
    assert outbox.spool.cannot_persist.startswith("cannot persist: File exists")
    await outbox.publish([operator_said(identity, "a")])  # taken, in memory
    assert len(outbox.unspooled) == 1
    nc = await bus.connect(nats_url, "test", retry_for=10)
    js = nc.jetstream()
    await bus.provision(js)

    async def reasons() -> list[str]:
        return [e.reason for e in await stored_events(js) if isinstance(e, SetHealthy)]

    sender = asyncio.create_task(outbox.run_connected(js, stop := asyncio.Event()))
    async with asyncio.timeout(20):
        while not outbox.sent:
            await asyncio.sleep(0.05)
    assert outbox.unspooled == []
    where.unlink()  # writable again: the sender's retry finds it with nothing to write
    async with asyncio.timeout(20):
        while outbox.spool.cannot_persist:
            await asyncio.sleep(0.05)
    stop.set()
    await sender
    shutil.rmtree(where)
    where.write_bytes(b"")
    await outbox.publish([operator_said(identity, "b")])
    assert len(outbox.unspooled) == 1 and outbox.spool.records == 0
    where.unlink()
    await outbox.publish([])  # the next publish (or the sender's retry) moves what memory holds to disk
    assert (outbox.unspooled, outbox.spool.records, outbox.spool.cannot_persist) == ([], 1, "")
    outbox.spool.close()
    restarted = Outbox(Spool(where))  # and so it survives a restart
    sender = asyncio.create_task(restarted.run_connected(js, stop := asyncio.Event()))
    async with asyncio.timeout(20):
        while restarted.spool.records:
            await asyncio.sleep(0.05)
    stop.set()
    await sender
    assert sorted(await reasons()) == ["a", "b"]
    await nc.close()
