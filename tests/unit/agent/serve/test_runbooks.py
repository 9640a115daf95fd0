"""Runbook files: validated with pydantic, every error naming the file and the field; the bundled
examples load; matching, node labels and the question template."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.runbooks.model import bundled_dir, load_runbook, load_runbooks
from tools.errors import ConfigError

GOOD = """name: gpu
match: {alertname: WardenGpuXid}
question: "Xid on $nodes"
post: [{file: x.jsonl}]
"""


@pytest.mark.parametrize("text, where", [
    ("name: Bad Name\nmatch: {a: b}\nquestion: q\npost: [{file: x}]\n", "name"),
    (GOOD.replace("post: [{file: x.jsonl}]", "post: []"), "post"),
    (GOOD.replace("{file: x.jsonl}", "{file: x.jsonl, slack: C0ONCALL}"), "post.0"),
    (GOOD.replace("{file: x.jsonl}", "{slack: 'not a channel'}"), "post.0.slack"),
    (GOOD + "autonomy: yolo\n", "autonomy"),
    (GOOD + "read: [slurm, tea_leaves]\n", "read.1"),
    (GOOD + "match_re: {severity: '('}\n", "match_re"),
    (GOOD.replace("$nodes", "$hostname"), "unknown field $hostname"),
    (GOOD + "surprise: 1\n", "surprise"),
    ("match: {a: b}\nquestion: q\npost: [{file: x}]\n", "name"),
    ("- a list\n", "a YAML mapping"),
    ("name: [unclosed\n", "cannot read runbook"),
])
def test_errors_name_the_file_and_field(tmp_path: Path, text: str, where: str):
    p = tmp_path / "rb.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_runbook(p)
    assert str(p) in str(e.value) and where in str(e.value)


def test_bundled_examples_load_and_home_overrides_them(tmp_path: Path):
    bundled = load_runbooks([bundled_dir()])
    assert {"gpu-xid", "node-down", "mdt-ops"} <= {rb.name for rb in bundled}
    (tmp_path / "mine.yaml").write_text(GOOD.replace("name: gpu", "name: gpu-xid"))
    both = load_runbooks([tmp_path, bundled_dir()])
    assert next(rb for rb in both if rb.name == "gpu-xid").source == tmp_path / "mine.yaml"


def test_matching_nodes_and_question(tmp_path: Path):
    p = tmp_path / "rb.yaml"
    p.write_text(GOOD + "match_re: {severity: 'page|critical'}\n")
    rb = load_runbook(p)
    assert rb.matches({"alertname": "WardenGpuXid", "severity": "page"})
    assert not rb.matches({"alertname": "WardenGpuXid", "severity": "pager"})  # full match, not search
    assert not rb.matches({"alertname": "Other", "severity": "page"})
    assert rb.node_of({"instance": "gpu01:9400"}) == "gpu01" and rb.node_of({"node": "gpu02"}) == "gpu02"
    q = rb.question_for(["gpu01", "gpu\x1b[2J02"], "WardenGpuXid", {}, "", 2)
    assert q == "Xid on gpu01, gpu\\x1b[2J02"
