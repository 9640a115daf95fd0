"""parse_sacctmgr_qos_text on real `sacctmgr show qos` captures (Slurm 22.05.8) in its three shapes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.errors import ParseError
from tools.parsers import parse_artifact
from tools.parsers.slurm.sacctmgr_qos_text import parse_sacctmgr_qos_text
from tools.sources.base import RawArtifact

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "sacctmgr-qos-text"


@pytest.mark.parametrize("name", ["22.05-parsable2.txt", "22.05-parsable.txt"])
def test_parsable_shapes_read_every_limit(name: str) -> None:
    by = {q.name: q for q in parse_sacctmgr_qos_text((FIXTURES / name).read_text(), path=name)}
    assert set(by) == {"normal", "gpu8", "long"}
    gpu8, long = by["gpu8"], by["long"]
    assert (gpu8.priority, gpu8.flags, gpu8.max_tres_per_job, gpu8.max_tres_per_user) == (
        100, ["DenyOnLimit"], {"node": "8"}, {"gres/gpu": "64"})
    assert (gpu8.max_jobs_per_user, gpu8.max_wall_s) == (4, 2 * 86400)
    assert (long.max_tres_per_job, long.grp_tres, long.max_wall_s, long.truncated) == (
        {"cpu": "512", "node": "4"}, {"node": "16"}, 7 * 86400, [])
    assert by["normal"].max_tres_per_job == {} and by["normal"].max_wall_s is None


@pytest.mark.parametrize("name", ["22.05-default.txt", "22.05-format-columns.txt"])
def test_the_fixed_width_table_marks_cut_values_unknown(name: str) -> None:
    by = {q.name: q for q in parse_sacctmgr_qos_text((FIXTURES / name).read_text(), path=name)}
    assert by["gpu8"].max_tres_per_job == {"node": "8"} and by["gpu8"].max_wall_s == 172800
    assert by["long"].max_tres_per_job == {} and by["long"].truncated == ["MaxTRES"]  # "cpu=512,node+"


def test_headerless_and_bad_values_are_named_errors() -> None:
    with pytest.raises(ParseError, match="sacctmgr -n"):
        parse_sacctmgr_qos_text("    normal          0 \n      gpu8        100 \n", path="slurm/qos.txt")
    with pytest.raises(ParseError, match=r"qos.txt:2: column MaxWall"):
        parse_sacctmgr_qos_text("Name|MaxWall\ngpu8|soon\n", path="slurm/qos.txt")
    with pytest.raises(ParseError, match="no Name column"):
        parse_sacctmgr_qos_text("Priority|MaxWall\n10|1:00:00\n", path="slurm/qos.txt")
    assert parse_sacctmgr_qos_text("", path="slurm/qos.txt") == []


def test_a_database_error_is_a_client_error_not_a_parse_failure() -> None:
    text = "sacctmgr: error: Problem talking to the database: Connection refused\n"
    (rec,) = parse_artifact(RawArtifact(format="sacctmgr-qos-text", data=text.encode(), path="slurm/qos.txt"))
    assert type(rec).__name__ == "SlurmClientError" and "Connection refused" in rec.message
