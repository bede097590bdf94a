"""gpufabric-cooling as a service in each lab node (Debian 12 and Debian 13), against ipmi_sim and sushy-static
running on the Molecule host.

What depends on the node's release runs here on both nodes: the service under its systemd and Python, the curve
followed, the fail-safe when the BMC stops, the stop paths systemd drives (stop, SIGKILL with ExecStopPost). What
runs the same code whatever the release (the controller-side input check, the other stop-path faults, the leak
action, the password file) runs once, in test_cooling_once.py. The tests change the BMC's simulated temperature and
Redfish resources on the host, and read what the service wrote in the node: the pwm file, its journal, its metrics.
Order matters: later tests stop the BMC and the service, and put them back.
"""

import json
import time

from cooling_lab import (
    CONFIG, ENDPOINT, INTERVAL, METRICS, PWM, STALE_AFTER, duty_to_pwm, first_log_time, journal, pwm,
    restart_service, set_cpu_temp, start_ipmi_sim, stop_daemon, wait_for,
)

# podman exec per check (why: tests/molecule_helpers.py)
testinfra_hosts = ["podman://cooling-node1", "podman://cooling-node2"]


def test_service_runs_with_a_protected_config(host):
    service = host.service("gpufabric-cooling")
    assert service.is_running and service.is_enabled
    config = host.file(CONFIG)
    assert config.mode == 0o640
    password = host.file("/etc/gpufabric-cooling/ipmi.pass")
    assert password.mode == 0o600 and password.content_string.strip() == ENDPOINT["password"]
    assert ENDPOINT["password"] not in config.content_string
    assert json.loads(config.content_string)["bmc"]["ipmi"]["password_file"] == "/etc/gpufabric-cooling/ipmi.pass"
    assert host.run("/usr/local/sbin/gpufabric-cooling check-config").rc == 0


def test_duty_written_follows_the_curve_as_the_bmc_temperature_changes(host):
    set_cpu_temp(45)
    # cpu 45 C (IPMI) -> 27.5 %, gpu inlet 31 C (Redfish ThermalMetrics) -> 32 %: the group takes the higher.
    assert wait_for(lambda: pwm(host) == duty_to_pwm(32)), pwm(host)
    assert host.file(PWM + "_enable").content_string.strip() == "1"
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


def test_stopping_the_bmc_drives_full_duty_within_the_stale_age(host):
    assert wait_for(lambda: pwm(host) < 255)
    asked = time.time()
    stop_daemon("ipmi_sim")
    # The deadline counts from the BMC gone: start-stop-daemon returns once ipmi_sim has exited, which takes its own
    # time on a loaded machine, while the BMC still answers.
    stopped = time.time()
    assert wait_for(lambda: pwm(host) == 255, step=0.1), pwm(host)
    # The pwm file is written just before the service logs the fail-safe; the container shares the host's clock.
    reacted = wait_for(lambda: first_log_time(host, "fan group chassis: FAIL-SAFE 100 %: sensor ipmi:CPU Temp unreadable", asked - 1))
    assert reacted is not None
    # Worst case: the cycle that just started reads a live BMC, the next one waits an interval and times out (~2 s).
    assert reacted - stopped <= STALE_AFTER + INTERVAL, (reacted - stopped, stopped - asked)


def test_bmc_back_leaves_fail_safe(host):
    start_ipmi_sim()
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


def test_verify_checks_the_action_commands(host):
    host.run_expect([0], "/usr/local/sbin/gpufabric-cooling check-actions %s" % CONFIG)
