"""Manifest entries: a container log recorded with ``pod: namespace/name`` belongs to that pod."""

from __future__ import annotations

from tools.snapshot.manifest import ManifestEntry


def test_pod_key_stands_for_the_job_of_a_container_log_and_an_explicit_job_wins():
    e = ManifestEntry.model_validate({"path": "logs/nlp_t5/pytorch.log", "format": "job-log", "pod": "nlp/t5-master-0"})
    assert (e.job, e.pod) == ("nlp/t5-master-0", "nlp/t5-master-0")
    e = ManifestEntry.model_validate({"path": "logs/x.log", "format": "job-log", "pod": "nlp/a", "job": "4242"})
    assert e.job == "4242"
