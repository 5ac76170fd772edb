"""Fast checks of the AXI-Stream adapter (hw/lib/axis.py) and of the notification path's
configuration and register map (hw/nic/cnp_notify*.py); the RTL runs on Verilator in
cocotb_tests/test_axis.py."""

from __future__ import annotations

import pytest

from hw.lib.axis import AxisWrapper
from hw.nic.cnp_config import CnpGenConfig
from hw.nic.cnp_notify_config import CnpNotifyConfig
from hw.nic.dcqcn_np_config import DcqcnNpConfig
from hw.params import ConfigError
from hw.switch.l3qcn import L3qcnTor
from hw.switch.l3qcn_config import L3qcnTorConfig


def _unused(component):
    component._MustUse__silence = True       # built for its signature, not elaborated
    return component


def test_wrapper_ports():
    w = _unused(AxisWrapper(_unused(L3qcnTor(L3qcnTorConfig()))))
    names = set(w.signature.members)
    for p in ("s_axis", "m_axis"):
        assert {f"{p}_t{s}" for s in ("data", "keep", "valid", "ready", "last", "user")} <= names
    assert "packet" not in names and "cnm" not in names and "learn" in names
    assert w.signature.members["s_axis_tdata"].shape == 64
    assert w.signature.members["m_axis_tready"].flow != w.signature.members["m_axis_tdata"].flow


def test_wrapper_errors():
    from hw.nic.dcqcn_np import DcqcnNp
    with pytest.raises(TypeError, match="no frame-stream port"):
        AxisWrapper(_unused(DcqcnNp(DcqcnNpConfig())))
    with pytest.raises(TypeError, match="not frame-stream ports"):
        AxisWrapper(_unused(L3qcnTor(L3qcnTorConfig())), {"learn": "s_axis"})


@pytest.mark.parametrize("changes, field", [
    ({"np": DcqcnNpConfig(flows=6)}, "np.flows"),
    ({"cnp": CnpGenConfig(ip_version=6)}, "cnp"),
    ({"cnp": CnpGenConfig(l2="none")}, "cnp"),
    ({"counter_width": 40}, "counter_width"),
])
def test_config_errors(changes, field):
    with pytest.raises(ConfigError, match=rf"CnpNotifyConfig\.{field} = .* is out of range"):
        CnpNotifyConfig(**changes)


def test_register_addresses():
    # hand-derived: flow windows of 16 words from word 0x80 (byte 0x200) for 8 flows
    m = CnpNotifyConfig().register_map()
    assert [m.addr(n) for n in ("CNP_DSCP", "PKEY", "CNT_CNP", "CNT_UNKNOWN_QP", "ID")] == \
        [0, 5, 7, 11, 0x10]
    assert m.addr("QP", 0) == 0x80 and m.addr("UDP_SPORT", 7) == 0x80 + 7 * 16 + 8
    assert m.size_bytes == 1024
    assert m["QP"].write_mask == 0x80FF_FFFF
    own = CnpNotifyConfig().register_map(forwarded=False)
    assert (own.header_offset, own.flow_base, own.flow_shift, own.addr_width) == \
        (m.header_offset, m.flow_base, m.flow_shift, m.addr_width)
    assert m.addr("MIN_TIME_BETWEEN_CNPS") == 6 or not CnpNotifyConfig().np_registers()
    big = CnpNotifyConfig(np=DcqcnNpConfig(flows=64)).register_map()
    assert big.addr("QP", 63) == 1024 + 63 * 16


async def _read_regs(ctx, dut, regmap, names) -> dict[str, int]:
    """The words of the named registers, read through the register port (latency 1)."""
    out = {}
    for name in names:
        ctx.set(dut.csr_raddr, regmap.addr(name))
        await ctx.tick()
        out[name] = ctx.get(dut.csr_rdata)
    return out


def test_counters_saturate():
    """An 8-bit build's counters stop at 255: 300 runts (one 8-byte beat each, below the
    60-byte minimum) leave CNT_MALFORMED at 255, not 300 mod 256 = 44; the other counters
    stay 0."""
    from hw.nic.cnp_notify import CnpNotify
    from tests.streams import run_testbenches
    cfg = CnpNotifyConfig(counter_width=8)
    regmap = cfg.register_map()
    dut = CnpNotify(cfg)
    got = {}

    async def bench(ctx):
        ctx.set(dut.s_axis_tkeep, 0xFF)
        ctx.set(dut.s_axis_tlast, 1)
        for _ in range(300):
            ctx.set(dut.s_axis_tdata, 0x0101010101010101)
            ctx.set(dut.s_axis_tvalid, 1)
            await ctx.tick()
        ctx.set(dut.s_axis_tvalid, 0)
        for _ in range(10):
            await ctx.tick()
        got.update(await _read_regs(ctx, dut, regmap,
                                    ("CNT_MALFORMED", "CNT_CNP", "CNT_CE", "CNT_OTHER")))

    run_testbenches(dut, bench)
    assert got == {"CNT_MALFORMED": 255, "CNT_CNP": 0, "CNT_CE": 0, "CNT_OTHER": 0}, got


def test_unknown_qp_counter_saturates():
    """The unknown-QP counter (two sources, up to two counts per cycle) of an 8-bit build
    stops at 255: 300 CE-marked RoCEv2 packets to a table with no valid entry (the reset
    state), each a 60-byte frame of 8 beats, leave CNT_UNKNOWN_QP at 255 and send nothing."""
    from scapy.contrib.roce import BTH
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    from hw.nic.cnp_notify import CnpNotify
    from tests.streams import run_testbenches
    cfg = CnpNotifyConfig(counter_width=8)
    regmap = cfg.register_map()
    dut = CnpNotify(cfg)
    frame = bytes(Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")
                  / IP(src="10.0.0.2", dst="10.0.0.1", tos=3, flags="DF")
                  / UDP(sport=1234, dport=4791) / BTH(opcode=0x04, dqpn=5)).ljust(60, b"\0")
    beats = [frame[i:i + 8] for i in range(0, len(frame), 8)]
    got = {}

    async def bench(ctx):
        for _ in range(300):
            for k, beat in enumerate(beats):
                ctx.set(dut.s_axis_tdata, int.from_bytes(beat.ljust(8, b"\0"), "little"))
                ctx.set(dut.s_axis_tkeep, (1 << len(beat)) - 1)
                ctx.set(dut.s_axis_tlast, k == len(beats) - 1)
                ctx.set(dut.s_axis_tvalid, 1)
                await ctx.tick()
                assert not ctx.get(dut.m_axis_tvalid)
        ctx.set(dut.s_axis_tvalid, 0)
        for _ in range(20):
            await ctx.tick()
            assert not ctx.get(dut.m_axis_tvalid)
        got.update(await _read_regs(ctx, dut, regmap,
                                    ("CNT_UNKNOWN_QP", "CNT_MALFORMED", "CNT_CE", "CNT_CNP")))

    run_testbenches(dut, bench)
    assert got == {"CNT_UNKNOWN_QP": 255, "CNT_MALFORMED": 0, "CNT_CE": 0, "CNT_CNP": 0}, got
