"""Cluster text shown escaped; commands quoted so that bash runs exactly the planned argv."""

from __future__ import annotations

import subprocess

import pytest

from agent.render.safe import clean, clean_line, shell_command, shell_quote

HOSTILE = {
    "csi-colour": "job \x1b[31mred\x1b[0m",
    "osc-title": "name\x1b]0;pwned\x07",
    "osc-8-link": "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "bidi-override": "gpu017\u202e710upg",
    "bidi-isolate": "a\u2066b\u2069c",
    "zero-width": "gpu\u200b017\u200d\ufeff",
    "c1-csi": "x\x9b31my",
    "tag-chars": "ok\U000e0041\U000e0042",
    "carriage-return": "ok\rFAKE",
    "backspace": "secret\x08\x08\x08\x08\x08\x08",
    "line-separator": "a\u2028b",
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_nothing_a_terminal_acts_on_survives(case: str):
    shown = clean_line(HOSTILE[case])
    assert shown.isprintable(), repr(shown)
    assert "\\x" in shown or "\\u" in shown or "\\U" in shown  # shown escaped, not dropped


def test_printable_text_is_unchanged_and_newlines_kept_when_asked():
    text = "NVRM: Xid (PCI:0000:9a:00): 79, pid='<unknown>' — GPU has fallen off the bus [/] ✓ 日本"
    assert clean(text) == text == clean_line(text)
    assert clean("a\nb") == "a\nb" and clean_line("a\nb") == "a\\nb"
    assert clean("a\tb") == "a b"


ARGVS = [
    ["scontrol", "update", "NodeName=gpu007", "State=DRAIN", "Reason=warden: GPU hardware fault (Xid 79)"],
    ["echo", "it's", "$HOME", "`id`", "a;b", "a|b", "*", "!!", ""],
    ["echo", "multi\nline", "tab\there", "esc\x1b[31m", "bidi\u202eevil", "zw\u200bsp", "quote'\\back"],
    ["sbatch", "--export=ALL,WARDEN_RESUME_FROM=/lustre/a b/ckpt", "x.sbatch"],
]


@pytest.mark.parametrize("argv", ARGVS, ids=range(len(ARGVS)))
def test_a_pasted_command_runs_exactly_the_argv(argv: list[str]):
    line = shell_command(argv)
    assert "\n" not in line and line.isprintable()  # one line, nothing a terminal would act on
    out = subprocess.run(["bash", "-c", "printf '%s\\0' " + line], capture_output=True, check=True).stdout
    assert out.decode("utf-8").split("\0")[:-1] == argv


def test_interactive_bash_does_not_expand_history_in_a_quoted_argument():
    line = "printf '%s\\0' " + shell_command(["a!b", "esc\x1b!x"])
    out = subprocess.run(["bash", "-i", "-c", line], capture_output=True, stdin=subprocess.DEVNULL).stdout
    assert out.decode().split("\0")[:-1] == ["a!b", "esc\x1b!x"]


def test_plain_arguments_keep_the_usual_quoting():
    assert shell_quote("gpu007") == "gpu007"
    assert shell_quote("Reason=warden: x (Xid 79)") == "'Reason=warden: x (Xid 79)'"
