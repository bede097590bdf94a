# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""swanctl parsers on strongSwan 6.0.1 (Debian 13) and 5.9.8 (Debian 12) outputs captured by scripts/pq-ike-capture.sh.

The captures (tests/fixtures/strongswan) show that Debian 13's strongSwan 6.0.1 offers no ML-KEM: its --list-algs
lists no ML_KEM_* key exchange, and an initiation with ke1_mlkem768 selects the proposal and then stops with
"negotiated key exchange method ML_KEM_768 not supported". The RFC 9370 output format (KE1_...) comes from a real
SA negotiated with a classical additional key exchange (ke1_curve25519).
"""

from __future__ import annotations

import pytest

from fixture_data import read_fixture

from ansible_collections.gpufabric.core.plugins.module_utils.parse_common import ParseError
from ansible_collections.gpufabric.core.plugins.module_utils.swanctl import (
    evaluate_sas,
    is_post_quantum,
    key_exchanges,
    parse_list_sas,
    parse_version,
    summarize_initiate,
)


def capture(name):
    return read_fixture("strongswan/" + name)


def ke_section(list_algs):
    """The key exchange section of `swanctl --list-algs`: `dh:` on 5.9, `ke:` on 6.0."""
    heading = "\nke:\n" if "\nke:\n" in list_algs else "\ndh:\n"
    lines = list_algs.split(heading, 1)[1].split("\n")
    section = []
    for line in lines:
        if not line.startswith("  "):
            break
        section.append(line.strip())
    return section


def test_debian13_strongswan_is_6_0_1():
    assert parse_version(capture("lab-debian13-swanctl-version.txt")) == "6.0.1"


@pytest.mark.parametrize("name", ["lab-debian13-swanctl-list-algs.txt", "lab-debian12-swanctl-list-algs.txt"])
def test_neither_release_lists_ml_kem(name):
    algs = capture(name)
    kes = ke_section(algs)
    assert "ECP_384[openssl]" in kes and "CURVE_25519[openssl]" in kes
    assert not [ke for ke in kes if "ML_KEM" in ke]
    assert "ML_KEM" not in algs


def test_mlkem768_is_selected_then_not_supported_on_debian13():
    log = capture("lab-debian13-initiate-mlkem768-both-debian13.txt")
    # The proposal parser knows the name (the KE1_ notation of RFC 9370 that --list-sas uses too) ...
    assert "selected proposal: IKE:AES_GCM_16_256/PRF_HMAC_SHA2_384/ECP_384/KE1_ML_KEM_768" in log
    # ... but no plugin implements it, and the IKE SA is abandoned: nothing is left to list.
    assert summarize_initiate(log) == ["negotiated key exchange method ML_KEM_768 not supported"]
    assert parse_list_sas(capture("lab-debian13-list-sas-a-after-mlkem768.txt")) == []


@pytest.mark.parametrize("algorithms, expected", [
    (["AES_GCM_16-256", "PRF_HMAC_SHA2_384", "ECP_384"], ["ECP_384"]),
    (["AES_GCM_16-256", "PRF_HMAC_SHA2_384", "ECP_384", "KE1_ML_KEM_768"], ["ECP_384", "ML_KEM_768"]),
    (["AES_CBC-256", "HMAC_SHA2_256_128", "PRF_HMAC_SHA2_256", "MODP_3072", "KE1_ML_KEM_512", "KE2_ML_KEM_1024"],
     ["MODP_3072", "ML_KEM_512", "ML_KEM_1024"]),
    (["AES_GCM_16-256"], []),
    (["AES_GCM_16-256", "ECP_256_BP", "ESN"], ["ECP_256_BP"]),
    (["AES_GCM_16-256", "PRF_HMAC_SHA2_256", "ML_KEM_768"], ["ML_KEM_768"]),
])
def test_key_exchanges_of_an_algorithm_list(algorithms, expected):
    assert key_exchanges(algorithms) == expected
    assert is_post_quantum(expected) is any(name.startswith("ML_KEM") for name in expected)


@pytest.mark.parametrize("name", ["list_sas_mesh_node1.txt", "list_sas_mesh_node2.txt", "list_sas_mesh_node3.txt",
                                  "list_sas_node1_rekeyed.txt"])
def test_strongswan_5_9_sas_are_classical(name):
    from test_swanctl import capture as capture_5_9  # the 5.9.8 captures of tests/unit/ipsec/fixtures

    sas = parse_list_sas(capture_5_9(name))
    assert {tuple(sa["key_exchanges"]) for sa in sas} == {("ECP_384",)}
    assert not any(sa["post_quantum"] for sa in sas)
    assert not any(child["post_quantum"] for sa in sas for child in sa["children"])
    results = evaluate_sas(sas, [{"peer": sa["name"], "ike": sa["name"], "child": sa["name"]} for sa in sas],
                           require_post_quantum=True)
    assert [r["post_quantum"] for r in results] == [False] * len(sas)
    assert all("are classical (IKE SA %s key exchange ECP_384)" % r["ike"] in r["problem"] for r in results)
