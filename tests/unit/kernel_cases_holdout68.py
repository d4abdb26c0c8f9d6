"""Families holdout68/70/73 (tests/data/kernel_lines_holdout68.jsonl, 70, 73) showed missing, each written from its
printk format with other devices and values than the labelled lines, and the informational lines of the same
sources that must stay benign."""

from __future__ import annotations

FAULTS = [
    # LDM (Windows dynamic disk) partition tables unreadable, amiga's partition block
    ("ldm_validate_privheads(): Disk read failed.", "other_fault"),
    ("ldm_validate_tocblocks(): Disk read failed for TOCBLOCK 2.", "other_fault"),
    ("ldm_validate_vmdb(): Database is not in a consistent state.  Aborting.", "other_fault"),
    ("Dev sdd: unable to read partition block 4", "other_fault"),
    # the SLAB allocator's poison check, cut after the cache
    ("Slab corruption (Tainted: G        W ): kmalloc-512", "other_fault"),
    # pktcdvd, null_blk, floppy, sd's out-of-range request
    ("pktcdvd: unable to register block device", "other_fault"),
    ("pktcdvd: max 8 writers supported", "other_fault"),
    ("null_blk: rq 00000000c0ffee42 timed out", "other_fault"),
    ("floppy: error -5 while reading block 0", "other_fault"),
    ("sd 2:0:0:1: [sdf] tag#31 access beyond end of device", "other_fault"),
    # libata's device gone
    ("ata4.01: both IDENTIFYs aborted, assuming NODEV", "other_fault"),
    ("ata9.00: detaching (SCSI 8:0:0:0)", "other_fault"),
    # a failed command's Illegal Request sense under scmd_printk's tag# head
    ("sd 5:0:0:0: [sde] tag#12 Sense Key : Illegal Request [current] [descriptor]", "other_fault"),
    ("sd 1:0:0:0: [sdb] tag#3 Add. Sense: Invalid field in parameter list", "other_fault"),
    ("sd 0:0:0:0: [sda] tag#9 Add. Sense: Invalid command operation code", "other_fault"),
    ("sd 3:0:0:0: [sdd] tag#2 Sense Key : Illegal Request [current]", "other_fault"),
    # HBAs: megaraid_sas, qla2xxx, hpsa, lpfc, libsas, mpt3sas
    ("megaraid_sas 0000:3b:00.0: Could not allocate memory for local map", "other_fault"),
    ("megaraid_sas 0000:3b:00.0: Failed to allocate controller info buffer", "other_fault"),
    ("qla2xxx [0000:41:00.1]-8038:3: Cable is unplugged...", "other_fault"),
    ("qla2xxx [0000:41:00.1]-0121:3: Firmware ready **** FAILED ****.", "other_fault"),
    ("qla2xxx [0000:41:00.1]-2009:3: qla2x00_configure_loop *** FAILED ***.", "other_fault"),
    ("hpsa 0000:03:00.0: failed 128 commands in fail_all", "other_fault"),
    ("hpsa 0000:03:00.0: Controller lockup detected during reset wait", "other_fault"),
    ("hpsa 0000:03:00.0: scsi 2:0:3:0: reset physical  failed Direct-Access     ATA      MB2000GCWDA", "other_fault"),
    (
        "**** lpfc_nvme_remoteport_delete: Null vport on ndlp x000000001234abcd, ste x2 rport x0000000055aa55aa",
        "other_fault",
    ),
    ("sas: Internal abort: timeout 5000c500a1b2c3d4", "other_fault"),
    ("_base_fault_reset_work: Running mpt3sas_dead_ioc thread failed !!!!", "other_fault"),
    # btrfs scrub's damaged metadata, a csum warning cut
    (
        "BTRFS warning (device sdb2): scrub: tree block 30539776 mirror 1 has bad bytenr, has 0 want 30539776",
        "fs_readonly",
    ),
    ("BTRFS warning (device nvme0n1p3): tree block 1048576 mirror 0 has bad generation, has 7 want 9", "fs_readonly"),
    ("BTRFS error (device sdc): super block at physical 65536 devid 2 has bad csum", "fs_readonly"),
    ("BTRFS warning (device vdb): csum", "fs_readonly"),
    # dm's persistent-data block manager, T10 protection information
    ("device-mapper: block manager: btree_node validator check failed for block 146", "other_fault"),
    ("device-mapper: block manager: validator mismatch (old=index vs new=sm_bitmap) for block 9", "other_fault"),
    ("nvme1n1: ref tag error at location 2048 (rcvd 0)", "other_fault"),
    ("sdk: guard tag error at sector 16384 (rcvd 1a2b, want 3c4d)", "other_fault"),
    # x86 MSR access a kernel bug made, an AMD-Vi event cut after 'logged'
    (
        "unchecked MSR access error: RDMSR from 0xc0011029 at rIP: 0xffffffff8106b3a2 (native_read_msr+0x2/0x30)",
        "other_fault",
    ),
    ("ahci 0000:05:00.0: AMD-Vi: Event logged", "other_fault"),
    # hung-task reports a mail cut
    ("jbd2/sda1-8:412 blocked for more than 245 seconds.", "hung_task"),
    ("INFO: task", "hung_task"),
]

BENIGN = [
    # LDM's and pktcdvd's, null_blk's informational lines
    "pktcdvd: pktcdvd1: writer mapped to sr1",
    "null_blk: disk nullb2 created",
    "null_blk: module loaded",
    # a probe's sense without the tag# of a failed command, and the informational keys
    "sd 2:0:0:0: [sdc] Add. Sense: Invalid field in cdb",
    "sd 4:0:0:0: [sdf] tag#1 Sense Key : Recovered Error [current]",
    # btrfs scrub's start and finish, the HBAs' notices
    "BTRFS info (device sda1): scrub: started on devid 1",
    "BTRFS info (device sda1): scrub: finished on devid 1 with status: 0",
    "qla2xxx [0000:00:00.0]-0005: : QLogic Fibre Channel HBA Driver: 10.02.09.100-k.",
    "megaraid_sas 0000:3b:00.0: current msix/online cpus      : (64/64)",
    "_base_fault_reset_work: hard reset: success",
]
