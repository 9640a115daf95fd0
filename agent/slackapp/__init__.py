"""The Slack front end: Block Kit rendering, Warden's poster, the bolt app and its HTTP route."""

__all__ = ["blocks", "mrkdwn", "poster", "responder", "app", "http", "client"]
