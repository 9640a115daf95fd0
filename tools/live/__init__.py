"""Live collection: which artifacts to fetch from a running cluster, and fetching them.

``model`` holds the typed input (``LivePlanInput``, built by agent/live/config.py from
``warden.toml``), ``plan`` turns it (and the Slurm state read first) into bounded lists of
FetchRequests, ``collect`` fetches them through Warden's sources into a ReadContext.
"""

__all__ = ["model", "plan", "collect"]
