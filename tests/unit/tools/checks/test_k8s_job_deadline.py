"""check_k8s_job_deadline on batch/v1 Job JSON, kubectl events tables and pod logs."""

from __future__ import annotations

import json

from tools.checks.k8s_job_deadline import K8sJobDeadlineConfig, check_k8s_job_deadline

JOB = {"kind": "JobList", "apiVersion": "batch/v1", "items": [{
    "metadata": {"name": "llm-sft", "namespace": "ml"},
    "spec": {"activeDeadlineSeconds": 43200, "template": {"spec": {"containers": [{"name": "t", "image": "x"}]}}},
    "status": {"failed": 1, "conditions": [
        {"type": "Failed", "status": "True", "reason": "DeadlineExceeded",
         "message": "Job was active longer than specified deadline"}]}}]}
PODS = {"kind": "PodList", "items": [{
    "metadata": {"name": "llm-sft-7xq2p", "namespace": "ml",
                 "ownerReferences": [{"kind": "Job", "name": "llm-sft", "controller": True}]},
    "spec": {"nodeName": "gpu-3"}, "status": {"phase": "Failed", "reason": "DeadlineExceeded"}}]}
EVENTS = """LAST SEEN   TYPE      REASON             OBJECT                 MESSAGE
12m         Normal    SuccessfulDelete   job/eval-sweep         Deleted pod: eval-sweep-9kd2w
12m         Warning   DeadlineExceeded   job/eval-sweep         Job was active longer than specified deadline
"""
LOG = "2026-08-19 06:40:02,001 - INFO - step 9100 loss 1.92\n"
SAVED = LOG + "2026-08-19 06:41:10,500 - INFO - Saving model checkpoint to /ckpt/llm-sft/checkpoint-9000\n"


def test_a_job_stopped_by_its_deadline_without_a_checkpoint_names_its_pod(make_facts):
    facts = make_facts(("k8s/jobs.json", "k8s-json", json.dumps(JOB)), ("k8s/pods.json", "k8s-json", json.dumps(PODS)),
                       ("logs/ml/llm-sft-7xq2p/t.log", "job-log", LOG), **{"logs/ml/llm-sft-7xq2p/t.log": {"job": "ml/llm-sft-7xq2p"}})
    (f,) = check_k8s_job_deadline(facts, K8sJobDeadlineConfig())
    assert f.root_cause == "timeout_without_checkpoint" and f.culprits == ["pod:ml/llm-sft-7xq2p"]
    assert [(a.type, a.pod, a.namespace) for a in f.suggested_actions] == [("notify_owner", "llm-sft-7xq2p", "ml")]
    assert "no checkpoint saved" in f.message


def test_events_alone_name_the_deleted_pod_and_say_no_log_was_read(make_facts):
    (f,) = check_k8s_job_deadline(make_facts(("k8s/events.txt", "k8s-events-text", EVENTS)), K8sJobDeadlineConfig())
    assert f.culprits == ["pod:default/eval-sweep-9kd2w"] and "no pod log was read" in f.message
    assert f.confidence < check_k8s_job_deadline(
        make_facts(("k8s/jobs.json", "k8s-json", json.dumps(JOB)), ("k8s/pods.json", "k8s-json", json.dumps(PODS)),
                   ("logs/ml/llm-sft-7xq2p/t.log", "job-log", LOG), **{"logs/ml/llm-sft-7xq2p/t.log": {"job": "ml/llm-sft-7xq2p"}}),
        K8sJobDeadlineConfig())[0].confidence


def test_a_job_that_saved_checkpoints_or_completed_is_no_finding(make_facts):
    facts = make_facts(("k8s/jobs.json", "k8s-json", json.dumps(JOB)), ("k8s/pods.json", "k8s-json", json.dumps(PODS)),
                       ("logs/ml/llm-sft-7xq2p/t.log", "job-log", SAVED), **{"logs/ml/llm-sft-7xq2p/t.log": {"job": "ml/llm-sft-7xq2p"}})
    assert check_k8s_job_deadline(facts, K8sJobDeadlineConfig()) == []
    done = json.loads(json.dumps(JOB))
    done["items"][0]["status"]["conditions"] = [{"type": "Complete", "status": "True"}]
    assert check_k8s_job_deadline(make_facts(("k8s/jobs.json", "k8s-json", json.dumps(done))), K8sJobDeadlineConfig()) == []
