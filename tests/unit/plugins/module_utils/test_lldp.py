# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parse_lldp on the real lldpctl captures: json0 from tests/fixtures/lldp, json from lldpd 1.0.16.

tests/fixtures/lldp holds `-f json0` outputs, and one `-f json` of lldpd 0.9.6. The lldpd 1.0.16 `-f json` outputs below were captured verbatim on
the lab machine with Debian 12's lldpd 1.0.16 (lldpd and lldpctl from the Debian package, run in network
namespaces joined by veth pairs): `-f json` collapses one neighbour into an object and a lone
management address into a string, the shapes a parser must not miss.
"""

from __future__ import annotations

import json

import pytest
from fixture_data import fixture_names, read_fixture
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufabric.core.plugins.filter.parse_lldp import FilterModule
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.lldp import (
    neighbors_by_interface,
    parse_lldp,
    parse_lldp_neighbors,
)
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.topology import build_topology
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError

FOLDER = "lldp"

# lldpctl -u SOCK -f json in the namespace of interface a_l1, one neighbour (hostname gpu-node-b).
LLDPD_1_0_16_JSON_ONE_NEIGHBOUR = """\
{
  "lldp": {
    "interface": {
      "a_l1": {
        "via": "LLDP",
        "rid": "1",
        "age": "0 day, 00:00:15",
        "chassis": {
          "gpu-node-b": {
            "id": {
              "type": "mac",
              "value": "32:8a:d4:4d:51:cd"
            },
            "descr": "node-b test host",
            "mgmt-ip": [
              "192.0.2.2",
              "fe80::308a:d4ff:fe4d:51cd"
            ],
            "mgmt-iface": [
              "8",
              "8"
            ],
            "capability": [
              {
                "type": "Bridge",
                "enabled": false
              },
              {
                "type": "Router",
                "enabled": true
              },
              {
                "type": "Wlan",
                "enabled": false
              },
              {
                "type": "Station",
                "enabled": false
              }
            ]
          }
        },
        "port": {
          "id": {
            "type": "mac",
            "value": "32:8a:d4:4d:51:cd"
          },
          "descr": "a_l2",
          "ttl": "120",
          "auto-negotiation": {
            "supported": false,
            "enabled": false,
            "current": "10GbaseT - Four-pair Category 6A or better, full duplex mode only"
          }
        },
        "lldp-med": {
          "device-type": "Network Connectivity Device",
          "capability": [
            {
              "type": "Capabilities",
              "available": true
            },
            {
              "type": "Policy",
              "available": true
            },
            {
              "type": "Location",
              "available": true
            },
            {
              "type": "MDI/PSE",
              "available": true
            },
            {
              "type": "MDI/PD",
              "available": true
            },
            {
              "type": "Inventory",
              "available": true
            }
          ],
          "inventory": {
            "software": "6.18.44-fc-v857"
          }
        }
      }
    }
  }
}

"""

# lldpctl -f json on the namespace with two interfaces a_l2 and a_l2b, one neighbour each.
LLDPD_1_0_16_JSON_TWO_NEIGHBOURS = """\
{
  "lldp": {
    "interface": [
      {
        "a_l2": {
          "via": "LLDP",
          "rid": "1",
          "age": "0 day, 00:00:13",
          "chassis": {
            "leaf-r1-a": {
              "id": {
                "type": "mac",
                "value": "16:e5:80:d5:f5:5d"
              },
              "descr": "node-a test host",
              "mgmt-ip": [
                "192.0.2.1",
                "fe80::14e5:80ff:fed5:f55d"
              ],
              "mgmt-iface": [
                "9",
                "9"
              ],
              "capability": [
                {
                  "type": "Bridge",
                  "enabled": false
                },
                {
                  "type": "Router",
                  "enabled": true
                },
                {
                  "type": "Wlan",
                  "enabled": false
                },
                {
                  "type": "Station",
                  "enabled": false
                }
              ]
            }
          },
          "port": {
            "id": {
              "type": "ifname",
              "value": "a_l1"
            },
            "descr": "a_l1",
            "ttl": "120",
            "auto-negotiation": {
              "supported": false,
              "enabled": false,
              "current": "10GbaseT - Four-pair Category 6A or better, full duplex mode only"
            }
          },
          "lldp-med": {
            "device-type": "Network Connectivity Device",
            "capability": [
              {
                "type": "Capabilities",
                "available": true
              },
              {
                "type": "Policy",
                "available": true
              },
              {
                "type": "Location",
                "available": true
              },
              {
                "type": "MDI/PSE",
                "available": true
              },
              {
                "type": "MDI/PD",
                "available": true
              },
              {
                "type": "Inventory",
                "available": true
              }
            ],
            "inventory": {
              "software": "6.18.44-fc-v857"
            }
          }
        }
      },
      {
        "a_l2b": {
          "via": "LLDP",
          "rid": "2",
          "age": "0 day, 00:00:03",
          "chassis": {
            "spine-x": {
              "id": {
                "type": "mac",
                "value": "12:e1:cb:15:8c:49"
              },
              "descr": "node-c",
              "mgmt-ip": "fe80::10e1:cbff:fe15:8c49",
              "mgmt-iface": "11",
              "capability": [
                {
                  "type": "Bridge",
                  "enabled": false
                },
                {
                  "type": "Router",
                  "enabled": true
                },
                {
                  "type": "Wlan",
                  "enabled": false
                },
                {
                  "type": "Station",
                  "enabled": false
                }
              ]
            }
          },
          "port": {
            "id": {
              "type": "mac",
              "value": "12:e1:cb:15:8c:49"
            },
            "descr": "a_l3",
            "ttl": "120",
            "auto-negotiation": {
              "supported": false,
              "enabled": false,
              "current": "10GbaseT - Four-pair Category 6A or better, full duplex mode only"
            }
          },
          "lldp-med": {
            "device-type": "Network Connectivity Device",
            "capability": [
              {
                "type": "Capabilities",
                "available": true
              },
              {
                "type": "Policy",
                "available": true
              },
              {
                "type": "Location",
                "available": true
              },
              {
                "type": "MDI/PSE",
                "available": true
              },
              {
                "type": "MDI/PD",
                "available": true
              },
              {
                "type": "Inventory",
                "available": true
              }
            ],
            "inventory": {
              "software": "6.18.44-fc-v857"
            }
          }
        }
      }
    ]
  }
}

"""

# lldpctl -f json and -f json0 of an lldpd that has no neighbour yet.
LLDPD_1_0_16_JSON_NO_NEIGHBOUR = '{\n  "lldp": {\n    \n  }\n}\n'
LLDPD_1_0_16_JSON0_NO_NEIGHBOUR = '{\n  "lldp": [\n    {\n      \n    }\n  ]\n}\n'

# Values read from the json0 captures: (local interface, chassis name, chassis id, port id, port descr, mgmt ip).
# node1 of this project's lab right after its two cables were crossed (the fixtures' header says how).
RECABLED = [
    ("eth1", "leaf-a", "16:60:11:ea:ba:11", "16:60:11:ea:ba:11", "swp1", "fe80::f0ef:76ff:fe88:fc8b"),
    ("eth1", "leaf-b", "be:5e:84:07:d4:85", "56:1b:66:2c:5b:be", "swp1", "fe80::541b:66ff:fe2c:5bbe"),
    ("eth2", "leaf-b", "be:5e:84:07:d4:85", "be:5e:84:07:d4:85", "swp1", "fe80::541b:66ff:fe2c:5bbe"),
    ("eth2", "leaf-a", "16:60:11:ea:ba:11", "f2:ef:76:88:fc:8b", "swp1", "fe80::f0ef:76ff:fe88:fc8b"),
]

EXPECTED = {
    "unifabric-json0-gpu-rails-sonic-leaves.txt": [
        ("ens1np0", "StorageSW", "70:06:92:6e:32:64", "Ethernet120", "Ethernet120", "10.193.77.211"),
        ("ens841np0", "LEAF03", "70:06:92:6e:32:1c", "Ethernet184", "Ethernet184", "10.193.77.203"),
        ("ens842np0", "LEAF04", "70:06:92:6e:34:5c", "Ethernet184", "Ethernet184", "10.193.77.204"),
        ("ens110np0", "LEAF02", "70:06:92:6e:34:80", "Ethernet184", "Ethernet184", "10.193.77.202"),
        ("ens108np0", "LEAF01", "70:06:92:6e:33:18", "Ethernet184", "Ethernet184", "10.193.77.201"),
    ],
    "unifabric-json0-server-h3c-and-b2b.txt": [
        ("enp129s0f0", "DaoCloud_ShangPu_H3C_D01_AccessSwitch", "58:c7:ac:5f:2d:2c", "GigabitEthernet1/0/17",
         "GigabitEthernet1/0/17 Interface", None),
        ("enp5s0f0np0", "10-20-1-50", "ac:1f:6b:25:86:64", "e8:eb:d3:93:ae:10", "enp5s0f0np0", "10.20.1.50"),
        ("enp11s0f0np0", "10-20-1-50", "ac:1f:6b:25:86:64", "b8:3f:d2:9f:09:42", "enp11s0f0np0", "10.20.1.50"),
    ],
    # This project's lab (molecule/scheduler): lldpd 1.0.16 between containers, veth pairs as cables.
    "lab-json0-leaf-a.txt": [
        ('swp1', 'scheduler-node1', '86:80:9a:15:b8:b4', 'aa:fb:6a:4e:34:63', 'eth1', '10.88.0.18'),
        ('swp2', 'scheduler-node2', 'ca:4a:0f:9e:66:46', '5e:bf:6d:b0:59:b6', 'eth1', '10.88.0.19'),
        ('swp3', 'scheduler-node3', 'a2:e8:6c:50:8f:78', 'a2:92:a5:1f:7f:a9', 'eth2', '10.88.0.20'),
        ('swp49', 'spine-1', 'da:51:44:84:ec:df', '92:38:8d:ea:53:81', 'swp1', '10.88.0.23'),
    ],
    "lab-json0-node1.txt": [
        ('eth1', 'leaf-a', '16:fa:95:8a:08:0b', 'e6:3d:a8:eb:d3:1a', 'swp1', '10.88.0.21'),
        ('eth2', 'leaf-b', '8e:67:9b:0b:63:40', '82:2e:b4:0d:8f:65', 'swp1', '10.88.0.22'),
    ],
    # This project's lab: lldpd 0.9.6 (-f json), two network namespaces and a veth pair.
    "lab-lldpd-0.9.6-json-ttl-under-chassis.txt": [
        ("eth1", "leaf-a", "76:ee:84:39:b0:a8", "76:ee:84:39:b0:a8", "eth1", "192.0.2.1"),
    ],
    # The same lab four seconds after node1's two cables were crossed: both neighbours per port, the old one first.
    "lab-json0-node1-recabled.txt": RECABLED,
    "lab-json-node1-recabled.txt": RECABLED,
    "lab-json0-node3.txt": [
        ('eth1', 'leaf-b', '8e:67:9b:0b:63:40', 'f6:62:13:8e:44:46', 'swp3', '10.88.0.22'),
        ('eth2', 'leaf-a', '16:fa:95:8a:08:0b', '0e:1a:ce:10:21:1a', 'swp3', '10.88.0.21'),
    ],
}


def test_ages_and_the_youngest_neighbour_of_each_port_first():
    for name in ("lab-json0-node1-recabled.txt", "lab-json-node1-recabled.txt"):
        neighbors = parse_lldp(read_fixture("%s/%s" % (FOLDER, name)))
        assert [n["age_seconds"] for n in neighbors] == [39, 4, 39, 4]
        grouped = neighbors_by_interface(neighbors)
        assert {port: [(n["chassis_name"], n["age_seconds"]) for n in seen] for port, seen in grouped.items()} == {
            "eth1": [("leaf-b", 4), ("leaf-a", 39)], "eth2": [("leaf-a", 4), ("leaf-b", 39)]}
    # A day and more, as lldpd prints it.
    [neighbor] = parse_lldp({"lldp": {"interface": {"eth1": {"age": "2 days, 01:02:03", "chassis": {"leaf": {}}}}}})
    assert neighbor["age_seconds"] == 2 * 86400 + 3723


def test_neighbours_of_one_age_are_ordered_by_identity_not_by_arrival():
    """lldpd lists a port's neighbours as their frames arrived: two heard in the same second (a hub, or both leaves
    of the recabled capture once their ages agree) must give one order whichever came first."""
    neighbors = parse_lldp(read_fixture("%s/lab-json0-node1-recabled.txt" % FOLDER))
    for neighbor in neighbors:
        neighbor["age_seconds"] = 39
    orders = [neighbors, list(reversed(neighbors))]
    grouped = [neighbors_by_interface(order) for order in orders]
    assert grouped[0] == grouped[1]
    assert {port: [n["chassis_name"] for n in seen] for port, seen in grouped[0].items()} == {
        "eth1": ["leaf-a", "leaf-b"], "eth2": ["leaf-a", "leaf-b"]}
    # Without ages (an lldpd that prints none) the same.
    for neighbor in neighbors:
        neighbor["age_seconds"] = None
    assert neighbors_by_interface(neighbors) == neighbors_by_interface(list(reversed(neighbors)))


def _summary(neighbors):
    return [(n["local_interface"], n["chassis_name"], n["chassis_id"], n["port_id"], n["port_descr"], n["mgmt_ip"])
            for n in neighbors]


def test_every_lldp_fixture_has_expectations():
    assert sorted(EXPECTED) == fixture_names(FOLDER)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_parse_lldp_json0_fixture(name):
    assert _summary(parse_lldp(read_fixture("%s/%s" % (FOLDER, name)))) == EXPECTED[name]


def test_json0_details_ttl_types_and_both_management_addresses():
    neighbors = parse_lldp(read_fixture(FOLDER + "/unifabric-json0-server-h3c-and-b2b.txt"))
    h3c, b2b = neighbors[0], neighbors[1]
    assert (h3c["ttl"], h3c["port_id_type"], h3c["chassis_id_type"], h3c["mgmt_ips"]) == (121, "ifname", "mac", [])
    # The H3C description holds CRLF line breaks inside the JSON string; they come back as plain newlines.
    assert h3c["chassis_descr"].splitlines()[1] == "H3C S5130S-52S-EI"
    assert b2b["mgmt_ips"] == ["10.20.1.50", "fe80::ae1f:6bff:fe25:8664"]
    assert b2b["port_id_type"] == "mac"


def test_lldpd_0_9_ttl_under_the_chassis_is_read():
    # lldpd 0.9.4-0.9.6 print "ttl" in the chassis object (0.9.7 moved it to the port); before, it was lost.
    text = read_fixture(FOLDER + "/lab-lldpd-0.9.6-json-ttl-under-chassis.txt")
    body = json.loads(text)["lldp"]["interface"]["eth1"]
    assert "ttl" not in body["port"] and body["chassis"]["leaf-a"]["ttl"] == "120"
    [neighbor] = parse_lldp(text)
    assert (neighbor["ttl"], neighbor["chassis_descr"][:18], neighbor["mgmt_ips"]) == (
        120, "Debian GNU/Linux 1", ["192.0.2.1", "fe80::74ee:84ff:fe39:b0a8"])
    assert parse_lldp_neighbors(text)["errors"] == []


def test_json0_already_decoded_object_is_accepted():
    decoded = json.loads(read_fixture(FOLDER + "/unifabric-json0-gpu-rails-sonic-leaves.txt"))
    assert _summary(parse_lldp(decoded)) == EXPECTED["unifabric-json0-gpu-rails-sonic-leaves.txt"]


def test_json_single_neighbour_object():
    neighbors = parse_lldp(LLDPD_1_0_16_JSON_ONE_NEIGHBOUR)
    assert _summary(neighbors) == [("a_l1", "gpu-node-b", "32:8a:d4:4d:51:cd", "32:8a:d4:4d:51:cd", "a_l2", "192.0.2.2")]
    assert neighbors[0]["mgmt_ips"] == ["192.0.2.2", "fe80::308a:d4ff:fe4d:51cd"]
    assert (neighbors[0]["ttl"], neighbors[0]["via"], neighbors[0]["chassis_descr"]) == (120, "LLDP", "node-b test host")


def test_json_list_of_neighbours_with_a_lone_link_local_address():
    neighbors = parse_lldp(LLDPD_1_0_16_JSON_TWO_NEIGHBOURS)
    assert _summary(neighbors) == [
        ("a_l2", "leaf-r1-a", "16:e5:80:d5:f5:5d", "a_l1", "a_l1", "192.0.2.1"),
        ("a_l2b", "spine-x", "12:e1:cb:15:8c:49", "12:e1:cb:15:8c:49", "a_l3", "fe80::10e1:cbff:fe15:8c49"),
    ]
    assert neighbors[0]["port_id_type"] == "ifname"
    assert sorted(neighbors_by_interface(neighbors)) == ["a_l2", "a_l2b"]


def test_json_and_json0_of_the_same_neighbours_agree():
    json0 = json.loads(LLDPD_1_0_16_JSON_ONE_NEIGHBOUR)
    body = json0["lldp"]["interface"]["a_l1"]
    chassis_name, chassis = next(iter(body["chassis"].items()))
    # The same neighbour in json0's shape, built the way lldpd's json0 writer wraps values.
    as_json0 = {"lldp": [{"interface": [{
        "name": "a_l1", "via": body["via"], "age": body["age"],
        "chassis": [{"id": [chassis["id"]], "name": [{"value": chassis_name}], "descr": [{"value": chassis["descr"]}],
                     "mgmt-ip": [{"value": ip} for ip in chassis["mgmt-ip"]]}],
        "port": [{"id": [body["port"]["id"]], "descr": [{"value": body["port"]["descr"]}],
                  "ttl": [{"value": body["port"]["ttl"]}]}],
    }]}]}
    assert parse_lldp(as_json0) == parse_lldp(LLDPD_1_0_16_JSON_ONE_NEIGHBOUR)


def test_chassis_without_a_system_name_gives_null_name():
    decoded = json.loads(LLDPD_1_0_16_JSON_ONE_NEIGHBOUR)
    interface = decoded["lldp"]["interface"]["a_l1"]
    # lldpd prints an unnamed chassis as its body directly, without the name level.
    interface["chassis"] = interface["chassis"]["gpu-node-b"]
    neighbor = parse_lldp(decoded)[0]
    assert (neighbor["chassis_name"], neighbor["chassis_id"]) == (None, "32:8a:d4:4d:51:cd")


@pytest.mark.parametrize("text", [LLDPD_1_0_16_JSON_NO_NEIGHBOUR, LLDPD_1_0_16_JSON0_NO_NEIGHBOUR])
def test_no_neighbour_gives_an_empty_list(text):
    assert parse_lldp(text) == []


@pytest.mark.parametrize("text", [LLDPD_1_0_16_JSON_NO_NEIGHBOUR, LLDPD_1_0_16_JSON0_NO_NEIGHBOUR])
def test_no_neighbour_is_said_in_errors_filter_and_topology(text):
    said = "lldpd lists no neighbour on any interface (no LLDP frame received, or lldpd just started)"
    assert parse_lldp_neighbors(text) == {"neighbors": [], "errors": [said]}
    assert FilterModule().filters()["parse_lldp"](text, with_errors=True)["errors"] == [said]
    assert FilterModule().filters()["parse_lldp"](text) == []
    findings = build_topology({"lldpctl": text})["findings"]
    assert {"severity": "warning", "kind": "lldp_incomplete", "message": "lldpctl: " + said} in findings


def test_real_captures_have_no_errors_and_a_lost_port_id_is_named():
    for name in sorted(EXPECTED):
        assert parse_lldp_neighbors(read_fixture("%s/%s" % (FOLDER, name)))["errors"] == [], name
    # Derived from the SONiC capture: the first neighbour's port "id" object is deleted.
    decoded = json.loads(read_fixture(FOLDER + "/unifabric-json0-gpu-rails-sonic-leaves.txt"))
    first = decoded["lldp"][0]["interface"][0]
    del first["port"][0]["id"]
    parsed = parse_lldp_neighbors(decoded)
    assert parsed["errors"] == ["interface %s: the neighbour has no port id" % first["name"]]


@pytest.mark.parametrize("garbage, message", [
    ("", "the output is empty"),
    ("lldpctl: unable to connect to lldpd daemon", "not JSON"),
    ('{"neighbours": []}', "no top-level 'lldp' key"),
    ('{"lldp": 7}', "'lldp' holds int"),
    ('{"lldp": {"interface": ["eth0"]}}', "an interface entry is str"),
])
def test_garbage_raises_a_clear_parse_error(garbage, message):
    with pytest.raises(ParseError, match="lldpctl -f json") as error:
        parse_lldp(garbage)
    assert message in str(error.value)


def _paths(node, path=()):
    if path:
        yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, path + (index,))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_damaged_json_gives_neighbours_or_a_parse_error_never_a_traceback(data):
    """Any value of a real capture replaced by another JSON type: parsed, or ParseError."""
    sources = [read_fixture("%s/%s" % (FOLDER, name)) for name in sorted(EXPECTED)]
    decoded = json.loads(data.draw(st.sampled_from(sources + [LLDPD_1_0_16_JSON_ONE_NEIGHBOUR,
                                                              LLDPD_1_0_16_JSON_TWO_NEIGHBOURS])))
    path = data.draw(st.sampled_from(list(_paths(decoded))))
    target = decoded
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = data.draw(st.sampled_from([None, 1, True, "x", [], {}, [None], {"value": 3}, [{"id": 5}]]))
    try:
        neighbors = parse_lldp(decoded)
    except ParseError:
        return
    assert all(isinstance(neighbor["local_interface"], str) for neighbor in neighbors)
