"""Rate limits on the endpoints that compute: each client, and the server as a whole, may spend
only so many requests a second on each kind of work (validating a scenario, a step's "why",
creating a session, a fleet run, a sweep, an export, a /metrics scrape), with a burst on top.

A limit is a token bucket: `burst` tokens, refilled at `rate_per_s`; a request takes one, and
finds 429 with `Retry-After` (the seconds until a token is back) when none is left. Per client
*and* per server: a client cannot take the whole server's rate, and many clients together cannot
exceed it either, so a bystander's session keeps its share of the CPU whoever sends what.
"""

from __future__ import annotations

import math
import time

from fastapi import HTTPException, Request

# Buckets kept per limit before the fullest ones are forgotten (a full bucket is the same as none).
MAX_TRACKED_CLIENTS = 4096


class TokenBucket:
    """Tokens per key (a client address, or "" for the server): `burst` at most, `rate_per_s` back."""

    def __init__(self, rate_per_s: float, burst: float):
        self.rate_per_s = rate_per_s
        self.burst = burst
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, when counted)

    def wait_s(self, key: str, now: float, cost: float = 1.0) -> float:
        """0 if `key` has `cost` tokens now, else the seconds until it has them."""
        tokens, then = self._buckets.get(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self.rate_per_s)
        self._buckets[key] = (tokens, now)
        return 0.0 if tokens >= cost else (cost - tokens) / self.rate_per_s

    def take(self, key: str, now: float, cost: float = 1.0) -> None:
        tokens, then = self._buckets[key]
        self._buckets[key] = (tokens - cost, then)
        if len(self._buckets) > MAX_TRACKED_CLIENTS:
            self._forget_full(now)

    def _forget_full(self, now: float) -> None:
        self._buckets = {key: (tokens, then) for key, (tokens, then) in self._buckets.items()
                         if tokens + (now - then) * self.rate_per_s < self.burst}


class RateLimit:
    """One kind of work's limits: a bucket per client and one for the whole server."""

    def __init__(self, what: str, per_client_per_s: float, per_server_per_s: float, burst: float,
                 per_server: TokenBucket | None = None):
        self.what = what
        self.per_client = TokenBucket(per_client_per_s, burst)
        # `per_server` given: a bucket shared with other limits (the served engines of one server).
        self.per_server = per_server or TokenBucket(per_server_per_s, burst * per_server_per_s / per_client_per_s)

    def check(self, client: str, cost: float = 1.0) -> None:
        """Take `cost` tokens for `client` (at most a burst's worth), or raise 429 naming the limit
        (nothing is taken then)."""
        now = time.monotonic()
        cost = min(cost, self.per_client.burst)
        client_wait = self.per_client.wait_s(client, now, cost)
        server_wait = self.per_server.wait_s("", now, cost)
        if client_wait or server_wait:
            whose, rate, wait = ((f"each client may ask for {self.per_client.rate_per_s:g}", self.per_client.rate_per_s,
                                  client_wait) if client_wait >= server_wait else
                                 (f"the server answers {self.per_server.rate_per_s:g}", self.per_server.rate_per_s,
                                  server_wait))
            raise HTTPException(429, f"too many {self.what}: {whose} a second; try again in {wait:.1f} s",
                                headers={"Retry-After": str(max(1, math.ceil(wait)))})
        self.per_client.take(client, now, cost)
        self.per_server.take("", now, cost)


class RateLimits:
    """Every limited kind of work on this server, by name (`limit(request, "validate")`)."""

    def __init__(self, settings):
        per_client, per_server, burst = (settings.compute_per_client_per_s, settings.compute_per_server_per_s,
                                         settings.compute_burst)
        # (name, what a 429 calls it, its share of the rates): fleets, sweeps and exports are
        # workers too (a few at a time), so theirs are the rates alone; the "why" of an uncached
        # step replays up to a checkpoint interval of steps (in a worker), so it counts as heavy work.
        self.limits = {name: RateLimit(what, per_client * share, per_server * share, burst)
                       for name, what, share in (("validate", "validations", 1.0), ("why", "uncached step reasons", 0.5),
                                                 ("session", "new sessions", 1.0), ("fleet", "fleet runs", 1.0),
                                                 ("sweep", "sweeps", 0.5), ("export", "exports", 1.0),
                                                 ("metrics", "metrics scrapes", 1.0))}

    def check(self, name: str, client: str, cost: float = 1.0) -> None:
        self.limits[name].check(client, cost)


def limit(request: Request, name: str, cost: float = 1.0) -> None:
    """Count one request of kind `name` against its client's and the server's limits (429 past them)."""
    client = request.client.host if request.client else ""
    request.app.state.rate_limits.check(name, client, cost)


def scenario_cost(scenario, settings) -> float:
    """What validating or creating `scenario` costs in tokens: 1, up to half a burst for one at the
    largest size a session may have (building 20,000 requests takes about 0.1 s of CPU)."""
    size = max(scenario.workload.num_requests / settings.max_requests_per_session,
               scenario.engine.num_gpu_blocks / settings.max_blocks_per_session)
    return 1.0 + max(0.0, settings.compute_burst / 2 - 1) * min(1.0, size)
