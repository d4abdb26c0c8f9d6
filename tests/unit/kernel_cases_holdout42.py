"""Families holdout42/43/44 (tests/data/kernel_lines_holdout42.jsonl, 43, 44) showed missing or of another kind, each
written from its printk format with other devices and values than the labelled lines (and the format's siblings in the
same function or file), and the informational lines of the same subsystems that must stay benign."""

from __future__ import annotations

FAULTS = [
    # bcachefs's error reports (bch_err, bch2_fs_inconsistent, fsck_err), with and without a device, uuid or inode
    ("bcachefs (sdb2): inconsistency detected - emergency read only at journal seq 4411", "fs_readonly"),
    ("bcachefs (nvme1n1p3): emergency read only", "fs_readonly"),
    (
        "bcachefs (0b1d7c2e-5a41-4f0e-9e0a-2c7d1b3f9a10): error validating btree node at btree xattrs level 1/2",
        "fs_readonly",
    ),
    ("bcachefs (sdc inum 4096 offset 8192): data read error: checksum error", "fs_readonly"),
    ("bcachefs (md0): Error in recovery: error reading btree root (-5)", "fs_readonly"),
    ("bcachefs (sda1): inode 88123 unlinked but link count nonzero", "fs_readonly"),
    ("bcachefs (loop3): dirent points to missing inode 5121, fixing", "fs_readonly"),
    ("bcachefs: bch2_fs_get_tree() error: insufficient devices online", "fs_readonly"),
    # ata_eh_link_report: the status and error lines of a failed command, whatever their bits
    ("ata7.00: status: { DRDY }", "other_fault"),
    ("[ 9120.44] ata3.01: status: { DRDY DF }", "other_fault"),
    ("ata5.00: error: { IDNF }", "other_fault"),
    # sata_print_link_status with a device present but no PHY communication (SStatus DET 1)
    ("ata4: SATA link down (SStatus 1 SControl 300)", "other_fault"),
    ("ata12: SATA link down (SStatus 101 SControl 330)", "other_fault"),
    # netfilter conntrack and the neighbour table full
    ("nf_conntrack: table full, dropping packet", "other_fault"),
    ("[88.1] nf_conntrack: nf_conntrack: table full, dropping packet", "other_fault"),
    ("ip_conntrack: table full, dropping packet.", "other_fault"),
    ("nf_conntrack: expectation table full", "other_fault"),
    ("neighbour: ndisc_cache: neighbor table overflow!", "other_fault"),
    ("Neighbour table overflow.", "other_fault"),
    # megaraid_sas's error handler
    ("sd 0:2:1:0: [sdb] megasas: RESET cmd=2a retries=1", "other_fault"),
    ("scsi host4: megasas: RESET", "other_fault"),
    ("megaraid_sas 0000:5e:00.0: cannot recover from previous reset failures", "other_fault"),
    ("megaraid_sas 0000:02:00.0: failed to do reset", "other_fault"),
    ("sd 4:0:3:0: task abort called for scmd(000000007c1e2d3a)", "other_fault"),
    ("scsi host0: OCR is requested due to IO timeout!!", "other_fault"),
    # Unraid's md: parity found wrong by a check, a member's I/O error
    ("md: recovery thread: Q corrected, sector=77824", "other_fault"),
    ("md: recovery thread: P incorrect, sector=3907029104", "other_fault"),
    ("md: disk3 read error, sector=123456", "other_fault"),
    ("md: disk0 write error, sector=88", "other_fault"),
    # libceph and ceph: the nfs family's kind, with 6.x's client head too (a peer closing a session stays benign:
    # an OSD closes an idle one on a healthy cluster, the 'osdN down' beside it says the fault)
    ("libceph (9a1c0f2e-33b1-4c8d-a0e2-5f6b7c8d9e01 e112): osd14 down", "nfs"),
    ("libceph: connect (1)192.168.7.3:3300 error -101", "nfs"),
    (
        "libceph (9a1c0f2e-33b1-4c8d-a0e2-5f6b7c8d9e01 e112): mon1 (1)10.2.0.8:6789 session lost, hunting for new mon",
        "nfs",
    ),
    ("ceph (9a1c0f2e-33b1-4c8d-a0e2-5f6b7c8d9e01 4711): mds0 caps stale", "nfs"),
    # RCU Tasks' stall notices (every flavour's name, the older format without 'number')
    (
        "rcu_tasks_wait_gp: rcu_tasks_trace grace period number 1201 (since boot) is 30012 jiffies old.",
        "soft_lockup",
    ),
    (
        "tasks_rcu_exit_srcu_stall: rcu_tasks grace period number 9 (since boot) gp_state: RTGS_WAIT_CBS is 5120 "
        "jiffies old.",
        "soft_lockup",
    ),
    ("rcu_tasks_wait_gp: rcu_tasks_rude grace period 44 is 10250 jiffies old.", "soft_lockup"),
    (
        "Please check any exiting tasks stuck between calls to exit_tasks_rcu_start() and exit_tasks_rcu_finish()",
        "soft_lockup",
    ),
    # NFS over RDMA's completion and set-up failures
    ("rpcrdma: Recv: transport retry counter exceeded (12/0x81)", "infiniband"),
    ("rpcrdma: Send: remote access error (10/0x88)", "infiniband"),
    ("rpcrdma: QP fatal error on device mlx5_1 ep 00000000a1b2c3d4", "infiniband"),
    ("rpcrdma: ib_alloc_pd() returned -12", "infiniband"),
    # IPMI's wrong answers
    (
        "ipmi_si IPI0001:00: IPMI message handler: BMC returned incorrect response, expected netfn 7 cmd 1, got netfn"
        " 7 cmd 2",
        "other_fault",
    ),
    ("ipmi_ssif 0-0010: BMC returned too small a message for netfn 6 cmd 35, got 1 bytes", "other_fault"),
    # Xen's grant table and VT-d faults (Xen's console and Linux's old two-line report)
    ("xen:grant_table: WARNING: g.e. 0x1f4 still in use!", "other_fault"),
    ("xen:grant_table: WARNING: leaking g.e. and page still in use!", "other_fault"),
    (
        "(XEN) [VT-D]DMAR:[DMA Read] Request device [0000:3b:00.1] fault addr 7f000000, iommu reg = ffff82c0003fd000",
        "other_fault",
    ),
    ("(XEN) [VT-D]DMAR: reason 06 - PTE Read access is not set", "other_fault"),
    (
        "(XEN) [VT-D]INTR-REMAP: Request device [0000:00:1f.0] fault index 0, iommu reg = ffff82c0003fb000",
        "other_fault",
    ),
    ("DMAR:[fault reason 07] Next page table ptr is invalid", "other_fault"),
    ("[fault reason 0x06] PTE Read access is not set", "other_fault"),
    # jump_label's and ioremap's kernel bugs
    (
        "jump_label: Fatal kernel bug, unexpected op at nvkm_mmu_ptc_get+0x1c/0x2a0 [nouveau] (ffffffffc0a1b2c3)",
        "other_fault",
    ),
    ("pci_iomap_range+0x7b/0x90: ioremap on RAM at 0x00000000fe000000 - 0x00000000fe0fffff", "other_fault"),
    ("ioremap: invalid physical address 8000000000000", "other_fault"),
    ("ioremap memtype_reserve failed -16", "other_fault"),
    # hibernation that fails to resume, and suspends that fail
    ("PM: hibernation: resume failed (-22)", "other_fault"),
    ("PM: hibernation: Failed to load image, recovering.", "other_fault"),
    ("PM: Failed to load hibernation image, recovering.", "other_fault"),
    ("PM: Some devices failed to suspend, or early wake event detected", "other_fault"),
    ("PM: hibernation: Some system devices failed to power down, aborting", "other_fault"),
    # SoC root ports without a link (DesignWare/Tegra)
    ("tegra194-pcie 141a0000.pcie: PCIe link is not up...!", "pcie_link"),
    ("tegra-pcie-dw 14160000.pcie: Link didn't transition to L2 state", "pcie_link"),
    # amdgpu's and radeon's VA conflicts
    (
        "amdgpu 0000:c1:00.0: amdgpu: bo 00000000a9e0c3f1 va 0x0001000000-0x00010001ff conflict with 0x0001000100-0x0001000300",
        "other_fault",
    ),
    (
        "radeon 0000:01:00.0: bo ffff8801d2c1a000 va 0x0000400000 conflict with (bo ffff8801d2c1b000 0x00400000 0x00500000)",
        "other_fault",
    ),
    # Rockchip power domains that do not switch
    ("rockchip-pm-domain ff320000.power-management:power-controller: failed to set domain 'npu', val=1", "other_fault"),
    (
        "rockchip-pm-domain fd8d8000.power-management:power-controller: failed to get ack on domain 'vop', val=0x3f",
        "other_fault",
    ),
    (
        "rockchip-pm-domain ff310000.power-management:power-controller: failed to set idle on domain 'isp', val=0",
        "other_fault",
    ),
    # SMSC and Microchip USB NICs that stop answering
    ("smsc95xx 1-1.1:1.0 eth0: Failed to write reg index 0x00000104: -71", "other_fault"),
    ("smsc75xx 2-1:1.0 eth1: Error reading MII_DATA", "other_fault"),
    ("smsc95xx 3-1:1.0 enxb827eb: Timed out reading MII reg 01", "other_fault"),
    ("lan78xx 1-1.1.1:1.0 eth0: Failed to read register index 0x00000114. ret = -19", "other_fault"),
    # nv.c's error prints without an error word
    ("NVRM: GPU 0000:c1:00.0: PreserveVideoMemoryAllocations module parameter is set.", "other_fault"),
    ("NVRM: This NVIDIA driver is not compatible with this NVIDIA GPU", "other_fault"),
    ("NVRM: Tried to get IRQ 88, but another driver", "other_fault"),
    ("NVRM: open of non-existent GPU with minor number 3", "other_fault"),
]

BENIGN = [
    # bcachefs mounting and recovering as it should
    "bcachefs (nvme0n1p4): mounting version 1.7: mi_btree_bitmap opts=errors=ro,compression=lz4",
    "bcachefs (sda3): recovering from clean shutdown, journal seq 991",
    "bcachefs (sda3): journal read done, 120 keys in 3 entries, seq 992",
    "bcachefs (0b1d7c2e-5a41-4f0e-9e0a-2c7d1b3f9a10): going read-write",
    "bcachefs (sda3): check_allocations... done",
    "bcachefs (loop1): scanning for missing backpointers in 2/256 buckets",
    "bcachefs (sdb1): clean shutdown complete, journal seq 12001",
    "bcachefs (sdb1): done starting filesystem",
    # a Lustre target's clean recovery
    "Lustre: scratch-MDT0001: Recovery over after 1:12, of 40 clients 40 recovered and 0 were evicted.",
    # the same families' other lines
    "libceph (9a1c0f2e-33b1-4c8d-a0e2-5f6b7c8d9e01 e113): osd14 up",
    "libceph: mon1 (1)10.2.0.8:6789 session established",
    "md: recovery thread: check P Q ...",
    "md: recovery thread: exit status: 0",
    "md: sync done. time=40211sec",
    "ata9: SATA link down (SStatus 0 SControl 300)",
    "ata2: SATA link down (SStatus 4 SControl 300)",
    "ata1: SATA link up 6.0 Gbps (SStatus 133 SControl 300)",
    "nf_conntrack: falling back to vmalloc.",
    "nf_conntrack version 0.5.0 (65536 buckets, 262144 max)",
    "megaraid_sas 0000:02:00.0: reset successful",
    "PM: hibernation: hibernation entry",
    "PM: Resume from disk failed.",
    "PM: hibernation: Read 4194304 kbytes in 3.01 seconds (1393.45 MB/s)",
    "rpcrdma: connection to 10.0.0.4:20049 on mlx5_0, memreg 'frwr', 128 credits, 16 responders",
    "ipmi_si IPI0001:00: IPMI message handler: Found new BMC (man_id: 0x002a7c, prod_id: 0x1b0f, dev_id: 0x20)",
    "tegra194-pcie 14180000.pcie: Link up, Gen4",
    "rcu: Hierarchical SRCU implementation.",
    "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  590.44.01",
    "nvidia: unknown parameter 'NVreg_PreserveVideoMemoryAllocations' ignored",
    # the OOM report's task-table title (mm/oom_kill.c dump_tasks): the report's head is the fault
    "Tasks state (memory values in pages):",
    # an NVMe-oF host's retry and a Ceph OSD's idle session closing
    "nvme nvme7: Reconnecting in 10 seconds...",
    "libceph: osd4 (1)192.168.7.21:6800 socket closed (con state OPEN)",
]
