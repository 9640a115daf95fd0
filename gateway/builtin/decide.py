"""The built-in model's answer: a cause when the evidence supports one, else inconclusive or healthy.

``healthy`` is a claim (DESIGN.md): it is answered only when evidence was read, nothing needed for the
question is missing, and no error-level signal is left unexplained. Otherwise the answer is
``inconclusive``, naming what was missing or unexplained, with read-only next steps only. The summary
follows the question: what was found about each subject it names comes first.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gateway.builtin.conversation import named_entities
from gateway.builtin.precedence import Precedence
from gateway.builtin.ranking import NO_CAUSE, Ranked, mentions, rank

__all__ = ["decide", "HEALTHY_BELOW", "in_field"]

HEALTHY_BELOW = 0.5
_READ_ONLY = ("run_gpu_diagnostic", "notify_owner")
_FIELD = re.compile(
    r"\b(?:job|jobs|node|nodes|gpu|gpus|cluster|slurm|queue|queued|pending|partition|nccl|train\w*|lustre|gpfs|"
    r"storage|file ?system|mds|mdt|ost|pod|pods|kubernetes|k8s|xid|memory|oom|slow|stuck|hang\w*|fail\w*|drain\w*|"
    r"sbatch|srun|squeue|sinfo|cuda|dcgm|infiniband|nvlink|checkpoint|wrong|broken|down|error\w*|crash\w*|"
    r"healthy|running|run|waiting|wait)\b", re.IGNORECASE)


def in_field(question: str, entities: set[str]) -> bool:
    """Whether the question is about a cluster's operation (names a subject or uses the field's words)."""
    return bool(entities) or bool(_FIELD.search(question))


def _label(cause: str) -> str:
    return cause.replace("_", " ")


def _subject_lines(entities: set[str], findings: list[dict[str, Any]], coverage: dict[str, Any] | None) -> list[str]:
    """First sentences: what was found about each subject the question names."""
    statuses = {s.get("subject", "").split(":", 1)[-1].lower(): s for s in (coverage or {}).get("subjects", [])}
    lines: list[str] = []
    said: dict[str, str] = {}  # a finding's message -> the subject it was first quoted for
    for e in sorted(entities)[:4]:
        about = [f for f in findings if mentions(f, {e}) and f.get("root_cause") not in NO_CAUSE]
        status = statuses.get(e)
        if about and about[0]["message"] in said:
            lines.append(f"{e}: the same finding as {said[about[0]['message']]}")
        elif about:
            said[about[0]["message"]] = e
            lines.append(f"{e}: {about[0]['message']}")
        elif status and status.get("known") and (held := [n for n in status.get("nodes") or []
                                                         if any(mentions(f, {n.lower()}) for f in findings
                                                                if f.get("root_cause") not in NO_CAUSE)]):
            lines.append(f"{e} is {status.get('state') or 'known'} on {', '.join(held)}, named below; "
                         "the evidence does not make it a victim of that fault")
        elif status and status.get("known") and (normal := [f for f in findings if f.get("root_cause") == "healthy"
                                                            and mentions(f, {e})]):
            lines.append(f"{e}: {normal[0]['message']}")
        elif status and status.get("known") and (quoted := _quoting(e, findings)):
            lines.append(f"{e} is {status.get('state') or 'known'}; the evidence of the cause names it: "
                         f"{quoted['message']}")
        elif status and status.get("known") and any(f.get("root_cause") == "inconclusive" and f.get("check") != "unexplained_signals"
                                                    and mentions(f, {e}) for f in findings):
            lines.append(f"{e} is {status.get('state') or 'known'}; what is wrong with it is not told by the evidence (below)")
        elif status and status.get("known"):
            state = status.get("state") or "known"
            normal = (" — waiting its turn, which is normal" if ("(Priority" in state or "(Resources" in state)
                      and not status.get("idle_fit_unread") else "")
            lines.append(f"{e} is {state}{normal}; no fault found about it")
        elif status is not None and status.get("kind"):
            lines.append(f"nothing was recorded about {e}")
    return lines


def _quoting(entity: str, findings: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first causal finding whose message or evidence names ``entity`` as a word without making it a
    culprit (a victim job whose slow opens show an MDT's wall)."""
    if len(entity) < 3:
        return None
    word = re.compile(rf"(?<![\w.-]){re.escape(entity)}(?![\w-])", re.IGNORECASE)
    for f in findings:
        if f.get("root_cause") in NO_CAUSE:
            continue
        texts = [f.get("message", "")] + [ev.get("text", "") for ev in f.get("evidence", [])]
        if any(word.search(t) for t in texts):
            return f
    return None


def _actions(findings: list[dict[str, Any]], limit: int = 6) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for f in findings:
        for a in f.get("suggested_actions", []):
            key = json.dumps({k: a.get(k) for k in ("type", "node", "job", "pod", "namespace")}, sort_keys=True)
            if key not in seen:
                seen.add(key)
                out.append(a)
    return out[:limit]


def _gaps(coverage: dict[str, Any] | None) -> list[str]:
    """What missing evidence keeps Warden from calling the cluster healthy."""
    if not coverage:
        return []
    gaps: list[str] = []
    if coverage.get("nothing_read"):
        gaps.append("no evidence could be read at all")
    if coverage.get("unreadable_total"):
        what = ", ".join(u.get("what", "?") for u in coverage.get("unreadable", [])[:3])
        gaps.append(f"{coverage['unreadable_total']} piece(s) of evidence could not be read ({what})")
    unknown = [s.get("subject") for s in coverage.get("subjects", []) if not s.get("known") and s.get("kind")]
    if unknown:
        gaps.append(f"nothing was recorded about {', '.join(map(str, unknown[:3]))}")
    read = coverage.get("read", {})
    if read and not coverage.get("nothing_read") and not any(read.get(k) for k in ("scheduler_jobs", "scheduler_nodes",
                                                                                     "accounting", "kubernetes")):
        gaps.append("no scheduler or Kubernetes view was read (no queue, nodes or accounting)")
    return gaps


SLOWDOWN = re.compile(r"\b(?:slow(?:er|ed|s|ing)?\b(?! to start)|(?:throughput|tokens/s|tflops|mfu)\s+(?:dropped|fell|"
                      r"halved|went down)|(?:step|iteration) times? (?:went up|doubled|grew)|"
                      r"(?:a|one) (?:third|half|quarter|fraction) of its (?:usual |normal )?(?:throughput|speed|rate)|"
                      r"from ~?[\d.]+ ?s to ~?[\d.]+ ?s (?:per|an?) (?:step|iteration|iter|batch))", re.IGNORECASE)
"""The question reports that work got slower (``got ~30% slower``, ``slowed down by 40%``, ``throughput dropped``)."""

FAILURES = re.compile(r"\b(?:jobs?|runs?|tasks?|workloads?)\b[^.?!]{0,40}?\b(?:fail(?:ed|ing|s)?|died|dies|dying|"
                      r"crash(?:ed|es|ing)?)\b|\bfail(?:ure|ed)[ -]?rate\b|\bJobFailure", re.IGNORECASE)
"""The question reports jobs failing (``19 jobs failed since 08:00``, ``SlurmJobFailureRate alert``)."""

_WHAT_IF = re.compile(r"\b(?:before|will|would|might|could|may|if|avoid|prevent|lest|so that)\b[^.?!]{0,40}$",
                      re.IGNORECASE)


def reports_slowdown(question: str) -> bool:
    """The question reports a slowdown that happened (SLOWDOWN), not one it fears (``before it gets slower``,
    ``will it slow down``)."""
    return any(not _WHAT_IF.search(question[:m.start()]) for m in SLOWDOWN.finditer(question))


SILENT_MIN = 30.0
"""A RUNNING job whose log has said nothing for this long is stalled until something explains it."""
_ENDED_BADLY = ("FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "TIMEOUT")


def _asked_jobs_unknown(coverage: dict[str, Any] | None) -> bool:
    """The question names jobs, and not one of them was recorded anywhere (queue, accounting, logs)."""
    jobs = [s for s in (coverage or {}).get("subjects", []) if s.get("kind") == "job" or
            (not s.get("known") and str(s.get("subject", "")).replace("_", "").isdigit())]
    return bool(jobs) and not any(s.get("known") for s in jobs)


def _asked_jobs(coverage: dict[str, Any] | None) -> list[str]:
    """The Slurm jobs the question names that the evidence knows (queue or accounting)."""
    names = [(s, str(s.get("subject", "")).split(":", 1)[-1]) for s in (coverage or {}).get("subjects", [])]
    return [name for s, name in names if s.get("kind") == "job" and s.get("known") and name.replace("_", "").isdigit()]


def _not_by_owner(subject: dict[str, Any]) -> bool:
    """sacct's ``CANCELLED by <who>`` names someone other than the job's owner: uid 0 (root, or a service running
    as root) or another user's name. Another numeric uid cannot be told from the owner's: not counted."""
    who, owner = str(subject.get("cancelled_by") or ""), str(subject.get("owner") or "")
    if not who:
        return False
    if who in ("0", "root"):
        return owner != "root"
    return not who.isdigit() and bool(owner) and who != owner


def _who(who: str) -> str:
    return "uid 0 (root, or a service running as root)" if who in ("0", "root") else who


def _subject_gaps(coverage: dict[str, Any] | None, findings: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """What keeps a named job from being called fine when no fault was found about it: nodes of it whose
    evidence was not read, a log silent while it runs, an end nothing explains. Returns (reasons, culprits)."""
    reasons: list[str] = []
    culprits: list[str] = []
    for s in (coverage or {}).get("subjects", []):
        if s.get("kind") not in ("job", "pod", "workload") or not s.get("known"):
            continue
        name = str(s.get("subject", "")).split(":", 1)[-1]
        if any(mentions(f, {name.lower()}) for f in findings if f.get("root_cause") != "inconclusive"):
            continue  # a cause about it, or a check that read it and found its state expected
        state = str(s.get("state") or "")
        if s.get("unread_nodes"):
            reasons.append(f"the metrics exporter of {', '.join(s['unread_nodes'][:4])} "
                           f"(node(s) of {s.get('kind')} {name}) is down (up == 0, or its exporter pod is not "
                           "running): their GPUs and hosts could not be read")
            culprits.extend(f"node:{n}" for n in s["unread_nodes"][:4])  # where to look next
        silent = s.get("silent_min")
        if state.startswith("RUNNING") and silent is not None and silent >= SILENT_MIN:
            reasons.append(f"job {name} is RUNNING but has logged nothing for {silent:.0f} min, and nothing read "
                           "explains it")
        if s.get("idle_fit_unread"):
            idle = s["idle_fit_unread"]
            reasons.append(f"job {name} pends on Resources while {len(idle)} idle node(s) of its partition "
                           f"({', '.join(idle[:4])}) seem to fit it, and its request was not read: whether it asks for "
                           "what they lack or the scheduler holds them for a job ahead of it cannot be told; read next: "
                           "scontrol show job (TRES, features, time limit), squeue --start and sprio")
            culprits.append(f"job:{name}")
        if s.get("kind") in ("pod", "workload") and s.get("crashed"):
            reasons.append(f"{', '.join(s['crashed'][:2])}: its container died and nothing read explains why")
            culprits.extend(f"pod:{c.split(' ', 1)[0]}" for c in s["crashed"][:2])
        if s.get("kind") == "job" and state.startswith(_ENDED_BADLY):
            reasons.append(f"job {name} ended {state.split()[0]} and nothing read explains why")
            culprits.append(f"job:{name}")
        elif s.get("kind") == "job" and state.startswith("CANCELLED") and _not_by_owner(s):
            reasons.append(f"job {name} was cancelled by {_who(s['cancelled_by'])}, not by its owner "
                           f"{s.get('owner')}, and nothing read says why; read next: slurmctld's log around its end "
                           "(REQUEST_KILL_JOB / _slurm_rpc_kill_job names the uid and host) and the site's "
                           "health-check and prolog/epilog logs")
            culprits.append(f"job:{name}")
    return reasons, culprits


def _cause_answer(top: Ranked, others: list[Ranked], lead: list[str], entities: set[str],
                  table: Precedence) -> dict[str, Any]:
    # What the question names first: of several findings of this cause, those about its subjects (the
    # other jobs blocked the same way are not what was asked, and get no action) — and the fault itself
    # where it sits on a node or file system with evidence at least as strong (the asked job's NCCL
    # errors and the link that flapped under it).
    named = [f for f in top.findings if mentions(f, entities)]
    if named:
        floor = max(table.rank(f.get("strength")) for f in named)
        named += [f for f in top.findings if f not in named and table.rank(f.get("strength")) >= floor
                  and any(c.startswith(("node:", "k8snode:", "fs:", "mdt:", "ost:")) for c in f.get("culprits", []))]
    chosen = named or top.findings
    top = Ranked(cause=top.cause, score=top.score, findings=chosen, symptoms=top.symptoms)
    culprits: list[str] = []
    evidence: list[dict[str, Any]] = []
    for f in top.findings:
        culprits += [c for c in f.get("culprits", []) if c not in culprits]
        evidence.extend(f.get("evidence", [])[:3])
    summary = " ".join(f"{line}." for line in lead)
    label = f"{_label(top.cause)[:1].upper()}{_label(top.cause)[1:]}"
    first = top.findings[0]["message"]
    # Quoted already for a subject of the question: name the cause, not the same sentence again.
    summary += f" {label}: the finding above." if any(line.endswith(first) for line in lead) else f" {label}: {first}."
    if len(top.findings) > 1:
        summary += " Also: " + "; ".join(f["message"] for f in top.findings[1:3]) + "."
    if top.symptoms:
        summary += " Explained as symptoms: " + "; ".join(s["message"] for s in top.symptoms[:2]) + "."
    rest = [r for r in others if r.score >= HEALTHY_BELOW - 0.2]
    if rest:
        summary += " Other signals, read as lesser causes: " + ", ".join(f"{r.cause} ({r.score:.2f})" for r in rest[:3]) + "."
    return {"root_cause": top.cause, "culprits": culprits[:8], "evidence": evidence[:8], "confidence": top.score,
            "summary": summary.strip(), "proposed_actions": _actions(top.findings)}


def decide(question: str, findings: list[dict[str, Any]], table: Precedence | None = None,
           entities: set[str] | None = None, coverage: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Diagnosis arguments (root_cause, culprits, evidence, confidence, summary, proposed_actions)
    from the question, the checks' findings, the precedence table (none: nothing supersedes anything),
    the subjects the question names (default: read from it) and the evidence coverage (dicts as the
    get_findings / get_evidence_coverage tools return them)."""
    table = table or Precedence()
    entities = named_entities(question) if entities is None else entities
    ranked = rank(findings, entities, table)
    lead = _subject_lines(entities, findings, coverage)
    if not in_field(question, entities):
        lead.insert(0, "That question is outside what Warden answers (the operation of GPU/HPC clusters); "
                       "about the cluster itself")
    asked_unknown = _asked_jobs_unknown(coverage)
    if ranked and ranked[0].score >= HEALTHY_BELOW and not (coverage or {}).get("nothing_read") and not (
            asked_unknown and not any(mentions(f, entities) for r in ranked[:3] for f in r.findings)):
        return _cause_answer(ranked[0], ranked[1:], lead, entities, table)
    # The jobs asked about were never recorded and what was found is not about them: it is context, not
    # the answer (accounting down and the job gone: why it failed cannot be read).
    unexplained = [f for f in findings if f.get("root_cause") == "inconclusive"]
    weak = [r for r in ranked if r.score < HEALTHY_BELOW]
    subject_gaps, subject_culprits = _subject_gaps(coverage, findings)
    gaps = _gaps(coverage) + subject_gaps
    expected = [f for f in findings if f.get("root_cause") == "healthy" and mentions(f, entities)]
    if reports_slowdown(question) and not expected:
        # Slowness the asker saw is a symptom of something: with no cause found, "healthy" would deny it —
        # unless a check read the asked job's own speed and found it unchanged.
        gaps.append("the slowdown the question reports is not explained by what was read (no throttling, Xid, "
                    "link, file-system or straggler signal); read next: per-rank step times, the fabric's port "
                    "counters and the file system's job_stats for the job")
    bad, logged = (coverage or {}).get("ended_badly", 0), (coverage or {}).get("ended_badly_logs", 0)
    if FAILURES.search(question) and bad and not expected:
        # Failures the asker saw and accounting shows are a fact; no cause found is not "nothing wrong".
        gaps.append(f"{bad} job(s) ended FAILED, NODE_FAIL, OUT_OF_MEMORY or BOOT_FAIL in the accounting read and "
                    f"nothing read explains them ({logged} of them with a job log read); read next: the jobs' "
                    "stdout/stderr, slurmd's log on their nodes, and sacct's ExitCode and DerivedExitCode")
    head = " ".join(f"{line}." for line in lead)
    if asked_unknown and ranked and ranked[0].score >= HEALTHY_BELOW:
        gaps.append("found meanwhile, not about it: " + ranked[0].findings[0]["message"])
    if gaps or unexplained or not in_field(question, entities):
        why = gaps + [f["message"] for f in unexplained[:2]]
        evidence = [e for f in unexplained for e in f.get("evidence", [])][:8]
        actions = [a for a in _actions(unexplained) if a.get("type") in _READ_ONLY]
        # The owner of a job the question names hears what could not be told and what to collect next.
        told = {a.get("job") for a in actions if a.get("type") == "notify_owner"}
        actions += [{"type": "notify_owner", "job": j, "reason": "Warden could not tell the cause from what was read: "
                     + "; ".join(why or ["the evidence is incomplete"])[:300]}
                    for j in _asked_jobs(coverage) if j not in told][:2]
        culprits = list(dict.fromkeys(subject_culprits + [c for f in unexplained for c in f.get("culprits", [])]))
        return {"root_cause": "inconclusive", "culprits": culprits[:8],
                "evidence": evidence, "confidence": 0.5, "proposed_actions": actions,
                "summary": (head + " Inconclusive: " + "; ".join(why or ["the question cannot be answered from "
                                                                        "cluster evidence"]) + ".").strip()
                + (" Weak signals: " + "; ".join(r.findings[0]["message"] for r in weak[:2]) + "." if weak else "")}
    seen = "; ".join(f"{r.findings[0]['message']} (score {r.score:.2f})" for r in weak[:3])
    # Checks that recognised an expected state (a scale-up on its way, a planned failover) say why it is normal.
    normal = [f for f in findings if f.get("root_cause") == "healthy"]
    why_normal = "; ".join(f["message"] for f in normal[:3] if not any(ln.endswith(f["message"]) for ln in lead))
    return {"root_cause": "healthy", "culprits": [], "proposed_actions": [],
            "evidence": [e for f in normal for e in f.get("evidence", [])][:6],
            "confidence": 0.8 if not weak else round(1 - weak[0].score, 2),
            "summary": (head + " No fault that needs action: the evidence was read and the checks found nothing "
                               "above the action threshold." + (f" Expected: {why_normal}." if why_normal else "")
                        + (f" Minor signals: {seen}." if seen else "")).strip()}
