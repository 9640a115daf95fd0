"""sdiag-text parser on real captures (tests/fixtures/sdiag-text/SOURCES.md)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from tools.errors import ParseError
from tools.models.slurm import SdiagStats
from tools.parsers import parse_artifact
from tools.sources.base import RawArtifact

FIXTURES = Path(__file__).parents[3] / "fixtures" / "sdiag-text"
GOOD = sorted(FIXTURES.glob("*.txt"))


def _parse(name: str, data: bytes | None = None) -> SdiagStats:
    raw = (FIXTURES / name).read_bytes() if data is None else data
    (stats,) = parse_artifact(RawArtifact(format="sdiag-text", data=raw, path=f"slurm/{name}"))
    assert isinstance(stats, SdiagStats)
    return stats


@pytest.mark.parametrize("fixture", GOOD, ids=lambda p: p.name)
def test_every_fixture_has_counters_cycles_and_rpcs(fixture: Path) -> None:
    stats = _parse(fixture.name)
    assert stats.captured_at and stats.data_since and stats.captured_at > stats.data_since
    assert stats.server_thread_count and stats.jobs_submitted and stats.main_mean_cycle_us
    assert stats.bf_total_cycles and stats.rpcs_by_type and stats.rpcs_by_user
    assert sum(r.count for r in stats.rpcs_by_user) >= max(r.count for r in stats.rpcs_by_type)


def test_2205_real_capture_values() -> None:
    stats = _parse("22.05-busy.txt")
    assert stats.captured_at == datetime.fromtimestamp(1795967732, tz=timezone.utc)
    assert stats.data_since == datetime.fromtimestamp(1795967587, tz=timezone.utc)
    assert (stats.server_thread_count, stats.agent_queue_size, stats.dbd_agent_queue_size) == (3, 0, 0)
    assert (stats.jobs_submitted, stats.jobs_started, stats.jobs_completed, stats.jobs_canceled) == (17, 10, 3, 1)
    assert (stats.jobs_pending, stats.jobs_running) == (7, 5)
    assert (stats.main_last_cycle_us, stats.main_max_cycle_us, stats.main_mean_cycle_us) == (28, 3211, 348)
    assert (stats.main_total_cycles, stats.main_cycles_per_minute, stats.main_last_queue_length) == (15, 7, 2)
    assert (stats.bf_total_cycles, stats.bf_last_cycle_us, stats.bf_max_cycle_us, stats.bf_mean_cycle_us) == (3, 148, 187, 144)
    assert stats.bf_last_cycle_when == datetime.fromtimestamp(1795967706, tz=timezone.utc)
    assert stats.bf_total_backfilled_jobs == 0 and stats.pending_rpcs == 0
    first = stats.rpcs_by_type[0]
    assert (first.name, first.id, first.count, first.ave_time_us, first.total_time_us) == ("REQUEST_PARTITION_INFO", 2009, 19, 199, 3799)
    assert len(stats.rpcs_by_type) == 15
    assert [(u.name, u.id, u.count) for u in stats.rpcs_by_user] == [("root", 0, 89)]


def test_2405_rpc_storm_exit_sections_and_pending_rpcs() -> None:
    stats = _parse("24.05-rpc-storm.txt")
    assert stats.agent_queue_size == 1843 and stats.server_thread_count == 256
    assert stats.main_last_cycle_us == 1843211 and stats.bf_last_cycle_us == 28812004
    assert stats.bf_total_backfilled_jobs == 18220 and stats.bf_last_depth == 9123
    top = max(stats.rpcs_by_user, key=lambda r: r.count)
    assert (top.name, top.id, top.count) == ("alice", 1000, 1600113)
    assert stats.rpcs_by_type[0].name == "REQUEST_JOB_INFO" and stats.rpcs_by_type[0].ave_time_us == 412233
    assert stats.pending_rpcs == 1843 + 12


def test_rpc_row_cut_short_names_path_and_line() -> None:
    data = (FIXTURES / "22.05-busy.txt").read_bytes()
    cut = data[: data.index(b"REQUEST_JOB_INFO") + len(b"REQUEST_JOB_INFO      ")]
    with pytest.raises(ParseError) as err:
        _parse("cut.txt", data=cut)
    assert err.value.path == "slurm/cut.txt" and err.value.line == 55


def test_counter_that_does_not_read_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        _parse("bad.txt", data=b"Server thread count:  many\n")
    assert err.value.line == 1


def test_other_text_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        _parse("junk.txt", data=b"Segmentation fault (core dumped)\n")


def test_empty_file_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        _parse("empty.txt", data=b"")
    assert err.value.path == "slurm/empty.txt"


def test_non_utf8_bytes_are_a_parse_error_with_line() -> None:
    data = (FIXTURES / "22.05-busy.txt").read_bytes().replace(b"Agent count:", b"Agent c\xf6unt:")
    with pytest.raises(ParseError) as err:
        _parse("latin.txt", data=data)
    assert err.value.line == 7
