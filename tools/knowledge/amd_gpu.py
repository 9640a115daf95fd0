"""AMD Instinct GPU faults as the amdgpu kernel driver logs them (no Xid numbers on AMD GPUs).

Sources: the amdgpu driver's RAS messages (``N new uncorrectable hardware errors detected in UMC block``:
HBM memory uncorrectable errors, ROCm's RAS documentation), and ROCm issue #3766 (MI300X: the GPU reset
that follows an uncorrectable error may not complete — ``ASIC reset failed``, ``GPU reset(N) failed``,
``Failed to resume device`` — leaving the GPU unusable until the node is rebooted). Deliberately not here:
``GPU fault detected`` / VM page faults (a program's bad address, ROCm's equivalent of an MMU-fault Xid) and
ATHUB interrupts alone, which public reports show on healthy GPUs after software hangs.
"""

from __future__ import annotations

import re

__all__ = ["amd_gpu_fault", "AMD_PCI"]

_FAULTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"uncorrectable hardware errors? detected in (?:umc|hbm) block", re.IGNORECASE),
     "AMD GPU uncorrectable HBM (UMC) ECC error"),
    (re.compile(r"\bamdgpu\b.*(?:ASIC reset failed|GPU reset\(\d+\) failed|GPU reset end with ret = -\d+|"
                r"Failed to resume device)"),
     "AMD GPU reset failed (reboot needed)"),
)
AMD_PCI = re.compile(r"\bamdgpu (?:[0-9a-f]{4}:)?([0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f])\b", re.IGNORECASE)
"""The GPU's PCI address at the head of an amdgpu line (``amdgpu 0000:75:00.0: amdgpu: ...``)."""


def amd_gpu_fault(message: str) -> str | None:
    """The fault an amdgpu kernel line reports (a short label), or None when it reports none of them."""
    if "amdgpu" not in message and "UMC" not in message and "umc" not in message:
        return None
    for pattern, label in _FAULTS:
        if pattern.search(message):
            return label
    return None
