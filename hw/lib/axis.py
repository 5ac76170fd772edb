"""AXI-Stream ports (AMBA 4 AXI4-Stream, ARM IHI 0051) for the project's frame streams.

The frame generators and parsers move frames as a valid/ready stream of
:func:`hw.layouts.byte_beat_layout` beats: ``data_bytes`` bytes per beat (a configuration knob
of each block: 4, 8 or 16; 8 = 64 bits, a 10GbE MAC datapath, by default), wire byte ``i`` in
``data[8i:8i+8]``, ``keep`` bit ``i`` for byte ``i`` (all ones except on the last beat, whose
valid bytes are the low ones) and ``last`` on the final beat.  That is already the AXI-Stream
byte order (``tdata`` lane ``i`` = byte ``i``, little-endian lanes), so the adapter is a
renaming plus the ``tuser`` convention of Alex Forencich's verilog-ethernet / Corundum MACs;
there is no width conversion: export the block with ``data_bytes`` equal to the AXI width.

Ports of an interface named ``p`` (``m_axis`` for a master, ``s_axis`` for a slave):
``p_tdata[8*DB]``, ``p_tkeep[DB]``, ``p_tvalid``, ``p_tready``, ``p_tlast``, ``p_tuser[U]``.

* Master (a frame out of a block): ``tvalid`` never waits for ``tready`` and ``tdata``,
  ``tkeep``, ``tlast`` are held while ``tvalid & ~tready`` (the generators assemble a frame in a
  register and hold each beat until it is taken: checked by the cocotb tests); ``tuser`` is 0.
* Slave (a frame into a block): ``tready`` is the block's ready.  The stream must be packed
  (``tkeep`` all ones except on the ``tlast`` beat, whose valid bytes are the low ones: what a
  MAC delivers).  ``tuser[0]`` on the ``tlast`` beat marks a bad frame (the MAC's FCS or
  framing error, Forencich's convention); :class:`AxisWrapper` then discards that beat's bytes
  (``keep`` 0), so the frame's length no longer matches its headers and a parser that checks
  lengths (the L3QCN ToR converter does) rejects it.

:class:`AxisWrapper` puts AXI-Stream ports in place of a block's frame-stream ports and passes
every other port through; :func:`axis_members`, :func:`axis_from_stream` and
:func:`stream_from_axis` are the same pieces for a block that has AXI-Stream ports of its own
(:mod:`hw.nic.cnp_notify`).
"""

from __future__ import annotations

from collections.abc import Mapping

from amaranth.hdl import Module, Mux, Shape
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["axis_members", "axis_from_stream", "stream_from_axis", "AxisWrapper",
           "frame_stream_ports"]


def axis_members(prefix: str, data_bytes: int, user_width: int = 1, *,
                 master: bool) -> dict:
    """The signature members of an AXI-Stream interface ``prefix_t*`` (``master``: the
    component drives ``tdata``..``tuser`` and reads ``tready``)."""
    fwd, back = (Out, In) if master else (In, Out)
    p = prefix
    return {f"{p}_tdata": fwd(8 * data_bytes), f"{p}_tkeep": fwd(data_bytes),
            f"{p}_tvalid": fwd(1), f"{p}_tready": back(1), f"{p}_tlast": fwd(1),
            f"{p}_tuser": fwd(user_width)}


def _port(owner, prefix: str, name: str):
    return getattr(owner, f"{prefix}_{name}")


def axis_from_stream(m: Module, owner, prefix: str, beats) -> None:
    """Drive master ``owner.<prefix>_t*`` from the byte-beat stream ``beats`` (the block's
    output; its ``ready`` is driven from ``tready``)."""
    p = beats.payload
    m.d.comb += [
        _port(owner, prefix, "tdata").eq(p.data),
        _port(owner, prefix, "tkeep").eq(p.keep),
        _port(owner, prefix, "tlast").eq(p.last),
        _port(owner, prefix, "tvalid").eq(beats.valid),
        _port(owner, prefix, "tuser").eq(0),
        beats.ready.eq(_port(owner, prefix, "tready")),
    ]


def stream_from_axis(m: Module, owner, prefix: str, beats) -> None:
    """Drive the byte-beat stream ``beats`` (the block's input) from slave
    ``owner.<prefix>_t*``; a ``tlast`` beat with ``tuser[0]`` set (bad frame) is passed on with
    ``keep`` 0."""
    bad = _port(owner, prefix, "tuser")[0] & _port(owner, prefix, "tlast")
    p = beats.payload
    m.d.comb += [
        p.data.eq(_port(owner, prefix, "tdata")),
        p.keep.eq(Mux(bad, 0, _port(owner, prefix, "tkeep"))),
        p.last.eq(_port(owner, prefix, "tlast")),
        beats.valid.eq(_port(owner, prefix, "tvalid")),
        _port(owner, prefix, "tready").eq(beats.ready),
    ]


def _is_frame_stream(member) -> bool:
    if not member.is_signature or set(member.signature.members) != {"payload", "valid",
                                                                     "ready"}:
        return False
    shape = member.signature.members["payload"].shape
    return isinstance(shape, data.StructLayout) and {n for n, _ in shape} == {
        "data", "keep", "last"}


def frame_stream_ports(block: wiring.Component) -> dict[str, bool]:
    """The block's frame-stream ports: name -> True for an output (AXI master)."""
    return {name: member.flow == Out for name, member in block.signature.members.items()
            if _is_frame_stream(member)}


class AxisWrapper(wiring.Component):
    """A block with AXI-Stream interfaces in place of its frame-stream ports.

    Parameters
    ----------
    block : wiring.Component
        A frame generator or parser (ports of ``stream.Signature(byte_beat_layout(DB))``).
    names : mapping of port name -> interface prefix, optional
        By default the block's only output frame port becomes ``m_axis`` and its only input
        frame port ``s_axis``; with several of one direction, ``m_axis_<port>`` /
        ``s_axis_<port>``.
    user_width : int
        Width of ``tuser`` (1: the bad-frame bit).

    Ports
    -----
    every port of ``block`` that is not a frame stream, unchanged (``csr_*``, request streams,
    counters); for each frame stream, ``<prefix>_tdata/tkeep/tvalid/tready/tlast/tuser``
    (module docstring for the rules).  ``config`` is the block's (so that
    :class:`hw.lib.axi_lite.AxiLiteRegs` can wrap the result).

    Latency and throughput
    ----------------------
    None added: wires only; the block's own figures hold.
    """

    def __init__(self, block: wiring.Component, names: Mapping[str, str] | None = None,
                 user_width: int = 1):
        self.block = block
        self.config = getattr(block, "config", None)
        ports = frame_stream_ports(block)
        if not ports:
            self._MustUse__silence = True       # (never built: no "unused" warning)
            raise TypeError(f"{type(block).__name__} has no frame-stream port")
        if names is None:
            outs = [n for n, o in ports.items() if o]
            ins = [n for n, o in ports.items() if not o]
            names = {n: ("m_axis" if len(outs) == 1 else f"m_axis_{n}") for n in outs}
            names.update({n: ("s_axis" if len(ins) == 1 else f"s_axis_{n}") for n in ins})
        unknown = set(names) - set(ports)
        if unknown:
            self._MustUse__silence = True
            raise TypeError(f"{type(block).__name__}: {sorted(unknown)} are not frame-stream "
                            f"ports (those are {sorted(ports)})")
        self.names = dict(names)
        members = {n: m for n, m in block.signature.members.items() if n not in self.names}
        for port, prefix in self.names.items():
            payload = block.signature.members[port].signature.members["payload"].shape
            db = Shape.cast(payload["keep"].shape).width
            members.update(axis_members(prefix, db, user_width, master=ports[port]))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.block = block = self.block
        prefixes = tuple(f"{p}_t" for p in self.names.values())
        for path, member, outer in self.signature.flatten(self):
            if path[0].startswith(prefixes):
                continue
            inner = block
            for part in path:
                inner = getattr(inner, part) if isinstance(part, str) else inner[part]
            if member.flow == In:
                m.d.comb += inner.eq(outer)
            else:
                m.d.comb += outer.eq(inner)
        for port, prefix in self.names.items():
            beats = getattr(block, port)
            if block.signature.members[port].flow == Out:
                axis_from_stream(m, self, prefix, beats)
            else:
                stream_from_axis(m, self, prefix, beats)
        return m
