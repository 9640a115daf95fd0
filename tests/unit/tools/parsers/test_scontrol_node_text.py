"""scontrol-node-text parser on real captures (tests/fixtures/scontrol-node-text/SOURCES.md)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from tools.errors import ParseError
from tools.models.slurm import SlurmNode
from tools.parsers import parse_artifact
from tools.sources.base import RawArtifact

FIXTURES = Path(__file__).parents[3] / "fixtures" / "scontrol-node-text"
GOOD = sorted(FIXTURES.glob("*.txt"))


def _parse(name: str, data: bytes | None = None) -> list[SlurmNode]:
    raw = (FIXTURES / name).read_bytes() if data is None else data
    return parse_artifact(RawArtifact(format="scontrol-node-text", data=raw, path=f"slurm/{name}"))  # type: ignore[return-value]


def _by_name(name: str) -> dict[str, SlurmNode]:
    return {n.name: n for n in _parse(name)}


@pytest.mark.parametrize("fixture", GOOD, ids=lambda p: p.name)
def test_every_fixture_gives_nodes_with_gpus_and_versions(fixture: Path) -> None:
    nodes = _parse(fixture.name)
    assert nodes and all(n.state and n.gpus_total == 4 and n.version and n.cpus for n in nodes)
    assert all(n.boot_time and n.boot_time.tzinfo is not None for n in nodes)


def test_2205_drain_reasons_split_into_text_user_and_time() -> None:
    nodes = _by_name("22.05-drain-down.txt")
    gpu02 = nodes["gpu02"]
    assert gpu02.state == "MIXED" and gpu02.flags == ["DRAIN"]
    assert gpu02.reason == "warden: Xid 79 on GPU 2 (fallen off the bus)" and gpu02.reason_user == "root"
    assert gpu02.reason_time == datetime(2026, 11, 29, 15, 54, 12, tzinfo=timezone.utc)
    assert nodes["gpu03"].state == "ALLOCATED" and nodes["gpu03"].reason == "Kill task failed"
    assert nodes["gpu04"].state == "DOWN" and nodes["gpu04"].flags == ["NOT_RESPONDING"]
    assert nodes["gpu04"].gpus_used == 0  # AllocTRES= empty


def test_2205_resources_from_tres_and_memory() -> None:
    gpu01 = _by_name("22.05-drain-down.txt")["gpu01"]
    assert gpu01.cpus == 2 and gpu01.cpus_alloc == 2 and gpu01.cpu_load == pytest.approx(0.27)
    assert gpu01.real_memory_mib == 2000 and gpu01.alloc_memory_mib == 0 and gpu01.free_memory_mib == 22733
    assert gpu01.gres == "gpu:4" and gpu01.gpus_total == 4 and gpu01.gpus_used == 2
    assert gpu01.partitions == ["gpu", "debug"] and gpu01.reason is None
    assert gpu01.slurmd_start_time == datetime(2026, 11, 29, 15, 53, 15, tzinfo=timezone.utc)


def test_2205_detail_completing_and_drained_with_gres_used() -> None:
    nodes = _by_name("22.05-detail-completing.txt")
    assert nodes["gpu03"].state == "IDLE" and nodes["gpu03"].flags == ["COMPLETING", "PLANNED"]
    assert nodes["gpu04"].state == "IDLE" and nodes["gpu04"].drained
    assert nodes["gpu04"].reason == "warden: GPU 3 row-remap failure, awaiting RMA (ticket 4711)"
    assert nodes["gpu01"].gres_used is not None and nodes["gpu01"].gpus_used == 4


def test_2405_idle_drain_not_responding_with_public_reason() -> None:
    nodes = _by_name("24.05-detail-drain-notresponding.txt")
    gpu021 = nodes["gpu021"]
    assert gpu021.state == "IDLE" and gpu021.flags == ["DRAIN", "NOT_RESPONDING"]
    assert gpu021.drained and gpu021.not_responding
    assert gpu021.reason == "Kill task failed" and gpu021.reason_user == "root"
    assert gpu021.reason_time == datetime(2024, 1, 25, 15, 12, 23, tzinfo=timezone.utc)
    assert gpu021.gres == "gpu:a100:4(S:0-1)" and gpu021.gres_used == "gpu:a100:0(IDX:N/A)" and gpu021.gpus_used == 0
    assert nodes["gpu017"].gpus_used == 4 and nodes["gpu017"].cpu_load == pytest.approx(64.12)


def test_record_cut_mid_line_names_path_and_line() -> None:
    data = (FIXTURES / "22.05-drain-down.txt").read_bytes()
    cut = data[: data.index(b"RealMemory=2000 AllocMem") + len(b"RealMemory=2000 Alloc")]
    with pytest.raises(ParseError) as err:
        _parse("cut.txt", data=cut)
    assert err.value.path == "slurm/cut.txt" and err.value.line == 8


def test_record_without_state_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="State"):
        _parse("cut.txt", data=b"NodeName=gpu01 Arch=x86_64 CoresPerSocket=1\n   CPUAlloc=0 CPUTot=2\n")


def test_empty_file_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        _parse("empty.txt", data=b"")
    assert err.value.path == "slurm/empty.txt"


def test_non_utf8_bytes_are_a_parse_error_with_line() -> None:
    data = (FIXTURES / "22.05-drain-down.txt").read_bytes().replace(b"Kill task failed", b"Kill t\xe4sk failed")
    with pytest.raises(ParseError) as err:
        _parse("latin.txt", data=data)
    assert err.value.path == "slurm/latin.txt" and err.value.line is not None


@pytest.mark.parametrize("state,base,flags", [
    ("DOWN*", "DOWN", ["NOT_RESPONDING"]),  # older scontrol prints sinfo's suffix on State=
    ("IDLE~", "IDLE", ["POWERED_DOWN"]),
    ("MIXED+DRAIN*", "MIXED", ["DRAIN", "NOT_RESPONDING"]),
    ("DOWN+NOT_RESPONDING", "DOWN", ["NOT_RESPONDING"]),
])
def test_state_suffixes_are_flags(state: str, base: str, flags: list[str]) -> None:
    data = f"NodeName=cn22 Arch=x86_64 CoresPerSocket=48\n   State={state} ThreadsPerCore=1 TmpDisk=0\n".encode()
    (node,) = _parse("inline.txt", data)
    assert (node.state, node.flags, node.not_responding) == (base, flags, "NOT_RESPONDING" in flags)
