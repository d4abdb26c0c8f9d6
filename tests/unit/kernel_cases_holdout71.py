"""Families holdout69/71/72 (tests/data/kernel_lines_holdout69.jsonl, 71, 72) showed missing, each written from its
printk format with other devices and values than the labelled lines, and the informational lines of the same sources
that must stay benign."""

from __future__ import annotations

FAULTS = [
    # fs/jffs2: JFFS2_NOTICE/JFFS2_WARNING, nodemgmt.c, gc.c, scan.c
    (
        "jffs2: notice: (412) jffs2_get_inode_nodes: Node header CRC failed at 0x1a0040. {1985,e002,00000044,1c2d3e4f}",
        "fs_readonly",
    ),
    ("jffs2: warning: (97) jffs2_do_read_inode_internal: no data nodes found for ino #214", "fs_readonly"),
    ("jffs2: Error garbage collecting node at 00a1b2c4!", "fs_readonly"),
    ("jffs2: jffs2_scan_eraseblock(): Magic bitmask 0x1985 not found at 0x00010000: 0xffff instead", "fs_readonly"),
    # i2c-aspeed.c, net/ncsi, aspeed-video.c, aspeed-smc.c, ipmi_si, pinctrl core, UDC core
    ("aspeed-i2c-bus 1e78a400.i2c-bus: bus in unknown state. irq_status: 0x10", "other_fault"),
    ("aspeed-i2c-bus 1e78a0c0.i2c-bus: irq handled != irq. expected 0x00000011, but was 0x00000001", "other_fault"),
    ("ftgmac100 1e670000.ethernet eth1: NCSI Channel 1 timed out!", "other_fault"),
    ("ftgmac100 1e670000.ethernet eth1: NCSI: No channel found with link!", "other_fault"),
    ("aspeed-video 1e700000.video: Timed out when stopping streaming", "other_fault"),
    ("aspeed-smc 1e630000.spi: No good frequency, using dumb slow", "other_fault"),
    ("udc 1e6a0000.usb-vhub:p3: failed to start g_ether: -19", "other_fault"),
    # hv_balloon.c, x86 ex_handler_msr, kernel/cfi.c, hid-core.c
    ("hv_balloon: Unhandled message: type: 17", "other_fault"),
    ("hv_balloon: Balloon response failed", "other_fault"),
    ("unchecked MSR access error: RDMSR from 0xc0011029 at rIP: 0xffffffff8106e5a4", "other_fault"),
    (
        "CFI failure at blk_mq_run_hw_queue+0x2c/0x40 (target: nvme_queue_rq+0x0/0x7b0; expected type: 0x12345678)",
        "other_fault",
    ),
    ("hid-generic 0003:046D:C52B.0004: parse failed", "other_fault"),
    # NFS client/server, sunrpc (5.x dprintk), CIFS debug and VFS lines
    ("nfs41_sequence_process: Error 10052 free the slot", "nfs"),
    ("NFSv4: state recovery failed for open file home/data.db, error = -5", "nfs"),
    ("RPC:  1187 call_decode result -110", "nfs"),
    ("CIFS: fs/smb/client/smb2pdu.c: Echo request failed: -112", "nfs"),
    ("CIFS: VFS: \\\\fs01 Close unmatched open for MID:1a2b", "nfs"),
    # rtrs, hns RoCE
    ("rtrs_server L1210: <sess-07>: Failed to send RDMA-write: -22", "infiniband"),
    ("hns3 0000:35:00.1: hns_roce_set_kernel_sq_size error for create qp", "infiniband"),
    # nouveau PMU, FIFO, GSP; sdhci; uvcvideo; PM cut line; RCU; workqueue
    ("nouveau 0000:02:00.0: fifo: INTR 00000100: 00000000", "other_fault"),
    ("nvkm 0000:41:00.0: gsp: peek msg rpc fn:12 len:0x20/0x1000", "gsp"),
    ("mmc1: 1.8V regulator output did not become stable", "other_fault"),
    ("uvcvideo: Failed to set UVC probe control : -110 (exp. 26).", "other_fault"),
    ("xhci_hcd 0000:00:14.0: PM: pci_pm_resume():", "other_fault"),
    ("Illegal context switch in RCU read-side critical section!", "other_fault"),
    ("Showing backtraces of running workers in stalled worker pools:", "soft_lockup"),
]

BENIGN = [
    "jffs2: notice: (1) jffs2_build_xattr_subsystem: complete building xattr subsystem, 0 of xdatum (0 unchecked)",
    "jffs2: notice: (55) jffs2_build_xattr_subsystem: xdatum_mem_usage from 0 byte to 64 byte (64 byte reclaimed)",
    "nfs41_sequence_process: Error 0 free the slot",
    "RPC:  1187 call_bind (status 0)",
    "hv_balloon: Using Dynamic Memory protocol version 2.0",
    "aspeed-smc 1e620000.spi: Using 50 MHz SPI frequency",
    "aspeed-video 1e700000.video: Timed out; first mode detect",
    "nouveau 0000:01:00.0: pmu: firmware unavailable",
]
