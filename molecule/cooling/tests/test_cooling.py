"""gpufabric-cooling as a service in a lab node, against ipmi_sim and sushy-static running on the Molecule host.

The tests change the BMC's simulated temperature and Redfish resources on the host, and read what the service
wrote in the node: the pwm file, its journal, its metrics. Order matters: the last tests stop the BMC and the
service, and put them back.
"""

import json
import os
import subprocess
import time
from pathlib import Path

LAB = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "cooling-bmc"
ENDPOINT = json.loads((LAB / "endpoint.json").read_text())
PWM = "/srv/gpufabric-lab/hwmon/hwmon3/pwm1"
METRICS = "/var/lib/prometheus/node-exporter/gpufabric_cooling.prom"
STALE_AFTER = 4.0
INTERVAL = 1.0


def pwm(host):
    # The lab's pwm file is a plain file that the service truncates and rewrites: a read can fall in between.
    for unused in range(20):
        text = host.file(PWM).content_string.strip()
        if text:
            return int(text)
        time.sleep(0.05)
    return int(text)


# The Molecule host is shared and often loaded: every check through the podman connection can take seconds.
# Waits are generous; how fast the service reacted is measured from its own journal timestamps instead.
SLOW = 90


def wait_for(predicate, timeout=SLOW, step=0.25):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


def set_cpu_temp(value):
    (LAB / "values" / "cpu_temp").write_text("%d\n" % value)


def journal(host, since):
    return host.check_output("journalctl -u gpufabric-cooling --no-pager -o cat --since=@%d" % int(since))


def first_log_time(host, text, since):
    """Unix time of the first journal line of the service containing text, written after since."""
    lines = host.check_output("journalctl -u gpufabric-cooling --no-pager -o short-unix --since=@%d" % int(since)).splitlines()
    for line in lines:
        stamp, rest = (line.split(" ", 1) + [""])[:2]
        if text in rest and float(stamp) >= since:
            return float(stamp)
    return None


def duty_to_pwm(duty):
    return round(duty * 255 / 100)


def test_service_runs_with_a_protected_config(host):
    service = host.service("gpufabric-cooling")
    assert service.is_running and service.is_enabled
    config = host.file("/etc/gpufabric-cooling/config.json")
    assert config.mode == 0o640
    password = host.file("/etc/gpufabric-cooling/ipmi.pass")
    assert password.mode == 0o600 and password.content_string.strip() == ENDPOINT["password"]
    assert ENDPOINT["password"] not in config.content_string
    assert json.loads(config.content_string)["bmc"]["ipmi"]["password_file"] == "/etc/gpufabric-cooling/ipmi.pass"
    assert host.run("/usr/local/sbin/gpufabric-cooling check-config").rc == 0


def test_bad_curves_and_a_missing_zone_fail_before_any_change_naming_the_variables(host):
    before = host.file("/etc/gpufabric-cooling/config.json").sha256sum
    bad = {
        "cooling_zones": {
            "cpu": {"sensors": [{"backend": "ipmi", "selector": "CPU Temp"}], "min_duty": 20,
                    "curve": [{"temp": 40, "duty": 20}, {"temp": 60, "duty": 120}]},
            "gpu": {"sensors": [{"backend": "redfish", "selector": "GPU Baseboard Inlet"}], "min_duty": 20,
                    "curve": [{"temp": 25, "duty": 60}, {"temp": 45, "duty": 30}]},
        },
        "cooling_fan_groups": {"chassis": {"backend": "hwmon", "target": "labfan/pwm1", "zones": ["cpu", "gpu", "inlet"]}},
    }
    project = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
    env = dict(os.environ, ANSIBLE_CONFIG=str(LAB.parent / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH="%s/.build/collections:%s/.venv/lib/python3.11/site-packages" % (project, project))
    run = subprocess.run(
        [str(project / ".venv/bin/ansible-playbook"), "-i", str(LAB.parent / "inventory"), "-e", json.dumps(bad),
         str(Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"]) / "converge.yml")],
        capture_output=True, text=True, env=env, check=False, timeout=600,
    )
    output = " ".join((run.stdout + run.stderr).split())
    assert run.returncode != 0
    assert "The cooling policy is not usable, nothing was changed" in output
    assert "cooling_zones.cpu.curve[1].duty: 120 is outside 0-100 %" in output
    assert "cooling_zones.gpu.curve[1].duty: duties must not decrease as temperature rises (30 after 60)" in output
    assert "cooling_fan_groups.chassis.zones: zone 'inlet' is not defined in cooling_zones (defined: cpu, gpu)" in output
    assert "changed=0" in output
    assert host.file("/etc/gpufabric-cooling/config.json").sha256sum == before
    assert host.service("gpufabric-cooling").is_running


def test_duty_written_follows_the_curve_as_the_bmc_temperature_changes(host):
    set_cpu_temp(45)
    # cpu 45 C (IPMI) -> 27.5 %, gpu inlet 31 C (Redfish ThermalMetrics) -> 32 %: the group takes the higher.
    assert wait_for(lambda: pwm(host) == duty_to_pwm(32)), pwm(host)
    assert host.file("/srv/gpufabric-lab/hwmon/hwmon3/pwm1_enable").content_string.strip() == "1"
    set_cpu_temp(70)
    assert wait_for(lambda: pwm(host) == duty_to_pwm(75)), pwm(host)  # 50 + 10/20 * 50
    set_cpu_temp(78)
    assert wait_for(lambda: pwm(host) == duty_to_pwm(95)), pwm(host)
    metrics = host.file(METRICS).content_string
    assert 'gpufabric_cooling_temperature_celsius{zone="cpu",backend="ipmi",sensor="CPU Temp"} 78' in metrics
    assert 'gpufabric_cooling_temperature_celsius{zone="gpu",backend="redfish",sensor="GPU Baseboard Inlet"} 31' in metrics
    assert 'gpufabric_cooling_fan_duty_percent{group="chassis"} 95' in metrics
    assert 'gpufabric_cooling_failsafe{group="chassis"} 0' in metrics
    set_cpu_temp(45)
    # Falling past the hysteresis band: back to the Redfish zone's 32 %.
    assert wait_for(lambda: pwm(host) == duty_to_pwm(32)), pwm(host)


def test_raw_command_refused_by_the_bmc_is_logged_and_fails_safe(host):
    text = host.check_output("journalctl -u gpufabric-cooling --no-pager -o cat")
    assert "BMC refused ipmitool raw 0x30 0x45 0x01 0x01: completion code 0xc1 (Invalid command)" in text
    assert "fan group bmc: hand-back to the BMC refused too" in text
    metrics = host.file(METRICS).content_string
    assert 'gpufabric_cooling_failsafe{group="bmc"} 1' in metrics
    assert host.service("gpufabric-cooling").is_running
    assert "Traceback" not in text


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


def test_stopping_the_bmc_drives_full_duty_within_the_stale_age(host):
    assert wait_for(lambda: pwm(host) < 255)
    stopped = time.time()
    subprocess.run(["start-stop-daemon", "--stop", "--quiet", "--retry", "5", "--pidfile", str(LAB / "ipmi_sim.pid")], check=True)
    assert wait_for(lambda: pwm(host) == 255, step=0.1), pwm(host)
    # The pwm file is written just before the service logs the fail-safe; the container shares the host's clock.
    reacted = wait_for(lambda: first_log_time(host, "fan group chassis: FAIL-SAFE 100 %: sensor ipmi:CPU Temp unreadable", stopped - 1))
    assert reacted is not None
    # Worst case: the cycle that just started reads a live BMC, the next one waits an interval and times out (~2 s).
    assert reacted - stopped <= STALE_AFTER + INTERVAL, reacted - stopped


def test_bmc_back_leaves_fail_safe(host):
    subprocess.run(
        ["start-stop-daemon", "--start", "--background", "--make-pidfile", "--pidfile", str(LAB / "ipmi_sim.pid"),
         "--exec", "/usr/bin/ipmi_sim", "--", "-n", "-c", str(LAB / "lan.conf"), "-f", str(LAB / "bmc.emu"), "-s", str(LAB / "state")],
        check=True,
    )
    assert wait_for(lambda: pwm(host) == duty_to_pwm(32)), pwm(host)
    assert "sensors readable again, leaving fail-safe" in host.check_output("journalctl -u gpufabric-cooling --no-pager -o cat")


def test_stopping_the_service_sets_full_duty(host):
    assert pwm(host) < 255
    host.run_expect([0], "systemctl stop gpufabric-cooling")
    try:
        assert pwm(host) == 255
        assert "service stopping: fan group chassis set to 100 %" in host.check_output("journalctl -u gpufabric-cooling --no-pager -o cat")
    finally:
        host.run_expect([0], "systemctl start gpufabric-cooling")
    assert wait_for(lambda: pwm(host) == duty_to_pwm(32))


# -- the stop path under faults (issue 14): every reachable fan to full duty whatever else fails ------------------
CONFIG = "/etc/gpufabric-cooling/config.json"
RECORD = "/var/lib/gpufabric-cooling/failsafe.record"
STOP_ACTION = "/usr/local/sbin/gpufabric-cooling stop-action %s --failsafe-record %s --reason fault-test" % (CONFIG, RECORD)


def leave_fans_low(host):
    """Where a controller killed mid-cycle leaves the fans: 77/255 (seen on a real host), firmware mode."""
    host.run_expect([0], "echo 77 > %s && echo 2 > %s_enable" % (PWM, PWM))
    assert pwm(host) == 77


def stopped_service(host):
    host.run_expect([0], "systemctl stop gpufabric-cooling")
    assert host.file(RECORD).exists and host.file(RECORD).mode == 0o600
    leave_fans_low(host)


def restart_service(host):
    host.run_expect([0], "systemctl reset-failed gpufabric-cooling; systemctl restart gpufabric-cooling")
    assert wait_for(lambda: host.service("gpufabric-cooling").is_running and pwm(host) < 255)


def assert_full_after_stop_action(host, expected_log):
    result = host.run(STOP_ACTION)
    assert pwm(host) == 255, result.stderr
    assert host.file(PWM + "_enable").content_string.strip() == "1"
    # Non-zero only after the fans: something did fail (at least the BMC group ipmi_sim refuses).
    assert result.rc == 1, result.stderr
    assert expected_log in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    return result


def test_stop_path_without_a_config_file_drives_full_duty(host):
    stopped_service(host)
    host.run_expect([0], "mv %s %s.saved" % (CONFIG, CONFIG))
    try:
        assert_full_after_stop_action(host, "configuration %s unusable (FileNotFoundError" % CONFIG)
        assert "fail-safe record: fan group chassis set to 100 %" in host.run(STOP_ACTION).stderr
    finally:
        host.run_expect([0], "mv %s.saved %s" % (CONFIG, CONFIG))
    restart_service(host)


def test_killed_service_without_a_config_file_is_driven_full_by_execstoppost(host):
    """The real unit: SIGKILL, no configuration left; ExecStopPost runs stop-action from the record."""
    assert wait_for(lambda: pwm(host) < 255)
    host.run_expect([0], "mv %s %s.saved" % (CONFIG, CONFIG))
    killed = time.time()
    try:
        host.run_expect([0], "systemctl kill --signal=SIGKILL gpufabric-cooling")
        assert wait_for(lambda: pwm(host) == 255, step=0.1), pwm(host)
        assert wait_for(lambda: "ExecStopPost, service result signal: fan group chassis" in journal(host, killed - 1)
                        or "fail-safe record: fan group chassis set to 100 %" in journal(host, killed - 1))
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


class GarbageBMC:
    """Takes the Redfish BMC's address and port and answers every request with bytes that are not HTTP."""

    def __init__(self, address, port):
        import socket
        import threading

        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((address, port))
        self.sock.listen(8)
        self.requests = 0
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                connection, unused = self.sock.accept()
            except OSError:
                return
            with connection:
                connection.settimeout(5)
                try:
                    connection.recv(65536)
                    connection.sendall(b"\x00\xffBMC firmware update in progress\r\n\r\n")
                except OSError:
                    pass
                self.requests += 1

    def close(self):
        import socket

        # close() alone does not wake the thread blocked in accept(), which keeps the port listening (and the real
        # BMC emulator then cannot bind it): shut the socket down first.
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(10)


def start_sushy():
    project = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
    python = project / ".venv/bin/python3"
    subprocess.run(["start-stop-daemon", "--start", "--background", "--make-pidfile", "--pidfile", str(LAB / "sushy.pid"),
                    "--exec", str(python), "--", str(project / ".venv/bin/sushy-static"), "-m", str(LAB / "redfish-mockup"),
                    "-i", ENDPOINT["address"], "-p", str(ENDPOINT["redfish_port"])], check=True)
    assert wait_for(lambda: _answers(ENDPOINT["address"], ENDPOINT["redfish_port"])), "sushy-static did not start"


def _answers(address, port):
    import socket

    try:
        with socket.create_connection((address, port), timeout=1):
            return True
    except OSError:
        return False


def test_stop_path_with_a_bmc_returning_garbage_drives_full_duty(host):
    stopped_service(host)
    subprocess.run(["start-stop-daemon", "--stop", "--quiet", "--retry", "5", "--pidfile", str(LAB / "sushy.pid")], check=True)
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
    subprocess.run(["start-stop-daemon", "--stop", "--quiet", "--retry", "5", "--pidfile", str(LAB / "ipmi_sim.pid")], check=True)
    try:
        started = time.monotonic()
        assert_full_after_stop_action(host, "fan group bmc")
        assert time.monotonic() - started < SLOW
        state = subprocess.run(["start-stop-daemon", "--status", "--pidfile", str(LAB / "ipmi_sim.pid")], check=False)
        assert state.returncode != 0  # the BMC really was down during the stop
    finally:
        subprocess.run(
            ["start-stop-daemon", "--start", "--background", "--make-pidfile", "--pidfile", str(LAB / "ipmi_sim.pid"),
             "--exec", "/usr/bin/ipmi_sim", "--", "-n", "-c", str(LAB / "lan.conf"), "-f", str(LAB / "bmc.emu"), "-s", str(LAB / "state")],
            check=True,
        )
    restart_service(host)


def test_verify_checks_the_action_commands(host):
    host.run_expect([0], "/usr/local/sbin/gpufabric-cooling check-actions %s" % CONFIG)


def run_converge(extra_vars, tags):
    project = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
    env = dict(os.environ, ANSIBLE_CONFIG=str(LAB.parent / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH="%s/.build/collections:%s/.venv/lib/python3.11/site-packages" % (project, project))
    command = [str(project / ".venv/bin/ansible-playbook"), "-i", str(LAB.parent / "inventory"), "--tags", tags,
               str(Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"]) / "converge.yml")]
    if extra_vars:
        command[1:1] = ["-e", json.dumps(extra_vars)]
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False, timeout=600)


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
