"""Virtual keys (stored hashed), per-key and per-team budgets and rate limits, and the per-run cap.

Every request *reserves* before it is sent upstream and *settles* after it answers (or fails):

* the reservation is the request's estimated prompt tokens plus the completion tokens it may
  produce (its ``max_tokens``, else ``reserve_output_tokens``), priced at the dearest model of its
  route; when a budget has less left than that, the completion allowance is lowered to what is
  left and the gateway sends it upstream as ``max_tokens``; when not even the prompt fits, 429;
* settling replaces the reservation by what the upstream reported (0 for a failure or cache hit).

Daily budgets and run caps are counted in the store's ``quota`` table (``gateway.quota``), checked
and added in one transaction, so concurrent requests — in one app, several apps or several
processes on one store — cannot together spend more than a budget allows. Rate limits (rpm, tpm)
are rolling 60-s windows in memory, reserved the same way (one gateway process per window).

Limits (names used in 429 bodies):
    key_rpm, key_tpm, key_tokens_per_day, key_cost_per_day_usd,
    team_rpm, team_tpm, team_tokens_per_day, team_cost_per_day_usd,
    run_cost_cap_usd, run_token_cap.
"""

from __future__ import annotations

import hashlib
import math
import secrets
import sqlite3
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from gateway.config import GatewayConfig, LimitsConfig
from gateway.errors import AuthError, LimitExceeded
from gateway.quota import QuotaRow, QuotaStore

__all__ = ["ANONYMOUS", "Budgets", "Caller", "Reservation", "generate_key", "hash_key", "utc_day"]

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
    """Requests and tokens (reserved, then settled) in the last 60 s."""

    requests: deque[float] = field(default_factory=deque)
    tokens: deque[list[float]] = field(default_factory=deque)  # [ts, tokens], mutable so settling can adjust
    token_sum: float = 0

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


@dataclass
class Reservation:
    """What one request holds until it settles."""

    rows: list[tuple[QuotaRow, int, float]] = field(default_factory=list)
    """Quota counters and the (tokens, cost) reserved on each."""
    windows: list[tuple[_Window, list[float]]] = field(default_factory=list)
    """tpm windows and the entry reserved in each."""
    max_completion_tokens: int | None = None
    """The completion allowance when a budget bounds it (send as ``max_tokens``); None when unbounded."""
    settled: bool = False


@dataclass
class _Check:
    """One limit that applies to a request."""

    name: str
    scope: str
    row: QuotaRow
    tokens_limit: float | None = None
    cost_limit: float | None = None


class Budgets:
    """Authenticates virtual keys and enforces budgets, rate limits and run caps.

    Args:
        config: Keys, teams, run caps and ``reserve_output_tokens``.
        store_path: The gateway's SQLite file holding the ``quota`` table (seeded from its ledger
            when the table is new); None keeps counters in a private in-memory database.
    """

    def __init__(self, config: GatewayConfig, store_path: str | Path | None = None) -> None:
        self._run_cost_cap = config.run_cost_cap_usd
        self._run_token_cap = config.run_token_cap
        self._reserve_output = config.reserve_output_tokens
        teams = {t.name: t for t in config.teams}
        self._by_hash = {
            k.key_sha256: Caller(k.name, k.team, k, teams.get(k.team) if k.team else None) for k in config.keys
        }
        self._open = not config.keys
        self._anonymous = Caller(ANONYMOUS, None, None, None)
        self._windows: dict[str, _Window] = {}
        self._quota = QuotaStore(store_path if store_path is not None else ":memory:", seed=_seed_from_ledger)

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

    def counted(self, caller: Caller, run_id: str | None) -> bool:
        """Whether a request of this caller is counted at all (a named key, or a run id)."""
        return caller.key != ANONYMOUS or run_id is not None

    def reserve(self, caller: Caller, run_id: str | None, *, prompt_tokens: int, max_completion_tokens: int | None,
                input_usd_per_token: float = 0.0, output_usd_per_token: float = 0.0) -> Reservation:
        """Check every limit for one new request and hold its estimated spend.

        Args:
            prompt_tokens: Estimated prompt tokens.
            max_completion_tokens: The request's ``max_tokens``; None reserves ``reserve_output_tokens``.
            input_usd_per_token, output_usd_per_token: Price used for the estimate (the route's dearest).

        Raises:
            LimitExceeded: naming the first limit the request does not fit in, and its scope.
        """
        now = time.time()
        day = utc_day(now)
        windows = self._rate_checks(caller, now)
        checks = self._checks(caller, run_id, day)
        allow = max_completion_tokens if max_completion_tokens is not None else self._reserve_output
        bounded = False
        for kind, win, limits in windows:
            if limits.tpm is not None:
                left = limits.tpm - win.token_sum - prompt_tokens
                if left < 1:
                    raise LimitExceeded(f"{kind}_tpm", f"{kind}:{_name(caller, kind)}", round(win.token_sum), limits.tpm,
                                        retry_after_s=(win.tokens[0][0] + _WINDOW_S - now) if win.tokens else None)
                allow, bounded = min(allow, int(left)), True

        def decide(used) -> int:
            nonlocal bounded
            allowed = allow
            for c in checks:
                tokens, cost = used(c.row)
                if c.tokens_limit is not None:
                    left = c.tokens_limit - tokens - prompt_tokens
                    if left < 1:
                        raise LimitExceeded(c.name, c.scope, tokens, c.tokens_limit)
                    allowed, bounded = min(allowed, int(left)), True
                if c.cost_limit is not None:
                    left_usd = c.cost_limit - cost - prompt_tokens * input_usd_per_token
                    if left_usd <= 0 or cost >= c.cost_limit:
                        raise LimitExceeded(c.name, c.scope, round(cost, 6), c.cost_limit)
                    if output_usd_per_token > 0:
                        fits = math.floor(left_usd / output_usd_per_token + 1e-9)
                        if fits < 1:
                            raise LimitExceeded(c.name, c.scope, round(cost, 6), c.cost_limit)
                        allowed, bounded = min(allowed, fits), True
            return allowed

        rows = list(dict.fromkeys(c.row for c in checks))
        if any(c.tokens_limit is not None or c.cost_limit is not None for c in checks):
            allowed = self._quota.transaction(decide, lambda a: [
                (r, prompt_tokens + a, prompt_tokens * input_usd_per_token + a * output_usd_per_token) for r in rows])
            held = prompt_tokens + allowed
            res = Reservation(rows=[(r, held, prompt_tokens * input_usd_per_token + allowed * output_usd_per_token)
                                    for r in rows])
        else:
            allowed = allow
            held = prompt_tokens + allowed
            res = Reservation(rows=[(r, 0, 0.0) for r in rows])
        for kind, win, limits in windows:
            if limits.rpm is not None:
                win.requests.append(now)
            if limits.tpm is not None:
                entry = [now, float(held)]
                win.tokens.append(entry)
                win.token_sum += held
                res.windows.append((win, entry))
        res.max_completion_tokens = allowed if bounded else None
        return res

    def settle(self, res: Reservation, tokens: int, cost_usd: float) -> None:
        """Replace a reservation by what the request really used (idempotent)."""
        if res.settled:
            return
        res.settled = True
        for win, entry in res.windows:
            win.token_sum += tokens - entry[1]
            entry[1] = float(tokens)
        deltas = [(row, tokens - held, cost_usd - held_cost) for row, held, held_cost in res.rows
                  if tokens != held or cost_usd != held_cost]
        self._quota.add(deltas)

    def run_totals(self, run_id: str) -> tuple[int, float]:
        """(tokens, cost USD) counted so far against a run id."""
        return self._quota.used(QuotaRow(f"run:{run_id}", "run"))

    def close(self) -> None:
        """Close the quota store's connection."""
        self._quota.close()

    def _rate_checks(self, caller: Caller, now: float) -> list[tuple[str, _Window, LimitsConfig]]:
        out = []
        for kind, name, limits in (("key", caller.key, caller.key_limits), ("team", caller.team, caller.team_limits)):
            if limits is None or name is None or (limits.rpm is None and limits.tpm is None):
                continue
            scope = f"{kind}:{name}"
            win = self._windows.setdefault(scope, _Window())
            win.prune(now)
            if limits.rpm is not None and len(win.requests) >= limits.rpm:
                raise LimitExceeded(f"{kind}_rpm", scope, len(win.requests), limits.rpm,
                                    retry_after_s=win.requests[0] + _WINDOW_S - now)
            out.append((kind, win, limits))
        return out

    def _checks(self, caller: Caller, run_id: str | None, day: str) -> list[_Check]:
        checks = []
        for kind, name, limits in (("key", caller.key, caller.key_limits), ("team", caller.team, caller.team_limits)):
            if name is None or name == ANONYMOUS:
                continue
            row = QuotaRow(f"{kind}:{name}", day)
            checks.append(_Check(f"{kind}_tokens_per_day", row.scope, row,
                                 tokens_limit=limits.tokens_per_day if limits else None))
            checks.append(_Check(f"{kind}_cost_per_day_usd", row.scope, row,
                                 cost_limit=limits.cost_per_day_usd if limits else None))
        if run_id is not None:
            row = QuotaRow(f"run:{run_id}", "run")
            checks.append(_Check("run_cost_cap_usd", row.scope, row, cost_limit=self._run_cost_cap))
            checks.append(_Check("run_token_cap", row.scope, row, tokens_limit=self._run_token_cap))
        return checks


def _name(caller: Caller, kind: str) -> str | None:
    return caller.key if kind == "key" else caller.team


def _seed_from_ledger(conn: sqlite3.Connection) -> None:
    """Fill a new quota table from today's ledger rows and every run's total."""
    has_ledger = conn.execute("select 1 from sqlite_master where type='table' and name='ledger'").fetchone()
    if not has_ledger:
        return
    day = utc_day(time.time())
    rows: list[tuple[str, str, int, float]] = []
    for key, team, tokens, cost in conn.execute(
            "select key, team, sum(total_tokens), sum(cost_usd) from ledger where day = ? group by key, team", [day]):
        if key and key != ANONYMOUS:
            rows.append((f"key:{key}", day, tokens or 0, cost or 0.0))
        if team:
            rows.append((f"team:{team}", day, tokens or 0, cost or 0.0))
    for run_id, tokens, cost in conn.execute(
            "select run_id, sum(total_tokens), sum(cost_usd) from ledger where run_id is not null group by run_id"):
        rows.append((f"run:{run_id}", "run", tokens or 0, cost or 0.0))
    conn.executemany(
        "insert into quota (scope, period, tokens, cost_usd) values (?, ?, ?, ?) on conflict (scope, period) "
        "do update set tokens = tokens + excluded.tokens, cost_usd = cost_usd + excluded.cost_usd", rows)
