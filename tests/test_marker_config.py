"""MarkerConfig: validation errors name the field, the value and the allowed range."""

import pytest

from hw.params import ConfigError
from hw.switch.marker_config import MarkerConfig


def test_defaults_and_registers():
    cfg = MarkerConfig()
    r = cfg.registers()
    assert (r.profile, r.compare, r.sample_at) == (0, 0, 0)
    assert r.p_max == round(0.2 * 65536) and r.shared_buffer == cfg.buf_max
    assert cfg.port_width == 1 and cfg.prio_width == 1 and cfg.queues == 1


def test_profiles_and_register_codes():
    d = MarkerConfig.dctcp(k=30_000, buf_max=100_000, compare="gt", sample_at="dequeue")
    r = d.registers()
    assert (r.profile, r.compare, r.sample_at) == (2, 1, 1)
    assert r.k_min == r.k_max == 30_000 and r.p_max == 65536
    q = MarkerConfig.dcqcn(k_min=5_000, k_max=200_000, p_max=0.01, buf_max=1_000_000)
    assert q.registers().profile == 1 and q.registers().p_max == 655
    assert MarkerConfig.from_json(q.to_json()) == q


@pytest.mark.parametrize("changes, field, text", [
    ({"k_min": 300_000}, "k_min", "k_max (= 200000)"),           # K_min > K_max
    ({"p_max": 0.0}, "p_max", "0.0 < p_max <= 1.0"),             # P_max outside (0, 1]
    ({"p_max": 1.5}, "p_max", "0.0 < p_max <= 1.0"),
    ({"p_max": float("nan")}, "p_max", "p_max"),
    ({"buf_max": 100_000}, "k_max", "buf_max (= 100000)"),       # buf_max < K_max
    ({"k_min": -1}, "k_min", "0 <= k_min"),                       # negative threshold
    ({"k_drop": -5}, "k_drop", "0 <= k_drop"),
    ({"k_drop": 2_000_000}, "k_drop", "buf_max (= 1000000)"),
    ({"occ_width": 16}, "buf_max", "occ_width 16"),              # width too small for buffer
    ({"shared_buffer": 1 << 24}, "shared_buffer", "occ_width 24"),
    ({"ports": 0}, "ports", "1 <= ports <= 1024"),
    ({"priorities": 9}, "priorities", "1 <= priorities <= 8"),
    ({"profile": "red"}, "profile", "'ldcp', 'dcqcn', 'dctcp'"),
    ({"compare": ">="}, "compare", "'ge', 'gt'"),
    ({"sample_at": "middle"}, "sample_at", "'enqueue', 'dequeue'"),
    ({"p_max": 1e-6}, "p_max", "2**-draw_bits"),                  # below the resolution
    ({"ports": 2.5}, "ports", "integer"),
    ({"k_min": True}, "k_min", "integer"),
])
def test_invalid_values_raise_clear_errors(changes, field, text):
    with pytest.raises(ConfigError) as e:
        MarkerConfig(**changes)
    message = str(e.value)
    assert e.value.field == field
    assert message.startswith(f"MarkerConfig.{field} = ")
    assert repr(changes.get(field, e.value.value)) in message or field not in changes
    assert text in message, message


def test_dctcp_profile_requires_a_step():
    with pytest.raises(ConfigError, match="k_min == k_max"):
        MarkerConfig(profile="dctcp", k_min=1000, k_max=2000, p_max=1.0)
    with pytest.raises(ConfigError, match="1.0 for the step profile"):
        MarkerConfig(profile="dctcp", k_min=2000, k_max=2000, p_max=0.5)


def test_boundary_values_are_accepted():
    MarkerConfig(k_min=0, k_max=0, k_drop=0, buf_max=0, p_max=1.0)
    MarkerConfig(occ_width=24, buf_max=(1 << 24) - 1, k_max=(1 << 24) - 1, k_min=(1 << 24) - 1)
    MarkerConfig(p_max=2.0 ** -16)
