"""Families holdout20 and holdout21 (tests/data/kernel_lines_holdout20.jsonl, holdout21) showed missing or of another
kind, each written from its printk format with other architectures, devices and values than the labelled lines, the
accelerator drivers next to them (PowerVR-derived GPUs, Habana Gaudi), and the informational lines of the same sources
that must stay benign, with AMD's security processor left without SEV by the BIOS."""

from __future__ import annotations

FAULTS = [
    # die()'s header where the architecture prints no error code: riscv '%s [#%d]', mips/loongarch '%s[#%d]:'
    ("[ 3.1] Oops [#3]", "other_fault"),
    ("Oops - load access fault [#1]", "other_fault"),
    ("[  12.440211] Kernel BUG [#1]", "other_fault"),
    ("Oops[#2]:", "other_fault"),
    ("Kernel bug detected[#1]:", "other_fault"),
    ("insmod(1207): Kernel bad sw trap 5 [#1]", "other_fault"),
    ("swapper(0): Oops [#1]", "other_fault"),
    # a lockup or hung-task head cut by a line wrap
    ("NMI watchdog: BUG: soft lockup", "soft_lockup"),
    ("<0>[ 812.5] BUG: soft lockup -", "soft_lockup"),
    ("[ 9.9] INFO: task kworker/u64:3:4411 blocked for more than 241", "hung_task"),
    ("INFO: task mysqld:2210 blocked for more", "hung_task"),
    # nouveau's subdev and falcon errors on the GSP: the GSP-RM never started
    ("nouveau 0000:2d:00.0: gsp: oneinit failed, -22", "gsp"),
    ("nouveau 0000:41:00.0: gsp: preinit failed, -19", "gsp"),
    ("nouveau 0000:2d:00.0: sec2(gsp):booter-unload: boot failed: -110", "gsp"),
    ("nouveau 0000:65:00.0: gsp ctor failed: -22", "gsp"),
    ("nouveau 0000:65:00.0: gsp: firmware load failed: -2", "gsp"),
    # a bridge's 64-bit prefetchable window sized for a GPU's BAR1 (256 MiB and more) left unassigned, before and after 6.8
    ("pcieport 0000:40:01.1: BAR 15: no space for [mem size 0x800000000 64bit pref]", "other_fault"),
    ("pcieport 0000:00:03.0: bridge window [mem size 0x1000000000 64bit pref]: can't assign; no space", "other_fault"),
    ("pci 0000:17:00.0: bridge window [mem size 0x200000000 64bit pref]: failed to assign", "other_fault"),
    # the SD/MMC core: a card reset and a card that does not initialise
    ("mmc1: tried to HW reset card, got error -84", "other_fault"),
    ("[ 2.2] mmc1: tried to reset card", "other_fault"),
    ("mmc2: error -84 whilst initialising MMC card", "other_fault"),
    ("mmc0: error -110 whilst initialising SDIO card", "other_fault"),
    ("mmcblk1: r/w command failed, status = 0x80000b00", "other_fault"),
    ("mmcblk0: unknown error -22 sending read/write command, card status 0x900", "other_fault"),
    # the USB-C controller behind an NVIDIA board's I2C function
    ("ucsi_ccg 0-0008: i2c_transfer failed -110", "other_fault"),
    ("ucsi_ccg 2-0008: get_fw_info failed - -5", "other_fault"),
    ("ucsi_ccg 11-0008: ucsi_ccg_init failed - -5", "other_fault"),
    # PowerVR's MMU fault report, under the Moore Threads MTGPU prefix or PVR_K's own, and its error levels
    ("MTGPU:  812:   MMU (Meta) - FAULT:", "other_fault"),
    (
        "MTGPU:  812:     * MMU status (0x0000002000A00111 | 0x00000000): PC = 0, Writing to 0x10000000, "
        "FWCORE(0x1), Fault (Page Directory).",
        "other_fault",
    ),
    ("[ 88.1] PVR_K:  77:     MMU (Core) - FAULT:", "other_fault"),
    ("PVR_K:(Error): SysInitialise: Failed to Enable system clocks", "other_fault"),
    ("PVR_K:(Fatal): RGXHWPerfDataStore: firmware crashed", "other_fault"),
    # Habana Gaudi: a command submission timed out, the heartbeat lost, a reset that failed, a H/W interrupt
    ("habanalabs hl3: Command submission 1182 has not finished in time!", "other_fault"),
    ("habanalabs 0000:b3:00.0: Wait command submission 77 has not finished in 60 seconds!", "other_fault"),
    ("habanalabs hl0: Device heartbeat failed! PCI link is healthy", "other_fault"),
    ("habanalabs hl5: 0000:4d:00.0 Failed to reset! Device is NOT usable", "other_fault"),
    ('habanalabs hl1: Received H/W interrupt 3 ["ECC"], resetting the chip', "other_fault"),
    # embedded GPUs on their platform devices: a job hang, an MMU fault
    (
        "panfrost 13000000.gpu: gpu sched timeout, js=1, config=0x7300, status=0x8, head=0x16aa000, tail=0x16aa000, "
        "sched_job=00000000b5a0a1b0",
        "other_fault",
    ),
    ("panfrost ff9a0000.gpu: js fault, js=0, status=DATA_INVALID_FAULT, head=0x1, tail=0x1", "other_fault"),
    ("mali fde60000.gpu: Unhandled Page fault in AS1 at VA 0x0000000002000000", "other_fault"),
    ("lima 1c40000.gpu: pp pp0 task error int_state=0 status=1", "other_fault"),
    ("lima 1c40000.gpu: mmu page fault at 0x2000000 from bus id 0 of type read on ppmmu0", "other_fault"),
    ("etnaviv-gpu 130000.gpu: recover hung GPU!", "other_fault"),
    ("v3d fec00000.v3d: MMU error from client L2T (0x40) at 0x1a1000, pte invalid", "other_fault"),
    # Intel's NPU, AMD's XDNA, Qualcomm's AI 100: drm_err and dev_err, read by the families already there
    ("ivpu 0000:00:0b.0: [drm] *ERROR* ivpu_boot_wait_ready(): Failed to boot the firmware: -110", "other_fault"),
    ("amdxdna 0000:c5:00.1: [drm] *ERROR* aie2_hw_start: NPU firmware load failed, ret -5", "other_fault"),
    ("qaic 0000:01:00.0: Failed to create MHI controller -12", "other_fault"),
    # ext4's directory checksum without room, XFS's torn log head and zoned counters
    (
        "EXT4-fs warning (device nvme0n1p3): dx_csum_verify:456: inode #12: comm ls: no space in directory inode 12 "
        "leaf for checksum.  Please run e2fsck -D.",
        "fs_readonly",
    ),
    ("XFS (nvme2n1): zone 17 has used counter (0x8000) larger than write pointer (0x400).", "fs_readonly"),
    ("XFS (nvme2n1): zone 3 write pointer (0x12345) outside of zone.", "fs_readonly"),
    (
        "XFS (sdb): Torn write (CRC failure) detected at log block 0x1a40. Truncating head block from 0x1a48.",
        "fs_readonly",
    ),
    # XFS's log damaged at recovery, ext4's errors recorded before mount or resize, NTFS's own error report
    ("XFS (sdb): log record CRC mismatch: found 0x12345678, expected 0x9abcdef0.", "fs_readonly"),
    ("XFS (dm-4): Log inconsistent (didn't find previous header)", "fs_readonly"),
    ("EXT4-fs warning: mounting fs with errors, running e2fsck is recommended", "fs_readonly"),
    (
        "EXT4-fs warning (device nvme0n1p2): ext4_resize_begin:83: There are errors in the filesystem, so online "
        "resizing is not allowed",
        "fs_readonly",
    ),
    ("NTFS-fs error (device sdb1): ntfs_read_locked_inode(): Failed to read $MFT.", "fs_readonly"),
    # a journal handle refused, a host controller's lost interrupts, NVMe controllers refused and paths all down
    ("JBD2: postgres wants too many credits credits:4096 rsv_credits:0 max:2048", "other_fault"),
    ("ohci-pci 0000:00:12.0: Unlink after no-IRQ?  Controller is probably using the wrong IRQ.", "other_fault"),
    ("nvme nvme3: Duplicate cntlid 1 with nvme2, subsys nqn.2014.08.org.nvmexpress:uuid:abc, rejecting", "other_fault"),
    ("block nvme0n2: no available path - failing I/O", "other_fault"),
]

BENIGN = [
    # x86 show_fault_oops in 4.20: '#PF error: %s' details the 'BUG: unable to handle …' line before it
    "[  55.120043] #PF error: [PROT] [WRITE] [normal kernel write fault]",
    "#PF error: [INSTR]",
    # the same drivers' start-up and recovery lines
    'nouveau 0000:2d:00.0: gsp: firmware "nvidia/ad102/gsp/gsp-535.113.01.bin" loaded',
    "mmc1: new ultra high speed SDR104 SDXC card at address 59b4",
    "panfrost 13000000.gpu: mali-g52 id 0x7402 major 0x1 minor 0x0 status 0x0",
    "etnaviv-gpu 130000.gpu: model: GC2000, revision: 5108",
    "lima 1c40000.gpu: gp - mali400 version major 1 minor 1",
    "mmc0: card 0001 removed",
    "XFS (sdc): Starting recovery (logdev: internal)",
    "XFS (sdc): Ending clean mount",
    "EXT4-fs (sda2): warning: maximal mount count reached, running e2fsck is recommended",
    "PVR_K:(Warning): PVRSRVPowerLock: Device is powered off",
    "PVR_K:  1234: Device: 0, RGX FW Power State: RGXFWIF_POW_ON",
    "habanalabs hl2: Loading secured firmware to device, may take some time...",
    "habanalabs hl2: Successfully finished resetting the device",
    "habanalabs hl7: Found GAUDI2 device with 96GB DRAM",
    "habanalabs hl0: Successfully added device 0000:19:00.0 to habanalabs driver",
    "ivpu 0000:00:0b.0: [drm] Firmware: intel/vpu/vpu_37xx_v0.0.bin, version: 20230726",
    # a bridge's 2 MiB hot-plug reservation, its 32-bit and I/O windows
    "pcieport 0000:40:01.1: BAR 14: failed to assign [mem size 0x00200000]",
    "pcieport 0000:40:01.1: BAR 13: failed to assign [io  size 0x1000]",
    "pcieport 0000:00:1c.0: BAR 15: failed to assign [mem size 0x00200000 64bit pref]",
    # AMD's security processor without SEV (the BIOS leaves it off): no fault of the node
    "ccp 0000:05:00.2: psp initialization failed",
    "ccp 0000:c3:00.1: SEV-SNP: failed to INIT error 0x3",
    "<3>[ 7.2] ccp 0000:c3:00.1: SEV: failed to INIT error 0x1, rc -5",
    "ccp 0000:c3:00.1: SEV: TMR allocation failed, SEV-ES support unavailable",
    "ccp 0000:c3:00.1: SEV API:1.55 build:21",
    "kern  :err   : [    1.23] ccp 0000:05:00.2: tee: ring init command failed (0x00000005)",
    # a drive without a caching mode page, printed at KERN_ERR
    "<3>[ 3.1] sd 6:0:0:0: [sdc] No Caching mode page found",
    "kern  :err   : [    3.1] sd 6:0:0:0: [sdc] Assuming drive cache: write through",
]

# A runtime PSP failure is still one: not the BIOS's choice at probe.
PSP_TIMEOUT = ("ccp 0000:c3:00.1: sev command 0x4 timed out, disabling PSP", "other_fault")
