"""Families holdout36/37 (tests/data/kernel_lines_holdout36.jsonl, 37) showed missing or of another kind, each written
from its printk format with other devices and values than the labelled lines, and the informational lines of the same
sources that must stay benign."""

from __future__ import annotations

# an Xid copied by hand: a space before the code's colon, 'NVRM' without its colon; the code and the device (normalised)
# still read
SPACED_XIDS = [
    ("NVRM: Xid (PCI:0000:3b:00) : 79, pid=1234, GPU has fallen off the bus.", 79, "0000:3b:00.0"),
    ("[ 5531.100200] NVRM Xid (PCI:0000:86:00): 13, Graphics SM Warp Exception on (GPC 1, TPC 0)", 13, "0000:86:00.0"),
    ("NVRM Xid (PCI:...) : 31, Ch 00000010, intr 10000000", 31, None),
    ("NVRM: Xid(PCI:0000:41:00): 79, pid=2210, GPU has fallen off the bus.", 79, "0000:41:00.0"),
    ("NVRM: Xid (PCI:0000:c1:00) 48, pid=9, An uncorrectable double bit error", 48, "0000:c1:00.0"),
]

FAULTS = [
    # ARM's CPER processor errors the kernel could not handle (5.x spelling without the code)
    ("[Firmware Warn]: GHES: Unhandled processor error type 0x02: cache error", "mce_edac"),
    ("[ 1203.5] [Firmware Warn]: GHES: Unhandled processor error type: bus error", "mce_edac"),
    (
        "[Firmware Warn]: GHES: Unhandled processor error type 0x18: micro-architectural error with reserved bit(s)",
        "mce_edac",
    ),
    # a CPER record's FRU text naming a PCIe section, as its vendor's firmware spells it
    ("[ 88.1] {12}[Hardware Error]:  fru_text: PCIe Slot 3", "pcie_aer"),
    ("{2}[Hardware Error]: fru_text: PCIE_ERR", "pcie_aer"),
    # nouveau's graphics engine never idling for its TLB flush, and its status dump; the MMU's invalidate timeout
    ("nouveau 0000:02:00.0: gr: PGRAPH TLB flush idle timeout fail", "other_fault"),
    (
        "[drm] nouveau 0000:01:00.0: PGRAPH TLB flush idle timeout fail : 0x00000001 0x00000000 0x00000000 0x00000000",
        "other_fault",
    ),
    ("nouveau 0000:02:00.0: gr: PGRAPH_STATUS  : 0x00000101", "other_fault"),
    ("nouveau 0000:05:00.0: gr: PGRAPH_VSTATUS1: 0x00000020", "other_fault"),
    ("nouveau 0000:05:00.0: mmu: ce1 mmu invalidate timeout", "other_fault"),
    # a Chelsio RDMA adapter's port lost, whatever the firmware's reason
    ("cxgb4 0000:81:00.4: Port 1 link down, reason: No RX Signal", "infiniband"),
    ("cxgb4 0000:05:00.4: Port 3 link down, reason: Auto-negotiation Failure", "infiniband"),
    # the iSCSI target's login thread timing out, a NAS vendor's spelling, a failed negotiation
    ("iSCSI Login timeout on Network Portal [fd00::12]:3260", "other_fault"),
    ("iSCSI - Login timeout on Network Portal 10.20.0.5:3260", "other_fault"),
    ("[ 812.004411] iSCSI Login negotiation failed.", "other_fault"),
    # POWER's EEH counting a device's freezes (6.x event id, 3.x PCI name), a device disabled for good
    (
        "EEH: This PCI device has failed 4 times in the last hour and will be permanently disabled after 5 failures.",
        "pcie_aer",
    ),
    (
        "EEH(12): This PCI device has failed 2 times in the last hour and will be permanently disabled after 5 failures.",
        "pcie_aer",
    ),
    ("EEH: PCI device 0003:01:00.1 has failed 6 times in the last hour and has been permanently disabled.", "pcie_aer"),
    ("EEH(3): PHB#1-PE#fd has failed 6 times in the last hour and has been permanently disabled.", "pcie_aer"),
    # SAS/RAID HBAs gone: smartpqi offline (6.x with its reason) or silent, hpsa's lockup, megaraid's init frame refused
    ("smartpqi 0000:5e:00.0: controller offline: reason code 0x6 (pqi reset failed)", "other_fault"),
    ("smartpqi 0000:af:00.0: no heartbeat detected - last heartbeat count: 93", "other_fault"),
    ("hpsa 0000:0b:00.0: controller lockup detected: 0x00130000 after 30", "other_fault"),
    ("megaraid_sas 0000:18:00.0: Init cmd return status FAILED for SCSI host 2", "other_fault"),
    # libsas handing a SATA disk's failed commands to libata's error handler
    ("sas: ata17: end_device-7:3: cmd error handler", "other_fault"),
    # a hung-task head cut after the pid or after 'blocked' (a task name with colons and slashes)
    ("INFO: task kworker/u64:3:20311", "hung_task"),
    ("[ 4919.3] INFO: task jbd2/dm-0-8:611 blocked", "hung_task"),
    # ext4's superblock checksums
    ("EXT4-fs (nvme0n1p2): Invalid checksum for backup superblock 98304", "fs_readonly"),
    ("EXT4-fs (vdb): VFS: Found ext4 filesystem with invalid superblock checksum.  Run e2fsck?", "fs_readonly"),
    ("EXT4-fs (md127): corrupt root inode, run e2fsck", "fs_readonly"),
    ("EXT4-fs (sdc1): get root inode failed", "fs_readonly"),
    # nvme completions of commands the host no longer has: PCIe, TCP, RDMA, and the tag lookup
    ("nvme nvme2: request 0x1a3 genctr mismatch (got 0x5 expected 0x4)", "other_fault"),
    ("nvme nvme1: invalid id 61 completed on queue 7", "other_fault"),
    ("nvme nvme3: got bad cqe.command_id 0x2041 on queue 2", "other_fault"),
    ("nvme nvme0: got bad command_id 0x3f on QP 0x1a2", "other_fault"),
    ("could not locate request for tag 0x7b", "other_fault"),
    # ixgbe's internal ECC failure
    ("ixgbe 0000:af:00.1 enp175s0f1: Received ECC Err, initiating reset", "other_fault"),
    # NICs' damaged EEPROM/NVM at probe and the hardware's malicious-driver detection resetting a function
    ("ixgbe 0000:3b:00.1: The EEPROM Checksum Is Not Valid", "other_fault"),
    ("e1000e 0000:00:19.0: The NVM Checksum Is Not Valid", "other_fault"),
    ("ice 0000:5e:00.1: Malicious Driver Detection event 2 on TX queue 40 PF# 1 VF# 3", "other_fault"),
    ("i40e 0000:18:00.0: Malicious Driver Detection event 0x02 on TX queue 7 PF number 0x00 VF 0x01", "other_fault"),
    ("i40e 0000:18:00.1: MDD TX event is for this function 0x00000001, requesting PF reset.", "other_fault"),
    # xhci's dequeue-pointer command failing
    ("xhci_hcd 0000:00:14.0: WARN Set TR Deq Ptr cmd failed due to incorrect slot or ep state.", "other_fault"),
    ("xhci_hcd 0000:02:00.0: WARN Set TR Deq Ptr cmd invalid because of stream ID configuration", "other_fault"),
    ("xhci_hcd 0000:3e:00.0: WARN Cannot submit Set TR Deq Ptr", "other_fault"),
    # soft-iWARP's QP closing in error
    ("siw1: QP[27] siw_qp_llp_close: llp close exit: state ERROR", "infiniband"),
    # Tegra's PCIe controller errors (3.x 'PCIE: ' head) and the address of an abort
    ("tegra-pcie 3000.pcie: AXI slave error, signature: 00000000", "other_fault"),
    ("tegra-pcie 1003000.pcie: Transaction timeout, signature: 4a400010", "other_fault"),
    ("tegra-pcie 3000.pcie: PCIE: Target abort, signature: 20000400", "other_fault"),
    ("tegra-pcie 1003000.pcie:   FPCI address: fe10000000", "other_fault"),
]

BENIGN = [
    # mlx5's PCI error recovery reloading the driver and succeeding (4.x spellings too)
    "mlx5_core 0000:3b:00.1: mlx5_pci_resume Device state = 1 health sensors: 1 pci_status: 1. Enter, loading driver..",
    "mlx5_core 0000:3b:00.1: mlx5_pci_resume Device state = 1 health sensors: 1 pci_status: 1. Done, err = 0, device recovered",
    "mlx5_core 0000:06:00.0: mlx5_pci_resume Device state = 1 pci_status: 1. Done, err = 0, device recovered",
    "mlx5_core 0000:06:00.0: mlx5_pci_resume was called",
    # a bridge's optional window left unassigned
    "pci 0000:00:1c.4: bridge window [mem size 0x00200000 64bit pref]: ignoring failure in optional allocation",
    # nouveau skipping a DCB encoder it does not support
    "nouveau 0000:04:00.0: DRM: failed to create encoder 2/3/1: -22",
    # an amdgpu VM fault's status fields that read zero
    "amdgpu 0000:0c:00.0: amdgpu: \t MORE_FAULTS: 0x0",
    "amdgpu 0000:0c:00.0: amdgpu: \t WALKER_ERROR: 0x0",
    "amdgpu 0000:67:00.0: amdgpu:          PERMISSION_FAULTS: 0x0",
    # the same sources' informational lines: GHES's firmware notes, EEH at boot, megaraid's good init, libsas's probe,
    # a plain Ethernet NIC's link down, a healthy iSCSI login, xhci's routine notices, siw's ordinary close
    "[Firmware Warn]: GHES: Poll interval is 0 for generic hardware error source: 2, disabled.",
    "EEH: PCI Enhanced I/O Error Handling Enabled",
    "megaraid_sas 0000:18:00.0: Init cmd return status SUCCESS for SCSI host 0",
    "sas: ata5: end_device-2:1: dev error handler",
    "ixgbe 0000:19:00.1 eno2: NIC Link is Down",
    "ixgbe 0000:19:00.1: Multiqueue Enabled: Rx Queue count = 63, Tx Queue count = 63 XDP Queue count = 0",
    "EXT4-fs (sdc1): recovery complete",
    "siw0: QP[4] siw_qp_llp_close: llp close exit: state IDLE",
]
