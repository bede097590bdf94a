"""The sampler against real programs that misbehave: stand-ins for lldpcli, vtysh, swanctl and ethtool on PATH that
print the lab's captures (one with a Latin-1 byte) or hang, run by the sampler's own command runner under a real
timeout; and the gpufabric-health program itself, run as a process, writing and removing its textfile."""

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixture_data import fixture_bytes, read_fixture
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufabric.core.plugins.module_utils.health import sample as health_sample

ROOT = Path(__file__).resolve().parents[3]
HANG = "#!/bin/sh\nexec sleep 600\n"
# The chassis description a switch vendor wrote in Latin-1: lldpd passes its bytes through unchanged.
LATIN1_LLDP = read_fixture("lldp/lab-json0-node1.txt").encode().replace(
    b"Debian GNU/Linux 12 (bookworm)", b"Baie 4, \xe9tage 2 (Latin-1)")


def program(bin_dir, name, script):
    path = bin_dir / name
    path.write_text(script)
    path.chmod(0o755)


def printing(bin_dir, name, data):
    (bin_dir / (name + ".out")).write_bytes(data)
    program(bin_dir, name, '#!/bin/sh\nexec cat "%s"\n' % (bin_dir / (name + ".out")))


def netdev(sys_root, name, operstate="up"):
    base = sys_root / "class" / "net" / name
    base.mkdir(parents=True, exist_ok=True)
    for attribute, value in (("operstate", operstate), ("carrier", "1" if operstate == "up" else "0"),
                             ("speed", "100000"), ("carrier_changes", "2")):
        (base / attribute).write_text(value + "\n")


@pytest.fixture
def fabric(tmp_path, monkeypatch):
    """A host of eight RoCE rails (eth1-eth8, leaf-a/leaf-b as the lab cabled eth1/eth2), with well-behaved
    lldpcli (Latin-1 in a description), vtysh, swanctl and ethtool on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sys_root = tmp_path / "sys"
    rails = []
    for index in range(1, 9):
        netdev(sys_root, "eth%d" % index)
        rails.append({"rail": "rail%d" % (index - 1), "netdev": "eth%d" % index, "link_layer": "Ethernet",
                      "expected_rate_gbps": 100, "roce": {"ecn_priority": 3}})
    rails[0].update(leaf="leaf-a", leaf_port="swp1")
    rails[1].update(leaf="leaf-b", leaf_port="swp1")
    printing(bin_dir, "lldpcli", LATIN1_LLDP)
    vtysh = {"summary": read_fixture("frr/lab-bgp-summary-leaf2-cut.json"),
             "peers": read_fixture("frr/lab-bfd-peers-leaf2-cut.json")}
    for name, text in vtysh.items():
        (bin_dir / ("vtysh-%s.out" % name)).write_text(text)
    program(bin_dir, "vtysh", '#!/bin/sh\ncase "$2" in *summary*) exec cat "%s/vtysh-summary.out";; '
            '*) exec cat "%s/vtysh-peers.out";; esac\n' % (bin_dir, bin_dir))
    printing(bin_dir, "swanctl", fixture_bytes("strongswan/lab-debian12-list-sas-node1-mixed-mesh.txt").split(b"\n", 1)[1])
    printing(bin_dir, "ethtool", fixture_bytes("ethtool/mlx5-kernel6.5-xdp-pause-out-of-buffer.txt").split(b"\n", 1)[1])
    monkeypatch.setenv("PATH", "%s:%s" % (bin_dir, os.environ["PATH"]))
    state = {"version": 1, "host": "node1", "interval": 1, "command_interval": 10, "command_timeout": 0.5,
             "textfile": str(tmp_path / "textfile" / "gpufabric_health.prom"), "sys_root": str(sys_root),
             "rails": rails, "pcie": [], "bonds": [],
             "bgp_peers": [{"peer": "eth1", "interface": "eth1", "leaf": "leaf2"}],
             "bfd_peers": [{"peer": "eth1", "interface": "eth1", "leaf": "leaf2"}],
             "ipsec": [{"peer": "node2", "ike": "gf-node2", "child": "gf-node2"}]}
    return {"bin": bin_dir, "sys": sys_root, "state": state, "tmp": tmp_path}


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def timed_sample(sampler):
    started = time.monotonic()
    text = sampler.sample().render()
    return time.monotonic() - started, {family.name: family for family in text_string_to_metric_families(text)}


def by_label(found, name, label):
    """{label value: sample value} of a series; the parser names a counter's family without _total."""
    family = found.get(name[:-len("_total")] if name.endswith("_total") else name)
    return {sample.labels[label]: sample.value for sample in family.samples} if family else {}


def test_a_latin1_byte_from_lldpcli_is_data_and_every_source_reads(fabric):
    sampler = health_sample.Sampler(fabric["state"], run=health_sample.run_command, clock=Clock())
    _took, found = timed_sample(sampler)
    assert by_label(found, "gpufabric_health_source_up", "source") == {
        "sysfs": 1.0, "lldp": 1.0, "frr": 1.0, "swanctl": 1.0, "ethtool": 1.0}
    assert by_label(found, "gpufabric_lldp_neighbour_ok", "rail") == {"rail0": 1.0, "rail1": 1.0}
    assert len(by_label(found, "gpufabric_roce_out_of_buffer_total", "rail")) == 8


def test_a_hung_ethtool_on_eight_rails_costs_one_timeout_and_the_rest_is_written(fabric):
    program(fabric["bin"], "ethtool", HANG)
    sampler = health_sample.Sampler(fabric["state"], run=health_sample.run_command, clock=Clock())
    took, found = timed_sample(sampler)
    # One timeout (0.5 s) and its kill, not eight: ethtool is not asked again in this sample.
    assert 0.5 <= took < 2.0, took
    sources = by_label(found, "gpufabric_health_source_up", "source")
    assert sources == {"sysfs": 1.0, "lldp": 1.0, "frr": 1.0, "swanctl": 1.0, "ethtool": 0.0}
    assert set(by_label(found, "gpufabric_port_up", "rail").values()) == {1.0}
    assert by_label(found, "gpufabric_roce_pause_frames_total", "netdev") == {}  # unknown: absent, never an old value
    assert by_label(found, "gpufabric_bgp_peer_established", "peer") == {"eth1": 0.0}  # the capture: not Established


def test_every_command_hung_the_sample_ends_at_its_budget(fabric):
    for name in ("lldpcli", "vtysh", "swanctl", "ethtool"):
        program(fabric["bin"], name, HANG)
    state = dict(fabric["state"], command_timeout=5, sample_budget=1.5)
    sampler = health_sample.Sampler(state, run=health_sample.run_command, clock=Clock())
    took, found = timed_sample(sampler)
    # The first command takes the whole budget (its timeout is what remains of it); nothing starts after it.
    assert 1.5 <= took < 1.5 + 1.5, took
    assert by_label(found, "gpufabric_health_source_up", "source") == {
        "sysfs": 1.0, "lldp": 0.0, "frr": 0.0, "swanctl": 0.0, "ethtool": 0.0}
    assert set(by_label(found, "gpufabric_port_up", "rail").values()) == {1.0}
    assert all(math.isnan(value) for value in by_label(found, "gpufabric_lldp_neighbour_ok", "rail").values())


def test_what_a_hung_command_kept_from_being_asked_is_asked_first_at_the_next_sample(fabric):
    """ethtool hangs on eth1 only: the first sample asks eth1 and skips eth2-eth8; the next (eth1's failure is
    remembered for the command interval) asks them."""
    real = fabric["bin"] / "ethtool.out"
    program(fabric["bin"], "ethtool", '#!/bin/sh\n[ "$2" = eth1 ] && exec sleep 600\nexec cat "%s"\n' % real)
    clock = Clock()
    sampler = health_sample.Sampler(fabric["state"], run=health_sample.run_command, clock=clock)
    _took, first = timed_sample(sampler)
    assert by_label(first, "gpufabric_roce_out_of_buffer_total", "netdev") == {}
    clock.now += 1
    took, second = timed_sample(sampler)
    assert took < 0.5, took
    assert sorted(by_label(second, "gpufabric_roce_out_of_buffer_total", "netdev")) == ["eth%d" % i for i in range(2, 9)]
    assert by_label(second, "gpufabric_health_source_up", "source")["ethtool"] == 0.0  # eth1 still unknown


def test_a_killed_command_takes_its_children_with_it(fabric):
    pid_file = fabric["tmp"] / "child.pid"
    program(fabric["bin"], "ethtool", '#!/bin/sh\nsleep 600 &\necho $! > "%s"\nwait\n' % pid_file)
    with pytest.raises(health_sample.CommandTimeout, match="ethtool did not answer in 0.5 s"):
        health_sample.run_command(["ethtool", "-S", "eth1"], 0.5)
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)


def alive(pid):
    """Running (a zombie waiting for its reaper is not)."""
    try:
        return Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_reader_that_fails_adds_no_series_and_marks_its_source_down(fabric):
    """Two rails alike (check_inventory refuses them now; an expected state from before did not): the port
    reader's series would repeat, so it adds none and sysfs is down; lldp, frr, swanctl and ethtool are written."""
    state = dict(fabric["state"], rails=fabric["state"]["rails"] + [fabric["state"]["rails"][0]])
    sampler = health_sample.Sampler(state, run=health_sample.run_command, clock=Clock())
    _took, found = timed_sample(sampler)
    assert "gpufabric_port_up" not in found
    sources = by_label(found, "gpufabric_health_source_up", "source")
    assert sources["sysfs"] == 0.0 and sources["frr"] == sources["swanctl"] == 1.0
    assert "gpufabric_bfd_peer_up" in found and "gpufabric_health_sample_timestamp_seconds" in found


def series(path):
    found = {family.name: family for family in text_string_to_metric_families(path.read_text())}
    return by_label(found, "gpufabric_port_up", "rail")


def wait_for(predicate, seconds=15):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("not within %d s" % seconds)


def test_the_program_writes_a_port_going_down_despite_latin1_and_removes_its_textfile_when_stopped(fabric):
    """The issue's probe: one Latin-1 byte in lldpcli's output failed every sample, and the textfile kept
    port_up 1 after the port went down."""
    state_file = fabric["tmp"] / "expected.json"
    state_file.write_text(json.dumps(fabric["state"]))
    textfile = Path(fabric["state"]["textfile"])
    textfile.parent.mkdir()
    env = dict(os.environ, PYTHONPATH="%s:%s" % (ROOT / "roles" / "health" / "files", ROOT / ".build" / "collections"))
    process = subprocess.Popen([sys.executable, "-m", "gpufabric_health", "run", str(state_file)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: textfile.exists() and series(textfile).get("rail0") == 1.0)
        netdev(fabric["sys"], "eth1", "down")
        wait_for(lambda: textfile.exists() and series(textfile).get("rail0") == 0.0)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert not textfile.exists()
    assert "Traceback" not in process.stderr.read()


def test_clean_removes_what_a_killed_sampler_left(fabric):
    """The unit's ExecStopPost, for a sampler that could not remove its textfile itself (SIGKILL, the watchdog)."""
    state_file = fabric["tmp"] / "expected.json"
    state_file.write_text(json.dumps(fabric["state"]))
    textfile = Path(fabric["state"]["textfile"])
    textfile.parent.mkdir()
    textfile.write_text('gpufabric_port_up{host="node1",rail="rail0"} 1\n')
    env = dict(os.environ, PYTHONPATH="%s:%s" % (ROOT / "roles" / "health" / "files", ROOT / ".build" / "collections"))
    for _twice in range(2):  # nothing there the second time: still 0, as systemd needs
        subprocess.run([sys.executable, "-m", "gpufabric_health", "clean", str(state_file)], env=env, check=True)
        assert not textfile.exists()
