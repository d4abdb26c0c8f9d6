"""gpuctl's kernel log commands: inject a fault, classify lines, scan a log."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from gpuctl.options import DataDirOpt, JsonOpt, NatsOpt, data_dir_of, print_table
from gpuhealth import client
from gpuhealth.config import read_run_info
from gpuhealth.errors import ConfigError, NotRunningError
from gpuhealth.events import KERNEL_PRIORITIES, kernel_priority
from gpuhealth.text import clip


def parse_priority(text: str) -> int:
    level = kernel_priority(text)
    if level is None:
        raise ConfigError(f"bad priority {text!r}: use one of {', '.join(KERNEL_PRIORITIES)} or 0-7")
    return level


def xid_line(xid: int, pci: str) -> str:
    """An NVRM Xid line as the driver prints it: the PCI address without its function."""
    from producers.kernel import normalise_pci
    from producers.kernel import xid_line as line
    from rules.catalog import load

    norm = normalise_pci(pci)
    if norm is None:
        raise ConfigError(f"bad PCI address {pci!r}: use e.g. 0000:04:00.0")
    entry = load().xid.get(xid)
    return line(norm[:-2], xid, entry.name if entry else "Unknown error")


def sxid_line(sxid: int, pci: str) -> str:
    """An NVSwitch SXid line as the driver prints it."""
    from producers.kernel import normalise_pci
    from rules.catalog import load

    norm = normalise_pci(pci)
    if norm is None:
        raise ConfigError(f"bad PCI address {pci!r}: use e.g. 0000:05:00.0")
    entry = load().sxid.get(sxid)
    severity = "Fatal" if entry is not None and entry.severity == "Fatal" else "Non-fatal"
    return f"nvidia-nvswitch0: SXid (PCI:{norm}): {sxid}, {severity}, {entry.name if entry else 'Unknown error'}"


def inject_fault(
    xid: Annotated[int | None, typer.Option("--xid", help="inject this NVIDIA Xid")] = None,
    sxid: Annotated[int | None, typer.Option("--sxid", help="inject this NVSwitch SXid (--pci: the NVSwitch)")] = None,
    pci: Annotated[str | None, typer.Option("--pci", help="the GPU's PCI address, e.g. 0000:04:00.0")] = None,
    kernel_message: Annotated[str | None, typer.Option("--kernel-message", help="inject this kernel line")] = None,
    priority: Annotated[str, typer.Option("--priority", help="KERN_ERR, kern.warn, … or 0-7")] = "KERN_ERR",
    kmsg_path: Annotated[Path | None, typer.Option("--kmsg-path", help="the agent's kernel log source")] = None,
    node: Annotated[str | None, typer.Option("--node", help="send it to this node's agent over NATS")] = None,
    nvml_xid: Annotated[int | None, typer.Option("--nvml-xid", help="simulated GPUs: an NVML Xid event")] = None,
    nvml_ecc_dbe: Annotated[bool, typer.Option("--nvml-ecc-dbe", help="simulated GPUs: a double-bit ECC")] = False,
    nvml_gpu_lost: Annotated[bool, typer.Option("--nvml-gpu-lost", help="simulated GPUs: the GPU is lost")] = False,
    nvml_remap: Annotated[str | None, typer.Option("--nvml-remap", help="simulated GPUs: pending or failed")] = None,
    nvml_slowdown: Annotated[bool, typer.Option("--nvml-slowdown", help="simulated GPUs: HW slowdown")] = False,
    nvml_replace: Annotated[
        bool, typer.Option("--nvml-replace", help="simulated GPUs: swap the board (new serial)")
    ] = False,
    gpu: Annotated[int, typer.Option("--gpu", help="simulated GPUs: the GPU's index")] = 0,
    force: Annotated[
        bool, typer.Option("--force", help="write into a real kernel log (/dev/kmsg) that no running gpuhealth reads")
    ] = False,
    data_dir: DataDirOpt = None,
    nats: NatsOpt = None,
) -> None:
    """Write a realistic fault record where the agent reads the kernel log, or make a simulated GPU fail:
    the whole pipeline runs."""
    nvml_actions = [a for a, on in (("xid", nvml_xid is not None), ("ecc_dbe", nvml_ecc_dbe),
                                    ("gpu_lost", nvml_gpu_lost), (f"remap_{nvml_remap}", nvml_remap is not None),
                                    ("slowdown", nvml_slowdown), ("replace", nvml_replace)) if on]  # fmt: skip
    if nvml_actions:
        if len(nvml_actions) > 1 or xid is not None or sxid is not None or kernel_message is not None:
            raise ConfigError("give one fault at a time")
        if nvml_remap not in (None, "pending", "failed"):
            raise ConfigError("--nvml-remap takes pending or failed")
        request = {"action": nvml_actions[0], "gpu": gpu, "xid": nvml_xid or 0}
        print(asyncio.run(_inject_nvml(node, request, data_dir_of(data_dir), nats)))
        return
    if sum(x is not None for x in (xid, sxid, kernel_message)) != 1:
        raise ConfigError("give exactly one of --xid, --sxid or --kernel-message (or an --nvml-… fault)")
    if xid is not None or sxid is not None:
        if pci is None:
            raise ConfigError(f"--{'x' if xid is not None else 'sx'}id needs --pci (the device's PCI address)")
        message = xid_line(xid, pci) if xid is not None else sxid_line(int(sxid or 0), pci)
    else:
        message = str(kernel_message)
    prio = parse_priority(priority)
    if node is not None:
        print(asyncio.run(_inject_remote(node, message, prio, data_dir_of(data_dir), nats)))
    else:
        print(_inject_local(message, prio, kmsg_path, data_dir_of(data_dir), force=force))


def _inject_local(message: str, prio: int, kmsg_path: Path | None, data_dir: Path, *, force: bool) -> str:
    """Append the line where this node's agent reads the kernel log (default: gpuctl up's source). Never,
    unless forced, into a real kernel log (a character device) that no running gpuhealth reads."""
    from producers.kmsg import append_record

    info = read_run_info(data_dir)
    if info is not None and not info.allow_inject:
        raise ConfigError("the running gpuhealth does not accept injections")
    if kmsg_path is None and info is None:
        raise NotRunningError(
            f"no running gpuhealth in {data_dir} reads a kernel log: nothing written (start 'gpuctl up', or name "
            "the file with --kmsg-path)"
        )
    path = kmsg_path or Path(info.kmsg_path if info else "")
    read_here = info is not None and Path(info.kmsg_path) == path
    if path.is_char_device() and not read_here and not force:
        # A fake "fallen off the bus" in the machine's real log: anything that reads it may drain this node.
        raise ConfigError(f"{path} is this machine's kernel log and no running gpuhealth reads it: add --force")
    try:
        seq = append_record(path, message, prio)
    except PermissionError as e:
        raise ConfigError(f"cannot write to {path}: permission denied (root is needed for /dev/kmsg)") from e
    except FileNotFoundError as e:
        raise ConfigError(f"cannot write to {path}: no such file") from e
    where = f"{path} (seq {seq})" if seq >= 0 else str(path)
    return f"injected into {where}: {message}"


async def _inject_nvml(node: str | None, request: dict[str, object], data_dir: Path, nats: str | None) -> str:
    """A simulated GPU fault, sent to the agent of ``node`` (default: the local gpuctl up's node)."""
    node = node or client.local_node(data_dir)
    await client.ask_agent(node, "nvml", request, data_dir, nats)
    return f"injected on node {node}, GPU {request['gpu']}: {request['action']}"


async def _inject_remote(node: str, message: str, priority: int, data_dir: Path, nats: str | None) -> str:
    await client.ask_agent(node, "inject", {"message": message, "priority": priority}, data_dir, nats)
    return f"injected on node {node}: {message}"


def parse(
    score_file: Annotated[
        Path | None, typer.Option("--score", help="a labelled JSONL set: print precision and recall instead")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Classify kernel lines from stdin: one JSON object per input line, in order.

    With --score FILE, classify a labelled set and print how right it was (--json: as JSON)."""
    from producers.kernel import classify

    if score_file is not None:
        from gpuctl.kernel_score import read_labelled, report, score

        figures = score(read_labelled(score_file))
        print(json.dumps(figures, indent=2) if json_out else report(figures))
        return
    out = sys.stdout
    for raw in sys.stdin.buffer:
        r = classify(raw.decode("utf-8", "replace").rstrip("\r\n"))
        out.write(
            json.dumps(
                {
                    "kind": r.kind,
                    "xid": r.xid,
                    "sxid": r.sxid,
                    "pci_bus_id": r.pci_bus_id,
                    "pid": r.pid,
                    "process_name": r.process,
                }
            )
            + "\n"
        )


def _kernel_lines(dmesg: str | None) -> list[str]:
    """The file, stdin ('-'), or this boot's /dev/kmsg buffer read once without blocking."""
    if dmesg == "-":
        return [raw.decode("utf-8", "replace") for raw in sys.stdin.buffer.read().splitlines()]
    if dmesg is not None:
        try:
            return Path(dmesg).read_bytes().decode("utf-8", "replace").splitlines()
        except OSError as e:
            raise ConfigError(f"cannot read {dmesg}: {e.strerror}") from e
    import os

    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise ConfigError(f"cannot read /dev/kmsg ({e.strerror}): run as root or pass --dmesg FILE") from e
    out = []
    try:
        while True:
            try:
                out.append(os.read(fd, 8192).decode("utf-8", "replace").split("\n", 1)[0])
            except BlockingIOError:
                return out
            except BrokenPipeError:
                continue  # overwritten while we read: go on with the next record
    finally:
        os.close(fd)


def scan(
    dmesg: Annotated[str | None, typer.Option("--dmesg", help="a kernel log file, or - for stdin")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Find faults in the kernel log once, with the catalog's severity and action.

    Exit 0 nothing to act on, 1 worst is Degraded, 2 worst is Unhealthy (like status)."""
    from gpuhealth.events import KernelEvent
    from producers.kernel import classify
    from producers.klog import COMPONENT_OF_KIND
    from rules import catalog, engine

    cat = catalog.load()
    findings: dict[tuple[object, ...], dict[str, object]] = {}
    state = None
    for i, line in enumerate(_kernel_lines(dmesg)):
        found = classify(line)
        if found.kind is None:
            continue
        key = (found.kind, found.xid, found.sxid, found.pci_bus_id)
        entry = cat.xid.get(found.xid or -1) if found.kind == "xid" else cat.sxid.get(found.sxid or -1)
        row = findings.setdefault(key, {
            "kind": found.kind, "xid": found.xid, "sxid": found.sxid, "pci_bus_id": found.pci_bus_id, "count": 0,
            "severity": entry.severity if entry else None, "name": entry.name if entry else None,
            "repair_actions": list(entry.ladder) if entry else [], "message": found.message,
        })  # fmt: skip
        row["count"] = int(str(row["count"])) + 1
        event = KernelEvent(id=f"scan-{i}", time=i, cluster="scan", node="scan", boot_id="scan", source="scan",
                            component=COMPONENT_OF_KIND[found.kind], kind=found.kind, message=found.message,
                            xid=found.xid, sxid=found.sxid, pci_bus_id=found.pci_bus_id)  # fmt: skip
        state, _ = engine.apply(state, event, cat)
    states = [s for s in (state.states.values() if state else []) if s.health != "Healthy"]
    worst = max((s.health for s in states), key=lambda h: ["Healthy", "Degraded", "Unhealthy"].index(h),
                default="Healthy")  # fmt: skip
    if json_out:
        verdict = [{"component": s.component, "entity": s.entity, "health": s.health, "reason": s.reason,
                    "repair_actions": list(s.actions)} for s in states]  # fmt: skip
        print(json.dumps({"findings": list(findings.values()), "states": verdict, "worst": worst}, indent=2))
    elif not findings:
        print("no faults found")
    else:
        rows = [("KIND", "CODE", "DEVICE", "COUNT", "SEVERITY", "ACTION", "MESSAGE")]
        for f in findings.values():
            code = f["xid"] or f["sxid"]
            actions = f["repair_actions"]
            rows.append((str(f["kind"]), str(code or "-"), str(f["pci_bus_id"] or "-"), str(f["count"]),
                         str(f["severity"] or "-"), str(actions[0]) if isinstance(actions, list) and actions else "-",
                         clip(str(f["message"]), 90)))  # fmt: skip
        print_table(rows)
        print(f"\nverdict: {worst}" + "".join(f"\n  {s.component} {s.entity}: {s.health}, {s.reason}" for s in states))
    raise typer.Exit({"Healthy": 0, "Degraded": 1, "Unhealthy": 2}.get(worst, 3))


def set_healthy(
    component: Annotated[str, typer.Option("--component", help="the component to clear, e.g. accelerator-nvidia-ecc")],
    reason: Annotated[str, typer.Option("--reason", help="why: kept with the record, e.g. 'GPU replaced, RMA 1234'")],
    node: Annotated[str | None, typer.Option("--node", help="the node (default: the local gpuctl up's node)")] = None,
    entity: Annotated[str | None, typer.Option("--entity", help="one entity (a PCI id); default: all of them")] = None,
    data_dir: DataDirOpt = None,
    nats: NatsOpt = None,
) -> None:
    """Clear a state by hand (the only way out of HARDWARE_INSPECTION); recorded as an event with who and why."""
    import getpass

    from gpuhealth import bus, subjects
    from gpuhealth.events import SetHealthy, encode, new_id, now_ns

    ddir = data_dir_of(data_dir)
    info = read_run_info(ddir)
    if node is None:
        if info is None:
            raise NotRunningError(f"no running gpuhealth found in {ddir}: pass --node and --nats")
        node = info.node
    if not reason.strip():
        raise ConfigError("--reason must say why")
    t = now_ns()
    event = SetHealthy(
        id=new_id(t), time=t, cluster=info.cluster if info else "", node=node, source="gpuctl", component="operator",
        target_component=component, entity=entity, user=getpass.getuser(), reason=reason,
    )  # fmt: skip

    async def send() -> None:
        nc = await client.connect(ddir, nats)
        try:
            await bus.publish_batch(
                nc.jetstream(), [(subjects.event_subject(node, "operator"), event.id, encode(event))]
            )
        finally:
            await nc.close()

    asyncio.run(send())
    print(f"set healthy: {node} {component} {entity or '(every entity)'} by {event.user}: {reason}")
