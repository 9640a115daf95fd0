"""How training code names checkpoints and how a loader says it refused one (PyTorch, Lightning, DeepSpeed)."""

from __future__ import annotations

__all__ = ["is_pointer", "loader_refused"]

_POINTERS = ("latest", "last", "current")
# torch.load / load_state_dict read the file and refused it: the code's or the environment's fault, and an older
# checkpoint fails alike (``Error(s) in loading state_dict``, torch >= 2.6 ``Weights only load failed``).
_REFUSALS = ("state_dict", "weights only load failed", "unsupported global", "weights_only")


def is_pointer(path: str) -> bool:
    """Whether a checkpoint path points at the newest save rather than naming one: ``ckpt/latest`` (DeepSpeed's
    tag file, a symlink a script updates), ``last.ckpt`` (Lightning), ``latest_checkpoint.pt``."""
    base = path.rstrip("/").rsplit("/", 1)[-1].lower()
    stem = base.split(".", 1)[0]
    return stem in _POINTERS or any(stem.startswith(f"{p}{sep}") for p in _POINTERS for sep in "_-")


def loader_refused(message: str) -> bool:
    """Whether a checkpoint load failure is the loader refusing a readable file, not a damaged one."""
    low = message.lower()
    return any(w in low for w in _REFUSALS)
