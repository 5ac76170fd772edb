"""Driver and monitor for Amaranth streams as exported to Verilog.

An Amaranth ``stream.Signature`` member ``x`` becomes the ports ``x__payload`` (the packed
``data`` layout), ``x__valid`` and ``x__ready``.  Payloads cross as integers; the testbench packs
and unpacks them through the shared layouts of :mod:`hw.layouts`.

Timing discipline (the same in driver and monitor): in every cycle, wait for ``ReadOnly`` (all
combinational logic settled for the inputs of this cycle), note whether ``valid & ready`` holds
(the transfer happens at the coming edge), then wait for the rising edge and drive the inputs of
the next cycle.  Nothing is written in a read-only phase and nothing is sampled before settling.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable

from cocotb.handle import Immediate
from cocotb.triggers import ReadOnly, RisingEdge


class Pattern:
    """A per-cycle on/off pattern: ``Pattern.always()``, ``Pattern.random(p_on, rng)``, or
    bursts (``Pattern.bursts(on, off)``).  Used for idle cycles of a driver (on = present data)
    and for back-pressure of a monitor (on = ready)."""

    def __init__(self, fn: Callable[[], bool], name: str):
        self._fn, self.name = fn, name

    def __call__(self) -> bool:
        return self._fn()

    def __repr__(self):
        return f"Pattern({self.name})"

    @classmethod
    def always(cls):
        return cls(lambda: True, "always")

    @classmethod
    def random(cls, p_on: float, rng: random.Random):
        return cls(lambda: rng.random() < p_on, f"random {p_on:.2f}")

    @classmethod
    def bursts(cls, on: int, off: int):
        state = {"t": 0}

        def fn():
            state["t"] = (state["t"] + 1) % (on + off)
            return state["t"] < on

        return cls(fn, f"bursts {on} on / {off} off")


class StreamDriver:
    """Drives ``<name>__valid`` / ``<name>__payload`` and honours ``<name>__ready``.

    ``send(item)`` queues a transaction; ``encode(item)`` gives its payload bits (default: the
    item is already an int).  ``on_accept(item)`` is called right after the edge where the sink
    takes it, which is where a testbench steps its golden model; it may ``send`` the next item
    (generated from the model's state) without losing a cycle.
    cycle number of every transfer when ``cycle`` is given a counter callable.
    """

    def __init__(self, dut, name: str, clock, pattern: Pattern | None = None,
                 on_accept: Callable[[object], None] | None = None,
                 encode: Callable[[object], int] | None = None):
        self.valid = getattr(dut, f"{name}__valid")
        self.ready = getattr(dut, f"{name}__ready")
        self.payload = getattr(dut, f"{name}__payload")
        self.clock = clock
        self.pattern = pattern or Pattern.always()
        self.on_accept = on_accept
        self.encode = encode or (lambda item: item)
        self.queue: deque = deque()
        self.accepted = 0
        self.valid.value = Immediate(0)

    def send(self, item) -> None:
        self.queue.append(item)

    def idle(self) -> bool:
        return not self.queue and not int(self.valid.value)

    async def run(self):
        presenting = False
        while True:
            await ReadOnly()
            taken = presenting and bool(self.ready.value)
            await RisingEdge(self.clock)
            if taken:
                item = self.queue.popleft()
                self.accepted += 1
                if self.on_accept:
                    self.on_accept(item)
                presenting = False
            # Once presented, an item stays presented until taken (payload stable).
            presenting = bool(self.queue) and (presenting or self.pattern())
            if presenting:
                self.payload.value = self.encode(self.queue[0])
            self.valid.value = int(presenting)


class StreamMonitor:
    """Drives ``<name>__ready`` with a back-pressure pattern and reports every transfer as
    ``callback(decode(bits))`` (default: the payload as an int)."""

    def __init__(self, dut, name: str, clock, callback: Callable[[object], None],
                 pattern: Pattern | None = None, decode: Callable[[int], object] | None = None):
        self.valid = getattr(dut, f"{name}__valid")
        self.ready = getattr(dut, f"{name}__ready")
        self.payload = getattr(dut, f"{name}__payload")
        self.clock = clock
        self.callback = callback
        self.decode = decode or (lambda bits: bits)
        self.pattern = pattern or Pattern.always()
        self.count = 0
        self.ready.value = Immediate(0)

    async def run(self):
        while True:
            await ReadOnly()
            bits = None
            if self.valid.value and self.ready.value:
                bits = self.payload.value.to_unsigned()
            await RisingEdge(self.clock)
            if bits is not None:  # reported just after its transfer edge, like the driver's
                self.count += 1
                self.callback(self.decode(bits))
            self.ready.value = int(self.pattern())
