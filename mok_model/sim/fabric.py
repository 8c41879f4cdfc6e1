"""Servers, messages and joins: the event machinery shared by the MoK and baseline simulations.

A message (the rows of one minibatch between one pair of endpoints) crosses a tuple of servers:
the comm SMs that drive the copy, the sender's egress link, the receiver's ingress link. Each
server serves the flows queued on it round-robin, one message at a time, busy for the message's
bytes over its own rate (serialization); a message is handed to its next server when a server
starts it (cut-through), so a stream runs at the rate of its slowest server, and it arrives
`latency` after its last byte leaves the slowest one. A Join fires when all its messages arrived.
"""

from __future__ import annotations

from collections import deque

import simpy

OPS = ("dispatch", "combine")  # Message.op indexes this

class SimInvariantError(RuntimeError):
    """An internal invariant of the simulation was broken (a bug in the simulator)."""


class Server:
    """A resource with a byte rate serving queued flows round-robin (fair share per message)."""

    __slots__ = ("env", "name", "rate", "busy", "flows", "order", "busy_s", "busy_op",
                 "bytes_in", "bytes_out", "trace", "gpu", "tid", "wire", "_cb", "window",
                 "inflight", "flow_div", "window_latency")

    def __init__(self, env: simpy.Environment, name: str, rate: float, gpu: int, tid: int,
                 wire: bool, trace: list | None = None, window: int | None = None,
                 flow_div: int = 1):
        self.env, self.name, self.rate, self.gpu, self.tid = env, name, rate, gpu, tid
        self.wire = wire  # a fabric link (counts bytes in and out) rather than an SM group
        self.busy = False
        self.flows: dict = {}
        self.order: deque = deque()
        self.busy_s = 0.0
        self.busy_op = [0.0] * len(OPS)  # busy seconds per operation
        self.bytes_in = 0.0  # bytes that entered this server
        self.bytes_out = 0.0  # bytes of messages through it that arrived at their destination
        self.trace = trace  # a list to append (gpu, tid, name, start, dur) to, or None
        self._cb = self._serve
        # a driver (comm SMs) keeps at most `window` of its messages in flight: it starts no
        # new copy until an earlier one has reached its last link
        self.window, self.inflight = window, 0
        # copies over slower, higher-latency paths (scale-out NICs: GPU-initiated RDMA) are
        # posted and left to the NIC: they do not hold a window slot
        self.window_latency = float("inf")
        self.flow_div = flow_div  # flows are msg.flow // flow_div here (SMs: one per stream)

    def put(self, msg: "Message") -> None:
        key = msg.flow // self.flow_div
        q = self.flows.get(key)
        if q is None:
            q = self.flows[key] = deque()
            self.order.append(key)
        q.append(msg)
        if not self.busy:
            self._serve(None)

    def _serve(self, _ev) -> None:
        if not self.order or (self.window is not None and self.inflight >= self.window):
            self.busy = False
            return
        flow = self.order.popleft()
        q = self.flows[flow]
        msg = q.popleft()
        if q:
            self.order.append(flow)
        else:
            del self.flows[flow]
        now = self.env.now
        dt = msg.bytes * (msg.scale if self.wire else msg.scale * msg.sm_scale) / self.rate
        end = now + dt
        if end > msg.finish:
            msg.finish = end
        self.busy_s += dt
        self.busy_op[msg.op] += dt
        self.bytes_in += msg.bytes
        if self.trace is not None:
            self.trace.append((self.gpu, self.tid, msg.name, now, dt))
        self.busy = True
        self.env.timeout(dt).callbacks.append(self._cb)
        if self.window is not None and msg.latency < self.window_latency:
            self.inflight += 1
            msg.driver = self
        msg.k += 1
        if msg.k < len(msg.stages):
            msg.stages[msg.k].put(msg)
        else:
            msg.arrived()


class Message:
    """Rows moved between two endpoints by one operation (index into OPS); `joins` hear of its
    arrival. `flow` (an int) names the stream it belongs to: servers share round-robin by flow."""

    __slots__ = ("bytes", "rows", "stages", "k", "finish", "latency", "joins", "flow", "op",
                 "name", "scale", "sm_scale", "driver")

    def __init__(self, nbytes: float, rows: int, stages: tuple, latency: float, joins: tuple,
                 flow: int, op: int, name: str, now: float, scale: float = 1.0, sm_scale: float = 1.0):
        self.bytes, self.rows, self.stages, self.latency = nbytes, rows, stages, latency
        self.joins, self.flow, self.op, self.name, self.scale = joins, flow, op, name, scale
        self.sm_scale = sm_scale  # extra cost factor on the SMs that drive the copy (not on links)
        self.k = 0
        self.finish = now
        self.driver: Server | None = None

    def send(self) -> None:
        if not self.stages:  # both ends in one node (merged peers): nothing crosses a link
            self.arrived()
            return
        self.stages[0].put(self)

    def arrived(self) -> None:
        drv = self.driver
        if drv is not None:  # the copy reached its last link: the driver may start another
            drv.inflight -= 1
            if not drv.busy:
                drv._serve(None)
        t = self.finish + self.latency
        for s in self.stages:
            if s.wire:
                s.bytes_out += self.bytes
        for j in self.joins:
            j.add(t, self.rows)


def chunks(rows: int, bytes_row: float, max_bytes: float) -> list[int]:
    """Row counts of the chunks a message of `rows` rows is cut into (each at most max_bytes,
    whole rows), so that large transfers share links at a fine grain."""
    n = max(1, min(rows, -(-int(rows * bytes_row) // int(max_bytes))))
    q, r = divmod(rows, n)
    return [q + 1] * r + [q] * (n - r)


class Join:
    """Fires `done` (value: its time) when `n` rows have arrived, at the latest arrival plus
    `delay` (a signal), never before it was opened."""

    __slots__ = ("env", "n", "t", "delay", "opened", "done", "rows", "fired_at")

    def __init__(self, env: simpy.Environment, n: int, delay: float = 0.0):
        self.env, self.n, self.delay = env, n, delay
        self.opened = self.t = env.now
        self.rows = 0
        self.done = env.event()
        self.fired_at: float | None = None
        if n == 0:
            self._fire()

    def add(self, t: float, rows: int) -> None:
        if rows > self.n or rows <= 0 or t < self.env.now:
            raise SimInvariantError(f"a join got {rows} rows at {t} (waits for {self.n}, now {self.env.now})")
        self.n -= rows
        self.rows += rows
        if t > self.t:
            self.t = t
        if self.n == 0:
            self._fire()

    def _fire(self) -> None:
        at = self.t + self.delay
        self.fired_at = at
        self.env.timeout(at - self.env.now).callbacks.append(lambda _e: self.done.succeed(at))
