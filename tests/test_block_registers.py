"""Every block on the register layer reads back every word of its register map as its golden
model does: after reset, then after random writes to every register (with the block idle), in
the Amaranth simulator.  The identification header is checked against the declaration, and
unmapped words read 0.  ``CC_SEED`` overrides the seed."""

from __future__ import annotations

import os
import random

import pytest

from gateware.tops import TOPS
from hw.lib.csr import fourcc
from tests.streams import run_testbenches


def _marker(cfg):
    from hw.switch.marker import EgressMarker
    from sim.models.marker import MarkerModel
    model = MarkerModel(cfg)
    return EgressMarker(cfg), model.write, model.read


def _window(cfg):
    from hw.nic.ldcp_window import LdcpWindow
    from sim.models.ldcp_window import LdcpWindowModel
    model = LdcpWindowModel(cfg)
    return LdcpWindow(cfg), model._write, model.read


def _sender(cfg):
    from hw.nic.ldcp_transport import LdcpSender
    regs = cfg.register_map().model()
    return LdcpSender(cfg), regs.write, regs.read


def _cnp(cfg):
    from hw.nic.cnp_gen import CnpGenerator
    from sim.models.cnp import CnpModel
    model = CnpModel(cfg)
    return CnpGenerator(cfg), model.write, model.read


def _model_of(block, model):
    """A block whose golden model has ``write``/``read``."""
    def make(cfg):
        mod = model(cfg)
        return block(cfg), mod.write, mod.read
    return make


def _np(cfg):
    from hw.nic.dcqcn_np import DcqcnNp
    from sim.models.dcqcn_np import NpModel
    return _model_of(DcqcnNp, NpModel)(cfg)


def _rate_limiter(cfg):
    from hw.nic.rate_limiter import RateLimiter
    from sim.models.rate_limiter import RateLimiterModel
    return _model_of(RateLimiter, RateLimiterModel)(cfg)


def _qcn_rp(cfg):
    from hw.nic.qcn_rp import QcnRp
    from sim.models.qcn import QcnRpModel
    return _model_of(QcnRp, QcnRpModel)(cfg)


def _qcn_cp(cfg):
    from hw.switch.qcn_cp import QcnCp
    from sim.models.qcn import CpModel
    return _model_of(QcnCp, CpModel)(cfg)


def _cnm(cfg):
    from hw.switch.cnm_gen import CnmGenerator
    from sim.models.cnm import CnmModel
    return _model_of(CnmGenerator, CnmModel)(cfg)


def _dcqcn_rp(cfg):
    from hw.nic.dcqcn_rp import DcqcnRp
    from sim.models.dcqcn import DcqcnRpModel
    return _model_of(DcqcnRp, DcqcnRpModel)(cfg)


def _l3qcn_cp(cfg):
    from hw.switch.l3qcn import L3qcnCp
    from sim.models.l3qcn import L3qcnCpModel
    return _model_of(L3qcnCp, L3qcnCpModel)(cfg)


def _l3qcn_tor(cfg):
    from hw.switch.l3qcn import L3qcnTor
    from sim.models.l3qcn import TorModel
    return _model_of(L3qcnTor, TorModel)(cfg)


def _cnp_notify(cfg):
    # the notification path forwards words 0-5 to its CNP generator and the NP's from word 6:
    # the register map's own model (plain storage) is the reference for the forwarding
    from hw.nic.cnp_notify import CnpNotify
    regs = cfg.register_map().model()
    return CnpNotify(cfg), regs.write, regs.read


BLOCKS = {"marker_8x8": _marker, "ldcp_window_g8": _window, "ldcp_tx": _sender,
          "cnp_gen_ipv6": _cnp, "dcqcn_np": _np, "rate_limiter_4": _rate_limiter,
          "qcn_rp": _qcn_rp, "qcn_cp": _qcn_cp, "cnm_gen": _cnm,
          "dcqcn_rp_connectx": _dcqcn_rp, "l3qcn_cp_roce": _l3qcn_cp,
          "l3qcn_cp_qcn": _l3qcn_cp, "l3qcn_tor": _l3qcn_tor, "cnp_notify": _cnp_notify}
BLOCK_TYPES = {"marker_8x8": "MRKR", "ldcp_window_g8": "LDWN", "ldcp_tx": "LDTX",
               "cnp_gen_ipv6": "CNPG", "dcqcn_np": "DCNP", "rate_limiter_4": "RLIM",
               "qcn_rp": "QCRP", "qcn_cp": "QCCP", "cnm_gen": "CNMG",
               "dcqcn_rp_connectx": "DCRP", "l3qcn_cp_roce": "L3CP", "l3qcn_cp_qcn": "L3CP",
               "l3qcn_tor": "L3TR", "cnp_notify": "CNPN"}


@pytest.mark.parametrize("top", list(BLOCKS))
def test_read_back(top):
    s = int(os.environ.get("CC_SEED", 5))
    print(f"seed {s} (CC_SEED={s} reproduces)")
    rng = random.Random(s)
    cfg = TOPS[top].config
    regmap = cfg.register_map()
    dut, write, read = BLOCKS[top](cfg)
    words = 1 << regmap.addr_width
    assert len(dut.csr_raddr) == regmap.addr_width
    assert read(regmap.header_offset) == fourcc(BLOCK_TYPES[top])
    assert read(regmap.header_offset + 2) == regmap.size_bytes

    async def read_all(ctx, when):
        for addr in range(words):
            ctx.set(dut.csr_raddr, addr)
            await ctx.tick()
            got, want = ctx.get(dut.csr_rdata), read(addr)
            assert got == want, f"{when}: word 0x{addr:02x} RTL 0x{got:x}, model 0x{want:x}"
            if regmap.decode(addr) is None:
                assert got == 0

    async def bench(ctx):
        await read_all(ctx, "after reset")
        for _ in range(3):
            for reg in rng.sample(regmap.registers, len(regmap.registers)):
                value = rng.getrandbits(32)
                ctx.set(dut.csr_w.payload, {"addr": reg.addr, "data": value})
                ctx.set(dut.csr_w.valid, 1)
                await ctx.tick().until(dut.csr_w.ready)
                ctx.set(dut.csr_w.valid, 0)
                write(reg.addr, value)
            for _ in range(2):           # a delayed write (the window engine) lands
                await ctx.tick()
            await read_all(ctx, "after writes")

    run_testbenches(dut, bench)
