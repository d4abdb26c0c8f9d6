"""Each family of kernel messages, as its printk format in the kernel's or the driver's source prints it
(the format named beside each line): a rule must know the format, not one example of it."""

from __future__ import annotations

import pytest

from producers.kernel import classify

# (line, kind): lines filled in from the format strings that producers/kernel_patterns.toml cites.
FAULTS = [
    # NVIDIA-XID with the PCI id redacted by whoever posted it: the code stays, the id is none
    ("NVRM: Xid (PCI:...): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", "xid"),
    # fs/ext4/super.c __ext4_error, __ext4_std_error, print_daily_error_info; fs/jbd2/journal.c
    ("EXT4-fs error (device sda1): ext4_find_entry:1455: inode #2: comm ls: reading directory lblock 0", "fs_readonly"),
    ("EXT4-fs error (device nvme0n1p2) in ext4_reserve_inode_write:5791: Journal has aborted", "fs_readonly"),
    ("EXT4-fs (sda1): error count since last fsck: 3", "fs_readonly"),
    ("Aborting journal on device sda1-8.", "fs_readonly"),
    ("JBD2: Error -5 detected when updating journal superblock for sda1-8.", "fs_readonly"),
    # 6.x's spelling of the same write failure (the sets' majority: 8 fs_readonly, 1 other_fault)
    ("JBD2: I/O error when updating journal superblock for sda1-8.", "fs_readonly"),
    # fs/xfs/xfs_message.c 'XFS (%s): %pV' with xfs_error.c, xfs_fsops.c, xfs_buf.c
    ('XFS (dm-0): metadata I/O error in "xfs_trans_read_buf_map" at daddr 0x2 len 1 error 5', "fs_readonly"),
    ("XFS (sdb): Corruption detected. Unmount and run xfs_repair", "fs_readonly"),
    ("XFS (sdb): Log I/O Error Detected. Shutting down filesystem", "fs_readonly"),
    ("BTRFS error (device sda2): bdev /dev/sda2 errs: wr 0, rd 1, flush 0, corrupt 0, gen 0", "fs_readonly"),
    # drivers/base/dd.c and the NVIDIA driver's probe (kernel-open/nvidia/nv-pci.c, nv.c)
    ("nvidia: probe of 0000:01:00.0 failed with error -1", "other_fault"),
    ("NVRM: The NVIDIA probe routine failed for 1 device(s).", "other_fault"),
    ("NVRM: None of the NVIDIA devices were initialized.", "other_fault"),
    ("NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1f06)", "other_fault"),
    # mlx5 health.c print_health_info, bonding/bond_main.c
    ("mlx5_core 0000:08:00.0: print_health_info:430:(pid 0): synd 0x1: firmware internal error", "infiniband"),
    ("mlx5_core 0000:08:00.0: print_health_info:432:(pid 0): fw_ver 16.35.2000", "infiniband"),
    ("bond0: (slave enp83s0f0np0): link status definitely down, disabling slave", "infiniband"),
    ("bond0: now running without any active interface!", "infiniband"),
    # drivers/pci/hotplug/pciehp_ctrl.c, drivers/pci/pci.c pci_dev_wait
    ("pcieport 0000:00:1c.0: pciehp: Slot(0): Link Down", "pcie_link"),
    ("pcieport 0000:00:1c.0: pciehp: Slot(0): Card not present", "pcie_link"),
    ("pci 0000:3b:00.0: not ready 65535ms after FLR; giving up", "pcie_link"),
    # drivers/firmware/efi/cper.c: a PCIe section is pcie_aer, a memory section mce_edac
    ("{1}[Hardware Error]: section_type: PCIe error", "pcie_aer"),
    ("{1}[Hardware Error]:  device_id: 0000:3b:00.0", "pcie_aer"),
    ("{1}[Hardware Error]: section_type: memory error", "mce_edac"),
    ("{1}[Hardware Error]: event severity: corrected", "mce_edac"),
    ("mce: CPU0: Core temperature above threshold, cpu clock throttled (total events = 1)", "mce_edac"),
    # kernel/panic.c __warn, arch/x86/kernel/dumpstack.c __die_header, fs/file_table.c
    ("WARNING: CPU: 3 PID: 123 at drivers/gpu/drm/drm.c:100 foo+0x10/0x20 [drm]", "other_fault"),
    ("divide error: 0000 [#1] PREEMPT SMP NOPTI", "other_fault"),
    ("Oops: divide error: 0000 [#1] PREEMPT SMP NOPTI", "other_fault"),
    ("VFS: file-max limit 65536 reached", "other_fault"),
    # NVIDIA fabric manager (a user-space service): its failures are other_fault, nvlink is the driver's (guide v2)
    ("nv-fabricmanager[1234]: [ERROR] detected number of NVSwitches don't match with any supported system "
     "topology, aborting fabric manager", "other_fault"),
    # kernel/rcu/tree_stall.h
    ("rcu: INFO: rcu_sched self-detected stall on CPU", "soft_lockup"),
    ("INFO: rcu_preempt detected stalls on CPUs/tasks:", "soft_lockup"),
    # nvme/host/pci.c, libata-eh.c, scsi
    ("nvme nvme0: I/O 12 QID 3 timeout, aborting", "other_fault"),
    ("nvme nvme0: controller is down; will reset: CSTS=0xffffffff, PCI_STATUS=0xffff", "other_fault"),
    ("ata1.00: exception Emask 0x0 SAct 0x0 SErr 0x0 action 0x0", "other_fault"),
    ("sd 0:0:0:0: [sda] tag#0 FAILED Result: hostbyte=DID_OK driverbyte=DRIVER_SENSE", "other_fault"),
    # the NVIDIA driver's crash-dump notice (src/nvidia/src/kernel/diagnostics/journal.c): its first line; the
    # advice lines after it are benign (holdout10's label, tests/unit/kernel_cases_holdout10.py)
    ("NVRM: A GPU crash dump has been created. If possible, please run", "other_fault"),
    # NVIDIA osinit.c: the probe-time notice that the GPU fell off the bus, three lines, each on its own
    ("NVRM: The NVIDIA GPU 0000:b3:00.0", "gpu_fallen_off_bus"),
    ("NVRM: (PCI ID: 10de:2330) installed in this system has", "gpu_fallen_off_bus"),
    # GSP's falcon core dump names GSP's RISC-V; RM assertions and errors that name no GSP/FSP/libos are
    # other_fault, even an assertion in kernel_gsp.c (labels guide v2, as the corpus labels them)
    ("NVRM: kflcnCoreDumpNondestructive_IMPL: PRI: falconMailbox : 0:00000000 1:00000000", "gsp"),
    ("NVRM: GPU0 nvAssertFailedNoLog: Assertion failed: 0 @ kernel_bus.c:12", "other_fault"),
    ("NVRM: nvAssertOkFailedNoLog: Assertion failed: Generic Error [NV_ERR_GENERIC] (0x0000FFFF) returned from "
     "pRmApi->Control(pRmApi, hClient, hObject, cmd, pParams, paramsSize) @ kernel_gsp.c:4021", "other_fault"),
    ("NVRM: s_prepareForFwsec_GA102: failed to prepare interface data for FWSEC cmd 0x15: 0x25", "other_fault"),
    ("NVRM: GPU0 tmrGetTimeEx_GA100: NVRM-RC: Consistently Bad TimeLo value", "other_fault"),
    ("NVRM: _threadNodeCheckTimeout: API_GPU_ATTACHED_SANITY_CHECK failed!", "other_fault"),
    # the RM's LEVEL_ERROR words beyond 'fail' and 'error' (the 595 driver's formats): upper case, unsupported
    # requests, faults, "should never happen", a NULL where an object must be
    ("NVRM: tmrEventScheduleRelOSTimer_OSTIMER: OS Start timer FAILED!", "other_fault"),
    ("NVRM: memmgrMemUtilsMemSetBlocking_GM107: Timed Out waiting for CE semaphore", "other_fault"),
    ("NVRM: kfifoValidateEngineAndRunqueue_GP102: Unsupported runqueue: 0x3", "other_fault"),
    ("NVRM: GPU1 kchangrpapiCtrlCmdGpFifoSchedule_IMPL: Channels in TSG 7 have different runlist IDs this should "
     "never happen!", "other_fault"),
    ("NVRM: rpcWriteCommonHeader: NVRM_RPC: called with NULL pRpc.  Function 76.", "other_fault"),
    # the display path and user processes (guide v2): modeset warnings, segfaults, traps, panics of any cause
    ("nvidia-modeset: WARNING: GPU:0: Lost display notification (0:0x00000000); continuing.", "other_fault"),
    ("nvidia-modeset: ERROR: GPU:0: Failed to allocate display engine core DMA push buffer", "other_fault"),
    ("[drm:nv_drm_atomic_commit [nvidia_drm]] *ERROR* [nvidia-drm] [GPU ID 0x00000100] Flip event timeout", "other_fault"),
    ("python3[4242]: segfault at 0 ip 00007f0000000000 sp 00007ffd00000000 error 4 in libc.so.6[7f0000000000+1000]",
     "other_fault"),
    ("traps: nccl-test[999] general protection fault ip:7f00 sp:7ffd error:0 in libnccl.so.2[7f00+1000]", "other_fault"),
    ("traps: a.out[77] trap divide error ip:401136 sp:7ffc error:0 in a.out[401000+1000]", "other_fault"),
    ("Kernel panic - not syncing: Hard LOCKUP", "other_fault"),
    ("Kernel panic - not syncing: softlockup: hung tasks", "other_fault"),
    # NVIDIA nv.c probe failures
    ("NVRM: BAR0 is 0M @ 0x0 (PCI:0000:06:00.0)", "other_fault"),
    ("NVRM: No NVIDIA graphics adapter found!", "other_fault"),
    ("nvidia 0000:01:00.0: probe with driver nvidia failed with error -1", "other_fault"),
    # sched_show_task before 5.14, the OOM report's memcg line
    ("python3         D    0 12345      1 0x00000000", "hung_task"),
    ("memory: usage 2097152kB, limit 2097152kB, failcnt 12", "oom"),
    ("Watchdog CPU:3 Hard LOCKUP", "soft_lockup"),
    # drivers/pci/pcie/edr.c, aer.c, hotplug/shpchp_ctrl.c, pci.c
    ("pcieport 0000:00:03.0: EDR: EDR event received", "pcie_aer"),
    ("pcieport 0000:00:1c.0: can't find device of ID00e0", "pcie_aer"),
    ("shpchp 0000:01:00.0: Card not present on Slot(3)", "pcie_link"),
    ("nvidia 0000:3b:00.0: Unable to change power state from D3cold to D0, device inaccessible", "pcie_link"),
    ("pcieport 0000:80:02.0: link reset at upstream device 0000:80:02.0 failed", "pcie_link"),
    # XFS without a device, btrfs at any level with an error
    ("XFS: Internal error XFS_WANT_CORRUPTED_GOTO at line 1500 of file fs/xfs/libxfs/xfs_alloc.c.", "fs_readonly"),
    ("BTRFS: Transaction aborted (error -5)", "fs_readonly"),
    # oops detail, IOMMU faults, spurious interrupts, a disk that went away
    ("---[ end trace 0000000000000000 ]---", "other_fault"),
    ("nvidia 0000:3b:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0010 address=0x1000 flags=0x0000]", "other_fault"),
    ("irq 42: nobody cared (try booting with the \"irqpoll\" option)", "other_fault"),
    ("nvme0n1: detected capacity change from 1000204886016 to 0", "other_fault"),
    # kernel/rcu/tree_stall.h: the stall report's own lines, not only its first
    ("rcu: \t3-...!: (0 ticks this GP) idle=2e4/1/0x4000000000000000 softirq=0/0 fqs=0", "soft_lockup"),
    ("\t(detected by 5, t=60002 jiffies, g=123457, q=12 ncpus=8)", "soft_lockup"),
    ("\t(t=21002 jiffies g=6149 q=1034 ncpus=64)", "soft_lockup"),
    ("rcu: \tTasks blocked on level-0 rcu_node (CPUs 0-7): P4321", "soft_lockup"),
    # kernel/hung_task.c debug_show_blocker: each lock kind
    ("INFO: task kworker/1:2:123 blocked on a semaphore likely last held by task nv-persistence:45", "hung_task"),
    ("INFO: task python:4242 <writer> blocked on an rw-semaphore likely owned by task python:4243 <reader>", "hung_task"),
    # mm/oom_kill.c: the OOM report (mm/show_mem.c's dump within it is benign: kernel_cases_holdout4_5.py)
    ("oom_reaper: unable to reap pid:4242 (python)", "oom"),
    ("Out of memory: Kill process 1234 (java) score 900 or sacrifice child", "oom"),
    # drivers/edac/edac_mc.c before 3.x; arch/x86/kernel/cpu/mce/core.c
    ('EDAC MC0: CE page 0x2d1c4, offset 0x0, grain 64, syndrome 0x1, row 1, channel 0, label "DIMM_A1"', "mce_edac"),
    ("mce: Uncorrected hardware memory error in user-access at 2a8c4b000", "mce_edac"),
    # drivers/pci/pcie/dpc.c dpc_process_error
    ("pcieport 0000:00:1c.0: DPC: ERR_FATAL detected", "pcie_aer"),
    ("pcieport 0000:00:1c.0: DPC: rp_pio_status: 0x00010000", "pcie_aer"),
    # block/blk-core.c blk_errors: every name prints '%s error, dev %s, sector'
    ("operation not supported error, dev sdb, sector 0 op 0x9:(WRITE_ZEROES) flags 0x800 phys_seg 0 prio class 0",
     "other_fault"),
    ("end_request: I/O error, dev sda, sector 123456", "other_fault"),
    # a filesystem reporting the device's plain I/O error (guide v2: other_fault, not the fs's own error)
    ("EXT4-fs (sdb1): I/O error while writing superblock", "other_fault"),
    ("EXT4-fs warning (device sda1): ext4_end_bio:343: I/O error 10 writing to inode 1234 starting block 5678)",
     "other_fault"),
    ("JBD2: Detected IO errors while flushing file data on sda1-8", "other_fault"),
    # fs/xfs/xfs_fsops.c xfs_do_force_shutdown, new and old spellings
    ("XFS (sdb): All device paths lost. Shutting down filesystem", "fs_readonly"),
    ("XFS (sdb): Please unmount the filesystem and rectify the problem(s)", "fs_readonly"),
    ("XFS (sdb): Failing async write on buffer block 0x1234. Retrying async write.", "fs_readonly"),
    # drivers/nvme/host/pci.c nvme_timeout verdicts; core.c nvme_log_error
    ("nvme nvme0: I/O 18 QID 0 timeout, disable controller", "other_fault"),
    ("nvme nvme1: I/O tag 28 (401c) QID 0 timeout, completion polled", "other_fault"),
    ("nvme0n1: Read(0x2) @ LBA 1234, 8 blocks, Unrecovered Read Error (sct 0x2 / sc 0x81) DNR", "other_fault"),
    # drivers/md/raid1.c
    ("md/raid1:md0: Operation continuing on 1 devices.", "other_fault"),
    ("md: super_written gets error=-5", "other_fault"),
    # arch/x86/kernel/traps.c before the 'traps: ' prefix; kernel/signal.c print_fatal_signal
    ("a.out[77] trap invalid opcode ip:401136 sp:7ffc error:0 in a.out[401000+1000]", "other_fault"),
    ("python3/4242: potentially unexpected fatal signal 11.", "other_fault"),
    # drivers/scsi: a disk given up on
    ("sd 3:0:0:0: [sdc] tag#79 Medium access timeout failure. Offlining disk!", "other_fault"),
    ("sd 2:0:0:0: rejecting I/O to offline device", "other_fault"),
    ("scsi 1:0:0:0: Device offlined - not ready after error recovery", "other_fault"),
    ("sd 2:0:0:0: [sdb] Synchronize Cache(10) failed: Result: hostbyte=DID_BAD_TARGET driverbyte=DRIVER_OK", "other_fault"),
    # arch/x86/mm/fault.c, arch/x86/kernel/cfi.c
    ("kernel tried to execute NX-protected page - exploit attempt? (uid: 0)", "other_fault"),
    ("CFI failure at nvkms_call_rm+0x4f/0x90 [nvidia_modeset] (target: foo+0x0/0x10; expected type: 0x1234)",
     "other_fault"),
    # fs/ext4/super.c ext4_msg KERN_ERR; fs/jbd2/recovery.c
    ("EXT4-fs (sda1): error loading journal", "fs_readonly"),
    ("EXT4-fs (nvme0n1p2): ext4_check_descriptors: Checksum for group 0 failed (1234!=5678)", "fs_readonly"),
    ("JBD2: IO error -5 recovering block 1234 in log", "other_fault"),
    # NVIDIA RM error without GSP named (vbios interface data check)
    ("NVRM: s_vbiosPatchInterfaceData: Found pIntFaceHdr entry count: 0, expected 2", "other_fault"),
    # kmsg priority 3 (KERN_ERR) from a NIC driver that no rule names: still a fault
    ("3,100,200,-;igb 0000:05:00.0: something odd happened", "other_fault"),
]  # fmt: skip

# Near-misses from the same subsystems: informational, start-up and recovery lines.
BENIGN = [
    # show_fault_oops details the "BUG: unable to handle …" line before it: one crash report, one fault
    "#PF: supervisor read access in kernel mode",
    "#PF: error_code(0x0002) - not-present page",
    # the OOM report's task table (mm/oom_kill.c dump_tasks): its head line is the fault
    "[  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name",
    "XFS (sdb): Mounting V5 Filesystem",
    "mlx5_core 0000:53:00.0 enp83s0f0np0: Link up",
    # en_main.c's carrier loss of an Ethernet netdev: benign as any Ethernet port's (holdout10, the corpus)
    "mlx5_core 0000:53:00.0 enp83s0f0np0: Link down",
    "pcieport 0000:00:1c.0: pciehp: Slot(0): Link Up",
    "pcieport 0000:00:1c.0: pciehp: Slot(0): Card present",
    "pcieport 0000:00:01.0: AER: enabled with IRQ 26",
    "NVRM: GPU0 GSP firmware loaded",
    "NVRM: GPU0 Confidential Computing clean-up succeeded",
    "nvme nvme0: Shutdown timeout set to 10 seconds",
    "ata1: SATA link up 6.0 Gbps (SStatus 133 SControl 300)",
    "Call Trace:",
    "nvidia_uvm: module verification failed: signature and/or required key missing - tainting kernel",
    "6,100,200,-;igb 0000:05:00.0: something odd happened",
    "mce: CPU0: Core temperature/speed normal",
    "NVRM: gpumgrCheckRmFirmwarePolicy: Disabling GSP offload -- GPU not supported",
    "pciehp 0000:00:1c.0:pcie004: Slot #8 AttnBtn- PwrCtrl- MRL- AttnInd- PwrInd- HotPlug+ Surprise+ Interlock- NoCompl+",
    "OOM killer enabled.",
    # memcontrol.c v1 kernel-memory counter in a memcg OOM report: no limit hit (the labels call it benign)
    "kmem: usage 143556kB, limit 9007199254740988kB, failcnt 0",
    "nvme nvme0: 16/0/0 default/read/poll queues",
    "XFS (sdb): Ending clean mount",
    "rcu: Hierarchical RCU implementation.",
    "EDAC MC0: Giving out device to module skx_edac controller Skylake Socket#0 IMC#0: DEV 0000:3a:0a.0 (INTERRUPT)",
]


@pytest.mark.parametrize(("line", "kind"), FAULTS)
def test_a_family_is_known_by_its_format(line: str, kind: str) -> None:
    assert classify(line).kind == kind


@pytest.mark.parametrize("line", BENIGN)
def test_the_same_subsystems_informational_lines_are_no_fault(line: str) -> None:
    assert classify(line).kind is None


def test_a_redacted_xid_keeps_its_code_and_no_pci_id() -> None:
    got = classify("NVRM: Xid (PCI:...): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
    assert (got.kind, got.xid, got.pci_bus_id) == ("xid", 79, None)
