"""`python -m drivers.lab.lease matrix`: a pool's places as CI matrix entries (pure part)."""
import pytest

from drivers.lab.lease import LeaseError, main, parse_filter, pool_matrix

PLACES = {
    "lab2": {"acquired": None, "tags": {"pool": "rack2", "profile": "lab2", "nic": "pci"}},
    "lab1": {"acquired": "h/u-run", "tags": {"pool": "rack2", "profile": "lab1", "nic": "pci"}},
    "lab3": {"acquired": None, "tags": {"pool": "rack2", "profile": "lab3", "nic": "memif"}},
    "odd": {"acquired": None, "tags": {"pool": "rack2"}},              # no profile tag
    "other": {"acquired": None, "tags": {"pool": "rack9", "profile": "other"}},
}


def test_matrix_lists_every_matching_place_held_or_free_sorted():
    assert pool_matrix(PLACES, parse_filter("pool=rack2,nic=pci")) == [
        {"place": "lab1", "profile": "lab1"}, {"place": "lab2", "profile": "lab2"}]
    assert [e["place"] for e in pool_matrix(PLACES, {"pool": "rack2"})] == ["lab1", "lab2",
                                                                            "lab3"]
    assert pool_matrix(PLACES, {"pool": "none"}) == []


def test_matrix_bad_filter_is_one_clear_error(capsys):
    with pytest.raises(LeaseError, match="matrix pool: 'pool' is not a tag filter"):
        parse_filter("pool", where="matrix ")
    assert main(["matrix", "pool", "--coordinator", "127.0.0.1:1"]) == 2
    assert "is not a tag filter" in capsys.readouterr().err
