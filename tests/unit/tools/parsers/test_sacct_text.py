"""sacct-text parser on real captures (tests/fixtures/sacct-text/SOURCES.md)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from tools.errors import ParseError
from tools.models.slurm import SacctRecord
from tools.parsers import parse_artifact
from tools.sources.base import RawArtifact

FIXTURES = Path(__file__).parents[3] / "fixtures" / "sacct-text"
GOOD = sorted(p for p in FIXTURES.glob("*.txt") if "split-utf8" not in p.name)


def _parse(name: str, data: bytes | None = None, columns: str | None = None) -> list[SacctRecord]:
    raw = (FIXTURES / name).read_bytes() if data is None else data
    return parse_artifact(RawArtifact(format="sacct-text", data=raw, path=f"slurm/{name}", columns=columns))  # type: ignore[return-value]


def _by_id(name: str) -> dict[str, SacctRecord]:
    return {r.job_id: r for r in _parse(name)}


@pytest.mark.parametrize("fixture", GOOD, ids=lambda p: p.name)
def test_every_fixture_gives_records_with_states_and_exit_codes(fixture: Path) -> None:
    records = _parse(fixture.name)
    assert records and all(r.state and r.exit_code and ":" in r.exit_code for r in records)
    assert all(not r.job_id.endswith("+") for r in records)


@pytest.mark.parametrize("name", ["22.05-default.txt", "22.05-p.txt"])
def test_default_and_p_layouts_agree_on_ids_states_and_codes(name: str) -> None:
    records = _by_id(name)
    assert list(records)[:6] == ["1", "1.batch", "2", "2.batch", "2.0", "2.1"]
    assert records["1"].state == "FAILED" and records["1"].exit_code == "3:0" and records["1"].partition == "gpu"
    assert records["1.batch"].partition is None and records["1.batch"].account == "root"
    assert records["3.batch"].state == "CANCELLED" and records["3.batch"].exit_code == "0:15"
    assert records["4"].state == "CANCELLED"  # "CANCELLED+" / "CANCELLED by 0"
    # Who cancelled it survives only where sacct printed it whole (-p); the default layout truncates it.
    assert records["4"].cancelled_by == ("0" if name.endswith("-p.txt") else None)
    assert records["8_1.batch"].state == "RUNNING"


def test_default_layout_keeps_truncated_names_as_printed() -> None:
    records = _by_id("22.05-default.txt")
    assert records["4"].name == "tobecance+" and records["9"].name == "x; rm -rf+"


def test_parsable_names_are_whole_and_inert() -> None:
    assert _by_id("22.05-p.txt")["9"].name == "x; rm -rf ~ $(id) `q` ünïcødé"


def test_parsable2_long_layout_reads_times_nodes_tres_and_maxrss() -> None:
    records = _by_id("22.05-parsable2-long.txt")
    timeout = records["3"]
    assert timeout.state == "TIMEOUT" and timeout.elapsed_s == 83 and timeout.time_limit_s == 60
    assert timeout.submit_time == datetime(2026, 11, 29, 15, 53, 42, tzinfo=timezone.utc)
    assert timeout.nodes == ["gpu02"] and timeout.num_nodes == 1 and timeout.user == "root"
    assert records["3.batch"].max_rss_kib == 3152
    assert records["6"].num_gpus == 2 and records["6"].end_time is None
    assert records["10"].nodes == [] and records["10"].num_nodes == 2 and records["10"].start_time is None
    assert records["16"].time_limit_s == 2 * 86400


def test_fixed_width_rows_are_cut_by_bytes_not_characters() -> None:
    records = _by_id("22.05-default-wide.txt")
    assert records["9"].name == "x; rm -rf ~ $(id) `q` ünïcødé" and records["9"].state == "CANCELLED"
    assert records["9"].nodes == ["gpu03"] and records["9"].exit_code == "0:0"
    assert records["17"].nodes == ["gpu02", "gpu03"] and records["17"].num_gpus == 8
    assert records["10"].num_gpus is None and records["10"].nodes == []


def test_public_report_truncated_step_ids_are_restored() -> None:
    records = _by_id("unknown-maestrowf-step-truncated.txt")
    assert list(records) == ["6564055", "6564055.batch", "6564055.0", "6564056", "6564056.batch"]
    assert records["6564055"].name == "hello_wor+" and records["6564055"].partition == "pdebug"
    assert records["6564055.batch"].account == "wbronze" and records["6564055.batch"].partition is None


def test_headerless_parsable_output_named_by_columns() -> None:
    data = b"4242|llm|NODE_FAIL|0:9|02:00:00|gpu[017-018]\n4242.0|python|NODE_FAIL|1:0|01:59:50|gpu[017-018]\n"
    job, step = _parse("n.txt", data=data, columns="JobID,JobName%30,State,ExitCode,Elapsed,NodeList")
    assert job.state == "NODE_FAIL" and job.elapsed_s == 7200 and job.nodes == ["gpu017", "gpu018"]
    assert step.is_step and step.exit_code == "1:0"


def test_real_output_cut_inside_a_character_is_rejected_with_its_line() -> None:
    with pytest.raises(ParseError) as err:
        _parse("22.05-split-utf8.txt")
    assert err.value.path == "slurm/22.05-split-utf8.txt" and err.value.line == 10


def test_parsable_row_with_too_few_cells_names_path_and_line() -> None:
    data = (FIXTURES / "22.05-p.txt").read_bytes().rstrip(b"\n")
    with pytest.raises(ParseError) as err:
        _parse("cut.txt", data=data[: data.rindex(b"|PENDING")])
    assert err.value.path == "slurm/cut.txt" and err.value.line == 26


def test_fixed_width_row_cut_short_names_line() -> None:
    data = (FIXTURES / "22.05-default.txt").read_bytes().rstrip(b"\n")
    with pytest.raises(ParseError) as err:
        _parse("cut.txt", data=data[: data.rindex(b"denovo_lo+") + 4])
    assert err.value.line == 27


def test_headerless_without_columns_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        _parse("n.txt", data=b"4242|llm|FAILED|1:0\n")
    assert err.value.line == 1


def test_empty_file_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        _parse("empty.txt", data=b"\n")
    assert err.value.path == "slurm/empty.txt"
