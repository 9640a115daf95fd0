"""sinfo-text parser on real captures (tests/fixtures/sinfo-text/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.errors import ParseError
from tools.models.slurm import SlurmNode
from tools.parsers import parse_artifact
from tools.parsers.slurm._states import node_state_from_sinfo
from tools.sources.base import RawArtifact

FIXTURES = Path(__file__).parents[3] / "fixtures" / "sinfo-text"
GOOD = sorted(FIXTURES.glob("*.txt"))


def _parse(name: str, data: bytes | None = None, columns: str | None = None) -> list[SlurmNode]:
    raw = (FIXTURES / name).read_bytes() if data is None else data
    return parse_artifact(RawArtifact(format="sinfo-text", data=raw, path=f"slurm/{name}", columns=columns))  # type: ignore[return-value]


def _by_name(name: str) -> dict[str, SlurmNode]:
    return {n.name: n for n in _parse(name)}


@pytest.mark.parametrize("fixture", GOOD, ids=lambda p: p.name)
def test_every_fixture_gives_the_four_nodes_once(fixture: Path) -> None:
    nodes = _by_name(fixture.name)
    assert sorted(nodes) == ["gpu01", "gpu02", "gpu03", "gpu04"]
    if "cpus-load" not in fixture.name:  # that layout prints no PARTITION column
        assert nodes["gpu01"].partitions == ["gpu", "debug"] and nodes["gpu04"].partitions == ["gpu"]


def test_default_grouped_layout_expands_hostlists_and_state_codes() -> None:
    nodes = _by_name("22.05-default.txt")
    assert nodes["gpu04"].state == "DOWN" and nodes["gpu04"].flags == ["NOT_RESPONDING"]  # down*
    assert nodes["gpu02"].state == "DRAINING" and nodes["gpu02"].drained  # drng
    assert nodes["gpu03"].state == "DRAINING" and nodes["gpu03"].flags == ["DRAIN"]
    assert nodes["gpu01"].state == "ALLOCATED" and not nodes["gpu01"].drained


def test_node_long_layout_skips_date_and_keeps_truncated_reason() -> None:
    nodes = _by_name("22.05-N-l.txt")
    assert nodes["gpu02"].reason == "warden: Xid 79 on GP"  # sinfo -l cuts REASON at 20 characters
    assert nodes["gpu03"].reason == "Kill task failed"
    assert nodes["gpu04"].reason == "Not responding" and nodes["gpu04"].not_responding
    assert nodes["gpu01"].reason is None and nodes["gpu01"].cpus == 2 and nodes["gpu01"].real_memory_mib == 2000


def test_node_o_layout_reads_gres_and_whole_reason() -> None:
    nodes = _by_name("22.05-N-o.txt")
    assert nodes["gpu02"].reason == "warden: Xid 79 on GPU 2 (fallen off the bus)"
    assert nodes["gpu02"].gres == "gpu:4" and nodes["gpu02"].gpus_total == 4


def test_long_layout_completing_and_drained_idle_node() -> None:
    nodes = _by_name("22.05-l.txt")  # date line, JOB_SIZE/ROOT/OVERSUBS/GROUPS columns, long state words
    assert nodes["gpu03"].state == "COMPLETING" and nodes["gpu03"].flags == ["COMPLETING"]
    assert nodes["gpu04"].state == "DRAINED" and nodes["gpu04"].drained
    assert nodes["gpu01"].state == "MIXED" and nodes["gpu01"].partitions == ["gpu", "debug"]
    short = _by_name("22.05-N.txt")  # comp / drain / mix
    assert [short[n].state for n in ("gpu01", "gpu03", "gpu04")] == ["MIXED", "COMPLETING", "DRAINED"]


def test_cpu_state_load_and_free_memory_columns() -> None:
    nodes = _by_name("22.05-N-o-cpus-load.txt")
    assert (nodes["gpu01"].cpus_alloc, nodes["gpu01"].cpus) == (1, 2)  # CPUS(A/I/O/T) 1/1/0/2
    assert nodes["gpu01"].cpu_load == pytest.approx(1.44) and nodes["gpu04"].free_memory_mib == 22801
    assert nodes["gpu04"].reason == "warden: GPU 3 row-remap failure, awaiting RMA (ticket 4711)"


def test_mixed_layout_all_mixed() -> None:
    assert {n.state for n in _parse("22.05-mixed.txt")} == {"MIXED"}


@pytest.mark.parametrize(
    ("cell", "state", "flags"),
    [
        ("down*", "DOWN", ["NOT_RESPONDING"]),
        ("idle~", "IDLE", ["POWERED_DOWN"]),
        ("idle#", "IDLE", ["POWERING_UP"]),
        ("idle!", "IDLE", ["POWER_DOWN"]),
        ("idle%", "IDLE", ["POWERING_DOWN"]),
        ("idle$", "IDLE", ["MAINTENANCE"]),
        ("mix@", "MIXED", ["REBOOT_REQUESTED"]),
        ("alloc^", "ALLOCATED", ["REBOOT_ISSUED"]),
        ("idle-", "IDLE", ["PLANNED"]),
        ("drain", "DRAINED", ["DRAIN"]),
        ("drained*", "DRAINED", ["DRAIN", "NOT_RESPONDING"]),
        ("drng", "DRAINING", ["DRAIN"]),
        ("draining", "DRAINING", ["DRAIN"]),
        ("allocated+", "ALLOCATED", ["COMPLETING"]),
        ("mixed+drain", "MIXED", ["DRAIN"]),
        ("inval", "INVAL", ["INVALID_REG"]),
    ],
)
def test_sinfo_state_codes_and_suffixes(cell: str, state: str, flags: list[str]) -> None:
    assert node_state_from_sinfo(cell) == (state, flags)


def test_headerless_output_named_by_columns() -> None:
    data = b"gpu[01-02] gpu* idle~ 2 2000 gpu:a100:4 none\ngpu03 gpu drained* 2 2000 gpu:a100:4 Kill task failed\n"
    nodes = {n.name: n for n in _parse("h.txt", data=data, columns="%N %P %T %c %m %G %E")}
    assert nodes["gpu02"].flags == ["POWERED_DOWN"] and nodes["gpu02"].gpus_total == 4
    assert nodes["gpu03"].reason == "Kill task failed" and nodes["gpu03"].not_responding


def test_headerless_output_without_columns_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        _parse("h.txt", data=b"gpu01 gpu idle\n")
    assert err.value.line == 1


def test_row_cut_short_names_path_and_line() -> None:
    data = (FIXTURES / "22.05-default.txt").read_bytes().rstrip(b"\n")
    with pytest.raises(ParseError) as err:
        _parse("cut.txt", data=data[: data.rindex(b"gpu01")])
    assert err.value.path == "slurm/cut.txt" and err.value.line == 6


def test_empty_file_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        _parse("empty.txt", data=b"")
    assert err.value.path == "slurm/empty.txt"


def test_non_utf8_bytes_are_a_parse_error_with_line() -> None:
    data = (FIXTURES / "22.05-N-o.txt").read_bytes().replace(b"Kill task failed", b"Kill \xff failed")
    with pytest.raises(ParseError) as err:
        _parse("latin.txt", data=data)
    assert err.value.line == 6


def test_sinfo_long_job_size_gives_the_partitions_node_limit():
    from tools.parsers.slurm.sinfo_text import parse_sinfo_text
    text = """Tue May 19 10:00:00 2026
PARTITION AVAIL  TIMELIMIT   JOB_SIZE ROOT OVERSUBS     GROUPS  NODES       STATE NODELIST
gpu*         up 2-00:00:00        1-8   no   EXCLUS        all      2   allocated kg[01-02]
long         up 7-00:00:00 1-infinite   no       NO        all      1        idle kl01
"""
    nodes = parse_sinfo_text(text, path="slurm/sinfo_l.txt")
    assert [(n.name, n.partition_max_nodes) for n in nodes] == [("kg01", 8), ("kg02", 8), ("kl01", None)]
