"""Families holdout45/46 (tests/data/kernel_lines_holdout45.jsonl, 46) showed missing or of another kind, each written
from its printk format with other devices and values than the labelled lines (and the format's siblings in the same
function or file), and the informational lines of the same subsystems that must stay benign."""

from __future__ import annotations

FAULTS = [
    # amdgpu's and radeon's interrupt ring overrunning (*_ih.c), the pre-5.x VM fault report with no device head
    # (gmc_v7/v8, radeon cik.c and si.c) and the ASIC reset path (vi.c, cik.c, radeon's *_gpu_soft_reset)
    ("amdgpu 0000:43:00.0: amdgpu: IH ring buffer overflow (0x00041A30, 0x00001E80, 0x00001A50)", "other_fault"),
    ("radeon 0000:02:00.0: IH ring buffer overflow (0x0000F4C0, 0x00007A10, 0x0000F4E0)", "other_fault"),
    ("VM fault (0x04, vmid 1) at page 2207744, read from 'CB' (0x43420000) (96)", "other_fault"),
    (
        "[  812.40] VM fault (0x0c, vmid 2, pasid 32771) at page 90112, write from 'SDM0' (0x53444d30) (17)",
        "other_fault",
    ),
    ("VM fault (0x01, vmid 4) at page 51200, write from DB (48)", "other_fault"),
    ("amdgpu 0000:06:00.0: GPU pci config reset", "other_fault"),
    ("radeon 0000:01:00.0: GPU softreset: 0x00000008", "other_fault"),
    # the vGPU host driver's VGPU_ERR prints ('[nvidia-vgpu-vfio] %s: ' and its device)
    (
        "[nvidia-vgpu-vfio] 3f0a91c2-55de-4b7e-a1f0-0c2e9d84a611: start failed. status: 0x0 Timeout Occured",
        "other_fault",
    ),
    ("[nvidia-vgpu-vfio] 0000:41:00.5: vGPU creation failed, -5", "other_fault"),
    (
        "[nvidia-vgpu-vfio] 9b1e77d0-0c11-4d5e-8a2b-6f3c4e5d7a90: Existing vgpu process not cleaned up yet. Aborting...",
        "other_fault",
    ),
    (
        "[nvidia-vgpu-vfio] 9b1e77d0-0c11-4d5e-8a2b-6f3c4e5d7a90: Register read failed. index: 0  offset: 0x88004 "
        "status: 0x65 Timeout occured",
        "other_fault",
    ),
    ("[nvidia-vgpu-vfio] 0000:c1:01.2: VF FLR failed during close -25", "other_fault"),
    # drbd 9's state-change refusals and connection losses (drbd_state.c, drbd_main.c, drbd_receiver.c), 8.4's head too
    ("drbd r0: Declined by peer node-b (id: 2), see the kernel log there", "other_fault"),
    ("drbd vm-101-disk-1: Auto-promote failed: Multiple primaries not allowed by config (-1)", "other_fault"),
    ("drbd data: Aborting cluster-wide state change 1183302811 (6ms) rv = -23", "other_fault"),
    ("drbd data: State change failed: Need access to UpToDate data (-2)", "other_fault"),
    ("drbd data: Two-phase commit 99120 timeout", "other_fault"),
    ("drbd data node-c: sock_recvmsg returned -104", "other_fault"),
    ("drbd r1 alpha: PingAck did not arrive in time.", "other_fault"),
    ("drbd r1 alpha: meta connection shut down by peer.", "other_fault"),
    ("drbd r0 beta: conn( Connected -> NetworkFailure ) peer( Secondary -> Unknown )", "other_fault"),
    (
        "drbd r0 beta: peer( Primary -> Unknown ) conn( Connected -> BrokenPipe ) pdsk( UpToDate -> DUnknown )",
        "other_fault",
    ),
    ("block drbd0: sock was shut down by peer", "other_fault"),
    ("drbd r0/0 drbd0 gamma: Split-Brain detected but unresolved, dropping connection!", "other_fault"),
    # SCSI error handling's aborts: virtio_scsi's handler, scsi_error.c's logged steps, vmw_pvscsi's
    ("sd 2:0:1:0: [sdc] tag#57 abort", "other_fault"),
    ("[  310.2] sr 0:0:0:0: [sr0] tag#0 abort", "other_fault"),
    ("sd 1:0:0:3: device reset", "other_fault"),
    ("sd 3:0:0:0: [sdd] tag#9 abort scheduled", "other_fault"),
    ("sd 3:0:0:0: [sdd] tag#9 cmd abort failed", "other_fault"),
    ("sd 0:0:1:0: [sdb] task abort on host 0, ffff9a0bc1e0a8c8", "other_fault"),
    # NIC transmit timeouts the bnxt/i40e rule does not name (qede behind qed's '[func:line(dev)]' head, virtio_net,
    # nfp, hns3, vmxnet3)
    ("[ 8812.04] [qede_tx_timeout:551(ens3f1)]TX timeout on queue 7!", "other_fault"),
    (
        "virtio_net virtio2 eth1: TX timeout on queue: 0, sq: output.0, vq: 0x1, name: output.0, 5120000 usecs ago",
        "other_fault",
    ),
    ("nfp 0000:82:00.0 enp130s0np0: TX watchdog timeout on ring: 3", "other_fault"),
    (
        "hns3 0000:7d:00.2 eth2: tx_timeout count: 3, queue id: 5, SW_NTU: 0x1a2, SW_NTC: 0x1a0, napi state: 16",
        "other_fault",
    ),
    ("vmxnet3 0000:13:00.0 ens224: tx hang", "other_fault"),
    # initramfs that cannot be unpacked or is dropped, dracut's die() and its last warning
    ("Initramfs unpacking failed: junk within compressed archive", "other_fault"),
    ("[    1.21] Initramfs unpacking failed: broken padding", "other_fault"),
    ("INITRD: 0x48000000+0x01a2c000 overlaps in-use memory region - disabling initrd", "other_fault"),
    ("dracut: FATAL: Failed to mount block device of live image", "other_fault"),
    ("[    7.90] dracut: Refusing to continue", "other_fault"),
    ("Jan  4 10:22:31 node7 dracut: FATAL: Don't know how to handle 'root=live:nfs://10.1.1.1/img'", "other_fault"),
    ("dracut Warning: Could not boot.", "other_fault"),
    # POWER: IMC counters that fail to register or start, the kernel's unavailable-facility exceptions (a serial
    # console capture's '^M' cut first)
    ("IMC PMU nest_mcs01 Register failed", "other_fault"),
    ("core-imc: Unable to start the counters for core 8", "other_fault"),
    ("Unrecoverable VMX/Altivec Unavailable Exception f20 at c0000000000a4e30", "other_fault"),
    ("[    5.88] Unrecoverable VSX Unavailable Exception f40 at c000000000010b54^M", "other_fault"),
    ("Unrecoverable exception 4100 at c00000000000d0e8 (msr=9000000000001003)", "other_fault"),
    # overlayfs's upper and work directories used by two mounts, its conflicting paths (super.c)
    (
        "overlayfs: workdir is in-use as upperdir/workdir of another mount, accessing files from both mounts will "
        "result in undefined behavior.",
        "other_fault",
    ),
    (
        "overlayfs: upperdir is in-use as upperdir/workdir of another mount, mount with '-o index=off' to override "
        "exclusive upperdir protection.",
        "other_fault",
    ),
    ("overlayfs: conflicting lowerdir path", "other_fault"),
    ("overlayfs: upper fs is r/o, try multi-lower layers mount", "other_fault"),
    # XFS refusing features this kernel does not know: read-only at most (xfs_sb.c, xfs_super.c)
    ("XFS (nvme2n1p1): Superblock has unknown read-only compatible features (0x8) enabled.", "fs_readonly"),
    ("XFS (dm-4): Attempted to mount read-only compatible filesystem read-write.", "fs_readonly"),
    ("XFS (dm-4): Filesystem can only be safely mounted read only.", "fs_readonly"),
    ("XFS (vdc): Superblock has unknown incompatible features (0x20) enabled.", "fs_readonly"),
    ("XFS (vdc): Filesystem cannot be safely mounted by this kernel.", "fs_readonly"),
    ("XFS (sde1): ro->rw transition prohibited on unknown (0x10) ro-compat filesystem", "fs_readonly"),
    # Intel IOMMU's fault head in its three spellings (dmar.c dmar_fault)
    ("dmar: DRHD: handling fault status reg 3", "other_fault"),
    ("DRHD: handling fault status reg 102", "other_fault"),
    ("DMAR: DRHD: handling fault status reg 502", "other_fault"),
    # pci.c's FLR held up by a pending transaction
    (
        "vfio-pci 0000:65:00.0: timed out waiting for pending transaction; performing function level reset anyway",
        "pcie_link",
    ),
    (
        "nvidia 0000:3b:00.0: timed out waiting for pending transaction; performing AF function level reset anyway",
        "pcie_link",
    ),
    # a syslog head whose host is glued to 'kernel:'
    (
        "Feb 11 03:10:44 gpu-node-07kernel: [88231.101022] INFO: task kworker/u64:3:8812 blocked for more than 122 seconds.",
        "hung_task",
    ),
    (
        "Feb 11 03:10:44 gpu-node-07kernel: task:nv_queue        state:D stack:0     pid:1412  ppid:2      flags:0x00004000",
        "hung_task",
    ),
]

BENIGN = [
    # amdgpu's reset that worked and the suspend path's reset (holdout42: benign)
    "amdgpu 0000:43:00.0: amdgpu: MODE2 reset",
    "amdgpu 0000:06:00.0: GPU reset succeeded, trying to resume",
    # the vGPU host driver's notices
    "[nvidia-vgpu-vfio] 3f0a91c2-55de-4b7e-a1f0-0c2e9d84a611: vGPU migration disabled",
    "[nvidia-vgpu-vfio] 3f0a91c2-55de-4b7e-a1f0-0c2e9d84a611: vGPU migration enabled with upstream V2 migration protocol",
    "nvidia-vgpu-vfio 00000000-0000-0000-0000-000000000101: Adding to iommu group 19",
    # drbd's two-phase commit going through, connections coming up, disks attaching
    "drbd r0: Preparing cluster-wide state change 1183302811 (1->-1 3/1)",
    "drbd r0: Committing cluster-wide state change 1183302811 (4ms)",
    "drbd r0: Retrying cluster-wide state change after 20ms",
    "drbd r0 beta: conn( Connecting -> Connected ) peer( Unknown -> Secondary )",
    "drbd r0/0 drbd1: disk( Attaching -> UpToDate )",
    "drbd r0 beta: Handshake to peer 1 successful: Agreed network protocol version 121",
    # SCSI: a bus reset announced by the device, an abort that worked
    "sd 0:0:0:0: Power-on or device reset occurred",
    "sd 3:0:0:0: [sdd] tag#9 retry aborted command",
    # initramfs and dracut as they boot
    "Unpacking initramfs...",
    "Trying to unpack rootfs image as initramfs...",
    "Freeing initrd memory: 51200K",
    "dracut: dracut-055-45.git20220404.el8_7",
    "dracut: Mounted root filesystem /dev/mapper/rhel-root",
    "dracut Warning: Killing all remaining processes",
    # overlayfs's lookup warning (holdout31: benign)
    "overlayfs: failed to verify origin (base/rootfs, ino=2883, err=-116)",
    # XFS mounting as it should; Intel IOMMU and vfio set-up
    "XFS (vdc): Mounting V5 Filesystem 5c1d7e2a-3b4f-4c6d-9e8f-0a1b2c3d4e5f",
    "DMAR: DRHD base: 0x000000fed91000 flags: 0x1",
    "vfio-pci 0000:65:00.0: enabling device (0000 -> 0003)",
    "vmxnet3 0000:13:00.0 ens224: intr type 3, mode 0, 9 vectors allocated",
    # a glued head before an informational line, and a program whose own tag ends in 'kernel'
    "Feb 11 03:10:44 gpu-node-07kernel: [    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-080)",
    "Feb 11 03:10:44 node7 ipykernel[2231]: Restarting kernel",
]

# a serial console capture keeps the carriage return as '^M': the message without it
CARET_M = (
    "[2020-01-30T11:51:03-05:00] [  402.643261] kexec_core: Starting new kernel^M",
    "kexec_core: Starting new kernel",
)
# a forwarder glued the host to 'kernel:': no tag, the message after the timestamp; a program's own tag stays its
GLUED = (
    "Jan 30 17:22:07 gpu-node-07kernel: [615514.855427] nvme nvme0: I/O 12 QID 3 timeout, aborting",
    "nvme nvme0: I/O 12 QID 3 timeout, aborting",
    None,
)
OWN_TAG = ("Jan 30 17:22:07 node7 ipykernel[88]: Restarting kernel", "Restarting kernel", "ipykernel")
