# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU power policy per GPU model: compare nvidia-smi's state with the wanted one and plan the commands.

Pure planning; the cooling_gpu_policy module runs the query and the commands.
"""

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.cooling.sensors import parse_nvidia_smi_csv

QUERY_FIELDS = [
    "index",
    "name",
    "pci.bus_id",
    "persistence_mode",
    "power.limit",
    "power.min_limit",
    "power.max_limit",
    "clocks.applications.memory",
    "clocks.applications.graphics",
]
POLICY_KEYS = ("persistence_mode", "power_limit_watts", "application_clocks")


def parse_gpu_query(text):
    """Rows of `nvidia-smi --query-gpu=<QUERY_FIELDS> --format=csv,noheader,nounits`."""
    return parse_nvidia_smi_csv(text, QUERY_FIELDS)


def model_policy_problems(models, path="models"):
    """Problems in {model name: {persistence_mode, power_limit_watts, application_clocks: {memory, graphics}}}."""
    if not isinstance(models, dict):
        return ["%s: must map nvidia-smi GPU names to settings, got %r" % (path, models)]
    problems = []
    for model, policy in models.items():
        where = "%s[%r]" % (path, model)
        if not isinstance(policy, dict):
            problems.append("%s: must be a mapping, got %r" % (where, policy))
            continue
        unknown = sorted(set(policy) - set(POLICY_KEYS))
        if unknown:
            problems.append("%s: unknown settings %s (known: %s)" % (where, ", ".join(unknown), ", ".join(POLICY_KEYS)))
        if "persistence_mode" in policy and not isinstance(policy["persistence_mode"], bool):
            problems.append("%s.persistence_mode: must be true or false, got %r" % (where, policy["persistence_mode"]))
        limit = policy.get("power_limit_watts")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit <= 0):
            problems.append("%s.power_limit_watts: must be a positive number of watts, got %r" % (where, limit))
        clocks = policy.get("application_clocks")
        if clocks is not None and (not isinstance(clocks, dict) or set(clocks) != {"memory", "graphics"}
                                   or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in clocks.values())):
            problems.append("%s.application_clocks: must be {memory: MHz, graphics: MHz}, got %r" % (where, clocks))
    return problems


def plan_gpu_policy(rows, models):
    """Return {"changes": [...], "problems": [...], "unmanaged": [...]} for the GPUs nvidia-smi listed.

    Each change: index, model, setting, before, after, args (nvidia-smi arguments). Problems are
    requests the hardware cannot take (a power limit outside the GPU's range); nothing is changed
    when there are any.
    """
    changes, problems, unmanaged = [], [], []
    for row in rows:
        index = int(row["index"])
        model = row["name"]
        policy = models.get(model)
        if policy is None:
            unmanaged.append({"index": index, "model": model})
            continue
        where = "GPU %d (%s)" % (index, model)
        if "persistence_mode" in policy:
            before = row["persistence_mode"] == "Enabled"
            if before != policy["persistence_mode"]:
                changes.append({"index": index, "model": model, "setting": "persistence_mode", "before": before,
                                "after": policy["persistence_mode"], "args": ["-i", str(index), "-pm", "1" if policy["persistence_mode"] else "0"]})
        limit = policy.get("power_limit_watts")
        if limit is not None:
            low, high = row["power.min_limit"], row["power.max_limit"]
            if low is not None and high is not None and not low <= limit <= high:
                problems.append("%s: power_limit_watts %g is outside the GPU's range %g-%g W" % (where, limit, low, high))
            elif row["power.limit"] is None:
                problems.append("%s: the GPU does not report a power limit, so none can be set" % where)
            elif abs(row["power.limit"] - limit) >= 0.5:
                changes.append({"index": index, "model": model, "setting": "power_limit_watts", "before": row["power.limit"],
                                "after": float(limit), "args": ["-i", str(index), "-pl", "%g" % limit]})
        clocks = policy.get("application_clocks")
        if clocks is not None:
            before = {"memory": row["clocks.applications.memory"], "graphics": row["clocks.applications.graphics"]}
            if None in before.values():
                problems.append("%s: the GPU reports no application clocks, so none can be set" % where)
            elif before != {"memory": float(clocks["memory"]), "graphics": float(clocks["graphics"])}:
                changes.append({"index": index, "model": model, "setting": "application_clocks",
                                "before": {k: int(v) for k, v in before.items()}, "after": dict(clocks),
                                "args": ["-i", str(index), "-ac", "%d,%d" % (clocks["memory"], clocks["graphics"])]})
    return {"changes": changes, "problems": problems, "unmanaged": unmanaged}


def revert_args(change):
    """nvidia-smi arguments that put one planned change back to its before value."""
    index = str(change["index"])
    if change["setting"] == "persistence_mode":
        return ["-i", index, "-pm", "1" if change["before"] else "0"]
    if change["setting"] == "power_limit_watts":
        return ["-i", index, "-pl", "%g" % change["before"]]
    return ["-i", index, "-ac", "%d,%d" % (change["before"]["memory"], change["before"]["graphics"])]
