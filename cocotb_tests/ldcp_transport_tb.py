"""cocotb testbench: the exported LDCP sender (top ``ldcp_tx``) or receiver (``ldcp_rx``) in a
loop with the other end's golden model, through channels that delay, drop and CE-mark
(:mod:`sim.models.ldcp_loop`), compared cycle by cycle with its own golden model
(:mod:`sim.models.ldcp_transport`).

Every cycle the testbench drives the DUT's inputs, samples every output after ``ReadOnly``
(sender: the offered packet, every ``ready``, the whole ``state`` port, the window; receiver:
``data.ready``, the offered ACK, the delivered bytes, the ``state`` port) and compares them with
the model's outputs for that cycle; at the edge the model takes the same inputs.  So every
released packet (LSN, length, ECN capability, retransmission flag), every ACK, and every state
change is compared.  Per message it asserts that every byte reached the receiver exactly once
and in order and that the sender finished.  Run through ``cocotb_tests/test_ldcp_transport.py``,
which passes the configuration as JSON in ``CC_CONFIG``.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge, Timer

from cocotb_tests.infra.tb import CLOCK_PERIOD_NS, TBBase, env_config, env_count, test_seed
from hw.layouts import (
    LayoutCodec,
    csr_write_layout,
    ldcp_rx_deliver_layout,
    ldcp_rx_packet_layout,
    ldcp_rx_state_layout,
    ldcp_tack_layout,
    ldcp_tx_packet_layout,
    ldcp_tx_start_layout,
    ldcp_tx_state_layout,
)
from hw.nic.ldcp_transport_config import TX_CSR_ADDR_WIDTH, LdcpTransportConfig, LdcpTransportReg
from hw.nic.ldcp_window_config import ONE
from sim.models.ldcp_loop import Channel, ChannelConfig
from sim.models.ldcp_transport import (
    Deliver,
    LdcpReceiverCycleModel,
    LdcpSenderModel,
    RxPacket,
    TAck,
    TxPacket,
)


class LoopTB(TBBase):
    """One end in RTL (``side`` "tx" or "rx"), both ends as models, two channels."""

    def __init__(self, dut, cfg: LdcpTransportConfig, side: str, seed: int):
        super().__init__(dut, seed)
        self.cfg, self.side = cfg, side
        self.tx = LdcpSenderModel(cfg)
        self.rx = LdcpReceiverCycleModel(cfg)
        self.data = Channel(ChannelConfig(), random.Random(self.rng.random()))
        self.acks = Channel(ChannelConfig(), random.Random(self.rng.random()))
        self.p_pkt_ready = self.p_ack_ready = 1.0
        self.c_pkt = LayoutCodec(ldcp_tx_packet_layout(cfg))
        self.c_rxp = LayoutCodec(ldcp_rx_packet_layout(cfg))
        self.c_ack = LayoutCodec(ldcp_tack_layout(cfg))
        self.c_start = LayoutCodec(ldcp_tx_start_layout(cfg))
        self.c_csr = LayoutCodec(csr_write_layout(TX_CSR_ADDR_WIDTH, 32))
        self.c_txs = LayoutCodec(ldcp_tx_state_layout(cfg))
        self.c_rxs = LayoutCodec(ldcp_rx_state_layout(cfg))
        self.c_dlv = LayoutCodec(ldcp_rx_deliver_layout(cfg))
        self.start_len: int | None = None
        self.write: tuple[int, int] | None = None
        self.clear = False
        self.inject: RxPacket | None = None     # a packet for the receiver, ahead of the channel
        self.cycles = 0
        self.skipped = 0
        self.released: list[tuple[int, TxPacket]] = []
        self.ack_log: list[TAck] = []
        self.delivered: list[Deliver] = []
        self.driven: dict[str, int] = {}
        self.handles: dict = {}
        self.recent: list = []
        if side == "tx":
            names = ("ack__valid", "pkt__ready", "start__valid", "csr_w__valid")
        else:
            names = ("data__valid", "ack__ready", "clear")
        for name in names:
            self._drive(name, 0)

    def _drive(self, name: str, value: int) -> None:
        """Write an input only when it changes (handle lookups and writes dominate)."""
        if self.driven.get(name) != value:
            self.driven[name] = value
            self.h(name).value = value

    def h(self, name: str):
        """A cached signal handle."""
        handle = self.handles.get(name)
        if handle is None:
            handle = self.handles[name] = getattr(self.dut, name)
        return handle

    async def start(self):
        await self.reset()
        self.tx.edge()            # the edge that ended the reset (inputs idle)
        self.rx.edge(None, True)
        self.cycles = 1

    def fail(self, what: str, got, exp):
        raise AssertionError(f"cycle {self.cycles}: {what}\n  RTL   {got}\n  model {exp}\n"
                             f"  recent: {self.recent[-8:]}")

    # ------------------------------------------------------------------------ idle skip -----
    def quiet_cycles(self) -> int:
        """Cycles in which nothing can happen but the sender's RTO count and sub-1 timer
        phase (no input, nothing due in either channel, the receiver empty), which the
        models skip in O(1) while the simulator runs them freely."""
        tx, rx, cyc = self.tx, self.rx, self.cycles
        if (self.start_len is not None or self.write is not None or self.clear
                or self.inject is not None or rx.out is not None or rx.hold is not None
                or rx.s.pending or rx.deliver is not None or rx.s.ev_bad):
            return 0
        k = min(tx._skippable(), 100_000)
        if not k or tx._offer() is not None:
            return 0
        for ch in (self.data, self.acks):
            if ch.q:
                k = min(k, ch.q[0][0] - cyc)
        return k - 1 if k > 2 else 0

    async def skip(self, k: int):
        drive = self._drive
        if self.side == "tx":
            drive("ack__valid", 0)
            drive("start__valid", 0)
            drive("csr_w__valid", 0)
        else:
            drive("data__valid", 0)
            drive("clear", 0)
        await Timer(k * CLOCK_PERIOD_NS - CLOCK_PERIOD_NS // 2, unit="ns")
        await RisingEdge(self.dut.clk)
        self.tx._skip(k)
        self.rx.cycle += k
        self.cycles += k
        self.skipped += k

    # ------------------------------------------------------------------------ one cycle -----
    async def step(self):
        k = self.quiet_cycles()
        if k:
            await self.skip(k)
        rng, cyc = self.rng, self.cycles
        prdy = self.p_pkt_ready >= 1 or rng.random() < self.p_pkt_ready
        ardy = self.p_ack_ready >= 1 or rng.random() < self.p_ack_ready
        ack_in = self.acks.head(cyc)
        data_in = self.inject or self.data.head(cyc)
        if self.side == "tx":
            await self._tx_cycle(ack_in, prdy)
        else:
            await self._rx_cycle(data_in, ardy)
        self.recent = self.recent[-16:]
        # the rest of the loop, in the model (both ends are modelled; the DUT's end was
        # compared above)
        pkt = self.tx.outputs().pkt
        r_out = self.rx.outputs(ardy)
        taken = self.tx.edge(ack_in, prdy, self.start_len, self.write)
        if taken[0]:
            self.acks.pop()
        if taken[1]:
            self.released.append((cyc, pkt))
            self.data.push(cyc, pkt)
            self.recent.append((cyc, pkt))
        if taken[2]:
            self.start_len = None
        if taken[3]:
            self.write = None
        if r_out.ack is not None and ardy:
            self.ack_log.append(r_out.ack)
            self.acks.push(cyc, r_out.ack)
            self.recent.append((cyc, r_out.ack))
        if self.rx.edge(data_in, ardy, self.clear):
            if self.inject is not None:
                self.inject = None
            else:
                self.data.pop()
        self.clear = False
        if self.rx.deliver is not None:
            self.delivered.append(self.rx.deliver)
        self.cycles += 1

    async def _tx_cycle(self, ack_in, prdy):
        dut, drive = self.dut, self._drive
        drive("ack__valid", int(ack_in is not None))
        if ack_in is not None:
            drive("ack__payload", self.c_ack.pack(ack_in.__dict__))
        drive("pkt__ready", int(prdy))
        drive("start__valid", int(self.start_len is not None))
        if self.start_len is not None:
            drive("start__payload", self.c_start.pack({"length": self.start_len}))
        drive("csr_w__valid", int(self.write is not None))
        if self.write is not None:
            drive("csr_w__payload", self.c_csr.pack({"addr": self.write[0],
                                                     "data": self.write[1]}))
        await ReadOnly()
        h = self.h
        o = self.tx.outputs()
        got_state = h("state").value.to_unsigned()
        if got_state != self.c_txs.pack(o.state.__dict__):
            self.fail("state", self.c_txs.unpack(got_state), o.state)
        if int(h("pkt__valid").value) != (o.pkt is not None):
            self.fail("pkt.valid", int(h("pkt__valid").value), o.pkt)
        if o.pkt is not None:
            got = self.c_pkt.unpack(h("pkt__payload").value.to_unsigned())
            if TxPacket(got["lsn"], got["length"], bool(got["ect"]), bool(got["retx"]),
                        bool(got["last"])) != o.pkt:
                self.fail("packet", got, o.pkt)
        readies = (int(h("ack__ready").value), int(h("start__ready").value),
                   int(h("csr_w__ready").value))
        if readies != (o.ack_ready, o.start_ready, o.csr_ready):
            self.fail("ack/start/csr ready", readies, (o.ack_ready, o.start_ready, o.csr_ready))
        if h("cw").value.to_unsigned() != o.cw:
            self.fail("cw", h("cw").value.to_unsigned(), o.cw)
        await RisingEdge(dut.clk)

    async def _rx_cycle(self, data_in, ardy):
        dut, drive = self.dut, self._drive
        drive("data__valid", int(data_in is not None))
        if data_in is not None:
            drive("data__payload", self.c_rxp.pack(data_in.__dict__))
        drive("ack__ready", int(ardy))
        drive("clear", int(self.clear))
        await ReadOnly()
        h = self.h
        o = self.rx.outputs(ardy)
        got_state = h("state").value.to_unsigned()
        if got_state != self.c_rxs.pack(o.state.__dict__):
            self.fail("state", self.c_rxs.unpack(got_state), o.state)
        if int(h("data__ready").value) != o.data_ready:
            self.fail("data.ready", int(h("data__ready").value), o.data_ready)
        if int(h("ack__valid").value) != (o.ack is not None):
            self.fail("ack.valid", int(h("ack__valid").value), o.ack)
        if o.ack is not None:
            got = self.c_ack.unpack(h("ack__payload").value.to_unsigned())
            if TAck(got["lsn"], bool(got["ece"]), got["n"], bool(got["nak"])) != o.ack:
                self.fail("ack", got, o.ack)
        if int(h("deliver_valid").value) != (o.deliver is not None):
            self.fail("deliver_valid", int(h("deliver_valid").value), o.deliver)
        if o.deliver is not None:
            got = self.c_dlv.unpack(h("deliver").value.to_unsigned())
            if Deliver(got["lsn"], got["length"], bool(got["last"])) != o.deliver:
                self.fail("deliver", got, o.deliver)
        await RisingEdge(dut.clk)

    # ------------------------------------------------------------------------ messages ------
    async def message(self, length: int, max_cycles: int = 400_000) -> int:
        """Send one message through the loop; assert delivery exactly once and in order."""
        t0 = self.cycles
        self.delivered.clear()
        self.start_len = length
        await self.step()
        while not self.tx.s.done or self.start_len is not None:
            if self.cycles - t0 > max_cycles:
                raise AssertionError(f"message of {length} B not done: {self.tx.s}")
            await self.step()
        at = 0
        for d in self.delivered:
            assert d.lsn == at, f"delivered {d} out of order (expected LSN {at})"
            at += d.length
        assert at == length and self.delivered[-1].last, f"delivered {at} of {length} bytes"
        return self.cycles - t0

    async def teardown(self):
        """Between messages: the old packets and ACKs vanish, the receiver is cleared, and the
        DUT's outputs drain."""
        self.data.clear()
        self.acks.clear()
        self.clear = True
        await self.step()
        for _ in range(4):
            await self.step()
        assert self.rx.outputs(True).ack is None and not self.tx.s.load_pending


def channels(rng: random.Random):
    data = ChannelConfig(delay=rng.randint(5, 120), jitter=rng.choice([0, 4, 16]),
                         p_drop=rng.choice([0.0, 0.0, 0.01, 0.05]),
                         p_drop_not_ect=rng.choice([0.0, 0.2, 0.7, 1.0]),
                         p_mark=rng.choice([0.0, 0.05, 0.3, 0.9]))
    acks = ChannelConfig(delay=rng.randint(5, 120), jitter=rng.choice([0, 4, 16]),
                         p_drop=rng.choice([0.0, 0.0, 0.02, 0.1]))
    return data, acks


async def random_run(dut, side: str, default_seed: int):
    cfg = env_config(LdcpTransportConfig)
    tb = LoopTB(dut, cfg, side, test_seed(default_seed))
    rng = tb.rng
    await tb.start()
    mtu = cfg.window.mtu
    events_goal = env_count("CC_EVENTS", 4000)
    messages = 0
    regs = cfg.registers()
    while len(tb.released) + len(tb.ack_log) < events_goal:
        d, a = channels(rng)
        tb.data.cfg, tb.acks.cfg = d, a
        tb.p_pkt_ready = rng.choice([1.0, 1.0, 0.5])
        tb.p_ack_ready = rng.choice([1.0, 1.0, 0.6])
        if side == "tx" and rng.random() < 0.3:       # the registers, between messages
            reg = rng.choice(list(LdcpTransportReg))
            value = {LdcpTransportReg.IW: rng.choice([1, 2, regs.iw, 3 * regs.iw]),
                     LdcpTransportReg.CW_BDP: rng.choice([ONE // 8, ONE, regs.cw_bdp,
                                                          500 * ONE]),
                     LdcpTransportReg.RTO: rng.choice([3 * (d.delay + a.delay) + 60,
                                                       regs.rto])}[reg]
            tb.write = (int(reg), value)
            await tb.step()
            await tb.step()
            assert tb.write is None
        length = rng.choice([1, rng.randint(1, mtu), rng.randint(1, 20 * mtu),
                             rng.randint(1, 80 * mtu), rng.randint(60 * mtu, 200 * mtu)])
        await tb.message(length)
        await tb.teardown()
        messages += 1
    s = tb.tx.stats
    tb.log.info("%d messages, %d cycles (%d skipped idle): %d packets (%d retransmitted), "
                "%d ACKs, %d NAKs, "
                "%d RTOs, exits %s, all compared", messages, tb.cycles, tb.skipped,
                len(tb.released),
                s.retransmissions, len(tb.ack_log), s.naks, s.rtos, s.exits)
    # the run must have exercised the interesting paths
    assert s.retransmissions and s.naks and s.rtos and s.exits[1] and s.exits[2]


@cocotb.test()
async def random_tx(dut):
    await random_run(dut, "tx", 4004)


@cocotb.test()
async def random_rx(dut):
    await random_run(dut, "rx", 5005)


# ---------------------------------------------------------------------------- directed ------
def once(pred):
    """A drop predicate that drops each matching packet only the first time."""
    seen = set()

    def drop(p):
        if pred(p) and p.lsn not in seen:
            seen.add(p.lsn)
            return True
        return False
    return drop


@cocotb.test()
async def directed_tx(dut):
    """The directed scenarios (docs/ldcp-transport.md) on the RTL sender, with expected values
    from the draft's rules."""
    cfg = env_config(LdcpTransportConfig)
    tb = LoopTB(dut, cfg, "tx", 1)
    await tb.start()
    mtu, iw = cfg.window.mtu, cfg.registers().iw
    plain = ChannelConfig(delay=60)

    async def run(name, n_bytes, data=plain, drop=None, ack_drop=None):
        tb.data.cfg, tb.acks.cfg = data, plain
        tb.data.drop, tb.acks.drop = drop, ack_drop
        tb.released.clear()
        before = dict(tb.tx.stats.exits), tb.tx.stats.rtos, tb.tx.stats.naks
        await tb.message(n_bytes)
        await tb.teardown()
        s = tb.tx.stats
        pk = [p for _, p in tb.released]
        tb.log.info("%s: %d packets, exits +%s, RTOs +%d, NAKs +%d", name, len(pk),
                    {k: s.exits[k] - before[0][k] for k in (1, 2)}, s.rtos - before[1],
                    s.naks - before[2])
        return pk, {k: s.exits[k] - before[0][k] for k in (1, 2)}, s.rtos - before[1]

    # shorter than IW: Not-ECT except the last
    pk, ex, _ = await run("short", 3 * mtu + 5)
    assert [p.ect for p in pk] == [False, False, False, True] and ex == {1: 0, 2: 0}
    # exactly IW: the IW-th is ECN-capable; exit 2 on its ACK
    pk, ex, _ = await run("exactly IW", iw * mtu)
    assert [p.ect for p in pk] == [False] * (iw - 1) + [True] and ex == {1: 0, 2: 1}
    # longer: exit 2 then the window engine (cw = BDP, growing)
    pk, ex, _ = await run("longer", 4 * iw * mtu)
    assert all(p.ect for p in pk[iw:]) and ex == {1: 0, 2: 1} and tb.tx.cw > iw * ONE
    # losses in fast start
    for name, lsn in (("first", 0), ("middle", (iw // 2) * mtu), ("IW-th", (iw - 1) * mtu)):
        pk, ex, rtos = await run(f"loss of the {name} packet", 3 * iw * mtu,
                                 drop=once(lambda p, lsn=lsn: p.lsn == lsn))
        assert ex == {1: 1, 2: 0} and rtos == 0 and any(p.retx and p.lsn == lsn for p in pk)
    pk, ex, rtos = await run("every Not-ECT packet lost", 2 * iw * mtu,
                             data=ChannelConfig(delay=60, p_drop_not_ect=1.0))
    assert ex == {1: 1, 2: 0} and rtos == 0
    # loss in the stable stage, loss of ACKs, the final ACK (the timeout)
    pk, ex, rtos = await run("stable-stage loss", 4 * iw * mtu,
                             drop=once(lambda p: p.lsn == 2 * iw * mtu))
    assert ex == {1: 0, 2: 1} and rtos == 0 and pk[-1].lsn == 4 * iw * mtu - mtu
    lost = []
    pk, ex, rtos = await run("final ACK lost", 2 * iw * mtu,
                             ack_drop=lambda a: a.lsn == 2 * iw * mtu and not lost
                             and not lost.append(a))
    assert rtos == 1 and pk[-1].retx
    tb.log.info("directed_tx: %d cycles compared", tb.cycles)


@cocotb.test()
async def directed_rx(dut):
    """Receiver corners: malformed packets, CE flush with the ACK output stalled, the flush
    timer, clear."""
    cfg = env_config(LdcpTransportConfig)
    tb = LoopTB(dut, cfg, "rx", 2)
    await tb.start()
    mtu = cfg.window.mtu
    tb.data.cfg = ChannelConfig(delay=30, p_mark=0.5)
    tb.acks.cfg = ChannelConfig(delay=30)
    tb.p_ack_ready = 0.3
    await tb.message(3 * cfg.registers().iw * mtu)
    await tb.teardown()
    bad = [RxPacket(0, 0, False, False), RxPacket(0, mtu + 1, False, False),
           RxPacket(cfg.max_message - 10, 11, False, True)]
    for p in bad:
        tb.inject = p
        while tb.inject is not None:
            await tb.step()
        await tb.step()
        assert tb.rx.s.ev_bad or tb.rx.s.expected == 0
    # the flush timer: one packet and nothing after it (m > 1)
    tb.p_ack_ready = 1.0
    tb.inject = RxPacket(0, mtu, False, False)
    for _ in range(cfg.registers().ack_delay + 4):
        await tb.step()
    assert tb.ack_log[-1] == TAck(mtu, False, 1)
    await tb.teardown()
    tb.log.info("directed_rx: %d cycles compared", tb.cycles)
