"""Families holdout38/39 (tests/data/kernel_lines_holdout38.jsonl, 39) showed missing or of another kind, each written
from its printk format with other devices and values than the labelled lines, and the informational lines of the same
sources that must stay benign."""

from __future__ import annotations

FAULTS = [
    # Lustre's debug log dumped after an LBUG; its service-thread watchdog, 2.12+ and 2.x spellings
    ("LustreError: dumping log to /tmp/lustre-log.1712000000.20417", "other_fault"),
    ("[ 912.3] LNetError: dumping log to /var/log/lustre/lustre-log.1650000001.5532", "other_fault"),
    (
        "LNet: Service thread pid 8812 was inactive for 40.07s. The thread might be hung, or it might only be slow and"
        " will resume later. Dumping the stack trace for debugging purposes:",
        "hung_task",
    ),
    (
        "Lustre: mdt00_012: service thread pid 30117 was inactive for 612.221 seconds. Watchdog stack traces are"
        " limited to 3 per 300 seconds, skipping this one.",
        "hung_task",
    ),
    # qla2xxx: frames lost on the FC link, the ISP's system error, a firmware pause and a mailbox timeout
    ("qla2xxx [0000:81:00.1]-301d:3: Dropped frame(s) detected (0x1000 of 0x8000 bytes).", "other_fault"),
    ("qla2xxx [0000:05:00.0]-5003:1: ISP System Error - mbx1=4b8fh mbx2=10h mbx3=2ah mbx7=0h.", "other_fault"),
    ("qla2xxx [0000:3b:00.0]-5003:2: RISC paused -- HCCR=40, Dumping firmware.", "other_fault"),
    ("qla2xxx [0000:d8:00.1]-1015:7: MBX Command timeout for cmd 54, iocontrol=8 jiffies=1000a2f31.", "other_fault"),
    (
        "qla2xxx [0000:d8:00.0]-d001:2: Firmware dump saved to temp buffer (2/00000000c0ffee00), dump status flags"
        " (0x3f).",
        "other_fault",
    ),
    # SCSI sense whose key, code or qualifier is the vendor's
    ("sd 1:0:2:0: [sdd] tag#301 Sense Key : Vendor Specific [current] [descriptor]", "other_fault"),
    ("sd 4:0:0:0: [sde] Sense Key : 0x9 [current]", "other_fault"),
    ("sd 2:0:1:0: [sdc] tag#77 <<vendor>>ASC=0x80 ASCQ=0x1", "other_fault"),
    ("sd 0:0:5:0: [sdf] ASC=0x44 <<vendor>>ASCQ=0x95", "other_fault"),
    # exFAT and FAT corruption
    ("exFAT-fs (sdb1): start_clu is invalid cluster(0x1ffff)", "fs_readonly"),
    ("exFAT-fs (mmcblk0p1): error, invalid access to FAT (entry 0x00012f00)", "fs_readonly"),
    ("FAT-fs (sdc1): error, fat_get_cluster: invalid cluster chain (i_pos 523264)", "fs_readonly"),
    ("exFAT-fs (nvme1n1p3): bogus number of FAT structure", "fs_readonly"),
    # the Freescale/NXP DDR controller's ECC detail lines (the older mpc85xx name too)
    ("EDAC FSL_DDR MC1: Faulty ECC bit: 3", "mce_edac"),
    ("EDAC FSL_DDR MC0: Captured Data / ECC:\t0x00000000_00000010 / 0x5c", "mce_edac"),
    ("EDAC MPC85xx MC1: Err Detect Register: 0x00000008", "mce_edac"),
    ("EDAC FSL_DDR MC0: Err addr: 0x3f2a1c40", "mce_edac"),
    # nouveau's GSP firmware refused on another device
    ("[ 6.2] nouveau 0000:2d:00.0: gsp: Failed to load required firmware for device.", "gsp"),
    # nfsd/lockd failing to answer a client over TCP
    ("rpc-srv/tcp: lockd: got error -104 when sending 140 bytes - shutting down socket", "nfs"),
    ("rpc-srv/tcp: nfsd: got short write -11 when sending 65640 bytes - shutting down socket", "nfs"),
    # aacraid's firmware stopped
    ("aacraid 0000:03:00.0: Adapter health - 239", "other_fault"),
    ("aacraid: Host adapter BLINK LED 0xef", "other_fault"),
    # a link that never reports Data Link Layer active; a link trained only by the quirk's retry
    ("pcieport 10000:e0:1d.0: Data Link Layer Link Active not set in 1000 msec", "pcie_link"),
    ("pci 0000:02:00.0: broken device, retraining non-functional downstream link at 2.5GT/s", "pcie_link"),
    # mlx5's lost event interrupts, found and recovered
    ("mlx5_core 0000:3b:00.0: mlx5_cmd_eq_recover:253:(pid 771): Recovered 3 EQEs on cmd_eq", "infiniband"),
    ("mlx5_core 0000:af:00.1 ens2f1np1: Recovered 12 eqes on EQ 0x19", "infiniband"),
    # an IPoIB interface's stalled queue, a child and the 6.x spelling
    ("NETDEV WATCHDOG: ib1.8002 (): transmit queue 3 timed out", "infiniband"),
    ("ib0: NETDEV WATCHDOG: CPU: 4: transmit queue 0 timed out 5120 ms", "infiniband"),
    # md: a degraded array started unclean, refused, a raid10 read redirected
    ("md/raid:md0: starting dirty degraded array - data corruption possible.", "other_fault"),
    ("md/raid:md2: cannot start dirty degraded array.", "other_fault"),
    ("md/raid10:md1: sdc2: redirecting sector 1048576 to another mirror", "other_fault"),
]

BENIGN = [
    # Lustre's watchdog seeing the slow thread finish
    "LNet: Service thread pid 8812 completed after 41.20s. This indicates the system was overloaded (too many"
    " service threads, or there were not enough hardware resources).",
    # qla2xxx's adapter found at probe
    "qla2xxx [0000:81:00.0]-00fb:1: QLogic QLE2692 - QLogic 16Gb FC Dual-port HBA.",
    # the NXP DDR driver's EDAC registration at boot
    "EDAC MC1: Giving out device to module fsl_ddr_edac controller fsl_mc_err: DEV fsl_mc_err (INTERRUPT)",
    # nouveau's GSP informational lines
    "nouveau 0000:2d:00.0: gsp: RM version: 535.113.01",
    # nfsd starting, md assembling cleanly, mlx5 Ethernet carrier back
    "NFSD: starting 90-second grace period (net f0000000)",
    "md/raid10:md1: active with 4 out of 4 devices",
    "md/raid:md0: device sdb1 operational as raid disk 1",
    "mlx5_core 0000:af:00.1 ens2f1np1: Link up",
    # aacraid's interface at probe
    "aacraid: Comm Interface type3 enabled",
]
