"""Warden reaching the sandbox's Slurm over real SSH (OpenSSH sshd on loopback, Fabric client).

The test makes a host key and a client key in a temporary folder, runs ``/usr/sbin/sshd -D`` as
root with a private config on a free loopback port, and stops it at the end. Hostile job names,
node names and drain reasons travel as single arguments: the marker file they try to create must
not exist afterwards.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.live.act import diagnose_live
from agent.live.session import sandbox_config
from sandbox import cluster
from tests.integration.live_helpers import Executor, cancel_jobs, wait_healthy
from tools.errors import CommandError
from tools.models.findings import ActionSpec
from tools.sources.local import LocalSource
from tools.sources.ssh import SSHSource

SSHD = "/usr/sbin/sshd"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """(port, client key) of a private sshd on 127.0.0.1 accepting root with the test's key only."""
    if os.geteuid() != 0 or not Path(SSHD).exists() or not shutil.which("ssh-keygen"):
        pytest.skip("needs root and Debian's openssh-server (sshd, ssh-keygen)")
    d = tmp_path_factory.mktemp("sshd")
    for name in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True)
    (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
    port = _free_port()
    (d / "sshd_config").write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {d / 'host_key'}", f"PidFile {d / 'sshd.pid'}",
        f"AuthorizedKeysFile {d / 'authorized_keys'}", "PermitRootLogin prohibit-password",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
        "PermitUserEnvironment no", "LogLevel ERROR", ""]))
    Path("/run/sshd").mkdir(exist_ok=True)  # privilege separation directory
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")], stdout=subprocess.DEVNULL,
                            stderr=open(d / "sshd.log", "wb"))
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"sshd did not start: {(d / 'sshd.log').read_text()}")
                time.sleep(0.1)
        yield port, d / "client_key"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def ssh(sshd: tuple[int, Path], state_dir: Path) -> Iterator[SSHSource]:
    port, key = sshd
    src = SSHSource("127.0.0.1", user="root", port=port, key_filename=str(key), env=cluster.env(state_dir))
    yield src
    src.close()


def test_slurm_over_ssh_with_hostile_names(ssh: SSHSource, state_dir: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    hostile = [f"; touch {marker}", f"$(touch {marker})", f"`touch {marker}`", f"x' && touch {marker} && '",
               f'x" ; touch {marker} ; "', f"line\ntouch {marker}"]
    submitted: list[str] = []
    try:
        for name in hostile:
            try:
                out = ssh.run(["sbatch", "--parsable", "--hold", "-p", "gpu", "-J", name, "-o", "/dev/null",
                               "--wrap", "sleep 1"])
                submitted.append(out.decode().strip().split(";")[0])
            except CommandError:
                pass  # Slurm may refuse a name (e.g. a newline); what matters is that no shell ran it
        assert len(submitted) >= 5
        names = ssh.run(["squeue", "-h", "-o", "%j", "-j", ",".join(submitted)]).decode()
        for name in hostile[:5]:
            assert name in names.splitlines()
        for node in [f"$(touch {marker})", f"gpu01; touch {marker}"]:
            with pytest.raises(CommandError):
                ssh.run(["scontrol", "show", "node", node])
        assert not marker.exists()
    finally:
        cancel_jobs(LocalSource(env=cluster.env(state_dir)), submitted)
    assert not marker.exists()


def test_live_diagnosis_and_drain_over_ssh(ssh: SSHSource, state_dir: Path, tmp_path: Path) -> None:
    """The whole live path through Fabric: collection (Slurm, kernel-log and Lustre files via tail/cat
    on the remote side), diagnosis, and a drain/resume whose hostile reason arrives as one argument."""
    marker = tmp_path / "pwned"
    run = diagnose_live(sandbox_config(state_dir), "Is anything wrong?", runner=ssh, audit=False)
    assert run.diagnosis is not None and not run.collector.failures
    assert {a.format for a in run.artifacts} >= {"scontrol-node-text", "sacct-text", "lctl-md-stats"}
    ex = Executor.make(tmp_path, ssh, run.ctx.facts)  # type: ignore[arg-type]
    reason = f"test $(touch {marker}); `touch {marker}` 'q\" end"
    out = ex.run(ActionSpec(type="drain_node", node="gpu01", reason=reason))
    try:
        assert out.status == "executed" and out.verification and out.verification.ok, out.message
        got = ssh.run(["sinfo", "-R", "-h", "-n", "gpu01", "-o", "%E"]).decode().strip()
        assert got == f"warden: {reason}"
    finally:
        back = ex.run(ActionSpec(type="resume_node", node="gpu01"))
    assert back.status == "executed" and back.verification and back.verification.ok, back.message
    assert not marker.exists()
    wait_healthy(state_dir, LocalSource(env=cluster.env(state_dir)))


def test_ssh_from_warden_toml_with_kernel_logs_over_ssh(sshd: tuple[int, Path], state_dir: Path, tmp_path: Path) -> None:
    """warden.toml alone decides: [slurm] via = "ssh" (host, user, port, key file) and kernel logs as
    a command run over SSH on each node (here every node name maps to the loopback host)."""
    from agent.live.config import LiveConfig, load_live_config, render_toml
    from tools.live.model import KernelLogAccess, SlurmAccess

    port, key = sshd
    base = sandbox_config(state_dir)
    cfg = LiveConfig.model_validate({
        **base.model_dump(),
        "slurm": SlurmAccess(via="ssh", host="127.0.0.1", user="root", port=port, key_file=str(key),
                             slurm_conf=base.slurm.slurm_conf).model_dump(),
        "kernel_logs": KernelLogAccess(kind="command", host="127.0.0.1",
                                       argv=["tail", "-n", "500", f"{state_dir}/nodes/{{node}}/kernel.log"]).model_dump(),
    })
    p = tmp_path / "warden.toml"
    p.write_text(render_toml(cfg))
    from sandbox import faults

    rec = faults.inject("gpu_xid79", state_dir)
    try:
        run = diagnose_live(load_live_config(p), f"Job {rec.job} has logged nothing for minutes. Why?", audit=False)
    finally:
        faults.clear("gpu_xid79", state_dir)
    assert not run.collector.failures, run.collector.failures
    d = run.diagnosis
    assert d is not None and d.root_cause == "gpu_hardware_fault" and f"node:{rec.node}" in d.culprits
    kernel = [a for a in run.artifacts if a.format == "kernel-log" and a.node == rec.node]
    assert kernel and kernel[0].path == f"kernel/{rec.node}.log"
    assert kernel[0].command == f"tail -n 500 {state_dir}/nodes/{rec.node}/kernel.log"
    wait_healthy(state_dir, LocalSource(env=cluster.env(state_dir)))
