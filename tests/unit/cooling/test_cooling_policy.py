"""Whole-policy validation and the cooling_policy_problems filter: bad input is named before hosts change."""

import copy
from pathlib import Path

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.core.plugins.filter.cooling_policy_problems import FilterModule
from ansible_collections.gpufabric.core.plugins.module_utils.cooling.policy import policy_problems

ROLE = Path(__file__).resolve().parents[3] / "roles" / "cooling"
VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())

GOOD = {
    "interval": 2,
    "stale_after": 6,
    "on_stop": "full",
    "bmc": {"ipmi": {"host": "192.0.2.10", "interface": "lanplus"}, "redfish": {"base_url": "https://192.0.2.10"}},
    "ipmi_profile": VARS["__cooling_ipmi_profiles"]["supermicro"],
    "zones": {
        "cpu": {"sensors": [{"backend": "ipmi", "selector": "CPU Temp"}], "min_duty": 20, "hysteresis": 2,
                "curve": [{"temp": 40, "duty": 20}, {"temp": 80, "duty": 100}], "critical_temp": 85},
        "gpu": {"sensors": [{"backend": "nvml", "selector": "max"}], "min_duty": 30,
                "curve": [{"temp": 50, "duty": 30}, {"temp": 85, "duty": 100}], "critical_temp": 88},
    },
    "fan_groups": {
        "system": {"backend": "ipmi_raw", "target": "system", "zones": ["cpu", "gpu"]},
        "peripheral": {"backend": "ipmi_raw", "target": "peripheral", "zones": ["gpu"], "max_step_down": 5},
    },
    "liquid": {"cdus": {"1": {"supply_temp_max": 35, "flow_min_lpm": 40, "action": "power_limit"}},
               "leak_action": "shutdown", "power_limit_watts": 450},
}


def problems_after(change):
    policy = copy.deepcopy(GOOD)
    change(policy)
    return policy_problems(policy, "cooling_")


def test_the_good_policy_and_every_shipped_profile_are_accepted():
    assert policy_problems(GOOD, "cooling_") == []
    for name, profile in VARS["__cooling_ipmi_profiles"].items():
        assert policy_problems(dict(GOOD, ipmi_profile=profile, fan_groups={"all": {
            "backend": "ipmi_raw", "target": sorted(profile["zones"])[0], "zones": ["cpu", "gpu"]}})) == [], name


def test_non_monotone_curve_names_the_point():
    found = problems_after(lambda p: p["zones"]["gpu"]["curve"].insert(1, {"temp": 60, "duty": 20}))
    assert found == ["cooling_zones.gpu.curve[1].duty: 20 is below the zone's min_duty 30",
                     "cooling_zones.gpu.curve[1].duty: duties must not decrease as temperature rises (20 after 30)"]


def test_duty_over_100_names_the_point():
    found = problems_after(lambda p: p["zones"]["cpu"]["curve"].__setitem__(1, {"temp": 80, "duty": 120}))
    assert found == ["cooling_zones.cpu.curve[1].duty: 120 is outside 0-100 %"]


def test_missing_zone_names_the_group_and_lists_the_zones():
    found = problems_after(lambda p: p["fan_groups"]["peripheral"].__setitem__("zones", ["inlet"]))
    assert "cooling_fan_groups.peripheral.zones: zone 'inlet' is not defined in cooling_zones (defined: cpu, gpu)" in found


def test_zone_used_by_no_group_and_empty_zones():
    assert problems_after(lambda p: p["zones"].__setitem__("inlet", copy.deepcopy(p["zones"]["cpu"]))) == [
        "cooling_zones.inlet: no fan group uses this zone, so its temperature would cool nothing"]
    found = problems_after(lambda p: p.__setitem__("zones", {}))
    assert found[0] == "cooling_zones: define at least one zone (cpu, gpu, inlet ...) with sensors and a curve"


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda p: p.__setitem__("stale_after", 3), "cooling_stale_after: must be at least twice cooling_interval, got 3"),
        (lambda p: p.__setitem__("interval", 0), "cooling_interval: must be 0.5-60 seconds, got 0"),
        (lambda p: p.__setitem__("on_stop", "off"), "cooling_on_stop: must be one of full, bmc, got 'off'"),
        (lambda p: p["zones"]["cpu"]["sensors"][0].__setitem__("backend", "snmp"),
         "cooling_zones.cpu.sensors[0].backend: must be one of ipmi, redfish, hwmon, nvml, nvidia_smi, got 'snmp'"),
        (lambda p: p["fan_groups"]["system"].__setitem__("target", "cpu"),
         "cooling_fan_groups.system.target: 'cpu' is not a fan zone of the supermicro profile (zones: peripheral, system)"),
        (lambda p: p["bmc"].pop("ipmi"), "cooling_zones.cpu: sensor backend ipmi needs cooling_bmc.ipmi"),
        (lambda p: p["liquid"].pop("power_limit_watts"), "cooling_liquid.power_limit_watts: action power_limit needs the per-GPU limit in watts"),
        (lambda p: p["liquid"]["cdus"]["1"].__setitem__("action", "pray"),
         "cooling_liquid.cdus.1.action: must be one of alert, power_limit, shutdown, got 'pray'"),
        (lambda p: p["ipmi_profile"].__setitem__("set_duty", ["0x30", "0x70"]), "cooling_ipmi_profile.set_duty: must contain the placeholder {duty}"),
        (lambda p: p["bmc"]["redfish"].__setitem__("base_url", "bmc01"),
         "cooling_bmc.redfish.base_url: must be the BMC's https://HOST[:PORT] (no path, user or query), got 'bmc01'"),
        (lambda p: p["zones"].__setitem__("GPU-A", p["zones"].pop("gpu")),
         "cooling_zones: zone names are lower-case identifiers (they become metric labels), got 'GPU-A'"),
    ],
)
def test_each_problem_names_its_variable(change, expected):
    assert expected in problems_after(change)


def test_filter_returns_the_same_sentences_and_checks_its_argument():
    policy_filter = FilterModule().filters()["cooling_policy_problems"]
    bad = copy.deepcopy(GOOD)
    bad["zones"]["cpu"]["curve"][1]["duty"] = 120
    assert policy_filter(bad, prefix="cooling_") == ["cooling_zones.cpu.curve[1].duty: 120 is outside 0-100 %"]
    assert policy_filter(GOOD) == []
    with pytest.raises(AnsibleFilterError, match="prefix must be a string"):
        policy_filter(GOOD, prefix=3)
    assert policy_filter("nonsense") == ["the cooling policy must be a mapping, got str"]


def _set(path, value):
    """A change that sets GOOD[path...] = value."""
    def change(policy):
        target = policy
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


# Values that pass a type check but are wrong (issue 14): each must be refused, naming the variable.
@pytest.mark.parametrize(
    "change, expected",
    [
        (_set(["bmc", "ipmi", "timeout"], "5s"),
         "cooling_bmc.ipmi.timeout: must be whole seconds, an integer 1-60 (ipmitool -N takes no fraction and no "
         "unit: 5, not \"5s\" or 2.5), got '5s'"),
        (_set(["bmc", "ipmi", "timeout"], 2.5), "cooling_bmc.ipmi.timeout: must be whole seconds, an integer 1-60"),
        (_set(["bmc", "ipmi", "timeout"], "5"), "cooling_bmc.ipmi.timeout: must be whole seconds, an integer 1-60"),
        (_set(["bmc", "redfish", "timeout"], "5s"), "cooling_bmc.redfish.timeout: must be seconds"),
        (_set(["bmc", "ipmi", "timeout"], 0), "cooling_bmc.ipmi.timeout: must be whole seconds"),
        (_set(["bmc", "ipmi", "port"], 70000), "cooling_bmc.ipmi.port: must be a UDP port, an integer 1-65535, got 70000"),
        (_set(["bmc", "ipmi", "port"], "623"), "cooling_bmc.ipmi.port: must be a UDP port, an integer 1-65535, got '623'"),
        (_set(["bmc", "ipmi", "retries"], -1), "cooling_bmc.ipmi.retries: must be an integer 0-10, got -1"),
        (_set(["bmc", "ipmi", "cipher_suite"], 18), "cooling_bmc.ipmi.cipher_suite: must be an IPMI cipher suite id"),
        (_set(["bmc", "ipmi", "cipher_suite"], True), "cooling_bmc.ipmi.cipher_suite: must be an IPMI cipher suite id"),
        (_set(["bmc", "ipmi", "host"], "192.0.2.10\n-P x"), "cooling_bmc.ipmi.host: interface lanplus needs the BMC's address"),
        (_set(["fan_groups", "system", "min_duty"], 150), "cooling_fan_groups.system.min_duty: must be a number 0-100 (%), got 150"),
        (_set(["fan_groups", "system", "max_duty"], 150), "cooling_fan_groups.system.max_duty: not supported"),
        (_set(["fan_groups", "system", "max_step_up"], 400), "cooling_fan_groups.system.max_step_up: must be a percentage per cycle"),
        (lambda p: p["zones"]["cpu"].pop("critical_temp"), "cooling_zones.cpu.critical_temp: every zone needs the temperature"),
        # A flat 35 % curve to 150 C was accepted: it never reaches 100 %.
        (lambda p: p["zones"]["cpu"].update(min_duty=20, curve=[{"temp": 20, "duty": 35}, {"temp": 150, "duty": 35}]),
         "cooling_zones.cpu.curve: must reach 100 % duty at or below critical_temp 85 C (it never reaches 100 %)"),
        (_set(["zones", "cpu", "critical_temp"], 70),
         "cooling_zones.cpu.curve: must reach 100 % duty at or below critical_temp 70 C (first 100 % point at 80 C)"),
        (_set(["liquid", "alert_command"], "/usr/local/bin/page-oncall --now"), "cooling_liquid.alert_command: must be an argument list"),
        (_set(["liquid", "shutdown_command"], "systemctl poweroff"), "cooling_liquid.shutdown_command: must be an argument list"),
        (_set(["liquid", "alert_command"], ["bin/page"]), "cooling_liquid.alert_command: the program 'bin/page' must be a name found on PATH"),
        (lambda p: p["bmc"].pop("redfish"),
         "cooling_liquid: liquid-cooling monitoring reads Redfish ThermalEquipment and LeakDetection: it needs cooling_bmc.redfish"),
        (_set(["liquid", "leak_detection_uris"], ["https://198.51.100.7/redfish/v1/Leak"]),
         "cooling_liquid.leak_detection_uris: must be a list of Redfish paths"),
        (_set(["bmc", "redfish", "base_url"], "http://192.0.2.10"), "cooling_bmc.redfish.base_url: 'http://192.0.2.10' is plain http"),
        (_set(["bmc", "redfish", "base_url"], "https://192.0.2.10\n"), "cooling_bmc.redfish.base_url: must be the BMC's https://HOST[:PORT]"),
        (_set(["bmc", "redfish", "base_url"], "https://user:pw@192.0.2.10"), "cooling_bmc.redfish.base_url: must be the BMC's https://HOST[:PORT]"),
        (_set(["bmc", "redfish", "allow_insecure_http"], "yes"), "cooling_bmc.redfish.allow_insecure_http: must be true or false, got 'yes'"),
        (_set(["bmc", "redfish", "auth"], "digest"), "cooling_bmc.redfish.auth: must be one of session, basic, got 'digest'"),
        (lambda p: p["zones"].__setitem__("cpu\n", p["zones"].pop("cpu")), "cooling_zones: zone names are lower-case identifiers"),
        (_set(["zones", "cpu", "sensors", 0, "selector"], "CPU Temp\r"), "cooling_zones.cpu.sensors[0].selector: must name the sensor"),
        (_set(["gpu_mig_layout"], "all-1g.10gb --hw-check=false"), "cooling_gpu_mig_layout: must be a layout name"),
        (_set(["gpu_mig_layout"], "all-2g"), "cooling_gpu_mig_layout: 'all-2g' is not a layout under cooling_gpu_mig_config['mig-configs'] (defined: none)"),
    ],
)
def test_semantically_bad_values_are_refused_naming_the_variable(change, expected):
    found = problems_after(change)
    assert any(problem.startswith(expected) for problem in found), found


def test_insecure_http_is_accepted_only_when_asked_for():
    def lab(policy):
        policy["bmc"]["redfish"].update(base_url="http://192.0.2.10:8000", allow_insecure_http=True)
    assert problems_after(lab) == []


HWMON = {"backend": "hwmon", "zones": ["cpu", "gpu"]}


@pytest.mark.parametrize(
    "target, root, expected",
    [
        ("nct6798/pwm1", "/sys/class/hwmon", None),
        ("/sys/class/hwmon/hwmon3/pwm2", "/sys/class/hwmon", None),
        ("/sys/class/hwmon/../../../proc/sys/kernel/core_pattern", "/sys/class/hwmon", "no '..'"),
        ("/proc/sys/vm/drop_caches", "/sys/class/hwmon", "under the hwmon root"),
        ("nct6798/../../../../etc/passwd", "/sys/class/hwmon", "the file must be a pwmN file"),
        ("../hwmon3/pwm1", "/sys/class/hwmon", "the chip name"),
        ("nct6798/temp1_input", "/sys/class/hwmon", "the file must be a pwmN file"),
        ("nct6798/pwm1", "/proc", "cooling_hwmon_root: must not be under /proc"),
        ("nct6798/pwm1", "/sys/class/hwmon/../../proc", "cooling_hwmon_root: must be a normalised path"),
    ],
)
def test_hwmon_fan_targets_stay_under_the_hwmon_root(target, root, expected):
    found = problems_after(lambda p: p.update(hwmon_root=root, fan_groups={"chassis": dict(HWMON, target=target)}))
    if expected is None:
        assert found == []
    else:
        assert any(expected in problem for problem in found), found


def test_filter_checks_the_mig_layout_alone_for_the_gpu_phase():
    policy_filter = FilterModule().filters()["cooling_policy_problems"]
    config = {"version": "v1", "mig-configs": {"all-1g.10gb": [{"devices": "all", "mig-enabled": True}]}}
    assert policy_filter({"gpu_mig_layout": "all-1g.10gb", "gpu_mig_config": config}, prefix="cooling_", only="gpu_mig") == []
    assert policy_filter({"gpu_mig_layout": "", "gpu_mig_config": {}}, prefix="cooling_", only="gpu_mig") == []
    assert policy_filter({"gpu_mig_layout": "all-1g.10gb -d", "gpu_mig_config": config}, prefix="cooling_", only="gpu_mig") == [
        "cooling_gpu_mig_layout: must be a layout name (letters, digits, . _ -; not an option), got 'all-1g.10gb -d'"]
    assert policy_filter({"gpu_mig_layout": "all-1g.10gb\n", "gpu_mig_config": config}, prefix="cooling_", only="gpu_mig")
    with pytest.raises(AnsibleFilterError, match="only must be gpu_mig"):
        policy_filter(GOOD, only="zones")
