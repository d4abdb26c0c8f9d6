"""Families holdout30/31 (tests/data/kernel_lines_holdout30.jsonl, 31) showed missing, of another kind or flagged, each
written from its printk format with other devices and values than the labelled lines, and the informational lines of
the same sources that must stay benign."""

from __future__ import annotations

FAULTS = [
    # amdgpu_vm_print_task_info / gmc_v9_0.c: the faulting process of a GPU page fault (9.x closes a parenthesis)
    ("amdgpu 0000:0b:00.0: amdgpu:  in process Xorg pid 1822 thread Xorg:cs0 pid 1840", "other_fault"),
    ("amdgpu 0000:c1:00.0: amdgpu:  in process vllm pid 55120 thread ray::Worker pid 55188)", "other_fault"),
    # a fault no process owns (vmid 0, the kernel's queues): the names printed empty
    ("amdgpu 0000:43:00.0: amdgpu:  in process  pid 0 thread  pid 0", "other_fault"),
    # panic.c's end marker typed without its space; the out-of-tree i40e's probe fallback
    ("[   77.104551] ---[end trace 5d1f2a09c3b7e684 ]---", "other_fault"),
    ("i40e 0000:3b:00.1: previous errors forcing module to load in debug mode", "other_fault"),
    # constants.c additional sense 0x30/0x31 of a failed command
    ("sd 2:0:0:0: [sdb] tag#3 Add. Sense: Cannot read medium - unknown format", "other_fault"),
    ("sd 4:0:1:0: [sdc] Add. Sense: Medium format corrupted", "other_fault"),
    ("sd 7:0:2:0: [sdh] tag#12 Add. Sense: Logical block address out of range", "other_fault"),
    ("sd 1:0:0:0: [sdb] Add. Sense: Address mark not found for data field", "other_fault"),
    # nmi.c unknown_nmi_error, mce_edac as every set labels it
    ("Uhhuh. NMI received for unknown reason 3d on CPU 7.", "mce_edac"),
    ("4,8812,551230911,-;Dazed and confused, but trying to continue", "mce_edac"),
    # jbd2 journal.c 6.x: the journal superblock write failing, the journal aborted after it
    ("JBD2: I/O error when updating journal superblock for nvme1n1p2-8.", "fs_readonly"),
    # mlx5 en: internal and XDP send queues' error completions; rdma_rxe's memory-region key checks
    ("mlx5_core 0000:41:00.1 ens2f1np1: ERR CQE on ICOSQ: 0x2a8", "infiniband"),
    ("netdevice: eth3: Bad OP in XDPSQ CQE: 0xe", "infiniband"),
    ("rdma_rxe: rxe_invalidate_mr: No MR for key 0x5c3", "infiniband"),
    ("infiniband rxe0: mr#12 rxe_invalidate_mr: rkey (0x1203) doesn't match mr->ibmr.rkey (0x1204)", "infiniband"),
    # nvme core.c nvme_log_error cut before its status
    ("nvme2n1: Write(0x1) @ LBA 88412160, 1024 blocks,", "other_fault"),
    # ib_srp's SCSI error handling, md's refused member disks
    ("scsi host7: SRP reset_host called", "other_fault"),
    ("scsi host12: SRP reset_device called", "other_fault"),
    ("md: could not open unknown-block(8,33).", "other_fault"),
    ("md: md_import_device returned -22", "other_fault"),
    ("md: sdd1 does not have a valid v1.2 superblock, not importing!", "other_fault"),
    ("md: nvme0n1p3 has zero or unknown size, marking faulty!", "other_fault"),
    ("md: disabled device sdf2, could not read superblock.", "other_fault"),
    ("md: invalid superblock checksum on hdc1", "other_fault"),
    # scsi_print_result cut after its host byte or its head; a segfault cut after 'at'; the idle task scheduling
    ("Result: hostbyte=DID_NO_CONNECT", "other_fault"),
    ("sd 3:0:1:0: [sdj] tag#1021 FAILED", "other_fault"),
    ("sd 0:0:0:0: [sda] FAILED", "other_fault"),
    ("sd 9:0:0:0: [sdk] tag#30 UNKNOWN(0x2003)", "other_fault"),
    ("sd 4:0:0:0: [sde] tag#2 TIMEOUT_ERROR", "other_fault"),
    ("systemd-journal[412]: segfault at", "other_fault"),
    ("<3>[   12.500112] bad: scheduling from the idle thread!", "other_fault"),
    # aer.c's detail line cut after the device id
    ("pcieport 0000:00:03.1:   device [1022:1483]", "pcie_aer"),
    ("igb 0000:04:00.0: AER:   device [8086:1533]", "pcie_aer"),
]

BENIGN = [
    # the GSP-RM log decoder's image, optional and not shipped
    "nvidia 0000:41:00.0: Direct firmware load for nvidia/570.86.15/gsp_log_tu10x.bin failed with error -2",
    "NVRM: RmFetchGspRmImages: Failed to load gsp_log.bin, no GSP-RM logs will be printed (non-fatal)",
    # i40e's DCB set-up where the firmware or the host's LLDP agent holds it
    "i40e 0000:af:00.0: Query for DCB configuration failed, err I40E_ERR_ADMIN_QUEUE_ERROR aq_err I40E_AQ_RC_EPERM",
    "i40e 0000:af:00.1: DCB init failed -5, disabled",
    "i40e 0000:af:00.0: FW LLDP is disabled, DCBx/LLDP in SW mode.",
    # the same sources' informational lines
    "sd 6:0:0:2: [sdf] Add. Sense: Medium not present",
    "sd 3:0:0:0: [sdc] Add. Sense: Power on, reset, or bus device reset occurred",
    "md: sdc1 has different UUID to sdd2",
    "md: md1: recovery done.",
    "NMI backtrace for cpu 12",
    "nvme nvme0: 8/0/0 default/read/poll queues",
    "mlx5_core 0000:41:00.1 ens2f1np1: Link up",
]

# OpenWrt's logread: ctime, then facility.level, then the tag; the message, and the level as a priority
LOGREAD = (
    "Wed Mar  3 09:12:44 2021 kern.warn kernel: [   88.204411] Uhhuh. NMI received for unknown reason 3c on CPU 1.",
    "Uhhuh. NMI received for unknown reason 3c on CPU 1.",
    4,
    "mce_edac",
)
