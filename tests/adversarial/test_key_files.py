"""Issue 15 items 1 and 2: the approvals' MAC key and the audit chain's key are Warden's alone.

Before: ``load_key_file`` checked only the mode bits, through ``os.stat`` (which follows links), so
an ``approval.key`` that someone else created first (mode 0600, theirs: they know every byte) or a
symlink to a file of the attacker's choosing was taken, and with it any MAC the attacker computed.
Now the key is opened without following a link and must be a regular file owned by Warden's own
user, mode 0600; anything else is refused naming the file. Real files, real ``chown``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.keys import KeyFileError, load_key_file

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")


@root_only
def test_a_key_file_another_user_owns_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "approval.key"
    p.write_bytes(b"k" * 32)
    os.chmod(p, 0o600)
    os.chown(p, 65534, 65534)  # nobody made it first: nobody knows the key
    with pytest.raises(KeyFileError, match="owned by uid 65534"):
        load_key_file(p, what="approval key")


def test_a_key_file_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "chosen.key"
    target.write_bytes(b"z" * 32)
    os.chmod(target, 0o600)
    link = tmp_path / "audit.key"
    link.symlink_to(target)
    with pytest.raises(KeyFileError, match="is a symbolic link"):
        load_key_file(link, what="audit key")
    with pytest.raises(KeyFileError, match="is a symbolic link"):
        load_key_file(link, what="audit key", create=False)


def test_a_key_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "approval.key"
    d.mkdir(mode=0o700)
    with pytest.raises(KeyFileError, match="not a regular file"):
        load_key_file(d, what="approval key")


def test_warden_s_own_key_is_made_once_and_read_back(tmp_path: Path) -> None:
    p = tmp_path / "approval.key"
    key = load_key_file(p)
    assert len(key) == 32 and load_key_file(p) == key and (p.stat().st_mode & 0o777) == 0o600
