"""Families holdout4 (GitHub sources) and holdout5 (forums, bug trackers, pastes) showed missing or misjudged,
each written from its printk format and tried here on other drivers, devices and values than the labelled
lines, with the same sources' informational lines beside them."""

from __future__ import annotations

FAULTS = [
    # net/sched/sch_generic.c dev_watchdog 'NETDEV WATCHDOG: %s (%s): transmit queue %u timed out' (6.x:
    # '%s %s: NETDEV WATCHDOG: CPU: %d: transmit queue %u timed out %u ms'): any NIC's stall; Mellanox's is RDMA's
    ("ixgbe 0000:af:00.1 enp175s0f1: NETDEV WATCHDOG: CPU: 12: transmit queue 7 timed out 5120 ms", "other_fault"),
    ("NETDEV WATCHDOG: enp1s0 (r8169): transmit queue 0 timed out", "other_fault"),
    ("mlx5_core 0000:b1:00.1 ens2f1np1: NETDEV WATCHDOG: CPU: 3: transmit queue 11 timed out 6012 ms", "infiniband"),
    ("NETDEV WATCHDOG: ib0 (mlx4_core): transmit queue 0 timed out", "infiniband"),
    ("NETDEV WATCHDOG: eth0: transmit timed out", "other_fault"),  # before 2.6.27: no driver, no queue
    # kernel/rcu/tree_stall.h: the report's pr_cont line, broken off with the 'rcu: ' pr_fmt prefix
    ("rcu: \t(detected by 14, t=15002 jiffies, g=873413, q=1203 ncpus=32)", "soft_lockup"),
    ("[  88.1] rcu: \t(t=21003 jiffies g=40189 q=7 ncpus=4)", "soft_lockup"),
    # sched_show_task before 2.6.30: '%-13.13s %c', ' %08lx ', '%5lu %5d %6d' (no flags column yet)
    ("kjournald     D f7c3be40     0   412      2", "hung_task"),
    # arch/x86/kernel/cpu/mce/core.c print_mce: 'TSC %llx ', 'ADDR %llx ', 'MISC %llx ', 'SYND %llx ',
    # 'PROCESSOR %u:%x TIME %llu SOCKET %u APIC %x microcode %x' (mcelog and split lines lose '[Hardware Error]: ')
    ("TSC 1a2b3c4d5e ADDR 7f8a1000 MISC 140000086 ", "mce_edac"),
    ("TSC 0 MISC d012000100000086 SYND 4d000000 IPID 1002e00000000", "mce_edac"),
    ("PROCESSOR 2:a0655 TIME 1699999999 SOCKET 1 APIC 40 microcode 5003604", "mce_edac"),
    # mce/intel.c and 6.x threshold.c: corrected errors past the interrupt rate
    ("mce: CMCI storm detected: switching to poll mode", "mce_edac"),
    ("mce: CPU27 BANK13 CMCI storm detected", "mce_edac"),
    # libata-core.c sata_down_spd_limit; NICs' own transmit-stall reports
    ("ata5: limiting SATA link speed to 1.5 Gbps", "other_fault"),
    ("bnxt_en 0000:3b:00.0 eth0: TX timeout detected, starting reset task!", "other_fault"),
    ("e1000e 0000:00:1f.6 eno1: Reset adapter unexpectedly", "other_fault"),
    # kernel-open/nvidia: nv.c's interrupt accounting, os-interface.c os_schedule, nv-pci.c BAR checks
    ("NVRM: IRQ number out of valid range", "other_fault"),
    ("NVRM: BAR1 is 256M @ 0x00000000 (PCI:0001:00.0)", "other_fault"),
    ("NVRM: This is a 64-bit BAR mapped above 4GB by the system BIOS or", "other_fault"),
    # nv.c: the driver loaded and found its GPU gone, or left it to a legacy branch
    ("NVRM: No NVIDIA GPU found.", "other_fault"),
    ("NVRM: The NVIDIA GeForce GTX 1050 Ti GPU installed in this system is", "other_fault"),
    ("NVRM:  supported through the NVIDIA 470.xx Legacy drivers. Please", "other_fault"),
    # kernel_gsp.c _kgspLogRpcHistoryEntry '    %c%-4d %-4d %-21.21s [%10u ]0x%016llx (four) %6llu%cs %c'
    (
        "NVRM:     0    4097 GSP_RM_ALLOC          0x000000000000a06f 0x0000000000000000 0x00061e6a9a8e47b1 "
        "0x00061e6a9a8e4816     99us y",
        "gsp",
    ),
    (
        "NVRM:    -2    103  GSP_RM_CONTROL             45211 0x0000000020800a6a 0x0000000000000004 "
        "0x0006404330e91234 0x0006404330e91290     86us  ",
        "gsp",
    ),
    # firmware_loader/main.c 'loading %s failed with error %d': the GSP image is there but unreadable
    ("nvidia 0000:41:00.0: loading /lib/firmware/nvidia/550.54.14/gsp_tu10x.bin failed with error -12", "gsp"),
    # mm/debug.c dump_page 'page dumped because: %s' (bad_page, VM_BUG_ON_PAGE, KASAN)
    ("page dumped because: nonzero _refcount", "other_fault"),
    # kernel/module: a module that does not load
    (
        "mlx5_core: version magic '5.14.0-70.el9.x86_64 SMP preempt mod_unload modversions ' should be "
        "'5.14.0-162.el9.x86_64 SMP preempt mod_unload modversions '",
        "other_fault",
    ),
    ("nvidia_uvm: disagrees about version of symbol nvUvmInterfaceRegisterGpu", "other_fault"),
    ("nvidia_drm: Unknown symbol drm_atomic_helper_check (err -2)", "other_fault"),
    # kernel/resource.c iomem_map_sanity_check: a driver mapping past its own device's BAR
    (
        "resource: resource sanity check: requesting [mem 0x000000fd00000000-0x000000fd00ffffff], which spans "
        "more than 0000:41:00.0 [mem 0xfd00000000-0xfd007fffff 64bit pref]",
        "other_fault",
    ),
    # drivers/nvme/host: pci.c nvme_timeout (3.x 'Timeout I/O %d QID %d', 'Cancelling I/O %d QID %d'),
    # nvme_slot_reset 'restart after slot reset', core.c 'long keepalive RTT (%u ms)'
    ("nvme 0000:5e:00.0: Cancelling I/O 17 QID 4", "other_fault"),
    ("nvme nvme3: restart after slot reset", "other_fault"),
    ("nvme nvme2: long keepalive RTT (15234 ms)", "other_fault"),
    # net/sunrpc/clnt.c call_timeout '%s: server %s not responding, timed out' (%s: the RPC program's name),
    # svc.c 'svc: short len %zd, dropping request'
    ("portmap: server localhost not responding, timed out", "nfs"),
    ("statd: server 10.4.0.2 not responding, still trying", "nfs"),
    ("svc: short len 20, dropping request", "nfs"),
    # drivers/scsi/sd.c: 'request not aligned to the logical block size', 'Unaligned partial completion';
    # scsi_logging's sense lines split from their '[sdX]' head
    ("sd 6:0:0:0: [sdc] Unaligned partial completion (resid=3584, sector_sz=4096)", "other_fault"),
    ("Sense Key : Hardware Error [current] ", "other_fault"),
    ("ata2.00: read unc at 2048", "other_fault"),
    # fs/xfs before 2.6.35: 'Filesystem \"%s\": ' + cmn_err texts; 'xfs_inactive: xfs_ifree() returned an error'
    (
        'Filesystem "sdb1": XFS internal error xfs_trans_cancel at line 1138 of file fs/xfs/xfs_trans.c.  '
        "Caller 0xffffffff8119d2f4",
        "fs_readonly",
    ),
    ('Filesystem "md0": Corruption of in-memory data detected.  Shutting down filesystem: md0', "fs_readonly"),
    ('Filesystem "sda3": Log I/O Error Detected.  Shutting down filesystem: sda3', "fs_readonly"),
    ("xfs_iunlink_remove: xfs_inotobp()  returned an error 22 on sdb1", "fs_readonly"),
    (
        "xfs_force_shutdown(dm-0,0x2) called from line 1206 of file fs/xfs/xfs_log.c.  "
        "Return address = 0xffffffffa04d1234",
        "fs_readonly",
    ),
    (
        'I/O error in filesystem ("sda1") meta-data dev sda1 block 0x1d0a8b8       ("xlog_iodone") error 5 '
        "buf count 4096",
        "fs_readonly",
    ),
    # fs/btrfs: volumes.c 'devid %llu uuid %pU is missing', disk-io.c open_ctree's failures
    ("BTRFS warning (device dm-3): devid 2 uuid 8c1f5d2e-3b4a-4c6d-9e8f-0a1b2c3d4e5f is missing", "fs_readonly"),
    ("BTRFS error (device nvme1n1p3): failed to read chunk tree: -5", "fs_readonly"),
    ("BTRFS: failed to read the system array on sdb", "fs_readonly"),
    # drivers/net/ethernet/broadcom/bnx2x: BNX2X_ERR '[%s:%d(%s)]' from bnx2x_panic_dump / bnx2x_mc_assert
    ("bnx2x: [bnx2x_panic_dump:923(enp4s0f1)]begin crash dump -----------------", "other_fault"),
    ("bnx2x: [bnx2x_mc_assert:736(eth3)]XSTORM_ASSERT_LIST_INDEX 0x2", "other_fault"),
    ("bnx2x: [bnx2x_attn_int_deasserted3:4323(eth0)]MC assert!", "other_fault"),
    (
        "bnx2x: [bnx2x_clean_tx_queue:1205(enp3s0f1)]timeout waiting for queue[3]: "
        "txdata->tx_pkt_prod(12) != txdata->tx_pkt_cons(10)",
        "other_fault",
    ),
    # net/sunrpc/svcsock.c 'rpc-srv/tcp: %s: %s %d when sending %d bytes - shutting down socket'
    ("rpc-srv/tcp: nfsd: got error -104 when sending 140 bytes - shutting down socket", "nfs"),
    # net/sunrpc/xprtsock.c '%s: connect returned unhandled error %d', fs/lockd/mon.c 'lockd: cannot monitor %s'
    ("xs_tcp_setup_socket: connect returned unhandled error -113", "nfs"),
    ("lockd: cannot monitor fileserver02", "nfs"),
    # drivers/pci/controller/dwc/pci-imx6.c: the link would not train
    ("imx6q-pcie 1ffc000.pcie: Speed change timeout", "pcie_link"),
    ("imx6q-pcie 1ffc000.pcie: Failed to bring link up!", "pcie_link"),
]

BENIGN = [
    'Filesystem "loop0": Disabling barriers, trial barrier write failed',
    "lockd: server 10.0.0.5 OK",
    "rpcbind: server nas01 OK",
    # mm/show_mem.c: the dump an OOM report (or SysRq-m) prints says nothing itself
    "Mem-Info:",
    "Node 0 Normal free:51224kB min:45112kB low:56388kB high:67664kB active_anon:1024kB",
    "lowmem_reserve[]: 0 1956 15934 15934 15934",
    "524165 pages RAM",
    "imx6q-pcie 33800000.pcie: Link up, Gen2",
    "imx6q-pcie 1ffc000.pcie: Link: Gen2 disabled",
    "resource: resource sanity check: requesting [mem 0x000c0000-0x000fffff], which spans more than "
    "PCI Bus 0000:00 [mem 0x000c0000-0x000dffff window]",
    "tsc: Refined TSC clocksource calibration: 2893.202 MHz",
    "BTRFS info (device sda2): disk space caching is enabled",
    "nvme nvme0: Shutdown timeout set to 10 seconds",
    "nvidia 0000:41:00.0: Direct firmware load for nvidia/550.54.14/gsp_ga10x.bin failed with error -2",
    "bnx2x 0000:03:00.0 eth0: using MSI-X  IRQs: sp 58  fp[0] 60 ... fp[7] 67",
    # sd.c: a USB stick or a BMC's virtual drive without a caching mode page, at every insertion ('Asking for cache
    # data failed' is a fault since holdout35 labelled it so twice: tests/unit/kernel_cases_holdout34.py)
    "sd 6:0:0:0: [sdb] Assuming drive cache: write through",
    "NVRM: Your system is not currently configured to drive a VGA console",
    "TSC deadline timer available",
    'Filesystem "sda1": Disabling barriers, not supported by the underlying device',
    "XFS mounting filesystem sda1",
    "nfsd: last server has exited, flushing export cache",
    "NVRM:  visit http://www.nvidia.com/object/unix.html for more",
    "mce: CMCI storm subsided: switching to interrupt mode",
    "ata1: SATA link down (SStatus 0 SControl 300)",
    "ice 0000:5e:00.0: PTP reset successful",
    "NFSD: starting 90-second grace period (net f0000098)",
]
