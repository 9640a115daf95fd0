"""Gateway config: TOML and YAML files, validation errors naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.budgets import hash_key
from gateway.config import BUILTIN_MODEL, default_config, load_config
from gateway.errors import ConfigError

TOML = f"""
[[providers]]
name = "local-vllm"
kind = "openai_compat"
openai_base_url = "http://127.0.0.1:8000/v1"
openai_model = "Qwen/Qwen2.5-7B-Instruct"
openai_timeout_s = 30
openai_api_key_env = "VLLM_KEY"

[[providers]]
name = "builtin"
kind = "builtin"

[routes]
"warden-default" = ["local-vllm", "builtin"]

[prices."Qwen/Qwen2.5-7B-Instruct"]
input_usd_per_mtok = 0.2
output_usd_per_mtok = 0.6

[[teams]]
name = "ml"
cost_per_day_usd = 5.0

[[keys]]
name = "alice"
team = "ml"
key_sha256 = "{hash_key('sk-warden-alice')}"
rpm = 60

[redaction]
extra_patterns = [{{name = "ticket", pattern = "INC-[0-9]+"}}]
"""


def test_load_toml(tmp_path):
    path = tmp_path / "gateway.toml"
    path.write_text(TOML)
    cfg = load_config(path)
    assert cfg.routes == {"warden-default": ["local-vllm", "builtin"]}
    assert cfg.providers[0].openai_timeout_s == 30 and cfg.keys[0].rpm == 60
    assert cfg.prices["Qwen/Qwen2.5-7B-Instruct"].output_usd_per_mtok == 0.6
    assert cfg.redaction.extra_patterns[0].name == "ticket"


def test_load_yaml(tmp_path):
    path = tmp_path / "gateway.yaml"
    path.write_text(
        "providers:\n  - {name: ollama, kind: openai_compat, openai_base_url: 'http://127.0.0.1:11434/v1'}\n"
        "routes: {llama: [ollama]}\nrun_cost_cap_usd: 0.5\n"
    )
    cfg = load_config(path)
    assert cfg.routes == {"llama": ["ollama"]} and cfg.run_cost_cap_usd == 0.5


def test_default_config_serves_the_builtin_model():
    cfg = default_config()
    assert cfg.routes == {BUILTIN_MODEL: ["builtin"]} and cfg.providers[0].kind == "builtin"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('[routes]\nm = ["ghost"]\n', "unknown providers ['ghost']"),
        ('[[keys]]\nname = "a"\nkey_sha256 = "plaintext-key"\n', "64 lowercase hex"),
        ('[redaction]\nextra_patterns = [{name = "x", pattern = "("}]\n', "invalid regular expression"),
        ('[[providers]]\nname = "p"\nkind = "openai_compat"\nopenai_base_url = "http://x/v1"\nbogus = 1\n',
         "bogus"),
        ("not = [valid toml", "cannot parse"),
        # an infinite price validated and then made every cost infinite (issue 15 item 11)
        ('[prices."m"]\ninput_usd_per_mtok = inf\n', "input_usd_per_mtok"),
        ('[prices."m"]\noutput_usd_per_mtok = nan\n', "output_usd_per_mtok"),
    ],
)
def test_invalid_config_is_a_clear_error(tmp_path, text, needle):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    assert str(path) in str(exc.value) and needle in str(exc.value)


def test_unreadable_or_unknown_suffix(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")
    (tmp_path / "g.ini").write_text("x")
    with pytest.raises(ConfigError, match=".toml, .yaml or .yml"):
        load_config(tmp_path / "g.ini")


def test_shipped_example_config_loads():
    import gateway

    cfg = load_config(Path(gateway.__file__).parent / "examples" / "gateway.toml")
    assert cfg.routes["warden-default"] == ["local-vllm", "ollama", "builtin"]
    assert cfg.run_cost_cap_usd == 2.0 and cfg.keys[0].team == "hpc-ops"
