"""Families holdout52-58 (tests/data/kernel_lines_holdout52.jsonl … 58) showed missing or of another kind in the RDMA
and NIC drivers (pass 34), each written from its printk format with other devices and values than the labelled lines,
and the informational lines of the same sources that must stay benign."""

from __future__ import annotations

FAULTS = [
    # rdma_rxe refusing a verb or a remote access (5.x pr_debug/pr_warn, 6.2+ with the function's name)
    ("rdma_rxe: cqe(65536) > max_cqe(32767)", "infiniband"),
    ("rdma_rxe: rxe_cq_chk_attr: cqe(0) <= 0", "infiniband"),
    ("rdma_rxe: check_rkey: no MR matches rkey 0x2a4f1", "infiniband"),
    ("rdma_rxe: max_wr(70000) > max_srq_wr(65536)", "infiniband"),
    # the RDMA core's drain, irdma's critical event interrupt and init failure, hns RoCE's mailbox
    ("failed to drain shared recv queue: -110", "infiniband"),
    ("ice 0000:5e:00.1 rocep94s0f1: ICE OICR event notification: oicr = 0x00000100", "infiniband"),
    ("ice 0000:5e:00.1 rocep94s0f1: critical PE Error, GLPE_CRITERR=0x00011424", "infiniband"),
    ("ice 0000:af:00.0: IRDMA hardware initialization FAILED init_state=4 status=-12", "infiniband"),
    ("hns3 0000:7d:00.0: [cmd] token 0x1a2 mailbox 0x23 timeout.", "infiniband"),
    ("hns3 0000:35:00.1: failed to post mailbox 0x8 in event mode, ret = -16.", "infiniband"),
    # NVMe over RDMA failing in the RDMA layer
    ("nvme nvme3: rdma connection establishment failed (-111)", "infiniband"),
    ("nvme nvme1: failed to initialize PI MR pool sized 256 for QID 4", "infiniband"),
    # Intel NIC drivers' PHY, VF mailbox, TC, VEB, queue and idpf mailbox failures
    ("igb 0000:02:00.1 enp2s0f1: MDI Read did not complete", "other_fault"),
    ("ixgbevf 0000:03:10.4: PF still in reset state.  Is the PF interface up?", "other_fault"),
    ("igb 0000:05:00.0: VF 3 attempted to set invalid MAC filter", "other_fault"),
    ("i40e 0000:18:00.2: Failed configuring TC map 1 for channel (seid 612)", "other_fault"),
    ("i40e 0000:af:00.0: can't remove VEB 34 with 2 VSIs left", "other_fault"),
    ("ice 0000:17:00.0: Trying to use more Tx queues (16), than were allocated (4)!", "other_fault"),
    ("ice 0000:17:00.0: Failed to disable LAN Tx queues, error: -5", "other_fault"),
    ("idpf 0000:b1:00.0: Transaction timed-out (op 504, 60000ms)", "other_fault"),
    ("idpf 0000:b1:00.0: Device is in bad state: 3", "other_fault"),
    ("failed to kill vid 8100/200 for device ens1f0", "other_fault"),
    # mana's queue objects, qeth's recovery, a double-freed IRQ, fortify, vfio's blocked removal
    ("mana 7f21:00:02.0 eth1: Failed to create WQ object: -22, 0x3", "other_fault"),
    ("qeth 0.0.f500: failed to recover an error on the device", "other_fault"),
    ("Trying to free IRQ 45 from IRQ context!", "other_fault"),
    (
        'memmove: detected field-spanning write (size 64) of single field "hdr->data" at net/x.c:12 (size 32)',
        "other_fault",
    ),
    ("vfio-pci 0000:41:00.0: No device request channel registered, blocked until released by user", "other_fault"),
    # ksmbd's and nfsd's server failures
    ("ksmbd: Failed to send message: -32", "nfs"),
    ("ksmbd: PDU length(16777220) exceeded maximum allowed pdu size(8454144) on connection(7)", "nfs"),
    ("nfsd4_process_open2 failed to open newly-created file: status=10013", "nfs"),
    # iwlwifi's transport state, SOF's DSP boot
    ("iwlwifi 0000:3a:00.0: iwl_trans_tx bad state = 1", "other_fault"),
    ("iwlwifi 0000:00:14.3: HCMD_ACTIVE already clear for command REPLY_ERROR", "other_fault"),
    ("sof-audio-pci-intel-tgl 0000:00:1f.3: FW Poll Status: reg[0x80]=0x5000001 timedout", "other_fault"),
    ("sof-audio-pci-intel-cnl 0000:00:1f.3: 0x05000001: unknown ROM status value", "other_fault"),
]

BENIGN = [
    "rdma_rxe: loaded",
    "infiniband rxe3: set active",
    "infiniband enp1s0_rxe: added enp1s0",
    "nvme nvme2: creating 16 I/O queues.",
    "sof-audio-pci-intel-tgl 0000:00:1f.3: FW Poll Status: reg[0x80]=0x5000001 successful",
    "i40e 0000:3b:00.0: DCB init failed -63, disabled",
    "idpf 0000:b1:00.0: Device HW Reset initiated",
    "ksmbd: running",
    "mana 7f21:00:02.0 enP32529s1: Moved VF to namespace with: eth0",
    "iser: iser_qp_event_callback: qp event send queue drained (5)",
]
