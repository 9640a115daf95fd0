"""scontrol-job-text parser on real captures (tests/fixtures/scontrol-job-text/SOURCES.md)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from tools.errors import ParseError
from tools.models.slurm import SlurmClientError, SlurmJob
from tools.parsers import parse_artifact
from tools.sources.base import RawArtifact

FIXTURES = Path(__file__).parents[3] / "fixtures" / "scontrol-job-text"
GOOD = sorted(FIXTURES.glob("*.txt"))


def _parse(name: str, data: bytes | None = None) -> list[SlurmJob]:
    raw = (FIXTURES / name).read_bytes() if data is None else data
    return parse_artifact(RawArtifact(format="scontrol-job-text", data=raw, path=f"slurm/{name}"))  # type: ignore[return-value]


def _by_id(name: str) -> dict[str, SlurmJob]:
    return {j.job_id: j for j in _parse(name)}


@pytest.mark.parametrize("fixture", GOOD, ids=lambda p: p.name)
def test_every_fixture_gives_jobs_with_state_user_and_limit(fixture: Path) -> None:
    jobs = _parse(fixture.name)
    assert jobs and len({j.job_id for j in jobs}) == len(jobs)
    assert all(j.state and j.user and j.time_limit_s for j in jobs)


def test_2205_running_gpu_job_with_comment_and_times() -> None:
    job = _by_id("22.05-mixed.txt")["6"]
    assert (job.name, job.user, job.account, job.qos, job.partition) == ("train-llm", "root", "root", "normal", "gpu")
    assert job.state == "RUNNING" and job.reason is None and job.nodes == ["gpu01"] and job.batch_host == "gpu01"
    assert job.num_gpus == 2 and job.num_cpus == 1 and job.elapsed_s == 91 and job.time_limit_s == 1800
    assert job.start_time == datetime(2026, 11, 29, 15, 54, 1, tzinfo=timezone.utc)
    assert job.stdout_path == "/tmp/warden-fixtures.56Dq/work/slurm-6.out" and job.command is None


def test_2205_pending_reasons_get_their_blanks_back() -> None:
    jobs = _by_id("22.05-mixed.txt")
    assert jobs["16"].reason == "ReqNodeNotAvail, Reserved for maintenance"
    assert jobs["10"].reason == "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions"
    assert jobs["10"].num_gpus == 8 and jobs["10"].num_nodes == 2 and jobs["10"].start_time is None
    assert jobs["12"].reason == "Dependency"


def test_2205_array_ids_and_exit_codes() -> None:
    jobs = _by_id("22.05-mixed.txt")
    assert {"8_0", "8_1", "8_[2-3%2]"} <= set(jobs)
    assert jobs["8_0"].nodes == ["gpu02"] and jobs["8_0"].num_gpus == 1
    assert jobs["1"].state == "FAILED" and jobs["1"].exit_code == "3:0" and jobs["1"].reason == "NonZeroExitCode"
    assert jobs["3"].state == "TIMEOUT" and jobs["3"].exit_code == "0:15" and jobs["3"].elapsed_s == 83


def test_2205_hostile_name_stays_whole() -> None:
    assert _by_id("22.05-mixed.txt")["9"].name == 'x; rm -rf ~ $(id) "q" ünïcødé'


def test_2205_multinode_job() -> None:
    job = _by_id("22.05-multinode.txt")["17"]
    assert job.nodes == ["gpu02", "gpu03"] and job.req_nodes == ["gpu02", "gpu03"] and job.num_gpus == 8


def test_2205_completing_job_and_name_with_blanks() -> None:
    jobs = _by_id("22.05-completing.txt")
    assert jobs["1"].name == "my training run" and jobs["1"].num_gpus == 8 and jobs["1"].nodes == ["gpu01", "gpu02"]
    assert jobs["2"].state == "COMPLETING" and jobs["2"].nodes == ["gpu03"]
    assert jobs["4"].reason == "Priority" and jobs["3"].reason == "Resources"


def test_2405_hostile_text_is_data_and_comment_keys_are_not_fields() -> None:
    jobs = _by_id("24.05-hostile-and-maintenance.txt")
    job = jobs["4242"]
    assert job.name == 'train model $(rm -rf /) "v2"; echo pwned'
    assert job.command == '/users/alice/llm/train.sbatch --config "a b.yaml"'
    assert job.reason is None  # "Reason=fake" inside Comment= is not the job's reason
    assert job.exc_nodes == ["gpu003", "gpu009"] and job.nodes == ["gpu017", "gpu018"]
    assert job.num_gpus == 8 and job.time_limit_s == 86400 and job.elapsed_s == 7200 and job.user == "alice"
    pending = jobs["4250"]
    assert pending.reason == "ReqNodeNotAvail, Reserved for maintenance" and pending.time_limit_s == 10 * 86400
    assert pending.nodes == [] and pending.start_time is None and pending.user == "user1"


def test_line_cut_short_names_path_and_line() -> None:
    data = (FIXTURES / "22.05-mixed.txt").read_bytes()
    cut = data[: data.index(b"Requeue=1 Restarts=0") + len(b"Requeue=1 Rest")]
    with pytest.raises(ParseError) as err:
        _parse("cut.txt", data=cut)
    assert err.value.path == "slurm/cut.txt" and err.value.line == 5


def test_record_cut_before_jobstate_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="JobState") as err:
        _parse("cut.txt", data=b"JobId=5 JobName=a\n   UserId=root(0) GroupId=root(0)\n")
    assert err.value.line == 1


def test_text_outside_a_record_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        _parse("junk.txt", data=b"<html><body>502 Bad Gateway</body></html>\n")
    assert err.value.line == 1


def test_controller_error_output_is_recorded_not_rejected() -> None:
    # What scontrol prints when slurmctld is down is evidence (controller_unreachable), not junk.
    (rec,) = _parse("down.txt", data=b"slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n")
    assert isinstance(rec, SlurmClientError) and "Unable to contact" in rec.message


def test_empty_file_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        _parse("empty.txt", data=b"\n\n")
    assert err.value.path == "slurm/empty.txt"


def test_non_utf8_bytes_are_a_parse_error_with_line() -> None:
    data = (FIXTURES / "22.05-mixed.txt").read_bytes().replace(b"JobName=failer", b"JobName=f\xe4iler")
    with pytest.raises(ParseError) as err:
        _parse("latin.txt", data=data)
    assert err.value.line == 1
