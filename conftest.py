"""Suite-wide ordering: the Verilator (cocotb) tests, longest first, before the fast unit tests.

``make test`` runs on two xdist workers; with the cocotb runs at the end of the collection
(``testpaths``), the few minute-long engine runs formed a tail that one worker ran alone.  Sent
first, they overlap with each other and the short tests fill the gaps.  The order changes no
test's outcome (each test builds or reuses its own Verilator model)."""

from __future__ import annotations

#: test files whose runs take the longest (a Verilator build of a large top, long random runs),
#: in the order to send them
_FIRST = ("cocotb_tests/test_flow_engine.py", "cocotb_tests/test_axis.py",
          "cocotb_tests/test_l3qcn.py", "cocotb_tests/test_ldcp_transport.py",
          "cocotb_tests/test_l3qcn_tables.py", "cocotb_tests/test_dcqcn_rp.py",
          "cocotb_tests/test_qcn_rp.py", "cocotb_tests/test_cnp_gen.py")


def pytest_collection_modifyitems(session, config, items):
    """The files of ``_FIRST`` interleaved (one test of each in turn, so that neighbours, which
    xdist hands to different workers, use different Verilator builds and do not wait on each
    other's build lock), then the other cocotb tests, then the rest; each file keeps its order."""
    by_file: dict[str, list] = {f: [] for f in _FIRST}
    cocotb, rest = [], []
    for item in items:
        path = item.nodeid.split("::")[0]
        if path in by_file:
            by_file[path].append(item)
        elif path.startswith("cocotb_tests/"):
            cocotb.append(item)
        else:
            rest.append(item)
    first = []
    queues = [q for q in by_file.values() if q]
    while queues:
        first.extend(q.pop(0) for q in queues)
        queues = [q for q in queues if q]
    items[:] = first + cocotb + rest
