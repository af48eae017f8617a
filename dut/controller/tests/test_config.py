"""Strict controller config: one test per kind of bad input, each error names the key."""
import pytest

from dut.controller.config import ConfigError, load_config, parse_config


def _write(tmp_path, text):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


def test_full_config_loads(tmp_path):
    cfg = load_config(_write(tmp_path, """\
matcher: aho_corasick
patterns: [ABCDEFGHIJ, KLMNOPQRST]
high_workers: 8
high_precedence_min: 4
worker_mode: processes
strict_priority: true
low_worker_nice: 19
high_worker_nice: -10
packet_in_intake: osken
out_port: 2
completion_log: /tmp/x.csv
"""))
    assert cfg.patterns == (b"ABCDEFGHIJ", b"KLMNOPQRST")
    assert (cfg.matcher, cfg.high_workers, cfg.high_precedence_min) == ("aho_corasick", 8, 4)
    assert (cfg.worker_mode, cfg.low_worker_nice, cfg.out_port) == ("processes", 19, 2)
    assert cfg.strict_priority is True
    assert cfg.high_worker_nice == -10
    assert cfg.packet_in_intake == "osken"


def test_defaults():
    cfg = parse_config({"patterns": ["x"]})
    assert (cfg.matcher, cfg.high_workers, cfg.high_precedence_min, cfg.worker_mode,
            cfg.out_port) == ("naive", 1, 5, "threads", "flood")
    assert cfg.strict_priority is False  # the document's independent queues
    assert cfg.packet_in_intake == "raw"


def test_thread_count_zero_names_key_and_line(tmp_path):
    p = _write(tmp_path, "patterns: [x]\nhigh_workers: 0\n")
    with pytest.raises(ConfigError, match=r"c.yaml:2: high_workers: must be in 1..64, got 0"):
        load_config(p)


def test_thread_count_not_integer():
    with pytest.raises(ConfigError, match="high_workers: expected int in 1..64"):
        parse_config({"patterns": ["x"], "high_workers": "8"})
    with pytest.raises(ConfigError, match="high_workers: expected int in 1..64"):
        parse_config({"patterns": ["x"], "high_workers": True})


def test_empty_pattern_list(tmp_path):
    with pytest.raises(ConfigError, match=r"c.yaml:1: patterns: must not be empty"):
        load_config(_write(tmp_path, "patterns: []\n"))


def test_missing_patterns():
    with pytest.raises(ConfigError, match="patterns: required key is missing"):
        parse_config({"matcher": "naive"})


def test_bad_pattern_item():
    with pytest.raises(ConfigError, match=r"patterns\[1\]: must have 1..256 characters, got 0"):
        parse_config({"patterns": ["ok", ""]})
    with pytest.raises(ConfigError, match=r"patterns\[0\]: expected str"):
        parse_config({"patterns": [12]})


def test_unknown_matcher(tmp_path):
    p = _write(tmp_path, "patterns: [x]\nmatcher: boyer_moore\n")
    with pytest.raises(ConfigError, match=r"c.yaml:2: matcher: expected one of naive"):
        load_config(p)


def test_unknown_key(tmp_path):
    p = _write(tmp_path, "patterns: [x]\n\nhigh_threads: 8\n")
    with pytest.raises(ConfigError, match=r"c.yaml:3: high_threads: unknown key \(did you mean 'high_workers'"):
        load_config(p)


def test_bad_worker_mode():
    with pytest.raises(ConfigError, match="worker_mode: expected one of threads, processes"):
        parse_config({"patterns": ["x"], "worker_mode": "greenlets"})


def test_bad_packet_in_intake():
    with pytest.raises(ConfigError, match="packet_in_intake: expected one of raw, osken, got 'fast'"):
        parse_config({"patterns": ["x"], "packet_in_intake": "fast"})


def test_strict_priority_not_a_boolean():
    with pytest.raises(ConfigError, match="strict_priority: expected bool .true or false., got str 'yes'"):
        parse_config({"patterns": ["x"], "strict_priority": "yes"})


def test_precedence_out_of_range():
    with pytest.raises(ConfigError, match="high_precedence_min: must be in 0..7, got 8"):
        parse_config({"patterns": ["x"], "high_precedence_min": 8})


def test_bad_nice():
    with pytest.raises(ConfigError, match="low_worker_nice: must be in 0..19"):
        parse_config({"patterns": ["x"], "low_worker_nice": -5})


@pytest.mark.parametrize("value", [-21, 20, True, "-10"])
def test_bad_high_worker_nice(value):
    with pytest.raises(ConfigError, match="high_worker_nice: .*-20..19"):
        parse_config({"patterns": ["x"], "high_worker_nice": value})


def test_bad_out_port():
    with pytest.raises(ConfigError, match="out_port: expected 'flood' or an OpenFlow port number"):
        parse_config({"patterns": ["x"], "out_port": "port2"})


def test_bad_completion_log():
    with pytest.raises(ConfigError, match="completion_log: expected str or null"):
        parse_config({"patterns": ["x"], "completion_log": 5})


def test_top_level_not_a_mapping(tmp_path):
    with pytest.raises(ConfigError, match="c.yaml: expected a mapping of keys, got list"):
        load_config(_write(tmp_path, "- a\n- b\n"))


def test_invalid_yaml(tmp_path):
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(_write(tmp_path, "patterns: [x\n"))


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "nope.yaml")
