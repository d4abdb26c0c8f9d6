"""A delivered message's stream and consumer sequences, read from its ack subject in both formats."""

from __future__ import annotations

from nats.aio.msg import Msg

from gpuhealth.consumer import _sequences

V1 = "$JS.ACK.GPUHEALTH_EVENTS.rules.3.1207.88.1763700000000000000.12"
V2 = "$JS.ACK.hub.ACCHASH.GPUHEALTH_EVENTS.rules.3.1207.88.1763700000000000000.12.rAnD0m"


def test_both_ack_subject_formats_give_what_nats_py_reads() -> None:
    for reply in (V1, V2, V2.rsplit(".", 1)[0]):
        seq = Msg.Metadata._from_reply(reply).sequence
        assert _sequences(reply) == (seq.stream, seq.consumer) == (1207, 88)
