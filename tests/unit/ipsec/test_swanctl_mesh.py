"""The mesh builder: selectors, initiator side, bypass policies and the errors that stop a bad inventory."""

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.core.plugins.filter.swanctl_mesh import FilterModule
from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.mesh import (
    MeshError,
    build_mesh,
    connection_name,
    node_selectors,
)


def node(name, address, **extra):
    data = {"name": name, "address": address, "id": name, "addresses": [address], "selectors": [],
            "protect_address": True}
    data.update(extra)
    return data


NODES = [node("gpu-a01", "10.0.0.1"), node("gpu-a02", "10.0.0.2"), node("gpu-a03", "10.0.0.3")]


def test_host_to_host_full_mesh():
    mesh = build_mesh("gpu-a02", NODES)
    assert mesh["local_ts"] == ["10.0.0.2/32"]
    assert [c["name"] for c in mesh["connections"]] == ["gf-gpu-a01", "gf-gpu-a03"]
    a01, a03 = mesh["connections"]
    assert (a01["remote_addrs"], a01["remote_ts"], a01["remote_id"]) == (["10.0.0.1"], ["10.0.0.1/32"], "gpu-a01")
    # The name that sorts first initiates: a02 starts towards a03 and waits for a01.
    assert (a01["start_action"], a01["initiator"]) == ("trap", False)
    assert (a03["start_action"], a03["initiator"]) == ("trap|start", True)
    assert mesh["shunts"] == []
    assert mesh["expected"] == [
        {"peer": "gpu-a01", "ike": "gf-gpu-a01", "child": "gf-gpu-a01", "remote_host": "10.0.0.1",
         "initiator": False, "absent": False},
        {"peer": "gpu-a03", "ike": "gf-gpu-a03", "child": "gf-gpu-a03", "remote_host": "10.0.0.3",
         "initiator": True, "absent": False},
    ]


def test_every_pair_has_exactly_one_initiator():
    meshes = {n["name"]: build_mesh(n["name"], NODES) for n in NODES}
    for local, mesh in meshes.items():
        for conn in mesh["connections"]:
            other = [c for c in meshes[conn["peer"]]["connections"] if c["peer"] == local][0]
            assert conn["initiator"] != other["initiator"]
            # Both ends agree on the selectors, mirrored.
            assert conn["local_ts"] == other["remote_ts"] and conn["remote_ts"] == other["local_ts"]


def test_vlan_subnets_select_each_hosts_address_in_them():
    nodes = [
        node("n1", "10.231.0.11", addresses=["10.231.0.11", "10.77.0.1", "192.168.5.1"], protect_address=False),
        node("n2", "10.231.0.12", addresses=["10.231.0.12", "10.77.0.2"], protect_address=False),
    ]
    mesh = build_mesh("n1", nodes, vlan_subnets=["10.77.0.0/24"])
    assert mesh["local_ts"] == ["10.77.0.1/32"]
    assert mesh["connections"][0]["remote_ts"] == ["10.77.0.2/32"]
    # IKE still runs between the hosts' own addresses.
    assert mesh["connections"][0]["remote_addrs"] == ["10.231.0.12"]


def test_selectors_merge_explicit_networks_and_ipv6():
    selectors = node_selectors(node("n1", "fd00::1", addresses=["fd00::1", "fd40::1"],
                                    selectors=["10.50.0.0/16"]), ["fd40::/64"])
    assert [str(s) for s in selectors] == ["10.50.0.0/16", "fd00::1/128", "fd40::1/128"]


def test_controller_inside_a_tunnel_gets_an_ssh_bypass():
    # The play runs from gpu-a01, itself a mesh member: SSH from it to gpu-a02 must not wait for a tunnel.
    mesh = build_mesh("gpu-a02", NODES, controller_addresses=["10.0.0.1"], ssh_port=2222)
    assert mesh["shunts"] == [{"name": "gf-bypass-ssh-10_0_0_1", "local_ts": ["10.0.0.2/32[tcp/2222]"],
                               "remote_ts": ["10.0.0.1/32"]}]


def test_controller_outside_every_tunnel_needs_no_bypass():
    mesh = build_mesh("gpu-a02", NODES, controller_addresses=["192.168.100.5"], bypass_networks=["172.16.0.0/12"])
    assert mesh["shunts"] == []


def test_bypass_network_overlapping_a_tunnel():
    mesh = build_mesh("gpu-a02", NODES, bypass_networks=["10.0.0.0/30"])
    assert mesh["shunts"] == [{"name": "gf-bypass-10_0_0_0_30", "local_ts": ["10.0.0.2/32"],
                               "remote_ts": ["10.0.0.0/30"]}]


def test_revoked_peer_keeps_only_a_trap_and_must_have_no_sa():
    mesh = build_mesh("gpu-a01", NODES, revoked=["gpu-a03"])
    a03 = [c for c in mesh["connections"] if c["peer"] == "gpu-a03"][0]
    assert a03["revoked"] is True
    assert a03["start_action"] == "trap"
    assert [e["absent"] for e in mesh["expected"]] == [False, True]


def test_gateways_are_always_initiated_by_the_host():
    gateways = [{"name": "dc-gw", "address": "10.0.9.1", "id": "gw.example.net", "networks": ["10.200.0.0/16"]}]
    mesh = build_mesh("gpu-a03", NODES, gateways=gateways)
    gw = [c for c in mesh["connections"] if c["peer"] == "dc-gw"][0]
    assert (gw["kind"], gw["start_action"], gw["remote_ts"], gw["remote_id"]) == (
        "gateway", "trap|start", ["10.200.0.0/16"], "gw.example.net")


def test_connection_names_are_safe_for_swanctl():
    assert connection_name("gf", "gpu-a01.dc1.example.net") == "gf-gpu-a01_dc1_example_net"


@pytest.mark.parametrize("nodes, kwargs, message", [
    ([node("a", "10.0.0.1"), node("b", "10.0.0.1")], {}, "share the IKE address 10.0.0.1"),
    ([node("a", "10.0.0.1"), node("b", "10.0.0.2", selectors=["10.0.0.0/24"])], {},
     "traffic selectors of a and b overlap"),
    ([node("a", "10.0.0.1"), node("b", "10.0.0.2", selectors=["10.9.0.0/24"]),
      node("c", "10.0.0.3", selectors=["10.9.0.128/25"])], {}, "traffic selectors of b and c overlap"),
    ([node("a", "10.0.0.1", protect_address=False), node("b", "10.0.0.2")], {}, "a has no traffic to protect"),
    ([node("a", "10.0.0.1"), node("b", "not-an-ip")], {}, "'not-an-ip' is not an IP address"),
    ([node("a", "10.0.0.1"), node("b", "10.0.0.2", selectors=["10.0.0.300/24"])], {},
     "is not an IP address or CIDR network"),
    ([node("a", "10.0.0.1"), node("a.x", "10.0.0.2"), node("a_x", "10.0.0.3")], {}, "same connection name"),
    ([node("b", "10.0.0.2")], {}, "not a member of the mesh"),
    ([node("a", "10.0.0.1"), node("b", "10.0.0.2", id="")], {}, "b has no IKE identity"),
    ([node("a", "10.0.0.1"), node("b", "10.0.0.2")],
     {"gateways": [{"name": "gw", "address": "10.0.0.9", "id": "gw", "networks": []}]}, "lists no networks"),
])
def test_bad_inventories_are_refused_with_the_hosts_named(nodes, kwargs, message):
    with pytest.raises(MeshError, match=message):
        build_mesh("a", nodes, **kwargs)


def test_filter_turns_errors_into_filter_errors():
    swanctl_mesh = FilterModule().filters()["swanctl_mesh"]
    assert swanctl_mesh("gpu-a01", NODES)["connections"][0]["name"] == "gf-gpu-a02"
    with pytest.raises(AnsibleFilterError, match="gpufabric.core.swanctl_mesh: .*share the IKE address"):
        swanctl_mesh("gpu-a01", NODES + [node("gpu-a04", "10.0.0.1")])
    with pytest.raises(AnsibleFilterError, match="gpufabric.core.swanctl_mesh: host gpu-a04 lacks address"):
        swanctl_mesh("gpu-a01", NODES + [{"name": "gpu-a04", "id": "gpu-a04"}])
