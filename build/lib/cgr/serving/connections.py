"""`cgr serve` under many connections: idle connections are closed after a while, and the
oldest idle ones at once when more than the bound are open, so connections that never send a
request cannot hold every file descriptor; and the accept loop's "out of system resource"
error, which asyncio logs once per failed accept (tens of thousands a second), is logged at
most once per interval with the count it stood for."""

from __future__ import annotations

import logging
import time

import uvicorn

IDLE_S = 30.0  # a connection that has sent no request for this long is closed
ACCEPT_ERROR = "socket.accept() out of system resource"


class BoundedServer(uvicorn.Server):
    """uvicorn's server, checking its open connections once a second (its own tick)."""

    def __init__(self, config: uvicorn.Config, max_connections: int, idle_s: float = IDLE_S):
        super().__init__(config)
        self.max_connections, self.idle_s = max_connections, idle_s
        self._idle_since: dict = {}

    async def on_tick(self, counter: int) -> bool:
        if counter % 10 == 0:  # ticks are 0.1 s apart
            self.close_idle(time.monotonic())
        return await super().on_tick(counter)

    def close_idle(self, now: float) -> int:
        """Closes the connections idle for idle_s, and the oldest idle ones beyond
        max_connections; the number closed."""
        connections = list(self.server_state.connections)
        idle = []
        for connection in connections:
            cycle = getattr(connection, "cycle", None)
            if cycle is not None and not cycle.response_complete:
                continue  # a request in flight is never cut
            idle.append((self._idle_since.get(connection, now), connection))
        self._idle_since = dict((c, t) for t, c in idle)  # closed ones are forgotten
        idle.sort(key=lambda pair: pair[0])
        excess = max(0, len(connections) - self.max_connections)
        closed = 0
        for i, (since, connection) in enumerate(idle):
            if i < excess or now - since >= self.idle_s:
                transport = getattr(connection, "transport", None)
                if transport is not None and not transport.is_closing():
                    transport.close()
                    closed += 1
                self._idle_since.pop(connection, None)
        return closed


class RateLimited(logging.Filter):
    """Lets a record starting with `prefix` through at most once per `interval` seconds, with
    the number held back since the last one."""

    def __init__(self, prefix: str, interval: float = 10.0):
        super().__init__()
        self.prefix, self.interval = prefix, interval
        self.last, self.held = float("-inf"), 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(self.prefix):
            return True
        now = time.monotonic()
        if now - self.last < self.interval:
            self.held += 1
            return False
        if self.held:
            record.msg = (
                f"{record.msg} ({self.held} more like it in the last {self.interval:.0f} s)"
            )
            record.args = ()
        self.last, self.held = now, 0
        return True


def rate_limit_accept_errors(interval: float = 10.0) -> RateLimited:
    found = next((f for f in logging.getLogger("asyncio").filters if isinstance(f, RateLimited)),
                 None)  # fmt: skip
    if found is None:
        found = RateLimited(ACCEPT_ERROR, interval)
        logging.getLogger("asyncio").addFilter(found)
    return found
