"""sacct-json parser on real 22.05 captures and the 24.05 shape (tests/fixtures/sacct-json/SOURCES.md)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from tools.errors import ParseError
from tools.models.slurm import SacctRecord
from tools.parsers import parse_artifact
from tools.sources.base import RawArtifact

FIXTURES = Path(__file__).parents[3] / "fixtures" / "sacct-json"
GOOD = sorted(FIXTURES.glob("*.json"))


def _parse(name: str, data: bytes | None = None) -> list[SacctRecord]:
    raw = (FIXTURES / name).read_bytes() if data is None else data
    return parse_artifact(RawArtifact(format="sacct-json", data=raw, path=f"slurm/{name}"))  # type: ignore[return-value]


def _by_id(name: str) -> dict[str, SacctRecord]:
    return {r.job_id: r for r in _parse(name)}


@pytest.mark.parametrize("fixture", GOOD, ids=lambda p: p.name)
def test_every_fixture_lists_each_job_before_its_steps(fixture: Path) -> None:
    records = _parse(fixture.name)
    assert records and len({r.job_id for r in records}) == len(records)
    seen_jobs: set[str] = set()
    for record in records:
        if record.is_step:
            assert record.job_id.split(".")[0] in seen_jobs
        else:
            seen_jobs.add(record.job_id)
            assert record.state and record.time_limit_s


def test_2205_jobs_steps_states_and_signals() -> None:
    records = _by_id("22.05-mixed.json")
    assert [k for k in records if k.startswith("2")] == ["2", "2.batch", "2.0", "2.1"]
    assert records["2.0"].name == "hostname" and records["2.0"].state == "COMPLETED"
    assert records["3"].state == "TIMEOUT" and records["3"].elapsed_s == 83 and records["3"].time_limit_s == 60
    assert records["3.batch"].state == "CANCELLED" and records["3.batch"].exit_code == "0:15"
    assert records["3.batch"].max_rss_kib == 3152 and records["3"].max_rss_kib == 3152
    assert records["3"].end_time == datetime(2026, 11, 29, 15, 55, 6, tzinfo=timezone.utc)
    assert records["4"].state == "CANCELLED"
    assert records["1"].state == "FAILED" and records["1"].exit_code == "0:0"  # 22.05 JSON says SUCCESS here


def test_2205_arrays_pending_and_gpus() -> None:
    records = _by_id("22.05-mixed.json")
    assert records["8_0"].num_gpus == 1 and records["8_0.batch"].nodes == ["gpu02"]
    assert records["6"].num_gpus == 2 and records["6"].end_time is None and records["6"].state == "RUNNING"
    assert records["16"].state == "PENDING" and records["16"].nodes == [] and records["16"].start_time is None
    assert records["9"].name == "x; rm -rf ~ $(id) `q` ünïcødé"  # sacct stores " as `


def test_2205_multinode_job_and_step() -> None:
    records = _by_id("22.05-multinode.json")
    assert records["17"].nodes == ["gpu02", "gpu03"] and records["17"].num_nodes == 2 and records["17"].num_gpus == 8
    assert records["17.0"].nodes == ["gpu02", "gpu03"] and records["17.0"].num_gpus == 8
    assert records["17.batch"].nodes == ["gpu02"] and records["17.batch"].num_gpus == 4


def test_2405_node_fail_oom_and_array_task() -> None:
    records = _by_id("24.05-nodefail-oom.json")
    job = records["4242"]
    assert job.state == "NODE_FAIL" and job.user == "alice" and job.account == "ml" and job.partition == "gpu"
    assert job.elapsed_s == 7200 and job.time_limit_s == 86400 and job.num_gpus == 8
    assert job.nodes == ["gpu017", "gpu018"] and job.exit_code == "0:9"
    assert job.start_time == datetime(2026, 3, 4, 9, 55, tzinfo=timezone.utc)
    assert records["4242.batch"].exit_code == "0:9" and records["4242.batch"].num_gpus == 4
    assert records["4242.0"].state == "NODE_FAIL" and records["4242.0"].exit_code == "1:0"
    assert records["4242.0"].max_rss_kib == 61203283968 // 1024 and job.max_rss_kib == records["4242.0"].max_rss_kib
    assert records["4260_1"].state == "OUT_OF_MEMORY" and records["4260_1.batch"].max_rss_kib == 131072000
    assert records["4260_1.extern"].state == "COMPLETED"
    assert records["4250"].state == "PENDING" and records["4250"].nodes == [] and records["4250"].num_gpus is None


def test_truncated_json_names_path_and_line() -> None:
    data = (FIXTURES / "24.05-nodefail-oom.json").read_bytes()
    with pytest.raises(ParseError) as err:
        _parse("cut.json", data=data[:4000])
    assert err.value.path == "slurm/cut.json" and err.value.line is not None and err.value.line > 1


def test_step_without_id_names_the_job_index() -> None:
    with pytest.raises(ParseError, match=r"jobs\[0\]"):
        _parse("bad.json", data=b'{"jobs": [{"job_id": 5, "steps": [{"step": {"name": "batch"}}]}]}')


def test_empty_file_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        _parse("empty.json", data=b"  ")
    assert err.value.path == "slurm/empty.json"


def test_non_utf8_bytes_are_a_parse_error() -> None:
    data = (FIXTURES / "22.05-mixed.json").read_bytes().replace(b'"failer"', b'"f\xe4iler"', 1)
    with pytest.raises(ParseError) as err:
        _parse("latin.json", data=data)
    assert err.value.path == "slurm/latin.json"
