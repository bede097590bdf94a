# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the pairing_rounds scheduler: exact small plans and properties for N = 2..64."""

from __future__ import annotations

import math
from collections import Counter
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufabric.core.plugins.module_utils.verify.pairing import (
    PairingError,
    normalize_locality,
    pairing_rounds,
)


def _hosts(count):
    return ["node%02d" % index for index in range(count)]


def _assert_rounds_disjoint(rounds):
    for pairs in rounds:
        in_round = [host for pair in pairs for host in pair]
        assert len(in_round) == len(set(in_round)), "a host appears twice in round %r" % pairs
        assert all(len(pair) == 2 and pair[0] != pair[1] for pair in pairs)


def _unordered(rounds):
    return [frozenset(pair) for pairs in rounds for pair in pairs]


def _connected(hosts, rounds):
    parent = {host: host for host in hosts}

    def find(host):
        while parent[host] != host:
            host = parent[host]
        return host

    for pairs in rounds:
        for first, second in pairs:
            parent[find(first)] = find(second)
    return len({find(host) for host in hosts}) == 1


# Random localities: up to 8 racks, switches either one per rack (leaf) or shared randomly.
@st.composite
def _fleet(draw):
    count = draw(st.integers(min_value=2, max_value=64))
    hosts = _hosts(count)
    if not draw(st.booleans()):
        return hosts, None
    racks = draw(st.lists(st.integers(0, 7), min_size=count, max_size=count))
    switches = draw(st.lists(st.integers(0, 3), min_size=count, max_size=count))
    return hosts, dict((host, {"rack": "r%d" % rack, "switch": "s%d" % switch}) for host, rack, switch in zip(hosts, racks, switches))


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=2, max_value=64))
def test_all_covers_every_pair_once_in_minimum_rounds(count):
    hosts = _hosts(count)
    rounds = pairing_rounds(hosts, "all")
    _assert_rounds_disjoint(rounds)
    assert len(rounds) == (count - 1 if count % 2 == 0 else count)
    pairs = _unordered(rounds)
    assert len(pairs) == len(set(pairs)) == count * (count - 1) // 2
    assert set(pairs) == set(frozenset(pair) for pair in combinations(hosts, 2))
    # Every round is as full as it can be: all hosts busy, or all but one when N is odd.
    assert all(len(pairs) == count // 2 for pairs in rounds)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=2, max_value=64))
def test_all_orientation_is_balanced(count):
    first = Counter(pair[0] for pairs in pairing_rounds(_hosts(count), "all") for pair in pairs)
    # Each host meets N-1 partners and comes first in about half of those pairs.
    for host in _hosts(count):
        assert abs(first[host] - (count - 1) / 2) <= 1, (host, first[host])


@settings(max_examples=300, deadline=None)
@given(_fleet())
def test_quick_tests_every_host_each_round_in_log_rounds(fleet):
    hosts, locality = fleet
    count = len(hosts)
    rounds = pairing_rounds(hosts, "quick", locality)
    _assert_rounds_disjoint(rounds)
    assert 1 <= len(rounds) <= math.ceil(math.log2(count))
    for pairs in rounds:
        tested = {host for pair in pairs for host in pair}
        assert len(tested) == (count if count % 2 == 0 else count - 1)
        assert tested <= set(hosts)
    # No round repeats a pair: every test measures a new path.
    pairs = _unordered(rounds)
    assert len(pairs) == len(set(pairs))


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=2, max_value=64))
def test_quick_without_locality_links_every_host(count):
    # ceil(log2 N) rounds are enough for the tested pairs to connect the whole fleet.
    hosts = _hosts(count)
    assert _connected(hosts, pairing_rounds(hosts, "quick"))


def test_quick_on_power_of_two_is_a_hypercube():
    rounds = pairing_rounds(_hosts(8), "quick")
    assert [sorted(sorted(pair) for pair in pairs) for pairs in rounds] == [
        [["node00", "node01"], ["node02", "node03"], ["node04", "node05"], ["node06", "node07"]],
        [["node00", "node02"], ["node01", "node03"], ["node04", "node06"], ["node05", "node07"]],
        [["node00", "node04"], ["node01", "node05"], ["node02", "node06"], ["node03", "node07"]],
    ]


def _rack(locality, host):
    return locality[host]["rack"]


@pytest.mark.parametrize("racks,per_rack", [(2, 4), (2, 8), (4, 4), (3, 5), (8, 8)])
def test_quick_pairs_cross_racks_when_locality_allows(racks, per_rack):
    hosts = ["r%d-n%d" % (rack, node) for rack in range(racks) for node in range(per_rack)]
    locality = dict((host, {"rack": host.split("-")[0], "switch": "leaf-" + host.split("-")[0]}) for host in hosts)
    rounds = pairing_rounds(hosts, "quick", locality)
    assert len(rounds) == math.ceil(math.log2(len(hosts)))
    for pairs in rounds:
        for first, second in pairs:
            assert _rack(locality, first) != _rack(locality, second), (first, second)
    # Without locality the same fleet keeps some pairs inside a rack: the preference is real.
    same_rack = [
        pair for pairs in pairing_rounds(hosts, "quick") for pair in pairs
        if _rack(locality, pair[0]) == _rack(locality, pair[1])
    ]
    assert same_rack


def test_quick_plans_a_thousand_hosts():
    # 1000 hosts in 40 racks of 25, two leaves a rack: a large fleet plans in well under a second.
    hosts = ["r%02d-n%02d" % (rack, node) for rack in range(40) for node in range(25)]
    locality = dict((host, {"rack": host[:3], "switch": host[:3] + ("a" if int(host[-2:]) < 13 else "b")}) for host in hosts)
    rounds = pairing_rounds(hosts, "quick", locality)
    assert len(rounds) == 10
    _assert_rounds_disjoint(rounds)
    pairs = _unordered(rounds)
    assert len(pairs) == len(set(pairs)) == 10 * 500
    assert all(locality[first]["rack"] != locality[second]["rack"] for pairs in rounds for first, second in pairs)


def test_quick_prefers_cross_switch_inside_one_rack():
    # One rack, two leaves: every quick pair should cross leaves, as [rack, switch] lists.
    hosts = _hosts(8)
    locality = dict((host, ["r1", "leaf-a" if index < 4 else "leaf-b"]) for index, host in enumerate(hosts))
    for pairs in pairing_rounds(hosts, "quick", locality):
        for first, second in pairs:
            assert locality[first][1] != locality[second][1]


def test_quick_cross_rack_as_far_as_possible_when_racks_are_unbalanced():
    # 6 hosts in r1 and 2 in r2: at most 2 pairs a round can cross, and the plan uses both.
    hosts = _hosts(8)
    locality = dict((host, {"rack": "r2" if index >= 6 else "r1"}) for index, host in enumerate(hosts))
    for pairs in pairing_rounds(hosts, "quick", locality):
        crossing = [pair for pair in pairs if _rack(locality, pair[0]) != _rack(locality, pair[1])]
        assert len(crossing) == 2


def test_small_plans_exact():
    assert pairing_rounds(["a", "b"], "all") == [[["a", "b"]]]
    assert pairing_rounds(["a", "b", "c", "d"], "all") == [
        [["a", "d"], ["b", "c"]],
        [["c", "a"], ["d", "b"]],
        [["a", "b"], ["c", "d"]],
    ]
    # Odd N: three rounds, one host idles in each, a different one each time.
    rounds = pairing_rounds(["a", "b", "c"], "all")
    idle = [({"a", "b", "c"} - {host for pair in pairs for host in pair}).pop() for pairs in rounds]
    assert sorted(idle) == ["a", "b", "c"]
    quick = pairing_rounds(["a", "b", "c"], "quick")
    assert len(quick) == 2
    idle = [({"a", "b", "c"} - {host for pair in pairs for host in pair}).pop() for pairs in quick]
    assert idle[0] != idle[1]


def test_fewer_than_two_hosts_give_no_rounds():
    assert pairing_rounds([], "all") == []
    assert pairing_rounds(["only"], "quick") == []


def test_plan_is_deterministic():
    hosts = _hosts(13)
    locality = dict((host, {"rack": "r%d" % (index % 3)}) for index, host in enumerate(hosts))
    assert pairing_rounds(hosts, "quick", locality) == pairing_rounds(list(hosts), "quick", dict(locality))


def test_locality_forms():
    places = normalize_locality(
        {"a": {"rack": 12, "switch": "leaf1", "row": "x"}, "b": ["r1", None], "c": None, "d": {"rack": ""}},
        ["a", "b", "c", "d", "e"],
    )
    assert places == {
        "a": ("12", "leaf1"),
        "b": ("r1", None),
        "c": (None, None),
        "d": (None, None),
        "e": (None, None),
    }


@pytest.mark.parametrize(
    "hosts,mode,locality,message",
    [
        (["a", "b"], "fast", None, "mode must be one of all, quick, got 'fast'"),
        ("a,b", "all", None, "hosts must be a list of host names, got str"),
        (["a", "b", "a"], "all", None, "hosts must be unique; listed more than once: a"),
        (["a", 3], "all", None, "every host must be a non-empty string, got 3"),
        (["a", "b"], "quick", ["r1"], "locality must be a dict"),
        (["a", "b"], "quick", {"a": "r1"}, "locality of host a must be {rack: ..., switch: ...} or [rack, switch], got 'r1'"),
    ],
)
def test_bad_arguments_raise_clear_errors(hosts, mode, locality, message):
    with pytest.raises(PairingError, match=message.replace("[", r"\[").replace("]", r"\]").replace("{", r"\{").replace("}", r"\}")):
        pairing_rounds(hosts, mode, locality)
