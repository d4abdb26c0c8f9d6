"""Whether gpuctl up may drop the rules and the sink to a service user, and if not, the reason it logs."""

from __future__ import annotations

from gpuctl.privsep import ServiceUser, effective_caps, why_not

ALL_CAPS = 0x1FFFFFFFFFF
NOBODY = ServiceUser("nobody", 65534, 65534)  # nobody and nogroup: every Linux machine has them


def test_effective_caps_are_read_from_proc_status() -> None:
    text = "Name:\tgpuctl\nCapInh:\t0000000000000000\nCapEff:\t00000000000000c1\nCapBnd:\t000001ffffffffff\n"
    assert effective_caps(text) == 0xC1  # CAP_CHOWN, CAP_SETGID, CAP_SETUID


def test_a_service_user_with_the_capabilities_and_the_data_dirs_group_is_dropped_to() -> None:
    assert why_not("nobody", caps=0xC1, data_gid=None, needs_dir=True) == NOBODY
    assert why_not("nobody", caps=ALL_CAPS, data_gid=65534, needs_dir=True) == NOBODY
    # Against a ClickHouse server the sink needs no directory, so the data dir's group does not matter.
    assert why_not("nobody", caps=ALL_CAPS, data_gid=1234, needs_dir=False) == NOBODY


def test_each_reason_to_keep_them_as_root_says_what_would_let_up_drop() -> None:
    assert why_not("root", caps=ALL_CAPS, data_gid=None, needs_dir=True) == "--service-user root"
    assert why_not("no-such-user", caps=ALL_CAPS, data_gid=None, needs_dir=True) == (
        "no user 'no-such-user' (create it: useradd --system --user-group --no-create-home --shell "
        "/usr/sbin/nologin gpuhealth)"
    )
    assert why_not("nobody", caps=1 << 22, data_gid=None, needs_dir=True) == (
        "up may not drop to 'nobody' without CAP_CHOWN, CAP_SETGID, CAP_SETUID (the unit's CapabilityBoundingSet)"
    )
    assert why_not("nobody", caps=ALL_CAPS, data_gid=1234, needs_dir=True) == (
        "'nobody' is not in the data dir's group, so it cannot reach the embedded store"
    )
