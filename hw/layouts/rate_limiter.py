"""Layouts of the per-flow rate limiter (:mod:`hw.nic.rate_limiter`)."""

from amaranth.lib import data

__all__ = ["rl_rate_layout", "rl_send_layout", "bits_for_flows"]


def rl_rate_layout(cfg) -> data.StructLayout:
    """Set a flow's rate (the reaction point's Rc, UQ.10 Mb/s)."""
    return data.StructLayout({"flow": bits_for_flows(cfg), "rate": cfg.rate_width})


def rl_send_layout(cfg) -> data.StructLayout:
    """The flow sent a packet of ``bytes`` bytes."""
    return data.StructLayout({"flow": bits_for_flows(cfg), "bytes": cfg.len_width})


def bits_for_flows(cfg) -> int:
    return max(1, (cfg.flows - 1).bit_length())
