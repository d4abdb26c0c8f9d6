"""Families holdout67 (tests/data/kernel_lines_holdout67.jsonl) showed missing, each written from its printk format
with other devices and values than the labelled lines, and the informational lines of the same sources that must
stay benign."""

from __future__ import annotations

FAULTS = [
    # DRM_ERROR / drm_err cut before its '[drm:func [module]] ' head
    ("*ERROR* ring sdma0 timeout, but soft recovered", "other_fault"),
    ("[radeon]] *ERROR* radeon: ring 3 test failed (scratch(0x850C)=0xCAFEDEAD)", "other_fault"),
    ("*ERROR* Process information: process gnome-shell pid 1811 thread gnome-shel:cs0 pid 1840", "other_fault"),
    ("[i915]] *ERROR* CPU pipe B FIFO underrun", "other_fault"),
    # drm_atomic_helper.c commit timeouts, the object head kept, read as a stamp, or after a cut '*ERROR* '
    ("[drm:drm_atomic_helper_wait_for_flip_done] *ERROR* [CRTC:51:pipe A] flip_done timed out", "other_fault"),
    ("[   12.5] [PLANE:31:plane-0] commit wait timed out", "other_fault"),
    ("[CRTC:88:crtc-1] cleanup_done timed out", "other_fault"),
    ("*ERROR* [CRTC:40:crtc-2] hw_done timed out", "other_fault"),
    # msm DPU_ERROR and the Adreno CP/RBBM/GMU fault decode
    (
        "[drm:dpu_encoder_phys_cmd_wait_for_commit_done:711] [dpu error]enc32 intf1 ctl start failed: -110",
        "other_fault",
    ),
    ("[dpu error]failed to get vblank, -22", "other_fault"),
    ("adreno 5000000.gpu: CP | HW fault | status=0x00000004", "other_fault"),
    ("msm ae00000.mdss: CP | protected mode error | READ | addr=0x00000c00 | status=0x00010c00", "other_fault"),
    ("adreno 3d00000.gpu: RBBM | ATB bus overflow", "other_fault"),
    ("adreno 3d6a000.gmu: GMU watchdog expired", "other_fault"),
    # amdgpu: IB scheduling, headless CS parser, PSP ucode load, SMU messages, its own firmware images
    ("radeon 0000:01:00.0: couldn't schedule ib", "other_fault"),
    ("amdgpu 0000:03:00.0: couldn't schedule ib on ring <gfx_0.0.0>", "other_fault"),
    ("Failed to initialize parser -22!", "other_fault"),
    ("amdgpu 0000:0a:00.0: amdgpu: failed to load ucode SDMA0(0x1) ", "other_fault"),
    ("[drm] failed to load ucode id (7)", "other_fault"),
    ("      failed to send message 15c ret is 254", "other_fault"),
    ("amdgpu 0000:01:00.0: last message was failed ret is 0", "other_fault"),
    ("Failed to send message: 0x33, ret value: 0xffffffff", "other_fault"),
    ("amdgpu 0000:04:00.0: Direct firmware load for amdgpu/navi10_mes.bin failed with error -2", "other_fault"),
    ("[drm] Fence fallback timer expired on ring", "other_fault"),
    # etnaviv's interrupt handler, MMU fault report, idle and reset failures ('> ' quoted stamps too)
    ("etnaviv-gpu 130000.gpu: AXI bus error", "other_fault"),
    ("> [   31.000001] etnaviv-gpu 134000.gpu: MMU fault status 0x00000001", "other_fault"),
    ("etnaviv-gpu 2204000.gpu: MMU 1 fault addr 0x0fff0000", "other_fault"),
    ("etnaviv-gpu 130000.gpu: GPU not yet idle, mask: 0x7ffffffe", "other_fault"),
    ("etnaviv-gpu 130000.gpu: GPU failed to reset: FE not idle, 3D idle, 2D idle", "other_fault"),
    ("etnaviv-gpu 38008000.gpu: timed out waiting for idle: idle=0x7ffffffe", "other_fault"),
    ("imx-drm display-subsystem: deferred probe timeout, ignoring dependency", "other_fault"),
    # nouveau: the pushbuf ioctl's NV_PRINTK(err, cli), engine traps, display exceptions and DP outputs
    ("nouveau 0000:02:00.0: Xorg[1020]: validate: -12", "other_fault"),
    ("nouveau 0000:02:00.0: gnome-shell[2201]: fail ttm_validate", "other_fault"),
    ("nouveau 0000:02:00.0: firefox[4410]: validate_init", "other_fault"),
    ("nouveau 0000:02:00.0: kwin_x11[998]: reloc apply: -16", "other_fault"),
    ("nouveau 0000:02:00.0: Xorg[1020]: push 0 buffer not in list", "other_fault"),
    ("nouveau 0000:08:00.0: gr: 00000040 [] ch 2 [003fb6c000 Xwayland[2044]]", "other_fault"),
    ("nouveau 0000:08:00.0: cipher: 00000002 [] ch 1 [0000180000 mpv[801]]", "other_fault"),
    ("nouveau 0000:05:00.0: disp: chid 1 mthd 0080 data 00000000 00001080 00000002", "other_fault"),
    (
        "nouveau 0000:05:00.0: disp: chid 73 stat 00001080 reason 1 [PUSHBUFFER_ERR] mthd 0200 data deadbeef code"
        " 00000000",
        "other_fault",
    ),
    ("nouveau 0000:05:00.0: disp: outp 01:0006:0f42: no bios dp data", "other_fault"),
    ("nouveau 0000:05:00.0: disp: outp 02:0006:0f82: link rate unsupported by sink", "other_fault"),
    ("nouveau 0000:05:00.0: [drm] drm_WARN_ON(!asyh->curs.visible)", "other_fault"),
    # clk-conf.c assigned clocks from the device tree
    ("clk: failed to reparent mdp_clk_src to gpll0: -16", "other_fault"),
    ("clk: couldn't set ahb_clk_src clk rate to 80000000 (-22), current rate: 19200000", "other_fault"),
    ("clk: couldn't get parent clock 0 for /soc/display-subsystem@900000", "other_fault"),
    # WARN text lines of thunderbolt's NHI and syscore
    ("thunderbolt 0000:07:00.0: interrupt for RX ring 1 is already disabled", "other_fault"),
    ("Interrupts enabled after irq_gc_suspend+0x0/0x70", "other_fault"),
    ("Interrupts enabled before system core resume.", "other_fault"),
    # dw-hdmi's EDID and PHY failures under its glue drivers' names
    ("dwhdmi-rockchip ff940000.hdmi: failed to get edid", "other_fault"),
    ("meson-dw-hdmi c883a000.hdmi-tx: PHY PLL failed to lock", "other_fault"),
]

BENIGN = [
    "[drm] Initialized etnaviv 1.3.0 20151214 for etnaviv on minor 0",
    "etnaviv-gpu 130000.gpu: model: GC2000, revision: 5108",
    "nouveau 0000:01:00.0: DRM: allocated 1920x1080 fb: 0x200000, bo 00000000c7a1f2b4",
    "nouveau 0000:01:00.0: disp: preinit running...",
    "platform 3d6a000.gmu: deferred probe pending",
    "amdgpu 0000:03:00.0: amdgpu: SMU is initialized successfully!",
    "[drm] Loading DMUB firmware via PSP: version=0x02020017",
    "iwlwifi 0000:00:14.3: Direct firmware load for iwlwifi-so-a0-gf-a0-86.ucode failed with error -2",
    "thermal thermal_zone3: failed to read out thermal zone (-61)",
    "msm_dpu ae01000.display-controller: bound ae90000.displayport-controller (ops dp_display_comp_ops [msm])",
    "dwhdmi-imx 120000.hdmi: Detected HDMI TX controller v1.30a with HDCP (DWC HDMI 3D TX PHY)",
    "thunderbolt 0000:07:00.0: NHI initialized, starting thunderbolt",
    "[drm] amdgpu kernel modesetting enabled.",
    "clk: Disabling unused clocks",
    "> [  775.3] etnaviv-gpu 53100000.gpu: model: GC7000, revision: 6214",
]
