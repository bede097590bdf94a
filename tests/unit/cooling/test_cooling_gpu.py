"""GPU power policy planning (persistence mode, power limit, application clocks) per GPU model.

No GPU runs here. The query is tested on a real capture of it from one H200 (tests/fixtures/nvidia_smi_query);
the several-GPU rows below follow that capture's csv,noheader,nounits format (values "Enabled"/"Disabled", watts
and MHz as numbers) with other models and values, and "[N/A]" where a GPU has no value.
"""

import pytest
from fixture_data import read_fixture

from ansible_collections.gpufabric.core.plugins.module_utils.cooling.gpu import (
    QUERY_FIELDS,
    model_policy_problems,
    parse_gpu_query,
    plan_gpu_policy,
    revert_args,
)
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError

H100 = "NVIDIA H100 80GB HBM3"
QUERY = (
    "0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, Disabled, 700.00, 200.00, 700.00, 2619, 1980\n"
    "1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, Enabled, 600.00, 200.00, 700.00, 2619, 1755\n"
    "2, NVIDIA A100-SXM4-80GB, 00000000:3A:00.0, Enabled, 400.00, 100.00, 400.00, [N/A], [N/A]\n"
)


def test_query_rows():
    rows = parse_gpu_query(QUERY)
    assert len(rows) == 3 and set(rows[0]) == set(QUERY_FIELDS)
    assert rows[0]["persistence_mode"] == "Disabled" and rows[0]["power.limit"] == 700.0
    assert rows[2]["clocks.applications.memory"] is None


H200_QUERY = "nvidia_smi_query/device-h200-vm-cooling-policy.txt"


def test_query_of_a_real_h200():
    assert parse_gpu_query(read_fixture(H200_QUERY)) == [{
        "index": 0.0, "name": "NVIDIA H200", "pci.bus_id": "00000000:00:06.0", "persistence_mode": "Enabled",
        "power.limit": 700.0, "power.min_limit": 200.0, "power.max_limit": 700.0,
        "clocks.applications.memory": 3201.0, "clocks.applications.graphics": 1980.0,
    }]


def test_plan_on_a_real_h200():
    rows = parse_gpu_query(read_fixture(H200_QUERY))
    as_it_is = {"persistence_mode": True, "power_limit_watts": 700, "application_clocks": {"memory": 3201, "graphics": 1980}}
    assert plan_gpu_policy(rows, {"NVIDIA H200": as_it_is}) == {"changes": [], "problems": [], "unmanaged": []}
    plan = plan_gpu_policy(rows, {"NVIDIA H200": {"power_limit_watts": 600}})
    assert [(c["before"], c["after"], c["args"]) for c in plan["changes"]] == [(700.0, 600.0, ["-i", "0", "-pl", "600"])]
    assert plan_gpu_policy(rows, {"NVIDIA H200": {"power_limit_watts": 150}})["problems"] == [
        "GPU 0 (NVIDIA H200): power_limit_watts 150 is outside the GPU's range 200-700 W"]
    # Policies are keyed by the exact name nvidia-smi prints: an H100 policy leaves the H200 alone.
    assert plan_gpu_policy(rows, {H100: as_it_is})["unmanaged"] == [{"index": 0, "model": "NVIDIA H200"}]


def test_plan_changes_only_what_differs():
    policy = {H100: {"persistence_mode": True, "power_limit_watts": 600, "application_clocks": {"memory": 2619, "graphics": 1980}}}
    plan = plan_gpu_policy(parse_gpu_query(QUERY), policy)
    assert plan["problems"] == []
    assert plan["unmanaged"] == [{"index": 2, "model": "NVIDIA A100-SXM4-80GB"}]
    assert [(c["index"], c["setting"], c["args"]) for c in plan["changes"]] == [
        (0, "persistence_mode", ["-i", "0", "-pm", "1"]),
        (0, "power_limit_watts", ["-i", "0", "-pl", "600"]),
        (1, "application_clocks", ["-i", "1", "-ac", "2619,1980"]),
    ]
    assert revert_args(plan["changes"][1]) == ["-i", "0", "-pl", "700"]
    assert revert_args(plan["changes"][2]) == ["-i", "1", "-ac", "2619,1755"]
    assert revert_args(plan["changes"][0]) == ["-i", "0", "-pm", "0"]


def test_second_run_plans_nothing():
    applied = QUERY.replace("Disabled, 700.00", "Enabled, 600.00").replace("2619, 1755", "2619, 1980")
    policy = {H100: {"persistence_mode": True, "power_limit_watts": 600, "application_clocks": {"memory": 2619, "graphics": 1980}}}
    plan = plan_gpu_policy(parse_gpu_query(applied), policy)
    assert plan["changes"] == [] and plan["problems"] == []


def test_impossible_requests_are_problems_before_any_change():
    plan = plan_gpu_policy(parse_gpu_query(QUERY), {
        H100: {"power_limit_watts": 800},
        "NVIDIA A100-SXM4-80GB": {"application_clocks": {"memory": 1593, "graphics": 1410}},
    })
    assert plan["problems"] == [
        "GPU 0 (NVIDIA H100 80GB HBM3): power_limit_watts 800 is outside the GPU's range 200-700 W",
        "GPU 1 (NVIDIA H100 80GB HBM3): power_limit_watts 800 is outside the GPU's range 200-700 W",
        "GPU 2 (NVIDIA A100-SXM4-80GB): the GPU reports no application clocks, so none can be set",
    ]


@pytest.mark.parametrize(
    "models, expected",
    [
        ({H100: {"persistence_mode": "yes"}}, "models['NVIDIA H100 80GB HBM3'].persistence_mode: must be true or false, got 'yes'"),
        ({H100: {"power_limit_watts": -5}}, "models['NVIDIA H100 80GB HBM3'].power_limit_watts: must be a positive number of watts, got -5"),
        ({H100: {"application_clocks": {"memory": 2619}}},
         "models['NVIDIA H100 80GB HBM3'].application_clocks: must be {memory: MHz, graphics: MHz}, got {'memory': 2619}"),
        ({H100: {"clocks": 1}}, "models['NVIDIA H100 80GB HBM3']: unknown settings clocks (known: persistence_mode, power_limit_watts, application_clocks)"),
    ],
)
def test_model_policy_problems(models, expected):
    assert model_policy_problems(models) == [expected]


def test_no_devices_message_is_a_parse_error():
    with pytest.raises(ParseError, match="line 1 has 1 values for 9 fields"):
        parse_gpu_query("No devices were found\n")
