"""The sandbox: a real Slurm 22.05 cluster on one host, GPU metrics, emulated Lustre, fault injection.

Python API (``warden sandbox`` wraps it)::

    from sandbox import cluster, faults
    st = cluster.up(state_dir)            # -> ClusterStatus
    cluster.env(state_dir)                # -> {"SLURM_CONF": ...} for LocalSource
    faults.inject("gpu_xid79", state_dir) # -> InjectedFault
    faults.clear("gpu_xid79", state_dir)
    cluster.down(state_dir)

Imports only ``tools`` and third-party packages.
"""

__all__: list[str] = []
