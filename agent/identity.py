"""Who is acting: the operating system's account of the process, never a name someone typed.

``os_user()`` is the login name of the process' effective uid (from the password database, not
from ``$USER``/``$LOGNAME``, which anyone can set). A name given on the command line (``--approver``,
``--as``) is taken only where the site's config says the channel authenticates it
(``asserted_identity: true`` in config.yaml: Warden runs behind a wrapper that logged the person
in); the Slack front end passes the Slack user id Slack verified.
"""

from __future__ import annotations

import os
import pwd

from tools.errors import ConfigError

__all__ = ["os_user", "acting_user", "slack_approver"]


def os_user() -> str:
    """The login name of this process' effective uid.

    Raises:
        ConfigError: the uid has no entry in the password database.
    """
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        raise ConfigError(f"uid {os.geteuid()} has no user name; Warden cannot tell who is acting") from None


def acting_user(asserted: str | None, *, allowed: bool, option: str) -> str:
    """``asserted`` when the config lets this channel name the person, else the OS user.

    Raises:
        ConfigError: a name was given but the config does not say the channel authenticates it.
    """
    if asserted is None:
        return os_user()
    if not allowed:
        raise ConfigError(f"{option} {asserted!r} refused: this channel does not authenticate names (set "
                          "asserted_identity: true in config.yaml only behind a wrapper that logs people in); "
                          f"acting as the login user {os_user()!r} instead needs no {option}")
    return asserted


def slack_approver(slack_approvers: dict[str, str], user_id: str) -> str:
    """The approver name for a Slack user id that Slack verified (a signed request or Socket Mode
    event), from ``slack_approvers`` in config.yaml; never a name typed in a message.

    Raises:
        ConfigError: the Slack user is not mapped to an approver.
    """
    name = slack_approvers.get(user_id)
    if not name:
        raise ConfigError(f"Slack user {user_id!r} is not mapped to an approver (slack_approvers in config.yaml)")
    return name
