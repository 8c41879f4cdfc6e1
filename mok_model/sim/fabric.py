"""Flows, drivers and joins: the event machinery shared by the MoK and baseline simulations.

A message (the rows of one minibatch between two endpoints) is one flow over a tuple of
resources: the comm SMs that drive the copy (a resource of C_comm x copy rate) and the links of
its route (sim/network.py). `Fluid` shares every resource max-min fairly among the flows
crossing it (progressive filling), recomputing the rates whenever a flow starts or ends; changes
closer than `merge_s` apart share one recomputation (a flow may start up to merge_s late, and
frees its resources up to merge_s early, but never more than MERGE_SHARE of its own duration
early; its own finish time and its driver's window slot stay exact). A message arrives
`latency` (its route's hop latencies) after its last byte. A `Driver` (comm SMs) starts its
queued messages round-robin by stream, at most `window` rows of each operation in flight, a
batch's messages together. A Join fires when all its messages arrived.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import simpy

from ..errors import SimInvariantError
from .network import maxmin_hops

# The most of its own duration a flow may end early in a merged recomputation. Freed early, its
# resources (and its driver's window slot) go to other flows while its last bytes are still
# due: with merge_s alone, 3-6 us copies under a 4 us window let an h200-1 pass's comm SMs do
# 0.425 ms of copying in 0.316 ms (session 31). 5% keeps that excess near 1% (exact: 0.97 of the
# analytic model there, 0.96 at 5%) at 3-4.5x the solves of merge_s alone at EP 72-576.
MERGE_SHARE = 0.05
OPS = ("dispatch", "combine")  # Message.op indexes this
EPS_T = 1e-12  # seconds: float rounding tolerated by the causality checks


class Fluid:
    """Active flows over resources with capacities (bytes/s), max-min fair rates."""

    def __init__(self, env: simpy.Environment, cap: np.ndarray, merge_s: float = 0.0, hops: int = 3):
        self.env, self.merge = env, float(merge_s)
        self.R = len(cap)
        self.cap = np.append(np.asarray(cap, np.float64), np.inf)  # id R: padding
        n = 64
        self.left = np.zeros(n)
        self.size = np.zeros(n)
        self.began = np.zeros(n)  # when each flow started
        self.rate = np.zeros(n)
        self.active = np.zeros(n, dtype=bool)
        self.route = np.zeros(n, dtype=np.int64)  # each flow's route (a row of r_res and r_w)
        self.cb: list = [None] * n
        self.free = list(range(n - 1, -1, -1))
        # routes: (res, w) -> id; their resources (padded with R) and loads; flows over one
        # route share one max-min rate, so a solve is per route (its loads times its flows)
        self.routes: dict = {}
        self.r_res = np.full((n, hops), self.R, dtype=np.int64)
        self.r_w = np.zeros((n, hops))
        self.t = env.now  # time `left` refers to
        self.t_solve = -np.inf
        self.pending = False
        self.token = 0
        self.in_wake = False
        self.bytes_in = [0.0] * (self.R + 1)  # bytes x load that entered each resource
        self.bytes_out = np.zeros(self.R + 1)  # ... and of flows that completed
        self.solves = 0
        self.flows = 0
        self.watch = np.ones(self.R + 1, dtype=bool)  # resources that bound the last solution
        self.watch[self.R] = False
        self.sticky = np.zeros(self.R, dtype=bool)  # resources once found over capacity

    def start(self, res: tuple, w: tuple, nbytes: float, done) -> None:
        """Start a flow of nbytes over resources `res` (loads `w` per unit rate); `done(t)` is
        called with its finish time."""
        if not self.free:
            self._grow()
        s = self.free.pop()
        route = self.routes.get((res, w))
        if route is None:
            route = self._new_route(res, w)
        self.route[s] = route
        self.left[s] = self.size[s] = nbytes
        self.began[s] = self.env.now
        self.rate[s] = 0.0
        self.active[s] = True
        self.cb[s] = done
        bi = self.bytes_in
        for r, x in zip(res, w):
            bi[r] += nbytes * x
        self.flows += 1
        self._request()

    def set_capacity(self, rid: int, cap: float) -> None:
        """Change resource rid's capacity from now on: its flows are shared again at once."""
        if self.cap[rid] == cap:
            return
        self._advance()
        self.cap[rid] = cap
        self.watch[rid] = True
        self._request()

    def _new_route(self, res: tuple, w: tuple) -> int:
        i = self.routes[res, w] = len(self.routes)
        k, (n, H) = len(res), self.r_res.shape
        if k > H:  # a longer route: widen the table
            self.r_res = np.concatenate([self.r_res, np.full((n, k - H), self.R)], axis=1)
            self.r_w = np.concatenate([self.r_w, np.zeros((n, k - H))], axis=1)
            H = k
        if i == n:
            self.r_res = np.concatenate([self.r_res, np.full_like(self.r_res, self.R)])
            self.r_w = np.concatenate([self.r_w, np.zeros_like(self.r_w)])
        self.r_res[i] = res + (self.R,) * (H - k)
        self.r_w[i] = w + (0.0,) * (H - k)
        return i

    def _grow(self) -> None:
        n = len(self.left)
        for a in ("left", "rate", "size", "began"):
            setattr(self, a, np.concatenate([getattr(self, a), np.zeros(n)]))
        self.route = np.concatenate([self.route, np.zeros(n, dtype=np.int64)])
        self.active = np.concatenate([self.active, np.zeros(n, dtype=bool)])
        self.cb += [None] * n
        self.free = list(range(2 * n - 1, n - 1, -1))

    def _request(self) -> None:
        if self.pending or self.in_wake:
            return
        self.pending = True
        delay = max(self.t_solve + self.merge - self.env.now, 0.0)
        self.env.timeout(delay).callbacks.append(self._on_request)

    def _on_request(self, _e) -> None:
        self.pending = False
        self._advance()
        self._solve()

    def _advance(self) -> None:
        now = self.env.now
        dt = now - self.t
        if dt > 0:  # ended and idle slots drift too: start() resets them
            self.left -= self.rate * dt
        self.t = now

    def _solve(self) -> None:
        self.t_solve = self.env.now
        self.token += 1
        idx = self.active.nonzero()[0]
        if not len(idx):
            return
        self.solves += 1
        route = self.route.take(idx)
        flows = np.bincount(route)        # flows on each route
        on = flows.nonzero()[0]           # the routes in use
        pos = np.cumsum(flows > 0) - 1    # a route's row among them
        cnt = flows[on]
        r = self._rates(self.r_res.take(on, axis=0), self.r_w.take(on, axis=0) * cnt[:, None])
        if not (r > 0).all():
            raise SimInvariantError(f"{int(cnt[r <= 0].sum())} flows got no bandwidth at t={self.env.now}")
        r = r.take(pos.take(route))
        self.rate[idx] = r
        nxt = float((np.maximum(self.left[idx], 0.0) / r).min())
        tok = self.token
        self.env.timeout(nxt).callbacks.append(lambda _e, tok=tok: self._wake(tok))

    def _rates(self, res: np.ndarray, w: np.ndarray) -> np.ndarray:
        """maxmin over the resources that bound the last solution (plus every resource of a
        flow that crosses none of them), checked against all: a max-min fair allocation under
        fewer constraints that meets all of them is the max-min fair allocation under all (it
        is unique). A resource found over capacity is watched from then on and the solve redone."""
        R, cap = self.R, self.cap
        res_h, w_h = np.ascontiguousarray(res.T), np.ascontiguousarray(w.T)  # hop by hop: (H, F)
        while True:
            m = self.watch.take(res_h)
            row = m[0].copy()  # row ops: reductions over a short axis are slow
            for h in range(1, len(m)):
                row |= m[h]
            if not row.all():
                m |= (res_h != R) & ~row
            hops = m.any(axis=1)
            rr, ww = np.where(m, res_h, R), np.where(m, w_h, 0.0)
            if not hops.all():
                rr, ww = rr[hops], ww[hops]
            rate = maxmin_hops(rr, ww, cap)
            load = np.bincount(res.ravel(), (w * rate[:, None]).ravel(), minlength=R + 1)[:R]
            over = load > cap[:R] * (1.0 + 1e-9)
            if not over.any():
                self.watch[:R] = (load >= cap[:R] * (1.0 - 1e-9)) | self.sticky
                return rate
            self.sticky |= over
            self.watch[:R] |= over

    def _wake(self, tok: int) -> None:
        if tok != self.token:  # a later recomputation replaced this wake-up
            return
        self._advance()
        now = self.env.now
        idx = self.active.nonzero()[0]
        rate, left = self.rate[idx], np.maximum(self.left[idx], 0.0)
        with np.errstate(divide="ignore"):  # flows started since the last solve have no rate yet
            t_left = left / rate
        # flows that end within the window (and the one this wake-up was for, despite rounding):
        # merge_s, and at most MERGE_SHARE of each flow's own duration, so that a flow freed
        # early frees its resources for at most that share of its time
        with np.errstate(invalid="ignore"):  # inf x 0 where MERGE_SHARE is set to 0 (exact)
            window = np.minimum(self.merge, MERGE_SHARE * (now - self.began[idx] + t_left))
        due = (left <= rate * window + 1e-9 * self.size[idx]) | (t_left <= t_left.min())
        done = idx[due]
        fins = now + left[due] / rate[due]
        order = np.lexsort((done, fins))  # deterministic: by finish time, then slot
        done, fins = done[order], fins[order]
        self.in_wake = True
        self.active[done] = False
        self.left[done] = 0.0
        route = self.route[done]
        self.bytes_out += np.bincount(self.r_res[route].ravel(), (self.r_w[route] * self.size[done, None]).ravel(),
                                      minlength=self.R + 1)
        done = done.tolist()
        cbs = self.cb
        calls = [cbs[s] for s in done]
        for s in done:
            cbs[s] = None
        self.free += done
        for cb, t in zip(calls, fins.tolist()):
            cb(t)
        self.in_wake = False
        self._solve()


class Driver:
    """Comm SMs: a resource of the Fluid that starts its queued messages round-robin by stream,
    keeping at most `window` rows of each operation in flight (a message starts while fewer are;
    copies over routes slower than `window_latency`, i.e. scale-out NICs, are posted and hold no
    slot). Messages of one `batch` (a minibatch whose rows the kernel's programs copy in
    interleaved chunks, every peer's at once) start together: once one has started, the others
    of its batch pass the window."""

    __slots__ = ("fluid", "rid", "name", "window", "inflight", "flows", "order", "flow_div",
                 "window_latency", "busy_s", "busy_op", "gpu", "cap", "open_batch")

    def __init__(self, fluid: Fluid, rid: int | None, name: str, gpu: int, window: int | None = None,
                 flow_div: int = 1):
        self.fluid, self.rid, self.name, self.gpu = fluid, rid, name, gpu
        self.cap = float(fluid.cap[rid]) if rid is not None else np.inf
        self.window, self.flow_div = window, flow_div
        self.inflight = [0] * len(OPS)  # rows in flight per operation
        self.window_latency = float("inf")
        self.flows: dict = {}
        self.order: deque = deque()
        self.busy_s = 0.0
        self.busy_op = [0.0] * len(OPS)
        self.open_batch = [None] * len(OPS)  # per operation: the batch of its last message started

    def put(self, msg: "Message") -> None:
        key = msg.flow // self.flow_div
        q = self.flows.get(key)
        if q is None:
            q = self.flows[key] = deque()
            self.order.append(key)
        q.append(msg)
        self._pump()

    def _startable(self, msg: "Message") -> bool:
        return (self.window is None or self.inflight[msg.op] < self.window
                or (msg.batch is not None and msg.batch == self.open_batch[msg.op]))

    def _pump(self) -> None:
        order, flows = self.order, self.flows
        while order:
            key = order[0]
            if self._startable(flows[key][0]):
                order.popleft()
            else:  # the next stream's message waits for the window: another stream's may start
                key = next((k for k in order if self._startable(flows[k][0])), None)
                if key is None:
                    return
                order.remove(key)
            q = flows[key]
            msg = q.popleft()
            if q:
                order.append(key)
            else:
                del flows[key]
            self.open_batch[msg.op] = msg.batch
            if self.window is not None and msg.latency < self.window_latency:
                self.inflight[msg.op] += msg.rows
                msg.driver = self
            msg.start(self)

    def release(self, msg: "Message") -> None:
        self.inflight[msg.op] -= msg.rows
        self._pump()


class Message:
    """Rows moved between two endpoints by one operation (index into OPS) over `path`
    ((resource ids), (loads)); `joins` hear of its arrival. `flow` (an int) names its stream."""

    __slots__ = ("bytes", "rows", "path", "latency", "joins", "flow", "op", "name", "scale",
                 "sm_scale", "driver", "t0", "trace", "batch")

    def __init__(self, nbytes: float, rows: int, path: tuple, latency: float, joins: tuple,
                 flow: int, op: int, name: str, now: float, scale: float = 1.0, sm_scale: float = 1.0,
                 trace: tuple = (), batch=None):
        self.bytes, self.rows, self.path, self.latency = nbytes, rows, path, latency
        self.joins, self.flow, self.op, self.name, self.scale = joins, flow, op, name, scale
        self.sm_scale = sm_scale  # extra cost factor on the SMs that drive the copy (not on links)
        self.driver: Driver | None = None
        self.t0 = now
        self.trace = trace  # ((list, gpu, tid), ...) link threads to append this flow's span to
        self.batch = batch  # messages its driver starts together (Driver), or None

    def send(self, driver: Driver | None, fluid: Fluid) -> None:
        """Queue on the driver's SMs (None: the fabric alone moves it, e.g. NICs or epilogue)."""
        if driver is None:
            if not self.path[0]:  # both ends in one node (merged peers): nothing crosses a link
                self.arrived(fluid.env.now)
                return
            self._go(fluid, (), ())
            return
        driver.put(self)

    def start(self, driver: Driver) -> None:
        res, w = (driver.rid,), (self.sm_scale,)
        if driver.rid is None:
            res, w = (), ()
        self.t0 = driver.fluid.env.now
        if driver.rid is not None:
            sec = self.bytes * self.scale * self.sm_scale / driver.cap
            driver.busy_s += sec
            driver.busy_op[self.op] += sec
        if not res and not self.path[0]:
            self.arrived(driver.fluid.env.now)
            return
        self._go(driver.fluid, res, w)

    def _go(self, fluid: Fluid, res: tuple, w: tuple) -> None:
        ids, loads = self.path
        fluid.start(res + ids, w + loads, self.bytes * self.scale, self.arrived)

    def arrived(self, t: float) -> None:
        drv = self.driver
        for lst, gpu, tid in self.trace:
            lst.append((gpu, tid, self.name, self.t0, t - self.t0))
        if drv is not None:  # the copy is done: the driver may start another, from when it
            now = drv.fluid.env.now  # ends (a merged recomputation may end it a little early)
            if t > now:
                drv.fluid.env.timeout(t - now).callbacks.append(lambda _e: drv.release(self))
            else:
                drv.release(self)
        t += self.latency
        for j in self.joins:
            j.add(t, self.rows)


def check_fluid(fluid: Fluid, names: list, drivers: list) -> list[str]:
    """Violations of conservation: bytes into every resource = bytes out, every flow done,
    no driver with queued or in-flight copies."""
    out = []
    bi, bo = np.array(fluid.bytes_in), np.array(fluid.bytes_out)
    bad = np.flatnonzero(np.abs(bi - bo) > 1e-6 * np.maximum(bi, 1.0))
    out += [f"link {names[r]}: {bi[r]} bytes in, {bo[r]} out" for r in bad[:3]]
    if fluid.active.any():
        out.append(f"{int(fluid.active.sum())} flows never finished")
    out += [f"{d.name}: messages left in its queue" for d in drivers if d.order or any(d.inflight)]
    return out


def chunks(rows: int, bytes_row: float, max_bytes: float) -> list[int]:
    """Row counts of the chunks a message of `rows` rows is cut into (each at most max_bytes,
    whole rows), so that large transfers share links at a fine grain."""
    n = max(1, min(rows, -(-int(rows * bytes_row) // int(max_bytes))))
    q, r = divmod(rows, n)
    return [q + 1] * r + [q] * (n - r)


class Join:
    """Fires `done` (value: its time) when `n` rows have arrived, at the latest arrival plus
    `delay` (a signal), never before it was opened."""

    __slots__ = ("env", "n", "t", "delay", "opened", "done", "data", "rows", "fired_at")

    def __init__(self, env: simpy.Environment, n: int, delay: float = 0.0):
        self.env, self.n, self.delay = env, n, delay
        self.opened = self.t = env.now
        self.rows = 0
        self.done = env.event()
        self.data = None  # an event for the last row's arrival, where one is asked for (in_data)
        self.fired_at: float | None = None
        if n == 0:
            self._fire()

    def add(self, t: float, rows: int) -> None:
        if rows > self.n or rows <= 0 or t < self.env.now - EPS_T:
            raise SimInvariantError(f"a join got {rows} rows at {t} (waits for {self.n}, now {self.env.now})")
        self.n -= rows
        self.rows += rows
        if t > self.t:
            self.t = t
        if self.n == 0:
            self._fire()

    def in_data(self) -> simpy.Event:
        """An event that fires when the last row is in, before the join's delay."""
        if self.data is None:
            self.data = self.env.event()
            if self.fired_at is not None:
                self._data_at(self.t)
        return self.data

    def _data_at(self, t: float) -> None:
        self.env.timeout(max(t - self.env.now, 0.0)).callbacks.append(lambda _e: self.data.succeed(t))

    def _fire(self) -> None:
        at = self.t + self.delay
        self.fired_at = at
        if self.data is not None:
            self._data_at(self.t)
        self.env.timeout(max(at - self.env.now, 0.0)).callbacks.append(lambda _e: self.done.succeed(at))
