"""Families holdout47 (tests/data/kernel_lines_holdout47.jsonl) showed missing, each written from its printk format with
other devices and values than the labelled lines (and the format's siblings in the same function or file), the same
lines cut where a mail wraps them at ~80 columns, and the informational lines of the same subsystems that must stay
benign."""

from __future__ import annotations

FAULTS = [
    # hpsa.c hpsa_eh_device_reset_handler's hpsa_show_dev_msg (cut by mail after 'logical' or 'physical' too), the
    # lockup it finds, and 3.x's 'resetting device %d:%d:%d:%d'
    (
        "hpsa 0000:81:00.0: scsi 2:0:1:0: resetting physical  Direct-Access     ATA      MB2000GCWDA      PHYS DRV "
        "SSDSmartPathCap- En- Exp=1",
        "other_fault",
    ),
    ("[Tue Jan  4 02:11:09 2022] hpsa 0000:05:00.0: scsi 3:1:0:0: resetting physical", "other_fault"),
    ("hpsa 0000:05:00.0: scsi 3:1:0:2: cmd 118 RESET FAILED, new lockup detected", "other_fault"),
    ("hpsa 0000:0a:00.0: resetting device 4:0:0:1", "other_fault"),
    # scsi_transport_fc.c fc_timeout_deleted_rport, its removing wordings
    ("rport-7:0-12: blocked FC remote port time out: removing target and saving binding", "other_fault"),
    ("[ 8811.120004]  rport-2:0-3: blocked FC remote port time out: removing rport and starget", "other_fault"),
    ("rport-4:0-1: blocked FC remote port time out: no longer a FCP target, removing starget", "other_fault"),
    # arcmsr_hba.c's abort, its adapter messages' timeouts, the bus resets
    ("arcmsr2: abort device command of scsi id = 0 lun = 3", "other_fault"),
    ("arcmsr0: wait 'flush adapter cache' \t\t\ttimeout, retry count down = 29", "other_fault"),
    ("arcmsr1: wait 'stop adapter background rebuild' timeout", "other_fault"),
    ("arcmsr: executing bus reset eh.....num_resets = 1, num_aborts = 4", "other_fault"),
    # megaraid_sas: the DCMD that timed out and the controller that gave no info at load (cut by mail too)
    ("megaraid_sas 0000:3b:00.0: Ignore DCMD timeout: megasas_get_pd_list 4727", "other_fault"),
    (
        "megaraid_sas 0000:3b:00.0: DCMD(opcode: 0x3010100) is timed out, func:megasas_issue_blocked_cmd",
        "other_fault",
    ),
    (
        "megaraid_sas 0000:18:00.0: Could not get controller info. Fail from megasas_init_adapter_fusion 1907",
        "other_fault",
    ),
    (
        "megaraid_sas 0000:18:00.0: (1): Could get controller info Fail from megasas_init_adapter_mfi 5620",
        "other_fault",
    ),
    # mpt3sas's 'attempting task abort!' / 'attempting device reset!' cut by mail
    ("sd 6:0:12:0: attempting task", "other_fault"),
    ("[Mon Feb  7 11:02:33 2022] sd 1:0:4:0: attempting device reset", "other_fault"),
    # pme.c pcie_pme_handle_request; probe.c's hot-added bridge without a bus number and the unusable bridge
    ("pcieport 0000:00:01.3: PME: Spurious native interrupt!", "other_fault"),
    ("pcieport 0000:40:03.1: PME: interrupt generated for non-existent device 42:00.0", "other_fault"),
    ("pci 0000:06:02.0: No bus number available for hot-added bridge", "other_fault"),
    (
        "pci 0000:00:1c.4: devices behind bridge are unusable because [bus 3e-3f] cannot be assigned for them",
        "other_fault",
    ),
    # setup-res.c: a bridge's 32-bit memory window of 256 MiB or more (old and 6.8+ spellings)
    ("pci 0000:00:1d.0: BAR 14: no space for [mem size 0x20000000]", "other_fault"),
    ("pcieport 0000:00:07.0: bridge window [mem size 0x18000000]: can't assign; no space", "other_fault"),
    # intel/dmar.c qi_check_fault / qi_dump_fault, and the pre-5.x invalid descriptor
    ("DMAR: VT-d detected Invalidation Completion Error: SID 6100", "other_fault"),
    ("[  412.118210] DMAR: VT-d detected Invalidation Time-out Error: SID 3a00", "other_fault"),
    ("DMAR: VT-d detected Invalidation Queue Error: Reason 2", "other_fault"),
    ("dmar: VT-d detected invalid descriptor: low=1000000000002, high=0", "other_fault"),
    # kernel/dma/direct.c report_addr (5.1-5.9)
    ("ahci 0000:00:17.0: overflow 0x00000001f2a04000+8192 of DMA mask ffffffff bus mask 0", "other_fault"),
    ("snd_hda_intel 0000:00:1f.3: DMA map on device without dma_mask", "other_fault"),
    # workqueue.c check_flush_dependency (cut after the first queue too) and drain_workqueue
    (
        "workqueue: WQ_MEM_RECLAIM nvme-wq:nvme_scan_work [nvme_core] is flushing !WQ_MEM_RECLAIM events:0x0",
        "other_fault",
    ),
    ("workqueue: WQ_MEM_RECLAIM ib_addr:process_one_req [ib_core]", "other_fault"),
    ("workqueue: PF_MEMALLOC task 98(kswapd0) is flushing !WQ_MEM_RECLAIM events:drain_local_pages_wq", "other_fault"),
    ("workqueue i915-userptr: drain_workqueue() isn't complete after 100 tries", "other_fault"),
    # XFS's shutdown advice cut after other words of it; ext4 and XFS's whole line stay fs_readonly
    ("XFS (nvme0n1p3): Please unmount the filesystem and", "fs_readonly"),
    ("XFS (dm-7): Please umount the filesystem and rectify", "fs_readonly"),
    # nvme core.c: a controller refused (cut by mail after its peer), namespaces refused for duplicate ids
    ("nvme nvme4: Duplicate cntlid 1 with nvme3,", "other_fault"),
    ("nvme nvme2: Duplicate unshared namespace 1", "other_fault"),
    ("nvme nvme2: duplicate IDs in subsystem for nsid 3", "other_fault"),
    # nouveau: the timer under its 4.x-5.x subdev name, the push buffer that never drains
    ("nouveau 0000:02:00.0: tmr: stalled at 00000000ffffffff", "other_fault"),
    ("nouveau 0000:08:00.0: gnome-shell[1877]: jmp_space: -16", "other_fault"),
    ("nouveau 0000:08:00.0: firefox[4410]: cal_space: -16", "other_fault"),
    ("nouveau 0000:08:00.0: Xwayland[2201]: error fencing pushbuf: -19", "other_fault"),
    # NFSv4 and NFS mounts the server refuses
    ("NFS4: Couldn't follow remote path", "nfs"),
    ("NFS: Couldn't getattr on root", "nfs"),
    ("NFS: Couldn't get superblock", "nfs"),
    # the SMB client's transport and share errors in wordings without an error word
    ("CIFS: VFS: \\\\nas01.corp.example No task to wake, unknown frame received! NumMids 2", "nfs"),
    ("CIFS VFS: \\\\10.2.3.4 No task", "nfs"),
    ("CIFS: Status code returned 0xc000006d STATUS_LOGON_FAILURE", "nfs"),
    ("CIFS: VFS: \\\\fs02 BAD_NETWORK_NAME: \\\\fs02\\projects", "nfs"),
    ("CIFS: VFS: \\\\fs02 Number of request timeouts exceeded 3. Reconnecting", "nfs"),
    ("CIFS: fs/smb/client/connect.c: Received no data or error: -104", "nfs"),
]

BENIGN = [
    # the recoveries and notices of the same drivers
    (
        "hpsa 0000:05:00.0: scsi 3:1:0:0: reset logical  completed successfully Direct-Access     HP       LOGICAL "
        "VOLUME   RAID-1(+0) SSDSmartPathCap- En- Exp=1"
    ),
    "hpsa 0000:05:00.0: scsi 3:0:2:0: added Direct-Access     ATA      VK000480GWSRR    PHYS DRV SSDSmartPathCap+ En+ Exp=1",
    "rport-3:0-1: blocked FC remote port time out: leaving rport alone",
    "arcmsr: scsi bus reset eh returns with success",
    "arcmsr1: scsi id = 1 lun = 0 ccb = '0x00000000a1b2c3d4' poll command abort successfully",
    "megaraid_sas 0000:3b:00.0: FW provided supportMaxExtLDs: 1\tmax_lds: 64",
    "sd 6:0:12:0: task abort: SUCCESS scmd(0x000000004a1e5c2b)",
    "pcieport 0000:00:01.3: PME: Signaling with IRQ 27",
    "pci 0000:00:1c.0: PME# supported from D0 D3hot D3cold",
    "pci 0000:00:1c.4: bridge configuration invalid ([bus 00-00]), reconfiguring",
    # small hot-plug reservations stay benign, whatever their kind of window
    "pci 0000:00:1c.4: BAR 14: failed to assign [mem size 0x00400000]",
    "pci 0000:00:1c.4: bridge window [mem size 0x00200000 64bit pref]: can't assign; no space",
    "DMAR: QI HEAD: Device-TLB Invalidation qw0 = 0x1000000003, qw1 = 0x7ffffffffffff001",
    "DMAR: QI PRIOR: Invalidation Wait qw0 = 0x200000025, qw1 = 0x10006f06c",
    "DMAR: Invalidation Time-out Error (ITE) cleared",
    "Workqueue: nvme-wq nvme_scan_work [nvme_core]",
    "XFS (dm-7): Ending clean mount",
    "nvme nvme1: ignoring ctrl due to duplicate subnqn (nqn.2014.08.org.nvmexpress:1987).",
    "nouveau 0000:02:00.0: DRM: VRAM: 2048 MiB",
    "NFS: Registering the id_resolver key type",
    "CIFS: Attempting to mount \\\\fs02\\projects",
    "CIFS: VFS: Use of the less secure dialect vers=1.0 is not recommended unless required for access to very old servers",
]
