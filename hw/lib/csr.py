"""The project's register layer: a block's registers declared once, everything else derived.

A :class:`RegisterMap` lists a block's registers (:class:`Register`) and their fields
(:class:`Field`), in the spirit of amaranth-soc's ``csr.Register`` / ``csr.Field`` /
``csr.Builder`` (written here: amaranth-soc is not on PyPI).  From that one declaration come

* the RTL: :class:`CsrBank` builds the write decode (with the "apply only while the block is
  idle" rule, once for every block), the storage, a write strobe per register, and the
  read-back multiplexer (every register is readable);
* the golden model's ``write`` / ``read``: :class:`RegisterModel`;
* the documentation's register table: :meth:`RegisterMap.markdown`;
* a SystemRDL description: :meth:`RegisterMap.systemrdl` (PeakRDL derives the C header, HTML
  and IP-XACT from it).

Addresses
---------
Addresses are word addresses (``data_width`` bits per word; byte address = 4 x word address for
32-bit words).  The block's own registers sit at the addresses it declares.  Every map ends
with an identification header in the style of Corundum's register blocks, so that software can
discover a block:

=========== =========================================================================
``ID``      block type: four ASCII characters, the first in the most significant byte
``VERSION`` register-map version, ``major << 16 | minor``
``SIZE``    bytes spanned by the whole register map (a power of two)
``FLOWS``   per-flow windows: ``count[15:0]``, ``log2(words per flow)[23:16]`` (0 if none)
=========== =========================================================================

at word ``header_offset``: the first power of two at or above the block's registers, at least
16 (byte 0x40), so every block with at most 16 registers has its header at byte 0x40.

A multi-flow engine's per-flow registers (``flow_registers``) are windows of
``2**flow_shift`` words, flow ``f`` register ``r`` at word ``flow_base + (f << flow_shift | r)``
with ``flow_base`` the power of two above the header (a single address bit tells a flow access
from a global one).

Wide fields
-----------
A field wider than a word (a multi-flow engine's state field: TIMELY's ``rtt_diff``, LDCP's
``wr``) is split into ``ceil(width / 32)`` consecutive words ``NAME_W0``, ``NAME_W1``, ...,
low word first (word ``j`` holds bits ``[32 j + 31 : 32 j]``), made by :func:`wide_registers`.
Accesses are atomic by two rules, the same in the RTL and in :class:`RegisterModel`:

* read: reading ``W0`` snapshots the whole field (and returns its low word); reading
  ``W1``... returns the snapshot's word, not the live value;
* write: writing ``W1``... only stages the word; writing ``W0`` commits the whole field
  (``W0``'s data and the staged high words) in one update.

So software reads a wide field low word first and writes it high words first.  The snapshot
and the staged words are one per field, shared by every flow (one bus master: read or write
one flow's words without another flow's access of the same field in between).  Staged and
snapshot words are 0 after reset.

Refused writes
--------------
A field may declare its legal values (``Field.legal``: inclusive ranges; a header field that
must never take some values, e.g. a TTL of 0).  A write to a (global) register with such a field
whose new value is outside the ranges is *refused*, by the same rule in the RTL
(:class:`CsrBank`) and in :class:`RegisterModel`: the register keeps its value, no write strobe
is raised (a command register issues nothing), and, if the map has a register named ``WERR``
(:func:`write_error_register`), its sticky ``refused`` bit is set (software clears it by
writing 0).  :class:`hw.lib.axi_lite.AxiLiteRegs` answers such a write ``SLVERR`` (from the
same declaration).  The register tables list the legal values.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value

__all__ = ["Field", "Register", "RegisterMap", "RegisterMapGroup", "RegisterModel", "CsrBank",
           "fourcc", "map_windows", "rtl_window",
           "HEADER_REGISTERS", "wide_registers", "write_error_register", "WRITE_ERROR_REGISTER",
           "rtl_legal_write"]

#: the identification header's registers, in address order from ``header_offset``
HEADER_REGISTERS = ("ID", "VERSION", "SIZE", "FLOWS")
_MIN_HEADER_OFFSET = 16
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ACCESS = ("rw", "ro", "wo")
#: the register whose ``refused`` bit a refused write sets (module docstring, "Refused writes")
WRITE_ERROR_REGISTER = "WERR"


def fourcc(code: str) -> int:
    """A four-character block type as a 32-bit id, the first character most significant."""
    if len(code) != 4 or not code.isascii():
        raise ValueError(f"block type {code!r} must be four ASCII characters")
    return int.from_bytes(code.encode(), "big")


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


@dataclass(frozen=True)
class Field:
    """One field of a register.

    ``access``: ``"rw"`` (software writes it; the block reads it, and may also update it, as
    counters do), ``"ro"`` (the block drives it; writes are ignored) or ``"wo"`` (a command:
    a write hands the value to the block, e.g. bits that start an operation; it reads 0).
    ``reset`` is the value after reset (``"rw"`` fields).  ``offset`` (bit) is assigned by
    :class:`Register` after the previous field when left ``None``.  ``legal``: the values a
    write may give the field, inclusive ``(lo, hi)`` ranges (empty: every value); a write of
    another value is refused (module docstring, "Refused writes").
    """
    name: str
    width: int
    access: str = "rw"
    reset: int = 0
    desc: str = ""
    offset: int | None = None
    legal: tuple[tuple[int, int], ...] = ()

    def __post_init__(self):
        if not _NAME.match(self.name):
            raise ValueError(f"field name {self.name!r} is not an identifier")
        if not isinstance(self.width, int) or self.width < 1:
            raise ValueError(f"field {self.name}: width {self.width!r} must be a positive int")
        if self.access not in _ACCESS:
            raise ValueError(f"field {self.name}: access {self.access!r} not in {_ACCESS}")
        if not 0 <= self.reset < (1 << self.width):
            raise ValueError(f"field {self.name}: reset {self.reset} does not fit {self.width} "
                             "bits")
        legal = tuple((int(lo), int(hi)) for lo, hi in self.legal)
        object.__setattr__(self, "legal", legal)
        if legal and self.access == "ro":
            raise ValueError(f"field {self.name}: a read-only field has no legal values")
        for lo, hi in legal:
            if not 0 <= lo <= hi < (1 << self.width):
                raise ValueError(f"field {self.name}: legal range {lo}..{hi} does not fit "
                                 f"{self.width} bits")
        if legal and self.access == "rw" and not self.is_legal(self.reset):
            raise ValueError(f"field {self.name}: reset {self.reset} is not legal "
                             f"({self.legal_text})")

    def is_legal(self, value: int) -> bool:
        """``value`` (the field's bits) may be written (:attr:`legal`)."""
        return not self.legal or any(lo <= value <= hi for lo, hi in self.legal)

    @property
    def legal_text(self) -> str:
        """The legal values for the documentation ("" when every value is)."""
        def num(v):
            return f"0x{v:X}" if v > 0xFFFF else str(v)
        return ", ".join(num(lo) if lo == hi else f"{num(lo)}..{num(hi)}"
                         for lo, hi in self.legal)

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.offset

    @property
    def bits(self) -> str:
        hi = self.offset + self.width - 1
        return f"[{hi}:{self.offset}]" if self.width > 1 else f"[{self.offset}]"


@dataclass(frozen=True)
class Register:
    """A register: a name, a word address (assigned by :class:`RegisterMap` after the previous
    register when ``None``) and its fields, least significant first.

    ``wide``: ``(field, word, words)`` when the register is word ``word`` of the ``words``
    32-bit words of a field wider than a word (see "Wide fields" in the module docstring;
    :func:`wide_registers` builds them)."""
    name: str
    fields: tuple[Field, ...]
    desc: str = ""
    addr: int | None = None
    wide: tuple[str, int, int] | None = None

    def __post_init__(self):
        if not _NAME.match(self.name):
            raise ValueError(f"register name {self.name!r} is not an identifier")
        fields, offset, names = [], 0, set()
        for f in self.fields:
            if f.name in names:
                raise ValueError(f"register {self.name}: duplicate field {f.name}")
            names.add(f.name)
            f = f if f.offset is not None else replace(f, offset=offset)
            if f.offset < offset:
                raise ValueError(f"register {self.name}: field {f.name} overlaps the previous")
            offset = f.offset + f.width
            fields.append(f)
        if not fields:
            raise ValueError(f"register {self.name} has no field")
        object.__setattr__(self, "fields", tuple(fields))

    @classmethod
    def single(cls, name: str, width: int, reset: int = 0, access: str = "rw", desc: str = "",
               addr: int | None = None, legal: tuple[tuple[int, int], ...] = ()) -> Register:
        """A register of one field (named like the register, in lower case) at bit 0."""
        return cls(name, (Field(name.lower(), width, access, reset, desc, legal=legal),), desc,
                   addr)

    @property
    def width(self) -> int:
        return max(f.offset + f.width for f in self.fields)

    @property
    def reset(self) -> int:
        return sum(f.reset << f.offset for f in self.fields if f.access == "rw")

    @property
    def write_mask(self) -> int:
        return sum(f.mask for f in self.fields if f.access != "ro")

    @property
    def read_mask(self) -> int:
        """The bits a read returns (every field but the write-only ones)."""
        return sum(f.mask for f in self.fields if f.access != "wo")

    @property
    def writable(self) -> bool:
        return self.write_mask != 0

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"register {self.name} has no field {name!r}")

    def pack(self, **values: int) -> int:
        """The register word with the given field values (others 0)."""
        word = 0
        for name, value in values.items():
            f = self.field(name)
            if not 0 <= value < (1 << f.width):
                raise ValueError(f"{self.name}.{name} = {value} does not fit {f.width} bits")
            word |= value << f.offset
        return word

    def unpack(self, word: int) -> dict[str, int]:
        return {f.name: (word >> f.offset) & ((1 << f.width) - 1) for f in self.fields}

    @property
    def checked(self) -> bool:
        """A field declares legal values: a write may be refused."""
        return any(f.legal for f in self.fields)

    def legal_write(self, word: int) -> bool:
        """A write of ``word`` is taken (every checked field's new value is legal)."""
        return all(f.is_legal((word >> f.offset) & ((1 << f.width) - 1))
                   for f in self.fields if f.legal)


def write_error_register(addr: int | None = None) -> Register:
    """The ``WERR`` register of a map with checked fields: its ``refused`` bit is set by a
    refused write (module docstring, "Refused writes") and cleared by software writing 0."""
    return Register(WRITE_ERROR_REGISTER, (
        Field("refused", 1, desc="1: a write was refused (a value outside the field's legal "
              "values; the register kept its value) since this bit was last written 0"),),
        "sticky write error", addr)


def wide_registers(name: str, width: int, access: str = "rw", desc: str = "",
                   data_width: int = 32) -> tuple[Register, ...]:
    """The registers of field ``name`` (``width`` bits): one register named ``NAME`` when it
    fits a word, else ``NAME_W0``, ``NAME_W1``, ... (low word first) with the atomic read and
    write rules of the module docstring ("Wide fields")."""
    if width <= data_width:
        return (Register.single(name.upper(), width, access=access, desc=desc),)
    words = -(-width // data_width)
    out = []
    for j in range(words):
        lo = j * data_width
        w = min(data_width, width - lo)
        rule = ("reading it snapshots the whole field, writing it commits the staged high "
                "words" if j == 0 else f"reads word {j} of the snapshot taken by reading "
                f"{name.upper()}_W0; a write is staged until {name.upper()}_W0 is written")
        text = f"{name}[{lo + w - 1}:{lo}], word {j} of {words} (low word first): {rule}"
        if desc:
            text = f"{desc}; {text}"
        out.append(Register(f"{name.upper()}_W{j}",
                            (Field(f"{name.lower()}_w{j}", w, access, desc=text),), text,
                            wide=(name, j, words)))
    return tuple(out)


def _as_registers(items) -> list[Register]:
    """Registers from :class:`Register` objects or ``(name, width, reset)`` tuples (the simple
    list a multi-flow engine keeps), the latter read-write, one field each."""
    regs = []
    for item in items:
        if isinstance(item, Register):
            regs.append(item)
        else:
            name, width, reset = item[:3]
            desc = item[3] if len(item) > 3 else ""
            regs.append(Register.single(name, width, reset, desc=desc))
    return regs


@dataclass(frozen=True)
class RegisterMap:
    """A block's register map (see the module docstring for the address layout).

    ``name``: the map's name (the SystemRDL addrmap and the C prefix); ``block_type``: four
    characters (the ``ID`` register); ``version``: ``(major, minor)``; ``flows`` and
    ``flow_registers``: the per-flow windows of a multi-flow engine.
    """
    name: str
    registers: tuple[Register, ...]
    block_type: str
    version: tuple[int, int] = (1, 0)
    desc: str = ""
    data_width: int = 32
    flows: int = 0
    flow_registers: tuple[Register, ...] = ()
    header_offset: int = field(init=False, default=0)
    flow_shift: int = field(init=False, default=0)
    flow_base: int = field(init=False, default=0)
    addr_width: int = field(init=False, default=0)

    def __post_init__(self):
        if not _NAME.match(self.name):
            raise ValueError(f"register map name {self.name!r} is not an identifier")
        fourcc(self.block_type)
        regs = self._place(_as_registers(self.registers))
        flow_regs = self._place(_as_registers(self.flow_registers))
        names = [r.name for r in regs] + [r.name for r in flow_regs]
        clash = {n for n in names if names.count(n) > 1} | (set(names) & set(HEADER_REGISTERS))
        if clash:
            raise ValueError(f"register map {self.name}: duplicate register name(s) {clash}")
        for r in regs + flow_regs:
            if r.width > self.data_width:
                raise ValueError(f"register {r.name} is wider ({r.width}) than the data "
                                 f"width {self.data_width}")
        if any(r.checked for r in flow_regs):
            raise ValueError(f"register map {self.name}: legal values are for global registers")
        if bool(self.flows) != bool(flow_regs):
            raise ValueError(f"register map {self.name}: flows and flow_registers go together")
        span = max((r.addr + 1 for r in regs), default=0)
        header = max(_MIN_HEADER_OFFSET, _pow2_at_least(span))
        end = header + len(HEADER_REGISTERS)
        shift = flow_base = 0
        if self.flows:
            # (the window holds the highest register address; flow_regs is not empty here, and
            # its addresses are distinct, so that is at least len(flow_regs) - 1)
            shift = max(r.addr for r in flow_regs).bit_length()
            flow_base = max(_pow2_at_least(end), _pow2_at_least(self.flows << shift))
            words = 2 * flow_base
        else:
            words = _pow2_at_least(end)
        object.__setattr__(self, "registers", tuple(regs))
        object.__setattr__(self, "flow_registers", tuple(flow_regs))
        object.__setattr__(self, "header_offset", header)
        object.__setattr__(self, "flow_shift", shift)
        object.__setattr__(self, "flow_base", flow_base)
        object.__setattr__(self, "addr_width", (words - 1).bit_length())

    def _place(self, regs: list[Register]) -> list[Register]:
        out, addr, used = [], 0, set()
        for r in regs:
            r = r if r.addr is not None else replace(r, addr=addr)
            if r.addr in used:
                raise ValueError(f"register map {self.name}: two registers at word {r.addr}")
            used.add(r.addr)
            addr = r.addr + 1
            out.append(r)
        return out

    @classmethod
    def from_list(cls, name: str, block_type: str, registers: Iterable = (), *,
                  flows: int = 0, flow_registers: Iterable = (), **kwargs) -> RegisterMap:
        """A map from simple ``(name, width, reset[, desc])`` lists (read-write registers at
        consecutive addresses), e.g. a multi-flow engine's global and per-flow registers."""
        return cls(name, tuple(_as_registers(registers)), block_type, flows=flows,
                   flow_registers=tuple(_as_registers(flow_registers)), **kwargs)

    # -- the header -----------------------------------------------------------------------------
    @property
    def size_bytes(self) -> int:
        return (1 << self.addr_width) * self.data_width // 8

    @property
    def header(self) -> tuple[Register, ...]:
        """The identification registers, read-only constants."""
        values = {
            "ID": (fourcc(self.block_type), "block type, four ASCII characters"),
            "VERSION": (self.version[0] << 16 | self.version[1], "register map version, "
                        "major[31:16] minor[15:0]"),
            "SIZE": (self.size_bytes, "bytes spanned by the register map"),
            "FLOWS": (self.flows | self.flow_shift << 16,
                      "per-flow windows: count[15:0], log2(words per flow)[23:16]"),
        }
        return tuple(Register(n, (Field(n.lower(), 32, "ro", values[n][0], values[n][1]),),
                              values[n][1], self.header_offset + i)
                     for i, n in enumerate(HEADER_REGISTERS))

    def header_values(self) -> dict[int, int]:
        return {r.addr: r.fields[0].reset for r in self.header}

    # -- look-up ---------------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Register:
        for r in self.registers + self.header + self.flow_registers:
            if r.name == name:
                return r
        raise KeyError(f"register map {self.name} has no register {name!r}")

    def addr(self, name: str, flow: int | None = None) -> int:
        """Word address of a register (of a flow's window for a per-flow register)."""
        reg = self[name]
        if reg in self.flow_registers:
            if flow is None or not 0 <= flow < self.flows:
                raise ValueError(f"{name} is a per-flow register: give a flow 0..{self.flows-1}")
            return self.flow_base + (flow << self.flow_shift | reg.addr)
        return reg.addr

    def decode(self, addr: int) -> tuple[Register, int | None] | None:
        """``(register, flow)`` at a word address (flow ``None`` for a global register), or
        ``None`` if nothing is mapped there."""
        if self.flows and addr >= self.flow_base:
            flow, index = (addr - self.flow_base) >> self.flow_shift, addr & (
                (1 << self.flow_shift) - 1)
            for r in self.flow_registers:
                if r.addr == index and flow < self.flows:
                    return r, flow
            return None
        for r in self.registers + self.header:
            if r.addr == addr:
                return r, None
        return None

    def mapped_addresses(self) -> list[int]:
        out = [r.addr for r in self.registers + self.header]
        for f in range(self.flows):
            out += [self.flow_base + (f << self.flow_shift | r.addr) for r in self.flow_registers]
        return sorted(out)

    def model(self, sources: Mapping[str, Callable[[], int]] | None = None) -> RegisterModel:
        return RegisterModel(self, sources)

    # -- documents ---------------------------------------------------------------------------------
    def markdown(self) -> str:
        """The register table of the block's documentation page."""
        bpw = self.data_width // 8
        lines = ["| Word | Byte | Register | Field | Bits | Access | Reset | Description |",
                 "|---|---|---|---|---|---|---|---|"]

        def rows(regs, word_of, label=""):
            for r in regs:
                for i, f in enumerate(r.fields):
                    word = word_of(r)
                    addr = (f"0x{word:02X}", f"0x{word * bpw:03X}") if i == 0 else ("", "")
                    reset = f"0x{f.reset:X}" if f.access == "rw" or r in self.header else "-"
                    reset = "-" if f.access == "wo" else reset
                    desc = f.desc or r.desc
                    if f.legal:
                        desc += f"; legal {f.legal_text}, another value is refused"
                    desc = desc.replace("|", "\\|")
                    lines.append(f"| {addr[0]} | {addr[1]} | {r.name if i == 0 else ''}{label} "
                                 f"| {f.name} | {f.bits} | {f.access.upper()} | {reset} "
                                 f"| {desc} |")
        rows(self.registers, lambda r: r.addr)
        rows(self.header, lambda r: r.addr)
        if self.flows:
            rows(self.flow_registers, lambda r: self.flow_base + r.addr,
                 f" (flow f: + f x 0x{1 << self.flow_shift:X} words)")
        lines.append("")
        lines.append(f"Map size {self.size_bytes} bytes ({1 << self.addr_width} words of "
                     f"{self.data_width} bits, address width {self.addr_width}); unmapped "
                     "words read 0 and ignore writes.")
        return "\n".join(lines) + "\n"

    def systemrdl(self, name: str | None = None) -> str:
        """A SystemRDL 2.0 description (byte addresses) of the map, named ``name``."""
        name = name or self.name
        return "\n".join([f"addrmap {name} {{", *self._rdl_body(name, 4), "};"]) + "\n"

    def _rdl_body(self, name: str, indent: int) -> list[str]:
        """The lines inside the map's ``addrmap { ... }`` (also nested in a group's)."""
        bpw = self.data_width // 8
        q = _rdl_string
        pad = " " * indent

        def reg_text(r, indent, const=False):
            pad = " " * indent
            out = [f"{pad}reg {{", f"{pad}    name = {q(r.name)};"]
            if r.desc:
                out.append(f"{pad}    desc = {q(r.desc)};")
            out.append(f"{pad}    regwidth = {self.data_width};")
            for f in r.fields:
                sw, hw = {"rw": ("rw", "r"), "wo": ("w", "r")}.get(
                    f.access, ("r", "na" if const else "w"))
                props = [f"sw = {sw};", f"hw = {hw};"]
                desc = f.desc + (f"; legal {f.legal_text}, another value is refused"
                                 if f.legal else "")
                if desc:
                    props.append(f"desc = {q(desc)};")
                hi = f.offset + f.width - 1
                reset = f" = 0x{f.reset:X}" if (f.access == "rw" or const) else ""
                # (instance names escaped: field names such as "level" are RDL keywords)
                out.append(f"{pad}    field {{ {' '.join(props)} }} \\{f.name}[{hi}:{f.offset}]"
                           f"{reset};")
            return out

        lines = [f"{pad}name = {q(name)};"]
        if self.desc:
            lines.append(f"{pad}desc = {q(self.desc)};")
        for r in self.registers:
            lines += reg_text(r, indent) + [f"{pad}}} \\{r.name} @ 0x{r.addr * bpw:X};"]
        for r in self.header:
            lines += reg_text(r, indent, const=True) + [
                f"{pad}}} \\{r.name} @ 0x{r.addr * bpw:X};"]
        if self.flows:
            stride = (1 << self.flow_shift) * bpw
            lines.append(f"{pad}regfile {{")
            lines.append(f'{pad}    name = "FLOW";')
            for r in self.flow_registers:
                lines += reg_text(r, indent + 4) + [
                    f"{pad}    }} \\{r.name} @ 0x{r.addr * bpw:X};"]
            lines.append(f"{pad}}} FLOW[{self.flows}] @ 0x{self.flow_base * bpw:X} "
                         f"+= 0x{stride:X};")
        return lines

    def c_layout(self) -> dict[str, int]:
        """The map as C-style constants: ``REG`` -> byte offset, ``REG.field`` -> bit offset
        and ``REG.field#w`` -> width (what a test compares PeakRDL's C header with)."""
        bpw = self.data_width // 8
        out = {}
        for r in self.registers + self.header + self.flow_registers:
            base = (self.flow_base if r in self.flow_registers else 0) * bpw
            out[r.name] = base + r.addr * bpw
            for f in r.fields:
                out[f"{r.name}.{f.name}"] = f.offset
                out[f"{r.name}.{f.name}#w"] = f.width
        return out


@dataclass(frozen=True)
class RegisterMapGroup:
    """Several blocks' register maps on one register port: a composition such as the Swift
    NIC (its engine and its pacer), where one map cannot hold both (each part has its own
    header and its own per-flow windows).

    ``parts``: ``(instance, base, map)``, ``base`` the part's first word, a multiple of the
    part's size: the part decodes the low ``map.addr_width`` bits of the word address and the
    bits above select it.  ``addr_width``: the port's word-address bits (the smallest that
    holds every part).  A word in no part reads 0 and ignores writes
    (:class:`hw.lib.axi_lite.AxiLiteRegs` answers it ``SLVERR``).

    The same documents as a single map: :meth:`markdown` (each part's table under its base),
    :meth:`systemrdl` (one ``addrmap`` holding each part's as a nested ``addrmap`` instance,
    so PeakRDL's C header has ``<name>_t.<instance>.<REG>``), :meth:`c_layout` (keys
    ``instance__REG``, ``instance__REG.field``).
    """
    name: str
    parts: tuple[tuple[str, int, RegisterMap], ...]
    desc: str = ""
    addr_width: int = field(init=False, default=0)

    def __post_init__(self):
        if not _NAME.match(self.name):
            raise ValueError(f"register map group name {self.name!r} is not an identifier")
        parts = tuple((str(i), int(b), m) for i, b, m in self.parts)
        if not parts:
            raise ValueError(f"register map group {self.name}: no parts")
        seen, spans = set(), []
        for inst, base, regmap in parts:
            if not _NAME.match(inst) or inst in seen:
                raise ValueError(f"register map group {self.name}: part name {inst!r} is not "
                                 "a unique identifier")
            seen.add(inst)
            words = 1 << regmap.addr_width
            if base < 0 or base % words:
                raise ValueError(f"register map group {self.name}: part {inst} at word {base}"
                                 f" is not aligned to its size ({words} words)")
            if regmap.data_width != parts[0][2].data_width:
                raise ValueError(f"register map group {self.name}: parts of different data "
                                 "widths")
            spans.append((base, base + words, inst))
        spans.sort()
        for (_, end, a), (start, _, b) in zip(spans, spans[1:], strict=False):
            if start < end:
                raise ValueError(f"register map group {self.name}: parts {a} and {b} overlap")
        object.__setattr__(self, "parts", parts)
        object.__setattr__(self, "addr_width", (spans[-1][1] - 1).bit_length())

    @property
    def data_width(self) -> int:
        return self.parts[0][2].data_width

    @property
    def size_bytes(self) -> int:
        return (1 << self.addr_width) * self.data_width // 8

    def part(self, instance: str) -> tuple[int, RegisterMap]:
        """``(base, map)`` of a part."""
        for inst, base, regmap in self.parts:
            if inst == instance:
                return base, regmap
        raise KeyError(f"register map group {self.name} has no part {instance!r}")

    def addr(self, instance: str, name: str, flow: int | None = None) -> int:
        """Word address of a part's register (of a flow's window for a per-flow one)."""
        base, regmap = self.part(instance)
        return base + regmap.addr(name, flow)

    def decode(self, addr: int) -> tuple[str, Register, int | None] | None:
        """``(instance, register, flow)`` at a word address, or ``None``."""
        for inst, base, regmap in self.parts:
            if base <= addr < base + (1 << regmap.addr_width):
                hit = regmap.decode(addr - base)
                return None if hit is None else (inst, *hit)
        return None

    def mapped_addresses(self) -> list[int]:
        return sorted(base + a for _, base, regmap in self.parts
                      for a in regmap.mapped_addresses())

    def markdown(self) -> str:
        bpw = self.data_width // 8
        out = []
        for inst, base, regmap in self.parts:
            out.append(f"Part `{inst}` ({regmap.name}, ID `{regmap.block_type}`) from word "
                       f"0x{base:X} (byte 0x{base * bpw:X}): add that to its words and bytes "
                       "below.\n")
            out.append(regmap.markdown())
        out.append(f"Port size {self.size_bytes} bytes ({1 << self.addr_width} words, "
                   f"address width {self.addr_width}); a word in no part reads 0 and ignores "
                   "writes.\n")
        return "\n".join(out)

    def systemrdl(self, name: str | None = None) -> str:
        name = name or self.name
        bpw = self.data_width // 8
        lines = [f"addrmap {name} {{", f"    name = {_rdl_string(name)};"]
        if self.desc:
            lines.append(f"    desc = {_rdl_string(self.desc)};")
        for inst, base, regmap in self.parts:
            lines += ["    addrmap {", *regmap._rdl_body(regmap.name, 8),
                      f"    }} {inst} @ 0x{base * bpw:X};"]
        lines.append("};")
        return "\n".join(lines) + "\n"

    def c_layout(self) -> dict[str, int]:
        bpw = self.data_width // 8
        out = {}
        for inst, base, regmap in self.parts:
            for key, value in regmap.c_layout().items():
                out[f"{inst}__{key}"] = value + (0 if "." in key else base * bpw)
        return out


def map_windows(regmap) -> list[tuple[int, RegisterMap]]:
    """``(base word, map)`` of every map on a register port: ``[(0, regmap)]`` for a single
    map, the parts of a :class:`RegisterMapGroup`."""
    if isinstance(regmap, RegisterMapGroup):
        return [(base, m) for _, base, m in regmap.parts]
    return [(0, regmap)]


def rtl_window(word: Value, base: int, regmap: RegisterMap) -> tuple[Value, Value]:
    """``(local, inside)`` of a port's word address against the window of ``regmap`` at word
    ``base`` (an entry of :func:`map_windows`): ``local`` the low ``regmap.addr_width`` bits
    the map decodes, ``inside`` 1 when the bits above select this window (always 1 when the
    map fills the port)."""
    aw = regmap.addr_width
    if len(word) <= aw:
        return word, Const(1, 1)
    return word[:aw], word[aw:] == base >> aw


def _rdl_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class RegisterModel:
    """The golden model's register file for a :class:`RegisterMap`.

    ``write(addr, value)`` applies a write as the RTL does (read-only fields and unmapped words
    ignored, writable fields masked to their width, a refused write (a checked field's value
    not legal) not applied and noted in ``WERR.refused``) and returns ``(register, flow)`` or
    ``None`` (nothing applied; ``refused`` tells a refused write); ``read(addr)`` returns the
    word the RTL reads back.  Registers whose value lives
    elsewhere in the model (read-only state, counters) are read through ``sources``
    (``name -> callable`` returning the register word).
    """

    def __init__(self, regmap: RegisterMap, sources: Mapping[str, Callable[[], int]] | None = None):
        self.map = regmap
        self.sources = dict(sources or {})
        self.values = {r.name: r.reset for r in regmap.registers}
        self.flow_values = [{r.name: r.reset for r in regmap.flow_registers}
                            for _ in range(regmap.flows)]
        self._header = regmap.header_values()
        # wide fields (module docstring): word registers by field, staged and snapshot words
        self._wide: dict[str, list[Register]] = {}
        for r in regmap.registers + regmap.flow_registers:
            if r.wide is not None:
                self._wide.setdefault(r.wide[0], [None] * r.wide[2])[r.wide[1]] = r
        self.staged = {n: [0] * len(ws) for n, ws in self._wide.items()}
        self.snapshot = {n: [0] * len(ws) for n, ws in self._wide.items()}
        self.refused = False      # the last write was refused

    def __getitem__(self, name: str) -> int:
        return self.values[name]

    def field(self, reg: str, name: str, flow: int | None = None) -> int:
        r = self.map[reg]
        word = self.values[reg] if flow is None else self.flow_values[flow][reg]
        f = r.field(name)
        return (word >> f.offset) & ((1 << f.width) - 1)

    def write(self, addr: int, value: int):
        self.refused = False
        hit = self.map.decode(addr)
        if hit is None or not hit[0].writable:
            return None
        reg, flow = hit
        if not reg.legal_write(value):
            self.refused = True
            if WRITE_ERROR_REGISTER in self.values:
                self.values[WRITE_ERROR_REGISTER] |= 1 << self.map[
                    WRITE_ERROR_REGISTER].field("refused").offset
            return None
        store = self.values if flow is None else self.flow_values[flow]
        if reg.wide is None:
            store[reg.name] = value & reg.write_mask
            return reg, flow
        name, j, _ = reg.wide
        self.staged[name][j] = value & reg.write_mask
        if j == 0:      # the low word commits the field: every word at once
            for word_reg, v in zip(self._wide[name], self.staged[name], strict=True):
                store[word_reg.name] = v
        return reg, flow

    def _word(self, reg: Register, flow: int | None) -> int:
        if reg.name in self.sources:
            return self.sources[reg.name]() & ((1 << reg.width) - 1)
        word = self.values[reg.name] if flow is None else self.flow_values[flow][reg.name]
        return word & reg.read_mask

    def read(self, addr: int) -> int:
        if addr in self._header:
            return self._header[addr]
        hit = self.map.decode(addr)
        if hit is None:
            return 0
        reg, flow = hit
        if reg.wide is None:
            return self._word(reg, flow)
        name, j, _ = reg.wide
        if j == 0:      # the low word snapshots the field
            self.snapshot[name] = [self._word(r, flow) for r in self._wide[name]]
        return self.snapshot[name][j]


class CsrBank:
    """The RTL of a :class:`RegisterMap` inside a block's ``elaborate``.

    Create it first (its storage signals are the block's run-time registers: ``bank["K_MIN"]``,
    ``bank.field("CTRL", "profile")``), give the read-only fields their sources
    (:meth:`source`), then call :meth:`build` LAST, so that a software write takes priority over
    the block's own update of a register in the same cycle (a counter being cleared).

    ``resets``: reset words by register name, overriding the map's (a configuration's values).
    ``external``: registers whose storage is the block's own signal (read back from it; a write
    only raises the register's strobe, the block applies it, e.g. with a clamp).

    Attributes: ``wstb[name]`` (1 in the cycle a write to the register is applied),
    ``wdata`` (the word being applied; set by :meth:`build`), ``applying`` (a write is
    applied this cycle), ``refused`` (1 in the cycle a write is refused instead: module
    docstring, "Refused writes"; the map's ``WERR.refused`` is set by :meth:`build`).
    Per-flow registers: ``flow_wstb[name]`` and ``flow_wflow`` (the write's flow); for reads
    ``flow_rflow`` / ``flow_rindex`` (the flow and register index at ``raddr``, for the
    block's memory read port) and ``flow_rdata`` (driven by the block, one cycle after
    ``raddr``, like the global registers).
    """

    def __init__(self, regmap: RegisterMap, *, resets: Mapping[str, int] | None = None,
                 external: Mapping[str, Value] | None = None):
        if any(r.wide is not None for r in regmap.registers + regmap.flow_registers):
            raise ValueError(f"register map {regmap.name}: wide fields (words of a field) are "
                             "built by hw.nic.engine_regs.EngineRegs, not CsrBank")
        self.map = regmap
        self.external = dict(external or {})
        resets = dict(resets or {})
        for name in list(resets) + list(self.external):
            regmap[name]
        self.storage = {}
        for r in regmap.registers:
            if r.writable and r.name not in self.external:
                init = resets.get(r.name, r.reset) & r.write_mask
                self.storage[r.name] = Signal(r.width, init=init, name=f"reg_{r.name.lower()}")
        self.sources: dict[tuple[str, str], Value] = {}
        self.wstb = {r.name: Signal(name=f"wstb_{r.name.lower()}")
                     for r in regmap.registers if r.writable}
        self.wdata = None          # the word being applied: set by build()
        self.applying = Signal(name="csr_applying")
        self.refused = Signal(name="csr_refused")
        self.flow_wstb = {r.name: Signal(name=f"wstb_flow_{r.name.lower()}")
                          for r in regmap.flow_registers}
        fbits = max(1, (regmap.flows - 1).bit_length())
        self.flow_wflow = Signal(fbits, name="csr_wflow")
        self.flow_rflow = Signal(fbits, name="csr_rflow")
        self.flow_rindex = Signal(max(1, regmap.flow_shift), name="csr_rindex")
        self.flow_rdata = Signal(regmap.data_width, name="csr_flow_rdata")

    def __getitem__(self, name: str) -> Signal:
        return self.storage[name]

    def field(self, reg: str, name: str) -> Value:
        f = self.map[reg].field(name)
        return self.storage[reg][f.offset:f.offset + f.width]

    def source(self, reg: str, value: Value, field: str | None = None) -> None:
        """The value a read-only field reads back (``field`` may be omitted for a register of
        one field)."""
        r = self.map[reg]
        f = r.field(field) if field is not None else r.fields[0]
        if f.access != "ro":
            raise ValueError(f"{reg}.{f.name} is not read-only")
        self.sources[(reg, f.name)] = value

    def _read_word(self, r: Register) -> Value:
        if r.name in self.external:
            return self.external[r.name]
        parts, pos = [], 0
        for f in r.fields:
            if f.offset > pos:
                parts.append(Const(0, f.offset - pos))
            if f.access == "rw":
                parts.append(self.storage[r.name][f.offset:f.offset + f.width])
            elif f.access == "wo":
                parts.append(Const(0, f.width))
            else:
                v = Value.cast(self.sources.get((r.name, f.name), Const(0, f.width)))
                parts.append(v[:f.width] if len(v) >= f.width
                             else Cat(v, Const(0, f.width - len(v))))
            pos = f.offset + f.width
        return Cat(*parts)

    def build(self, m: Module, csr_w, raddr: Value | None = None, rdata: Value | None = None,
              *, idle: Value | int = 1, delay: int = 0) -> None:
        """The write decode and read mux.

        ``csr_w``: the block's ``(addr, data)`` write stream.  ``idle``: the block's "a write
        may be applied now" condition; ``csr_w.ready`` is ``idle`` and a write is taken when
        valid and ready (the block holds off its events while ``csr_w.valid``, so a waiting
        write is not starved).  ``delay``: 0 applies the write at the edge that takes it, 1 at
        the next edge (the block counts ``applying`` as busy).  ``raddr``/``rdata``: the read
        port, data one cycle after the address; unmapped words read 0.
        """
        regmap = self.map
        m.d.comb += csr_w.ready.eq(idle)
        take = csr_w.valid & csr_w.ready
        if delay == 0:
            addr, data = csr_w.payload.addr, csr_w.payload.data
            m.d.comb += self.applying.eq(take)
        elif delay == 1:
            addr = Signal.like(csr_w.payload.addr, name="csr_waddr_q")
            data = Signal.like(csr_w.payload.data, name="csr_wdata_q")
            m.d.sync += [self.applying.eq(take), addr.eq(csr_w.payload.addr),
                         data.eq(csr_w.payload.data)]
        else:
            raise ValueError(f"delay {delay} must be 0 or 1")
        self.wdata = data
        refused = Const(0, 1)
        for r in regmap.registers:
            if not r.writable:
                continue
            hit = self.applying & (addr == r.addr)
            if r.checked:      # a value outside a field's legal ranges: not applied
                ok = rtl_legal_write(r, data)
                refused = refused | (hit & ~ok)
                hit = hit & ok
            m.d.comb += self.wstb[r.name].eq(hit)
            if r.name in self.storage:
                with m.If(self.wstb[r.name]):
                    m.d.sync += self.storage[r.name].eq(data[:r.width] & r.write_mask)
        if any(r.checked for r in regmap.registers):
            m.d.comb += self.refused.eq(refused)
        if WRITE_ERROR_REGISTER in self.storage:
            # (never in the cycle of a WERR write: one write at a time)
            bit = regmap[WRITE_ERROR_REGISTER].field("refused").offset
            with m.If(self.refused):
                m.d.sync += self.storage[WRITE_ERROR_REGISTER][bit].eq(1)
        if regmap.flows:
            top = regmap.addr_width - 1          # the bit that selects the flow windows
            in_flows = addr[top]
            index = addr[:regmap.flow_shift] if regmap.flow_shift else Const(0, 1)
            # (the flow number's bits in the address may be more than flow_wflow holds: the
            # windows start at a power of two above the global registers, which may span more
            # flows than there are; compared in full, or flow 4 of a 4-flow map would alias 0)
            wflow = addr[regmap.flow_shift:top]
            m.d.comb += self.flow_wflow.eq(wflow)
            for r in regmap.flow_registers:
                m.d.comb += self.flow_wstb[r.name].eq(
                    self.applying & in_flows & (index == r.addr) & (wflow < regmap.flows))
        if raddr is None:
            return
        # (without per-flow windows the read mux drives rdata itself: Yosys would keep a named
        # intermediate as an unused wire)
        word = rdata if not regmap.flows else Signal(regmap.data_width, name="csr_rword")
        with m.Switch(raddr[:regmap.addr_width]):
            for r in regmap.registers:
                with m.Case(r.addr):
                    m.d.sync += word.eq(self._read_word(r))
            for r in regmap.header:
                with m.Case(r.addr):
                    m.d.sync += word.eq(r.fields[0].reset)
            with m.Default():
                m.d.sync += word.eq(0)
        if not regmap.flows:
            return
        top = regmap.addr_width - 1
        in_flows_q = Signal(name="csr_rflow_q")
        rflow = raddr[regmap.flow_shift:top]          # (compared in full, as for writes)
        m.d.comb += [self.flow_rflow.eq(rflow),
                     self.flow_rindex.eq(raddr[:regmap.flow_shift] if regmap.flow_shift else 0)]
        mapped = Const(0, 1)
        for r in regmap.flow_registers:
            mapped = mapped | (self.flow_rindex == r.addr)
        m.d.sync += in_flows_q.eq(raddr[top] & mapped & (rflow < regmap.flows))
        m.d.comb += rdata.eq(Mux(in_flows_q, self.flow_rdata, word))


def rtl_legal_write(reg: Register, data: Value) -> Value:
    """1 when the word ``data`` written to ``reg`` gives every checked field a legal value."""
    ok = Const(1, 1)
    for f in reg.fields:
        if not f.legal:
            continue
        v = data[f.offset:f.offset + f.width]
        in_any = Const(0, 1)
        for lo, hi in f.legal:
            # (the bound a field's width already implies is not compared)
            lo_ok = Const(1, 1) if lo == 0 else v >= lo
            hi_ok = Const(1, 1) if hi == (1 << f.width) - 1 else v <= hi
            in_any = in_any | (lo_ok & hi_ok)
        ok = ok & in_any
    return ok
