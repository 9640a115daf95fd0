"""`warden sandbox up|down|status|inject|clear`: the one-host Slurm cluster (sandbox/) from the CLI."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agent.cli.errors import warden_errors
from agent.live.session import write_sandbox_config
from sandbox import cluster, faults

__all__ = ["sandbox_app"]

sandbox_app = typer.Typer(help="A real Slurm cluster on this host (Slurm, slurmdbd, DCGM exporters, Prometheus), "
                          "with fault injection.", no_args_is_help=True)

StateDir = Annotated[Path | None, typer.Option("--state-dir", help="State folder (default $WARDEN_HOME/sandbox).")]
_out = Console(highlight=False, soft_wrap=True)


def _print(obj: object, json_out: bool) -> None:
    if json_out:
        typer.echo(json.dumps(obj, indent=2, default=str))
    else:
        _out.print(obj if isinstance(obj, str) else json.dumps(obj, indent=2, default=str), markup=False)


@sandbox_app.command("up")
def up_cmd(
    state_dir: StateDir = None,
    config: Annotated[Path | None, typer.Option("--config", help="Where to write the live config (default $WARDEN_HOME/warden.toml).")] = None,
    no_install: Annotated[bool, typer.Option("--no-install", help="Never apt-get install missing packages.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for the nodes.")] = 120.0,
    json_out: Annotated[bool, typer.Option("--json", help="Print the status as JSON.")] = False,
) -> None:
    """Start the sandbox (idempotent; safe after a crash) and write a ready warden.toml for it.

    Example: warden sandbox up
    """
    with warden_errors():
        started = time.monotonic()
        st = cluster.up(state_dir, install=not no_install, timeout_s=timeout)
        path = write_sandbox_config(state_dir, config)
        elapsed = round(time.monotonic() - started, 2)
    if json_out:
        _print({**st.model_dump(mode="json"), "config": str(path), "elapsed_s": elapsed}, True)
        return
    nodes = ", ".join(f"{n}={s}" for n, s in st.nodes.items())
    _out.print(f"sandbox up in {elapsed:g} s at {st.state_dir}\nnodes: {nodes}\nprometheus: {st.prometheus_url}\n"
               f"live config: {path}  (try: warden diagnose --live)", markup=False)


@sandbox_app.command("down")
def down_cmd(
    state_dir: StateDir = None,
    purge: Annotated[bool, typer.Option("--purge", help="Also delete the state folder.")] = False,
) -> None:
    """Stop the sandbox's daemons by their pid files (active faults are cleared first).

    Example: warden sandbox down
    """
    with warden_errors():
        stopped = cluster.down(state_dir, purge=purge)
    _out.print(f"stopped: {', '.join(stopped) or 'nothing was running'}", markup=False)


@sandbox_app.command("status")
def status_cmd(
    state_dir: StateDir = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the status as JSON.")] = False,
) -> None:
    """Show which daemons run and each node's state; exit 1 when the sandbox is not up.

    Example: warden sandbox status --json
    """
    with warden_errors():
        st = cluster.status(state_dir)
    if json_out:
        _print(st.model_dump(mode="json"), True)
    else:
        down = [c.name for c in st.components if not c.running]
        _out.print(f"{'up' if st.up else 'not up'}: {st.state_dir}\nnodes: "
                   f"{', '.join(f'{n}={s}' for n, s in st.nodes.items()) or '-'}"
                   + (f"\nnot running: {', '.join(down)}" if down else "")
                   + (f"\nactive faults: {', '.join(faults.active(state_dir))}" if faults.active(state_dir) else ""),
                   markup=False)
    if not st.up:
        raise typer.Exit(1)


@sandbox_app.command("inject")
def inject_cmd(
    fault: Annotated[str, typer.Argument(help=f"One of: {', '.join(faults.FAULTS)}.")],
    node: Annotated[str | None, typer.Option("--node", help="The node to break (node faults).")] = None,
    job: Annotated[str | None, typer.Option("--job", help="An existing job to use instead of a new one.")] = None,
    state_dir: StateDir = None,
    no_wait: Annotated[bool, typer.Option("--no-wait", help="Do not wait for the symptom to show.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the record as JSON.")] = False,
) -> None:
    """Inject a fault through the real channels (Slurm, job logs, DCGM metrics, emulated kernel/Lustre files).

    Example: warden sandbox inject gpu_xid79 --node gpu02
    """
    with warden_errors():
        rec = faults.inject(fault, state_dir, node, job, wait=not no_wait)  # type: ignore[arg-type]
    _print(rec.model_dump(mode="json") if json_out else f"injected {rec.fault}: {rec.detail}"
           + (f" (job {rec.job})" if rec.job else ""), json_out)


@sandbox_app.command("clear")
def clear_cmd(
    fault: Annotated[str, typer.Argument(help=f"One of: {', '.join(faults.FAULTS)}.")],
    node: Annotated[str | None, typer.Option("--node", help="Accepted for symmetry; the saved record decides.")] = None,
    job: Annotated[str | None, typer.Option("--job", help="Accepted for symmetry; the saved record decides.")] = None,
    state_dir: StateDir = None,
    no_wait: Annotated[bool, typer.Option("--no-wait", help="Do not wait for a restarted node.")] = False,
) -> None:
    """Undo exactly what `inject` did (cancel its jobs, restore files and GPU state, restart a slurmd).

    Example: warden sandbox clear gpu_xid79
    """
    with warden_errors():
        rec = faults.clear(fault, state_dir, node, job, wait=not no_wait)  # type: ignore[arg-type]
    _out.print(f"cleared {fault}" if rec else f"{fault} was not active", markup=False)
