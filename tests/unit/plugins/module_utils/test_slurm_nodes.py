"""`scontrol show node` read from real captures (tests/fixtures/slurm), whose drain a node is, and the drain
reason within what scontrol and slurmdbd keep."""

import pytest
from fixture_data import read_fixture
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpufabric.core.plugins.module_utils.fabric import slurm_nodes as sn

PREFIX = "gpufabric:"


def by_name(text):
    return {node["name"]: node for node in sn.parse_scontrol_nodes(text)}


def test_the_public_capture_of_four_gpu_nodes_one_drained_by_a_person():
    nodes = by_name(read_fixture("slurm/public-huji-17.11-four-nodes-one-drained.txt"))
    assert list(nodes) == ["cortex-01", "dumfries-002", "oxygen-04", "cricket"]
    oxygen = nodes["oxygen-04"]
    assert (oxygen["state"], oxygen["base_state"], oxygen["flags"], oxygen["drained"]) == (
        "IDLE+DRAIN", "IDLE", ["DRAIN"], True)
    assert (oxygen["reason"], oxygen["reason_user"], oxygen["reason_time"]) == (
        "memory issues?", "root", "2019-01-29T10:42:12")
    assert oxygen["partitions"] == ["short", "medium", "long", "killable"]
    # The OS line keeps its spaces (and loses the trailing one scontrol prints); a line of blanks between records.
    assert oxygen["fields"]["OS"] == "Linux 4.14.61-aufs-1 #1 SMP Tue Aug 7 18:13:22 IDT 2018"
    assert nodes["cortex-01"]["fields"]["CfgTRES"] == "cpu=16,mem=257860M,billing=16,gres/gpu=8"
    assert (nodes["cortex-01"]["state"], nodes["cortex-01"]["reason"]) == ("ALLOCATED", None)
    assert sn.drain_owner(oxygen, PREFIX) == "foreign"
    assert sn.drain_owner(nodes["cricket"], PREFIX) is None


@pytest.mark.parametrize("state, base, flags, responding", [
    ("IDLE", "IDLE", [], True),
    ("MIXED+DRAIN", "MIXED", ["DRAIN"], True),
    ("DOWN*+DRAIN", "DOWN", ["DRAIN"], False),
    ("IDLE+CLOUD+POWERED_DOWN", "IDLE", ["CLOUD", "POWERED_DOWN"], True),
    ("IDLE+NOT_RESPONDING", "IDLE", ["NOT_RESPONDING"], False),
    ("", "UNKNOWN", [], True),
])
def test_states_split_into_base_and_flags(state, base, flags, responding):
    assert sn.split_state(state) == (base, flags, not responding)


@pytest.mark.parametrize("text, reason, user, when", [
    ("gpufabric: rail1 eth2 down [root@2026-12-04T10:00:00]", "gpufabric: rail1 eth2 down", "root",
     "2026-12-04T10:00:00"),
    ("a [b] [slurm@2024-01-01T00:00:00]", "a [b]", "slurm", "2024-01-01T00:00:00"),
    ("no suffix here", "no suffix here", None, None),
    ("维护中 [root@2025-09-23T09:46:15]", "维护中", "root", "2025-09-23T09:46:15"),
])
def test_the_reason_loses_only_the_user_and_time_scontrol_appends(text, reason, user, when):
    assert sn.split_reason(text) == (reason, user, when)


def recorded(node):
    """The ledger's entry for a drain the loop set and Slurm showed as node shows it."""
    return {"action": "drain", "slurm_reason": node["reason"], "slurm_user": node.get("reason_user"),
            "slurm_time": node.get("reason_time")}


def test_whose_drain():
    def node(state, reason=None, user="root", time="2026-12-04T10:00:01"):
        base, flags = sn.split_state(state)[:2]
        return {"drained": "DRAIN" in flags, "down": base in sn.DOWN_STATES, "reason": reason,
                "reason_user": user if reason else None, "reason_time": time if reason else None}
    ours = node("IDLE+DRAIN", "gpufabric: rail1 eth2 down")
    assert sn.drain_owner(ours, PREFIX, recorded(ours)) == "ours"
    assert sn.drain_owner(node("MIXED+DRAIN", "gpufabric: rail1 eth2 down"), PREFIX, recorded(ours)) == "ours"
    # The prefix alone makes nobody's drain the loop's: no ledger entry, or its last action a resume.
    assert sn.drain_owner(ours, PREFIX) == "foreign"
    assert sn.drain_owner(ours, PREFIX, dict(recorded(ours), action="resume")) == "foreign"
    # A person extended the reason, drained it again as another user, or again later: theirs.
    extended = node("IDLE+DRAIN", "gpufabric: rail1 eth2 down -- DO NOT RESUME, RMA 4711")
    assert sn.drain_owner(extended, PREFIX, recorded(ours)) == "foreign"
    assert sn.drain_owner(node("IDLE+DRAIN", "gpufabric: rail1 eth2 down", user="alice"), PREFIX,
                          recorded(ours)) == "foreign"
    assert sn.drain_owner(node("IDLE+DRAIN", "gpufabric: rail1 eth2 down", time="2026-12-05T08:00:00"), PREFIX,
                          recorded(ours)) == "foreign"
    assert sn.drain_owner(node("IDLE+DRAIN", "maintenance: gpufabric: later"), PREFIX) == "foreign"
    assert sn.drain_owner(node("IDLE+DRAIN", "gpufabricX: not ours"), PREFIX) == "foreign"
    assert sn.drain_owner(node("DOWN*", "Not responding"), PREFIX) == "foreign"
    down = node("DOWN", "gpufabric: rail1 eth2 down")
    assert sn.drain_owner(down, PREFIX, recorded(down)) == "foreign"  # down, not drained
    assert sn.drain_owner(node("ALLOCATED"), PREFIX) is None


def test_not_scontrol_output_is_refused():
    assert sn.parse_scontrol_nodes("") == [] and sn.parse_scontrol_nodes("No nodes in the system\n") == []
    with pytest.raises(sn.ScontrolParseError, match="before the first NodeName"):
        sn.parse_scontrol_nodes("slurm_load_node error: Unable to contact slurm controller\n")
    with pytest.raises(sn.ScontrolParseError, match="must be text"):
        sn.parse_scontrol_nodes(None)


# Reasons

def test_the_reason_names_alert_rail_interface_since_and_leaf():
    labels = {"alertname": "GpufabricPortDown", "rail": "rail1", "netdev": "eth2", "leaf": "leaf-b", "leaf_port": "swp1"}
    assert sn.drain_reason(PREFIX, labels, "2026-12-04T10:00:00.123456789Z") == (
        "gpufabric: rail1 eth2 down since 2026-12-04T10:00:00Z (GpufabricPortDown leaf-b swp1)")
    # An RDMA port: the device when there is no netdev; another zone kept as Alertmanager gave it.
    labels = {"alertname": "GpufabricPortRateLow", "rail": "rail3", "device": "mlx5_3", "leaf": "leaf-3"}
    assert sn.drain_reason(PREFIX, labels, "2026-12-04T11:00:00+01:00") == (
        "gpufabric: rail3 mlx5_3 below rate since 2026-12-04T11:00:00+01:00 (GpufabricPortRateLow leaf-3)")
    # An alert without a rail and a name outside the table.
    assert sn.drain_reason(PREFIX, {"alertname": "GpufabricSomethingNew"}, None) == (
        "gpufabric: something new (GpufabricSomethingNew)")


def test_a_label_cannot_reshape_the_reason():
    labels = {"alertname": "GpufabricPortDown", "rail": 'rail1" [root@2020-01-01T00:00:00]', "netdev": "eth2\nx",
              "leaf": "leaf b"}
    reason = sn.drain_reason(PREFIX, labels, "2026-12-04T10:00:00Z")
    assert reason == ("gpufabric: rail1___root@2020-01-01T00:00:00_ eth2_x down since 2026-12-04T10:00:00Z "
                      "(GpufabricPortDown leaf_b)")
    assert sn.reason_problem(reason) is None
    assert sn.split_reason(reason + " [root@2026-12-04T10:00:01]")[0] == reason


@given(st.dictionaries(st.sampled_from(["alertname", "rail", "netdev", "device", "leaf", "leaf_port"]),
                       st.text(max_size=400)),
       st.one_of(st.none(), st.text(max_size=40)))
def test_any_labels_give_a_reason_scontrol_and_slurmdbd_keep_whole(labels, starts_at):
    reason = sn.drain_reason(PREFIX, labels, starts_at)
    assert reason.startswith(PREFIX + " ")
    assert sn.reason_problem(reason) is None, reason
    assert len(reason.encode("utf-8")) <= sn.REASON_MAX_BYTES


@pytest.mark.parametrize("reason, words", [
    ('"quoted"', "strips one leading and one trailing double quote"),
    ("gpufabric: line one\nline two", "line break"),
    ("gpufabric: tab\there", "control character"),
    ("gpufabric: " + "x" * 250, "longer than 255 bytes"),
    ("gpufabric: " + "é" * 123, "longer than 255 bytes"),  # 246 bytes of é: characters are not bytes
    ("", "needs a reason"),
])
def test_what_scontrol_or_slurmdbd_would_alter_is_named(reason, words):
    assert words in sn.reason_problem(reason)


@pytest.mark.parametrize("prefix, good", [
    ("gpufabric:", True), ("fabric-loop:", True), ("a.b_c-d:", True), ("a" * 31 + ":", True),
    ("gpufabric", False), ("gpu fabric:", False), ('"gpufabric:', False), (":", False), ("1abc:", False),
    ("gpufabric:\n", False), ("gpufabric: ", False), ("a" * 32 + ":", False), (None, False), ("", False),
])
def test_a_prefix_is_a_word_and_a_colon(prefix, good):
    assert (sn.reason_prefix_problem("remediation_reason_prefix", prefix) is None) == good


# The lab's own Slurm (Debian 12's 22.05, Debian 13's 24.11)

def test_the_lab_before_and_during_a_fault():
    before = by_name(read_fixture("slurm/lab-22.05-three-nodes-idle.txt"))
    assert {name: (node["state"], node["reason"], node["partitions"]) for name, node in before.items()} == {
        "node1": ("IDLE", None, ["lab"]), "node2": ("IDLE", None, ["lab"]), "node3": ("IDLE", None, ["lab"])}
    during = by_name(read_fixture("slurm/lab-22.05-drained-by-the-loop-and-by-hand.txt"))
    assert sn.drain_owner(during["node1"], PREFIX, recorded(during["node1"])) == "ours"
    assert sn.drain_owner(during["node1"], PREFIX) == "foreign"  # the prefix without the ledger's record
    assert during["node1"]["reason"].startswith("gpufabric: rail1 eth2 down since ")
    assert during["node1"]["reason"].endswith(" (GpufabricPortDown leaf-b swp1)")
    assert sn.drain_owner(during["node3"], PREFIX) == "foreign"
    assert (during["node3"]["reason"], during["node3"]["reason_user"]) == ("maintenance: PSU swap", "root")
    assert sn.drain_owner(during["node2"], PREFIX) is None


@pytest.mark.parametrize("capture", ["slurm/lab-22.05-oneline-drained.txt", "slurm/lab-24.11-oneline-drained.txt",
                                     "slurm/lab-24.11-drained.txt"])
def test_both_releases_both_forms_give_the_same_drain(capture):
    [node] = sn.parse_scontrol_nodes(read_fixture(capture))
    assert node["state"] == "IDLE+DRAIN" and node["partitions"] == ["lab"]
    assert node["reason"] == "gpufabric: rail1 eth2 down since 2026-12-04T10:00:00Z (GpufabricPortDown leaf-b swp1)"
    assert node["reason_user"] == "root" and sn.drain_owner(node, PREFIX, recorded(node)) == "ours"


@pytest.mark.parametrize("capture", ["slurm/lab-22.05-reason-with-a-line-break.txt",
                                     "slurm/lab-24.11-reason-with-a-line-break.txt"])
def test_a_reason_with_a_line_break_is_read_back_whole(capture):
    """What reason_problem refuses to write, read back all the same when someone else wrote it."""
    [node] = sn.parse_scontrol_nodes(read_fixture(capture))
    assert (node["reason"], node["reason_user"]) == ("line one\nline two", "root")
    assert node["fields"]["State"] == "IDLE+DRAIN"


def test_the_one_line_form_keeps_the_second_line_of_a_reason_in_its_text():
    [node] = sn.parse_scontrol_nodes(read_fixture("slurm/lab-22.05-oneline-reason-with-a-line-break.txt"))
    assert node["reason"].startswith("line one") and node["reason"].endswith("line two")
    assert sn.drain_owner(node, PREFIX) == "foreign"


def test_quotes_stripped_and_down():
    [quoted] = sn.parse_scontrol_nodes(read_fixture("slurm/lab-22.05-reason-quotes-stripped.txt"))
    assert quoted["reason"] == "quoted reason"
    [down] = sn.parse_scontrol_nodes(read_fixture("slurm/lab-22.05-down.txt"))
    assert (down["base_state"], down["down"], down["drained"], down["reason"]) == ("DOWN", True, False, "cable check")
    assert sn.drain_owner(down, PREFIX) == "foreign"
