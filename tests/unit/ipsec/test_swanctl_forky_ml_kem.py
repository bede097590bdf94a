# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""swanctl_sas and swanctl_verify's evaluation on SAs negotiated for real with ML-KEM-768.

Captured in the ipsec Molecule scenario (tests/fixtures/strongswan/lab-forky-*, lab-debian13-list-sas-node2-*,
lab-debian12-list-sas-node1-*): a mesh of a Debian 12 (5.9.8), a Debian 13 (6.0.1) and two Debian testing (forky,
6.1.0) nodes under ipsec_pq_kex auto. The forky pair is ECP_384 + KE1_ML_KEM_768; every other pair is ECP_384 alone.
Unedited captures: nothing here is derived.
"""

from __future__ import annotations

import pytest

from fixture_data import read_fixture

from ansible_collections.gpufabric.core.plugins.filter.swanctl_sas import FilterModule
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.swanctl import evaluate_sas, parse_list_sas

NODES = ["ipsec-node1", "ipsec-node2", "ipsec-node3", "ipsec-node4"]


def capture(name):
    return read_fixture("strongswan/" + name)


def expected_for(node, **extra):
    return [dict({"peer": peer, "ike": "gf-" + peer, "child": "gf-" + peer}, **extra) for peer in NODES if peer != node]


def by_name(text):
    return {sa["name"]: sa for sa in FilterModule().filters()["swanctl_sas"](text)}


def test_forky_pair_is_ecp_384_plus_ml_kem_768_and_its_other_pairs_classical():
    sas = by_name(capture("lab-forky-list-sas-node3-hybrid-and-classical.txt"))
    assert sorted(sas) == ["gf-ipsec-node1", "gf-ipsec-node2", "gf-ipsec-node4"]
    hybrid = sas["gf-ipsec-node4"]
    assert hybrid["state"] == "ESTABLISHED" and hybrid["initiator"] is True
    assert hybrid["algorithms"] == ["AES_GCM_16-256", "PRF_HMAC_SHA2_384", "ECP_384", "KE1_ML_KEM_768"]
    assert hybrid["key_exchanges"] == ["ECP_384", "ML_KEM_768"]
    assert hybrid["post_quantum"] is True
    # The CHILD SA made with IKE_AUTH ran no exchange of its own; its keys come from the hybrid IKE SA.
    [child] = hybrid["children"]
    assert child["state"] == "INSTALLED" and child["key_exchanges"] == [] and child["post_quantum"] is True
    assert (child["packets_in"], child["packets_out"]) == (6, 6)
    for name in ("gf-ipsec-node1", "gf-ipsec-node2"):
        # node3 offered ML-KEM first; the 5.9 and 6.0.1 peers chose the classical proposal.
        assert sas[name]["key_exchanges"] == ["ECP_384"] and sas[name]["post_quantum"] is False


def test_rekeyed_child_sa_runs_ecp_384_and_ml_kem_768_of_its_own():
    [sa] = parse_list_sas(capture("lab-forky-list-sas-node3-child-rekeyed.txt"))
    old, new = sa["children"]
    assert (old["state"], new["state"]) == ("DELETED", "INSTALLED")
    assert new["algorithms"] == ["AES_GCM_16-256", "ECP_384", "KE1_ML_KEM_768"]
    assert new["encryption"] == "AES_GCM_16-256"
    assert new["key_exchanges"] == ["ECP_384", "ML_KEM_768"] and new["post_quantum"] is True
    assert old["key_exchanges"] == []
    results = evaluate_sas([sa], expected_for("ipsec-node3")[2:], ["AES_GCM_16-256"], require_post_quantum=True)
    assert results[0]["ok"] is True
    assert results[0]["child_key_exchanges"] == ["ECP_384", "ML_KEM_768"]


@pytest.mark.parametrize("name, node", [("lab-debian12-list-sas-node1-mixed-mesh.txt", "ipsec-node1"),
                                        ("lab-debian13-list-sas-node2-mixed-mesh.txt", "ipsec-node2")])
def test_hosts_without_ml_kem_see_every_sa_classical(name, node):
    sas = parse_list_sas(capture(name))
    assert len(sas) == 3
    assert [sa["key_exchanges"] for sa in sas] == [["ECP_384"]] * 3
    results = evaluate_sas(sas, expected_for(node), ["AES_GCM_16-256"])
    # auto (preferred): classical SAs pass and are reported as such.
    assert [(r["ok"], r["post_quantum"]) for r in results] == [(True, False)] * 3


def test_required_mesh_fails_each_classical_sa_and_passes_the_ml_kem_one():
    """What swanctl_verify does under ipsec_pq_kex mlkem768 (require_post_quantum): node3's real SAs."""
    sas = parse_list_sas(capture("lab-forky-list-sas-node3-hybrid-and-classical.txt"))
    preferred = evaluate_sas(sas, expected_for("ipsec-node3"), ["AES_GCM_16-256"])
    assert [r["ok"] for r in preferred] == [True, True, True]
    required = evaluate_sas(sas, expected_for("ipsec-node3"), ["AES_GCM_16-256"], require_post_quantum=True)
    assert [(r["peer"], r["ok"]) for r in required] == [
        ("ipsec-node1", False), ("ipsec-node2", False), ("ipsec-node4", True)]
    assert required[0]["problem"] == (
        "SAs with peer ipsec-node1 are classical (IKE SA gf-ipsec-node1 key exchange ECP_384), a post-quantum key "
        "exchange (ML-KEM) is required")
    assert required[2]["key_exchanges"] == ["ECP_384", "ML_KEM_768"]
    # A peer known to lack ML-KEM can be exempted, the others stay required.
    exempt = [dict(want, post_quantum=False) if want["peer"] == "ipsec-node1" else want
              for want in expected_for("ipsec-node3")]
    assert [r["ok"] for r in evaluate_sas(sas, exempt, require_post_quantum=True)] == [True, False, True]
