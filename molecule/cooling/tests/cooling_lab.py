"""What both cooling test modules share: the lab BMC on the Molecule host, the node's pwm file, waits, and the
converge playbook run again with other variables."""

import json
import os
import socket
import subprocess
import time
from pathlib import Path

LAB = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "cooling-bmc"
ENDPOINT = json.loads((LAB / "endpoint.json").read_text())
PWM = "/srv/gpufabric-lab/hwmon/hwmon3/pwm1"
METRICS = "/var/lib/prometheus/node-exporter/gpufabric_cooling.prom"
CONFIG = "/etc/gpufabric-cooling/config.json"
RECORD = "/var/lib/gpufabric-cooling/failsafe.record"
STOP_ACTION = "/usr/local/sbin/gpufabric-cooling stop-action %s --failsafe-record %s --reason fault-test" % (CONFIG, RECORD)
STALE_AFTER = 4.0
INTERVAL = 1.0
# The Molecule host is shared and often loaded: every check through the podman connection can take seconds.
# Waits are generous; how fast the service reacted is measured from its own journal timestamps instead.
SLOW = 90


def pwm(host):
    # The lab's pwm file is a plain file that the service truncates and rewrites: a read can fall in between.
    for unused in range(20):
        text = host.file(PWM).content_string.strip()
        if text:
            return int(text)
        time.sleep(0.05)
    return int(text)


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


def stop_daemon(name):
    """Stop the lab's ipmi_sim or sushy-static on the Molecule host by its pid file."""
    subprocess.run(["start-stop-daemon", "--stop", "--quiet", "--retry", "5", "--pidfile", str(LAB / ("%s.pid" % name))],
                   check=True)


def start_ipmi_sim():
    subprocess.run(
        ["start-stop-daemon", "--start", "--background", "--make-pidfile", "--pidfile", str(LAB / "ipmi_sim.pid"),
         "--exec", "/usr/bin/ipmi_sim", "--", "-n", "-c", str(LAB / "lan.conf"), "-f", str(LAB / "bmc.emu"), "-s", str(LAB / "state")],
        check=True,
    )


def start_sushy():
    project = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
    python = project / ".venv/bin/python3"
    subprocess.run(["start-stop-daemon", "--start", "--background", "--make-pidfile", "--pidfile", str(LAB / "sushy.pid"),
                    "--exec", str(python), "--", str(project / ".venv/bin/sushy-static"), "-m", str(LAB / "redfish-mockup"),
                    "-i", ENDPOINT["address"], "-p", str(ENDPOINT["redfish_port"])], check=True)
    assert wait_for(lambda: _answers(ENDPOINT["address"], ENDPOINT["redfish_port"])), "sushy-static did not start"


def _answers(address, port):
    try:
        with socket.create_connection((address, port), timeout=1):
            return True
    except OSError:
        return False


# -- the stop path under faults (issue 14): every reachable fan to full duty whatever else fails ------------------
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


def run_converge(extra_vars=None, tags=None):
    """The scenario's converge.yml again, on every node, with extra variables and only the given tags."""
    project = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
    env = dict(os.environ, ANSIBLE_CONFIG=str(LAB.parent / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH="%s/.build/collections:%s/.venv/lib/python3.11/site-packages" % (project, project))
    command = [str(project / ".venv/bin/ansible-playbook"), "-i", str(LAB.parent / "inventory")]
    if extra_vars:
        command += ["-e", json.dumps(extra_vars)]
    if tags:
        command += ["--tags", tags]
    command.append(str(Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"]) / "converge.yml"))
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False, timeout=600)
