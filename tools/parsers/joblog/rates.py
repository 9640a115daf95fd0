"""Training speed printed in progress lines: samples/s, tokens/s, step time and the global batch; and the
time-limit signal a batch script asked for.

Shapes (public trainers' own output): Hugging Face Trainer's log dicts (``'train_samples_per_second':
401.3``) and start banner (``Total train batch size (w. parallel, distributed & accumulation) = 2,048``);
Megatron-LM's iteration lines (``elapsed time per iteration (ms): 5102.4 | global batch size: 2048 |
... | tokens per second: 81234``); tqdm bars (``2.55s/it``, ``1.39it/s``); DeepSpeed's config print
(``"train_batch_size": 2048``) and plain ``samples/s: 401`` or ``401.3 samples/s``. The step time alone
says little — a step covers the global batch — so the rates and the batch are kept together.
"""

from __future__ import annotations

import re

__all__ = ["rate_fields", "global_batch", "time_signal"]

_NUM = r"(?P<v>\d[\d,]*(?:\.\d+)?)"
_SAMPLES = re.compile(
    r"(?:samples?(?:_per_second|_per_sec|/s(?:ec)?\b|/second|\s+per\s+second)['\"]?\s*[:=]?\s*" + _NUM
    + r"|" + _NUM.replace("v>", "w>") + r"\s*samples?/s(?:ec)?\b)", re.IGNORECASE)
_TOKENS = re.compile(
    r"(?:(?:tokens?|tok)(?:_per_second|_per_sec|/s(?:ec)?\b|/second|\s+per\s+second)(?:\s*(?:per|/)\s*gpu)?['\"]?\s*[:=]?\s*"
    + _NUM + r"|" + _NUM.replace("v>", "w>") + r"\s*(?:tokens?|tok)/s(?:ec)?\b)", re.IGNORECASE)
_STEP_TIME = re.compile(
    r"(?:step_time(?:_s)?['\"]?\s*[:=]\s*(?P<s>\d+(?:\.\d+)?)"
    r"|elapsed time per iteration \(ms\):\s*(?P<ms>\d+(?:\.\d+)?)"
    r"|(?P<spi>\d+(?:\.\d+)?)\s*s/it\b|(?P<ips>\d+(?:\.\d+)?)\s*it/s\b)", re.IGNORECASE)
_BATCH = re.compile(
    r"(?:total train batch size[^=:\n]{0,60}|global[ _]batch[ _]size|train_batch_size)['\"]?\s*[:=]\s*(?P<v>\d[\d,]*)\b",
    re.IGNORECASE)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def rate_fields(message: str) -> dict[str, str]:
    """``samples_per_s``, ``tokens_per_s`` and ``step_time_s`` (seconds per optimizer step) printed in
    one progress line, as strings; empty when the line prints none. ``it/s`` becomes its inverse."""
    fields: dict[str, str] = {}
    # Each pattern needs one of a few words, and a case-insensitive search with no literal prefix tries every
    # position of the line: the words are looked for first (in ASCII text only, where lowering is exact; Python's
    # IGNORECASE also folds the long s and the Kelvin sign onto s and k).
    low = message.lower() if message.isascii() else None
    if (low is None or "sample" in low) and (m := _SAMPLES.search(message)) is not None:
        fields["samples_per_s"] = str(_number(m["v"] or m["w"]))
    if (low is None or "tok" in low) and (m := _TOKENS.search(message)) is not None:
        fields["tokens_per_s"] = str(_number(m["v"] or m["w"]))
    if ((low is None or "step_time" in low or "iteration" in low or "s/it" in low or "it/s" in low)
            and (m := _STEP_TIME.search(message)) is not None):
        if m["s"] or m["spi"]:
            fields["step_time_s"] = m["s"] or m["spi"]
        elif m["ms"]:
            fields["step_time_s"] = str(round(float(m["ms"]) / 1000, 6))
        elif float(m["ips"]) > 0:
            fields["step_time_s"] = str(round(1 / float(m["ips"]), 6))
    return fields


def global_batch(message: str) -> int | None:
    """The global batch (samples per optimizer step, accumulation included) a line prints, or None."""
    m = _BATCH.search(message)
    return int(m["v"].replace(",", "")) if m is not None else None


_SIGNAL = re.compile(r"--signal[= ](?P<sig>(?:[BR]:)?\w+@\d+)")


def time_signal(message: str) -> str | None:
    """The ``--signal`` a batch script asks for before its time limit (``B:USR1@600``) as a line of the job's
    output prints it (``#SBATCH --signal=B:USR1@600``, an echoed sbatch line), or None."""
    m = _SIGNAL.search(message)
    return m["sig"] if m is not None else None
