"""What the kubelet says when it cannot start a pod's sandbox on a node: the node's container runtime or CNI.

Sources: the kubelet's FailedCreatePodSandBox event and its pod_workers "CreatePodSandboxError" log line, with
the runtime's error inside — containerd "failed to get sandbox runtime: no runtime for \\"nvidia\\" is configured"
(NVIDIA GPU Operator troubleshooting; NVIDIA/gpu-operator #413, #730), CRI-O "failed to find runtime handler nvidia
from runtime list", dockershim / cri-dockerd "RuntimeHandler \\"nvidia\\" not supported" (NVIDIA/gpu-operator
#236); a RuntimeClass whose handler the node's runtime does not know (the NVIDIA Container Toolkit writes the
``nvidia`` handler into /etc/containerd/config.toml); the CNI plugin failing to set up the pod's network
("failed to setup network for sandbox", "networkPlugin cni failed to set up pod", "plugin type=\\"calico\\"
failed (add)"); an OCI runtime binary missing ("exec: \\"nvidia-container-runtime\\": executable file not found").
And how a container's exit code reads (128 + signal, the container runtimes' convention; ``OOMKilled`` only when
the runtime attributes the kill to the memory cgroup: the Kubernetes container-state docs).
"""

from __future__ import annotations

import re

__all__ = ["SANDBOX_FAILED", "sandbox_problem", "EXIT_SIGNALS", "describe_exit"]

SANDBOX_FAILED = re.compile(r"(?:Failed|failed) (?:to )?create (?:pod )?sandbox|CreatePodSandboxError|RunPodSandbox from "
                            r"runtime service failed", re.IGNORECASE)
"""The kubelet could not create a pod's sandbox (its first step on the node)."""

_CLASSES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r'no runtime for [\\"]*([\w.-]+)[\\"]* is configured|RuntimeHandler [\\"]*([\w.-]+)[\\"]* not supported'
                r'|failed to find runtime handler ([\w.-]+)|unknown runtime handler [\\"]*([\w.-]+)', re.IGNORECASE),
     "the container runtime has no '{0}' runtime handler configured (RuntimeClass handler; the NVIDIA container "
     "toolkit's runtime entry is missing from its config)"),
    (re.compile(r'exec: [\\"]*(nvidia-container-runtime[\w-]*)[\\"]*: executable file not found'
                r'|(nvidia-container-runtime[\w-]*)[^\n]{0,40}(?:no such file|not found)', re.IGNORECASE),
     "the container runtime cannot find {0} (NVIDIA container toolkit not installed on the node)"),
    (re.compile(r'plugin type=[\\"]*([\w-]+)[\\"]* failed|failed to (?:setup|set up) network for sandbox'
                r'|networkPlugin cni failed|failed to set up sandbox container [^\n]{0,80}network', re.IGNORECASE),
     "the node's CNI network plugin failed to set up the pod network{1}"),
)

_CNI_NAME = re.compile(r'plugin type=[\\"]*([\w-]+)')


def sandbox_problem(text: str) -> str | None:
    """What a sandbox failure says broke on the node, or None when the text names no known node-side cause."""
    if not SANDBOX_FAILED.search(text) and "sandbox" not in text.lower():
        return None
    for pattern, template in _CLASSES:
        m = pattern.search(text)
        if m:
            name = next((g for g in m.groups() if g), "")
            if not name and (cni := _CNI_NAME.search(text)):
                name = cni.group(1)
            return template.format(name, f" ({name})" if name else "")
    return None


EXIT_SIGNALS: dict[int, str] = {
    134: "SIGABRT (the process aborted itself)",
    137: "SIGKILL (killed from outside: the kernel OOM killer without cgroup attribution, a liveness-probe kill "
         "past its grace period, or someone's kill)",
    139: "SIGSEGV (segmentation fault in the process)",
    143: "SIGTERM (asked to stop: a probe failure, a rollout, a drain or a person)",
}
"""A container's exit code above 128 is 128 + the signal that ended it (the container runtime's convention);
the kubelet's reason is ``OOMKilled`` only when the runtime attributes the kill to the container's memory cgroup."""


def describe_exit(code: int | None) -> str:
    """``exit 137 = 128 + SIGKILL (...)``, or ``exit N``."""
    if code is None:
        return "exit code unknown"
    meaning = EXIT_SIGNALS.get(code)
    return f"exit {code} = 128 + {meaning}" if meaning else f"exit {code}"
