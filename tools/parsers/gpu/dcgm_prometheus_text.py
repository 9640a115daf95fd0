"""Parser for dcgm-exporter's ``/metrics`` page (format dcgm-prometheus-text).

Shape (Prometheus text exposition, one sample per GPU and field)::

    # HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
    # TYPE DCGM_FI_DEV_SM_CLOCK gauge
    DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-…",device="nvidia0",modelName="NVIDIA A100-SXM4-80GB",Hostname="gpu017",DCGM_FI_DRIVER_VERSION="550.54.15"} 1410

Metric names are DCGM field names; units are DCGM's (MHz, %, C, W, MiB; PROF fields are ratios
0..1). Recent dcgm-exporter versions add ``container``/``namespace``/``pod`` (Kubernetes) or
HPC-job labels. Real shapes: NVIDIA/dcgm-exporter README and etc/default-counters.csv (see
tests/fixtures/dcgm-prometheus-text/SOURCES.md).

A page holds some 27 families; by default only ``DCGM_CHECKED_FIELDS``, the ones Warden's checks
and read tools use, are read (tools/parsers/gpu/exposition_fast.py finds them without reading the
other families' lines); ``families=None`` reads every family through prometheus_client.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from prometheus_client.parser import text_string_to_metric_families

from tools.knowledge.dcgm import CHECKED_FIELDS

from tools.errors import ParseError
from tools.models.gpu import MetricSample
from tools.models.gpu_columns import SampleBlock
from tools.parsers.gpu.exposition_fast import DCGM_BLANK_MIN, instance_host, plain_page_blocks, wanted_samples

__all__ = ["parse_dcgm_prometheus_text", "parse_dcgm_prometheus_blocks", "samples_from_exposition", "instance_host", "DCGM_BLANK_MIN",
           "DCGM_CHECKED_FIELDS"]

_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")

DCGM_CHECKED_FIELDS: tuple[str, ...] = CHECKED_FIELDS
"""The DCGM fields Warden's checks and read tools read (tools.knowledge.dcgm.CHECKED_FIELDS, one list); a
test holds it to the names those modules use."""


def _bad_line(text: str) -> tuple[int | None, str]:
    """Find the first sample line prometheus_client rejects (only called after a failure)."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            for _ in text_string_to_metric_families(line + "\n"):
                pass
        except ValueError:
            return lineno, line
    return None, ""


def samples_from_exposition(text: str, *, path: str, node: str | None) -> list[MetricSample]:
    """Parse Prometheus exposition text into MetricSamples (shared with other exposition formats).

    Raises:
        ParseError: naming path and the first malformed line.
    """
    result: list[MetricSample] = []
    # prometheus_client appends "_total" to counter samples that lack it (DCGM counters such as
    # DCGM_FI_DEV_ECC_DBE_VOL_TOTAL do); names are reported as the exporter printed them.
    printed = {_NAME.match(line).group(0) for line in text.splitlines() if _NAME.match(line)}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                value = float(sample.value)
                if value >= DCGM_BLANK_MIN:
                    continue
                labels = dict(sample.labels)
                ts = sample.timestamp
                name = sample.name
                if name not in printed and name.endswith("_total") and name[: -len("_total")] in printed:
                    name = name[: -len("_total")]
                result.append(
                    MetricSample(
                        name=name,
                        labels=labels,
                        value=value,
                        timestamp_s=float(ts) if ts is not None else None,
                        node=labels.get("Hostname") or node or instance_host(labels.get("instance")),
                        gpu=labels.get("gpu"),
                    )
                )
    except ValueError as e:
        line, content = _bad_line(text)
        reason = f"invalid exposition line: {content[:120]!r}" if content else f"invalid exposition text: {str(e)[:120]}"
        raise ParseError(path, line, reason) from None
    return result


def parse_dcgm_prometheus_text(text: str, *, path: str, node: str | None = None,
                               families: Collection[str] | None = DCGM_CHECKED_FIELDS) -> list[MetricSample]:
    """Parse dcgm-exporter ``/metrics`` text (format dcgm-prometheus-text).

    Args:
        text: the exposition text.
        path: snapshot-relative path, for errors.
        node: the manifest's node, used when a sample has no ``Hostname`` label.
        families: the metric names to read (as printed); None reads every family.

    Returns one MetricSample per sample line of those families, in file order; ``node`` is the
    ``Hostname`` label, else the ``node`` argument, else the host of an ``instance`` label; ``gpu``
    is the GPU index label; ``timestamp_s`` is set only when the line carries a timestamp (s).
    DCGM "blank" sentinel values (not supported / no data) are dropped. Samples of one GPU share
    one ``labels`` dict (read-only).

    Raises:
        ParseError: naming path and line when a line that is read is not valid exposition text,
            when the file is cut off mid-line, or when no wanted family is found and the text is
            not valid exposition text at all. With ``families`` set, a malformed line of another
            family in the middle of the page is not read and so not reported.
    """
    if families is None:
        return samples_from_exposition(text, path=path, node=node)
    wanted = frozenset(families)
    found = wanted_samples(text, path=path, node=node, wanted=wanted)
    if not found:  # nothing recognised: read it all, so that garbage raises (and odd layouts still parse)
        found = [s for s in samples_from_exposition(text, path=path, node=node) if s.name in wanted]
    return found


def parse_dcgm_prometheus_blocks(text: str, *, path: str, node: str | None = None,
                                 families: Collection[str] | None = DCGM_CHECKED_FIELDS
                                 ) -> list[SampleBlock] | list[MetricSample]:
    """What ``parse_dcgm_prometheus_text`` reads, as columns where it can: one SampleBlock per family block of a
    page of the usual shape (their ``samples()``, in order, are exactly that function's result), else its
    MetricSamples (an unusual page, a page with no wanted sample, ``families=None``). Used by build_facts, so
    that a cluster's pages cost no object per sample.

    Raises:
        ParseError: as ``parse_dcgm_prometheus_text``.
    """
    if families is not None:
        blocks = plain_page_blocks(text, node, frozenset(families))
        if blocks:
            return blocks
    return parse_dcgm_prometheus_text(text, path=path, node=node, families=families)
