"""The result of a DCGM diagnostic (`dcgmi diag -r <level> -j`), per test and GPU.

Parsed by tools/parsers/gpu/dcgmi_diag_json.py (format ``dcgmi-diag-json``). Status strings are
DCGM's own (``Pass``, ``Fail``, ``Warn``, ``Skip``, ``Not Run``); a node passes when no test
result failed (``Fail``) or warned at error severity.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["DiagTestResult", "DcgmDiagReport"]


class DiagTestResult(BaseModel):
    """One test's result for one GPU (or for the whole node, ``gpu`` None, e.g. the Denylist test)."""

    category: str
    """DCGM test category: ``Deployment``, ``Integration``, ``Hardware``, ``Stress``, ..."""
    test: str
    """Test name as DCGM prints it: ``Denylist``, ``PCIe``, ``GPU Memory``, ``Diagnostic``, ..."""
    gpu: int | None = None
    status: str
    """``Pass``, ``Fail``, ``Warn``, ``Skip`` or ``Not Run``."""
    warnings: list[str] = Field(default_factory=list)
    """DCGM's warning texts for this result (cluster text: data only)."""
    error_ids: list[int] = Field(default_factory=list)
    """DCGM error ids (``dcgmError_t``) of the warnings, where DCGM gives them."""

    @property
    def failed(self) -> bool:
        """True for a ``Fail`` result."""
        return self.status.lower() == "fail"


class DcgmDiagReport(BaseModel):
    """Everything one `dcgmi diag -j` run printed, for one node."""

    node: str | None = None
    file: str | None = None
    """Snapshot-relative path or the command the JSON came from."""
    dcgm_version: str | None = None
    driver_version: str | None = None
    results: list[DiagTestResult] = Field(default_factory=list)

    @property
    def failures(self) -> list[DiagTestResult]:
        """The failing results, in the order DCGM printed them."""
        return [r for r in self.results if r.failed]

    @property
    def passed(self) -> bool:
        """True when at least one test ran and none failed."""
        ran = [r for r in self.results if r.status.lower() not in ("skip", "not run")]
        return bool(ran) and not self.failures
