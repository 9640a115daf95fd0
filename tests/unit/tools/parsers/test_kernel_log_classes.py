"""kernel-log parser: the event classes beyond GPUs and Lustre — GPFS, NFS, Ethernet/RoCE, PCIe, slurmd /
SPANK, GPU-stack daemons, syslog tags and priorities, and generic error-level lines (shapes from the IBM
Spectrum Scale problem determination guide, the Linux NFS client, mlx5/ixgbe drivers, the PCIe AER
driver, slurmd, nvidia-fabricmanager)."""

from __future__ import annotations

from tools.models.logs import FsClientEvent, GpuStackEvent, LinkEvent, PcieEvent, SlurmNodeEvent
from tools.parsers.kernel.kernel_log import parse_kernel_log


def _one(line: str, node: str | None = "n1"):
    (ev,) = parse_kernel_log(line + "\n", path="k", node=node)
    return ev


def test_gpfs_mmfs_log_lines_by_state_and_the_expelled_node():
    ev = _one("2026-11-29_14:22:40.112+0000: [E] Node 10.20.0.9 (hgx09) is being expelled because of an expired lease.")
    assert isinstance(ev, FsClientEvent) and (ev.fs_type, ev.state, ev.server, ev.severity) == ("gpfs", "expelled", "hgx09", "err")
    ev = _one("Sep 24 13:02:31 k-g02 mmfs[3310]: [E] Lost membership in cluster storage.kite.example. Unmounting file systems.")
    assert (ev.source, ev.state, ev.node) == ("mmfs", "quorum_lost", "k-g02")
    assert _one("Jun 03 04:18:44 gp-c14 mmfs[5112]: [X] The mmfs daemon is shutting down abnormally.").state == "not_started"
    assert _one("Mon Nov 30 10:01:02.123 2026: [X] File System scratch unmounted by the system with return code 5").fs == "scratch"


def test_gpfs_disk_and_read_errors_name_the_device():
    # Spectrum Scale's disk-failure and NSD-read lines, and an inode I/O error under the default mount /<device>.
    ev = _one("Dec 08 03:42:31 io1 mmfs[5120]: [E] Disk failure.  Volume proj2. rc = 19. Physical volume md_0417.")
    assert (ev.state, ev.fs) == ("io_error", "proj2")
    ev = _one("2026-12-08_03:44:02.410+0000: [E] Write error on disk md_0417 of file system proj2: no NSD server of the disk is available (err 5)")
    assert (ev.state, ev.fs) == ("io_error", "proj2")
    assert _one("Dec 08 03:44:05 c1 kernel: mmfs: [E] I/O error on inode 5511 of /proj2 (err 5)").fs == "proj2"
    # a mount under a shared root names no device here (/gpfs/<fs> is the site's convention, read by the checks)
    assert _one("Dec 08 03:44:05 c1 kernel: mmfs: [E] I/O error on inode 5511 of /gpfs/proj2 (err 5)").fs is None


def test_nfs_client_not_responding_and_ok():
    down = _one("[Thu Apr  9 02:03:41 2026] nfs: server nfs01 not responding, still trying")
    back = _one("[Thu Apr  9 02:06:12 2026] nfs: server nfs01 OK")
    assert (down.fs_type, down.state, down.server) == ("nfs", "not_responding", "nfs01") and back.state == "restored"


def test_ethernet_and_roce_links_are_links_too():
    ev = _one("2026-11-03T14:02:42+0000 r-b03 kernel: mlx5_core 0000:9b:00.0 ens6f0np0: Link down")
    assert isinstance(ev, LinkEvent) and (ev.state, ev.port, ev.link_type, ev.node) == ("down", "ens6f0np0", "ethernet", "r-b03")
    assert _one("[ 1.0] ixgbe 0000:01:00.0 eth2: NIC Link is Down").link_type == "ethernet"


def test_pcie_aer_names_the_reporting_device_and_link_degradation():
    ev = _one("[Wed Apr 22 06:33:10 2026] pcieport 0000:a0:01.1: AER: Corrected error received: 0000:a1:00.0")
    assert isinstance(ev, PcieEvent) and (ev.pci, ev.corrected, ev.what) == ("0000:a1:00.0", True, "aer")
    ev = _one("[ 5.0] pci 0000:a1:00.0: 63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x8 link at "
              "0000:a0:01.1 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)")
    assert (ev.what, ev.pci) == ("link_degraded", "0000:a1:00.0")
    assert not _one("[ 6.0] pcieport 0000:00:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:01:00.0").corrected


def test_slurmd_spank_and_gpu_stack_daemons():
    ev = _one("Mar 04 05:09:41 gpu003 slurmd[4121]: spank-epilog: error: pyxis: failed to remove container of job 74002")
    assert isinstance(ev, SlurmNodeEvent) and (ev.what, ev.source) == ("spank_error", "slurmd")
    ev = _one("Jul 09 10:01:02 hgx04 nv-fabricmanager[2201]: request to query NVSwitch device information from "
              "NVSwitch driver failed with error:WARNING Nvswitch fatal error detected")
    assert isinstance(ev, GpuStackEvent) and ev.component == "fabricmanager"


def test_priorities_from_dmesg_x_and_rfc5424_and_generic_error_lines():
    ev = _one("kern  :err   : [  912.5] mce: [Hardware Error]: Machine check events logged")
    assert (ev.kind, ev.severity, ev.what, ev.fatal) == ("host_fault", "err", "machine_check", False)
    ev = _one("<11>1 2026-03-04T10:01:02Z gpu017 beegfs-client 4211 - - Communication error: node unreachable")
    assert (ev.source, ev.severity) == ("beegfs-client", "err")
    assert parse_kernel_log("kern  :info  : [  1.0] ACPI: bus type PCI registered\n", path="k") == []
    assert parse_kernel_log("[ 1.0] ACPI BIOS Error (bug): Could not resolve symbol, AE_NOT_FOUND\n", path="k") == []


def test_generic_events_are_capped_per_file():
    text = "".join(f"[ {i}.0] foo: fatal error number {i}\n" for i in range(500))
    assert len(parse_kernel_log(text, path="k")) == 200


def test_host_faults_from_panics_hardware_error_records_edac_and_lockups():
    # Shapes: kernel panic(), a GHES (APEI) fatal memory record as pstore keeps it, the x86 MCE handler,
    # EDAC uncorrectable/correctable counts, the NMI hard-lockup and soft-lockup detectors, an oops.
    cases = {
        "<0>[660903.118301] Kernel panic - not syncing: Fatal hardware error!": ("panic", True),
        "<0>[660903.118210] {1}[Hardware Error]: event severity: fatal": ("hardware_error", True),
        "[Tue Jan 27 02:40:01 2026] mce: [Hardware Error]: CPU 61: Machine Check Exception: 5 Bank 13: "
        "be00000000800400": ("machine_check", True),
        "Jan 27 02:38:11 g-a14 kernel: EDAC MC1: 1 UE memory read error on CPU_SrcID#1_MC#1_Chan#0_DIMM#0 "
        "(channel:0 slot:0 page:0x3fd1c9)": ("memory_ue", True),
        "Jan 27 01:52:09 g-a14 kernel: EDAC MC1: 1 CE memory read error on CPU_SrcID#1_MC#1_Chan#0_DIMM#0": ("memory_ce", False),
        "[ 7001.5] NMI watchdog: Watchdog detected hard LOCKUP on cpu 17": ("hard_lockup", True),
        "[ 7001.5] watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [python:4242]": ("soft_lockup", False),
        "[ 812.4] BUG: unable to handle page fault for address: ffffb0c8c0d1e000": ("oops", False),
    }
    for line, (what, fatal) in cases.items():
        ev = _one(line)
        assert (ev.kind, ev.what, ev.fatal) == ("host_fault", what, fatal), line
    assert _one("<0>[660903.118215] {1}[Hardware Error]:  fru_text: CPU1_DIMM_A1").fru == "CPU1_DIMM_A1"


def test_slurmctld_stop_and_start_are_info_level_restart_events():
    for line in ("Apr 01 22:10:00 head1 slurmctld[77]: Terminate signal (SIGINT or SIGTERM) received",
                 "2026-04-01T22:10:04.551833+00:00 head1 slurmctld[80]: slurmctld version 22.05.11 started on cluster c",
                 "Apr 01 22:10:30 head1 slurmctld[80]: Running as primary controller"):
        ev = _one(line)
        assert isinstance(ev, SlurmNodeEvent) and (ev.what, ev.severity) == ("controller_restart", "info")
    # slurmd saying the same words is no controller restart, and an error of slurmctld stays an error
    assert parse_kernel_log("Apr 01 22:10:00 n3 slurmd[5]: Terminate signal (SIGINT or SIGTERM) received\n", path="k") == []
    assert _one("Apr 01 22:11:00 head1 slurmctld[80]: error: Node n3 has low real_memory size").what != "controller_restart"


def test_firmware_tracer_and_peermem_exit_noise_are_not_errors():
    assert parse_kernel_log(
        "[Tue Nov 18 17:01:24 2026] mlx5_core 0000:1a:00.0: mlx5_fw_tracer_handle_traces:740:(pid 1283): "
        "FWTracer: Events were lost\n"
        "Nov 18 17:02:00 n4 kernel: nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, "
        "skipping further processing\n", path="k", node="n4") == []


def test_nvrm_api_mismatch_and_the_module_loading_again_are_driver_events():
    events = parse_kernel_log(
        "Nov 19 06:50:54 gx07 kernel: NVRM: API mismatch: the client has the version 550.127.05, but\n"
        "Nov 19 06:50:54 gx07 kernel: NVRM: this kernel module has the version 550.90.07.  Please\n"
        "Nov 19 09:10:00 gx07 kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05  Thu Oct 10 2024\n",
        path="kernel/gx07.log", node="gx07")
    assert [(e.kind, e.what) for e in events] == [("gpu_driver", "api_mismatch"), ("gpu_driver", "module_loaded")]


def test_a_file_system_client_module_that_will_not_load_is_the_client_not_started():
    events = parse_kernel_log(
        "[ 812.1] beegfs: Unknown symbol ib_register_client (err -22)\n"
        "[ 812.2] lnet: disagrees about version of symbol ib_alloc_pd\n"
        "Nov 20 12:44:05 cb03 systemd[1]: beegfs-client.service: Failed with result 'exit-code'.\n"
        "[ 812.3] mmfs26: Unknown symbol rdma_create_qp (err -2)\n", path="kernel/cb03.log", node="cb03")
    assert [(e.kind, e.fs_type, e.state) for e in events] == [
        ("fs_client", "beegfs", "not_started"), ("fs_client", "lustre", "not_started"),
        ("fs_client", "beegfs", "not_started"), ("fs_client", "gpfs", "not_started")]


def test_cephfs_client_refused_or_cut_off_and_gpu_stack_modules_that_will_not_load():
    events = parse_kernel_log(
        "[Fri Nov 27 09:03:22 2026] ceph: mds0 reconnect denied\n"
        "[Fri Nov 27 09:03:23 2026] libceph: mon1 (1)10.50.0.12:6789 session lost, hunting for new mon\n"
        "Nov 25 06:11:12 hx05 kernel: nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -22)\n"
        "Nov 25 06:11:13 hx05 kernel: gdrdrv: disagrees about version of symbol nvidia_p2p_get_pages\n",
        path="kernel/n.log", node="n")
    assert [(e.kind, getattr(e, "fs_type", None), getattr(e, "state", None) or getattr(e, "what", None))
            for e in events] == [("fs_client", "ceph", "expelled"), ("fs_client", "ceph", "lost_connection"),
                                 ("gpu_driver", None, "module_failed:nvidia_peermem"),
                                 ("gpu_driver", None, "module_failed:gdrdrv")]


def test_beegfs_retries_and_mounts_a_node_cannot_make_are_file_system_client_events():
    # BeeGFS client source (Messaging RPC retry), util-linux mount(8) and autofs's automount daemon.
    ev = _one("[192631.502110] beegfs: Messaging (RPC)(51830): Retrying communication with node: beegfs-storage bstor02 [ID: 2]")
    assert (ev.fs_type, ev.state, ev.server) == ("beegfs", "not_responding", "bstor02")
    helper = _one("Dec 01 11:31:02 r-12 automount[1988]: >> mount: /projects/chem: bad option; for several filesystems "
                  "(e.g. nfs, cifs) you might need a /sbin/mount.<type> helper program.")
    assert (helper.fs_type, helper.state) == ("nfs", "not_mounted")
    assert (_one("[  61.2] mount.nfs4: No such device").fs_type, _one("mount: /mnt/x: unknown filesystem type 'lustre'.").fs_type) \
        == ("nfs", "lustre")
    failed = _one("Dec 01 11:31:02 r-12 automount[1988]: mount(nfs): nfs: mount failure nas01:/export/projects/chem on /projects/chem")
    assert (failed.state, failed.server) == ("error", "nas01")  # the reason is another line's: not the client by itself


def test_a_daemon_saying_its_disk_is_full_is_an_error_level_line():
    ev = _one("Nov 30 08:29:37 db01 mariadbd[1187]: 2026-11-30  8:29:37 14 [Warning] mariadbd: Disk is full writing "
              "'/var/lib/mysql/mysql-bin.004812' (Errcode: 28 \"No space left on device\"). Waiting for someone to free space...")
    assert (ev.kind, ev.source, ev.node, ev.severity) == ("generic", "mariadbd", "db01", "err")


def test_aer_record_details_and_kubelet_info_lines_are_not_error_signals():
    from tools.parsers.kernel._host import error_level
    # the header carries the severity; the details of the record repeat it
    assert not error_level("mlx5_core 0000:81:00.0:   device [15b3:101b] error status/mask=00000001/00000000", None)
    assert not error_level("mlx5_core 0000:81:00.0:    [ 0] RxErr                  (First)", None)
    # glog levels: I and W are not errors, E is
    assert not error_level('I1006 09:10:27.000000   60311 kubelet.go:2347] "Pod admission denied" pod="a/b"', None)
    assert error_level('E1006 09:10:27.000000   60311 kubelet.go:2347] "Failed to start container" pod="a/b"', None)


def test_an_nfs_server_noting_clients_that_dropped_their_connection_is_no_error():
    # sunrpc's svc_tcp_sendto on the server while clients reboot: -104 (reset) and -32 (closed) are the peer's doing.
    log = ("Nov 20 10:01:14 nfs-home01 kernel: rpc-srv/tcp: nfsd: got error -104 when sending 65668 bytes - shutting down socket\n"
           "Nov 20 10:01:15 nfs-home01 kernel: rpc-srv/tcp: nfsd: got error -32 when sending 140 bytes - shutting down socket\n"
           "Nov 20 10:01:16 nfs-home01 kernel: rpc-srv/tcp: nfsd: got error -5 when sending 140 bytes - shutting down socket\n")
    events = parse_kernel_log(log, path="kernel/nfs-home01.log")
    assert [e.line for e in events] == [3]  # an I/O error (-5) sending a reply is still one
