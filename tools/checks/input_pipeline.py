"""check_input_pipeline_bound: every GPU of a job is under-used alike, with no fault to explain it."""

from __future__ import annotations

from tools.checks.base import CheckConfig
from tools.checks.gpu_peers import UTIL_METRICS, utilisation
from tools.facts import Facts
from tools.knowledge.host import cpu_busy_nodes
from tools.knowledge.precedence import confidence
from tools.models.findings import ActionSpec, Evidence, Finding

__all__ = ["InputPipelineConfig", "check_input_pipeline_bound"]


class InputPipelineConfig(CheckConfig):
    """Thresholds for a starved job."""

    low_util_pct: float = 40.0
    min_util_pct: float = 5.0
    """Below this the GPUs are idle (an interactive session, a hung job), not starved by a loader."""
    """Mean utilisation over the job's nodes below which the GPUs are starved."""
    evenness: float = 0.6
    """Lowest node mean at least this share of the highest: all nodes alike (not one straggler)."""
    min_gpus: int = 4


def check_input_pipeline_bound(facts: Facts, cfg: InputPipelineConfig) -> list[Finding]:
    """input_pipeline_bound per running job whose nodes all show low, even GPU utilisation (the data
    loader cannot feed them); high CPU load on its nodes corroborates.

    Sources: DCGM utilisation per node; squeue allocations; sinfo/scontrol CPU load.
    """
    metric, util = utilisation(facts)
    findings: list[Finding] = []
    for job in facts.jobs:
        if job.state != "RUNNING" or (job.num_gpus or 0) < cfg.min_gpus:
            continue
        vals = {n: util[n] for n in job.nodes if n in util}
        if not vals or len(vals) < len(job.nodes):
            continue
        mean = sum(vals.values()) / len(vals)
        if not cfg.min_util_pct <= mean < cfg.low_util_pct or min(vals.values()) < cfg.evenness * max(vals.values()):
            continue
        busy_cpu = cpu_busy_nodes(facts, job.nodes)
        evidence = [Evidence(text=f"{metric} mean {mean:.0f}% over job {job.job_id}'s {len(vals)} node(s) "
                                  f"(min {min(vals.values()):.0f}%, max {max(vals.values()):.0f}%)",
                             metric=metric, value=round(mean, 1), unit="%")]
        if busy_cpu:
            evidence.append(Evidence(text=f"CPU load at or above allocated CPUs on {', '.join(busy_cpu[:4])}",
                                     metric="CPULoad"))
        findings.append(Finding(
            check="input_pipeline_bound", root_cause="input_pipeline_bound",
            message=f"job {job.job_id}: GPUs {mean:.0f}% busy on average, evenly on all nodes "
            f"(threshold {cfg.low_util_pct:.0f}%)" + ("; CPUs saturated" if busy_cpu else ""),
            culprits=[f"job:{job.job_id}"], evidence=evidence,
            strength="heuristic", confidence=confidence("heuristic", corroborated=bool(busy_cpu)),
            suggested_actions=[ActionSpec(type="notify_owner", job=job.job_id,
                                          reason="GPUs starved by the input pipeline (more loader workers, prefetch)")],
        ))
    return findings + _pod_findings(facts, cfg)


def _pod_findings(facts: Facts, cfg: InputPipelineConfig) -> list[Finding]:
    """The same test for Kubernetes pods, from DCGM series labelled with the pod they serve (dcgm-exporter's
    pod mapping: ``pod``/``namespace`` labels): a running pod with at least ``min_gpus`` GPUs under-used on average.
    Another pod of the same image at twice its utilisation corroborates (the same code runs fast elsewhere)."""
    if not facts.k8s_pods:
        return []
    for metric in UTIL_METRICS:
        per_pod: dict[tuple[str, str], dict[str, list[float]]] = {}
        for smp in facts.samples(metric):
            pod, ns = smp.labels.get("pod"), smp.labels.get("namespace")
            if pod and ns:
                gpu = smp.labels.get("gpu") or smp.labels.get("UUID") or "?"
                scale = 100.0 if "PROF" in metric else 1.0
                per_pod.setdefault((ns, pod), {}).setdefault(gpu, []).append(smp.value * scale)
        if per_pod:
            break
    else:
        return []
    means = {k: {g: sum(v) / len(v) for g, v in gpus.items()} for k, gpus in per_pod.items()}
    pods = {(p.namespace, p.name): p for p in facts.k8s_pods}
    out: list[Finding] = []
    for (ns, name), gpus in means.items():
        pod = pods.get((ns, name))
        if pod is None or pod.phase != "Running" or len(gpus) < cfg.min_gpus:
            continue
        # No evenness test across one pod's GPUs: a starved loader feeds them in bursts, and one scrape catches a
        # GPU mid-burst at 100 % and its neighbour idle; over the samples read they starve together.
        mean = sum(gpus.values()) / len(gpus)
        if not cfg.min_util_pct <= mean < cfg.low_util_pct:
            continue
        images = {c.image for c in pod.containers if c.image}
        faster = [k for k, g in means.items() if k != (ns, name) and (o := pods.get(k)) is not None
                  and images & {c.image for c in o.containers if c.image} and sum(g.values()) / len(g) >= 2 * mean]
        evidence = [Evidence(text=f"{metric} mean {mean:.0f}% over pod {ns}/{name}'s {len(gpus)} GPU(s) (min "
                                  f"{min(gpus.values()):.0f}%, max {max(gpus.values()):.0f}%)", metric=metric,
                             value=round(mean, 1), unit="%")]
        evidence += [Evidence(text=f"pod {k[0]}/{k[1]} of the same image at "
                                   f"{sum(means[k].values()) / len(means[k]):.0f}%", metric=metric) for k in faster[:2]]
        out.append(Finding(
            check="input_pipeline_bound", root_cause="input_pipeline_bound",
            message=f"pod {ns}/{name}: GPUs {mean:.0f}% busy on average (threshold {cfg.low_util_pct:.0f}%)"
                    + ("; the same image runs at twice that elsewhere" if faster else "")
                    + ": its input pipeline (data-loader workers, their CPU limit) cannot feed them",
            culprits=[f"pod:{ns}/{name}"], evidence=evidence,
            strength="heuristic", confidence=confidence("heuristic", corroborated=bool(faster)),
            suggested_actions=[ActionSpec(type="notify_owner", pod=name, namespace=ns,
                                          reason="GPUs starved by the input pipeline: check the container's CPU limit "
                                                 "against its loader workers, prefetch")],
        ))
    return out
