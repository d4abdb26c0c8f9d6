"""GPU, NIC, PCIe and CPU/memory families holdout26-29 (tests/data/kernel_lines_holdout26.jsonl .. 29) showed missing,
of another kind or flagged, each written from its printk format with other devices and values than the labelled lines,
and the informational lines of the same sources that must stay benign."""

from __future__ import annotations

FAULTS = [
    # kernel_gsp_frts_tu102.c: FWSEC did not set up the WPR2 region the GSP boots in
    ("NVRM: GPU1 kgspExecuteFwsec_TU102: failed to execute FWSEC for FRTS: status 0x65", "gsp"),
    ("NVRM: s_executeFwsec_TU102: failed to execute FWSEC for FRTS: WPR2 initialized at an unexpected location", "gsp"),
    ("NVRM: GPU0 kgspPrepareForFwsecFrts_TU102: failed to prepare interface data for FRTS: 0x56", "gsp"),
    # nouveau falcon/gm200.c: the GSP's booter falcon's mailbox after a failed boot; another falcon's; runl.c recovery
    ("nouveau 0000:65:00.0: gsp: mbox 00000001 0000dead", "gsp"),
    ("nouveau 0000:2d:00.0: sec2(acr): mbox 00000000 cafebeef", "other_fault"),
    ("nouveau 0000:41:00.0: fifo:000002:0003:[Xorg[1022]] rc scheduled", "other_fault"),
    # nv.c cut before 'cables'; amdgpu's reset that lost VRAM, the KFD's stuck preemption
    ("NVRM: GPU 0000:c1:00.0: GPU does not have the necessary power", "other_fault"),
    ("amdgpu 0000:03:00.0: amdgpu: VRAM is lost due to GPU reset!", "other_fault"),
    (
        "amdgpu 0000:c3:00.0: amdgpu: The cp might be in an unrecoverable state due to an unsuccessful queues",
        "other_fault",
    ),
    ("[drm] RAS event of type ERREVENT_ATHUB_INTERRUPT detected!", "other_fault"),
    ("qcm fence wait loop timeout expired", "other_fault"),
    ("Failed to suspend process 0x8003", "other_fault"),
    # ENA's register reads and reset failing, its lost-completions threshold in the 6.x wording; bnxt's HWRM timeouts
    ("[ENA_COM: ena_com_reg_bar_read32] reading reg failed for timeout. expected: req id[3] offset[0]", "other_fault"),
    ("ena 0000:00:06.0 eth1: Reading reg failed for timeout. expected: req id[7] offset[8]", "other_fault"),
    ("ena 0000:00:06.0: Reg read32 timeout occurred", "other_fault"),
    ("ena 0000:00:07.0: Device isn't ready, can't reset device", "other_fault"),
    ("ena 0000:00:07.0: Reset indication didn't turn off", "other_fault"),
    ("ena 0000:00:08.0: Can not reset device", "other_fault"),
    ("ena 0000:00:09.0: Can not initialize ena admin queue with device", "other_fault"),
    ("ena 0000:00:08.0: ENA device init failed", "other_fault"),
    (
        "ena 0000:00:05.0 eth0: Lost TX completions are above the threshold (200 > 128). "
        "Completion transmission timeout: 5000.",
        "other_fault",
    ),
    (
        "ena 0000:00:05.0 eth0: TX hasn't completed, qid 3, index 120. 6000 usecs from last napi execution",
        "other_fault",
    ),
    ("bnxt_en 0000:3b:00.0 enp59s0f0np0: Resp cmpl intr err msg: 0xc1", "other_fault"),
    ("bnxt_en 0000:3b:00.1 eth3: Error (timeout: 500015) msg {0x23 0x2f1} len:0", "other_fault"),
    ("bnx2x 0000:82:00.1 eth5: [bnx2x_attn_int_deasserted3:4411(eth5)]MCP assert!", "other_fault"),
    # pciehp: the slot powered but no link; pci.c's power-state failure cut before 'from'
    ("pcieport 0000:80:03.0: pciehp: Slot(12-3): No link", "pcie_link"),
    ("pciehp 0000:00:1c.4:pcie004: Slot(7): No link", "pcie_link"),
    ("nvidia 0000:41:00.0: Unable to change power state", "pcie_link"),
    # xhci after resume, a BAR another driver owns (both apostrophes), Intel IOMMU's RMRR refusal
    ("xhci_hcd 0000:00:14.0: Controller not ready at resume -110", "other_fault"),
    ("xhci-pci-renesas 0000:05:00.0: PCI post-resume error -19!", "other_fault"),
    ("xhci_hcd 0000:3e:00.0: Host controller not halted, aborting reset.", "other_fault"),
    ("xhci_hcd 0000:00:14.0: WARN: xHC save state timeout", "other_fault"),
    ("nvidia 0000:3b:00.0: BAR 0: can't reserve [mem 0xd2000000-0xd2ffffff]", "other_fault"),
    ("mlx5_core 0000:5e:00.0: BAR 0: can\u2019t reserve [mem 0x38bffe000000-0x38bfffffffff 64bit pref]", "other_fault"),
    ("ahci 0000:00:17.0: device not available (can't reserve [mem 0x92f00000-0x92f07fff])", "other_fault"),
    (
        "DMAR: Device is ineligible for IOMMU domain attach due to platform RMRR requirement.  "
        "Contact your platform vendor.",
        "other_fault",
    ),
    # cxl irq.c and native.c: a CAPI slice error and its decoded bits
    ("cxl afu1.0: PSL Slice error received. Check AFU for root cause.", "other_fault"),
    ("cxl afu1.0: AFU MMIO Timeout", "other_fault"),
    ("cxl afu0.0: CXL_PSL_ErrStat_An: 0x0000000000000080", "other_fault"),
    # POWER: EEH isolating a PHB or PE, the HMI report's lines
    ("EEH: Frozen PHB#1-PE#fe detected", "pcie_aer"),
    ("EEH: dead PHB#4 detected, location: U78D3.001.WZS0K1Z-P1-C6", "pcie_aer"),
    ("EEH: Frozen PE#1f on PHB#0 detected", "pcie_aer"),
    ("EEH: PHB#3-PE#0 has failed 6 times in the last hour and has been permanently disabled.", "pcie_aer"),
    ("EEH: Beginning: 'error_detected(permanent failure)'", "pcie_aer"),
    ("EEH: Reset without hotplug activity", "pcie_aer"),
    ("EEH: Recovery successful.", "pcie_aer"),
    # POWER's machine check report, 4.20+ and before
    ("MCE: CPU12: machine check (Warning) Host TLB Multihit [Recovered]", "mce_edac"),
    ("MCE: CPU12: NIP: [c0000000000a6f3c] __flush_tlb_power9+0x1c/0x60", "mce_edac"),
    ("MCE: CPU5: Probable Hardware error (some chance of software cause)", "mce_edac"),
    ("  Error type: SLB [Multihit]", "mce_edac"),
    ("    Effective address: 00003fff92d40000", "mce_edac"),
    ("Severe Hypervisor Maintenance interrupt [Not recovered]", "mce_edac"),
    (" Hypervisor Maintenance interrupt [Recovered]", "mce_edac"),
    (" Error detail: Timer facility experienced an error", "mce_edac"),
    ("\tTFMR: 2d4a8c0000000000", "mce_edac"),
    ("\t[Unit: PC ] Hang Recovery Failed (core check stop)", "mce_edac"),
    # i386 traps.c mem_parity_error; mcelog's decoded cache and TLB errors quoted without 'MCA: '
    ("<0>Uhhuh. NMI received. Dazed and confused, but trying to continue", "mce_edac"),
    ("You probably have a hardware problem with your RAM chips", "mce_edac"),
    ("Data CACHE Level-1 Data-Read Error", "mce_edac"),
    ("Instruction TLB Level-0 Error", "mce_edac"),
    # mcelog's record of a machine check quoted without its tag
    ("CPU 12 BANK 5 TSC 2f1e8a7b9c0d", "mce_edac"),
    ("STATUS be00000000800400 MCGSTATUS 5", "mce_edac"),
    ("MCGCAP 1c09 APICID 1a SOCKETID 1", "mce_edac"),
    ("Internal unclassified error: 1031", "mce_edac"),
    # testmgr.c self-tests failing, an end marker cut short, a debugging kernel's bad-page check
    ("alg: self-tests for sha256-avx2 (sha256) failed (rc=-22)", "other_fault"),
    (
        "alg: skcipher: cbc-aes-aesni encryption failed on test vector 3; expected_error=0, actual_error=-5",
        "other_fault",
    ),
    ("[ 88.1] ---[ end trace 0000000000000000 ]-", "other_fault"),
    ("---[ end trace 5d1f2a09c3b7e684", "other_fault"),
    ("free_pages_check()::1208 BAD page mapping: mapping=0000000012345678", "other_fault"),
    # the labels' majority where the sets disagree: a Mellanox Ethernet port's carrier loss (three lines, none benign)
    ("mlx4_en: ens2f1: Link Down", "infiniband"),
]

BENIGN = [
    # the same sources' informational and recovery lines
    "nouveau 0000:01:00.0: gsp: released sec2 falcon",
    "amdgpu 0000:03:00.0: amdgpu: GPU reset(2) succeeded!",
    "Evicting PASID 0x8003 queues",
    "Finished restoring pasid 0x8003",
    "ena 0000:00:05.0 eth0: Device reset completed successfully, Driver info: Elastic Network Adapter (ENA) v2.8.0g",
    "pcieport 0000:80:03.0: pciehp: Slot(12-3): Link Up",
    "pci 0000:00:02.0: BAR 2: assigned [mem 0x4000000000-0x400fffffff 64bit pref]",
    "DMAR: [Firmware Bug]: RMRR entry for device 05:00.0 is broken - applying workaround",
    "EEH: PHB#0 informative error detected, location: N/A",
    "EEH: PowerNV platform initialized",
    "xhci_hcd 0000:00:14.0: xHC error in resume, USBSTS 0x401, Reinit",
    "Harmless Hypervisor Maintenance interrupt [Recovered]",
    "alg: No test for fips(ansi_cprng) (fips_ansi_cprng)",
    "mlx4_en: ens2f1: Link Up",
    # i915's ghost eDP panel dropped at probe
    "i915 0000:00:02.0: [drm] [ENCODER:106:DDI B/PHY B] failed to retrieve link info, disabling eDP",
    "i915 0000:00:02.0: [drm] [ENCODER:235:DDI A] HPD is down, disabling eDP",
    # the labels' majority: the LACP partner's silence (holdout8, holdout28), the OOM report's slab dump header
    "bond1: Warning: No 802.3ad response from the link partner for any adapters in the bond",
    "[ 902.1] Unreclaimable slab info:",
]
