"""Training rates and the global batch read from real trainers' progress lines (tools.parsers.joblog.rates)."""

from __future__ import annotations

import pytest

from tools.parsers.joblog.job_log import parse_job_log
from tools.parsers.joblog.rates import global_batch, rate_fields


@pytest.mark.parametrize(("line", "fields"), [
    ("{'loss': 1.0317, 'grad_norm': 0.46, 'learning_rate': 1.93e-05, 'epoch': 0.9, 'train_samples_per_second': 401.3}",
     {"samples_per_s": "401.3"}),
    (" iteration     1200/  50000 | consumed samples: 1228800 | elapsed time per iteration (ms): 5103.2 | "
     "global batch size:  2048 | lm loss: 2.104E+00 | tokens per second: 821,934 |",
     {"step_time_s": "5.1032", "tokens_per_s": "821934.0"}),
    ("Epoch 3:  40%|####      | 400/1000 [17:00<25:30, 2.41s/it, loss=1.02]", {"step_time_s": "2.41"}),
    ("Epoch 0:   3%|3         | 30/1000 [00:21<11:38,  1.39it/s, loss=4.1]", {"step_time_s": "0.719424"}),
    ("step 100 | loss 2.1 | 12,345 tok/s | 401.3 samples/s", {"samples_per_s": "401.3", "tokens_per_s": "12345.0"}),
    ("step 100 | loss 2.1 | lr 3e-4", {}),
])
def test_rates_of_each_trainers_shape(line: str, fields: dict[str, str]) -> None:
    assert rate_fields(line) == fields


@pytest.mark.parametrize(("line", "batch"), [
    ("[INFO|trainer.py:2375] 2026-12-01 10:04:40,220 >>   Total train batch size (w. parallel, distributed & accumulation) = 2,048", 2048),
    ('[2026-03-04 06:00:12,001] [INFO] [config.py:988:print]   "train_batch_size": 1024,', 1024),
    ("  global_batch_size ............................... 512", None),  # Megatron's argument dump pads with dots
    ("batch size per device = 8", None),
])
def test_global_batch_lines(line: str, batch: int | None) -> None:
    assert global_batch(line) == batch


def test_the_summary_keeps_the_last_global_batch_and_the_progress_event_its_rates() -> None:
    text = ("[INFO|trainer.py:2375] 2026-12-01 10:04:40,220 >>   Total train batch size (w. parallel, distributed & accumulation) = 2,048\n"
            "{'loss': 1.0371, 'epoch': 0.81, 'train_samples_per_second': 401.3, 'step_time_s': 5.10}\n")
    *events, summary = parse_job_log(text, path="logs/90088/err", job="90088")
    assert summary.global_batch == 2048
    (progress,) = events
    assert (progress.kind, progress.samples_per_s, progress.step_time_s, progress.loss) == ("progress", 401.3, 5.1, "1.0371")


@pytest.mark.parametrize(("line", "signal"), [
    ("#SBATCH --signal=B:USR1@600", "B:USR1@600"),
    ("[2026-01-19 06:41:52] segment start | #SBATCH --time=1-00:00:00 --signal=USR1@300 --dependency=singleton", "USR1@300"),
    ("sbatch --signal R:TERM@120 train.sh", "R:TERM@120"),
    ("#SBATCH --time=1-00:00:00", None),
])
def test_the_time_limit_signal_a_batch_script_asks_for(line: str, signal: str | None) -> None:
    from tools.parsers.joblog.rates import time_signal
    assert time_signal(line) == signal
    *_, summary = parse_job_log(line + "\n", path="a.log", job="1")
    assert summary.time_signal == signal


def _ungated(message: str) -> dict[str, str]:
    """rate_fields without its word gates: every pattern searched on every line."""
    from tools.parsers.joblog import rates
    fields: dict[str, str] = {}
    if (m := rates._SAMPLES.search(message)) is not None:
        fields["samples_per_s"] = str(rates._number(m["v"] or m["w"]))
    if (m := rates._TOKENS.search(message)) is not None:
        fields["tokens_per_s"] = str(rates._number(m["v"] or m["w"]))
    if (m := rates._STEP_TIME.search(message)) is not None:
        if m["s"] or m["spi"]:
            fields["step_time_s"] = m["s"] or m["spi"]
        elif m["ms"]:
            fields["step_time_s"] = str(round(float(m["ms"]) / 1000, 6))
        elif float(m["ips"]) > 0:
            fields["step_time_s"] = str(round(1 / float(m["ips"]), 6))
    return fields


def test_the_word_gates_change_no_rate_on_any_recorded_job_log_line() -> None:
    from tests.unit.tools.parsers._corpus import files_of
    odd = ["STEP_TIME: 2.0", "Elapsed Time Per Iteration (ms): 10", "1.5 S/IT", "3 IT/S", "12 TOKENS/SEC", "5 SAMPLES/S",
           "4 \u017famples/s", "9 \u212a tok/s", "2 tok/s \u00e9", "samples: 4", "tokens per second: 7", "0 it/s"]
    lines = [line for _, text in files_of("job-log") for line in text.splitlines()] + odd
    assert len(lines) > 1000
    for line in lines:
        assert rate_fields(line) == _ungated(line), line
