"""Each node's rails in the map are the LLDP neighbours that node really sees now."""

import json

testinfra_hosts = ["podman://fabric-node1", "podman://fabric-node2", "podman://fabric-node3"]


def _live_neighbours(host):
    """{local interface: (chassis name, port ID type, port description)} from the node's own lldpd."""
    data = json.loads(host.check_output("lldpctl -f json0"))
    found = {}
    for block in data["lldp"]:
        for interface in block.get("interface", []):
            chassis = interface["chassis"][0]
            port = interface["port"][0]
            found[interface["name"]] = (chassis["name"][0]["value"], port["id"][0]["type"],
                                        port["descr"][0]["value"])
    return found


def test_map_rails_match_live_lldp(host, fabric_map):
    # lldpctl answering at all proves lldpd runs; one call per node keeps the podman connection's cost low.
    name = host.backend.get_hostname()
    live = _live_neighbours(host)
    rails = fabric_map["hosts"][name]["rails"]
    assert [rail["netdev"] for rail in rails] == ["eth1", "eth2"]
    for rail in rails:
        # The leaves' lldpd sends a MAC as port ID: the map names the port by its description, as the leaf does.
        assert (rail["switch"], "mac", rail["switch_port"]) == live[rail["netdev"]]
        assert rail["up"] is True and rail["link_layer"] == "Ethernet"
