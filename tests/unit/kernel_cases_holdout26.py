"""Families holdout26-29 (tests/data/kernel_lines_holdout26.jsonl .. holdout29) showed missing or of another kind in
storage and filesystems, each written from its printk format with other devices, pools and values than the labelled
lines, and the informational lines of the same sources that must stay benign."""

from __future__ import annotations

FAULTS = [
    # OpenZFS spl_panic: the failed check, then 'PANIC at file:line:func()'; zio_done's failed I/O; MMP suspending
    ("[ 5521.104] VERIFY(zp->z_sa_hdl != NULL) failed", "other_fault"),
    (
        "VERIFY3(0 == dmu_buf_hold_array(os, object, offset, size, FALSE, FTAG, &numbufs, &dbp)) failed (0 == 5)",
        "other_fault",
    ),
    ("VERIFY3U(spa->spa_checkpoint_info.sci_dspace, ==, 0) failed (4096 == 0)", "other_fault"),
    ("VERIFY0(dmu_object_free(os, obj, tx)) failed (2)", "other_fault"),
    ("PANIC at zfs_znode.c:611:zfs_znode_alloc()", "other_fault"),
    ("kernel: PANIC at space_map.c:404:space_map_load_callback()", "other_fault"),
    ("PANIC: zfs: adding existent segment to range tree (offset=7f3a2c000 size=4000)", "other_fault"),
    ("WARNING: zfs: freeing free segment (offset=1c000 size=2000)", "other_fault"),
    ("PANIC: blkptr at 0000000071c2e9a4 has invalid COMPRESS 127", "other_fault"),
    (
        "zio pool=tank vdev=/dev/disk/by-id/ata-ST8000NM0055-1RM112_ZA1B2C3D-part1 error=52 type=1 offset=8192 size=4096 flags=180880",
        "other_fault",
    ),
    (
        "WARNING: MMP writes to pool 'scratch' have not succeeded in over 10175 ms; suspending pool. Hrtime 8127733405231",
        "fs_readonly",
    ),
    # Lustre: an assertion and its LBUG are a bug (other_fault); LNet's timeouts over the fabric are the network's (nfs)
    (
        "LustreError: 8412:0:(osc_cache.c:1141:osc_extent_make_ready()) ASSERTION( last_oap_count > 0 ) failed:",
        "other_fault",
    ),
    ("LustreError: 8412:0:(osc_cache.c:1141:osc_extent_make_ready()) LBUG", "other_fault"),
    ("SPLError: 4045:0:(zfs_znode.c:1108:zfs_zget()) ASSERTION(zp->z_sa_hdl == NULL) failed", "other_fault"),
    ("SPLError: 4045:0:(zfs_znode.c:1108:zfs_zget()) SPL PANIC", "other_fault"),
    ("LNetError: 120:0:(lib-move.c:1550:lnet_select_pathway()) ASSERTION( md != NULL ) failed: ", "other_fault"),
    (
        "SPLError: 77:0:(spl-err.c:67:vcmn_err()) WARNING: Pool 'data' has encountered an uncorrectable I/O failure",
        "fs_readonly",
    ),
    (
        "LNetError: 3311:0:(api-ni.c:2212:lnet_startup_lndnet()) Can't load LND tcp, module ksocklnd, rc=256",
        "other_fault",
    ),
    ("LNetError: 3311:0:(api-ni.c:1840:lnet_startup_lndni()) Error -100 starting up LNI o2ib", "other_fault"),
    ("LNet: 2210:0:(o2iblnd_cb.c:3351:kiblnd_check_conns()) Timed out tx for 10.10.4.21@o2ib1: 12 seconds", "nfs"),
    ("LNetError: 2210:0:(o2iblnd_cb.c:3403:kiblnd_check_txs_locked()) Timed out tx: tx_queue, 7 seconds", "nfs"),
    ("LNetError: 77:0:(o2iblnd_cb.c:2772:kiblnd_rejected()) 10.10.4.30@o2ib1 rejected: o2iblnd fatal error", "nfs"),
    (
        "LNetError: 2210:0:(o2iblnd_cb.c:3427:kiblnd_check_conns()) Timed out RDMA with 10.10.4.22@o2ib1 (6): c: 0, oc: 0, rc: 7",
        "nfs",
    ),
    (
        "LNetError: 901:0:(socklnd_cb.c:2527:ksocknal_check_peer_timeouts()) Timeout receiving from 12345-192.168.7.3@tcp (192.168.7.3:988), state 4 wanted 0 left 0",
        "nfs",
    ),
    # BeeGFS client's Logger 'beegfs: comm(pid): message'
    ("beegfs: mount(40211): Unable to connect to management node: mgmtd01 [ID: 1]", "other_fault"),
    (
        "beegfs: mount(733): Configuration error: Unable to read config file /etc/beegfs/beegfs-client.conf",
        "other_fault",
    ),
    # ext4's shutdown ioctl, EIO at the journal start (EROFS there is the filesystem's), exFAT and FAT, loop
    ("EXT4-fs (nvme1n1p1): shut down requested (1)", "fs_readonly"),
    ("EXT4-fs (sdb1): ext4_do_writepages: jbd2_start: 9223372036854775807 pages, ino 4718593; err -5", "other_fault"),
    ("EXT4-fs (sdb1): ext4_do_writepages: jbd2_start: 1024 pages, ino 12; err -30", "fs_readonly"),
    ("EXT4-fs (md0): ext4_da_writepages: jbd2_start: 2048 pages, ino 131074; err -5", "other_fault"),
    ("exFAT-fs (sdc1): failed to read boot sector", "other_fault"),
    ("FAT-fs (mmcblk0p1): unable to read boot sector", "other_fault"),
    ("loop: Write error at byte offset 4096, length 4096.", "other_fault"),
    ("loop0: Read error at byte offset 1048576, length 512.", "other_fault"),
    # UBI's flash errors under UBIFS, ZED's error events
    (
        "ubi1 error: ubi_io_read: error -74 (ECC error) while reading 2048 bytes from PEB 311:4096, read 2048 bytes",
        "other_fault",
    ),
    ("UBI error: ubi_io_write: error -5 while writing 4096 bytes to PEB 77:8192, written 0 bytes", "other_fault"),
    (
        "zed[2231]: eid=41 class=checksum pool='scratch' vdev=nvme3n1p1 algorithm=fletcher4 size=131072 offset=9437184",
        "other_fault",
    ),
    # UBIFS errors, older without the volume, and the read-only switch; XFS's shutdown advice on its own line
    ("UBIFS error (ubi1:0 pid 311): ubifs_read_node: bad node type (255 but expected 9)", "fs_readonly"),
    (
        "UBIFS error (pid 1): ubifs_recover_leb: corrupt empty space LEB 17:12288, corruption starts at 14336",
        "fs_readonly",
    ),
    ("UBIFS warning (ubi0:0 pid 98): ubifs_ro_mode: switched to read-only mode, error -22", "fs_readonly"),
    ("Please unmount the filesystem, and rectify the problem(s)", "fs_readonly"),
    ("Please umount the filesystem and rectify the problem(s)", "fs_readonly"),
    # NVMe over Fabrics: host reconnects and connect refusals, the target losing a host
    ('nvme nvme2: Connect Invalid Data Parameter, subsysnqn "nqn.2024-01.io.example:pool7"', "other_fault"),
    ("nvme nvme1: Connect Invalid SQE Parameter, syopcode 0x7f", "other_fault"),
    ("nvme nvme5: failed to connect queue: 3 ret=-18", "other_fault"),
    ("nvme nvme3: Removing controller (-111)...", "other_fault"),
    ("nvme nvme0: Removing controller...", "other_fault"),
    ("nvmet: connect request for invalid subsystem nqn.2019-08.org.qemu:scratch!", "other_fault"),
    ("nvmet: ctrl 12 keep-alive timer (15 seconds) expired!", "other_fault"),
    (
        "nvmet: could not find controller 7 for subsys nqn.2019-08.org.qemu:nvme-tgt / host nqn.2014-08.org.nvmexpress:uuid:1b4e28ba",
        "other_fault",
    ),
    # Fusion-MPT (mptbase, mptsas, mptscsih) ERROR/WARNING formats, its IOCStatus; MPT SAS faults and probe failures
    ("mptbase: ioc2: ERROR - Doorbell ACK timeout (count=4999), IntStatus=80000000!", "other_fault"),
    ("mptbase: ioc0: WARNING - IOC is in FAULT state (2622h)!!!", "other_fault"),
    ("mptsas: ioc1: ERROR - Diagnostic reset FAILED! (102h)", "other_fault"),
    ("mptscsih: ioc0: IOCStatus=8048 LogInfo=31120303", "other_fault"),
    (
        "mptbase: ioc2: LogInfo(0x31120403): Originator={PL}, Code={Abort}, SubCode(0x0403) cb_idx mptscsih_io_done",
        "other_fault",
    ),
    ("mpt2sas_cm1 fault info from func: _base_wait_for_doorbell_int", "other_fault"),
    ("mpt3sas_cm0: pci_request_selected_regions: failed", "other_fault"),
    ("mpt3sas_cm2: failure at drivers/scsi/mpt3sas/mpt3sas_base.c:3021/mpt3sas_base_map_resources()!", "other_fault"),
    ("sd 4:2:1:0: [sdb] tag#211 task abort FAILED!! scmd(0x000000004a7ce2f1)", "other_fault"),
    ("sd 0:0:12:0: task abort called for scmd(ffff8810273c4a80)", "other_fault"),
    ("sd 0:0:12:0: target reset called for scmd(ffff8810273c4a80)", "other_fault"),
    ("qla2xxx [0000:81:00.1]-801c:3: Abort command issued nexus=3:0:7 --  2002.", "other_fault"),
    (
        "mpt2sas_cm1: _base_wait_for_doorbell_ack: failed due to timeout count(10000), doorbell_reg(2000)!",
        "other_fault",
    ),
    # 2.6 kernels' SCSI error and sense lines; the result line, which every labelled set calls a fault
    ("SCSI error : <2 0 1 0> return code = 0x8000002", "other_fault"),
    ("Device sdc not ready.", "other_fault"),
    ("Info fld=0x1d2c0, Current sdb: sense key Hardware Error", "other_fault"),
    ("sda: Current: sense key: Medium Error", "other_fault"),
    ("sd 7:0:3:0: [sdk]  Result: hostbyte=DID_OK driverbyte=DRIVER_OK", "other_fault"),
    ("sd 0:0:1:0: [sdb] Result: hostbyte=DID_OK driverbyte=DRIVER_OK,SUGGEST_OK", "other_fault"),
    # the RPC client's connect failures (rpc_debug) and mount.nfs failing
    ("RPC:  1203 xprt_connect_status: connect attempt timed out", "nfs"),
    ("RPC: 88 xprt_connect_status: error 113 connecting to server 10.0.8.4", "nfs"),
    ("mount.nfs: mounting nas02:/export/scratch failed, reason given by server: Permission denied", "nfs"),
    ("mount.nfs4: Connection timed out", "nfs"),
    ("mount.nfs: requested NFS version or transport protocol is not supported", "nfs"),
    # the old ps-style hung-task line copied with no-break spaces around its state letter
    (
        "[ 3602.118] kworker/u16:2\u00a0\u00a0 D\u00a0\u00a0\u00a0 0 48213\u00a0\u00a0\u00a0\u00a0\u00a02 0x80000000",
        "hung_task",
    ),
]

BENIGN = [
    # an NVMe-oF host's retry notice: the error-recovery line before it is the fault (holdout43 labels it benign twice)
    "nvme nvme0: Reconnecting in 2 seconds...",
    # the same sources' informational lines
    "ZFS: Loaded module v2.2.4-1, ZFS pool version 5000, ZFS filesystem version 5",
    "zio pool=tank vdev=/dev/sda1 error=0 type=1 offset=0 size=4096 flags=180880",
    "LNet: 2431:0:(o2iblnd_cb.c:3174:kiblnd_check_conns()) Skipped 7 previous similar messages",
    "LNet: Added LNI 10.10.4.20@o2ib1 [8/256/0/180]",
    "LustreError: 3347:0:(client.c:2114:ptlrpc_expire_one_request()) Skipped 13 previous similar messages",
    "LNetError: 2210:0:(o2iblnd_cb.c:3427:kiblnd_check_conns()) Skipped 1 previous similar message",
    "Lustre: Mounted scratch-client",
    "beegfs: mount(2231): Built without NVFS RDMA support.",
    "EXT4-fs (nvme0n1p2): mounted filesystem 7a1f5906-150c-4657-a3ea-b27c948b76b0 r/w with ordered data mode.",
    'UBIFS (ubi0:1): mounted UBI device 0, volume 1, name "rootfs"',
    "loop3: detected capacity change from 0 to 8192",
    "nvme nvme0: Successfully reconnected (2 attempts)",
    'nvme nvme1: Removing ctrl: NQN "nqn.2024-01.io.example:pool7"',
    "nvmet: adding nsid 3 to subsystem nqn.2019-08.org.qemu:nvme-tgt",
    "zed: eid=12 class=statechange pool='scratch' vdev=nvme3n1p1 vdev_state=ONLINE",
    "zfs: module license 'CDDL' taints kernel.",
    "mount.nfs: mount point /mnt/scratch does not exist",
    'ubi0: attached mtd4 (name "ubi", size 64 MiB)',
    "mpt2sas_cm1: removing handle(0x000b), sas_addr(0x5000c500a1b2c3d4)",
    "mptbase: ioc0: Recovered from IOC FAULT",
    "mptbase: ioc1: Initiating bringup",
    "mptbase: ioc3: WARNING - mpt_fault_reset_work: HardReset: success",
    "mpt3sas_cm1: diag reset: SUCCESS",
    "sd 4:2:1:0: [sdb] tag#211 task abort SUCCESS!! scmd(0x000000004a7ce2f1)",
    "Info fld=0x0, Current sda: sense key No Sense",
    "RPC:  1203 xprt_connect_status: retrying",
    "bash            S    0  4211   4207 0x00000000",
]
