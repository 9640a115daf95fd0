"""Reading Prometheus exposition text fast, for the families a caller names (used by dcgm-prometheus-text).

A dcgm-exporter page holds some 27 families x 8 GPUs; Warden's checks read about a dozen of them,
and a 10,000-node cluster has 10,000 pages. So the text is not split into lines: it is cut at its
comment lines (``# HELP`` / ``# TYPE``, found with ``str.find``) into blocks of sample lines, and a
block whose first and last lines are of a family no one asked for is skipped whole (the
exposition format keeps each family's samples together, so such a block holds only that family).
Only the lines of the wanted families are read, each with a few ``str`` operations; each GPU's
label set is read once per page (every family repeats it) and shared by that GPU's samples.

Any line this fast path does not take as plain ``name{label="value",...} value [timestamp]``
(escaped quotes, odd spacing, a bad value) goes to prometheus_client's parser, line by line, so
what is accepted and what raises is what prometheus_client decides.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from prometheus_client.parser import text_string_to_metric_families

from tools.errors import ParseError
from tools.models.gpu import MetricSample
from tools.models.gpu_columns import SampleBlock, SeriesKey, make_sample

__all__ = ["wanted_samples", "plain_page_blocks", "cut_at_comments", "line_samples", "bad_line_error", "sample", "instance_host", "DCGM_BLANK_MIN"]

DCGM_BLANK_MIN = 9223372036854775792.0
"""DCGM reports "no value / not supported" as int64 sentinels at or above 0x7ffffffffffffff0."""

_LABELS = re.compile(r'[A-Za-z_][A-Za-z0-9_]*="[^"\\\n]*"(?:,[A-Za-z_][A-Za-z0-9_]*="[^"\\\n]*")*,?')
_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_PAIR = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="([^"\\\n]*)"')
_FIELDS = frozenset(MetricSample.model_fields)
_new = object.__new__
_set = object.__setattr__


sample = make_sample
"""A MetricSample from values already typed by the parser (no validation, no copy of ``labels``, which the samples
of one GPU share; nothing may mutate it): the columns' own constructor."""


def instance_host(instance: str | None) -> str | None:
    """Host part of a Prometheus ``instance`` label (``gpu017:9400`` -> ``gpu017``)."""
    if not instance:
        return None
    if instance.startswith("["):  # [ipv6]:port
        return instance[1:].split("]", 1)[0] or None
    return instance.rsplit(":", 1)[0] if instance.count(":") == 1 else instance


def _host(labels: dict[str, str], node: str | None) -> str | None:
    return labels.get("Hostname") or node or instance_host(labels.get("instance"))


def bad_line_error(text: str, offset: int, *, path: str) -> ParseError:
    """The ParseError for the malformed line starting at ``offset`` (its number and content)."""
    end = text.find("\n", offset)
    content = text[offset:] if end < 0 else text[offset:end]
    return ParseError(path, text.count("\n", 0, offset) + 1, f"invalid exposition line: {content[:120]!r}")


def line_samples(line: str, *, text: str, offset: int, path: str, node: str | None) -> list[MetricSample]:
    """One sample line through prometheus_client (the slow, strict path).

    Raises:
        ParseError: naming the line when prometheus_client rejects it.
    """
    out: list[MetricSample] = []
    try:
        for family in text_string_to_metric_families(line + "\n"):
            for s in family.samples:
                value = float(s.value)
                if value >= DCGM_BLANK_MIN:
                    continue
                labels = dict(s.labels)
                out.append(MetricSample(name=s.name, labels=labels, value=value,
                                        timestamp_s=float(s.timestamp) if s.timestamp is not None else None,
                                        node=_host(labels, node), gpu=labels.get("gpu")))
    except ValueError:
        raise bad_line_error(text, offset, path=path) from None
    return out


class _Reader:
    """State of one page: label sets seen, samples found."""

    def __init__(self, text: str, path: str, node: str | None, wanted: Collection[str]) -> None:
        self.text, self.path, self.node, self.wanted = text, path, node, wanted
        self.labels: dict[str, tuple[dict[str, str], str | None, str | None]] = {}
        self.out: list[MetricSample] = []

    def line(self, line: str, offset: int) -> None:
        brace = line.find("{")
        if brace > 0:
            name = line[:brace]
            if name not in self.wanted:
                if not _NAME.fullmatch(name):
                    self._strict(line, offset)
                return  # another family's line inside a block (no comment between them)
            close = line.rfind("}")
            if close < brace:
                self._strict(line, offset)
                return
            label_text, rest = line[brace + 1:close], line[close + 1:]
        else:
            name, _, tail = line.partition(" ")
            if name not in self.wanted:
                if name.strip() and not _NAME.fullmatch(name):
                    self._strict(line, offset)
                return
            label_text, rest = "", " " + tail
        known = self.labels.get(label_text)
        if known is None:
            if label_text and not _LABELS.fullmatch(label_text):
                self._strict(line, offset)
                return
            labels = dict(_PAIR.findall(label_text))
            known = self.labels[label_text] = (labels, _host(labels, self.node), labels.get("gpu"))
        parts = rest.split(" ")
        try:
            if parts[0] or len(parts) not in (2, 3):
                raise ValueError("spacing")
            value = float(parts[1])
            ts = float(int(parts[2])) / 1000 if len(parts) == 3 else None
        except ValueError:
            self._strict(line, offset)
            return
        if not value >= DCGM_BLANK_MIN:  # NaN is kept, as prometheus_client keeps it
            self.out.append(sample(name, known[0], value, ts, known[1], known[2]))

    def _strict(self, line: str, offset: int) -> None:
        for s in line_samples(line, text=self.text, offset=offset, path=self.path, node=self.node):
            if s.name in self.wanted:
                self.out.append(s)

    def block(self, start: int, end: int) -> None:
        """Sample lines ``text[start:end]`` (no comment lines inside)."""
        text = self.text
        first_end = text.find("\n", start, end)
        first = _name(text[start:end if first_end < 0 else first_end])
        last_start = text.rfind("\n", start, end - 1) + 1
        same = last_start <= start or _name(text[last_start:end].rstrip("\n")) == first
        if same and first not in self.wanted:
            return  # one family, not wanted: its lines are not read
        if same and self._whole(first, start, end):
            return
        offset = start
        for line in text[start:end].split("\n"):
            if line:
                self.line(line, offset)
            offset += len(line) + 1

    def _whole(self, name: str, start: int, end: int) -> bool:
        """Read a block of ``name`` lines of the plain shape at once (``_plain_block``); False (nothing
        read) when any line is not of that shape, for the line-by-line path to handle."""
        lines = self.text[start:end].split("\n")
        if lines.pop():
            return False  # the page's last line, cut or not: read line by line
        found = _plain_block(name, lines, self.labels, self.node)
        if found is None:
            return False
        self.out += found
        return True


_Labels = dict[str, tuple[dict[str, str], str | None, str | None]]


def _plain_block(name: str, lines: list[str], labels_seen: _Labels, node: str | None) -> list[MetricSample] | None:
    """The samples of ``lines``, all of the plain shape ``name{labels} value``, read with a few ``str``
    operations per line (no regex over the label text); None when any line is not of that shape. Each
    line taken reads as ``_Reader.line`` would read it: the label text ends at the line's last ``}`` and
    the value is one token that ``float`` takes. ``labels_seen`` (label text -> labels, node, gpu) is
    shared by the page's families: every family repeats each GPU's label set."""
    head = name + "{"
    cut = len(head)
    out: list[MetricSample] = []
    new, setattr_, cls, fields = _new, _set, MetricSample, _FIELDS  # sample(), inlined: a million calls at 10k nodes
    try:
        for line in lines:
            labels_part, sep, value_text = line.rpartition("} ")
            if not sep or not labels_part.startswith(head) or " " in value_text or "}" in value_text:
                return None
            label_text = labels_part[cut:]
            known = labels_seen.get(label_text)
            if known is None:
                if label_text and not _LABELS.fullmatch(label_text):
                    return None
                labels = dict(_PAIR.findall(label_text))
                known = labels_seen[label_text] = (labels, _host(labels, node), labels.get("gpu"))
            value = float(value_text)
            if not value >= DCGM_BLANK_MIN:
                m = new(cls)
                setattr_(m, "__dict__", {"name": name, "labels": known[0], "value": value, "timestamp_s": None,
                                         "node": known[1], "gpu": known[2]})
                setattr_(m, "__pydantic_fields_set__", fields)
                setattr_(m, "__pydantic_extra__", None)
                setattr_(m, "__pydantic_private__", None)
                out.append(m)
    except ValueError:
        return None
    return out


_LINE_RX: dict[str, re.Pattern[str]] = {}


def _line_rx(name: str) -> re.Pattern[str]:
    """``name{labels} value`` lines of one family, as ``_plain_block`` takes them: the label text runs to the
    line's last ``} `` (greedy), the value is one token with no blank or ``}``."""
    rx = _LINE_RX.get(name)
    if rx is None:
        rx = _LINE_RX[name] = re.compile("^" + re.escape(name) + r"\{(.*)\} ([^ }\n]+)$", re.MULTILINE)
    return rx


_Keys = dict[tuple[str, ...], tuple[list[SeriesKey], str | None]]


def _block_columns(name: str, body: str, labels_seen: _Labels, keys_seen: _Keys,
                   node: str | None) -> SampleBlock | None | bool:
    """The samples of ``body`` (sample lines of ``name``, no trailing newline) as one SampleBlock, read as
    ``_plain_block`` reads them (the same lines taken, the same values, labels, nodes and GPUs), with one regex
    pass and one ``float`` map per block instead of per-line ``str`` work and an object per sample. None when
    any line is not of the plain shape; False when every sample is a DCGM blank."""
    found = _line_rx(name).findall(body)
    if len(found) != body.count("\n") + 1:
        return None
    texts, value_texts = zip(*found)
    try:
        values = list(map(float, value_texts))
    except ValueError:
        return None
    known = keys_seen.get(texts)
    if known is None:
        series: list[SeriesKey] = []
        for label_text in texts:
            key = labels_seen.get(label_text)
            if key is None:
                if label_text and not _LABELS.fullmatch(label_text):
                    return None
                labels = dict(_PAIR.findall(label_text))
                key = labels_seen[label_text] = (labels, _host(labels, node), labels.get("gpu"))
            series.append(key)
        nodes = {k[1] for k in series}
        known = keys_seen[texts] = (series, next(iter(nodes)) if len(nodes) == 1 else None)
    keys, one_node = known
    top = max(values)  # the largest value but NaNs, or NaN when the first value is NaN (then each is looked at)
    if (top >= DCGM_BLANK_MIN or top != top) and any(v >= DCGM_BLANK_MIN for v in values):  # NaN is kept,
        # as prometheus_client keeps it
        kept = [i for i, v in enumerate(values) if not v >= DCGM_BLANK_MIN]
        if not kept:
            return False
        keys = [keys[i] for i in kept]
        values = [values[i] for i in kept]
        nodes = {k[1] for k in keys}
        one_node = next(iter(nodes)) if len(nodes) == 1 else None
    return SampleBlock(name, keys, values, None, one_node)


def plain_page_blocks(text: str, node: str | None, wanted: Collection[str]) -> list[SampleBlock] | None:
    """A whole page of the usual dcgm-exporter shape read by family into SampleBlocks (one per wanted family
    block, page order): the text cut at its comment lines (``str.split``, no walk over them), a family no one
    asked for skipped whole, a wanted one read by ``_block_columns``. None when anything is unusual (a blank
    line inside a family, two families with no comment between them, a line of another shape, a page not
    ending in a newline): the caller then reads the page with ``_Reader``, which finds exactly these samples
    on a page this function takes."""
    if not text.endswith("\n"):
        return None
    parts = cut_at_comments(text)
    if not text.startswith("#"):
        parts[0] = "\n" + parts[0]  # samples before any comment: a block like the others
    last = len(parts) - 1
    labels_seen: _Labels = {}
    keys_seen: _Keys = {}
    out: list[SampleBlock] = []
    for i, part in enumerate(parts):
        nl = part.find("\n")
        if nl < 0:
            continue  # a comment line followed by another
        end = len(part) - 1 if i == last else len(part)  # the page's final newline
        if end <= nl:
            continue
        first = _family(part, nl, end)
        if first is None:
            first_end = part.find("\n", nl + 1, end)
            first = _name(part[nl + 1:end if first_end < 0 else first_end])
            if not first or (first_end >= 0 and _name(part[part.rfind("\n", 0, end) + 1:end]) != first):
                return None
        if first not in wanted:
            continue  # one family, not wanted: its lines are not read
        block = _block_columns(first, part[nl + 1:end], labels_seen, keys_seen, node)
        if block is None:
            return None
        if block is not False:
            out.append(block)
    return out


def cut_at_comments(text: str) -> list[str]:
    """``text.split("\\n#")``, found with ``str.find("#")`` (memchr: a page has some 54 ``#``, all at comment
    lines) instead of a scan for the two-character separator: 90 -> 32 us per 55 KB dcgm-exporter page."""
    out: list[str] = []
    find = text.find
    start = 0
    at = find("#", 1)
    while at >= 0:
        if text[at - 1] == "\n":
            out.append(text[start:at - 1])
            start = at + 1
        at = find("#", at + 1)
    out.append(text[start:])
    return out


def _family(part: str, nl: int, end: int) -> str | None:
    """The family of the sample lines ``part[nl + 1:end]`` when the comment line before them (``part[:nl]``,
    ``# TYPE name ...`` without its ``#``) names it and their first and last lines both start with that name
    and ``{`` or a blank: what ``_name`` of those two lines gives, without cutting them out. None otherwise
    (the caller then reads both lines' names)."""
    if not part.startswith(" TYPE "):
        return None
    cut = part.find(" ", 6, nl)
    name = part[6:cut if cut >= 0 else nl]
    if not name or "{" in name:
        return None
    n = len(name)
    last = part.rfind("\n", nl, end) + 1
    if (part.startswith(name, nl + 1) and part[nl + 1 + n:nl + 2 + n] in ("{", " ")
            and part.startswith(name, last) and part[last + n:last + n + 1] in ("{", " ")):
        return name
    return None


def _name(line: str) -> str:
    cut = len(line)
    for ch in "{ ":
        i = line.find(ch)
        if 0 <= i < cut:
            cut = i
    return line[:cut]


def wanted_samples(text: str, *, path: str, node: str | None, wanted: Collection[str]) -> list[MetricSample]:
    """Samples of the families in ``wanted`` (names as printed), in page order.

    The last line is always read in full (a page cut short raises), and a page in which no
    wanted sample was found is read in full by prometheus_client (so garbage raises).

    Raises:
        ParseError: naming path and line of a malformed line that is read.
    """
    plain = plain_page_blocks(text, node, wanted)
    if plain is not None:
        return [s for block in plain for s in block.samples()]
    r = _Reader(text, path, node, wanted)
    pos, n = 0, len(text)
    while pos < n:
        if text.startswith("#", pos) or text.startswith("\n", pos):
            nl = text.find("\n", pos)
            pos = n if nl < 0 else nl + 1
            continue
        end = text.find("\n#", pos)
        end = n if end < 0 else end + 1
        r.block(pos, end)
        pos = end
    last = text.rstrip("\n").rfind("\n") + 1
    if not text.endswith("\n") and not text.startswith("#", last) and _name(text[last:]) not in wanted:
        line_samples(text[last:], text=text, offset=last, path=path, node=node)  # a page cut mid-line
    return r.out
