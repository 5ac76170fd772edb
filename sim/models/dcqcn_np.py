"""Bit-exact model of the DCQCN notification point (:mod:`hw.nic.dcqcn_np`), one call of
:meth:`NpModel.step` per clock cycle.

One cycle, in this order:

1. output: the lowest-numbered flow with a CNP due is offered (``cnp.valid``); if the sink takes
   it, that flow's CNP is sent: ``due = 0``, and (paper rule) ``hold = N - 1``, ``pending = 0``
   (a CNP that becomes due in cycle t is offered in t + 1, so the next CNP of the flow can be
   sent N cycles after this one, not earlier);
2. timers: paper: each flow's ``hold`` counts down; when it goes 1 -> 0 with ``pending`` set,
   a CNP becomes due.  Periodic: the global counter expires every N cycles (in cycles N-1,
   2N-1, ...: CNPs leave at multiples of N), and every flow marked since the last expiry
   becomes due (a CNP sent in the same cycle was the previous interval's);
3. the event: a CE-marked packet for flow f: paper: nothing if a CNP is already due, ``pending``
   if f is inside its window (``hold > 0``), else a CNP becomes due at once; periodic: f is
   marked.  Packets without CE and flow numbers >= ``flows`` are ignored.
"""

from __future__ import annotations

from hw.nic.dcqcn_np_config import DcqcnNpConfig

__all__ = ["NpModel"]


class NpModel:
    def __init__(self, cfg: DcqcnNpConfig):
        self.cfg = cfg
        self.n = cfg.n_cycles
        f = cfg.flows
        self.due = [0] * f
        self.hold = [0] * f
        self.pending = [0] * f
        self.marked = [0] * f
        self.tick = self.n if cfg.rule == "periodic" else 0
        self.cycle = 0
        self.sent: list[tuple[int, int]] = []     # (cycle, flow) of every CNP sent
        self._csr = None

    @property
    def csr(self):
        """The register file of DcqcnNpConfig.register_map (the RTL's csr port), built at its
        first use (the network simulator keeps one model per flow and never writes it)."""
        if self._csr is None:
            self._csr = self.cfg.register_map().model()
        return self._csr

    def write(self, addr: int, value: int) -> None:
        """A register write, applied after this cycle's :meth:`step` (as the RTL applies it
        at the edge that takes it)."""
        if self.csr.write(addr, value) is not None:
            self.n = self.csr["MIN_TIME_BETWEEN_CNPS"]

    def read(self, addr: int) -> int:
        return self.csr.read(addr)

    def offer(self) -> int | None:
        """The flow offered on ``cnp`` this cycle (before :meth:`step`), or None."""
        return next((i for i, d in enumerate(self.due) if d), None)

    def skip(self, n: int) -> None:
        """``n`` cycles without an event, the sink ready: the same as ``n`` calls of
        :meth:`step`, but the stretches in which nothing is offered and no CNP becomes due are
        taken at once (an event-driven host, such as the network simulator, calls it between
        its events)."""
        paper = self.cfg.rule == "paper"
        while n > 0:
            if self.offer() is None:
                if paper:   # until a pending flow's hold goes 1 -> 0 (it becomes due)
                    k = min([h - 1 for h, p in zip(self.hold, self.pending, strict=True)
                             if p] + [n])
                else:       # until the period's counter expires (or wraps)
                    k = min(n, self.tick - 1)
                if k > 0:
                    if paper:
                        self.hold = [max(h - k, 0) for h in self.hold]
                    else:
                        self.tick -= k
                    self.cycle += k
                    n -= k
                    continue
            self.step()
            n -= 1

    def step(self, ce_flow: int | None = None, ready: bool = True) -> int | None:
        """One cycle: ``ce_flow`` a CE-marked packet's flow (or None); ``ready`` the sink's
        ready.  Returns the flow whose CNP was sent this cycle, or None."""
        paper = self.cfg.rule == "paper"
        out = self.offer()
        sent = out if (out is not None and ready) else None
        # 2. timers (before the send sets the new window)
        if paper:
            for i in range(self.cfg.flows):
                if self.hold[i] == 1:
                    self.hold[i] = 0
                    if self.pending[i]:
                        self.due[i], self.pending[i] = 1, 0
                elif self.hold[i] > 1:
                    self.hold[i] -= 1
        else:
            if sent is not None:      # the send clears the old CNP; a check may set a new one
                self.due[sent] = 0
            if self.tick == 1:
                self.tick = self.n
                for i in range(self.cfg.flows):
                    if self.marked[i]:
                        self.due[i], self.marked[i] = 1, 0
            else:       # (a period of N = 0 wraps: 2**timer_width cycles)
                self.tick = (self.tick - 1) % (1 << self.cfg.timer_width)
        # 1. the send
        if sent is not None:
            if paper:
                self.due[sent] = 0
                self.hold[sent], self.pending[sent] = max(self.n - 1, 0), 0
            self.sent.append((self.cycle, sent))
        # 3. the event
        if ce_flow is not None and 0 <= ce_flow < self.cfg.flows:
            f = ce_flow
            if paper:
                if not self.due[f]:
                    if self.hold[f]:
                        self.pending[f] = 1
                    else:
                        self.due[f] = 1
            else:
                self.marked[f] = 1
        self.cycle += 1
        return sent
