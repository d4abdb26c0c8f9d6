"""Families holdout50/51 (tests/data/kernel_lines_holdout50.jsonl, 51) showed missing or of another kind, each written
from its printk format with other devices and values than the labelled lines (their siblings and page-cut forms too),
and the informational lines of the same sources that must stay benign."""

from __future__ import annotations

FAULTS = [
    # XFS's corruption reports without their 'XFS (dev): ' head, or with a glued one
    (
        "Metadata corruption detected at xfs_da3_node_read_verify+0x10c/0x130 [xfs], xfs_da3_node block 0x78",
        "fs_readonly",
    ),
    ("XFS(sdc1) Metadata corruption detected at xfs_dir3_block_verify 0x4c/0x70 [xfs]", "fs_readonly"),
    ("Corruption detected. Unmount and run xfs_repair", "fs_readonly"),
    (
        "Corruption of in-memory data (0x8) detected at xfs_trans_cancel+0x124/0x150 [xfs] (fs/xfs/xfs_trans.c:1097)."
        "  Shutting down filesystem.",
        "fs_readonly",
    ),
    ("Log I/O Error Detected. Shutting down filesystem", "fs_readonly"),
    ("XFS (nvme0n1p3): Corruption detected in superblock incompatible features (0x40)!", "fs_readonly"),
    # 3ware 9000 / 7000-8000 / SAS controllers: the driver's and the controller's errors, ERROR and WARNING AENs
    ("3w-9xxx: scsi4: ERROR: (0x06:0x000D): PCI Abort: clearing.", "other_fault"),
    ("3w-9xxx: scsi0: AEN: WARNING (0x04:0x0008): Unclean shutdown detected:unit=0.", "other_fault"),
    ("3w-sas: scsi2: AEN: ERROR (0x04:0x0002): Degraded unit:unit=1, port=3.", "other_fault"),
    ("3w-xxxx: scsi1: AEN: ERROR: Drive error: Port #5.", "other_fault"),
    ("3w-xxxx: scsi2: Command failed: status = 0xc7, flags = 0x1b, unit #0.", "other_fault"),
    ("3w-xxxx: scsi0: Microcontroller Error: clearing.", "other_fault"),
    # a SCSI reservation held by another initiator
    ("sd 3:0:1:4: reservation conflict", "other_fault"),
    ("st 1:0:3:0: reservation conflict", "other_fault"),
    # s390's zPCI error events and the recovery's failures
    ("zpci: 0003:00:00.0: Event 0x17 reports an error for PCI function 0x2a", "pcie_aer"),
    ("zpci: 0001:00:00.0: Automatic recovery failed after MMIO re-enable", "pcie_aer"),
    ("zpci: 0007:00:00.0: The reset request failed", "pcie_aer"),
    ("zpci: 0002:00:00.0: The mlx5_core driver bound to the device does not support error recovery", "pcie_aer"),
    # Lustre's target refusing a new client during recovery, pNFS's block device
    (
        "testfs-MDT0000: Denying connection for new client 1c2d3e4f-aaaa-bbbb-cccc-0123456789ab (at 10.1.2.3@o2ib), "
        "waiting for 12 known clients (3 recovered, 1 in progress, and 0 evicted) to recover in 4:59",
        "nfs",
    ),
    ("pNFS: failed to open device /dev/mapper/3600a0b80002f5c6a0000 (-6)", "nfs"),
    ("pNFS: failed to open device 253:4 (-19)", "nfs"),
    # MetaX GPU fault reports
    ("METAX.C500.ATU.ERROR hwip SDMA1 fault code(3) perm code: 1", "other_fault"),
    ("[ 812.44] METAX.B10200.MMU.ERROR xpid 4 vfid 2 vf 1 page va 7f0010000", "other_fault"),
    # dev_watchdog's line cut after the queue, or read with 'NETDEV' taken for a host
    ("NETDEV WATCHDOG: enp5s0 (r8169): transmit queue 0", "other_fault"),
    ("2021-03-01 08:00:12 NETDEV WATCHDOG: eno2 (tg3): transmit queue 3 timed out", "other_fault"),
    # ixgbe's surprise removal and the MDIO bus torn down after it
    ("ixgbe 0000:3b:00.1: Adapter removed", "pcie_link"),
    ("ixgbe-mdio-0000:3b:00.1: not in UNREGISTERED state", "other_fault"),
    ("fixed-0: not in ALLOCATED or UNREGISTERED state", "other_fault"),
    # an mlx5 Ethernet netdev's TX timeout is the NIC's; an IPoIB netdev's stays the fabric's
    ("mlx5_core 0000:5e:00.1 enp94s0f1np1: TX timeout detected", "other_fault"),
    (
        "mlx5_core 0000:3b:00.0 eth2: TX timeout on queue: 7, SQ: 0x1a2, CQ: 0x4f1, SQ Cons: 0x10 SQ Prod: 0x2c, "
        "usecs since last trans: 12004000",
        "other_fault",
    ),
    (
        "mlx5_core 0000:3b:00.0 ib0: TX timeout on queue: 1, SQ: 0x1a2, CQ: 0x4f1, SQ Cons: 0x10 SQ Prod: 0x2c, "
        "usecs since last trans: 12004000",
        "infiniband",
    ),
    # a ps-style hung task with a fourth number before the flags
    ("mysqld          D ffff8810a1b2c3d0     0 41022  40811 41022 0x00000080", "hung_task"),
]

BENIGN = [
    "3w-9xxx: scsi0: AEN: INFO (0x04:0x0029): Verify started:unit=0.",
    "3w-9xxx: scsi1: AEN: INFO (0x04:0x002B): Verify completed:unit=2.",
    "3w-xxxx: scsi0: AEN: INFO: Rebuild complete: Unit #1.",
    "3w-sas: scsi3: AEN: INFO (0x04:0x0053): Battery capacity test is overdue:.",
    "zpci: 0005:00:00.0: Initiating reset",
    "zpci: 0005:00:00.0: Unblocking device access for examination",
    "zpci: 0005:00:00.0: The device is ready to resume operations",
    "pNFS: using block device sdf (reserved)",
    "METAX.B10200.ATU.INFO atu 0x1 init done",
]
