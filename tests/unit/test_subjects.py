from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpuhealth import subjects


def test_node_names_become_one_token() -> None:
    assert subjects.event_subject("gpu-01.dc1.example.com", "kmsg") == "gpuhealth.v1.event.gpu-01_dc1_example_com.kmsg"
    assert subjects.health_subject("a b*>", "pci") == "gpuhealth.v1.health.a_b__.pci"
    assert subjects.token("") == "_"


def test_node_token_of_a_family_subject() -> None:
    assert subjects.node_token_of("gpuhealth.v1.event.node-1.kmsg") == "node-1"
    assert subjects.node_token_of("other.subject") == "_"


@given(st.text(min_size=0, max_size=40))
def test_kv_keys_escape_reversibly(part: str) -> None:
    escaped = subjects.kv_escape(part)
    assert all((c.isalnum() and c.isascii()) or c in "-_/=" for c in escaped)
    assert subjects.kv_unescape(escaped) == part


def test_health_key_keeps_entities_apart() -> None:
    a = subjects.health_key("n", "pci", "0000:04:00.0")
    b = subjects.health_key("n", "pci", "0000_04_00.0")
    assert a != b
    assert a.count(".") == 2


def test_a_nodes_health_wildcard_is_a_wildcard() -> None:
    # health_subject(node, "*") would sanitise the '*' into '_' and match nothing (watch --node did).
    assert subjects.node_health_subjects("gpu.07") == "gpuhealth.v1.health.gpu_07.*"
    assert subjects.health_subject("gpu.07", "*") == "gpuhealth.v1.health.gpu_07._"
