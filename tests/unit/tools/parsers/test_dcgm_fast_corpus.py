"""The fast DCGM page reader (tools/parsers/gpu/exposition_fast.py) reads what prometheus_client reads: on
every dcgm-exporter page in the project (fixtures, bundled and blind incidents) and on odd shapes, the
default parse equals prometheus_client's full parse restricted to the checked families."""

from __future__ import annotations

import pytest

from tests.unit.tools.parsers._corpus import files_of
from tools.errors import ParseError
from tools.parsers.gpu.dcgm_prometheus_text import DCGM_CHECKED_FIELDS, parse_dcgm_prometheus_text

CORPUS = files_of("dcgm-prometheus-text")


def _same(text: str, path: str = "gpu/g1.prom") -> None:
    try:
        full = parse_dcgm_prometheus_text(text, path=path, node="g1", families=None)
    except ParseError:
        return  # prometheus_client refuses the page; the fast reader may skip the bad line of another family
    fast = parse_dcgm_prometheus_text(text, path=path, node="g1")
    assert repr([s.model_dump() for s in fast]) == repr([s.model_dump() for s in full if s.name in DCGM_CHECKED_FIELDS])


def test_corpus_holds_the_projects_pages() -> None:
    assert len(CORPUS) >= 60


@pytest.mark.parametrize("path,text", CORPUS, ids=[p for p, _ in CORPUS])
def test_corpus_pages_read_like_prometheus_client(path: str, text: str) -> None:
    _same(text, path)


_L = 'gpu="{g}",UUID="GPU-{g}",Hostname="g1"'
ODD = {
    "brace_inside_a_label_value": '# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{gpu="0",x="a} b"} 5\n'
                                  'DCGM_FI_DEV_GPU_UTIL{gpu="1",x="{"} 6\n',
    "timestamps": "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" + "".join(
        f"DCGM_FI_DEV_GPU_TEMP{{{_L.format(g=g)}}} 40 17726181000{g}\n" for g in range(3)),
    "crlf": "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\r\n" + "".join(
        f"DCGM_FI_DEV_GPU_TEMP{{{_L.format(g=g)}}} 4{g}\r\n" for g in range(3)),
    "blank_line_inside_block": "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" + f"DCGM_FI_DEV_GPU_TEMP{{{_L.format(g=0)}}} 40\n\n"
                               + f"DCGM_FI_DEV_GPU_TEMP{{{_L.format(g=1)}}} 41\n",
    "no_trailing_newline": "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" + f"DCGM_FI_DEV_GPU_TEMP{{{_L.format(g=0)}}} 40\n"
                           + f"DCGM_FI_DEV_GPU_TEMP{{{_L.format(g=1)}}} 41",
    "two_families_without_comment": f"DCGM_FI_DEV_GPU_TEMP{{{_L.format(g=0)}}} 40\n"
                                    f"DCGM_FI_DEV_SM_CLOCK{{{_L.format(g=0)}}} 1400\nDCGM_FI_DEV_FOO{{{_L.format(g=0)}}} 1\n",
    "no_labels_and_spacing": "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\nDCGM_FI_DEV_GPU_TEMP 40\nDCGM_FI_DEV_GPU_TEMP{} 41\n"
                             f"DCGM_FI_DEV_GPU_TEMP{{{_L.format(g=2)}}}  42\n",
    "special_values": "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" + "".join(
        f"DCGM_FI_DEV_GPU_TEMP{{{_L.format(g=g)}}} {v}\n" for g, v in enumerate(["NaN", "+Inf", "-1e3", "9223372036854775794"])),
    "escaped_quote": '# TYPE DCGM_FI_DEV_GPU_TEMP gauge\nDCGM_FI_DEV_GPU_TEMP{gpu="0",m="a \\"b\\""} 40\n',
    "trailing_comma": '# TYPE DCGM_FI_DEV_GPU_TEMP gauge\nDCGM_FI_DEV_GPU_TEMP{gpu="0",} 40\n',
    # The TYPE comment names the family only when the block's first and last lines agree with it.
    "type_of_unwanted_over_wanted_lines": "# TYPE DCGM_FI_DEV_FOO gauge\n" + "".join(
        f"DCGM_FI_DEV_GPU_TEMP{{{_L.format(g=g)}}} 4{g}\n" for g in range(2)),
    "type_of_wanted_over_mixed_lines": "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" + f"DCGM_FI_DEV_FOO{{{_L.format(g=0)}}} 1\n"
                                       + f"DCGM_FI_DEV_GPU_TEMP{{{_L.format(g=0)}}} 40\n",
    "type_name_a_prefix_of_the_lines": "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" + "".join(
        f"DCGM_FI_DEV_GPU_TEMPX{{{_L.format(g=g)}}} 4{g}\n" for g in range(2)) + "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"
                                       + f"DCGM_FI_DEV_SM_CLOCK {1400}\n",
}


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_shapes_read_like_prometheus_client(name: str) -> None:
    _same(ODD[name])


def test_cut_at_comments_is_split_at_newline_hash() -> None:
    from tools.parsers.gpu.exposition_fast import cut_at_comments
    odd = ["", "#", "\n", "\n#", "#\n#", "##\n##\n", "\n\n##", "a#b\n#c", "x{l=\"#\"} 1\n# HELP y\n", "#a\n#b\n#", "\n#\n#\n#"]
    for text in [t for _, t in CORPUS] + odd:
        assert cut_at_comments(text) == text.split("\n#"), text[:60]
