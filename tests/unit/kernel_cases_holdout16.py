"""Families holdout16 and holdout17 (tests/data/kernel_lines_holdout16.jsonl, holdout17) showed missing or of the
wrong kind, each written from its printk format with other drivers, devices and values than the labelled lines, the
families next to them, and the informational lines of the same sources that must stay benign."""

from __future__ import annotations

FAULTS = [
    # NVRM: the GSP's boot failure quoted without its function, the RM's assertions printed 'NVRM ' with no colon,
    # an RPC event's name quoted alone (other_fault) where the function that names GSP keeps it gsp, the mappings the
    # RM left behind, a GPU the NVSwitch fabric did not configure
    ("NVRM: GPU3 (the GPU is likely in a bad state and may need to be reset)", "gsp"),
    ("[   41.2] NVRM: (the GPU may be in a bad state and may need to be reset)", "gsp"),
    ("NVRM GPU1 nvAssertFailedNoLog: Assertion failed: pKernelBus != NULL @ kern_bus.c:1203", "other_fault"),
    (
        "NVRM nvCheckOkFailedNoLog: Check failed: Invalid state [NV_ERR_INVALID_STATE] (0x00000040) returned from "
        "kgspExecuteSequencerBuffer(pGpu, pKernelGsp, pParams) @ kernel_gsp.c:1701",
        "other_fault",
    ),
    ("NVRM: GPU1 GSP_LOCKDOWN_NOTICE during bootup without API lock", "other_fault"),
    (
        "NVRM: _kgspProcessRpcEvent: Attempted to process RPC event from GPU1: 0x1017 (MMU_FAULT_QUEUED) during "
        "bootup without API lock",
        "gsp",
    ),
    ("NVRM: clientUnmapResourceRefMappings: hContext: beef0011 at addr 7FC01000", "other_fault"),
    ("NVRM: knvlinkCheckNvswitchP2pConfig_IMPL: GPU 2 doesn't have a fabric address", "nvlink"),
    # nouveau on the GSP-RM (r535.c): an RPC the GSP failed (gsp), its RC and the FIFO killing a channel (other_fault)
    ("nouveau 0000:65:00.0: gsp: cli:0xc1d00004 obj:0xcaf00000 ctrl cmd:0x20800a2a failed: 0x0000001f", "gsp"),
    ("nouveau 0000:2d:00.0: gsp: RM_ALLOC: 0x1f", "gsp"),
    (
        "nouveau 0000:41:00.0: gsp: rc engn:00000002 chid:7 gfid:0 level:2 type:38 scope:1 part:233 "
        "fault_addr:0000000000000000 fault_type:00000000",
        "other_fault",
    ),
    ("nouveau 0000:08:00.0: fifo:000000:0006:[gnome-shell[2211]] errored - disabling channel", "other_fault"),
    ("nouveau 0000:01:00.0: fifo: SCHED_ERROR 0a [CTXSW_TIMEOUT]", "other_fault"),
    ("nouveau 0000:02:00.0: fifo: CACHE_ERROR - ch 3 [Xorg[812]] subc 1 mthd 0060 data 00000000", "other_fault"),
    # Tegra's nvgpu: an ERR-level log line of any unit, and gk20a's dev_err before nvgpu's own log format
    (
        "nvgpu: 17000000.ga10b     ga10b_fifo_ctxsw_timeout_isr:212  [ERR]  Host pfifo ctxsw timeout error",
        "other_fault",
    ),
    (
        "nvgpu: 57000000.gpu gk20a_fifo_handle_pbdma_intr:1877 [ERR]  pbdma_intr_0(0):0x00004000 PBH: 20040001",
        "other_fault",
    ),
    (
        "gk20a 57000000.gpu: gk20a_fifo_handle_mmu_fault: mmu fault on engine 0, engine subid 0 (gpc), client 1 "
        "(t1 0), addr 0x1001b000, type 2 (pde size), access_type 0x00000000,inst_ptr 0x7ff8f000",
        "other_fault",
    ),
    # amdgpu's and radeon's GPU page-fault detail lines (gmc_v*_0.c, *hub_v*_0.c, cik.c)
    ("amdgpu 0000:03:00.0: amdgpu: GCVM_L2_PROTECTION_FAULT_STATUS:0x00841051", "other_fault"),
    ("amdgpu 0000:0c:00.0: amdgpu: \t Faulty UTCL2 client ID: TCP (0x8)", "other_fault"),
    ("amdgpu 0000:0c:00.0: amdgpu: \t WALKER_ERROR: 0x1", "other_fault"),
    ("amdgpu 0000:0c:00.0: amdgpu: \t MAPPING_ERROR: 0x1", "other_fault"),
    ("amdgpu 0000:0c:00.0: amdgpu:   in page starting at address 0x0000800100a00000 from client 27", "other_fault"),
    ("radeon 0000:01:00.0:   VM_CONTEXT1_PROTECTION_FAULT_ADDR   0x0010B1D4", "other_fault"),
    ("amdgpu 0000:01:00.0:   VM_CONTEXT1_PROTECTION_FAULT_STATUS 0x0A04C00C", "other_fault"),
    # amdgpu's firmware not answering: MES, PSP, SMU
    ("amdgpu 0000:83:00.0: amdgpu: MES ring buffer is full.", "other_fault"),
    (
        "amdgpu 0000:0b:00.0: amdgpu: psp gfx command LOAD_TA(0x1) failed and response status is (0xFFFF000A)",
        "other_fault",
    ),
    ("[drm] psp command (0x6) failed and response status is (0x0)", "other_fault"),
    (
        "amdgpu 0000:0e:00.0: amdgpu: SMU: I'm not done with your previous command: SMN_C2PMSG_66:0x00000011 "
        "SMN_C2PMSG_82:0x00000000",
        "other_fault",
    ),
    (
        "amdgpu 0000:0e:00.0: amdgpu: SMU: response:0xFFFFFFFF for index:18 param:0x00000005 "
        "message:TransferTableSmu2Dram?",
        "other_fault",
    ),
    # mlx5's health and command lines quoted without their device head, a LACP port that lost its speed
    ("print_health_info:431:(pid 0): Health issue observed, High temperature, severity(1) ALERT:", "infiniband"),
    ("poll_health:801:(pid 0): device's health compromised - reached miss count", "infiniband"),
    ("mlx5e_tc_esw_init:5210:(pid 1187): Failed to initialize tc, err=-95", "infiniband"),
    ("bond1: (slave ens2f1np1): speed changed to 0 on port 2", "infiniband"),
    # block and filesystem I/O failures that are no journal abort (other_fault)
    ("device-mapper: thin: 252:3: aborting current metadata transaction", "other_fault"),
    ("Trying to write to read-only block-device nvme0n1p3", "other_fault"),
    ("generic_make_request: Trying to write to read-only block-device dm-4 (partno 0)", "other_fault"),
    ("JBD2: Failed to read block at offset 2011", "other_fault"),
    # an expedited RCU stall's lines
    ("rcu: blocking rcu_node structures (internal RCU debug): l=0:0-63:0x1/.", "soft_lockup"),
    (" } 21002 jiffies s: 1213 root: 0x4/.", "soft_lockup"),
    # a suspend that could not freeze, a CPU mitigation not applied, an init that could not run
    ("Freezing of tasks failed after 20.007 seconds (2 tasks refusing to freeze, wq_busy=0):", "other_fault"),
    (
        "Freezing remaining freezable tasks failed after 20.003 seconds (0 tasks refusing to freeze, wq_busy=1):",
        "other_fault",
    ),
    ("4,812,3011,-;Unpatched return thunk in use. This should not happen!", "other_fault"),
    ("Starting init: /bin/sh exists but couldn't execute it (error -8)", "other_fault"),
    ("Failed to execute /sbin/myinit (error -2).  Attempting defaults...", "other_fault"),
    # an SD/eMMC controller or card failing (drivers/mmc)
    ("sunxi-mmc 4020000.mmc: smc 0 err, cmd 18, RD DCRC !!", "other_fault"),
    ("mmc1: Timeout waiting for hardware interrupt.", "other_fault"),
    ("mmc0: Got data interrupt 0x00000002 even though no data operation was in progress.", "other_fault"),
    ("mmcblk0: recovery failed!", "other_fault"),
    # the families next to them: the other GPU drivers' hangs and faults (i915, xe, nouveau's graphics engine,
    # amdgpu's RAS counts, radeon's lockup)
    ("[drm] GPU HANG: ecode 12:1:a8dfbefd, in kwin_x11 [1403], reason: Hang on rcs0, action: reset", "other_fault"),
    ("i915 0000:00:02.0: [drm] GPU HANG: ecode 9:1:85dffffb, in Xorg [1235]", "other_fault"),
    ("i915 0000:00:02.0: [drm] vcs0 heartbeat {seqno:3:4410, prio:-2147483645} not ticking", "other_fault"),
    ("xe 0000:4d:00.0: [drm] GT1: Engine reset: engine_class=vcs, logical_mask: 0x2, guc_id=17", "other_fault"),
    (
        "xe 0000:03:00.0: [drm] Tile0: GT0: Timedout job: seqno=4294967169, lrc_seqno=4294967169, guc_id=2, "
        "flags=0x0 in glxgears [2345]",
        "other_fault",
    ),
    ("xe 0000:03:00.0: [drm] GT0: reset started", "other_fault"),
    (
        "nouveau 0000:01:00.0: gr: GPC1/TPC2/MP trap: global 00000004 [MULTIPLE_WARP_ERRORS] warp 0010 [OOR_ADDR]",
        "other_fault",
    ),
    (
        "nouveau 0000:01:00.0: gr: GPC0/PROP trap: 00000004 [RT_LINEAR_MISMATCH] x = 0, y = 0, format = 14, storage type = 0",
        "other_fault",
    ),
    (
        "nouveau 0000:02:00.0: gr: 00100000 [] ch 5 [007f37e000 firefox[2231]] subc 2 class a297 mthd 1a2c data 00000040",
        "other_fault",
    ),
    (
        "nouveau 0000:01:00.0: fb: trapped write at 0000203000 on channel 3 [1fa9c000 Xorg[966]] engine 00 [PGRAPH] "
        "client 07 [DISPATCH] subclient 04 [M2M_OUT] reason 00000002 [PAGE_NOT_PRESENT]",
        "other_fault",
    ),
    ("amdgpu 0000:0a:00.0: amdgpu: 2 uncorrectable hardware errors detected in UMC block", "other_fault"),
    (
        "amdgpu 0000:b3:00.0: amdgpu: socket: 1, die: 0 4 new correctable hardware errors detected in umc block",
        "other_fault",
    ),
    ("amdgpu 0000:c1:00.0: amdgpu: device lost from bus!", "other_fault"),
    ("radeon 0000:01:00.0: ring 3 stalled for more than 10240msec", "other_fault"),
    # the NVIDIA driver's other non-Xid errors: every line of the IRQ refusal, the recovery action quoted without
    # its Xid; mlx5's health report detail lines quoted without their device
    ("NVRM: Please check your BIOS settings.", "other_fault"),
    ("NVRM: [Assign IRQ to VGA] should be set to YES ", "other_fault"),
    (
        "NVRM: GPU 0000:c3:00.0: GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
        "other_fault",
    ),
    ("assert_exit_ptr 0x00a7b2f4", "infiniband"),
    ("synd 0x8: unrecoverable hardware error", "infiniband"),
    ("irisc_index 3", "infiniband"),
    ("print_health_info:429:(pid 0): hw_id 0x0000020d", "infiniband"),
    # dm-thin's and the persistent-data library's other refusals
    ("device-mapper: thin: 253:4: no free data space available.", "other_fault"),
    ("device-mapper: thin: 253:4: unable to service pool target messages in READ_ONLY or FAIL mode", "other_fault"),
    ("device-mapper: thin metadata: couldn't read superblock", "other_fault"),
    ("device-mapper: space map common: unable to decrement a reference count below 0", "other_fault"),
    # a bond's other members it cannot use (bond_main.c, bond_3ad.c),
    # gk20a's dev_err on an older Tegra device name
    ("bond2: (slave ens1f0np0): Port 1 did not find a suitable aggregator", "infiniband"),
    ("bond0: (slave ens2f0): invalid new link 1 on slave", "infiniband"),
    (
        "gk20a gpu.0: gk20a_fifo_handle_mmu_fault: mmu fault on engine 0, engine subid 0 (gpc), client 1 (t1 0)",
        "other_fault",
    ),
    # AER's error-bit lines and nvme's timeouts quoted without their device
    ("[ 0] RxErr                  (First)", "pcie_aer"),
    ("   [ 6] BadTLP", "pcie_aer"),
    ("[   12.33] [14] CmpltTO                (First)", "pcie_aer"),
    ("I/O 123 QID 4 timeout, aborting", "other_fault"),
    ("I/O tag 12 (100c) opcode 0x2 (I/O Cmd) QID 2 timeout, aborting req_op:READ(0) size:4096", "other_fault"),
    # mlx5_core_err's 'func:line:(pid N): ' head, any function, and pciehp's slot lines, quoted without the device
    ("cmd_work_handler:906:(pid 2211): failed to allocate command entry", "infiniband"),
    ("poll_health:795:(pid 0): Fatal error 3 detected", "infiniband"),
    (
        "wait_func_handle_exec_timeout:1159:(pid 8812): cmd[0]: QUERY_VPORT_COUNTER(0x770) No done completion",
        "infiniband",
    ),
    ("Slot(12): Card not present", "pcie_link"),
    ("Slot(3-1): Link Down", "pcie_link"),
]

NOUVEAU_XID = (
    "nouveau 0000:c1:00.0: gsp: Xid:13 Graphics SM Warp Exception on (GPC 1, TPC 0, SM 1)",
    13,
    "0000:c1:00.0",
)

BENIGN = [
    # amdgpu's faulting process line (6.9+): benign since pass 32, as the earlier sets label it (holdout36, holdout50)
    "amdgpu 0000:03:00.0: amdgpu:  Process blender pid 8812 thread blender:cs0 pid 8840",
    "nouveau 0000:01:00.0: gsp: cli:0xc1d00002 obj:0x00730000 ctrl cmd:0x00731341 params_size:24",
    "nouveau 0000:01:00.0: gsp:msg fn:4108 len:0x20/0x0 res:0x0 resp:0x0",
    "nvgpu: 17000000.gv11b   gk20a_finalize_poweron:613  [INFO]  GPU is powered on",
    "amdgpu 0000:03:00.0: amdgpu: MES FW version must be >= 0x7f to enable LR compute workaround.",
    "amdgpu 0000:0b:00.0: amdgpu: reserve 0xa00000 from 0x83fe000000 for PSP TMR",
    "amdgpu 0000:0e:00.0: amdgpu: SMU is initialized successfully!",
    "mlx5_fw_tracer_start:776:(pid 12011): FWTracer: Ownership granted and active",
    "bond0: (slave enp65s0f1): Enslaving as a backup interface with an up link",
    "device-mapper: thin: Data device (dm-1) discard unsupported: Disabling discard passdown.",
    "rcu: RCU calculated value of scheduler-enlistment delay is 25 jiffies.",
    "Freezing remaining freezable tasks completed (elapsed 0.001 seconds)",
    "Run /init as init process",
    "mmc0: new ultra high speed SDR104 SDXC card at address aaaa",
    "sunxi-mmc 1c0f000.mmc: initialized, max. request size: 16384 KB",
    "mmcblk0: mmc0:aaaa SD64G 59.5 GiB",
    "sdhci-pci 0000:00:1e.6: SDHCI controller found [8086:9d2b] (rev 21)",
    "i915 0000:00:02.0: [drm] GPU hangs can indicate a bug anywhere in the entire gfx stack, including userspace.",
    "i915 0000:00:02.0: [drm] Please file a _new_ bug report at https://gitlab.freedesktop.org/drm/intel/issues/new.",
    "i915 0000:00:02.0: [drm] The GPU crash dump is required to analyze GPU hangs, so please always attach it.",
    "nouveau 0000:01:00.0: DRM: VRAM: 2048 MiB",
    "NVRM: GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)",
    "fw_ver 16.35.2000",
    "device-mapper: thin: 253:2: reached low water mark for data device: sending event.",
    "device-mapper: ioctl: 4.45.0-ioctl (2021-03-22) initialised: dm-devel@redhat.com",
    "sdhci-tegra 3440000.sdhci: Tuning failed, falling back to fixed sampling clock",
    "bond0: (slave ens2f0): link status up again after 0 ms",
    "gk20a gpu.0: gk20a_pm_finalize_poweron: GPU is powered on",
    "Timeout waiting for the firmware to load",
    "handle_hca_cap:438:(pid 6016): log_max_qp value in current profile is 18, changing it to HCA capability limit (17)",
    "Slot(2): Card present",
    "Slot(7): Link Down/Up ignored",
]
