"""Storage families holdout52-58 (tests/data/kernel_lines_holdout52.jsonl … 58) showed missing or of another kind,
each written from its printk format with other devices and values than the labelled lines, and the informational
lines of the same sources that must stay benign."""

from __future__ import annotations

FAULTS = [
    # SCSI sense lines quoted from their 'tag#N ' head on, and the Illegal Request key's LBA and zoned-write codes
    ("tag#1024 FAILED Result: hostbyte=DID_ERROR driverbyte=DRIVER_OK cmd_age=31s", "other_fault"),
    ("tag#7 Sense Key : Hardware Error [current] [descriptor]", "other_fault"),
    ("tag#3 Add. Sense: Unrecovered read error - auto reallocate failed", "other_fault"),
    ("tag#19 Add. Sense: Logical unit not ready, cause not reportable", "other_fault"),
    ("sd 7:0:0:0: [sdh] tag#22 Add. Sense: Unaligned write command", "other_fault"),
    ("sd 5:0:0:0: [sdf] tag#201 Add. Sense: Write boundary violation", "other_fault"),
    ("sd 1:0:0:0: [sdb] Add. Sense: Logical block address out of range", "other_fault"),
    # the old sense dump's descriptor line, libata's result line cut after 'Emask'
    ("Descriptor sense data with sense descriptors (in hex):", "other_fault"),
    ("Unrecognized sense data (in hex):", "other_fault"),
    ("         res 51/04:00:00:00:00/00:00:00:00:00/a0 Emask", "other_fault"),
    # md's failure line without its head, a WARNING cut in its first word
    ("Operation continuing on 3 devices.", "other_fault"),
    ("\tOperation continuing on 5 devices", "other_fault"),
    (
        "ARNING: CPU: 12 PID: 911 at fs/btrfs/transaction.c:1998 btrfs_commit_transaction+0x9e1/0xb50 [btrfs]",
        "other_fault",
    ),
    ("NG: CPU: 3 PID: 0 at kernel/time/timer.c:1681", "other_fault"),
    # dm-cache, dm-thin, dm-clone and dm-era metadata that cannot be read or written
    ("device-mapper: cache: 254:7: could not write cache metadata", "other_fault"),
    ("device-mapper: cache: 252:0: unable to switch cache to write mode until repaired.", "other_fault"),
    ("device-mapper: clone: 253:9: Aborting current metadata transaction", "other_fault"),
    ("device-mapper: cache metadata: policy couldn't load cache block 4096", "other_fault"),
    ("device-mapper: era: couldn't read_lock superblock", "other_fault"),
    # FAT's and exFAT's damage warnings
    ("exFAT-fs (sdd2): Medium has reported failures. Some data may be lost.", "fs_readonly"),
    ("FAT-fs (sdb1): Corrupted directory (i_pos 8421)", "fs_readonly"),
    # Raspberry Pi's SD host errors, with a BusyBox syslogd head too
    ("mmc1: final write to SD card still running", "other_fault"),
    ("mmc0: resetting ongoing cmd 18DMA before 512/2048 [1]/[4] complete", "other_fault"),
    ("sdhost-bcm2835 3f202000.mmc: timeout waiting for hardware interrupt.", "other_fault"),
    ("mmc1: previous command never completed.", "other_fault"),
    (
        "Mar  3 09:12:45 libreelec kern.err kernel: [  412.118034] mmc1: final write to SD card still running",
        "other_fault",
    ),
    ("mmcblk1: timed out sending r/w command, card status 0xe00", "other_fault"),
    # Hyper-V's virtual disk failing a command, old and new formats
    (
        "hv_storvsc 00000000-0001-8899-0000-000000000000: tag#12 cmd 0x8a status: scsi 0x2 srb 0x4 hv 0xc0000001",
        "other_fault",
    ),
    ("hv_storvsc vmbus_0_12: cmd 0x2a scsi status 0x2 srb status 0x4", "other_fault"),
    ("hv_storvsc 3b1ac9b2-6cb6-4c4a-b4c3-8fde1b5f0a7e: Failed to create sub-channel: timed out", "other_fault"),
    # zswap's failed set-up
    ("zswap: default zpool zbud not available", "other_fault"),
    ("zswap: can't enable, initialization failed", "other_fault"),
    ("zswap: alloc failed, zswap disabled for swap type 1", "other_fault"),
    # WSL's init failing a mount
    (
        "<3>WSL (1 - init) ERROR: UtilMount:1846: mount(/dev/sde1, /mnt/wsl/PHYSICALDRIVE3p1, ext4, 0x0, ) failed 22",
        "other_fault",
    ),
    ("ERROR: Mount:2716: mount(/dev/sdc, /share/PHYSICALDRIVE1, (null), 0x0, ) failed", "other_fault"),
]

BENIGN = [
    # the informational sense keys and the CDB line of a quoted failure stay as they were
    "tag#4 Sense Key : Recovered Error [current]",
    "tag#4 CDB: Read(16) 88 00 00 00 00 00 10 20 30 40 00 00 00 08 00 00",
    # (the tag# Illegal Request key and its invalid-command codes are faults since pass 41: kernel_cases_holdout68.py)
    # the dirty bit of an unclean shutdown, as ext4's journal recovery
    "exFAT-fs (sdc1): Volume was not properly unmounted. Some data may be corrupt. Please run fsck.",
    # a Hyper-V TEST UNIT READY probe, which the driver itself logs only as a warning
    "hv_storvsc f8b3781a-1e82-4818-a1c3-63d806ec15bb: tag#0 cmd 0x0 status: scsi 0x2 srb 0x86 hv 0xc0000001",
    # zswap set up with a fallback, its pool loaded
    "zswap: compressor lzo-rle not available, using default lzo",
    "zswap: loaded using pool lz4/z3fold",
    # WSL's other errors, no failed mount
    "<3>WSL (1) ERROR: ConfigApplyWindowsLibPath:2474: open /etc/ld.so.conf.d/ld.wsl.conf failed 2",
    # a VM_BUG_ON's and a btrfs tree-checker report's page-dump reasons: the BUG or the corruption line is the fault
    "page dumped because: VM_BUG_ON_FOLIO(!folio_test_locked(folio))",
    "page dumped because: VM_WARN_ON_ONCE_PAGE(page_ref_count(page) == 0)",
    "page dumped because: eb page dump",
    # a stack dump's header names the CPU and PID without ' at '
    "CPU: 0 PID: 4049 Comm: lvm Not tainted 6.10.0-rc2 #1",
    # BusyBox syslogd's informational kernel lines
    "Jun 21 17:27:58 openelec user.info kernel: [ 1348.102231] mmc0: new high speed SDHC card at address aaaa",
    # a degraded-free md assembly
    "md/raid:md0: raid level 5 active with 4 out of 4 devices, algorithm 2",
]
