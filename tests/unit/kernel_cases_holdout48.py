"""Families holdout48 (tests/data/kernel_lines_holdout48.jsonl) showed missing or of another kind, each written from
its format with other devices and values than the labelled lines, and the informational lines of the same sources
that must stay benign."""

from __future__ import annotations

FAULTS = [
    # fs/ext4/super.c ext4_clear_journal_err: an error the journal kept from the mount before
    (
        "EXT4-fs warning (device nvme1n1p3): ext4_clear_journal_err:5912: Marking fs in need of filesystem check.",
        "fs_readonly",
    ),
    ("EXT4-fs (dm-4): Filesystem error recorded from previous mount: IO failure", "fs_readonly"),
    # dracut-initqueue.sh: the root device never came, before 'Could not boot.'
    (
        "dracut-initqueue[412]: Warning: dracut-initqueue: timeout, still waiting for following initqueue hooks:",
        "other_fault",
    ),
    # linux_nvswitch.c nvswitch_ctl_check_version: the fabric manager from another release
    ("nvidia-nvswitch: Version mismatch, kernel version 535.183.01 user version 535.161.08", "other_fault"),
]

BENIGN = [
    "dracut-initqueue[412]: Warning: dracut-initqueue: starting timeout scripts",
    "EXT4-fs (dm-4): recovery complete",
    "nvidia-nvswitch2: open (major=508)",
]
