"""Parsing in a second process (tools/facts/offload.py) gives exactly the facts of parsing in-process: on a
generated cluster's real-format snapshot, with a file that does not parse among the offloaded ones, and
when the worker cannot be used at all."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sandbox.scale import ScaleSpec, generate
from tools.facts import offload
from tools.facts.build import build_facts
from tools.facts.model import Facts
from tools.facts.offload import Offload, _pack, _unpack
from tools.parsers import parse_artifact
from tools.sources.base import RawArtifact
from tools.sources.snapshot import SnapshotSource

pytestmark = pytest.mark.skipif(not Offload()._usable, reason="needs fork and two CPUs")


def _artifacts(root: Path) -> tuple[list[RawArtifact], SnapshotSource]:
    src = SnapshotSource(root / "snapshot", allow_absent=True)
    return [src.read_bounded(e)[0] for e in src.entries()], src


def _facts(arts: list[RawArtifact], src: SnapshotSource) -> Facts:
    return build_facts(iter(arts), captured_at=src.manifest.captured_at, cluster=src.manifest.cluster.name)


def _same(a: Facts, b: Facts) -> None:
    left, right = a.model_dump(mode="json"), b.model_dump(mode="json")
    assert left.keys() == right.keys()
    for key in left:
        assert repr(left[key]) == repr(right[key]), key  # repr: NaN values compare unequal to themselves


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[RawArtifact], SnapshotSource]:
    gen = generate(ScaleSpec(nodes=40, jobs=300, fault="xid79"), tmp_path_factory.mktemp("scale"))
    return _artifacts(gen.path)


def test_offloaded_facts_equal_in_process_facts(cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    arts, src = cluster
    local = _facts(arts, src)
    started: list[str] = []
    real_submit = Offload.submit

    def submit(self: Offload, art: RawArtifact):  # noqa: ANN202 - records what went to the worker
        started.append(art.format)
        return real_submit(self, art)

    monkeypatch.setattr(offload, "MIN_BYTES", 1)  # every Slurm output goes to the worker
    monkeypatch.setattr(offload, "START_BYTES", 1)  # whatever the load and whatever it has queued
    monkeypatch.setattr(offload, "BATCH_BYTES", 4096)  # and kernel logs in several batches
    monkeypatch.setattr(Offload, "submit", submit)
    remote = _facts(arts, src)
    assert "scontrol-job-text" in started and "sacct-text" in started
    _same(local, remote)
    assert [a.records for a in local.artifacts] == [a.records for a in remote.artifacts]


def test_a_file_that_does_not_parse_in_the_worker_is_unreadable_as_in_process(cluster, monkeypatch) -> None:
    arts, src = cluster
    broken = [a.model_copy(update={"data": b"JobId=1 JobName=x\n   UserId=a(1) not-a-pair\n"})
              if a.format == "scontrol-job-text" else a for a in arts]
    local = _facts(broken, src)
    monkeypatch.setattr(offload, "MIN_BYTES", 1)
    monkeypatch.setattr(offload, "START_BYTES", 1)
    remote = _facts(broken, src)
    _same(local, remote)
    (why,) = [u for u in remote.unreadable if u.format == "scontrol-job-text"]
    assert "expected key=value" in why.reason


def test_a_worker_that_cannot_start_leaves_the_facts_as_in_process(cluster, monkeypatch) -> None:
    arts, src = cluster
    local = _facts(arts, src)

    class NoPool:
        def __init__(self, *a: object, **k: object) -> None:
            raise OSError("no processes here")

    monkeypatch.setattr(offload, "MIN_BYTES", 1)
    monkeypatch.setattr(offload, "START_BYTES", 1)
    monkeypatch.setattr(offload, "ProcessPoolExecutor", NoPool)
    _same(local, _facts(arts, src))


def test_packed_records_are_the_same_models(cluster) -> None:
    arts, _ = cluster
    for art in arts[:40]:
        records = parse_artifact(art)
        back = _unpack(_pack(records))
        assert [type(r) for r in back] == [type(r) for r in records]
        assert [r.model_dump() for r in back] == [r.model_dump() for r in records]
        assert [r.model_fields_set for r in back] == [r.model_fields_set for r in records]


def test_a_worker_that_does_not_answer_is_stopped_and_its_files_parsed_here(cluster, monkeypatch) -> None:
    arts, src = cluster
    local = _facts(arts, src)
    parent = os.getpid()

    def stuck_in_worker(art: RawArtifact):  # noqa: ANN202 - hangs only in the forked worker
        if os.getpid() != parent:
            time.sleep(60)
        return parse_artifact(art)

    monkeypatch.setattr(offload, "MIN_BYTES", 1)
    monkeypatch.setattr(offload, "START_BYTES", 1)
    monkeypatch.setattr(offload, "TIMEOUT_S", 0.5)
    monkeypatch.setattr(offload, "parse_artifact", stuck_in_worker)
    started = time.monotonic()
    _same(local, _facts(arts, src))
    assert time.monotonic() - started < 30


@pytest.mark.parametrize(("load", "size", "starts"), [
    (0.3, 600 << 10, True),  # a 1,000-node Slurm output with a CPU free: the worker starts
    (1.8, 600 << 10, False),  # both CPUs busy: it would have to share one, so the file is parsed here
    (9.0, 9 << 20, True),  # a 10,000-node output starts it whatever the load
    (0.0, 100 << 10, False),  # small: never
])
def test_the_worker_starts_by_size_and_by_a_free_cpu(monkeypatch: pytest.MonkeyPatch, load: float, size: int,
                                                      starts: bool) -> None:
    monkeypatch.setattr(offload.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(offload, "_cpus", lambda: 2)
    art = RawArtifact(format="scontrol-job-text", data=b"x" * size, path="slurm/scontrol_show_job.txt")
    assert Offload().wants(art) is starts


def test_a_smaller_heavy_file_is_parsed_here_while_the_worker_has_four_times_it_queued(monkeypatch) -> None:
    monkeypatch.setattr(offload, "_cpus", lambda: 2)
    o = Offload()
    o._pool = object()  # type: ignore[assignment]  # a running worker (not asked for anything here)
    busy = __import__("concurrent.futures").futures.Future()
    o._sizes = {busy: 40 << 20}  # 40 MB of scontrol output not parsed yet
    squeue = RawArtifact(format="squeue-text", data=b"x" * (3 << 20), path="slurm/squeue.txt")
    sacct = RawArtifact(format="sacct-text", data=b"x" * (15 << 20), path="slurm/sacct.txt")
    assert not o.wants(squeue) and o.wants(sacct)
    busy.set_result([])
    assert o.wants(squeue)
    o._pool = None
