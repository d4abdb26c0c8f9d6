"""Families holdout60-66 (tests/data/kernel_lines_holdout60.jsonl … 66) showed missing or of another kind, each written
from its printk format with other devices and values than the labelled lines, and the informational lines of the same
sources that must stay benign."""

from __future__ import annotations

FAULTS = [
    # F2FS's f2fs_err / f2fs_warn reports of a damaged filesystem (super.c, segment.c, checkpoint.c, node.c, inode.c,
    # compress.c)
    ("F2FS-fs (vdb): Bitmap was wrongly cleared, blk:77312", "fs_readonly"),
    ("F2FS-fs (mmcblk0p40): Mismatch valid blocks 256 vs. 255", "fs_readonly"),
    ("F2FS-fs (dm-3): Failed to initialize F2FS node manager (-117)", "fs_readonly"),
    ("F2FS-fs (sda9): Can't find valid F2FS filesystem in 2th superblock", "fs_readonly"),
    ("F2FS-fs (loop3): Magic Mismatch, valid(0xf2f52010) - read(0x0)", "fs_readonly"),
    ("F2FS-fs (nvme0n1p3): Wrong valid_user_blocks: 1048576, user_block_count: 917504", "fs_readonly"),
    ("F2FS-fs (sdd1): f2fs_check_nid_range: out-of-range nid=1a2b, run fsck to fix.", "fs_readonly"),
    ("F2FS-fs (vda): f2fs_flush_nat_entries failed err:-12, stop checkpoint", "fs_readonly"),
    ("F2FS-fs (loop1): lzo invalid rlen:8192, expected:16384", "fs_readonly"),
    ("F2FS-fs (sdb2): Too many orphan inodes, run fsck to fix.", "fs_readonly"),
    ("F2FS-fs (dm-7): segno 1024 should be free but still inuse!", "fs_readonly"),
    # EROFS: a cluster that does not decompress, a damaged image
    ("erofs (device loop4): failed to decompress (lzma) -EIO @ pa 81920 size 4096 => 12288", "fs_readonly"),
    ("erofs: (device vdc): z_erofs_load_compact_lcluster: bogus lookback distance @ nid 1093", "fs_readonly"),
    ("erofs (device dm-2): invalid checksum 0x3fb2a1c0, 0x8e01d223 expected", "fs_readonly"),
    # overlayfs: an operation failing on its layers; the mount refusing its layers
    ("overlayfs: failed to retrieve lower fileattr (usr/bin, err=-95)", "fs_readonly"),
    ("overlayfs: failed to set redirect (-28)", "fs_readonly"),
    ("overlayfs: upper fs missing required features.", "other_fault"),
    ("overlayfs: failed to verify index dir 'origin' xattr", "other_fault"),
    ("overlayfs: failed to verify upper (var/lib, ino=1832, err=-116)", "other_fault"),
    # btrfs lines cut from their head; a filesystem in its error state
    ("csum failed root 5 ino 9133 off 1310720 csum 0x8941f998 expected csum 0x1c3f7b62 mirror 2", "fs_readonly"),
    ("root 256 ino 771 off 4096 csum 0x00000000 expected csum 0x5d2a1e9c ", "fs_readonly"),
    ("bdev /dev/sdc3 errs: wr 12, rd 0, flush 1, corrupt 0, gen 0", "fs_readonly"),
    ("btrfs_run_delayed_refs:2150: errno=-28 No space left", "fs_readonly"),
    ("parent transid verify failed on logical 30539776 mirror 2 wanted 9112 found 9098", "fs_readonly"),
    ("verify failed on 22036480 wanted 771 found 765", "fs_readonly"),
    ("BTRFS error (device nvme1n1p2 state EA): Transaction aborted (error -5)", "fs_readonly"),
    ("BTRFS info (device dm-3: state EL): balance: ended with status: -30", "fs_readonly"),
    ("BTRFS error (device sde): couldn't get super block location for mirror 1", "fs_readonly"),
    # ext4's inode error cut before '#'
    ("#2883591: comm rsync: Directory index failed checksum", "fs_readonly"),
    ("#131073: block 524290: comm find: bad entry in directory: rec_len is smaller than minimal", "fs_readonly"),
    # DAX and CXL memory, powerpc's kernel access of user memory, x86's double fault with its pr_fmt
    ("pmem1: error: dax access failed (-6)", "other_fault"),
    ("kmem dax1.0: rejecting DAX region with invalid node: -1", "other_fault"),
    ("kmem dax0.1: mapping0: 0x2080000000-0x207fffffff could not reserve region", "other_fault"),
    ("cxl_acpi:cxl_softreserv_mem_work_fn:901: Timeout waiting for cxl_mem probing", "other_fault"),
    ("Kernel attempted to write user page (7fff8000) - exploit attempt? (uid: 1000)", "other_fault"),
    ("kernel tried to execute user page (10012340) - exploit attempt? (uid: 0)", "other_fault"),
    ("traps: PANIC: double fault, error_code: 0x8", "other_fault"),
    # the iSCSI target giving up at ERL=0
    (
        "Unable to recover from DataOut timeout while in ERL=0, closing iSCSI connection for I_T Nexus"
        " iqn.1994-05.com.redhat:c0ffee,i,0x00023d000002,iqn.2003-01.org.linux-iscsi.tgt:sn.1,t,0x01",
        "other_fault",
    ),
    ("Unable to recover from DataOUT CRC failure while ERL=0, closing session.", "other_fault"),
    ("Cannot recover from unknown opcode while ERL=0, closing iSCSI connection.", "other_fault"),
    # bcache's error paths, the function in the pr_fmt
    ("bcache: bch_count_io_errors() sdc1: IO error on writing data to cache, recovering.", "other_fault"),
    (
        "bcache: bch_cache_set_error() error on 2f8c0a1e-6d3b-4f7e-9a55-1c3e7d2b9f40: journal io error, disabling"
        " caching",
        "other_fault",
    ),
    ("bcache: bch_count_backing_io_errors() sdb: IO error on backing device, unrecoverable", "other_fault"),
    # UFS host controller errors
    (
        "ufshcd 0000:00:12.5: ufshcd_err_handler started; HBA state eh_non_fatal; powered 1; shutting down 0;"
        " saved_err = 0x4; saved_uic_err = 0x40; force_reset = 0",
        "other_fault",
    ),
    ("ufshcd-mtk 11270000.ufshci: OCS error from controller = 7 for tag 12", "other_fault"),
    ("ufshcd-qcom 624000.ufshc: uic cmd 0x2 with arg3 0x0 completion timeout", "other_fault"),
    # SMB Direct's RDMA transport, ib_core's failed completions, rbd's object map, a Ceph monitor not reached
    ("CIFS: VFS: smbd_send:2041 disconnected", "nfs"),
    ("CIFS: VFS: smbd_ia_open:681 rdma_create_id() failed -19", "nfs"),
    ("CIFS: VFS: _smbd_get_connection:1622 rdma_connect failed port=445", "nfs"),
    ("ib_core: ib_mad_send_done: IB_WC_RETRY_EXC_ERR", "infiniband"),
    ("rbd: rbd3: post object map update failed: -108", "nfs"),
    ("rbd: rbd0: refresh failed: -2", "nfs"),
    ("libceph: mon2 10.20.0.13:6789 socket closed (con state V1_BANNER)", "nfs"),
    ("libceph: mon1 (1)192.168.40.2:3300 socket closed (con state NEGOTIATING)", "nfs"),
    # an old show_task line cut after its pid
    ("kworker/u16:2   D    0   311", "hung_task"),
]

BENIGN = [
    "F2FS-fs (sdb1): Mounted with checkpoint version = 3ab41c70",
    "F2FS-fs (loop2): Try to recover 1th superblock, ret: 0",
    "F2FS-fs (dm-4): write access unavailable, skipping recovery",
    "F2FS-fs (vdb): recover_inode: ino = 12, name = a.txt, inline = 1",
    "F2FS-fs (sdc): Invalid uid value 70000",
    "erofs: read_super, device -> /dev/loop3",
    "overlayfs: upper fs does not support tmpfile.",
    "overlayfs: failed to verify origin (usr/lib, ino=2210, err=-116)",
    "BTRFS info (device loop1 state M): disk space caching is enabled",
    "libceph: osd3 (1)10.0.0.5:6801 socket closed (con state OPEN)",
    "libceph: mon0 10.0.0.1:6789 socket closed (con state STANDBY)",
    "Read of size 4 at addr ffff888104c3a1c8 by task kworker/2:1/88",
    "Write of size 8 at addr ffffc90000d47d40 by task syz-executor.1/9917",
    "CIFS: Status code returned 0xc0000016 STATUS_MORE_PROCESSING_REQUIRED",
    "ib_core: ib_mad_send_done: IB_WC_SUCCESS",
    "bcache: bch_count_backing_io_errors() sdb: Read-ahead I/O failed on backing device, ignore",
    "Workqueue: ufs_eh_wq_0 ufshcd_err_handler",
]
