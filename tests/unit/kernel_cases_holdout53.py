"""Families holdout52-58 (tests/data/kernel_lines_holdout52.jsonl … 58) showed missing or of another kind in the GPU
drivers (pass 32), each written from its printk format with other devices and values than the labelled lines, and the
informational lines of the same sources that must stay benign."""

from __future__ import annotations

FAULTS = [
    # amdgpu / amdkfd: fences, compute queues, GPU-VM mappings
    ("amdgpu 0000:0a:00.0: Fence fallback timer expired on ring sdma0", "other_fault"),
    ("amdgpu: Pasid 0x8003 DQM create queue type 2 failed. ret -12", "other_fault"),
    ("amdgpu: Pasid 0x8011 destroy queue 3 failed, ret -110", "other_fault"),
    ("kfd: Unmapping queues failed.", "other_fault"),
    ("amdgpu: Failed to map bo to gpuvm", "other_fault"),
    ("Failed to unmap from gpu 1/2", "other_fault"),
    ("amdgpu: init_user_pages: Failed to get user pages: -22", "other_fault"),
    ("kfd2kgd: amdgpu_vm_bo_update failed", "other_fault"),
    ("amdgpu: Failed to map VA 0x7f0000200000 in vm. ret -12", "other_fault"),
    # SDMA privilege violation and its detail
    (
        "amdgpu 0000:43:00.0: amdgpu: SDMA gets an Register Write SRBM_WRITE command in non-privilege command buffer",
        "other_fault",
    ),
    ("amdgpu 0000:43:00.0: amdgpu: Illegal instruction in SDMA command stream", "other_fault"),
    (
        "amdgpu 0000:43:00.0: amdgpu: [sdma1] address:0x00007f1200000000 src_id:220 ring:0 vmid:3 pasid:32771,"
        " for process hipcc pid 811 thread hipcc pid 811",
        "other_fault",
    ),
    # page-fault reports: FreeBSD's device name, the 4.x detail line, a cut status line
    (
        "drmn1: [mmhub0] no-retry page fault (src_id:0 ring:24 vmid:2 pasid:32769, for process X pid 7 thread X pid 7)",
        "other_fault",
    ),
    ("amdgpu 0000:0b:00.0:   at page 0x0000000100a00000 from 27", "other_fault"),
    ("amdgpu 0000:0b:00.0: amdgpu: GCVM_L2_PROTECTION_FAULT_STATUS", "other_fault"),
    ("[drm] psp gfx command LOAD_TA(0x1) failed and", "other_fault"),
    # old i915 hangs, its WARN_ON text, 6.x fence timeouts
    ("[drm] stuck on bsd ring", "other_fault"),
    ("[drm] Resetting chip after gpu hang", "other_fault"),
    ("WARN_ON(!intel_irqs_enabled(dev_priv))", "other_fault"),
    ("Fence expiration time out i915-0000:00:02.0:gnome-shell[1532]:2f4!", "other_fault"),
    # a cut 6.x WARNING head, nouveau's cut bus fault
    ("WARNING: drivers/gpu/drm/i915/display/intel_display.c:7012 at", "other_fault"),
    ("nouveau 0000:02:00.0: bus: MMIO read", "other_fault"),
    # Jetson: nvgpu's error macro without its device, host1x's stuck syncpoints
    ("nvgpu: gv11b_fifo_handle_sched_error [ERR] fifo sched error", "other_fault"),
    ("nvgpu: 17000000.ga10b nvgpu_pmu_wait_fw_ready:85 [ERR] PMU not ready", "other_fault"),
    ("host1x 50000000.host1x: 15340000.vic: syncpoint id 12 (vic) stuck waiting 4, timeout=2147483647", "other_fault"),
    # NVRM's IOMMU mapping outside the GPU's DMA window, TTM, arm64's IOMMU set-up
    ("NVRM: memdescMapIommu: 0x4000000000 is not addressable by GPU 0x200 [0x0-0x3fffffffff]", "other_fault"),
    ("[TTM] Memory type 1 has not been initialized", "other_fault"),
    ("Failed to set up IOMMU for device 17000000.gpu; retaining platform DMA ops", "other_fault"),
    # nova-core's GSP boot
    (
        "NovaCore 0000:65:00.0: Direct firmware load for nvidia/ga102/gsp/booter_load-570.144.bin failed with error -2",
        "gsp",
    ),
    ("NovaCore 0000:65:00.0: WPR2 region created at unexpected address 0x2fe00000; expected 0x2fd00000", "gsp"),
    ("NovaCore 0000:65:00.0: FWSEC-FRTS returned with error code 0x4", "gsp"),
    # a module refused for a duplicate symbol, a PHY driver not registered
    ("vfat: exports duplicate symbol fat_attach (owned by fat)", "other_fault"),
    ("libphy: Marvell 88E1510: Error -16 in registering driver", "other_fault"),
]

BENIGN = [
    # amdgpu's task-info line after a fault (the earlier sets' majority)
    "amdgpu 0000:0c:00.0: amdgpu:  Process blender pid 9120 thread render pool 3 pid 9177",
    "amdgpu 0000:0c:00.0: amdgpu:  Process kwin_wayland pid 1402 thread kwin_wa:cs0 pid 1433",
    # kfd's queue eviction at process exit, the spurious SG-table message
    "amdgpu: Freeing queue vital buffer 0x7f2a40000000, queue evicted",
    "amdgpu: SG Table of BO is UNEXPECTEDLY NULL",
    # the Tegra DCE client channels a headless board never sets up (dce_info)
    "dce: dce_admin_setup_clients_ipc:978  Get queue info failed for [1]",
    # a driver registered twice (holdout6), nouveau's chipset and encoder notices (holdout19, holdout37)
    "Error: Driver 'Marvell 88E1510' is already registered, aborting...",
    "nouveau 0000:0a:00.0: unknown chipset (1b0000a1)",
    "nouveau 0000:0a:00.0: DRM: failed to create encoder 2/4/0: -19",
    # informational lines of the same drivers
    "amdgpu 0000:0a:00.0: amdgpu: ring gfx_0.0.0 uses VM inv eng 0 on hub 0",
    "NovaCore 0000:65:00.0: GPU name: NVIDIA RTX A4000",
    "host1x 50000000.host1x: Adding to iommu group 4",
]
