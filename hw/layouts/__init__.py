"""Layouts and enumerations shared by the RTL, the golden models and the testbenches.

Descriptors, decisions and control words are packed and unpacked through these layouts
(``layout.const({...}).as_bits()`` / ``layout.from_bits(int)``, or :class:`LayoutCodec` where
speed matters), never with hand-written shifts.  Layouts whose field widths depend on a block's
configuration are built by a function of that configuration.

One module per family, each with its own ``__all__``; this package re-exports them all, so
``from hw.layouts import X`` works for every name:

``common``        ECN codepoint, register write, byte-stream beat, :func:`wire_header`, codec
``packets``       Ethernet, VLAN, IPv4, IPv6, UDP, BTH, CN-TAG, CNM PDU, private CNM PDU
``marker``        egress congestion point (queue events, decisions, CTRL register)
``dcqcn``         DCQCN reaction and notification points, CNP request
``qcn``           QCN congestion and reaction points, CNM request
``ldcp``          LDCP window engine and transport
``rate_limiter``  per-flow rate limiter
``l3qcn``         hash table, private CNM, L3QCN congestion point and ToR
"""

from . import common, dcqcn, l3qcn, ldcp, marker, packets, qcn, rate_limiter
from .common import *  # noqa: F403
from .dcqcn import *  # noqa: F403
from .l3qcn import *  # noqa: F403
from .ldcp import *  # noqa: F403
from .marker import *  # noqa: F403
from .packets import *  # noqa: F403
from .qcn import *  # noqa: F403
from .rate_limiter import *  # noqa: F403

__all__ = [name for module in (common, packets, marker, dcqcn, qcn, ldcp, rate_limiter, l3qcn)
           for name in module.__all__]
