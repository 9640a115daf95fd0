"""Slurm node and job state words -> (base state, flags), shared by the Slurm parsers.

Sources: sinfo(1) "NODE STATE CODES" (short codes such as ``drng``, ``mix``, and the suffix
characters ``* ~ # ! % $ @ ^ -``), scontrol's ``State=MIXED+DRAIN+NOT_RESPONDING``, squeue's
short job state codes (``PD``, ``R``, ``CG``...), and the JSON state lists of Slurm 23.02+.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = [
    "NODE_BASE_STATES",
    "node_state_from_words",
    "node_state_from_sinfo",
    "job_state_from_words",
    "JOB_STATE_CODES",
]

NODE_BASE_STATES = frozenset({"UNKNOWN", "DOWN", "IDLE", "ALLOCATED", "ERROR", "MIXED", "FUTURE"})
"""Slurm's base node states; every other word in a state list is a flag."""

_SINFO_SUFFIX = {
    "*": "NOT_RESPONDING",
    "~": "POWERED_DOWN",
    "#": "POWERING_UP",
    "!": "POWER_DOWN",
    "%": "POWERING_DOWN",
    "$": "MAINTENANCE",
    "@": "REBOOT_REQUESTED",
    "^": "REBOOT_ISSUED",
    "-": "PLANNED",
}

# sinfo short (%t) and long (%T) words -> (state, implied flags)
_SINFO_WORDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "alloc": ("ALLOCATED", ()),
    "allocated": ("ALLOCATED", ()),
    "mix": ("MIXED", ()),
    "mixed": ("MIXED", ()),
    "idle": ("IDLE", ()),
    "down": ("DOWN", ()),
    "comp": ("COMPLETING", ("COMPLETING",)),
    "completing": ("COMPLETING", ("COMPLETING",)),
    "drain": ("DRAINED", ("DRAIN",)),
    "drained": ("DRAINED", ("DRAIN",)),
    "drng": ("DRAINING", ("DRAIN",)),
    "draining": ("DRAINING", ("DRAIN",)),
    "fail": ("FAIL", ("FAIL",)),
    "failg": ("FAILING", ("FAIL",)),
    "failing": ("FAILING", ("FAIL",)),
    "futr": ("FUTURE", ()),
    "future": ("FUTURE", ()),
    "inval": ("INVAL", ("INVALID_REG",)),
    "maint": ("MAINT", ("MAINTENANCE",)),
    "resv": ("RESERVED", ("RESERVED",)),
    "reserved": ("RESERVED", ("RESERVED",)),
    "plnd": ("PLANNED", ("PLANNED",)),
    "planned": ("PLANNED", ("PLANNED",)),
    "unk": ("UNKNOWN", ()),
    "unknown": ("UNKNOWN", ()),
    "npc": ("PERFCTRS", ("PERFCTRS",)),
    "perfctrs": ("PERFCTRS", ("PERFCTRS",)),
    "boot": ("REBOOT_ISSUED", ("REBOOT_ISSUED",)),
    "pow_dn": ("POWERED_DOWN", ("POWERED_DOWN",)),
    "powered_down": ("POWERED_DOWN", ("POWERED_DOWN",)),
    "pow_up": ("POWERING_UP", ("POWERING_UP",)),
    "powering_up": ("POWERING_UP", ("POWERING_UP",)),
    "powering_down": ("POWERING_DOWN", ("POWERING_DOWN",)),
    "blocked": ("BLOCKED", ("BLOCKED",)),
}


def node_state_from_words(words: list[str]) -> tuple[str | None, list[str]]:
    """A state list (JSON ``["IDLE", "DRAIN"]`` or scontrol ``IDLE+DRAIN``) -> (base, flags).

    The base is the first word that is a Slurm base state; all other words are flags, upper
    case, in order, without duplicates.
    """
    upper: list[str] = []
    suffixed: list[str] = []
    for w in words:
        word = (w or "").strip().upper()
        # Older scontrol prints sinfo's suffixes on the state (State=DOWN*, State=IDLE~): flags too.
        while word and word[-1] in _SINFO_SUFFIX:
            suffixed.insert(0, _SINFO_SUFFIX[word[-1]])
            word = word[:-1]
        if word:
            upper.append(word)
    upper += suffixed
    base = next((w for w in upper if w in NODE_BASE_STATES), None)
    if base is None and upper:
        base = upper[0]
    flags: list[str] = []
    for word in upper:
        if word != base and word not in flags:
            flags.append(word)
    return base, flags


def node_state_from_sinfo(text: str) -> tuple[str, list[str]]:
    """An sinfo state cell (``drng``, ``down*``, ``idle~``, ``mixed+drain``, ``alloc+``) -> (state, flags).

    Raises:
        ValueError: an empty cell.
    """
    word = text.strip()
    if not word:
        raise ValueError("empty node state")
    flags: list[str] = []
    while word and word[-1] in _SINFO_SUFFIX:
        flag = _SINFO_SUFFIX[word[-1]]
        if flag not in flags:
            flags.insert(0, flag)
        word = word[:-1]
    completing = word.endswith("+")  # "ALLOCATED+": allocated, some jobs completing
    word = word.rstrip("+")
    parts = [p for p in word.split("+") if p]
    if not parts:
        raise ValueError(f"bad node state {text!r}")
    state, implied = _SINFO_WORDS.get(parts[0].lower(), (parts[0].upper(), ()))
    out = list(implied)
    for extra in parts[1:]:
        extra_state, extra_implied = _SINFO_WORDS.get(extra.lower(), (extra.upper(), (extra.upper(),)))
        out.extend(extra_implied or (extra_state,))
    if completing:
        out.append("COMPLETING")
    for flag in flags:
        out.append(flag)
    deduped: list[str] = []
    for flag in out:
        if flag not in deduped:
            deduped.append(flag)
    return state, deduped


JOB_STATE_CODES = {
    "PD": "PENDING", "R": "RUNNING", "CG": "COMPLETING", "CD": "COMPLETED", "CA": "CANCELLED",
    "F": "FAILED", "TO": "TIMEOUT", "NF": "NODE_FAIL", "PR": "PREEMPTED", "S": "SUSPENDED",
    "ST": "STOPPED", "OOM": "OUT_OF_MEMORY", "BF": "BOOT_FAIL", "DL": "DEADLINE",
    "CF": "CONFIGURING", "RQ": "REQUEUED", "RH": "REQUEUE_HOLD", "RF": "REQUEUE_FED",
    "RD": "RESV_DEL_HOLD", "RS": "RESIZING", "RV": "REVOKED", "SI": "SIGNALING",
    "SE": "SPECIAL_EXIT", "SO": "STAGE_OUT",
}
"""squeue's compact job state codes (%t) -> long names (%T), per squeue(1) JOB STATE CODES."""

_LONG_NAMES = frozenset(JOB_STATE_CODES.values())

_JOB_BASE = frozenset({
    "PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT",
    "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY",
})


def job_state_from_words(words: list[str] | str | None) -> str | None:
    """A job state (JSON string or list, squeue %t/%T, sacct ``CANCELLED by 0``) -> one upper-case word.

    A list holding COMPLETING reports COMPLETING (as squeue does); otherwise its first base
    state. Compact codes (``PD``) are expanded; sacct's ``CANCELLED by 1000`` -> CANCELLED, its
    truncated ``CANCELLED+`` -> CANCELLED, and squeue -l's 8-character ``COMPLETI`` -> COMPLETING.
    """
    if words is None:
        return None
    if isinstance(words, str):
        return _state_word(words)
    return _state_words(words)


@lru_cache(maxsize=4096)
def _state_word(word: str) -> str | None:
    """job_state_from_words of one string (a large cluster prints a handful of them 100,000 times)."""
    return _state_words([word])


def _state_words(words: list[str]) -> str | None:
    upper = [w.strip().upper() for w in words if w and w.strip()]
    if not upper:
        return None
    if len(upper) > 1:
        if "COMPLETING" in upper:
            return "COMPLETING"
        return next((w for w in upper if w in _JOB_BASE), upper[0])
    word = upper[0].split()[0].rstrip("+")
    if word in JOB_STATE_CODES:
        return JOB_STATE_CODES[word]
    if word not in _LONG_NAMES and len(word) >= 5:  # squeue -l's %.8T: COMPLETI, CANCELLE, NODE_FAI
        matches = [name for name in _LONG_NAMES if name.startswith(word)]
        if len(matches) == 1:
            return matches[0]
    return word
