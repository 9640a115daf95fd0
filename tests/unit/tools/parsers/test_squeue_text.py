"""squeue-text parser on real captures (tests/fixtures/squeue-text/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.errors import ParseError
from tools.models.slurm import SlurmJob
from tools.parsers import parse_artifact
from tools.sources.base import RawArtifact

FIXTURES = Path(__file__).parents[3] / "fixtures" / "squeue-text"
COLUMNS = {"22.05-noheader.txt": "%i %P %j %u %T %M %l %D %C %R"}
GOOD = sorted(FIXTURES.glob("*.txt"))
STATES = {"PENDING", "RUNNING", "COMPLETING", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT"}


def _parse(name: str, data: bytes | None = None, columns: str | None = None) -> list[SlurmJob]:
    raw = (FIXTURES / name).read_bytes() if data is None else data
    art = RawArtifact(format="squeue-text", data=raw, path=f"slurm/{name}", columns=columns or COLUMNS.get(name))
    return parse_artifact(art)  # type: ignore[return-value]


def _by_id(name: str) -> dict[str, SlurmJob]:
    return {j.job_id: j for j in _parse(name)}


@pytest.mark.parametrize("fixture", GOOD, ids=lambda p: p.name)
def test_every_fixture_parses_to_jobs_with_states(fixture: Path) -> None:
    jobs = _parse(fixture.name)
    assert jobs and all(isinstance(j, SlurmJob) for j in jobs)
    assert all(j.state in STATES for j in jobs)
    assert all(j.nodes for j in jobs if j.state == "RUNNING")
    assert all(not j.nodes and j.reason for j in jobs if j.state == "PENDING")


def test_default_layout_reads_pending_reasons_and_truncated_names() -> None:
    jobs = _by_id("22.05-default.txt")
    assert list(jobs)[:2] == ["8_[2-3%2]", "10"]
    assert jobs["16"].state == "PENDING"
    assert jobs["16"].reason == "ReqNodeNotAvail, Reserved for maintenance"
    assert jobs["10"].reason == "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions"
    assert jobs["11"].reason == "PartitionNodeLimit" and jobs["11"].num_nodes == 6
    assert jobs["15"].reason == "JobHeldUser"
    assert jobs["8_[2-3%2]"].reason == "JobArrayTaskLimit"
    assert jobs["6"].name == "train-ll"  # squeue's %.8j
    assert jobs["6"].nodes == ["gpu01"] and jobs["6"].elapsed_s == 91 and jobs["6"].reason is None
    assert jobs["9"].name == "x; rm -r"  # blanks inside the 8-character name
    assert jobs["8_1"].nodes == ["gpu03"] and jobs["8_1"].user == "root" and jobs["8_1"].partition == "gpu"


def test_o_layout_keeps_whole_names_with_blanks_and_shell_characters() -> None:
    jobs = _by_id("22.05-o-long.txt")
    assert jobs["9"].name == 'x; rm -rf ~ $(id) "q" ünïcødé'
    assert jobs["9"].state == "RUNNING" and jobs["9"].nodes == ["gpu03"] and jobs["9"].user == "root"
    assert jobs["12"].name == "after-train" and jobs["12"].reason == "Dependency"
    assert jobs["16"].name == "denovo_long"


def test_pipe_layout_reads_limits_gpus_and_reason_column() -> None:
    jobs = _by_id("22.05-o-pipe.txt")
    assert jobs["6"].num_gpus == 2 and jobs["6"].time_limit_s == 1800 and jobs["6"].reason is None
    assert jobs["10"].num_gpus == 8  # gres:gpu:4 per node x 2 nodes
    assert jobs["10"].num_cpus == 4
    assert jobs["16"].time_limit_s == 2 * 86400
    assert jobs["16"].reason == "ReqNodeNotAvail, Reserved for maintenance"
    assert jobs["7"].num_gpus is None
    assert jobs["9"].name == 'x; rm -rf ~ $(id) "q" ünïcødé'


def test_long_layout_skips_date_and_reads_cut_state_and_header() -> None:
    jobs = _by_id("22.05-l-completing.txt")
    assert jobs["2"].state == "COMPLETING"  # printed as COMPLETI
    assert jobs["2"].nodes == ["gpu03"] and jobs["2"].time_limit_s == 300  # TIME_LIMI column
    assert jobs["3"].reason == "Resources" and jobs["4"].reason == "Priority"
    assert jobs["1"].time_limit_s == 3600 and jobs["1"].nodes == ["gpu01", "gpu02"]


def test_format_long_layout_with_name_and_tres_columns() -> None:
    jobs = _by_id("22.05-O-tres-alloc.txt")
    assert jobs["1"].name == "my training run" and jobs["1"].state == "RUNNING"
    assert jobs["1"].num_gpus is None  # this cluster's AllocTRES did not track gres/gpu
    assert jobs["3"].reason == "Resources" and jobs["2"].state == "COMPLETING" and jobs["2"].nodes == ["gpu03"]
    assert _by_id("22.05-completing.txt")["2"].state == "COMPLETING"  # CG


def test_multinode_job_nodes_are_expanded() -> None:
    jobs = _by_id("22.05-multinode.txt")
    assert jobs["17"].nodes == ["gpu02", "gpu03"] and jobs["17"].num_nodes == 2
    assert jobs["17"].name == "allreduc"


def test_noheader_layout_named_by_columns() -> None:
    jobs = _by_id("22.05-noheader.txt")
    assert jobs["17"].name == "allreduce-bench" and jobs["17"].time_limit_s == 2700
    assert jobs["17"].num_cpus == 2 and jobs["6"].elapsed_s == 152


def test_noheader_without_columns_assumes_default_layout() -> None:
    lines = (FIXTURES / "22.05-default.txt").read_bytes().splitlines(keepends=True)
    headerless = _parse("default-h.txt", data=b"".join(lines[1:]))
    with_header = _parse("22.05-default.txt")
    assert [j.model_dump() for j in headerless] == [j.model_dump() for j in with_header]


def test_public_report_maintenance_row() -> None:
    (job,) = _parse("unknown-hyak-reqnodenotavail.txt")
    assert (job.job_id, job.partition, job.name, job.user) == ("3937176", "lab1", "denovo_s", "user1")
    assert job.state == "PENDING" and job.elapsed_s == 0 and job.num_nodes == 1
    assert job.reason == "ReqNodeNotAvail, Reserved for maintenance"


def test_row_cut_short_names_path_and_line() -> None:
    data = (FIXTURES / "22.05-default.txt").read_bytes().rstrip(b"\n")
    with pytest.raises(ParseError) as err:
        _parse("cut.txt", data=data[: data.rindex(b"root")])
    assert err.value.path == "slurm/cut.txt" and err.value.line == 12


def test_pipe_inside_a_name_is_a_parse_error_not_a_shifted_row() -> None:
    data = b"JOBID|NAME|STATE|NODELIST\n5|a|b|RUNNING|gpu01\n"
    with pytest.raises(ParseError) as err:
        _parse("pipe.txt", data=data)
    assert err.value.line == 2


def test_empty_file_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        _parse("empty.txt", data=b" \n\n")
    assert err.value.path == "slurm/empty.txt"


def test_non_utf8_bytes_are_a_parse_error_with_line() -> None:
    lines = (FIXTURES / "22.05-default.txt").read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b"bigjob", b"big\xffjob")
    with pytest.raises(ParseError) as err:
        _parse("latin.txt", data=b"".join(lines))
    assert err.value.path == "slurm/latin.txt" and err.value.line == 3
