"""A consumer and a producer in another language: examples/js, on Node, against `gpuctl up`, knowing only the
published contract. Every message it receives validates against its family's schema, and the event it publishes
becomes a stored event, its nanosecond time exact."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

from gpuhealth import localauth
from tests.conftest import REPO, need
from tests.e2e.conftest import Up, gpuctl_json, wait_for

JS = REPO / "examples" / "js"


def run_example(up: Up) -> tuple[int, list[dict[str, Any]], str]:
    node = shutil.which("node")
    need(node is not None and (JS / "node_modules").is_dir(), "node and examples/js/node_modules (deploy/test-deps.sh)")
    assert node is not None
    node_name = up.info.node
    env = {
        **os.environ,
        "NATS_URL": up.info.nats_url,
        "NODE": node_name,
        "CLUSTER": up.info.cluster,
        "READER_PASSWORD_FILE": str(localauth.password_path(up.data_dir, "reader")),
        "AGENT_PASSWORD_FILE": str(localauth.password_path(up.data_dir, f"agent-{node_name}")),
        "TIMEOUT_S": "120",
    }
    r = subprocess.run([node, str(JS / "subscriber.mjs")], env=env, capture_output=True, text=True, timeout=240)
    return r.returncode, [json.loads(line) for line in r.stdout.splitlines()], r.stderr


def test_the_javascript_example_validates_everything_and_its_event_is_stored(up_stack: Up) -> None:
    rc, lines, stderr = run_example(up_stack)
    *messages, summary = lines
    assert [m for m in messages if m["errors"]] == [] and summary["invalid"] == 0, stderr
    assert rc == 0 and summary["seen"] == {"own": True, "health": True, "incident": True}, (summary, stderr)
    assert min(summary["received"].values()) >= 1 and summary["kv"]["health"] >= 1 and summary["kv"]["inventory"] == 1
    assert len(messages) == sum(summary["received"].values()) + sum(summary["kv"].values())
    published = summary["published"]

    def stored() -> list[Any]:
        _, events = gpuctl_json("events", "--kind", "xid", "--data-dir", str(up_stack.data_dir))
        assert isinstance(events, list)
        return [e for e in events if e["id"] == published["id"]]

    wait_for(lambda: stored() != [])
    (event,) = stored()
    assert (event["source"], event["xid"], event["pci_bus_id"]) == ("js-example", 79, "0000:05:00.0")
    assert event["time_ns"] == int(published["time"])  # to the nanosecond: no float on the way
