"""Families holdout60-66 (tests/data/kernel_lines_holdout60-66.jsonl: intel-wired-lan, linux-wireless, linuxppc) showed
missing or of another kind, each written from its printk format with other devices and values than the labelled
lines, with the same drivers' recovery and informational lines that must stay benign."""

from __future__ import annotations

FAULTS = [
    # iavf_main.c iavf_reset_task, the e1000e/igb/igc semaphore, ASSERT_RTNL, ENA's missing completions, r8152, r8168
    ("[  812.4] iavf 0000:3b:02.1: Reset task did not complete, VF disabled", "other_fault"),
    ("iavf 0000:3b:02.1: Reset never finished (0)", "other_fault"),
    ("igb 0000:02:00.0: Driver can't access resource, SW_FW_SYNC timeout.", "other_fault"),
    ("e1000e 0000:00:19.0: Driver can't access the Eeprom - SMBI Semaphore not granted.", "other_fault"),
    ("RTNL: assertion failed at net/ipv4/devinet.c (1547)", "other_fault"),
    ("eth2: The number of lost tx completions is above the threshold (200 > 128). Reset the device", "other_fault"),
    ("ens6: Potential MSIX issue on Rx side Queue = 3. Reset the device", "other_fault"),
    ("r8152 2-2:1.0 enx00e04c680001: Tx status -71", "other_fault"),
    ("r8152 4-1:1.0 eth0: Tx timeout", "other_fault"),
    ("r8168 0000:02:00.0 enp2s0: Transmit timeout reset Device!", "other_fault"),
    # i40e's (and old ixgbe's) warning that the slot is below the NIC's need
    ("i40e 0000:81:00.1: PCI-Express bandwidth available for this device may be insufficient for optimal performance.", "pcie_link"),
    ("i40e 0000:81:00.1: Please move the device to a different PCI-e link with more lanes and/or higher transfer rate.", "pcie_link"),
    ("ixgbe 0000:05:00.0: PCI-Express bandwidth available for this card is not sufficient for optimal performance.", "pcie_link"),
    ("ixgbe 0000:05:00.0: For optimal performance a x8 PCI-Express slot is required.", "pcie_link"),
    # iwlwifi, mac80211, ath10k, mt7601u, mt76, rtw88, rsi_91x, Bluetooth
    ("iwlwifi 0000:00:14.3: Timeout waiting for hardware access (CSR_GP_CNTRL 0xffffffff)", "other_fault"),
    ("wlp2s0: HW problem - can not stop rx aggregation for 00:11:22:33:44:55 tid 6", "other_fault"),
    ("ath10k_pci 0000:02:00.0: wmi command 36903 timeout, restarting hardware", "other_fault"),
    ("ath10k_pci 0000:02:00.0: could not request peer stats info: -11", "other_fault"),
    ("mt7601u 3-1:1.0: Error: send MCU cmd failed:-110", "other_fault"),
    ("mt7601u 3-1:1.0: Vendor request req:06 off:0a40 failed:-19", "other_fault"),
    ("mt7601u 3-1:1.0: Warning: MAC TX did not stop!", "other_fault"),
    ("mt7921e 0000:04:00.0: Timeout for driver own", "other_fault"),
    ("mt7615e 0000:01:00.0: Timeout for initializing firmware", "other_fault"),
    ("rtw_8821ce 0000:03:00.0: firmware failed to leave lps state", "other_fault"),
    ("rtw_8822bu 1-4:1.0: failed to get tx report from firmware", "other_fault"),
    ("rtw_8723de 0000:02:00.0: failed to send h2c command", "other_fault"),
    ("rsi_91x: rsi_sdio_host_intf_read_pkt: Synch Cmd53 read failed", "other_fault"),
    ("rsi_91x: rsi_sdio_write_register_multiple: Synch Cmd53 write failed -84", "other_fault"),
    # (the controller that does not answer a command: holdout63 labels it other_fault, so the near-miss
    # 'command 0xfc05 tx timeout' that tests/unit/test_kernel_generalize.py held benign moves here)
    ("Bluetooth: hci1: command 0x0c03 tx timeout", "other_fault"),
    ("Bluetooth: hci0: command 0xfc05 tx timeout", "other_fault"),
    ("Bluetooth: hci0: Opcode 0x0c1a failed: -110", "other_fault"),
    # POWER EEH: the recovery's driver steps, the failed device's register log, the PHB's diag-data and skiboot's dump
    ("PCI 0001:01:00.0#10000: EEH: Invoking mlx5_core->error_detected(IO frozen)", "pcie_aer"),
    ("PCI 0001:01:00.1#10000: EEH: mlx5_core driver reports: 'need reset'", "pcie_aer"),
    ("EEH: PCI device/vendor: 101915b3", "pcie_aer"),
    ("EEH: PCI-E 10: 00020010 10008fe2 00005957 00477d03", "pcie_aer"),
    ("PHB3 PHB#1 Diag-data (Version: 1)", "pcie_aer"),
    ("RootErrSts: 00000000 00000020 00000001", "pcie_aer"),
    ("[ 1201.113456789,3] PHB#0001[0:1]: deviceStatus        = 00000060", "pcie_aer"),
]  # fmt: skip

BENIGN = [
    # the Intel NICs' reset after the hang report (the report is the fault), iwlwifi's dump title
    "ixgbe 0000:83:00.1 ens2f1: Reset adapter",
    "[  301.2] igc 0000:05:00.0 enp5s0: Reset adapter",
    "iwlwifi 0000:3b:00.0: Start IWL Error Log Dump:",
    # the same drivers' informational lines
    "i40e 0000:81:00.1: PCI-Express: Speed 8.0GT/s Width x8",
    "Bluetooth: hci0: Opcode 0x0401 failed: -16",
    "rtw_8821ce 0000:03:00.0: Firmware version 24.8.0, H2C version 12",
    "mt7601u 3-1:1.0: ASIC revision: 76010001 MAC revision: 76010500",
    "iavf 0000:3b:02.1 eth3: NIC Link is Up Speed is 25 Gbps Full Duplex",
    # EEH's stack of the detecting path (holdout49 labels it benign) and its boot line
    "EEH: Call Trace:",
    "EEH: [c000000000051a2c] __eeh_send_failure_event+0x7c/0x160",
    "EEH: PowerNV platform initialized",
]
