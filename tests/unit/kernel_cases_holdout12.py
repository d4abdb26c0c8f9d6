"""Families holdout12 and holdout13 (tests/data/kernel_lines_holdout12.jsonl, holdout13) showed missing, each
written from its printk format with other drivers, devices and values than the labelled lines, the families next to
them, and the informational lines of the same sources that must stay benign."""

from __future__ import annotations

FAULTS = [
    # the RM's NV_PRINTF lines ('NVRM: ' [GPU%d ] '%s: ' the function) quoted without their 'NVRM: ' head: the RM's
    # own rules judge them (kernel_rc_watchdog.c, thread_state.c, mem_scrub.c, kernel_gsp.c, rpc.c)
    ("GPU1 krcWatchdog_IMPL: RC watchdog: GPU is probably locked!  Notify Timeout Seconds: 5", "other_fault"),
    ("_threadNodeCheckTimeout: _threadNodeCheckTimeout: Timeout was set to: 4000 msecs!", "other_fault"),
    ("GPU2 _scrubWaitAndSave: Timed out when waiting for scrub jobs to finish.", "other_fault"),
    ("rcdbAddRmGpuDump: GPU lost, skipping crash dump", "other_fault"),
    ("GPU7 kgspRcAndNotifyAllChannels_IMPL: RC all channels for critical error 119.", "gsp"),
    ("_kgspRpcRecvPoll: GSP RM heartbeat timed out", "gsp"),
    ("GPU3 _issueRpcAndWait: rpcSendMessage failed with status 0x00000065 for fn 76!", "gsp"),
    ("knvlinkCoreShutdownDeviceLinks_IMPL: Failed to shutdown links for GPU2", "nvlink"),
    # an Xid line quoted without its 'NVRM: ' head still carries its code and device
    (
        "Xid (PCI:0000:b1:00): 48, pid=7121, name=python3, An uncorrectable double bit error (DBE) has been detected",
        "xid",
    ),
    ("[ 8812.113] Xid (PCI:0000:3b:00): 13, Graphics Exception: ESR 0x50c730=0x0 0x50c734=0x0", "xid"),
    # the Intel NICs' hang and reset path (ixgbe_main.c ixgbe_clean_tx_irq e_info 'tx hang %d detected on queue %d,
    # resetting adapter', ixgbe_tx_timeout_reset 'initiating reset due to tx timeout', ixgbe_reset_subtask and igb's
    # igb_reset_task 'Reset adapter' (benign since pass 39: BENIGN below), ixgbe_disable_rx/tx 'RXDCTL.ENABLE on Rx queue %d not cleared within the
    # polling period' and its siblings; ixgbevf, txgbe and ngbe print the same)
    ("ixgbevf 0000:00:06.0: eth1: tx hang 3 detected on queue 0, resetting adapter", "other_fault"),
    ("ixgbe 0000:03:00.1 enp3s0f1: initiating reset due to tx timeout", "other_fault"),
    ("ixgbe 0000:af:00.0: ens1f0: RXDCTL.ENABLE on Rx queue 3 not set within the polling period", "other_fault"),
    (
        "ixgbe 0000:18:00.1: TXDCTL.ENABLE for one or more queues not cleared within the polling period",
        "other_fault",
    ),
    ("ixgbe 0000:81:00.0 eth4: Could not enable Tx Queue 7", "other_fault"),
    # the device gone from the bus (holdout51 labels ixgbe's pcie_link twice, pass 31)
    ("txgbe 0000:b3:00.1: Adapter removed", "pcie_link"),
    ("ixgbe 0000:02:00.0 enp2s0f0: Fan has stopped, replace the adapter", "other_fault"),
    (
        "ixgbe 0000:81:00.1 eth5: Network adapter has been stopped because it has over heated. Restart the computer. "
        "If the problem persists, power off the system and replace the adapter",
        "other_fault",
    ),
    ("igb 0000:07:00.0: The NVM Checksum Is Not Valid", "other_fault"),
    # the hang report's detail lines, each printed on its own line under the NIC's 'Detected Tx Unit Hang'
    ("  Tx Queue             <12>", "other_fault"),
    ("  TDH, TDT             <1f4>, <20a>", "other_fault"),
    ("  next_to_watch.status <0>", "other_fault"),
    # old i386/x86_64 machine check handlers (p4.c, p6.c, k7.c: 'Bank %d: %08x%08x', '[%08x%08x]' MISC,
    # ' at %08x%08x' ADDR; 2.6's x86_64 mce.c 'RIP <%02lx>:%016lx RSP %016lx')
    ("Bank 2: d40040000000017a", "mce_edac"),
    ("<0>Bank 0: b200000000000185[0000000012345678] at 00000000fe8d2040", "mce_edac"),
    ("RIP <10>:ffffffff8100a9b2 RSP ffff8101ffe2bf48", "mce_edac"),
    # the mcelog daemon's decoded report (mcelog.c dump_mce, p4.c decode_mci, nehalem.c decode_memory_controller)
    ("mcelog[1412]: MCA: MEMORY CONTROLLER MS_CHANNEL2_ERR", "mce_edac"),
    ("Jan  3 04:11:52 node7 mcelog[981]: Transaction: Memory scrubbing error", "mce_edac"),
    ("mcelog: MCA: Generic CACHE Level-2 Generic Error", "mce_edac"),
    ("Mar  2 10:41:07 gpu12 mcelog[2003]: MCi status:", "mce_edac"),
    ("Mar  2 10:41:07 gpu12 mcelog[2003]: Uncorrected error", "mce_edac"),
    ("Mar  2 10:41:07 gpu12 mcelog[2003]: Processor context corrupt", "mce_edac"),
    ("Mar  2 10:41:07 gpu12 mcelog[2003]: STATUS bd80000000100134 MCGSTATUS 5", "mce_edac"),
    ("Mar  2 10:41:07 gpu12 mcelog[2003]: CPU 12 BANK 7 TSC 4a0c1bd1d2e6", "mce_edac"),
    (
        "mcelog[3310]: Corrected memory errors on page 1f3a2c000 exceed threshold 10 in 24h: 10 in 24h",
        "mce_edac",
    ),
    # mcelog's successor, rasdaemon: its hardware-error trace events (ras-*-handler.c: the trace head, the level since
    # 0.8, '%Y-%m-%d %H:%M:%S %z', the record), and the kernel's own trace events as trace_pipe prints them
    (
        "rasdaemon[811]:           <...>-811   [012]     0.000004: mc_event:             [ERROR] 2025-02-11 08:14:02 "
        "+0000 1 Corrected error: memory read error on CPU_SrcID#1_MC#0_Chan#2_DIMM#0 (mc: 1 location: 0:2:0 "
        "address: 0x3f2a1000 grain: 32 syndrome: 0x00000000)",
        "mce_edac",
    ),
    (
        "           <...>-2231  [004]   912.000211: memory_failure_event: 2023-07-01 03:22:10 +0200 pfn=0x81b3c "
        "page_type=dirty LRU page action_result=Recovered",
        "mce_edac",
    ),
    (
        "rasdaemon[811]:           <...>-811   [002]     0.000009: aer_event:            [CRIT] 2025-02-11 08:15:44 "
        "+0000 0000:c1:00.0 (NVIDIA Corporation - vendor_id: 0x10de device_id: 0x2330) Poisoned TLP Uncorrected "
        "(Non-Fatal) error",
        "pcie_aer",
    ),
    (
        "  <idle>-0  [021] d.h1. 77120.553: mce_record: CPU: 21, MCGc/s: 1000c16/5, MC12: bd80000000100134, IPID: 0, "
        "ADDR: 7f2a1000, MISC: 86, SYND: 0, RIP: 10:<ffffffff81a3c2d1>, TSC: 2f1e0d, PPIN: 0, vendor: 0, CPUID: 806f8, "
        "time: 1739261744, socket: 1, APIC: 54, microcode: 2b000571",
        "mce_edac",
    ),
    # Solaris/illumos hermon (ConnectX; mcxnex in Solaris 11): HERMON_WARNING '%s%d: %s' with hermon_fm.h's CQE and
    # EQE error strings, HERMON_FMANOTE '%s%d: Device Error: %s', the CQE ERR debug print
    ("Jun  4 02:11:09 nas2 hermon: [ID 158346 kern.info] hermon1: CQE transport retry counter exceeded", "infiniband"),
    ("WARNING: mcxnex1: Device Error: EQE local queue pair catastrophic error", "infiniband"),
    ("hermon0: CQE ERR: cqe ffffff0d1f2a3b40 QPN 0x1a0046 indx 0x3 status 0x15 vendor syndrome 0x81", "infiniband"),
    # mlx5 events.c port_module_event: the module removed or failed, as holdout12 labels it twice (holdout10 once
    # called it benign, and so did holdout9's cases: the later labels win)
    ("[  301.2] mlx5_core 0000:c1:00.1: Port module event: module 1, Cable unplugged", "infiniband"),
    ("mlx5_core 0000:3b:00.0: Port module event: module 0, Cable error", "infiniband"),
    # ext4's warning about a directory block it could not read for EIO (namei.c, dir.c): an I/O error, as labelled;
    # the Kubernetes event (node-problem-detector's kernel-monitor) that wraps it
    (
        "EXT4-fs warning (device sdc1): __ext4_read_dirblock:939: inode #2: comm ls: error -5 reading directory block",
        "other_fault",
    ),
    (
        "  Warning  Ext4Warning  47s (x3 over 2m)  kernel-monitor, gpu-node-3  EXT4-fs warning (device sda1): "
        "htree_dirblock_to_tree:1035: inode #5243: lblock 0: comm du: error -5 reading directory block",
        "other_fault",
    ),
    (
        "  Warning  KernelOops  12m  kernel-monitor  Kernel panic - not syncing: Fatal exception in interrupt",
        "other_fault",
    ),
    # net/core/dev.c netdev_rx_csum_fault: a NIC handed up a packet whose checksum it got wrong
    ("eth2: hw csum failure", "other_fault"),
    ("bnxt_en 0000:41:00.0 enp65s0f0np0: hw csum failure", "other_fault"),
    ("mlx5_core 0000:41:00.0 enp65s0f0np0: hw csum failure", "infiniband"),  # an mlx5 NIC's fault, as labelled
]

BENIGN = [
    # pass 39: the reset after a hang is a recovery step, benign as holdout37, 51 and 63 label it (6 to 4)
    "igb 0000:05:00.0 eno1: Reset adapter",
    # the RM's informational lines without their head stay informational, as with it
    "testIfDsmSubFunctionEnabled: GPS ACPI DSM called before _acpiDsmSupportedFuncCacheInit subfunction = 13",
    "GPU2 gpuClearFbhubPoisonIntrForBug2924523_GA100: FBHUB Interrupt detected. Clearing it.",
    # the NICs' link coming up, the reset that completed, the SFP seen
    "ixgbe 0000:03:00.1 enp3s0f1: NIC Link is Up 10 Gbps, Flow Control: None",
    "ixgbe 0000:03:00.1: eth3: detected SFP+: 6",
    "igb 0000:05:00.0 eno1: igb: eno1 NIC Link is Up 1000 Mbps Full Duplex, Flow Control: RX",
    # the skb dump after a checksum fault says nothing itself
    "skb len=1514 headroom=64 headlen=1514 tailroom=0",
    # mcelog's own start-up and configuration notices
    "mcelog[1412]: warning: 16 bytes ignored in each record",
    "mcelog: failed to prefill DIMM database from DMI data",
    "mcelog[2110]: Kernel does not support page offline interface",
    # rasdaemon's start-up and debug lines
    "rasdaemon[811]: rasdaemon: ras:aer_event event enabled",
    "rasdaemon: mc_event store: 0x5612a0c3e2f0",
    # the cable put back
    "mlx5_core 0000:c1:00.1: Port module event: module 1, Cable plugged",
    # a Kubernetes event about something else
    "  Normal   NodeReady  3m  kubelet  Node gpu-node-3 status is now: NodeReady",
    # the MCE decoder loading (drivers/edac/mce_amd.c)
    "MCE: In-kernel MCE decoding enabled.",
]
