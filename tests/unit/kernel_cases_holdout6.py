"""Pass 7: the families holdout6 (scored once unseen) showed missing, each written from its printk format in the
kernel's or the NVIDIA driver's source, with other functions, devices and values than the labelled lines; then
the sibling formats of the same source files, and their informational near-misses."""

from __future__ import annotations

FAULTS = [
    # open-gpu-kernel-modules src/nvidia/src/kernel/gpu/nvlink/*.c, NV_PRINTF(LEVEL_ERROR) prints 'NVRM: %s: ' with
    # the function: static _knvlink* helpers, the subdevice control calls and the core library's callbacks too
    ("NVRM: _knvlinkActivateDiscoveredConns: Failed to activate link11 on GPU5!!!", "nvlink"),
    ("NVRM: GPU2 knvlinkCoreShutdownDeviceLinks_IMPL: Unable to turn off links for the GPU2", "nvlink"),
    ("NVRM: knvlinkStatePostLoad_IMPL: Timedout while checking to see if training complete!", "nvlink"),
    ("NVRM: knvlinkRetrainLink_IMPL: link master could not be found from GPU1 link 7", "nvlink"),
    ("NVRM: _knvlinkEnterSleep: Error setting link: 14 to sleep!", "nvlink"),
    ("NVRM: _knvlinkCorePassiveLinkChangeCallback: failed to acquire the RM semaphore!", "nvlink"),
    ("NVRM: subdeviceCtrlCmdBusGetNvlinkStatus_IMPL: Failed to collect nvlink status info!", "nvlink"),
    ("NVRM: knvlinkCoreReadDiscoveryTokenCallback: Bad token address provided!", "nvlink"),
    ("NVRM: ioctrlFaultUpTmrHandler: Failed to send Faultup RPC", "nvlink"),
    # the same function names quoted without the 'NVRM: ' head (a report's health section)
    ("knvlinkCoreAddLink_IMPL: link handlers not found", "nvlink"),
    ("[  912.004417] knvlinkExitSleep: Unable to wakeup the linkmask", "nvlink"),
    # src/common/nvlink/kernel/nvlink core, printed by kernel-open/nvidia/nvlink_linux.c as 'nvidia-nvlink: %s'
    ("nvidia-nvlink: nvlink_lib_powerdown_links_from_active_to_off: Link is in bad state. ", "nvlink"),
    ("nvidia-nvlink: nvlink_core_poll_link_state: Timeout occured while polling on link.", "nvlink"),
    ("nvidia-nvlink: _nvlink_core_set_link_state: Unable to put link in SAFE GPU1:link4", "nvlink"),
    # falcon/arch/turing/kernel_falcon_tu102.c: a falcon (SEC2, PMU, NVDEC...) that does not halt names no GSP
    ("NVRM: GPU3 kflcnWaitForHalt_TU102: Timeout waiting for Falcon to halt", "other_fault"),
    # fifo/kernel_channel.c, fifo/arch/maxwell/kernel_fifo_gm107.c, mem_mgr/vaddr_list.c: RM refusing or leaking
    (
        "NVRM: GPU0 kchannelConstruct_IMPL: Channel allocation not allowed when MIG is enabled without GPU instancing",
        "other_fault",
    ),
    (
        "NVRM: kfifoRunlistSetId_GM107: Channel has already been assigned a runlist incompatible with this engine (requested: 0x3 current: 0x1).",
        "other_fault",
    ),
    ("NVRM: vaListDestroy: non-zero mapCount(pVaList): 0x4", "other_fault"),
    # the RM's other LEVEL_ERROR wordings across src/nvidia/src/kernel (a resource it could not get, an MMU fault
    # outside an Xid, a BAR self-test reading garbage, an offset past its range, a lookup that found nothing)
    ("NVRM: GPU1 kfifoPreAllocUserD_TU102: Could not map USERD to BAR1", "other_fault"),
    ("NVRM: memmgrStateInitAdjustReservedMemory: couldn't allocate BAR2 instblk in sysmem", "other_fault"),
    ("NVRM: kgmmuServicePriFaults_GV100: BAR1 MMU Fault", "other_fault"),
    ("NVRM: kbusVerifyBar2_GH100: MMUTest BAR2 Read of virtual addr 0x1000 returned garbage 0xbadf5040", "other_fault"),
    ("NVRM: gpuWriteFunctionConfigRegEx_GM107: Offset 0x1004 exceeds range!", "other_fault"),
    ("NVRM: kctxshareDestroyCommon_IMPL: VASpace map entry not found.", "other_fault"),
    ("NVRM: memmgrGetBlackListPagesForHeap_GM107: No more space in blacklist, status: 0x51!", "other_fault"),
    (
        "NVRM: rmapiReportInternalLeakedDevices: Internal device object leak: (0xc1d00042, 0xcaf00001). Please file a bug against RM-core.",
        "other_fault",
    ),
    # fs/nfs/nfsroot.c (and 2.6's 'Root-NFS server returned error'): the root filesystem over NFS cannot mount
    ("Root-NFS: Server returned error -13 while mounting /srv/nfsroot/gpu-node-17", "nfs"),
    ("Root-NFS: Unable to get mountd port number from server, using default", "nfs"),
    ("Root-NFS: no NFS server address", "nfs"),
    ("NFS: Server wrote zero bytes, expected 1048576.", "nfs"),
    ("RPC: Could not send backchannel reply error: -32", "nfs"),
    # fs/jbd2/journal.c jbd2_journal_bmap '%s: journal block not found at offset %lu on %s' (ext3's journal_bmap
    # before it), journal.c 'Cannot locate journal superblock', recovery.c 'JBD2: Invalid checksum recovering …'
    ("jbd2_journal_bmap: journal block not found at offset 4455 on nvme0n1p2-8", "fs_readonly"),
    ("journal_bmap: journal block not found at offset 2316 on dm-6", "fs_readonly"),
    ("jbd2_journal_init_inode: Cannot locate journal superblock", "fs_readonly"),
    ("JBD2: Invalid checksum recovering data block 72351 in log", "fs_readonly"),
    ("JBD2: bad block at offset 1187", "fs_readonly"),
    # fs/ext4/super.c at mount: a corrupt filesystem refused
    ("EXT4-fs (nvme2n1p1): ext4_check_descriptors: Inode table for group 17 not in group (block 0)!", "fs_readonly"),
    ("EXT4-fs (md127): bad geometry: block count 976754176 exceeds size of device (976753664 blocks)", "fs_readonly"),
    ("EXT4-fs (dm-4): failed to initialize system zone (-117)", "fs_readonly"),
    # kernel/dma/swiotlb.c and direct.h: a device's DMA past what it can address, the bounce buffer exhausted
    ("ahci 0000:00:17.0: swiotlb addr 0x0000000480000000+512 overflow (mask ffffffff, bus limit 0).", "other_fault"),
    (
        "mlx5_core 0000:3b:00.1: DMA addr 0x0000020000000000+65536 overflow (mask ffffffffff, bus limit 0).",
        "other_fault",
    ),
    (
        "nvme 0000:01:00.0: swiotlb buffer is full (sz: 262144 bytes), total 32768 (slots), used 32712 (slots)",
        "other_fault",
    ),
    ("DMA: Out of SW-IOMMU space for 65536 bytes at device 0000:03:00.0", "other_fault"),
    ("swiotlb: coherent allocation failed for device 0000:41:00.0 size=4194304", "other_fault"),
    (
        "DMA-API: ahci 0000:00:17.0: device driver failed to check map error[device address=0x00000000fe9f0000] "
        "[size=2048 bytes] [mapped as single]",
        "other_fault",
    ),
    # arch/x86/kernel/unwind_frame.c and unwind_orc.c: the unwinder found a corrupt kernel stack
    (
        "WARNING: kernel stack frame pointer at 00000000a1b2c3d4 in kworker/3:1:1234 has bad value 0000000000000000",
        "other_fault",
    ),
    (
        "WARNING: kernel stack regs at 000000002c0ffee0 in python3:90211 has bad 'bp' value 0000000000000001",
        "other_fault",
    ),
    ("WARNING: stack going in the wrong direction? at do_syscall_64+0x40/0x80", "other_fault"),
    ("WARNING: can't access registers at asm_common_interrupt+0x1e/0x40", "other_fault"),
    # gpu/gsp/kernel_gsp.c heartbeat formats; gpu.c's GPU_RECOVERY_ACTION_CHANGED is logged as an Xid (154)
    (
        "NVRM: GPU1 _kgspIsHeartbeatTimedOut: Heartbeat timed out, currentTimeMs 51234 heartbeat 50011 heartbeatWithOffsetMs 50011 diff 1223 timeout 1000",
        "gsp",
    ),
    ("NVRM: GPU0 kgspHealthCheck_TU102: LibOS heartbeat timed out", "gsp"),
    (
        "NVRM: Xid (PCI:0000:c1:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
        "xid",
    ),
]

BENIGN = [
    # kernel-open/nvidia/nvlink_linux.c's NVLINK_DBG_INFO lines
    "nvidia-nvlink: Nvlink Core is being initialized, major device number 507",
    "nvidia-nvlink: Unregistered Nvlink Core, major device number 507",
    # kernel/dma/swiotlb.c at boot: the bounce buffer set up
    "PCI-DMA: Using software bounce buffering for IO (SWIOTLB)",
    "software IO TLB: mapped [mem 0x00000000bbf6f000-0x00000000bff6f000] (64MB)",
    # fs/jbd2: a journal recovered cleanly is the recovery, not a fault
    "EXT4-fs (nvme0n1p2): recovery complete",
    # falcon core dumps stay GSP's (GSP's RISC-V core), a falcon ucode message at boot is no fault
    "[   10.842112] NVRM: s_prepareForFwsec_GA102: Falcon ucode from hs",
]


# kernel-open/nvidia/linux_nvswitch.c and nvlink_linux.c: the release driver's own printks (NVSWITCH_PRINT is
# compiled out of release builds), KERN_ERR ones faults, KERN_INFO ones not
NVSWITCH_FAULTS = [
    "nvidia-nvswitch7: Blacklisted nvswitch device",
    "nvidia-nvswitch11: Interrupts disabled to avoid a storm",
    "nvidia-nvswitch2: No supported interrupt mechanism was found. This device supports:",
    "nvidia-nvswitch: Unable to create cdev region",
    "nvidia-nvlink: NVLink: requested sleep duration 40 msec exceeded 20 msec",
]
NVSWITCH_BENIGN = [
    "nvidia-nvswitch5: release (major=508)",
    "nvidia-nvswitch5: a stale fd detected",
    "nvidia-nvswitch1: using MSI-X",
    "nvidia-nvswitch: Probing device 0000:07:00.0, Vendor Id = 0x10de, Device Id = 0x22a3, Class = 0x68000",
]

FAULTS += [(line, "nvlink") for line in NVSWITCH_FAULTS]
# a fabric manager from another release than the module: a software mismatch (holdout48 labels it other_fault)
FAULTS.append(("nvidia-nvswitch: Version mismatch, kernel version 570.124.06 user version 565.57.01", "other_fault"))
BENIGN += NVSWITCH_BENIGN
