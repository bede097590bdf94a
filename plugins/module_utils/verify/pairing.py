# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan which host pairs run a point-to-point bandwidth test at the same time.

A NIC runs one test at a time, so a sweep is a list of rounds; each round is a set of
disjoint pairs that run concurrently, and the next round starts when its slowest pair ends.

``pairing_rounds(hosts, mode="all")`` covers every unordered pair exactly once with the
circle method (round-robin tournament): N-1 rounds for even N, N rounds for odd N, which is
the minimum because every host meets N-1 partners and can meet only one per round.

``pairing_rounds(hosts, mode="quick", locality=...)`` tests every host in every round (one
idles when N is odd) in at most ceil(log2 N) rounds. Each round is built greedily (each host
in list order takes its best free partner), then improved by swapping partners between two
pairs wherever that raises the round's worth. A pair is worth more, in order of priority:

1. a pair not tested in an earlier round (a repeat measures nothing new);
2. a pair whose hosts sit in different racks, then behind different switches, so the
   spine/uplink path is exercised instead of staying under one leaf;
3. a pair joining two hosts not yet connected, directly or through earlier rounds, so the
   graph of tested pairs grows fast and one bad host shows up against several partners.

These are preferences, not guarantees: with one rack there is nothing to cross. The unit
tests check, for N = 2..64 and random racks, that no quick round repeats a pair and that
without locality the tested pairs connect every host; planning 2048 hosts takes about a
second.

Pairs are ``[first, second]``. Orientation alternates with the hosts' positions (by the
parity of the sum of their indexes) so that each host comes first in about half of its
pairs: when callers run the client on ``first`` and the server on ``second``, both
directions of every NIC get exercised over a full sweep.
"""

from __future__ import annotations

import math

MODES = ("all", "quick")


class PairingError(ValueError):
    """The hosts, mode or locality given to pairing_rounds are unusable."""


def _check_hosts(hosts):
    if isinstance(hosts, (str, bytes)) or not isinstance(hosts, (list, tuple)):
        raise PairingError("hosts must be a list of host names, got %s" % type(hosts).__name__)
    seen = set()
    duplicates = []
    for host in hosts:
        if not isinstance(host, str) or not host:
            raise PairingError("every host must be a non-empty string, got %r" % (host,))
        if host in seen and host not in duplicates:
            duplicates.append(host)
        seen.add(host)
    if duplicates:
        raise PairingError("hosts must be unique; listed more than once: %s" % ", ".join(duplicates))
    return list(hosts)


def normalize_locality(locality, hosts):
    """Return {host: (rack, switch)} for hosts, None where unknown.

    Each value of locality may be a (rack, switch) pair, a dict with optional keys ``rack``
    and ``switch`` (other keys ignored, so a per-host ``gpufabric_locality`` dict fits), or
    None. Hosts missing from locality have an unknown rack and switch.
    """
    if locality is None:
        return dict((host, (None, None)) for host in hosts)
    if not isinstance(locality, dict):
        raise PairingError(
            "locality must be a dict of host -> {rack, switch} or [rack, switch], got %s"
            % type(locality).__name__
        )
    result = {}
    for host in hosts:
        value = locality.get(host)
        if value is None:
            rack, switch = None, None
        elif isinstance(value, dict):
            rack, switch = value.get("rack"), value.get("switch")
        elif isinstance(value, (list, tuple)) and len(value) == 2:
            rack, switch = value
        else:
            raise PairingError(
                "locality of host %s must be {rack: ..., switch: ...} or [rack, switch], got %r"
                % (host, value)
            )
        # Racks and switches are labels; 1 and "1" must compare equal, "" means unknown.
        result[host] = tuple(None if part in (None, "") else str(part) for part in (rack, switch))
    return result


def _oriented(index_a, index_b, hosts):
    low, high = sorted((index_a, index_b))
    if (low + high) % 2:
        return [hosts[low], hosts[high]]
    return [hosts[high], hosts[low]]


def _all_rounds(hosts):
    """Circle method: keep slot 0 fixed, rotate the others one step per round."""
    indexes = list(range(len(hosts)))
    if len(indexes) % 2:
        indexes.append(None)  # the host facing None idles in that round
    slots = len(indexes)
    rounds = []
    for _round in range(slots - 1):
        pairs = []
        for position in range(slots // 2):
            index_a, index_b = indexes[position], indexes[slots - 1 - position]
            if index_a is not None and index_b is not None:
                pairs.append(_oriented(index_a, index_b, hosts))
        rounds.append(pairs)
        indexes = [indexes[0], indexes[-1]] + indexes[1:-1]
    return rounds


class _Components:
    """Union-find over host indexes: which hosts are already linked by tested pairs."""

    def __init__(self, size):
        self.parent = list(range(size))

    def find(self, index):
        while self.parent[index] != index:
            self.parent[index] = self.parent[self.parent[index]]
            index = self.parent[index]
        return index

    def union(self, index_a, index_b):
        self.parent[self.find(index_a)] = self.find(index_b)


# Weights of the preferences, each worth more than all lower ones together over the two
# pairs a swap touches, so comparing sums keeps their priority order.
_WEIGHT_UNTESTED = 1000
_WEIGHT_CROSS_RACK = 100
_WEIGHT_CROSS_SWITCH = 10
_WEIGHT_JOINS = 1


def _quick_round(count, places, tested, components, idle):
    """One round of disjoint pairs (low, high) over every host index but idle.

    A greedy matching followed by pair swaps that raise the round's total weight: greedy
    alone can strand the last hosts of a rack together when a swap with another pair would
    let both pairs cross racks.
    """
    roots = [components.find(index) for index in range(count)]
    racks = [place[0] for place in places]
    switches = [place[1] for place in places]

    def weight(index_a, index_b):
        if index_a > index_b:
            index_a, index_b = index_b, index_a
        total = 0 if (index_a, index_b) in tested else _WEIGHT_UNTESTED
        rack_a, rack_b = racks[index_a], racks[index_b]
        # Unknown locality never counts as crossing: prefer pairs known to cross.
        if rack_a is not None and rack_b is not None and rack_a != rack_b:
            total += _WEIGHT_CROSS_RACK
        switch_a, switch_b = switches[index_a], switches[index_b]
        if switch_a is not None and switch_b is not None and switch_a != switch_b:
            total += _WEIGHT_CROSS_SWITCH
        if roots[index_a] != roots[index_b]:
            total += _WEIGHT_JOINS
        return total

    members = [index for index in range(count) if index != idle]
    # The weight of a perfect pair this round; finding one ends a host's search early, which
    # keeps large fleets (thousands of hosts) fast.
    best_possible = _WEIGHT_UNTESTED
    if len(set(racks[index] for index in members if racks[index] is not None)) > 1:
        best_possible += _WEIGHT_CROSS_RACK
    if len(set(switches[index] for index in members if switches[index] is not None)) > 1:
        best_possible += _WEIGHT_CROSS_SWITCH
    if len(set(roots[index] for index in members)) > 1:
        best_possible += _WEIGHT_JOINS

    # Greedy in input order: each host takes its best free partner, the first on a tie.
    matched = [False] * count
    pairs = []
    for position, index_a in enumerate(members):
        if matched[index_a]:
            continue
        partner, partner_weight = None, -1
        for index_b in members[position + 1:]:
            if matched[index_b]:
                continue
            candidate_weight = weight(index_a, index_b)
            if candidate_weight > partner_weight:
                partner, partner_weight = index_b, candidate_weight
                if candidate_weight == best_possible:
                    break
        if partner is not None:
            matched[index_a] = matched[partner] = True
            pairs.append((index_a, partner))

    # Swaps only help where a pair falls short of a perfect one.
    improved = True
    while improved:
        improved = False
        for first in range(len(pairs)):
            if weight(*pairs[first]) == best_possible:
                continue
            for second in range(len(pairs)):
                if second == first:
                    continue
                (index_a, index_b), (index_c, index_d) = pairs[first], pairs[second]
                current = weight(index_a, index_b) + weight(index_c, index_d)
                for new_first, new_second in (((index_a, index_c), (index_b, index_d)), ((index_a, index_d), (index_b, index_c))):
                    if weight(*new_first) + weight(*new_second) > current:
                        pairs[first], pairs[second] = tuple(sorted(new_first)), tuple(sorted(new_second))
                        improved = True
                        break
                if weight(*pairs[first]) == best_possible:
                    break
    return sorted(pairs)


def _quick_rounds(hosts, locality):
    count = len(hosts)
    places = [locality[host] for host in hosts]
    tested = set()
    components = _Components(count)
    idle_count = [0] * count
    # How many hosts share each known rack and switch.
    crowd = ({}, {})
    for place in places:
        for part in (0, 1):
            if place[part] is not None:
                crowd[part][place[part]] = crowd[part].get(place[part], 0) + 1
    rounds = []
    for round_number in range(math.ceil(math.log2(count))):
        idle = None
        if count % 2:
            # Idle a host that has idled least, from the most crowded rack and switch (which
            # leaves the others easier to pair across), then walk backwards through the list.
            idle = min(range(count), key=lambda index: (
                idle_count[index],
                -crowd[0].get(places[index][0], 0),
                -crowd[1].get(places[index][1], 0),
                (index + round_number + 1) % count,
            ))
            idle_count[idle] += 1
        pairs = _quick_round(count, places, tested, components, idle)
        for index_a, index_b in pairs:
            tested.add((index_a, index_b))
            components.union(index_a, index_b)
        rounds.append([_oriented(index_a, index_b, hosts) for index_a, index_b in pairs])
    return rounds


def pairing_rounds(hosts, mode="all", locality=None):
    """Return rounds of disjoint host pairs: a list of rounds, each a list of [first, second].

    hosts: list of unique host names; fewer than two hosts give no rounds.
    mode: "all" (every unordered pair exactly once, N-1 rounds for even N, N for odd N) or
    "quick" (at most ceil(log2 N) rounds, every host in every round but one idle when N is
    odd, preferring pairs not tested before, then crossing racks, then switches).
    locality: optional dict host -> (rack, switch) or {rack, switch}; used by "quick" only.

    Raises PairingError on a bad argument.
    """
    if mode not in MODES:
        raise PairingError("mode must be one of %s, got %r" % (", ".join(MODES), mode))
    hosts = _check_hosts(hosts)
    places = normalize_locality(locality, hosts)
    if len(hosts) < 2:
        return []
    if mode == "all":
        return _all_rounds(hosts)
    return _quick_rounds(hosts, places)
