"""Simple dual-port block RAM with read latency 2 (a registered output, or with ``addr_reg`` a
registered address) or 3 (both), one component for every target.

:class:`Bram` elaborates in one of two forms, chosen by the elaboration platform:

- **generic** (the default: Amaranth simulation, Verilator, the exported Verilog): a memory
  (``MemoryInstance``) with one write port and one synchronous read port, followed by an
  output register.  Any synthesis tool infers a block RAM with its output register off
  and a fabric flip-flop after it.
- **ECP5** (``platform`` with ``bram_family == "ecp5"``, :class:`BramTarget`; ``python -m
  gateware synth`` elaborates the ECP5 run with it): DP16KD primitives, port A writing, port
  B reading with the primitive's own output register on (``REGMODE_B = "OUTREG"``), tiled for
  width and depth.  Yosys's ECP5 memory mapping instantiates inferred DP16KD with
  ``REGMODE = NOREG`` (5.6-5.8 ns from clock to data at speed 6, against the 6.4 ns of
  156.25 MHz) and its memory model has one register level per read port, so it cannot absorb
  the second register: the primitive is instantiated here.  With ``OUTREG`` the data leaves a
  register inside the block.

Why a platform attribute and not a global: the same design is exported generically for
the lint, Verilator and the Nexus run, and with DP16KD for the ECP5 run of the same synthesis
command; Amaranth hands the platform to every ``elaborate``.

Use: ``ram = Bram(shape, depth, name="table")`` in ``elaborate``, drive its signals, then
``ram.build(m, platform)``.  Parameters: ``shape`` (any shape-castable: an int width or a
layout; ``r_data``/``w_data`` take it), ``depth`` (words), ``name``.  Contents start at
zero (no other initial value: the DP16KD form would need its ``INITVAL`` strings).

Ports
- ``w_addr``, ``w_data``, ``w_en``: a write at the clock edge ending the cycle ``w_en`` is high.
- ``r_addr``, ``r_en`` (init 1, i.e. always on when not driven): at an edge with ``r_en``
  high the RAM's read register takes the word at ``r_addr`` and the output register takes
  the read register (the primitive's ``CEB`` and ``OCEB``); low holds both (a stall: the
  read pipeline moves as one).
- ``r_data``: with ``r_en`` high, the word at ``r_addr`` of cycle c is on ``r_data`` in
  cycle c + 2.
- ``r_en_next`` (optional, instead of ``r_en``): the read enable of the *next* cycle; the RAM
  registers it itself, ``r_en`` is then that register (init 1, no reset).  On the ECP5 every
  DP16KD gets its own copy, a ``TRELLIS_FF`` instance (Yosys would merge equal flip-flops),
  so that a stall enable reaching many block RAMs across the chip is one short route from a
  flip-flop beside each of them, not one net from a single driver.

- ``a_data`` (only with ``read_a=True``): port A's fetch-and-replace: a write at
  ``w_addr`` in cycle c also reads the word it replaces, on ``a_data`` in cycle c + 2 (the
  word before the write; port A reads every cycle, so ``a_data`` is the old word at
  ``w_addr`` two cycles before whether or not ``w_en`` was high).  Consecutive writes to one
  address return each other's data in order (no forwarding).  Generic form: a second
  non-transparent read port at ``w_addr``, then an output register (the memory then has no
  ``no_rw_check``: the read at the write address must return the old word); ECP5 form:
  ``DOA`` with ``WRITEMODE_A = "READBEFOREWRITE"`` and ``REGMODE_A = "OUTREG"``, the banks'
  outputs multiplexed as port B's are.  Without ``read_a`` nothing changes (the same
  Verilog as before the option existed).

- ``addr_reg=True``: the same latency 2 with the first register moved in front of the RAM: the
  read address is registered (``r_addr`` of cycle c is in the address register in c + 1), the
  RAM's read register is the second stage and ``r_data`` comes straight out of the RAM (the
  DP16KD with ``REGMODE_B = "NOREG"``).  For a user whose read address is the end of a long
  path (the flow engine's arbiter): the route into the block RAM starts at a flip-flop, at the
  price of the RAM's clock-to-data (5.6-5.8 ns without the output register) on the data side.
  Cycle behaviour is the same as the default form's (the RAM reads one cycle later, so it may
  also see the word written in c + 1, which the collision rule lets the user forward anyway).
  Not with ``r_en_next``.
- ``addr_reg=True, out_reg=True``: both, read latency 3 (``r_addr`` of cycle c on ``r_data``
  in c + 3; the DP16KD with ``REGMODE_B = "OUTREG"``): the route into the RAM starts at a
  flip-flop and the data leaves the block's output register (the flow engine's table: its
  arbiter ends at the address register and its datapath starts at the output register).
  ``latency`` says which (2 or 3).

Latency 2 (address at c, data at c + 2); throughput one read and one write per clock.

Collision rule: a read whose address is written in the same cycle returns an undefined word
(the generic form returns the old word, the DP16KD's read-during-write across its ports is not
specified); a word written in cycle c is read correctly by a read addressed in c + 1 or later.
The user forwards the words written in the same cycle as the read (the flow engine forwards the
words written one and two cycles before the data arrives).

Resources of the ECP5 form: per bank of rows, ``ceil(width / w)`` DP16KD in the configuration
``w`` x ``16384 / w`` (w in 18, 9, 4, 2, 1; 18 bits = 1024 words) that uses the fewest
primitives, ``ceil(depth / (16384 / w))`` banks; with more than one bank the write enables are
decoded from the address and ``r_data`` is a bank multiplexer after the output registers
(selected by the read address, delayed with the data).
"""

from __future__ import annotations

from amaranth.hdl import (
    Cat,
    ClockSignal,
    Const,
    Instance,
    MemoryData,
    MemoryInstance,
    Module,
    Mux,
    Shape,
    Signal,
    Value,
)

__all__ = ["Bram", "BramTarget", "bram_family", "ecp5_tiling", "ECP5_MODES"]

#: DP16KD configurations: (data width, words); the address occupies ADx[13:14 - log2(words)]
ECP5_MODES = [(18, 1024), (9, 2048), (4, 4096), (2, 8192), (1, 16384)]


class BramTarget:
    """An elaboration platform that only names the FPGA family for :class:`Bram` (pass it as
    ``platform`` to ``amaranth.back.verilog.convert``).  No other component looks at it."""

    def __init__(self, family: str):
        self.bram_family = family


def bram_family(platform) -> str | None:
    """The family the platform asks block RAMs for (``None``: the generic form)."""
    return getattr(platform, "bram_family", None)


def ecp5_tiling(width: int, depth: int) -> tuple[int, int, int, int]:
    """(w, words, columns, banks) of the DP16KD tiling of a ``width`` x ``depth`` RAM: the
    configuration with the fewest primitives (columns x banks), fewer banks on a tie."""
    best = None
    for w, words in ECP5_MODES:
        cols = -(-width // w)
        banks = -(-depth // words)
        key = (cols * banks, banks)
        if best is None or key < best[0]:
            best = (key, (w, words, cols, banks))
    return best[1]


class Bram:
    """Simple dual-port RAM, read latency 2, or 3 with both ``addr_reg`` and ``out_reg`` (see
    the module docstring for ports, rules and the options).

    Not a submodule: :meth:`build` adds the memory and its output register (or the DP16KD
    instances) to the user's module, so the ports are plain signals of that module (a
    submodule whose ports are wired straight to a parent's signals leaves unused aliases in
    the Verilog).  ``name`` prefixes the signals and cells.  ``r_addr`` / ``r_en``: existing
    signals to use as those ports (RAMs read together share them: equal copies would be left
    in the Verilog as unused aliases)."""

    def __init__(self, shape, depth: int, *, name: str = "bram", r_addr=None, r_en=None,
                 r_en_next=None, read_a: bool = False, addr_reg: bool = False,
                 out_reg: bool | None = None):
        if depth < 1:
            raise ValueError(f"depth={depth}: at least 1 word")
        self.shape = shape
        self.depth = depth
        self.name = name
        self.width = Shape.cast(shape).width
        self.w_addr = Signal(range(depth), name=f"{name}_w_addr")
        self.w_data = Signal(shape, name=f"{name}_w_data")
        self.w_en = Signal(name=f"{name}_w_en")
        self.r_addr = Signal(range(depth), name=f"{name}_r_addr") if r_addr is None else r_addr
        if r_en_next is not None and r_en is not None:
            raise ValueError("r_en and r_en_next are exclusive")
        if addr_reg and r_en_next is not None:
            raise ValueError("addr_reg and r_en_next are exclusive")
        self.addr_reg = addr_reg
        # the output register: always without addr_reg, optional with it (latency 3)
        self.out_reg = (not addr_reg) if out_reg is None else out_reg
        if not addr_reg and not self.out_reg:
            raise ValueError("out_reg=False needs addr_reg=True (latency 2 at least)")
        #: the read latency: r_addr at c, r_data at c + latency
        self.latency = 1 + addr_reg + self.out_reg
        self.r_en_next = r_en_next
        if r_en_next is not None:       # the registered enable (see the module docstring)
            r_en = Signal(init=1, name=f"{name}_r_en_q", reset_less=True)
        self.r_en = Signal(init=1, name=f"{name}_r_en") if r_en is None else r_en
        # reset-less like the DP16KD's output register (its RST is not used)
        self.r_data = Signal(shape, name=f"{name}_r_data", reset_less=True)
        self.read_a = read_a
        if read_a:                      # port A's fetch-and-replace (see the module docstring)
            self.a_data = Signal(shape, name=f"{name}_a_data", reset_less=True)

    def build(self, m: Module, platform) -> None:
        """Add the RAM to ``m`` in the form ``platform`` asks for (:func:`bram_family`)."""
        if bram_family(platform) == "ecp5" and self.width > 0:
            self._ecp5(m)
            return
        if self.r_en_next is not None:
            m.d.sync += self.r_en.eq(self.r_en_next)
        # the memory cell itself; no_rw_check: a read colliding with a write is undefined
        # (the collision rule), so Yosys adds no read-first logic after the block RAM
        mem = MemoryInstance(data=MemoryData(shape=self.width, depth=self.depth, init=[]),
                             attrs={} if self.read_a else {"no_rw_check": 1})
        rdata = Signal(self.width, name=f"{self.name}_rdata")
        mem.write_port(domain="sync", addr=self.w_addr, data=Value.cast(self.w_data),
                       en=self.w_en)
        mem.read_port(domain="sync", addr=self._read_addr(m), data=rdata, en=self.r_en,
                      transparent_for=())
        if self.read_a:
            # port A's read of the word being replaced (non-transparent: the old word)
            adata = Signal(self.width, name=f"{self.name}_adata")
            mem.read_port(domain="sync", addr=self.w_addr, data=adata, en=Const(1),
                          transparent_for=())
            m.d.sync += self.a_data.eq(adata)
        m.submodules[self.name] = mem
        if not self.out_reg:
            m.d.comb += self.r_data.eq(rdata)
        else:
            with m.If(self.r_en):
                m.d.sync += self.r_data.eq(rdata)

    def _read_addr(self, m):
        """The address the RAM reads: ``r_addr``, or its register with ``addr_reg``."""
        if not self.addr_reg:
            return self.r_addr
        ra_q = Signal.like(self.r_addr, name=f"{self.name}_r_addr_q", reset_less=True)
        with m.If(self.r_en):
            m.d.sync += ra_q.eq(self.r_addr)
        return ra_q

    def _ecp5(self, m):
        W, D, name = self.width, self.depth, self.name
        w, words, cols, banks = ecp5_tiling(W, D)
        lw = (words - 1).bit_length()            # address bits inside one primitive
        shift = 14 - lw                          # the address's position on ADx[13:0]
        aw = max(1, (D - 1).bit_length())
        wa = Signal(aw, name=f"{name}_wa")
        ra = Signal(aw, name=f"{name}_ra")
        m.d.comb += [wa.eq(self.w_addr), ra.eq(self._read_addr(m))]
        wdata = Signal(cols * w, name=f"{name}_wdata")
        m.d.comb += wdata.eq(Value.cast(self.w_data))
        bank_out = []
        bank_out_a = []
        for b in range(banks):
            sel_w = (wa[lw:] == b) if banks > 1 else Const(1, 1)
            dout = Signal(cols * w, name=f"{name}_bank{b}_data")
            if self.read_a:
                dout_a = Signal(cols * w, name=f"{name}_bank{b}_adata")
                bank_out_a.append(dout_a)
            # the address inside a primitive, zero-extended if the RAM is shallower
            used = min(lw, aw)
            for col in range(cols):
                ada = Cat(Const(0, shift), wa[:used], Const(0, lw - used))
                adb = Cat(Const(0, shift), ra[:used], Const(0, lw - used))
                if w == 18:
                    # 18-bit configuration: ADA[1:0] are the write's byte enables (both on)
                    ada = Cat(Const(0b11, 2), Const(0, shift - 2), wa[:used],
                              Const(0, lw - used))
                do_b = Signal(18, name=f"{name}_b{b}_c{col}_do")
                ren = self.r_en
                if self.r_en_next is not None:
                    # this primitive's own copy of the registered read enable
                    ren = Signal(name=f"{name}_b{b}_c{col}_ren")
                    m.submodules[f"{name}_ren_b{b}_c{col}"] = Instance(
                        "TRELLIS_FF", p_GSR="DISABLED", p_CEMUX="1", p_CLKMUX="CLK",
                        p_LSRMUX="LSR", p_REGSET="SET", p_SRMODE="LSR_OVER_CE",
                        i_CLK=ClockSignal(), i_CE=Const(1), i_LSR=Const(0),
                        i_DI=self.r_en_next, o_Q=ren)
                di = Cat(wdata[col * w:(col + 1) * w], Const(0, 18 - w))
                ports = {
                    "i_CLKA": ClockSignal(), "i_CEA": Const(1), "i_OCEA": Const(1),
                    "i_WEA": self.w_en & sel_w, "i_RSTA": Const(0),
                    "i_CSA0": Const(0), "i_CSA1": Const(0), "i_CSA2": Const(0),
                    # one enable for both read stages: the address register (CEB) and the
                    # output register (OCEB) move together
                    "i_CLKB": ClockSignal(), "i_CEB": ren, "i_OCEB": ren,
                    "i_WEB": Const(0), "i_RSTB": Const(0),
                    "i_CSB0": Const(0), "i_CSB1": Const(0), "i_CSB2": Const(0),
                }
                for i in range(14):
                    ports[f"i_ADA{i}"] = ada[i]
                    ports[f"i_ADB{i}"] = adb[i]
                for i in range(18):
                    ports[f"i_DIA{i}"] = di[i]
                    ports[f"i_DIB{i}"] = Const(0)
                    ports[f"o_DOB{i}"] = do_b[i]
                if self.read_a:
                    do_a = Signal(18, name=f"{name}_b{b}_c{col}_doa")
                    for i in range(18):
                        ports[f"o_DOA{i}"] = do_a[i]
                    m.d.comb += dout_a[col * w:(col + 1) * w].eq(do_a[:w])
                m.submodules[f"{name}_dp16kd_b{b}_c{col}"] = Instance(
                    "DP16KD",
                    p_DATA_WIDTH_A=w, p_DATA_WIDTH_B=w,
                    p_REGMODE_A="OUTREG" if self.read_a else "NOREG",
                    p_REGMODE_B="OUTREG" if self.out_reg else "NOREG",
                    p_RESETMODE="SYNC", p_ASYNC_RESET_RELEASE="SYNC",
                    p_CSDECODE_A="0b000", p_CSDECODE_B="0b000",
                    p_WRITEMODE_A="READBEFOREWRITE" if self.read_a else "NORMAL",
                    p_WRITEMODE_B="NORMAL",
                    p_GSR="DISABLED",
                    **ports)
                m.d.comb += dout[col * w:(col + 1) * w].eq(do_b[:w])
            bank_out.append(dout)
        if self.read_a:
            # port A's banks: the write address's bank, through the same two register stages
            if banks == 1:
                m.d.comb += self.a_data.eq(bank_out_a[0][:W])
            else:
                asel1 = Signal(range(banks), name=f"{name}_asel1", reset_less=True)
                asel2 = Signal(range(banks), name=f"{name}_asel2", reset_less=True)
                m.d.sync += [asel1.eq(wa[lw:]), asel2.eq(asel1)]
                out_a = bank_out_a[banks - 1][:W]
                for b in reversed(range(banks - 1)):
                    out_a = Mux(asel2 == b, bank_out_a[b][:W], out_a)
                m.d.comb += self.a_data.eq(out_a)
        if banks == 1:
            m.d.comb += self.r_data.eq(bank_out[0][:W])
        else:
            # the bank of the data on r_data: the read address's bank, through the same two
            # register stages as the data
            # (with addr_reg, ``ra`` is already the first register: one more stage with the
            # output register, none without)
            bsel1 = Signal(range(banks), name=f"{name}_bsel1", reset_less=True)
            if self.r_en_next is not None:
                m.d.sync += self.r_en.eq(self.r_en_next)
            with m.If(self.r_en):
                m.d.sync += bsel1.eq(ra[lw:])
            bsel = bsel1
            if self.out_reg:
                bsel = Signal(range(banks), name=f"{name}_bsel2", reset_less=True)
                with m.If(self.r_en):
                    m.d.sync += bsel.eq(bsel1)
            out = bank_out[banks - 1][:W]
            for b in reversed(range(banks - 1)):
                out = Mux(bsel == b, bank_out[b][:W], out)
            m.d.comb += self.r_data.eq(out)
