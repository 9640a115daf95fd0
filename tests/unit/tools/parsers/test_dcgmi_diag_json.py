"""dcgmi-diag-json: `dcgmi diag -r N -j` output of DCGM 2.x/3.x and 4.x (fixtures: tests/fixtures/dcgmi-diag-json)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.errors import ParseError
from tools.parsers import parse_artifact
from tools.parsers.gpu.dcgmi_diag_json import parse_dcgmi_diag_json
from tools.sources.base import RawArtifact

FIX = Path(__file__).parents[3] / "fixtures" / "dcgmi-diag-json"


def parse(name: str):
    return parse_dcgmi_diag_json((FIX / name).read_text(), path=name, node="gpu02")[0]


def test_passing_level2_run():
    r = parse("3.3-level2-pass.json")
    assert r.passed and r.failures == [] and r.dcgm_version == "3.3.5" and r.driver_version == "535.104.05"
    assert {x.test for x in r.results} >= {"Denylist", "PCIe", "GPU Memory"}
    assert sorted({x.gpu for x in r.results if x.test == "PCIe"}) == [0, 1, 2, 3]


def test_failing_gpu_is_named_with_its_warning_and_error_id():
    r = parse("3.3-level2-fail-gpu2.json")
    assert not r.passed
    mem = [f for f in r.failures if f.test == "GPU Memory"]
    assert [f.gpu for f in mem] == [2] and mem[0].error_ids == [22] and "illegal memory access" in mem[0].warnings[0]
    assert any(f.test == "Page Retirement/Row Remap" and f.gpu is None for f in r.failures)


def test_dcgm_2_plain_string_warnings_and_dcgm_4_entity_shape():
    old = parse("2.4-level1-warning-strings.json")
    assert [(f.test, f.gpu) for f in old.failures] == [("PCIe", 1)] and "x8" in old.failures[0].warnings[0]
    new = parse("4.1-level2-fail-gpu1.json")
    assert new.dcgm_version == "4.1.1" and [(f.test, f.gpu) for f in new.failures] == [("memory", 1)]


def test_registered_format_id():
    art = RawArtifact(format="dcgmi-diag-json", data=(FIX / "3.3-level2-pass.json").read_bytes(), path="gpu/x.json",
                      node="gpu02")
    (r,) = parse_artifact(art)
    assert r.node == "gpu02" and r.passed


@pytest.mark.parametrize("name,why", [("empty.json", "empty"), ("3.3-truncated.json", "not JSON"),
                                      ("non-utf8.json", "not UTF-8")])
def test_bad_input_is_a_parse_error_naming_the_file(name, why):
    with pytest.raises(ParseError, match=why) as e:
        parse_artifact(RawArtifact(format="dcgmi-diag-json", data=(FIX / name).read_bytes(), path=name))
    assert e.value.path == name


def test_wrong_shapes_refused():
    for text in ('[]', '{"other": 1}', '{"DCGM GPU Diagnostic": {"test_categories": [{"tests": [{"results": [{}]}]}]}}',
                 '[' * 5000):
        with pytest.raises(ParseError):
            parse_dcgmi_diag_json(text, path="x")
