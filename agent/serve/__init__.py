"""``warden serve``: Alertmanager and generic webhooks → runbooks → investigations → posts."""

__all__ = ["alerts", "app", "intake", "queue", "runner", "server"]
