"""Families holdout18 and holdout19 (tests/data/kernel_lines_holdout18.jsonl, holdout19) showed missing or of another
kind, each written from its printk format with other drivers, devices and values than the labelled lines, the
families next to them (SAS and RAID HBAs' error handlers), and the informational lines of the same sources that must
stay benign."""

from __future__ import annotations

FAULTS = [
    # drivers/scsi/scsi_logging.c 'Sense Key : %s [%s]' / 'Add. Sense: %s' of the keys that fail a command
    ("[ 9120.3] sd 3:0:1:0: [sdk] tag#17 Sense Key : Not Ready [current] ", "other_fault"),
    ("sd 0:0:2:0: [sdb] Sense Key : Data Protect [deferred]", "other_fault"),
    ("sd 5:0:0:0: [sdf] Sense Key : 0x7 [current]", "other_fault"),
    ("sd 5:0:0:0: [sdf] tag#2 Add. Sense: Logical unit not ready, cause not reportable", "other_fault"),
    ("sd 5:0:0:0: [sdf] tag#2 Add. Sense: Logical unit not ready, initializing command required", "other_fault"),
    ("sd 1:0:0:3: [sdz] Add. Sense: Write protected", "other_fault"),
    ("sd 1:0:0:3: [sdz] Add. Sense: Peripheral device write fault", "other_fault"),
    ("sd 4:0:0:0: [sde] tag#30 Add. Sense: No seek complete", "other_fault"),
    ("sd 4:0:0:0: [sde] tag#30 Add. Sense: Recorded entity not found", "other_fault"),
    # the same lines without CONFIG_SCSI_CONSTANTS' names, and a disposition the table does not name
    (
        "sd 3:0:4:0: [sdj] tag#7129 UNKNOWN(0x2003) Result: hostbyte=0x0b driverbyte=DRIVER_OK cmd_age=23s",
        "other_fault",
    ),
    ("sd 2:0:0:0: [sdc] tag#9 ASC=0x11 ASCQ=0x4", "other_fault"),
    ("sd 2:0:0:0: [sdc] tag#9 ASC=0x4 ASCQ=0x2", "other_fault"),
    # mpt3sas's error handler failing a task abort or a reset
    ("sd 0:0:3:0: task abort: FAILED scmd(0x00000000c6a2b6a6)", "other_fault"),
    ("sd 0:0:3:0: target reset: FAILED scmd(0x00000000c6a2b6a6)", "other_fault"),
    ("mpt3sas_cm1: diag reset: FAILED", "other_fault"),
    # mpt3sas/mpt2sas _base_sas_log_info 'log_info(0x%08x): originator(%s), …' from the SAS protocol layer
    ("mpt3sas_cm1: log_info(0x31110e05): originator(PL), code(0x11), sub_code(0x0e05)", "other_fault"),
    ("[ 77.1] mpt2sas_cm0: log_info(0x31080000): originator(PL), code(0x08), sub_code(0x0000)", "other_fault"),
    # drivers/usb/storage/uas.c: the USB-attached disk's SCSI error handler
    ("scsi host6: uas_eh_abort_handler 0 uas-tag 1 inflight: CMD OUT ", "other_fault"),
    ("sd 7:0:0:0: [sdc] tag#4 uas_eh_abort_handler 0 uas-tag 5 inflight: CMD IN ", "other_fault"),
    ("scsi host9: uas_eh_device_reset_handler start", "other_fault"),
    ("scsi host9: uas_eh_device_reset_handler FAILED err -19", "other_fault"),
    # a hung-task report without 'more than' (debug patches, vendor kernels)
    ("[ 4021.7] INFO: task kworker/u16:2:8812 blocked for 121 seconds.", "hung_task"),
    ("system_server task Binder:1234_5:2211 blocked for 60 seconds!", "hung_task"),
    # mlx4: the IB driver's special-QP set-up, the port's module EEPROM read; IPoIB's transmit timeout; mlx5's WQE dump
    ("<mlx4_ib> mlx4_ib_alloc_pv_bufs: Couldn't create tunnel QP1 CQ (-12)", "infiniband"),
    ("<mlx4_ib> create_pv_resources: Couldn't create tunnel CQ (-12)", "infiniband"),
    (
        "mlx4_core 0000:04:00.0: MLX4_CMD_MAD_IFC Get Module info attr(ff60) port(2) i2c_addr(50) offset(128) size(48):"
        " Response Mad Status(51c) - cable is not connected",
        "infiniband",
    ),
    ("mlx4_en: enp4s0: mlx4_get_module_info i(0) offset(0) bytes_to_read(256) - FAILED (0xfffff8e3)", "infiniband"),
    (
        "ib1.8002: queue stopped 1, tx_head 22018, tx_tail 21890, global_tx_head 22018, global_tx_tail 21890",
        "infiniband",
    ),
    ("ibp65s0: queue stopped 0, tx_head 9, tx_tail 9", "infiniband"),
    ("[ 6.2] WQE DUMP: WQ size 512 WQ cur size 3, WQE index 0x1a2, len: 64", "infiniband"),
    ("mlx5_core 0000:af:00.1 ens2f1np1: ERR CQE on SQ: 0x2c4", "infiniband"),
    ("mlx5_core 0000:af:00.0 eth4: ERR CQE on RQ: 0x11f", "infiniband"),
    # the RDMA NICs next to them: irdma's and i40iw's control-QP command failures, which carry no error word
    ("ice 0000:af:00.0 irdma0: cqp opcode = 0x1 maj_err_code = 0x800b min_err_code = 0x8006", "infiniband"),
    ("infiniband irdma1: cqp opcode = 0x22 maj_err_code = 0xffff min_err_code = 0x8001", "infiniband"),
    ("i40iw_cqp_ce_handler: opcode = 0x2 maj_err_code = 0x8002 min_err_code = 0x0", "infiniband"),
    # AMD's UMC address translation failing while an MCE is decoded
    ("mce: umc_normaddr_to_sysaddr: Invalid interleave address select 5.", "mce_edac"),
    ("EDAC amd64: umc_normaddr_to_sysaddr: Invalid DramBaseAddress range: 0x3a0.", "mce_edac"),
    # btrfs failing to read its trees at mount
    ("BTRFS warning (device nvme0n1p2): couldn't read tree root", "fs_readonly"),
    ("BTRFS warning (device sdb): failed to read log tree", "fs_readonly"),
    # a driver's AER error callback
    ("[drm] PCI error: detected callback, state(2)!!", "pcie_aer"),
    ("mpt3sas_cm0: PCI error: detected callback, state(1)!!", "pcie_aer"),
    ("hisi_sas_v3_hw 0000:74:02.0: PCI error: detected callback, state(3)!!", "pcie_aer"),
    ("amdgpu 0000:0b:00.0: amdgpu: PCI error: slot reset callback!!", "pcie_aer"),
    ("sis8300 0000:06:00.0: [aer_error_detected] called .. state=3", "pcie_aer"),
    ("tg3 0000:61:00.0 lc5: PCI I/O error detected", "pcie_aer"),
    ("bnxt_en 0000:3b:00.0 ens1f0np0: PCI I/O error detected", "pcie_aer"),
    # the kinds the labels give: a filesystem's assertion is a kernel bug report, an allocation stall no OOM kill, an
    # NVMe drive lost in D3cold a storage fault
    ("XFS (sdb1): Assertion failed: 0, file: fs/xfs/xfs_bmap_util.c, line: 1208", "other_fault"),
    ("BTRFS: assertion failed: !list_empty(&head->ref_add_list), in fs/btrfs/extent-tree.c:1672", "other_fault"),
    ("[ 33.1] java: page allocation stalls for 12012ms, order:2, mode:0x24040c0(GFP_KERNEL|__GFP_COMP)", "other_fault"),
    ("nvme 0000:5e:00.0: Unable to change power state from D3hot to D0, device inaccessible", "other_fault"),
    ("nvme 0000:5e:00.0: can't change power state from D3cold to D0 (config space inaccessible)", "other_fault"),
    # the families next to them: RAID and SAS HBAs' own error reports
    (
        "megaraid_sas 0000:03:00.0: 6012 (691193826s/0x0002/CRIT) - Controller cache pinned for missing VD 01/1",
        "other_fault",
    ),
    (
        "megaraid_sas 0000:03:00.0: 6015 (boot + 12s/0x0020/DEAD) - Fatal firmware error: Line 1183 in fw.c",
        "other_fault",
    ),
    ("megaraid_sas 0000:5e:00.0: resetting fusion adapter scsi2.", "other_fault"),
    ("megaraid_sas: resetting fusion adapter.", "other_fault"),
    ("megaraid_sas 0000:5e:00.0: pending commands remain after waiting, will reset adapter scsi2.", "other_fault"),
    ("megaraid_sas 0000:5e:00.0: Diag reset adapter never cleared megasas_adp_reset_fusion 4012", "other_fault"),
    ("megaraid_sas 0000:5e:00.0: [ 60]waiting for 3 commands to complete for scsi2", "other_fault"),
    ("megasas: Found FW in FAULT state, will reset adapter.", "other_fault"),
    ("sd 2:2:0:0: target reset FAILED!!", "other_fault"),
    ("hpsa 0000:03:00.0: Controller lockup detected: 0x00130000", "other_fault"),
    ("smartpqi 0000:5e:00.0: controller is offline: status code 0x14803", "other_fault"),
    ("smartpqi 0000:5e:00.0: resetting scsi 14:1:0:0 due to cmd 0x28", "other_fault"),
    ("smartpqi 0000:5e:00.0: reset of scsi 14:1:0:0: FAILED", "other_fault"),
    ("aacraid: Host adapter abort request (0,0,3,0)", "other_fault"),
    ("aacraid: Host adapter abort request.", "other_fault"),
    ("aacraid: Outstanding commands on (0,1,41,0):", "other_fault"),
    ("[ 699.4] aacraid: Host bus reset request. SCSI hang ?", "other_fault"),
    ("AAC0: adapter kernel panic'd 3.", "other_fault"),
]

BENIGN = [
    # the informational sense keys and codes: the command completed, or a notice
    "sd 2:0:0:0: [sdc] tag#7 Sense Key : Recovered Error [current] [descriptor]",
    "sd 2:0:0:0: [sdc] tag#7 Add. Sense: ATA pass through information available",
    "sd 2:0:0:0: [sdc] Sense Key : No Sense [current]",
    "sd 2:0:0:0: [sdc] Sense Key : 0x1 [current]",
    "sd 2:0:0:0: [sdc] Add. Sense: No additional sense information",
    "sd 2:0:0:0: [sdc] Sense Key : Unit Attention [current]",
    "sd 2:0:0:0: [sdc] Add. Sense: Power on, reset, or bus device reset occurred",
    "sd 2:0:0:0: [sdc] Add. Sense: Invalid field in cdb",
    "sd 2:0:0:0: [sdc] Add. Sense: Medium not present",
    # the HBA's configuration-page answer and RAID notices, recoveries, the firmware's informational events
    "mpt3sas_cm0: log_info(0x30030109): originator(IOP), code(0x03), sub_code(0x0109)",
    "mpt2sas_cm0: log_info(0x32010081): originator(IR), code(0x01), sub_code(0x0081)",
    "scsi host9: uas_eh_device_reset_handler success",
    "smartpqi 0000:5e:00.0: reset of scsi 14:1:0:0: SUCCESS",
    "sd 0:0:3:0: task abort: SUCCESS scmd(0x00000000c6a2b6a6)",
    "mpt3sas_cm0: diag reset: SUCCESS",
    "sd 0:0:0:3: [sdd] tag#4 Sense Key : 0x5 [current]",
    "sd 0:0:0:3: [sdd] tag#4 ASC=0x20 ASCQ=0x0",
    "sd 0:0:0:0: [sda] tag#0 ASC=0x28 ASCQ=0x0",
    "sd 1:0:0:0: [sdb] tag#2 ASC=0x18 ASCQ=0x2",
    "megaraid_sas 0000:03:00.0: 6014 (691193826s/0x0020/info) - Patrol Read corrected medium error on PD 03(e0x20/s3)",
    "megaraid_sas 0000:03:00.0: 6016 (691193900s/0x0002/progress) - Rebuild on PD 04(e0x20/s4) is over 25%",
    "aacraid 0000:02:00.0: IOP reset succeeded",
    "sd 2:2:0:0: target reset SUCCESS!!",
    "megasas: Waiting for FW to come to ready state",
    "megasas: FW now in Ready state",
    # mlx4's and btrfs's informational lines, a GPU's D3cold refusal (pcie_link, not storage)
    "<mlx4_ib> mlx4_ib_add: mlx4_ib: Mellanox ConnectX InfiniBand driver v2.2-1 (Feb 2014)",
    "BTRFS warning (device dm-3): read-write for sector size 4096 with page size 65536 is experimental",
    "mce: mc_poll_banks_default: CPU3 irq ctxt level: 1",
    "bnxt_re: Broadcom NetXtreme-C/E RoCE Driver",
    "irdma: Intel(R) Ethernet Protocol Driver for RDMA",
    "efa 0000:00:06.0: Setup done",
]

# Not a storage device: the D3cold refusal of a GPU or a port stays the PCIe link's.
GPU_D3COLD = ("nvidia 0000:5e:00.0: Unable to change power state from D3cold to D0, device inaccessible", "pcie_link")
