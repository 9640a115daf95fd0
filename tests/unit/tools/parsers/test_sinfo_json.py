"""sinfo-json parser on real 22.05 captures and the 23.02+ shapes (tests/fixtures/sinfo-json/SOURCES.md)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from tools.errors import ParseError
from tools.models.slurm import SlurmNode
from tools.parsers import parse_artifact
from tools.sources.base import RawArtifact

FIXTURES = Path(__file__).parents[3] / "fixtures" / "sinfo-json"
GOOD = sorted(FIXTURES.glob("*.json"))
BASE = {"IDLE", "MIXED", "ALLOCATED", "DOWN", "FUTURE", "UNKNOWN"}


def _parse(name: str, data: bytes | None = None) -> list[SlurmNode]:
    raw = (FIXTURES / name).read_bytes() if data is None else data
    return parse_artifact(RawArtifact(format="sinfo-json", data=raw, path=f"slurm/{name}"))  # type: ignore[return-value]


def _by_name(name: str) -> dict[str, SlurmNode]:
    return {n.name: n for n in _parse(name)}


@pytest.mark.parametrize("fixture", GOOD, ids=lambda p: p.name)
def test_every_fixture_gives_unique_nodes_with_base_states(fixture: Path) -> None:
    nodes = _parse(fixture.name)
    assert nodes and len({n.name for n in nodes}) == len(nodes)
    assert all(n.state in BASE for n in nodes)
    assert all(n.partitions for n in nodes)


def test_2205_drained_and_not_responding_nodes() -> None:
    nodes = _by_name("22.05-drain-down.json")
    gpu02, gpu03, gpu04 = nodes["gpu02"], nodes["gpu03"], nodes["gpu04"]
    assert gpu02.state == "MIXED" and gpu02.flags == ["DRAIN"] and gpu02.drained
    assert gpu02.reason == "warden: Xid 79 on GPU 2 (fallen off the bus)" and gpu02.reason_user == "root"
    assert gpu02.reason_time == datetime(2026, 11, 29, 15, 54, 12, tzinfo=timezone.utc)
    assert gpu03.state == "ALLOCATED" and gpu03.reason == "Kill task failed"
    assert gpu04.state == "DOWN" and gpu04.not_responding and gpu04.reason == "Not responding"
    assert nodes["gpu01"].partitions == ["gpu", "debug"] and not nodes["gpu01"].drained
    assert gpu02.gpus_total == 4 and gpu02.gpus_used == 1 and nodes["gpu01"].gpus_used == 2
    assert gpu02.cpu_load == pytest.approx(0.27) and gpu02.real_memory_mib == 2000 and gpu02.cpus_alloc == 1
    assert gpu02.version == "22.05.8"


def test_2205_all_gpus_in_use_after_the_multinode_job() -> None:
    nodes = _by_name("22.05-mixed.json")
    assert [nodes[n].gpus_used for n in ("gpu01", "gpu02", "gpu03", "gpu04")] == [2, 4, 4, 3]
    assert all(n.state == "MIXED" and n.flags == [] for n in nodes.values())


def test_2205_completing_node_and_idle_drained_node() -> None:
    nodes = _by_name("22.05-completing-drained.json")
    assert nodes["gpu03"].state == "IDLE" and nodes["gpu03"].flags == ["COMPLETING", "PLANNED"]
    gpu04 = nodes["gpu04"]
    assert gpu04.state == "IDLE" and gpu04.flags == ["DRAIN"]
    assert gpu04.reason == "warden: GPU 3 row-remap failure, awaiting RMA (ticket 4711)"
    assert nodes["gpu01"].gpus_used == 4 and nodes["gpu01"].cpu_load == pytest.approx(1.44)


def test_2405_sinfo_groups_merge_partitions_and_read_state_lists() -> None:
    nodes = _by_name("24.05-sinfo-groups.json")
    assert list(nodes) == ["gpu017", "gpu018", "gpu021", "gpu022", "gpu023", "cpu101", "cpu102"]
    assert nodes["gpu017"].partitions == ["gpu", "debug"]
    assert nodes["gpu017"].cpu_load == pytest.approx(64.12) and nodes["gpu017"].free_memory_mib == 240112
    assert nodes["gpu017"].gpus_total == 4 and nodes["gpu017"].gpus_used == 4 and nodes["gpu017"].cpus_alloc == 64
    assert nodes["gpu021"].state == "IDLE" and nodes["gpu021"].flags == ["DRAIN"] and nodes["gpu021"].reason == "Kill task failed"
    assert nodes["gpu022"].state == "DOWN" and nodes["gpu022"].not_responding
    assert nodes["gpu023"].flags == ["MAINTENANCE", "RESERVED"]
    assert nodes["cpu101"].cpus == 128 and nodes["cpu101"].cpus_alloc is None and nodes["cpu101"].gpus_total is None


def test_2411_restd_node_records() -> None:
    nodes = _by_name("24.11-restd-nodes.json")
    host1, host2 = nodes["host1"], nodes["host2"]
    assert host1.state == "IDLE" and host1.flags == [] and host1.reason is None and host1.reason_user is None
    assert host1.cpu_load == pytest.approx(4.46) and host1.free_memory_mib == 39871 and host1.cpus == 32
    assert host1.gpus_total == 2 and host1.gpus_used == 0 and host1.version == "24.11.0-0rc1"
    assert host1.boot_time == datetime.fromtimestamp(1720820315, tz=timezone.utc)
    assert host1.reason_time is None  # number 0 means never
    assert host2.state == "MIXED" and host2.drained and host2.reason == "warden: Xid 79 on GPU 1"
    assert host2.gpus_used == 1 and host2.alloc_memory_mib == 16384


def test_truncated_json_names_path_and_line() -> None:
    data = (FIXTURES / "24.05-sinfo-groups.json").read_bytes()
    with pytest.raises(ParseError) as err:
        _parse("cut.json", data=data[: len(data) * 2 // 3])
    assert err.value.path == "slurm/cut.json" and err.value.line is not None and err.value.line > 1


def test_json_without_nodes_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="no 'sinfo' or 'nodes' list"):
        _parse("jobs.json", data=b'{"jobs": []}')


def test_node_record_without_name_names_its_index() -> None:
    with pytest.raises(ParseError, match="record 0"):
        _parse("bad.json", data=b'{"nodes": [{"state": ["IDLE"]}]}')


def test_empty_file_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        _parse("empty.json", data=b"\n")
    assert err.value.path == "slurm/empty.json"


def test_non_utf8_bytes_are_a_parse_error() -> None:
    data = (FIXTURES / "22.05-drain-down.json").read_bytes().replace(b"Kill task failed", b"Kill task f\xe4iled")
    with pytest.raises(ParseError) as err:
        _parse("latin.json", data=data)
    assert err.value.path == "slurm/latin.json"
