"""Secret keys only Warden's service identity can read: a 0600 file under ``$WARDEN_HOME``, or a
secret in an environment variable that config.yaml names.

Used for the approvals' MACs (``approval.key``) and the audit chain's HMAC (``audit.key``). A key
file is created with 32 random bytes and mode 0600 when missing, atomically (``O_EXCL``), so two
processes starting at once agree on one key; a file readable or writable by group or others, a
symbolic link, or a file another user owns (whoever made it first knows the key) is refused,
never used.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from tools.errors import WardenError

__all__ = ["KeyFileError", "load_key_file", "key_from_env", "MIN_SECRET_CHARS"]

MIN_SECRET_CHARS = 16


class KeyFileError(WardenError):
    """A key file or configured secret cannot be used; the message names the file or variable."""


def load_key_file(path: Path, *, what: str = "key", create: bool = True) -> bytes:
    """The key at ``path``; created (32 random bytes, mode 0600) when missing and ``create``.

    Args:
        path: the key file.
        what: how the key is named in errors ("approval key", "audit key").
        create: make the file when it is missing (else a missing file is an error).

    Raises:
        KeyFileError: the file is a symbolic link, not a regular file, owned by another user,
            accessible to group or others, shorter than 16 bytes, absent (``create=False``) or unreadable.
    """
    if create:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        except OSError as e:
            raise KeyFileError(f"{path}: cannot create the {what}: {e.strerror or e}") from None
        else:
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(32))
    try:  # never through a link, and only a regular file of this user's: else someone else knows the key
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise KeyFileError(f"{path}: no {what}") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise KeyFileError(f"{path}: {what} is a symbolic link; Warden reads only its own key file") from None
        raise KeyFileError(f"{path}: cannot read the {what}: {e.strerror or e}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise KeyFileError(f"{path}: {what} is not a regular file")
    with os.fdopen(fd, "rb") as f:
        if st.st_uid != os.geteuid():
            raise KeyFileError(f"{path}: {what} is owned by uid {st.st_uid}, not Warden's uid {os.geteuid()}; "
                               "whoever made it knows the key: remove it and let Warden make a new one")
        if st.st_mode & 0o077:
            raise KeyFileError(f"{path}: {what} is accessible to group or others (mode {st.st_mode & 0o777:o}); "
                               "chmod 600 it")
        try:
            key = f.read()
        except OSError as e:
            raise KeyFileError(f"{path}: cannot read the {what}: {e.strerror or e}") from None
    if len(key) < MIN_SECRET_CHARS:
        raise KeyFileError(f"{path}: {what} is too short")
    return key


def key_from_env(variable: str, *, field: str) -> bytes:
    """The secret in environment variable ``variable`` (named by config field ``field``).

    Raises:
        KeyFileError: the variable is unset or shorter than 16 characters (names the field and variable).
    """
    secret = os.environ.get(variable, "")
    if len(secret) < MIN_SECRET_CHARS:
        raise KeyFileError(f"{field}: ${variable} is unset or shorter than {MIN_SECRET_CHARS} characters")
    return secret.encode()
