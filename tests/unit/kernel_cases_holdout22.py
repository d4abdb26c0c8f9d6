"""Families holdout22 and holdout23 (tests/data/kernel_lines_holdout22.jsonl, holdout23) showed missing or of another kind, each written from its
printk format with other devices and values than the labelled lines, and the informational lines of the same sources
that must stay benign."""

from __future__ import annotations

FAULTS = [
    # aer.c aer_print_port_info through pci_printk (4.x): no 'AER: ' prefix
    ("pcieport 0000:00:1c.0: Corrected error received: 0000:01:00.0", "pcie_aer"),
    ("[ 12.5] pcieport 0000:40:03.1: Uncorrected (Fatal) error received: 0000:41:00.0", "pcie_aer"),
    ("pcieport 0000:00:01.0: Multiple Corrected error received: 0000:02:00.1", "pcie_aer"),
    # aer.c's detail line cut after 'error' by a wrap; edr.c's end of a containment event
    ("[ 9.1] pcieport 0000:00:03.0:   device [8086:2f08] error", "pcie_aer"),
    ("pcieport 0000:17:02.0: EDR: DPC port successfully recovered", "pcie_aer"),
    # mce/core.c: CPUs that never joined a machine check
    ("mce: Timeout: Not all CPUs entered broadcast exception handler", "mce_edac"),
    ("[ 40.2] mce: Not all CPUs (0-15) entered the broadcast exception handler.", "mce_edac"),
    ("mce: CPUs not responding to MCE broadcast (may include false positives): 2,5", "mce_edac"),
    ("mce: Timeout: Subject CPUs unable to finish machine check processing", "mce_edac"),
    # pci.c's link-limited bandwidth and power-up failure, cut by a wrap
    ("nvidia 0000:41:00.0: 63.008 Gb/s available PCIe bandwidth,", "pcie_link"),
    ("[ 12.0] pci 0000:05:00.0: Unable to change power state from", "pcie_link"),
    # edac_mce_amd.c 2.6.3x: the northbridge bank decoded without '[Hardware Error]: '
    ("[ 88.1]  Northbridge Error, node 3", "mce_edac"),
    ("CRC error on link.", "mce_edac"),
    ("L3 Cache Data error.", "mce_edac"),
    ("WDT error: NB transaction timeout.", "mce_edac"),
    ("DRAM Address/Control Parity error.", "mce_edac"),
    ("ECC error in L3 Cache Data.", "mce_edac"),
    ("L3 Cache Tag error.", "mce_edac"),
    # the same decoder's bank headers and status lines
    ("  Data Cache Error: ECC error during data copyback.", "mce_edac"),
    (" Instruction Cache Error: Parity error during data load.", "mce_edac"),
    (" Bus Unit Error: System Read Data Error.", "mce_edac"),
    (" FR Error: CPU Watchdog timer expire.", "mce_edac"),
    (" Northbridge Error, node 1, core: 2", "mce_edac"),
    (" Error: Uncorrected, Report Error: yes, MiscV: valid, CPU context corrupt: yes, UECC Error", "mce_edac"),
    (" Memory/Cache error, Transaction: DRD, Type: DATA, Cache Level: L2", "mce_edac"),
    (" Bus (Link/DRAM) error", "mce_edac"),
    # pciehp_ctrl.c before 3.x: a slot's devices removed
    ("pciehp 0000:80:07.0:pcie24: Disabling domain:bus:device=0000:85:00", "pcie_link"),
    # libata EH: the reset forced, the device given up on
    ("ata7: device not ready (errno=-5), forcing hardreset", "other_fault"),
    ("[ 301.2] ata3.01: disabled", "other_fault"),
    ("ata5.00: disable device", "other_fault"),
    ("ata2: EH pending after 5 tries, giving up", "other_fault"),
    ("ata6.00: qc timeout (cmd 0xec)", "other_fault"),
    ("[ 33.0] ata1.00: qc timeout after 5000 msecs (cmd 0xef)", "other_fault"),
    ("ata4.00: limiting speed to UDMA/100:PIO4", "other_fault"),
    # ext4 mpage_map_and_submit_extent: EROFS/EUCLEAN the filesystem's, another error the disk's
    (
        "EXT4-fs (vda1): delayed block allocation failed for inode 8812 at logical offset 17 with max blocks 2 with "
        "error -117",
        "fs_readonly",
    ),
    (
        "EXT4-fs (nvme0n1p2): delayed block allocation failed for inode 40 at logical offset 0 with max blocks 16 with "
        "error -30",
        "fs_readonly",
    ),
    (
        "EXT4-fs (dm-0): delayed block allocation failed for inode 262 at logical offset 0 with max blocks 1 with error -5",
        "other_fault",
    ),
    # scsi_print_result before 4.x, a failed command
    ("sd 2:0:1:0: [sdc] Result: hostbyte=DID_NO_CONNECT driverbyte=DRIVER_OK", "other_fault"),
    ("sd 6:0:0:0: [sdf] Result: hostbyte=DID_OK driverbyte=DRIVER_TIMEOUT", "other_fault"),
    ("sd 0:0:0:0: [sda] Result: hostbyte=0x00 driverbyte=0x08", "other_fault"),
    # nvme core: a set-features or identify command the controller never answered
    ("nvme nvme2: failed to set APST feature (-4)", "other_fault"),
    ("nvme nvme1: could not set timestamp (-19)", "other_fault"),
    ("nvme nvme0: failed to set host behavior (-110)", "other_fault"),
    # nouveau gk104 fifo recovery
    ("nouveau 0000:03:00.0: fifo: engine 0: scheduled for recovery", "other_fault"),
    ("nouveau 0000:0a:00.0: fifo: runlist 2: scheduled for recovery", "other_fault"),
    # print_oops_end_marker in 2.6.2x
    ("[ 55.3] --[ end trace 1a2b3c4d5e6f7a8b ]--", "other_fault"),
]

BENIGN = [
    "nvme nvme1: failed to set APST feature (2)",
    "nvme nvme0: could not set timestamp (8194)",
    "ata3: SATA link up 6.0 Gbps (SStatus 133 SControl 300)",
    "ata3.00: configured for UDMA/133",
    "ata2.00: ATA-8: ST1000DM003, CC45, max UDMA/133",
    "pciehp 0000:00:1c.0:pcie04: Enabling domain:bus:device=0000:05:00",
    "pcieport 0000:00:1c.0: AER: enabled with IRQ 122",
    "EXT4-fs (sda1): mounted filesystem with ordered data mode. Opts: (null)",
    "Parse error.",
    "pcieport 0000:c0:01.1: AER: CXL: Internal errors unmasked",
    "mlx5_core 0000:c1:00.0: 252.048 Gb/s available PCIe bandwidth (16.0 GT/s PCIe x16 link)",
    # the OOM report's 'comm cpuset=… mems_allowed=…' line: benign in four sets, holdout23's one 'oom' disputed
    "[ 88.2] nginx cpuset=/ mems_allowed=0-1",
]
