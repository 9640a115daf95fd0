"""LocalSource runs real commands (no mocks): argv handling, env, and error mapping."""

from __future__ import annotations

import sys

import pytest

from tools.errors import CommandError
from tools.sources.base import FetchRequest, Source
from tools.sources.local import LocalSource


def test_is_a_source() -> None:
    assert isinstance(LocalSource(), Source)


def test_fetch_returns_stdout_bytes_unchanged() -> None:
    raw = b"JOBID PARTITION\n\xff\xfe not utf-8\n"
    code = f"import sys; sys.stdout.buffer.write({raw!r})"
    art = LocalSource().fetch(FetchRequest(format="squeue-text", argv=[sys.executable, "-c", code], job="42"))
    assert art.data == raw
    assert art.format == "squeue-text"
    assert art.job == "42"
    assert art.command is not None and art.command.startswith(sys.executable)


def test_arguments_are_not_interpreted_by_a_shell(tmp_path) -> None:
    hostile = f"x; touch {tmp_path}/pwned $(touch {tmp_path}/pwned2)"
    out = LocalSource().run(["printf", "%s", hostile])
    assert out.decode() == hostile
    assert not (tmp_path / "pwned").exists()
    assert not (tmp_path / "pwned2").exists()


def test_env_is_laid_over_the_environment() -> None:
    src = LocalSource(env={"SLURM_CONF": "/tmp/sandbox/etc/slurm.conf"})
    out = src.run([sys.executable, "-c", "import os; print(os.environ['SLURM_CONF'], 'PATH' in os.environ)"])
    assert out.decode().split() == ["/tmp/sandbox/etc/slurm.conf", "True"]


def test_nonzero_exit_maps_to_command_error_with_code_and_stderr() -> None:
    code = "import sys; sys.stderr.write('squeue: error: Invalid user\\n'); sys.exit(3)"
    with pytest.raises(CommandError) as info:
        LocalSource().run([sys.executable, "-c", code])
    err = info.value
    assert err.returncode == 3
    assert "Invalid user" in err.stderr
    assert err.argv[0] == sys.executable
    assert "exited 3" in str(err)


def test_missing_binary_maps_to_command_error() -> None:
    with pytest.raises(CommandError) as info:
        LocalSource().run(["/nonexistent/sinfo", "-N"])
    assert info.value.returncode is None
    assert "FileNotFoundError" in info.value.stderr


def test_timeout_maps_to_command_error() -> None:
    with pytest.raises(CommandError) as info:
        LocalSource().fetch(
            FetchRequest(format="sdiag-text", argv=[sys.executable, "-c", "import time; time.sleep(5)"], timeout_s=0.3)
        )
    assert info.value.returncode is None
    assert "timed out after 0.3 s" in str(info.value)


def test_fetch_without_argv_is_an_error() -> None:
    with pytest.raises(CommandError):
        LocalSource().fetch(FetchRequest(format="sinfo-text"))
