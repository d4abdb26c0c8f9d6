"""Families holdout59 (tests/data/kernel_lines_holdout59.jsonl, cluster operations) showed missing or of another kind,
each written from its printk format with other devices and values than the labelled lines, with the same drivers'
informational lines that must stay benign."""

from __future__ import annotations

FAULTS = [
    # drivers/block/rbd.c: the Ceph block device's I/O and lock failures, with the other Ceph clients
    ("rbd: rbd0: write at objno 1024 0~65536 result -108", "nfs"),
    ("[  12.5] rbd: rbd7: child read result -5", "nfs"),
    ("rbd: rbd3: failed to acquire exclusive lock: -110", "nfs"),
    ("rbd: rbd1: blocklist of client4151 failed: -13", "nfs"),
    # net/sunrpc: the NFSv4.1 backchannel's unknown reply, rpcdebug's socket error; fs/nfs DESTROY_SESSION
    ("receive_cb_reply: Got unrecognized reply: calldir 0x1 xpt_bc_xprt ffff8a01c2d0e000 xid 9e5d1c0a", "nfs"),
    ("svc: receive_cb_reply: Got unrecognized reply: calldir 0x1 xpt_bc_xprt 0000000012345678 xid 00000001", "nfs"),
    ("RPC:       xs_error_report client ffff9b2c4e6d1000, error=104...", "nfs"),
    ("NFS: Got error -10008 from the server on DESTROY_SESSION. Session has been destroyed regardless...", "nfs"),
    ("NFS: Got error -5 from the server nfs01.example.org on DESTROY_SESSION. Session has been destroyed regardless...", "nfs"),
    # fs/xfs/xfs_log.c xlog_write: the log's reservation overrun, then its shutdown
    ("XFS (dm-3): ctx ticket reservation ran out. Need to up reservation", "fs_readonly"),
    ("XFS (sdb1): xlog_write: reservation ran out. Need to up reservation", "fs_readonly"),
    # mlx4 (before 4.17) and MLNX_OFED's mlx5: a link trained below what the adapter supports
    ("mlx4_core 0000:81:00.0: PCIe link width is x4, device supports x8", "pcie_link"),
    ("mlx4_core 0000:81:00.0: PCIe link speed is 2.5GT/s, device supports 8.0GT/s", "pcie_link"),
    ("mlx4_core 0000:81:00.0: PCIe BW is different than device's capability", "pcie_link"),
    ("mlx5_core 0000:3b:00.0: mlx5_pcie_print_link_status:405:(pid 1): PCIe speed is lower than device's capability", "pcie_link"),
]  # fmt: skip

BENIGN = [
    # the same lines where the link is all the adapter supports
    "mlx4_core 0000:81:00.0: PCIe link width is x8, device supports x8",
    "mlx4_core 0000:81:00.0: PCIe link speed is 8.0GT/s, device supports 8.0GT/s",
    "mlx5_core 0000:3b:00.0: PCIe link width is x16, device supports x16",
    # rpcdebug's socket report without an error, the rbd device's mapping
    "RPC:       xs_error_report client ffff9b2c4e6d1000, error=0...",
    "rbd: rbd0: capacity 10737418240 features 0x3d",
    "XFS (dm-3): Ending clean mount",
]
