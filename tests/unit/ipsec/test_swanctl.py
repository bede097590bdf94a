"""swanctl parsers and checks, on outputs captured from strongSwan 5.9.8 in the lab (tests/unit/ipsec/fixtures)."""

from pathlib import Path

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.core.plugins.filter.swanctl_sas import FilterModule
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.swanctl import (
    encryption_names,
    evaluate_sas,
    parse_list_sas,
    summarize_initiate,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def capture(name):
    """A captured output without its provenance line."""
    text = (FIXTURES / name).read_bytes().decode("utf-8")
    assert text.startswith("# source:")
    return text.split("\n", 1)[1]


def mesh(local, peers, initiator=()):
    return [{"peer": p, "ike": "gf-" + p, "child": "gf-" + p, "initiator": p in initiator} for p in peers]


def test_mesh_node1_two_established_sas_with_traffic():
    sas = parse_list_sas(capture("list_sas_mesh_node1.txt"))
    assert [sa["name"] for sa in sas] == ["gf-cap3", "gf-cap2"]
    cap2 = sas[1]
    assert cap2["state"] == "ESTABLISHED"
    assert cap2["uniqueid"] == 1
    assert cap2["version"] == 2
    assert cap2["initiator"] is True
    assert cap2["initiator_spi"] == "2fba2f9956ec43b9"
    assert cap2["local"] == {"id": "cap1", "host": "10.232.77.11", "port": 4500}
    assert cap2["remote"] == {"id": "cap2", "host": "10.232.77.12", "port": 4500}
    assert cap2["algorithms"] == ["AES_GCM_16-256", "PRF_HMAC_SHA2_384", "ECP_384"]
    assert cap2["established_seconds"] == 14
    assert cap2["rekey_seconds"] == 13482
    child = cap2["children"][0]
    assert child["name"] == "gf-cap2"
    assert child["uniqueid"] == 3
    assert child["reqid"] == 1
    assert child["state"] == "INSTALLED"
    assert child["mode"] == "TUNNEL"
    assert child["udp_encap"] is True
    assert child["protocol"] == "ESP"
    assert child["encryption"] == "AES_GCM_16-256"
    assert (child["spi_in"], child["spi_out"]) == ("f03cf4b5", "90be63bc")
    assert (child["bytes_in"], child["packets_in"], child["bytes_out"], child["packets_out"]) == (252, 3, 252, 3)
    assert child["idle_seconds_in"] == 5
    assert (child["installed_seconds"], child["rekey_seconds"], child["expires_seconds"]) == (14, 3305, 3946)
    assert child["local_ts"] == ["10.77.0.1/32"]
    assert child["remote_ts"] == ["10.77.0.2/32"]
    # gf-cap3 carried two pings, no idle time printed for a child that saw no traffic
    assert sas[0]["children"][0]["packets_out"] == 2


def test_responder_side_marks_the_responder_spi():
    sas = parse_list_sas(capture("list_sas_mesh_node3.txt"))
    assert [sa["initiator"] for sa in sas] == [False, False]
    assert sas[0]["responder_spi"] == "67b2f7733c185db8"
    assert sas[1]["children"][0]["packets_in"] == 0
    assert sas[1]["children"][0]["idle_seconds_in"] is None


@pytest.mark.parametrize("name", ["list_sas_mesh_node1.txt", "list_sas_mesh_node2.txt", "list_sas_mesh_node3.txt"])
def test_full_mesh_captures_pass_the_check(name):
    local = {"list_sas_mesh_node1.txt": "cap1", "list_sas_mesh_node2.txt": "cap2",
             "list_sas_mesh_node3.txt": "cap3"}[name]
    peers = [p for p in ("cap1", "cap2", "cap3") if p != local]
    results = evaluate_sas(parse_list_sas(capture(name)), mesh(local, peers), ["AES_GCM_16-256"])
    assert [r["ok"] for r in results] == [True, True]
    assert {r["encryption"] for r in results} == {"AES_GCM_16-256"}


def test_refused_peer_is_named():
    sas = parse_list_sas(capture("list_sas_node1_peer_refused.txt"))
    results = evaluate_sas(sas, mesh("cap1", ["cap2", "cap3"]), ["AES_GCM_16-256"])
    assert results[0]["ok"] is True
    assert results[1]["ok"] is False
    assert results[1]["problem"] == "no IKE SA with peer cap3 (connection gf-cap3)"


def test_connecting_sa_has_no_algorithms_and_is_reported():
    sas = parse_list_sas(capture("list_sas_node1_connecting.txt"))
    ghost = sas[0]
    assert ghost["state"] == "CONNECTING"
    assert ghost["algorithms"] == []
    assert ghost["children"] == []
    assert ghost["local"]["id"] == "%any"
    assert ghost["tasks"]["active"][:2] == ["IKE_VENDOR", "IKE_INIT"]
    results = evaluate_sas(sas, [{"peer": "ghost", "ike": "gf-ghost", "child": "gf-ghost"}])
    assert results[0]["problem"] == "IKE SA with peer ghost is CONNECTING, not ESTABLISHED"


def test_rekeyed_child_keeps_the_installed_one_and_shows_pfs():
    sas = parse_list_sas(capture("list_sas_node1_rekeyed.txt"))
    children = sas[0]["children"]
    assert [c["state"] for c in children] == ["DELETED", "INSTALLED"]
    assert children[1]["algorithms"] == ["AES_GCM_16-256", "ECP_384"]
    results = evaluate_sas(sas, mesh("cap1", ["cap2"]), ["AES_GCM_16-256"])
    assert results[0]["ok"] is True
    assert results[0]["packets_out"] == 2


def test_wrong_encryption_and_wrong_remote_host_are_reported():
    sas = parse_list_sas(capture("list_sas_mesh_node1.txt"))
    results = evaluate_sas(sas, mesh("cap1", ["cap2"]), ["CHACHA20_POLY1305-256"])
    assert results[0]["problem"] == "CHILD SA gf-cap2 with peer cap2 uses AES_GCM_16-256, expected CHACHA20_POLY1305-256"
    wrong_host = [{"peer": "cap2", "ike": "gf-cap2", "child": "gf-cap2", "remote_host": "10.232.77.99"}]
    assert "not with peer cap2 at 10.232.77.99" in evaluate_sas(sas, wrong_host)[0]["problem"]


def test_revoked_peer_must_have_no_sa():
    sas = parse_list_sas(capture("list_sas_mesh_node1.txt"))
    absent = [{"peer": "cap2", "ike": "gf-cap2", "child": "gf-cap2", "absent": True},
              {"peer": "cap9", "ike": "gf-cap9", "child": "gf-cap9", "absent": True}]
    results = evaluate_sas(sas, absent)
    assert results[0]["problem"] == "peer cap2 must be refused (revoked) but has an established IKE SA"
    assert results[1]["ok"] is True


def test_empty_output_means_no_sas():
    assert parse_list_sas("") == []
    assert parse_list_sas("\n") == []


def test_raw_format_is_refused_with_a_clear_message():
    with pytest.raises(ParseError, match=r"line 1 is not an IKE SA header"):
        parse_list_sas(capture("list_sas_raw_node1.txt"))


@pytest.mark.parametrize("text, problem", [
    ("  local  'a' @ 1.2.3.4[500]\n", "comes before any IKE SA header"),
    ("gf-x: #1, ESTABLISHED, IKEv2, 00_i* 11_r\n  nonsense here\n", "is not understood"),
    ("gf-x: #1, ESTABLISHED, IKEv2, 00_i* 11_r\n", "has no local/remote endpoint lines"),
])
def test_damaged_output_names_the_problem(text, problem):
    with pytest.raises(ParseError, match=problem):
        parse_list_sas(text)


def test_crlf_line_endings_are_accepted():
    text = capture("list_sas_mesh_node2.txt").replace("\n", "\r\n")
    assert [sa["name"] for sa in parse_list_sas(text)] == ["gf-cap1", "gf-cap3"]


def test_initiate_refused_by_other_ca_names_the_issuer():
    reasons = summarize_initiate(capture("initiate_other_ca.txt"))
    assert 'no issuer certificate found for "CN=cap3"' in reasons
    assert 'issuer is "CN=rogue CA"' in reasons
    assert reasons[-1] == "initiate failed: establishing CHILD_SA 'gf-cap3' failed"


def test_initiate_refused_by_crl_says_revoked():
    reasons = summarize_initiate(capture("initiate_revoked.txt"))
    assert reasons[0] == "certificate was revoked on Nov 30 10:30:01 UTC 2026, reason: unspecified"
    assert "no trusted ECDSA public key found for 'cap3'" in reasons


def test_crl_without_authority_key_id_is_not_applied_by_strongswan():
    """Why the role has its own CRL module: this CRL from community.crypto.x509_crl revoked cap3, yet cap3 got in."""
    log = capture("initiate_crl_without_aki_ignored.txt")
    assert "certificate status is not available" in log
    assert "CHILD_SA gf-cap3{5} established" in log
    assert summarize_initiate(log) == []


def test_initiate_timeout_and_duplicate():
    assert summarize_initiate(capture("initiate_timeout.txt")) == [
        "initiate failed: CHILD_SA 'gf-ghost' not established after 3000ms"]
    reasons = summarize_initiate(capture("initiate_duplicate.txt"))
    assert reasons[0].startswith("not establishing CHILD_SA gf-cap2{7} due to existing duplicate {3}")


def test_algorithm_names():
    algs = capture("list_algs.txt")
    assert "ECP_384[openssl]" in algs and "CURVE_25519[openssl]" in algs
    assert "ML_KEM" not in algs  # 5.9.8 has no ML-KEM: the role refuses ipsec_pq_kex here
    assert encryption_names(["aes256gcm16-ecp384", "aes256gcm16", "aes128-sha256", "3des-md5"]) == [
        "AES_GCM_16-256", "AES_CBC-128"]


def test_filter_wraps_parse_errors():
    swanctl_sas = FilterModule().filters()["swanctl_sas"]
    assert swanctl_sas(capture("list_sas_mesh_node3.txt"))[0]["name"] == "gf-cap1"
    with pytest.raises(AnsibleFilterError, match="gpufabric.core.swanctl_sas: cannot parse `swanctl --list-sas`"):
        swanctl_sas("not swanctl output at all")
