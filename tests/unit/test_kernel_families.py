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
    # mlx5 health.c print_health_info, en_main.c carrier, bonding/bond_main.c
    ("mlx5_core 0000:08:00.0: print_health_info:430:(pid 0): synd 0x1: firmware internal error", "infiniband"),
    ("mlx5_core 0000:08:00.0: print_health_info:432:(pid 0): fw_ver 16.35.2000", "infiniband"),
    ("mlx5_core 0000:53:00.0 enp83s0f0np0: Link down", "infiniband"),
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
    # the NVIDIA driver's crash-dump notice, every line of it (src/nvidia/src/kernel/diagnostics/journal.c)
    ("NVRM: nvidia-bug-report.sh as root to collect this data before", "other_fault"),
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
    # sched_show_task before 5.14, the OOM report's header lines
    ("python3         D    0 12345      1 0x00000000", "hung_task"),
    ("Mem-Info:", "oom"),
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
    ("#PF: supervisor read access in kernel mode", "other_fault"),
    ("---[ end trace 0000000000000000 ]---", "other_fault"),
    ("nvidia 0000:3b:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0010 address=0x1000 flags=0x0000]", "other_fault"),
    ("irq 42: nobody cared (try booting with the \"irqpoll\" option)", "other_fault"),
    ("nvme0n1: detected capacity change from 1000204886016 to 0", "other_fault"),
    # kmsg priority 3 (KERN_ERR) from a NIC driver that no rule names: still a fault
    ("3,100,200,-;igb 0000:05:00.0: something odd happened", "other_fault"),
]  # fmt: skip

# Near-misses from the same subsystems: informational, start-up and recovery lines.
BENIGN = [
    "XFS (sdb): Mounting V5 Filesystem",
    "mlx5_core 0000:53:00.0 enp83s0f0np0: Link up",
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
