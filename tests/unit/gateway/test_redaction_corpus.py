"""Redaction corpus: secrets and personal details of the kinds a GPU cluster's text carries (job
logs, scontrol output, environment dumps, URLs) never reach an OpenAI-compatible upstream — a real
loopback server that records every body — while the built-in provider sees the original text.

End to end, the agent itself runs over a real incident snapshot whose job log leaks secrets, with an
LLM route to the loopback upstream acting as the model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gateway.config import GatewayConfig
from gateway.redaction import Redactor, user_name_patterns
from gateway.testing import StubReply, StubUpstream, asgi_post, chat, provider_entry, serve_in_thread

REPO = Path(__file__).resolve().parents[3]
USERS = ["alice", "frank.m", "o'neil"]

# kind -> (text as it appears on a cluster, substrings that must never leave)
CORPUS: dict[str, tuple[str, list[str]]] = {
    "aws_access_key_id": ("export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", ["AKIAIOSFODNN7EXAMPLE"]),
    "aws_session_key": ("credentials ASIAY34FZKBOKMUTVV7A expire", ["ASIAY34FZKBOKMUTVV7A"]),
    "aws_secret_env": ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ["wJalrXUtnFEMI"]),
    "aws_secret_ini": ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ["wJalrXUtnFEMI"]),
    "aws_secret_json": ('{"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}', ["wJalrXUtnFEMI"]),
    "github_classic": ("git clone https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/o/r",
                       ["ghp_16C7e42F292c6912E7710c838347Ae178B4a"]),
    "github_fine_grained": ("GITHUB_TOKEN=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789AB",
                            ["github_pat_11ABCDEFG"]),
    "github_app": ("installation token ghs_16C7e42F292c6912E7710c838347Ae178B4a", ["ghs_16C7e42F292c"]),
    "gitlab": ("CI_JOB_TOKEN glpat-xxxxxxxxxxxxxxxxxxxx used", ["glpat-xxxxxxxxxxxx"]),
    "slack_bot": ("SLACK_BOT=xoxb-2154537752-3875329883463-AbCdEfGhIjKlMnOpQrStUvWx", ["xoxb-2154537752"]),
    "slack_user": ("xoxp-2154537752-2154537753-3875329883463-0123456789abcdef", ["xoxp-2154537752"]),
    "slack_app": ("app token xapp-1-A0123ABCD-1234567890123-0123456789abcdef0123456789", ["xapp-1-A0123ABCD"]),
    "slack_webhook": ("curl -X POST https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
                      ["T00000000/B00000000"]),
    "bearer": ("curl -H 'Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0' http://ctl:6820/slurm/v0.0.40/jobs",
               ["9f8e7d6c5b4a3928"]),
    "basic_auth": ("Authorization: Basic YWxpY2U6aHVudGVyMg==", ["YWxpY2U6aHVudGVyMg"]),
    "url_password_mysql": ("StorageLoc=mysql://slurm:S3cr3tPassw0rd@dbd01:3306/slurm_acct_db", ["S3cr3tPassw0rd"]),
    "url_password_https": ("pushing to https://admin:hunter2@grafana.example.org/d/abc", ["hunter2"]),
    "kv_password": ("db password=hunter2-Secret!", ["hunter2-Secret"]),
    "kv_storagepass": ("StoragePass=slurmdbdpass123", ["slurmdbdpass123"]),
    "kv_pgpassword_quoted": ("PGPASSWORD='p@ss w0rd!' psql -h db", ["p@ss w0rd"]),
    "kv_password_yaml": ("password: 'Tr0ub4dor&3'", ["Tr0ub4dor"]),
    "kv_mysql_pwd": ("MYSQL_PWD=9xYz8wVu7t mysql -u slurm", ["9xYz8wVu7t"]),
    "kv_passphrase": ("ssh-keygen passphrase=correct-horse-battery-staple", ["correct-horse-battery"]),
    "kv_api_key": ("WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567", ["0123456789abcdef0123"]),
    "hf_token": ("huggingface-cli login --token hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", ["hf_AbCdEfGhIjKl"]),
    "openai_key": ("OPENAI_API_KEY is sk-proj-AbCdEf0123456789GhIjKlMnOpQrSt", ["sk-proj-AbCdEf01"]),
    "google_api_key": ("key=AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", ["AIzaSyD-9tSrke72"]),
    "npm_token": ("//registry.npmjs.org/:_authToken=npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", ["npm_AbCdEfGh"]),
    "private_key_rsa": ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2Bx\n"
                        "-----END RSA PRIVATE KEY-----", ["MIIEpAIBAAKCAQEA3Tz2"]),
    "private_key_openssh": ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
                            "-----END OPENSSH PRIVATE KEY-----", ["b3BlbnNzaC1rZXktdjE"]),
    "private_key_pgp": ("-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF0Mx8YBCADJ3kKv7kQ9fZQ\n"
                        "-----END PGP PRIVATE KEY BLOCK-----", ["lQOYBF0Mx8YBCADJ3"]),
    "private_key_truncated": ("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTB", ["MHcCAQEEIBkg4LVW"]),
    "jwt": ("token eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV",
            ["SflKxwRJSMeKKF2QT4fw"]),
    "slurm_jwt": ("SLURM_JWT=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjE3MzI4ODAwMDAsInN1biI6ImFsaWNlIn0.Zm9vYmFyYmF6cXV4",
                  ["Zm9vYmFyYmF6cXV4", "eyJleHAiOjE3MzI4ODAw"]),
    # issue 15 item 8: quoted values, JSON, command lines, URLs with credentials, cloud keys, tokens, keys
 "yaml_dq": ('password: "Tr0ub4dor&3 horse"', ["Tr0ub4dor"]),
 "api_key_dq": ('api_key="a1b2c3d4e5f6g7h8"', ["a1b2c3d4e5f6"]),
 "api_key_sq_space": ("api_key = 'zz9-plural-z-alpha'", ["zz9-plural"]),
 "token_json": ('{"token": "s3cr3t-t0k3n-value"}', ["s3cr3t-t0k3n"]),
 "json_password_spaces": ('{"password" : "pa ss word!"}', ["pa ss word"]),
 "json_client_secret": ('{"client_secret":"cs_live_abcdef123456"}', ["cs_live_abcdef"]),
 "json_escaped": ('"{\\"password\\": \\"hunter22\\"}"', ["hunter22"]),
 "mysql_p": ("mysql -u root -pS3cretPass slurm_acct_db", ["S3cretPass"]),
 "mysql_password_eq": ("mysqldump --password=S3cretPass db", ["S3cretPass"]),
 "password_space": ("sshpass --password S3cretPass ssh gpu01", ["S3cretPass"]),
 "pgpassword": ("PGPASSWORD=S3cretPass psql -h db", ["S3cretPass"]),
 "sshpass_p": ("sshpass -p 'S3cret Pass' ssh gpu01", ["S3cret Pass"]),
 "redis_a": ("redis-cli -a S3cretPass ping", ["S3cretPass"]),
 "curl_u": ("curl -u admin:S3cretPass https://grafana/api", ["S3cretPass"]),
 "url_creds_no_scheme_port": ("amqp://guest:S3cretPass@rabbit:5672/", ["S3cretPass"]),
 "url_creds_at_in_password": ("https://bob:p%40ss@host/x", ["p%40ss"]),
 "aws_secret_bare": ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ["wJalrXUtnFEMI"]),
 "gcp_service_account": ('"private_key_id": "0123456789abcdef0123456789abcdef01234567"', ["0123456789abcdef0123"]),
 "azure_conn": ("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=abc123DEF456ghi789JKL012mno345PQR678stu901VWX234yz==;EndpointSuffix=core.windows.net", ["abc123DEF456ghi789"]),
 "azure_sas": ("https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=AbCdEf0123456789%2BgHiJkLmN%3D", ["AbCdEf0123456789"]),
 "bearer_lower": ("authorization: bearer abcdefghijklmnop", ["abcdefghijklmnop"]),
 "bearer_json": ('{"Authorization": "Bearer eyJhbGciOi.xyzxyzxyz.abcabcabc"}', ["xyzxyzxyz"]),
 "x_api_key_header": ("-H 'X-Api-Key: 4f3c2b1a09f8e7d6c5b4'", ["4f3c2b1a09f8e7d6c5b4"]),
 "private_key_escaped_json": ('{"key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----"}', ["MIIEvQIBADANBgkqhkiG9w0"]),
 "ssh_dss": ("-----BEGIN DSA PRIVATE KEY-----\nMIIBuwIBAAKBgQDabc\n-----END DSA PRIVATE KEY-----", ["MIIBuwIBAAKBgQD"]),
 "stripe": ("sk_live_51Habcdefghijklmnopqrstuv", ["sk_live_51Habcdefgh"]),
 "password_env_lower": ("export db_password=S3cretPass", ["S3cretPass"]),
 "secret_colon_quoted": ("client_secret: 'abc def ghi jkl'", ["abc def ghi"]),
 "passwd_flag_short": ("ipmitool -H bmc01 -U admin -P S3cretPass power status", ["S3cretPass"]),
 # issue 15 item 8, walked again: prefixed password flags, .netrc lines, Perl/PHP hash arrows
 "password_flag_prefixed": ("slurmrestd-setup --db-password S3cretPass --admin-password 'An0ther Pass'",
                            ["S3cretPass", "An0ther Pass"]),
 "netrc": ("machine gitlab.example.org login bob password S3cretPass", ["S3cretPass"]),
 "hash_arrow": ("'password' => 'S3cretPass', 'db_password' => \"An0therPass\"", ["S3cretPass", "An0therPass"]),
    "email": ("contact Alice.Smith+hpc@Example.ORG if it fails", ["Alice.Smith+hpc@Example.ORG"]),
    "email_angle": ("From: <bob@cs.uni-example.de>", ["bob@cs.uni-example.de"]),
    "user_in_path": ("StdOut=/lustre/scratch/alice/llm13b/logs/out", ["/alice/"]),
    "user_in_scontrol": ("UserId=alice(20417) GroupId=alice(20417)", ["alice("]),
    "user_with_dot": ("sacct -u frank.m -S now-1day", ["frank.m"]),
    "user_with_quote": ("owner o'neil asked", ["o'neil"]),
}

CLEAN = [
    "[Sun Nov 29 09:21:17 2026] NVRM: Xid (PCI:0000:9b:00): 79, pid=2231, name=python, GPU has fallen off the bus.",
    "[rank3]:[E ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4412, "
    "OpType=ALLREDUCE, NumelIn=1, Timeout(ms)=1800000) ran for 1800091 milliseconds before timing out.",
    "NodeName=gpu007 State=IDLE+DRAIN Reason=warden: GPU hardware fault (Xid 79) [root@2026-11-29T06:00:00]",
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu=\"0\",Hostname=\"gpu011\"} 64",
    "step 1200 loss 2.31 tokens/s 1200 key=value; 3 checks passed; Basic information; malice; bypass",
    "lustre-OST0003_UUID 1073741824 1073741800 24 100% /lustre[OST:3]",
]


def redactor() -> Redactor:
    return Redactor(user_name_patterns(USERS))


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_each_secret_is_redacted(name):
    text, leaks = CORPUS[name]
    out, kinds = redactor().redact_text(text)
    assert kinds and "[REDACTED:" in out, (name, out)
    assert not [leak for leak in leaks if leak in out], (name, out)


@pytest.mark.parametrize("line", CLEAN)
def test_cluster_text_without_secrets_is_untouched(line):
    assert redactor().redact_text(line) == (line, [])


def test_user_names_are_whole_words_only():
    out, _ = redactor().redact_text("alice malice alice2 palice /home/alice frank.m frank.mx")
    assert out == ("[REDACTED:user_name] malice alice2 palice /home/[REDACTED:user_name] "
                   "[REDACTED:user_name] frank.mx")
    assert user_name_patterns([]) == []


@pytest.fixture()
def secret_text() -> str:
    return "\n".join(text for text, _ in CORPUS.values())


def _config(url: str) -> dict:
    return {"providers": [provider_entry("ext", url), {"name": "builtin", "kind": "builtin"}],
            "routes": {"ext-llm": ["ext"], "warden-builtin": ["builtin"]},
            "redaction": {"extra_patterns": [p.model_dump() for p in user_name_patterns(USERS)]},
            "retry": {"attempts_per_provider": 1, "backoff_initial_s": 0.001, "backoff_max_s": 0.01}}


@pytest.mark.anyio
async def test_no_secret_reaches_the_upstream_but_builtin_sees_all(upstreams, make_gateway, secret_text):
    up = StubUpstream()
    seen: list[str] = []

    def respond(request):
        seen.append(json.dumps(request))
        return {"role": "assistant", "content": "ok"}

    app = make_gateway(_config(upstreams(up)), respond=respond)
    body = chat(secret_text, model="ext-llm")
    body["messages"].append({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_jobs", "arguments": json.dumps({"note": secret_text})}}]})
    body["messages"].append({"role": "tool", "tool_call_id": "c1", "content": secret_text})
    assert (await asgi_post(app, body)).status_code == 200
    sent = json.dumps(up.received[0], ensure_ascii=False)
    assert not [leak for _, leaks in CORPUS.values() for leak in leaks if leak in sent]
    builtin = chat(secret_text, model="warden-builtin")
    assert (await asgi_post(app, builtin)).status_code == 200
    original = json.dumps(builtin["messages"][0]["content"])
    assert original in seen[0]  # the built-in provider gets the text unchanged
    await app.aclose()


def _leaky_incident(tmp_path: Path) -> tuple[Path, list[str]]:
    """The xid79 incident, its job log ending in a traceback that prints an environment full of secrets."""
    snap = tmp_path / "snapshot"
    shutil.copytree(REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank" / "snapshot", snap)
    log = snap / "logs" / "73412" / "pretrain-73412.out"
    names = ["aws_secret_env", "github_classic", "slack_webhook", "url_password_mysql", "kv_pgpassword_quoted",
             "jwt", "email", "hf_token"]
    lines = b"".join(b"[rank0]: Traceback (most recent call last):\n[rank0]:   File \"/opt/t.py\", line 3, in <module>\n"
                     b"[rank0]: RuntimeError: env dump " + CORPUS[n][0].encode() + b"\n" for n in names)
    log.write_bytes(log.read_bytes() + lines)
    return snap, [leak for n in names for leak in CORPUS[n][1]] + ["/alice/"]


def test_agent_run_through_an_llm_route_never_sends_secrets(tmp_path, monkeypatch):
    """diagnose() with an OpenAI-compatible provider on loopback acting as the model."""
    from agent.audit import AuditLog
    from agent.diagnose import diagnose
    from tools.read.context import ReadContext

    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    snap, leaks = _leaky_incident(tmp_path)

    def model(body):
        if not any(m.get("role") == "tool" for m in body["messages"]):
            return StubReply(tool_calls=[
                {"id": "c1", "type": "function", "function": {"name": "get_findings", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "get_job_log_events",
                                                              "arguments": json.dumps({"job": "73412"})}},
                {"id": "c3", "type": "function", "function": {"name": "get_jobs", "arguments": json.dumps({"job_id": "73412"})}}])
        return StubReply(tool_calls=[{"id": "c9", "type": "function", "function": {"name": "final_result", "arguments": json.dumps(
            {"root_cause": "gpu_hardware_fault", "culprits": ["node:gpu007", "job:73412"], "confidence": 0.9,
             "evidence": [{"text": "GPU hardware error event(s) on gpu007"}], "summary": "Xid 79 on gpu007"})}}])

    up = StubUpstream(responder=model)
    with serve_in_thread(up) as url:
        cfg = GatewayConfig.model_validate(_config(url))
        question = "Job 73412 of alice failed; her key is AKIAIOSFODNN7EXAMPLE. Why?"
        d = diagnose(ReadContext.from_snapshot(snap), question, model="ext-llm", gateway_config=cfg,
                     audit=AuditLog(tmp_path / "audit.db"))
    assert d.root_cause == "gpu_hardware_fault" and d.stopped_by is None
    assert len(up.received) == 2
    sent = json.dumps(up.received, ensure_ascii=False)
    tool_text = json.dumps([m for b in up.received for m in b["messages"] if m.get("role") == "tool"])
    assert "RuntimeError: env dump" in tool_text  # the leaky log lines did reach the model's context...
    assert not [leak for leak in [*leaks, "AKIAIOSFODNN7EXAMPLE", "alice"] if leak in sent]  # ...redacted
    assert "[REDACTED:" in tool_text
