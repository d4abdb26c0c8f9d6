"""Families holdout40/41 (tests/data/kernel_lines_holdout40.jsonl, 41) showed missing or of another kind, each written
from its printk format with other devices and values than the labelled lines, and the informational lines of the same
sources that must stay benign."""

from __future__ import annotations

FAULTS = [
    # a secondary CPU that never comes up: x86's and arm64's spellings
    ("smpboot: CPU3: Stuck ??", "other_fault"),
    ("CPU12: failed to come online", "other_fault"),
    ("CPU5: failed to boot: -38", "other_fault"),
    ("smpboot: CPU 22 failed to report alive state", "other_fault"),
    # Xen refusing a guest's page-table hypercalls
    ("ERROR: mmu_update failed with rc=-1", "other_fault"),
    ("xen:multicalls: 1 of 3 multicall(s) failed: cpu 2", "other_fault"),
    # drbd losing its backing disk (8.4 and 9 prefixes)
    ("block drbd0: Local IO failed in drbd_md_sync_page_io. Detaching...", "other_fault"),
    ("drbd r0/0 drbd2: IO ERROR: neither local nor remote data, sector 8192+8", "other_fault"),
    (
        "block drbd3: Remote failed to finish a request within 61200ms > ko-count (7) * timeout (60 * 0.1s)",
        "other_fault",
    ),
    ("block drbd1: disk( UpToDate -> Failed )", "other_fault"),
    ("drbd r1/0 drbd5: local WRITE IO error sector 40960+16 on sdc2", "other_fault"),
    # POWER HMI and SPARC sun4v hardware error reports, mce's debug print of a bank
    ("HMI: [Loc: U78C9.001.WZS0CWX-P1-C9]: P:0 C:4 T:2: TFMR(2d12000870e04020) Timer Facility Error", "mce_edac"),
    ("HMI: [Loc: UOPWXX.1234567-Node0-Proc1]: P:1 C:8 T:0: Hypervisor Resource error - core check stop", "mce_edac"),
    ("RESUMABLE ERROR: Reporting on cpu 7", "mce_edac"),
    ("NON-RESUMABLE ERROR: TPC [0x00000000004a8c10] <sun4v_nonresum_error+0x40/0x80>", "mce_edac"),
    ("mce: DEBUG: CPU12 Bank:4 Status:0xbe00000000800400", "mce_edac"),
    # skb over/under-run
    (
        "skbuff: skb_under_panic: text:ffffffffa0123456 len:74 put:14 head:ffff888103a4c000 data:ffff888103a4bffe"
        " tail:0x48 end:0x2c0 dev:eth0",
        "other_fault",
    ),
    # EDAC core registration
    (
        "EDAC MC: bug in low-level driver: attempt to assign duplicate mc_idx 1 in add_mc_to_global_list()",
        "other_fault",
    ),
    ("sb_edac: Can't register with EDAC core", "other_fault"),
    # Xilinx ZynqMP root port's error interrupts
    ("nwl-pcie fd0e0000.pcie: Bad TLP", "pcie_aer"),
    ("nwl-pcie fd0e0000.pcie: Fatal Error Detected", "pcie_aer"),
    ("nwl-pcie fd0e0000.pcie: Replay timeout", "pcie_aer"),
    # nouveau fifo context timeouts and a cut bus fault
    ("nouveau 0000:01:00.0: fifo:000001:0005:[Xorg[1123]] cctx 1[ce0]: -110", "other_fault"),
    ("nouveau 0000:65:00.0: bus: MMIO write of", "other_fault"),
    # NFSv4.1 state revoked by the server
    ("NFS: nfs41_handle_recallable_state_revoked: Recallable state revoked on server nfs01.example.org!", "nfs"),
    ("NFS: nfs41_handle_sequence_flag_errors: Lease expired on server 10.1.2.3!", "nfs"),
    # filesystems: XFS cut by mail, ext4 without its device, iomap writeback
    ("XFS (nvme0n1p2): Filesystem has been", "fs_readonly"),
    ("XFS (sdc): Please unmount the", "fs_readonly"),
    (
        "EXT4-fs: Delayed block allocation failed for inode 77 at logical offset 3 with max blocks 2 with error 28",
        "fs_readonly",
    ),
    ("vdb1: writeback error on inode 123456, offset 65536, sector 9988", "other_fault"),
    ("nvme0n1p1: writeback error on inode", "other_fault"),
    # ib_srp's connection errors
    ("scsi host9: ib_srp: Connection failed", "infiniband"),
    ("scsi host2: ib_srp: Got failed path rec status -110", "infiniband"),
    ("scsi host3: ib_srp: failed RECV status WR flushed (5) for CQE 00000000c0ffee11", "infiniband"),
    # UBSAN's head cut by mail and its detail lines
    ("UBSAN: shift-out-of-bounds in", "other_fault"),
    ("index 16 is out of range for type 'u8 [16]'", "other_fault"),
    ("division by zero", "other_fault"),
    ("load of value 7 is not a valid value for type '_Bool'", "other_fault"),
    ("member access within null pointer of type 'struct net_device'", "other_fault"),
    # a power-up that fails, cut after the state
    ("xhci_hcd 0000:04:00.3: can't change power state from D3cold", "pcie_link"),
    # mpt2sas/mpt3sas fault watchdog
    ("mpt2sas_cm1: _base_fault_reset_work: Running", "other_fault"),
    ("mpt3sas_cm2: _base_fault_reset_work: hard reset: failed", "other_fault"),
]

BENIGN = [
    # UBSAN's shift detail line under its whole 'UBSAN: shift-out-of-bounds in …' head (holdout74 labels it benign)
    "shift exponent 64 is too large for 64-bit type 'long unsigned int'",
    "mce: Machine check injector initialized",
    "ubsan: enabled with CONFIG_UBSAN_TRAP=n",
    "smpboot: CPU 5 is now offline",
    "block drbd0: disk( Attaching -> UpToDate )",
    "drbd r1: conn( WFConnection -> WFReportParams )",
    "scsi host4: ib_srp: reconnect succeeded",
    "nwl-pcie fd0e0000.pcie: Link is UP",
    "Workqueue: poll_mpt2sas1_statu _base_fault_reset_work [mpt2sas]",
    "XFS (sdb1): Ending clean mount",
    "EXT4-fs: Warning: mounting with data=journal disables delayed allocation and O_DIRECT support!",
    "mpt3sas_cm0: _base_fault_reset_work: hard reset: success",
]
