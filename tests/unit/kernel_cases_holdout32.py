"""Families holdout32/33 (tests/data/kernel_lines_holdout32.jsonl, 33) showed missing, of another kind or flagged, each
written from its printk format with other devices and values than the labelled lines, and the informational lines of
the same sources that must stay benign."""

from __future__ import annotations

FAULTS = [
    # the NVIDIA P2P API's consumers refusing the driver's page table; a module refused GPL-only symbols (6.6+, before)
    ("nvidia-fs:nvfs_pin_gpu_pages:1402 Incompatible page table version 0x00010000", "other_fault"),
    ("gdrdrv:gdrdrv_pin_buffer:612 incompatible page table version 0x00030000", "other_fault"),
    (
        "nvidia_peermem: module using GPL-only symbols uses symbols nvidia_p2p_get_pages from proprietary module nvidia.",
        "other_fault",
    ),
    ("gdrdrv: module using GPL-only symbols uses symbols from proprietary module nvidia.", "other_fault"),
    # amdgpu_dev_coredump.c, amdgpu_job.c: a GPU hang captured, a ring timed out and its reset failing
    ("amdgpu 0000:03:00.0: amdgpu: [drm] AMDGPU device coredump file has been created", "other_fault"),
    ("amdgpu 0000:83:00.0: amdgpu: Starting sdma0 ring reset", "other_fault"),
    ("amdgpu 0000:0c:00.0: amdgpu: Ring comp_1.3.0 reset failure", "other_fault"),
    # mce/core.c mce_timed_out; Xen's machine-check panic, its unknown NMI and double fault, behind Xen's head
    ("mce: mce_timed_out: MCE holdout CPUs (may include false positives): 0-15,64-79", "mce_edac"),
    ("[  312.004517] mce: mce_timed_out: MCE present CPUs: 0-3", "mce_edac"),
    ("(XEN) [  914.221804] Fatal machine check: MCE: Fatal error happened on CPUs 00ff", "mce_edac"),
    ("(XEN) MCE: Fatal error happened on CPUs 0003", "mce_edac"),
    ("(XEN) [88213.117003] Uhhuh. NMI received for unknown reason 2d.", "mce_edac"),
    ("(XEN) [ 6032.410277] Bank 4: be00000000800400", "mce_edac"),
    ("(XEN) *** DOUBLE FAULT ***", "other_fault"),
    ("(XEN) [ 5120.883112] Panic on CPU 11:", "other_fault"),
    ("(XEN) [ 5120.883114] FATAL TRAP: vector = 14 (page fault)", "other_fault"),
    # 2.6's non-fatal MCE poller; a CXL memory device's media event record
    (
        "Feb  3 04:11:52 db2 kernel: MCE: The hardware reports a non fatal, correctable incident occurred on CPU 3.",
        "mce_edac",
    ),
    (
        "cxl_dram: memdev=mem2 host=0000:38:00.0 serial=7 log=Failure : time=1 uuid=601dcbb3-9c06-4eab-b8af-4e9bfb5c9624 "
        "len=128 flags='0x1' handle=2 related_handle=0 maint_op_class=0 : dpa=1f000 dpa_flags='' descriptor='' "
        "type='ECC Error' transaction_type='Host Read'",
        "mce_edac",
    ),
    # a SoC root port's link never up; CXL's RAS trace events (6.3 and rasdaemon's spellings)
    ("[    3.118842] meson-pcie f9800000.pcie: error: wait linkup timeout", "pcie_link"),
    (
        "cxl_aer_uncorrectable_error: memdev=mem1 host=0000:36:00.0 serial=4660: status: 'Cache Data ECC Error' "
        "first_error: 'Cache Data ECC Error'",
        "pcie_aer",
    ),
    (
        "cxl_aer_correctable_error: memdev=mem0 host=0000:0d:00.0 serial=0: status: 'Received Error From Physical Layer'",
        "pcie_aer",
    ),
    # device_pm.c; root over NFS; the NVMe target's RDMA transport
    ("nvidia 0000:65:00.0: Failed to change power state to D0", "other_fault"),
    ("acpi PNP0A08:01: Failed to change power state to D3hot", "other_fault"),
    ("VFS: Unable to mount root fs via NFS, trying floppy.", "nfs"),
    ("nvmet_rdma: RDMA READ for CQE 0x00000000b87c2e1f failed with status remote access error (10).", "infiniband"),
    ("nvmet_rdma: RDMA WRITE for CQE failed with status local protection error (4).", "infiniband"),
    (
        "nvmet_rdma: SEND for CQE 0x0000000043fa12cd failed with status transport retry counter exceeded (12)",
        "infiniband",
    ),
    # nouveau's PMU firmware, timer and priv-ring faults, other GPUs and registers
    ("nouveau 0000:02:00.0: pmu: unexpected init message size 12 vs 40", "other_fault"),
    ("nouveau 0000:41:00.0: timer: stalled at 00000000ffffffff", "other_fault"),
    ("nouveau 0000:02:00.0: priv: GPC0: 419eb4 badf5040 (1f408200)", "other_fault"),
    ("nouveau 0000:01:00.0: ibus: ROP1: 40a820 00000000 (00000009)", "other_fault"),
    # arm's bad mode; drm_fb_helper's panic notice as printed; OpenVZ's beancounter OOM kill
    ("Bad mode in Error handler detected on CPU3, code 0xbf000002 -- SError", "other_fault"),
    ("drm_kms_helper: panic occurred, switching back to text console", "other_fault"),
    ("Out of memory in UB 1004: OOM killed process 8812 (java) score 0 vm:9921044kB, rss:4102112kB, swap:0kB", "oom"),
    # an RCU stall's CPU and detector lines copied through a pager, their tab shown as '^I'
    ("[ 4412.009311] ^I3-...: (20999 ticks this GP) idle=0b2/1/0 softirq=88120/88120 fqs=5249", "soft_lockup"),
    ("^I(detected by 14, t=60002 jiffies, g=88213, q=2210)", "soft_lockup"),
]

BENIGN = [
    # an EDAC driver that finds no controller of its kind; mcelog's service
    "EDAC skx: Failed to register device with error -19.",
    "EDAC sbridge: Failed to register device with error -19.",
    "systemd[1]: Starting Machine Check Exception Logging Daemon...",
    "Mar 02 08:11:40 node7 systemd[1]: Started Machine Check Exception Logging Daemon.",
    # the same sources' informational lines
    "amdgpu 0000:83:00.0: amdgpu: Ring sdma0 reset succeeded",
    "nvidia-fs: Initializing nvfs driver module",
    "mce: CPU0: Thermal monitoring enabled (TM1)",
    "meson-pcie f9800000.pcie: link up",
    "nvmet_rdma: enabling port 1 (192.168.10.2:4420)",
    "nouveau 0000:01:00.0: pmu: firmware: failed to load nvidia/gp102/pmu/desc.bin (-2)",
    "(XEN) [   10.231180] Executing kexec image on cpu10",
    "(XEN) [ 5120.883130] Reboot in five seconds...",
    "(XEN) [ 5120.883101] ----[ Xen-4.17.2  x86_64  debug=n  Not tainted ]----",
    "(XEN) Xen version 4.17.2 (mockbuild@) (gcc (GCC) 12.2.1) debug=n Tue Oct 31 12:00:00 UTC 2023",
    "acpi PNP0A08:00: _OSC: OS now controls [PCIeHotplug SHPCHotplug PME AER PCIeCapability LTR]",
]

# Xen's console head and its uptime stamp come off, leaving the hypervisor's message
XEN = ("(XEN) [21971.932935] CPU5: Machine Check Exception: 5", "CPU5: Machine Check Exception: 5")
