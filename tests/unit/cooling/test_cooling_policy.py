"""Whole-policy validation and the cooling_policy_problems filter: bad input is named before hosts change."""

import copy
from pathlib import Path

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.core.plugins.filter.cooling_policy_problems import FilterModule
from ansible_collections.gpufabric.core.plugins.module_utils.cooling_policy import policy_problems

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
        (lambda p: p["bmc"]["redfish"].__setitem__("base_url", "bmc01"), "cooling_bmc.redfish.base_url: must be the BMC's https://HOST[:PORT] (no path, user or query), got 'bmc01'"),
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
