"""Families holdout32/33 (tests/data/kernel_lines_holdout32.jsonl, 33) showed missing, of another kind or flagged, each
written from its printk format with other devices and values than the labelled lines, and the informational lines of
the same sources that must stay benign."""

from __future__ import annotations

FAULTS = [
    # an RCU stall's CPU and detector lines copied through a pager, their tab shown as '^I'
    ("[ 4412.009311] ^I3-...: (20999 ticks this GP) idle=0b2/1/0 softirq=88120/88120 fqs=5249", "soft_lockup"),
    ("^I(detected by 14, t=60002 jiffies, g=88213, q=2210)", "soft_lockup"),
]

BENIGN = [
    # Xen's own informational lines
    "(XEN) [   10.231180] Executing kexec image on cpu10",
    "(XEN) Xen version 4.17.2 (mockbuild@) (gcc (GCC) 12.2.1) debug=n Tue Oct 31 12:00:00 UTC 2023",
]

# Xen's console head and its uptime stamp come off, leaving the hypervisor's message
XEN = ("(XEN) [21971.932935] CPU5: Machine Check Exception: 5", "CPU5: Machine Check Exception: 5")
