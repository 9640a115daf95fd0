"""Virtual keys (stored hashed), per-key and per-team budgets and rate limits, and the per-run cap.

State is in memory for speed and seeded from the ledger at start, so daily budgets and run
caps survive a restart. Budgets are checked before a request is sent and charged after it
answers, so concurrent requests can overshoot a budget by at most what they are in flight for.

Limits (names used in 429 bodies):
    key_rpm, key_tpm, key_tokens_per_day, key_cost_per_day_usd,
    team_rpm, team_tpm, team_tokens_per_day, team_cost_per_day_usd,
    run_cost_cap_usd, run_token_cap.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime

import sqlite_utils

from gateway.config import GatewayConfig, LimitsConfig
from gateway.errors import AuthError, LimitExceeded

__all__ = ["ANONYMOUS", "Budgets", "Caller", "generate_key", "hash_key", "utc_day"]

ANONYMOUS = "anonymous"
_WINDOW_S = 60.0


def hash_key(plaintext: str) -> str:
    """SHA-256 hex digest of a virtual key, the only form the config stores."""
    return hashlib.sha256(plaintext.encode()).hexdigest()


def generate_key() -> tuple[str, str]:
    """A new random virtual key and its hash: ``("sk-warden-…", sha256_hex)``."""
    key = "sk-warden-" + secrets.token_urlsafe(24)
    return key, hash_key(key)


def utc_day(ts: float) -> str:
    """``YYYY-MM-DD`` of a Unix time in UTC."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


@dataclass
class _Window:
    """Requests and tokens in the last 60 s."""

    requests: deque[float] = field(default_factory=deque)
    tokens: deque[tuple[float, int]] = field(default_factory=deque)
    token_sum: int = 0

    def prune(self, now: float) -> None:
        cutoff = now - _WINDOW_S
        while self.requests and self.requests[0] <= cutoff:
            self.requests.popleft()
        while self.tokens and self.tokens[0][0] <= cutoff:
            self.token_sum -= self.tokens.popleft()[1]


@dataclass(frozen=True)
class Caller:
    """Who is calling: the virtual key's name and team, with their limits."""

    key: str
    team: str | None
    key_limits: LimitsConfig | None
    team_limits: LimitsConfig | None


class Budgets:
    """Authenticates virtual keys and enforces budgets, rate limits and run caps.

    Args:
        config: Keys, teams and run caps.
        ledger_db: Optional store database to seed today's spend and run totals from.
    """

    def __init__(self, config: GatewayConfig, ledger_db: sqlite_utils.Database | None = None) -> None:
        self._run_cost_cap = config.run_cost_cap_usd
        self._run_token_cap = config.run_token_cap
        teams = {t.name: t for t in config.teams}
        self._by_hash = {
            k.key_sha256: Caller(k.name, k.team, k, teams.get(k.team) if k.team else None) for k in config.keys
        }
        self._open = not config.keys
        self._anonymous = Caller(ANONYMOUS, None, None, None)
        self._windows: dict[str, _Window] = {}
        self._day_index = int(time.time() // 86400)
        self._day = utc_day(time.time())
        self._daily: dict[str, list[float]] = {}  # scope -> [tokens, cost_usd]
        self._runs: dict[str, list[float]] = {}  # run id -> [tokens, cost_usd]
        if ledger_db is not None:
            self._seed(ledger_db)

    def _seed(self, db: sqlite_utils.Database) -> None:
        for key, team, tokens, cost in db.execute(
            "select key, team, sum(total_tokens), sum(cost_usd) from ledger where day = ? group by key, team",
            [self._day],
        ).fetchall():
            for scope in (f"key:{key}", f"team:{team}" if team else None):
                if scope:
                    acc = self._daily.setdefault(scope, [0, 0.0])
                    acc[0] += tokens or 0
                    acc[1] += cost or 0.0
        for run_id, tokens, cost in db.execute(
            "select run_id, sum(total_tokens), sum(cost_usd) from ledger where run_id is not null group by run_id"
        ).fetchall():
            self._runs[run_id] = [tokens or 0, cost or 0.0]

    def authenticate(self, authorization: str | None) -> Caller:
        """Resolve an ``Authorization: Bearer <key>`` header to a caller.

        With no keys configured the gateway is open and everyone is ``anonymous``.

        Raises:
            AuthError: keys are configured and the header is missing or names no key.
        """
        if self._open:
            return self._anonymous
        if not authorization or not authorization[:7].lower() == "bearer ":
            raise AuthError("Missing virtual key: send 'Authorization: Bearer <key>'")
        caller = self._by_hash.get(hash_key(authorization[7:].strip()))
        if caller is None:
            raise AuthError("Unknown virtual key")
        return caller

    def admit(self, caller: Caller, run_id: str | None) -> None:
        """Check every limit for one new request and count it against the rpm windows.

        Raises:
            LimitExceeded: naming the first exhausted limit and its scope.
        """
        now = time.time()
        self._roll_day(now)
        scopes = [("key", caller.key, caller.key_limits), ("team", caller.team, caller.team_limits)]
        for kind, name, limits in scopes:
            if limits is None or name is None:
                continue
            scope = f"{kind}:{name}"
            win = self._windows.setdefault(scope, _Window())
            win.prune(now)
            if limits.rpm is not None and len(win.requests) >= limits.rpm:
                raise LimitExceeded(f"{kind}_rpm", scope, len(win.requests), limits.rpm,
                                    retry_after_s=win.requests[0] + _WINDOW_S - now)
            if limits.tpm is not None and win.token_sum >= limits.tpm:
                raise LimitExceeded(f"{kind}_tpm", scope, win.token_sum, limits.tpm,
                                    retry_after_s=win.tokens[0][0] + _WINDOW_S - now)
            tokens, cost = self._daily.get(scope, (0, 0.0))
            if limits.tokens_per_day is not None and tokens >= limits.tokens_per_day:
                raise LimitExceeded(f"{kind}_tokens_per_day", scope, tokens, limits.tokens_per_day)
            if limits.cost_per_day_usd is not None and cost >= limits.cost_per_day_usd:
                raise LimitExceeded(f"{kind}_cost_per_day_usd", scope, round(cost, 6), limits.cost_per_day_usd)
        if run_id is not None and run_id in self._runs:
            tokens, cost = self._runs[run_id]
            if self._run_cost_cap is not None and cost >= self._run_cost_cap:
                raise LimitExceeded("run_cost_cap_usd", f"run:{run_id}", round(cost, 6), self._run_cost_cap)
            if self._run_token_cap is not None and tokens >= self._run_token_cap:
                raise LimitExceeded("run_token_cap", f"run:{run_id}", tokens, self._run_token_cap)
        for kind, name, limits in scopes:
            if limits is not None and name is not None and limits.rpm is not None:
                self._windows[f"{kind}:{name}"].requests.append(now)

    def charge(self, caller: Caller, run_id: str | None, tokens: int, cost_usd: float) -> None:
        """Add a finished request's tokens and cost to the key, team, and run totals."""
        now = time.time()
        self._roll_day(now)
        for scope in (f"key:{caller.key}", f"team:{caller.team}" if caller.team else None):
            if scope is None:
                continue
            acc = self._daily.setdefault(scope, [0, 0.0])
            acc[0] += tokens
            acc[1] += cost_usd
            win = self._windows.get(scope)
            if win is not None and tokens:
                win.tokens.append((now, tokens))
                win.token_sum += tokens
        if run_id is not None:
            acc = self._runs.setdefault(run_id, [0, 0.0])
            acc[0] += tokens
            acc[1] += cost_usd

    def run_totals(self, run_id: str) -> tuple[int, float]:
        """(tokens, cost USD) charged so far to a run id."""
        tokens, cost = self._runs.get(run_id, (0, 0.0))
        return int(tokens), float(cost)

    def _roll_day(self, now: float) -> None:
        index = int(now // 86400)
        if index != self._day_index:
            self._day_index = index
            self._day = utc_day(now)
            self._daily.clear()
