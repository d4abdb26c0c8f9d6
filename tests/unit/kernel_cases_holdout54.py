"""Platform families holdout52-58 (tests/data/kernel_lines_holdout52.jsonl … 58) showed missing or of another kind,
each written from its printk format with other devices and values than the labelled lines, and the informational
lines of the same sources that must stay benign."""

from __future__ import annotations

FAULTS = [
    # x86's bus-error NMIs (arch/x86/kernel/nmi.c), as the unknown-reason NMI beside them
    ("NMI: PCI system error (SERR) for reason b1 on CPU 12.", "mce_edac"),
    ("[ 9121.004411] NMI: IOCK error (debug interrupt?) for reason 61 on CPU 3.", "mce_edac"),
    ("NMI: IOCK error (debug interrupt?)", "mce_edac"),
    ("You have some hardware problem, likely on the PCI bus.", "mce_edac"),
    # arm64: the Tegra kernel's SError report
    ("[  812.330021] CPU5: SError detected, daif=3c0, spsr=0x600000c5, mpidr=80000201, esr=bf000000", "other_fault"),
    # arm-smmu's decoded context-fault registers
    ("arm-smmu 3da0000.iommu: FSR    = 00000408 [PF ], SID=0x1c0", "other_fault"),
    ("arm-smmu 15000000.iommu: FSR    = 40000402 [Format=2 TF ], SID=0x2a1", "other_fault"),
    ("arm-smmu 15000000.iommu: FSYNR0 = 00210003 [S1CBNDX=33 PNU PLVL=3]", "other_fault"),
    # Qualcomm remote processors crashing
    ("qcom_q6v5_mss 4080000.remoteproc: fatal error received: err_qdi.c:1218:EF:wlan_process", "other_fault"),
    ("qcom_q6v5_pas 3000000.remoteproc: watchdog received: SFR Init", "other_fault"),
    ("qcom_q6v5_pas 30000000.remoteproc: fatal error without message", "other_fault"),
    ("remoteproc remoteproc1: crash detected in cdsp: type fatal error", "other_fault"),
    # a process's unhandled signal on riscv, arm64 and arm
    (
        "[   41.220918] python3[318]: unhandled signal 4 code 0x1 at 0x0000003fa0b1c2d4 in libc.so.6[3fa0a00000+140000]",
        "other_fault",
    ),
    (
        "systemd-udevd[201]: unhandled exception: EL0 Data Abort, ESR 0x0000000092000006, level 2 translation fault",
        "other_fault",
    ),
    ("a.out[1932]: unhandled level 3 translation fault (11) at 0x00000008, esr 0x92000007", "other_fault"),
    ("busybox: unhandled page fault (11) at 0x00000000, code 0x017", "other_fault"),
    # LoongArch's die() heads
    ("[   12.004419] Kernel ale access[#1]:", "other_fault"),
    ("Break instruction in kernel code[#2]:␍␊", "other_fault"),
    # skiboot's PHB freeze/fence report and its registers (phb4 and phb3)
    ("[ 3312.104920031,3] PHB#0030[0:0]: PHB Freeze/Fence detected !", "pcie_aer"),
    ("[ 3312.105001422,3] PHB#0030[0:0]:        PCI FIR WOF=0000000000000400", "pcie_aer"),
    ("[ 3312.105101422,3] PHB#0030[0:0]:            AIB ERR=0000000000000000", "pcie_aer"),
    ("[ 3312.106201422,3] PHB#0030[0:0]:          rootErrorStatus = 00000060", "pcie_aer"),
    ("[ 3312.106301422,3] PHB#0030[0:0]:      phbErrorStatus = 8000000000000000", "pcie_aer"),
    ("PHB#0002:              uncorrErrorStatus = 00100000", "pcie_aer"),
    # EEH behind avocado's job-log head
    ("09:41:52 DEBUG| [stdout] [  311.002918] EEH: Frozen PHB#3-PE#fe detected", "pcie_aer"),
    # Xen crashing a guest
    ("(XEN) Domain 7 (vcpu#2) crashed on cpu#14:", "other_fault"),
    ("(XEN) Domain 3 reported crashed by domain 0 on cpu#1:", "other_fault"),
    ("(XEN) domain_crash called from p2m.c:1042", "other_fault"),
    ("(XEN) d12 L1TF-vulnerable L2e 000000007fe000e7 - Crashing", "other_fault"),
    ("(XEN) Hardware Dom0 crashed: rebooting machine in 5 seconds.", "other_fault"),
    # Hyper-V guest failures, x86's iounmap and MCE device
    ("hv_balloon: hot_add memory failed error is -12", "other_fault"),
    ("hv_balloon: Balloon response failed", "other_fault"),
    ("hv_vmbus: probe failed for device f8615163-df3e-46c5-913f-f2d2f965ed0e (-19)", "other_fault"),
    ("iounmap: bad address ffffc90000a80000", "other_fault"),
    ("mce: Unable to init MCE device (rc: -12)", "other_fault"),
    # pciback's FLR wording
    (
        "pciback 0000:81:00.1: timed out waiting for pending transaction: performing AF function level reset anyway",
        "pcie_link",
    ),
    # AMD-Vi events under the device's own head
    ("nvidia 0000:41:00.0: Event logged [IO_PAGE_FAULT domain=0x0012 address=0x7ffe0000 flags=0x0030]", "other_fault"),
    (
        "pci 0000:00:00.2: Event logged [ILLEGAL_DEV_TABLE_ENTRY device=0000:03:00.0 pasid=0x00000 address=0x0 flags=0x0a00]",
        "other_fault",
    ),
    (
        "amd_iommu 0000:00:00.2: Event logged [IOTLB_INV_TIMEOUT device=0000:c1:00.0 address=0x00000001f0c4a000]",
        "other_fault",
    ),
    # GHES notifications the kernel cannot use
    ("GHES: Generic hardware error source: 1 notified via SEA is not supported", "other_fault"),
    ("GHES: Generic hardware error source: 2 notified via NMI interrupt is not supported!", "other_fault"),
    # kmod
    ("request_module: runaway loop modprobe net-pf-10", "other_fault"),
    (
        "request_module: modprobe fs-xfs cannot be processed, kmod busy with 50 threads for more than 5 seconds now",
        "other_fault",
    ),
    # RHEL's unstable TSC without failover
    (
        "Clocksource tsc unstable (delta = 4294967296 ns).  Enable clocksource failover by adding"
        " clocksource_failover kernel parameter.",
        "other_fault",
    ),
    # a ps-style hung task behind a pasted line number
    ("88 [ 1203.551820] kworker/3:1     D ffff88103fc14180     0   217      2 0x00000000", "hung_task"),
]

BENIGN = [
    # mainline's unstable TSC falls back to another clocksource
    "Clocksource tsc unstable (delta = -145499623 ns)",
    # Xen's L1TF mitigation, not a crash
    "(XEN) d4 L1TF-vulnerable L1e 0000000001234000 - Shadowing",
    # Hyper-V's informational lines
    "hv_balloon: Max. dynamic memory size: 8192 MB",
    "hv_vmbus: registering driver hv_netvsc",
    # GHES without HEST, skiboot's PHB bring-up, remoteproc's start
    "GHES: HEST is not enabled!",
    "[   10.123456789,5] PHB#0030[0:0]: Initializing PHB4...",
    "remoteproc remoteproc0: remote processor 4080000.remoteproc is now up",
    "arm-smmu 15000000.iommu: soft iova-to-phys=0x0000000000000000",
    "mce: CPU supports 22 MCE banks",
    # a pasted line number before a benign line stays benign
    "12 [    0.000000] Linux version 6.1.0-13-amd64 (debian-kernel@lists.debian.org)",
]
