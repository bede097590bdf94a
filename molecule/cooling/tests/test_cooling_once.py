"""What runs the same code on either release, once, on the Debian 13 node: the controller-side check of bad input,
the leak action, the stop path under the faults that need no systemd (no configuration, a corrupt one, a BMC
answering garbage, the IPMI BMC down) and the password file removed with the password. Runs after test_cooling.py
(pytest orders the files by name), with the service running and both BMC emulators up.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

from cooling_lab import (
    CONFIG, ENDPOINT, LAB, METRICS, STOP_ACTION, assert_full_after_stop_action, journal, pwm,
    restart_service, run_converge, start_ipmi_sim, start_sushy, stop_daemon, stopped_service, wait_for, SLOW,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))
from garbage_bmc import GarbageBMC  # noqa: E402

testinfra_hosts = ["podman://cooling-node2"]  # podman exec per check (why: tests/molecule_helpers.py)


def test_bad_curves_and_a_missing_zone_fail_before_any_change_naming_the_variables(host):
    before = host.file(CONFIG).sha256sum
    bad = {
        "cooling_zones": {
            "cpu": {"sensors": [{"backend": "ipmi", "selector": "CPU Temp"}], "min_duty": 20,
                    "curve": [{"temp": 40, "duty": 20}, {"temp": 60, "duty": 120}]},
            "gpu": {"sensors": [{"backend": "redfish", "selector": "GPU Baseboard Inlet"}], "min_duty": 20,
                    "curve": [{"temp": 25, "duty": 60}, {"temp": 45, "duty": 30}]},
        },
        "cooling_fan_groups": {"chassis": {"backend": "hwmon", "target": "labfan/pwm1", "zones": ["cpu", "gpu", "inlet"]}},
    }
    run = run_converge(bad)
    output = " ".join((run.stdout + run.stderr).split())
    assert run.returncode != 0
    assert "The cooling policy is not usable, nothing was changed" in output
    assert "cooling_zones.cpu.curve[1].duty: 120 is outside 0-100 %" in output
    assert "cooling_zones.gpu.curve[1].duty: duties must not decrease as temperature rises (30 after 60)" in output
    assert "cooling_fan_groups.chassis.zones: zone 'inlet' is not defined in cooling_zones (defined: cpu, gpu)" in output
    # Both nodes are in the play: neither changed.
    assert output.count("changed=0") == 2 and "changed=1" not in output, output[-1500:]
    assert host.file(CONFIG).sha256sum == before
    assert host.service("gpufabric-cooling").is_running


def test_leak_detection_triggers_the_configured_action(host):
    detector = LAB / "redfish-mockup/ThermalEquipment/CDUs/1/LeakDetection/LeakDetectors/Base/index.json"
    original = detector.read_text()
    doc = json.loads(original)
    doc["DetectorState"] = "Critical"
    started = time.time()
    detector.write_text(json.dumps(doc))
    try:
        alerts = "/var/log/gpufabric-cooling-alerts.log"
        expected = "leak|alert|CDU 1 leak detector CDU base pan DetectorState=Critical"
        assert wait_for(lambda: host.file(alerts).exists and expected in host.file(alerts).content_string)
        assert "liquid cooling LEAK: CDU 1 leak detector CDU base pan DetectorState=Critical; action alert" in journal(host, started - 1)
        assert 'gpufabric_cooling_liquid_alarm{source="cdu:1",kind="leak"} 1' in host.file(METRICS).content_string
    finally:
        detector.write_text(original)
    assert wait_for(lambda: "cleared: CDU 1 leak detector" in journal(host, started - 1))


def test_stop_path_without_a_config_file_drives_full_duty(host):
    stopped_service(host)
    host.run_expect([0], "mv %s %s.saved" % (CONFIG, CONFIG))
    try:
        assert_full_after_stop_action(host, "configuration %s unusable (FileNotFoundError" % CONFIG)
        assert "fail-safe record: fan group chassis set to 100 %" in host.run(STOP_ACTION).stderr
    finally:
        host.run_expect([0], "mv %s.saved %s" % (CONFIG, CONFIG))
    restart_service(host)


def test_stop_path_with_a_corrupt_config_drives_full_duty(host):
    stopped_service(host)
    host.run_expect([0], "cp -p %s %s.saved && truncate -s 100 %s" % (CONFIG, CONFIG, CONFIG))
    try:
        assert_full_after_stop_action(host, "JSONDecodeError")
    finally:
        host.run_expect([0], "mv %s.saved %s" % (CONFIG, CONFIG))
    restart_service(host)


def test_stop_path_with_a_bmc_returning_garbage_drives_full_duty(host):
    stopped_service(host)
    stop_daemon("sushy")
    garbage = GarbageBMC(ENDPOINT["address"], ENDPOINT["redfish_port"])
    try:
        assert_full_after_stop_action(host, "fan group rack: BadStatusLine")
        assert garbage.requests >= 1
    finally:
        garbage.close()
        start_sushy()
    restart_service(host)


def test_stop_path_with_ipmi_sim_stopped_drives_full_duty(host):
    stopped_service(host)
    stop_daemon("ipmi_sim")
    try:
        started = time.monotonic()
        assert_full_after_stop_action(host, "fan group bmc")
        assert time.monotonic() - started < SLOW
        state = subprocess.run(["start-stop-daemon", "--status", "--pidfile", str(LAB / "ipmi_sim.pid")], check=False)
        assert state.returncode != 0  # the BMC really was down during the stop
    finally:
        start_ipmi_sim()
    restart_service(host)


def test_password_file_is_removed_with_the_password(host):
    assert host.file("/etc/gpufabric-cooling/ipmi.pass").exists
    bmc = {"ipmi": {"host": ENDPOINT["address"], "port": ENDPOINT["ipmi_port"], "user": "admin", "interface": "lanplus",
                    "timeout": 1, "retries": 1},
           "redfish": {"base_url": "http://%s:%d" % (ENDPOINT["address"], ENDPOINT["redfish_port"]), "allow_insecure_http": True,
                       "auth": "basic", "chassis": "1", "timeout": 2}}
    try:
        run = run_converge({"cooling_bmc": bmc, "cooling_verify": False}, "cooling_configure,cooling_service")
        assert run.returncode == 0, run.stdout[-3000:]
        assert not host.file("/etc/gpufabric-cooling/ipmi.pass").exists
        assert "password_file" not in json.loads(host.file(CONFIG).content_string)["bmc"]["ipmi"]
    finally:
        run = run_converge(None, "cooling_configure,cooling_service")
    assert run.returncode == 0, run.stdout[-3000:]
    assert host.file("/etc/gpufabric-cooling/ipmi.pass").mode == 0o600
    assert wait_for(lambda: host.service("gpufabric-cooling").is_running and pwm(host) < 255)
