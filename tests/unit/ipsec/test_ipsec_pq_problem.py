"""The ipsec preflight's ML-KEM decision (gpufabric.core.ipsec_pq_problem), on real swanctl --list-algs captures.

The ML-KEM names come out of each capture as the role's host read takes them (grep -o 'ML_KEM_[0-9]*' | sort -u):
Debian testing's 6.1.0 lists ML_KEM_512/768/1024, Debian 13's 6.0.1 and Debian 12's 5.9.8 list none. The captures
are unedited; the versions are those their source lines name.
"""

from __future__ import annotations

import re

import pytest

from fixture_data import read_fixture

from ansible_collections.gpufabric.core.plugins.filter.ipsec_pq_problem import FilterModule
from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.inputs import required_kem

ipsec_pq_problem = FilterModule().filters()["ipsec_pq_problem"]


def listed_kems(capture):
    return sorted(set(re.findall(r"ML_KEM_[0-9]*", read_fixture("strongswan/" + capture))))


FORKY = listed_kems("lab-forky-swanctl-list-algs.txt")
TRIXIE = listed_kems("lab-debian13-swanctl-list-algs.txt")
BOOKWORM = listed_kems("lab-debian12-swanctl-list-algs.txt")


def test_the_captures_list_what_their_releases_offer():
    assert FORKY == ["ML_KEM_1024", "ML_KEM_512", "ML_KEM_768"]
    assert TRIXIE == [] and BOOKWORM == []


@pytest.mark.parametrize("value, kem", [("mlkem512", "ML_KEM_512"), ("mlkem768", "ML_KEM_768"),
                                        ("mlkem1024", "ML_KEM_1024"), ("auto", ""), ("none", ""), ("", "")])
def test_only_a_named_ml_kem_is_required(value, kem):
    assert required_kem(value) == kem


@pytest.mark.parametrize("value", ["mlkem512", "mlkem768", "mlkem1024"])
def test_a_running_6_1_that_lists_the_ml_kem_can_do_it(value):
    assert ipsec_pq_problem(value, host="node3", version="6.1.0", listed_kems=FORKY) == ""


@pytest.mark.parametrize("value", ["auto", "none"])
def test_nothing_required_refuses_nothing_even_where_none_is_listed(value):
    assert ipsec_pq_problem(value, host="node1", version="5.9.8", listed_kems=BOOKWORM) == ""
    assert ipsec_pq_problem(value, host="node1", version="5.9.8") == ""


@pytest.mark.parametrize("version, listed", [("6.0.1", TRIXIE), ("5.9.8", BOOKWORM)], ids=["trixie", "bookworm"])
def test_a_running_charon_that_lists_none_is_refused_by_its_own_list_naming_the_variable(version, listed):
    problem = ipsec_pq_problem("mlkem768", host="node2", version=version, listed_kems=listed)
    assert problem.startswith("ipsec_pq_kex is mlkem768 (ML-KEM post-quantum key exchange, required) but the "
                              "strongSwan %s running on node2 lists no ML_KEM_768 in swanctl --list-algs (it lists "
                              "no ML-KEM;" % version), problem
    assert problem.endswith("Set ipsec_pq_kex to auto (ML-KEM where both peers offer it) or none, or upgrade "
                            "strongSwan.")


def test_a_running_charon_is_judged_by_its_list_not_by_its_version():
    """6.1.0 without the ML-KEM named (a build without the openssl plugin's ML-KEM) is refused, listing what it has."""
    problem = ipsec_pq_problem("mlkem1024", host="node4", version="6.1.0", listed_kems=["ML_KEM_768"])
    assert "lists no ML_KEM_1024 in swanctl --list-algs (it lists ML_KEM_768;" in problem


@pytest.mark.parametrize("version, refused", [("5.9.8", True), ("6.0.1", True), ("6.1", False), ("6.1.0", False),
                                              ("6.2.1", False), ("10.0", False)])
def test_without_a_charon_to_ask_the_version_apt_would_install_decides(version, refused):
    problem = ipsec_pq_problem("mlkem768", host="node5", version=version)
    assert bool(problem) is refused
    if refused:
        assert problem == (
            "ipsec_pq_kex is mlkem768 (ML-KEM post-quantum key exchange, required), which needs strongSwan 6.1 or "
            "later as Debian packages it; node5 has (or would install) %s and no running charon to ask. Set "
            "ipsec_pq_kex to auto (ML-KEM where both peers offer it) or none, or upgrade strongSwan (Debian "
            "testing, forky)." % version)


def test_an_unknown_version_is_left_to_the_check_that_names_the_missing_package():
    assert ipsec_pq_problem("mlkem768", host="node6", version="") == ""
    assert ipsec_pq_problem("mlkem768", host="node6", version="", listed_kems=[]) == ""
