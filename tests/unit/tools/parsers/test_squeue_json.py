"""squeue-json parser on real 22.05 captures and the 24.05 shape (tests/fixtures/squeue-json/SOURCES.md)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from tools.errors import ParseError
from tools.models.slurm import SlurmJob
from tools.parsers import parse_artifact
from tools.sources.base import RawArtifact

FIXTURES = Path(__file__).parents[3] / "fixtures" / "squeue-json"
GOOD = sorted(FIXTURES.glob("*.json"))


def _parse(name: str, data: bytes | None = None) -> list[SlurmJob]:
    raw = (FIXTURES / name).read_bytes() if data is None else data
    return parse_artifact(RawArtifact(format="squeue-json", data=raw, path=f"slurm/{name}"))  # type: ignore[return-value]


def _by_id(name: str) -> dict[str, SlurmJob]:
    return {j.job_id: j for j in _parse(name)}


@pytest.mark.parametrize("fixture", GOOD, ids=lambda p: p.name)
def test_every_fixture_parses_with_aware_times_and_second_limits(fixture: Path) -> None:
    jobs = _parse(fixture.name)
    assert jobs and all(isinstance(j, SlurmJob) for j in jobs)
    for job in jobs:
        assert job.state and job.state.isupper()
        assert job.time_limit_s is None or job.time_limit_s % 60 == 0
        for when in (job.submit_time, job.start_time, job.end_time):
            assert when is None or when.tzinfo is not None


def test_2205_running_gpu_job_and_array_tasks() -> None:
    jobs = _by_id("22.05-mixed.json")
    train = jobs["6"]
    assert (train.name, train.user, train.account, train.partition, train.qos) == ("train-llm", "root", "root", "gpu", "normal")
    assert train.state == "RUNNING" and train.nodes == ["gpu01"] and train.num_gpus == 2
    assert train.time_limit_s == 30 * 60
    assert train.start_time == datetime.fromtimestamp(1795967641, tz=timezone.utc)
    assert train.work_dir == "/tmp/warden-fixtures.56Dq/work" and train.batch_host == "gpu01"
    assert jobs["8_0"].num_gpus == 1 and jobs["8_1"].nodes == ["gpu03"]
    assert jobs["8_[2-3%2]"].state == "PENDING" and jobs["8_[2-3%2]"].reason == "JobArrayTaskLimit"


def test_2205_reason_prefers_state_description_as_squeue_prints_it() -> None:
    jobs = _by_id("22.05-mixed.json")
    assert jobs["16"].reason == "ReqNodeNotAvail, Reserved for maintenance"  # state_reason says Reservation
    assert jobs["10"].reason.startswith("Nodes required for job are DOWN, DRAINED")
    assert jobs["10"].num_gpus == 8  # pending: from tres_req_str
    assert jobs["6"].reason is None


def test_2205_exit_codes_decode_wait_status() -> None:
    jobs = _by_id("22.05-mixed.json")
    assert jobs["1"].state == "FAILED" and jobs["1"].exit_code == "3:0"
    assert jobs["3"].state == "TIMEOUT" and jobs["3"].exit_code == "0:15" and jobs["3"].elapsed_s == 83
    assert jobs["2"].exit_code == "0:0" and jobs["2"].elapsed_s == 3


def test_2205_hostile_name_is_plain_data() -> None:
    assert _by_id("22.05-mixed.json")["9"].name == 'x; rm -rf ~ $(id) "q" ünïcødé'


def test_2205_multinode_job() -> None:
    job = _by_id("22.05-multinode.json")["17"]
    assert job.nodes == ["gpu02", "gpu03"] and job.num_nodes == 2 and job.num_gpus == 8
    assert job.name == "allreduce-bench" and job.time_limit_s == 45 * 60


def test_2205_completing_job_and_gpus_from_gres_detail() -> None:
    jobs = _by_id("22.05-completing.json")
    assert jobs["2"].state == "COMPLETING" and jobs["2"].nodes == ["gpu03"]
    assert jobs["1"].name == "my training run" and jobs["1"].num_gpus == 8  # gres_detail gpu:4 x 2 nodes
    assert jobs["3"].reason == "Resources" and jobs["3"].num_gpus == 12 and jobs["4"].reason == "Priority"


def test_2405_wrapped_numbers_state_lists_and_arrays() -> None:
    jobs = _by_id("24.05-gpu-mixed.json")
    big = jobs["4242"]
    assert big.state == "RUNNING" and big.nodes == ["gpu017", "gpu018"] and big.num_nodes == 2
    assert big.num_gpus == 8 and big.num_cpus == 128 and big.priority == 11782
    assert big.time_limit_s == 1440 * 60
    assert big.submit_time == datetime(2026, 3, 4, 9, 40, tzinfo=timezone.utc)
    assert big.stdout_path == "/users/alice/logs/4242.out" and big.batch_host == "gpu017"
    pending = jobs["4250"]
    assert pending.state == "PENDING" and pending.reason == "ReqNodeNotAvail, Reserved for maintenance"
    assert pending.start_time is None and pending.nodes == []
    assert jobs["4260_1"].name == 'sweep "lr=3e-4"; $(reboot)' and jobs["4260_1"].num_gpus == 1
    assert jobs["4260_[2-7%4]"].reason == "JobArrayTaskLimit"
    assert jobs["4198"].state == "FAILED" and jobs["4198"].exit_code == "1:0" and jobs["4198"].elapsed_s == 3600
    assert jobs["4230"].state == "COMPLETING" and jobs["4230"].nodes == ["cpu101", "cpu102", "cpu103", "cpu104"]


def test_truncated_json_names_path_and_line() -> None:
    data = (FIXTURES / "22.05-mixed.json").read_bytes()
    with pytest.raises(ParseError) as err:
        _parse("cut.json", data=data[: len(data) // 2])
    assert err.value.path == "slurm/cut.json" and err.value.line is not None and err.value.line > 1


def test_document_without_jobs_reports_slurm_errors() -> None:
    data = b'{"meta": {}, "errors": [{"description": "Unable to contact slurm controller", "error_number": 1007}]}'
    with pytest.raises(ParseError, match="Unable to contact slurm controller"):
        _parse("down.json", data=data)


def test_record_without_job_id_names_its_index() -> None:
    with pytest.raises(ParseError, match=r"jobs\[1\]"):
        _parse("bad.json", data=b'{"jobs": [{"job_id": 1, "job_state": "RUNNING"}, {"name": "x"}]}')


def test_empty_file_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        _parse("empty.json", data=b"")
    assert err.value.path == "slurm/empty.json"


def test_non_utf8_bytes_are_a_parse_error() -> None:
    data = (FIXTURES / "22.05-mixed.json").read_bytes().replace(b"train-llm", b"train-\xe9llm", 1)
    with pytest.raises(ParseError) as err:
        _parse("latin.json", data=data)
    assert err.value.path == "slurm/latin.json" and err.value.line is not None
