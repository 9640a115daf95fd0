"""checkpoint_saved events: the path and step of each save, newest kept, failures not counted as saves."""

from __future__ import annotations

from tools.models.logs import JobLogEventBase as JobLogEvent
from tools.parsers.joblog.job_log import MAX_CHECKPOINTS_KEPT, parse_job_log


def saved(text: str) -> list[JobLogEvent]:
    return [e for e in parse_job_log(text, path="logs/1/out", job="1")
            if isinstance(e, JobLogEvent) and e.kind == "checkpoint_saved"]


def test_common_save_lines():
    text = "\n".join([
        "2026-11-28 15:04:16,742 | INFO | ckpt | saved checkpoint to /lustre/a/ckpt/step_002000 (38.2 GiB, 39.8 s)",
        # PyTorch Lightning ModelCheckpoint(verbose=True)
        "Epoch 49, global step 62500: 'val_loss' reached 0.12 (best 0.12), saving model to "
        "'/proj/x/epoch=49-step=62500.ckpt' as top 1",
        # Hugging Face Trainer
        "Saving model checkpoint to /scratch/out/checkpoint-500",
        # key=value style
        "[2026-11-29T17:10:24] saved checkpoint step=4 path=/w/ckpt/step_000004",
    ]) + "\n"
    got = [(e.path, getattr(e, "step", None), e.line) for e in saved(text)]
    assert got == [("/lustre/a/ckpt/step_002000", 2000, 1), ("/proj/x/epoch=49-step=62500.ckpt", 62500, 2),
                   ("/scratch/out/checkpoint-500", 500, 3), ("/w/ckpt/step_000004", 4, 4)]


def test_a_failed_save_is_not_a_save():
    assert saved("ERROR: failed to save checkpoint to /x/step_1\n") == []


def test_only_the_newest_saves_are_kept():
    text = "".join(f"saved checkpoint to /c/step_{i:06d}\n" for i in range(MAX_CHECKPOINTS_KEPT + 30))
    events = saved(text)
    assert len(events) == MAX_CHECKPOINTS_KEPT
    assert events[-1].step == MAX_CHECKPOINTS_KEPT + 29


def test_megatron_save_line_gives_iteration_and_directory():
    (e,) = saved("successfully saved checkpoint from iteration   42000 to /scratch/h/gpt30b/ckpt [ t 1/8, p 1/1 ]\n")
    assert (e.path, e.step) == ("/scratch/h/gpt30b/ckpt", 42000)


def test_controller_errors_in_a_transcript_are_slurm_messages():
    text = ("slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"
            "Slurmctld(primary) at ctl1 is DOWN\n"
            "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)\n")
    events = [e for e in parse_job_log(text, path="t", job=None) if isinstance(e, JobLogEvent)]
    assert [getattr(e, "what", None) for e in events] == ["controller_unreachable", "controller_ping", "controller_unreachable"]
    assert events[1].controller == "ctl1" and events[1].state == "DOWN"


def test_traceback_behind_a_logging_prefix_and_missing_driver():
    # uvicorn prints "ERROR:    Traceback ..."; PyTorch's message when a container has no driver.
    text = ("ERROR:    Traceback (most recent call last):\n"
            '  File "/app/main.py", line 3, in <module>\n'
            "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU\n")
    events = [e for e in parse_job_log(text, path="p") if isinstance(e, JobLogEvent)]
    assert [(e.kind, e.line) for e in events] == [("traceback", 1), ("cuda_error", 3)]
    assert events[1].error == "Found no NVIDIA driver on your system"


def test_a_load_failure_names_the_checkpoint_the_resume_said_it_loads():
    text = ("Resuming training from checkpoint /ckpt/run7/checkpoint-4000\n"
            "Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
            "RuntimeError: Error(s) in loading state_dict for LlamaForCausalLM: unexpected EOF, expected 221 more bytes\n")
    fails = [e for e in parse_job_log(text, path="logs/1/out", job="1")
             if getattr(e, "kind", None) == "checkpoint_load_failure"]
    assert fails and all(getattr(e, "path", None) == "/ckpt/run7/checkpoint-4000" for e in fails)
    # with no resume line, the failure names nothing (the newest save is then the suspect)
    bare = [e for e in parse_job_log(text.split("\n", 1)[1], path="logs/1/out", job="1")
            if getattr(e, "kind", None) == "checkpoint_load_failure"]
    assert bare and all(getattr(e, "path", None) is None for e in bare)


def test_a_load_failure_on_a_file_inside_a_checkpoint_rules_out_that_checkpoint():
    from datetime import datetime, timezone

    from tools.facts import build_facts
    from tools.facts.queries import newest_checkpoint
    from tools.sources.base import RawArtifact
    text = ("saved checkpoint to /ck/step_000004\nsaved checkpoint to /ck/step_000005\n"
            "loading checkpoint /ck/step_000005/model.pt\n"
            "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory\n")
    now = datetime(2026, 3, 4, tzinfo=timezone.utc)
    facts = build_facts([RawArtifact(format="job-log", data=text.encode(), path="logs/7/out", job="7", captured_at=now)],
                        captured_at=now)
    bad = {getattr(e, "path", None) for e in facts.job_log_events if e.kind == "checkpoint_load_failure"}
    assert bad == {"/ck/step_000005/model.pt"}
    assert newest_checkpoint(facts, "7", bad=bad) == "/ck/step_000004"


RESUME = ("[2026-12-01 08:02:31,004] [INFO] [torch_checkpoint_engine.py:27:load] [Torch] Loading checkpoint from "
          "/lustre/lm/vk/cpt/checkpoint-9000/global_step9000/mp_rank_00_model_states.pt...\n")


def test_a_shard_missing_from_the_checkpoint_being_loaded_is_a_load_failure_naming_it():
    # DeepSpeed's ZeRO loader: the save was cut short, one rank's optimizer shard never written.
    text = RESUME + ("[rank4]: FileNotFoundError: [Errno 2] No such file or directory: "
                     "'/lustre/lm/vk/cpt/checkpoint-9000/global_step9000/bf16_zero_pp_rank_3_mp_rank_00_optim_states.pt'\n")
    (fail,) = [e for e in parse_job_log(text, path="x.log", job="7") if getattr(e, "kind", None) == "checkpoint_load_failure"]
    assert fail.path.endswith("bf16_zero_pp_rank_3_mp_rank_00_optim_states.pt") and fail.rank == 4
    # A data file missing after a resume is not the checkpoint's.
    other = RESUME + "FileNotFoundError: [Errno 2] No such file or directory: '/data/shards/train-00417.arrow'\n"
    assert not [e for e in parse_job_log(other, path="x.log", job="7") if getattr(e, "kind", None) == "checkpoint_load_failure"]


def test_a_save_naming_only_its_checkpoint_path_and_a_resume_from_a_bare_path() -> None:
    from tools.parsers.joblog.job_log import parse_job_log
    text = ("[2026-01-20 06:30:11] trap USR1: time limit in 600 s, saving\n"
            "[2026-01-20 06:33:47] saved /lustre/lm/u/run7/ckpt/step_52000 in 216.2 s (64/64 shards)\n"
            "[2026-01-20 06:34:00] saved /home/u/plots/loss.png\n")  # not a checkpoint path
    *events, summary = parse_job_log(text, path="a.log", job="1")
    saves = [e for e in events if e.kind == "checkpoint_saved"]
    assert [(e.path, e.save_s) for e in saves] == [("/lustre/lm/u/run7/ckpt/step_52000", 216.2)]
    *_, resumed = parse_job_log("[2026-01-20 06:45:02] resuming from /lustre/lm/u/run7/ckpt/step_52000 (verified)\n",
                                path="b.log", job="2")
    assert resumed.resumed
    *_, fine_tune = parse_job_log("Loading weights from /models/base-7b/model.safetensors\n", path="c.log", job="3")
    assert not fine_tune.resumed  # loading base weights is not a resume of the run
