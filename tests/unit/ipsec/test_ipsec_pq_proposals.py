# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The proposals ipsec_config writes for each ipsec_pq_kex, decided by a real `swanctl --list-algs`.

Debian 13's strongSwan 6.0.1 lists no ML-KEM (lab-debian13-swanctl-list-algs.txt), Debian 12's 5.9.8 neither, and
Debian testing's (forky) 6.1.0 lists ML_KEM_512/768/1024 from its openssl plugin (lab-forky-swanctl-list-algs.txt,
captured in the ipsec Molecule scenario).
"""

from __future__ import annotations

import pytest

from fixture_data import read_fixture

from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.config import (
    effective_esp_proposals,
    effective_ike_proposals,
)

IKE = ["aes256gcm16-prfsha384-ecp384", "aes256gcm16-prfsha384-x25519"]
ESP = ["aes256gcm16-ecp384"]
FORKY = "strongswan/lab-forky-swanctl-list-algs.txt"
DEBIAN13 = "strongswan/lab-debian13-swanctl-list-algs.txt"
DEBIAN12 = "strongswan/lab-debian12-swanctl-list-algs.txt"


def test_forky_lists_every_ml_kem_from_its_openssl_plugin():
    algs = read_fixture(FORKY)
    for name in ("ML_KEM_512[openssl]", "ML_KEM_768[openssl]", "ML_KEM_1024[openssl]"):
        assert "\n  %s\n" % name in algs


def test_auto_on_forky_offers_hybrid_first_and_classical_after():
    algs = read_fixture(FORKY)
    assert effective_ike_proposals(IKE, "auto", algs) == (
        ["aes256gcm16-prfsha384-ecp384-ke1_mlkem768", "aes256gcm16-prfsha384-x25519-ke1_mlkem768"] + IKE, None)
    # CHILD SA rekeys: the PFS group, ML-KEM-768 on top; the classical proposal for peers without ML-KEM.
    assert effective_esp_proposals(ESP, "auto", algs) == ["aes256gcm16-ecp384-ke1_mlkem768", "aes256gcm16-ecp384"]


@pytest.mark.parametrize("capture", [DEBIAN13, DEBIAN12])
def test_auto_stays_classical_where_strongswan_lists_no_ml_kem(capture):
    algs = read_fixture(capture)
    assert effective_ike_proposals(IKE, "auto", algs) == (IKE, None)
    assert effective_esp_proposals(ESP, "auto", algs) == ESP


def test_required_on_forky_is_ml_kem_on_every_proposal():
    algs = read_fixture(FORKY)
    assert effective_ike_proposals(IKE, "mlkem1024", algs) == (
        ["aes256gcm16-prfsha384-ecp384-ke1_mlkem1024", "aes256gcm16-prfsha384-x25519-ke1_mlkem1024"], None)
    assert effective_esp_proposals(ESP, "mlkem768", algs) == ["aes256gcm16-ecp384-ke1_mlkem768"]


def test_required_on_debian13_is_refused_naming_the_variable_and_the_algorithm():
    algs = read_fixture(DEBIAN13)
    proposals, problem = effective_ike_proposals(IKE, "mlkem768", algs)
    assert proposals == IKE
    assert problem.startswith("ipsec_pq_kex is mlkem768 but swanctl --list-algs lists no ML_KEM_768")
    # The ESP proposals stay as they were: the IKE problem stops the module before anything is written.
    assert effective_esp_proposals(ESP, "mlkem768", algs) == ESP


def test_esp_proposal_without_pfs_gets_no_ml_kem_alone():
    """ML-KEM is only ever added on top of a classical key exchange, never as the only one."""
    algs = read_fixture(FORKY)
    assert effective_esp_proposals(["aes256gcm16"], "auto", algs) == ["aes256gcm16"]
    assert effective_esp_proposals(["aes256gcm16", "aes256gcm16-x25519"], "mlkem768", algs) == [
        "aes256gcm16-x25519-ke1_mlkem768", "aes256gcm16"]
    assert effective_esp_proposals(ESP, "none", algs) == ESP
