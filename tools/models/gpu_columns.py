"""GPU samples as columns: one metric family of one page without an object per sample (performance only).

A 10,000-node cluster's dcgm-exporter pages hold about 1.2 million samples of the families Warden reads.
As MetricSample objects they were a fifth of a diagnosis's CPU time and a third of its memory; as a
``SampleBlock`` per page and family they are a list of floats and a list of shared label tuples (a page
has one label set per GPU, repeated by every family). Checks read blocks through
``Facts.sample_blocks`` (per-node sums and maxima with no Python work per sample where a block is one
node's); anything that asks for MetricSample objects (``Facts.samples``, ``Facts.gpu_samples``) gets
them made from the block once, on first use, equal to what the page parser returns.
"""

from __future__ import annotations

from collections.abc import Sequence

from tools.models.gpu import MetricSample

__all__ = ["SampleBlock", "SeriesKey", "make_sample"]

SeriesKey = tuple[dict[str, str], str | None, str | None]
"""One series' (labels, node, gpu): the labels dict is shared by every sample of that GPU on the page
(read-only), node and gpu as MetricSample has them."""

_FIELDS = frozenset(MetricSample.model_fields)
_new = object.__new__
_set = object.__setattr__


def make_sample(name: str, labels: dict[str, str], value: float, ts: float | None, node: str | None,
                gpu: str | None) -> MetricSample:
    """A MetricSample from values already typed (no validation, no copy of ``labels``)."""
    m = _new(MetricSample)
    _set(m, "__dict__", {"name": name, "labels": labels, "value": value, "timestamp_s": ts, "node": node, "gpu": gpu})
    _set(m, "__pydantic_fields_set__", _FIELDS)
    _set(m, "__pydantic_extra__", None)
    _set(m, "__pydantic_private__", None)
    return m


class SampleBlock:
    """Samples of one metric ``name``, in file order: ``values[i]`` of series ``keys[i]``.

    ``node`` is every sample's node when they share one (a dcgm-exporter page's family), else None.
    ``times`` is None when no sample carries a timestamp, else one (seconds or None) per sample.
    A block is read-only once made; ``samples()`` builds its MetricSamples once (or returns the
    objects it was made from, ``of_samples``).
    """

    __slots__ = ("name", "keys", "values", "times", "node", "_objects")

    def __init__(self, name: str, keys: Sequence[SeriesKey], values: list[float],
                 times: list[float | None] | None = None, node: str | None = None,
                 objects: list[MetricSample] | None = None) -> None:
        self.name = name
        self.keys = keys
        self.values = values
        self.times = times
        self.node = node
        self._objects = objects

    @classmethod
    def of_samples(cls, name: str, samples: list[MetricSample]) -> SampleBlock:
        """A block over existing MetricSample objects of ``name`` (its ``samples()`` returns them)."""
        keys = [(s.labels, s.node, s.gpu) for s in samples]
        times = [s.timestamp_s for s in samples]
        nodes = {k[1] for k in keys}
        return cls(name, keys, [s.value for s in samples], times if any(t is not None for t in times) else None,
                   next(iter(nodes)) if len(nodes) == 1 else None, samples)

    def __len__(self) -> int:
        return len(self.values)

    def samples(self) -> list[MetricSample]:
        """The block's samples as MetricSample objects (made once; the same objects on every call)."""
        if self._objects is None:
            name, times = self.name, self.times
            self._objects = [make_sample(name, k[0], v, times[i] if times is not None else None, k[1], k[2])
                             for i, (k, v) in enumerate(zip(self.keys, self.values))]
        return self._objects

    def nodes(self) -> list[str | None]:
        """Each sample's node."""
        if self.node is not None:
            return [self.node] * len(self.values)
        return [k[1] for k in self.keys]

    def __reduce__(self) -> tuple:  # picklable without its materialised objects
        return (SampleBlock, (self.name, list(self.keys), self.values, self.times, self.node, self._objects))

    def __repr__(self) -> str:
        return f"SampleBlock({self.name!r}, {len(self.values)} samples, node={self.node!r})"
