"""Where Facts keep GPU/Prometheus samples: columns per page and family, objects only on demand (performance only).

``build_facts`` adds each dcgm-exporter page as SampleBlocks (tools.models.gpu_columns) and any other
source's samples (Prometheus query results, exposition text of other exporters) as the MetricSample
objects its parser made, in the artifacts' order. Readers get the same samples in the same (file) order
either way: as blocks per metric name (``blocks``, what the GPU checks read), as MetricSamples per name
(``samples``) or all of them (``SampleView``), made from a block once and then shared.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import overload

from tools.models.gpu import MetricSample
from tools.models.gpu_columns import SampleBlock

__all__ = ["SampleStore", "SampleView"]


class SampleStore:
    """Samples in file order, as chunks: a SampleBlock, or a list of MetricSample objects (one artifact's).

    Add to it only while building the facts; the per-name views are built on first use.
    """

    __slots__ = ("_chunks", "_len", "_blocks", "_samples", "_all")

    def __init__(self, samples: Iterable[MetricSample] = ()) -> None:
        self._chunks: list[SampleBlock | list[MetricSample]] = []
        self._len = 0
        self._blocks: dict[str, list[SampleBlock]] | None = None
        self._samples: dict[str, list[MetricSample]] = {}
        self._all: list[MetricSample] | None = None
        self.add_samples(list(samples))

    def add_blocks(self, blocks: list[SampleBlock]) -> None:
        """Append one page's blocks."""
        self._chunks.extend(blocks)
        self._len += sum(len(b.values) for b in blocks)
        self._blocks, self._all = None, None
        self._samples.clear()

    def add_samples(self, samples: list[MetricSample]) -> None:
        """Append one artifact's MetricSample objects."""
        if samples:
            self._chunks.append(samples)
            self._len += len(samples)
            self._blocks, self._all = None, None
            self._samples.clear()

    def __len__(self) -> int:
        return self._len

    def _by_name(self) -> dict[str, list[SampleBlock]]:
        if self._blocks is None:
            out: dict[str, list[SampleBlock]] = {}
            for chunk in self._chunks:
                if isinstance(chunk, SampleBlock):
                    out.setdefault(chunk.name, []).append(chunk)
                    continue
                names: dict[str, list[MetricSample]] = {}
                for s in chunk:
                    names.setdefault(s.name, []).append(s)
                for name, group in names.items():
                    out.setdefault(name, []).append(SampleBlock.of_samples(name, group))
            self._blocks = out
        return self._blocks

    def blocks(self, *names: str) -> list[SampleBlock]:
        """The blocks of these metric names: of one name in file order, of several name by name."""
        by = self._by_name()
        if len(names) == 1:
            return by.get(names[0], [])
        return [b for n in names for b in by.get(n, [])]

    def samples(self, name: str) -> list[MetricSample]:
        """The MetricSamples of one metric name, in file order (made once per block)."""
        found = self._samples.get(name)
        if found is None:
            found = self._samples[name] = [s for b in self.blocks(name) for s in b.samples()]
        return found

    def names(self) -> set[str]:
        """Every metric name present."""
        return set(self._by_name())

    def nodes(self) -> set[str]:
        """Every node a sample is about (samples without a node left out)."""
        out: set[str] = set()
        for chunk in self._chunks:
            if isinstance(chunk, SampleBlock):
                if chunk.node:
                    out.add(chunk.node)
                elif chunk.node is None:
                    out.update(k[1] for k in chunk.keys if k[1])
            else:
                out.update(s.node for s in chunk if s.node)
        return out

    def all(self) -> list[MetricSample]:
        """Every sample as a MetricSample, in file order (made once)."""
        if self._all is None:
            self._all = [s for chunk in self._chunks
                         for s in (chunk.samples() if isinstance(chunk, SampleBlock) else chunk)]
        return self._all


class SampleView(Sequence[MetricSample]):
    """``Facts.gpu_samples``: a read-only sequence of every sample, in file order; its length costs nothing,
    iterating it makes the MetricSamples (once)."""

    __slots__ = ("_store",)

    def __init__(self, store: SampleStore) -> None:
        self._store = store

    def __len__(self) -> int:
        return len(self._store)

    def __iter__(self) -> Iterator[MetricSample]:
        return iter(self._store.all())

    @overload
    def __getitem__(self, i: int) -> MetricSample: ...
    @overload
    def __getitem__(self, i: slice) -> list[MetricSample]: ...
    def __getitem__(self, i: int | slice) -> MetricSample | list[MetricSample]:
        return self._store.all()[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SampleView):
            other = other._store.all()
        return isinstance(other, Sequence) and list(self) == list(other)

    def __repr__(self) -> str:
        return f"SampleView({len(self)} samples)"
