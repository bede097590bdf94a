# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pass/fail gates for bandwidth tests: per host, per rail, with a sentence for each failure.

Expected bandwidth, in order of precedence:
1. an absolute threshold set for one of the host's inventory groups (Gbit/s; when a host is
   in several such groups the highest applies, so the strictest intent wins);
2. ``percent`` of the detected port rate (90 by default, the rule NVIDIA uses for perftest),
   the port rate of a pair being that of its slower end;
3. none: the host fails, because a gate without an expectation cannot say yes.

A pair test measures both of its hosts, so one bad NIC makes all of its pairs slow and
drags its good peers down once each. A host therefore passes a rail when at least half of
its tests on that rail reach the expectation; its reported value is the upper median of its
tests. Against several peers this blames the bad host alone; with a single peer both ends
fail and the message says that either may be at fault.

Each test contributes, for each of its two hosts, the slower of the directions measured
(client to server, server to client); a bidirectional perftest run, which only reports the
sum of both directions, contributes half of that sum.
"""

from __future__ import annotations

STATUS_PASS = "pass"
STATUS_FAIL = "fail"
STATUS_SKIPPED = "skipped"


# A gate is a share of the port rate a rail must reach: below 1 % it passes a dead link, above 100 % it fails a
# perfect one.
GATE_PERCENT_MIN = 1
GATE_PERCENT_MAX = 100


class GateError(ValueError):
    """The gate settings are unusable; the message names the setting."""


def check_settings(percent, thresholds):
    if (isinstance(percent, bool) or not isinstance(percent, (int, float))
            or not GATE_PERCENT_MIN <= percent <= GATE_PERCENT_MAX):
        raise GateError("gate percent must be a number from %d to %d, got %r" % (GATE_PERCENT_MIN, GATE_PERCENT_MAX, percent))
    if not isinstance(thresholds, dict):
        raise GateError("thresholds must be a dict of group name -> value, got %s" % type(thresholds).__name__)
    for group, value in thresholds.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise GateError("threshold of group %r must be a positive number, got %r" % (group, value))


def expected_value(rate, percent, groups, thresholds, unit="Gbit/s"):
    """(expected, basis sentence) for a host in groups whose port rate is rate (None when unknown)."""
    matches = sorted((float(thresholds[group]), group) for group in groups or [] if group in thresholds)
    if matches:
        value, group = matches[-1]
        return value, "absolute threshold of group '%s'" % group
    if rate:
        return round(float(rate) * percent / 100.0, 3), "%g %% of the %g %s port rate" % (percent, float(rate), unit)
    return None, "no port rate detected and no threshold set for its groups (%s)" % (", ".join(groups or []) or "none")


def _upper_median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def _fmt(value):
    if value is None:
        return "n/a"
    # Two decimals, but three significant digits below 1 so that 0.0095 does not print as 0.01.
    return "%.3g" % value if 0 < abs(value) < 1 else "%.2f" % value


def rail_key(rail):
    return str(rail)


def host_samples(results):
    """Group test results into samples per (host, rail): each test gives one to each end."""
    samples = {}
    for result in results:
        forward = result.get("client_to_server_gbps")
        backward = result.get("server_to_client_gbps")
        aggregate = result.get("aggregate_gbps")
        error = result.get("error")
        directions = [value for value in (forward, backward) if value is not None]
        if error:
            value = 0.0
        elif directions:
            value = min(directions)
        elif aggregate is not None:
            value = aggregate / 2.0
        else:
            value, error = 0.0, "the test reported no bandwidth"
        for host, peer, device, peer_device in (
            (result["client"], result["server"], result.get("client_device"), result.get("server_device")),
            (result["server"], result["client"], result.get("server_device"), result.get("client_device")),
        ):
            samples.setdefault((host, rail_key(result.get("rail"))), []).append({
                "peer": peer,
                "device": device,
                "peer_device": peer_device,
                "value_gbps": round(value, 3),
                "rate_gbps": result.get("rate_gbps"),
                "error": error,
                "round": result.get("round"),
            })
    return samples


def failure_sentence(host, rail, device, measured, expected, basis, unit, below, total, details):
    sentence = "%s rail %s (%s): measured %s %s, expected at least %s %s (%s); %d of %d tests below" % (
        host, rail, device or "unknown device", _fmt(measured), unit, _fmt(expected), unit, basis, below, total,
    )
    if details:
        sentence += ": " + "; ".join(details)
    if total == 1:
        sentence += " (a single peer: either end may be at fault)"
    return sentence


def evaluate_bandwidth(results, host_groups, percent=90, thresholds=None, skipped=None):
    """Verdict per host and rail from pair test results.

    results: test records with client, server, rail, client_device, server_device, rate_gbps,
    client_to_server_gbps, server_to_client_gbps, aggregate_gbps, error.
    host_groups: {host: [group, ...]}; every host listed is reported, tested or not.
    skipped: {host: reason} for hosts left out of the sweep (no RDMA device, ...).
    Returns {host: {status, rails: {rail: {...}}, messages: [...]}}.
    """
    thresholds = thresholds or {}
    check_settings(percent, thresholds)
    skipped = skipped or {}
    samples = host_samples(results)
    verdicts = dict((host, {"status": STATUS_PASS, "rails": {}, "messages": []}) for host in host_groups)
    for (host, rail), entries in sorted(samples.items()):
        entries.sort(key=lambda entry: entry["peer"])
        groups = host_groups.get(host, [])
        verdict = verdicts.setdefault(host, {"status": STATUS_PASS, "rails": {}, "messages": []})
        judged = []
        for entry in entries:
            expected, basis = expected_value(entry["rate_gbps"], percent, groups, thresholds)
            entry["expected_gbps"] = expected
            entry["passed"] = expected is not None and entry["error"] is None and entry["value_gbps"] >= expected
            judged.append((entry, basis))
        passes = sum(1 for entry, _basis in judged if entry["passed"])
        measured = _upper_median([entry["value_gbps"] for entry in entries])
        expected_values = [entry["expected_gbps"] for entry in entries if entry["expected_gbps"] is not None]
        expected = _upper_median(expected_values) if expected_values else None
        basis = judged[0][1]
        device = next((entry["device"] for entry in entries if entry["device"]), None)
        passed = expected is not None and passes * 2 >= len(entries)
        rail_verdict = {
            "rail": rail,
            "device": device,
            "measured_gbps": measured,
            "expected_gbps": expected,
            "basis": basis,
            "passed": passed,
            "tests": len(entries),
            "tests_passed": passes,
            "samples": entries,
            "message": None,
        }
        if not passed:
            details = []
            for entry in entries:
                if entry["passed"]:
                    continue
                if entry["error"]:
                    details.append("with %s: error: %s" % (entry["peer"], str(entry["error"]).strip().splitlines()[-1][:200]))
                else:
                    details.append("with %s %s Gbit/s" % (entry["peer"], _fmt(entry["value_gbps"])))
            rail_verdict["message"] = failure_sentence(
                host, rail, device, measured, expected, basis, "Gbit/s", len(entries) - passes, len(entries), details
            )
            verdict["status"] = STATUS_FAIL
            verdict["messages"].append(rail_verdict["message"])
        verdict["rails"][rail] = rail_verdict
    for host, reason in skipped.items():
        verdict = verdicts.setdefault(host, {"status": STATUS_SKIPPED, "rails": {}, "messages": []})
        if not verdict["rails"]:
            verdict["status"] = STATUS_SKIPPED
            verdict["reason"] = reason
    for host, verdict in verdicts.items():
        if verdict["status"] == STATUS_PASS and not verdict["rails"]:
            verdict["status"] = STATUS_FAIL
            verdict["messages"].append("%s: no bandwidth test ran for this host; was it paired in the sweep?" % host)
    return verdicts


def nccl_busbw(parsed):
    """The bus bandwidth a gate reads from a parsed nccl-tests run: the out-of-place busbw of
    the largest message size (the plateau operators quote), else the printed average."""
    rows = [row for row in (parsed or {}).get("rows") or [] if (row.get("out_of_place") or {}).get("busbw") is not None]
    if rows:
        largest = max(rows, key=lambda row: row.get("size_bytes") or 0)
        return float(largest["out_of_place"]["busbw"]), "out-of-place busbw at %s bytes" % largest.get("size_bytes")
    average = (parsed or {}).get("avg_bus_bandwidth")
    if average is not None:
        return float(average), "average bus bandwidth"
    return None, "no bus bandwidth in the output"


def evaluate_nccl(runs, host_groups, thresholds=None):
    """Verdicts for nccl-tests runs: {name: {status, hosts, measured_gbytes, expected_gbytes, message}}.

    runs: [{name, scope, hosts: [...], busbw_gbytes, basis, error, wrong, available, reason}].
    The threshold (GB/s, nccl-tests' unit) is the highest set for any group of any host in the run.
    """
    thresholds = thresholds or {}
    check_settings(90, thresholds)
    verdicts = {}
    for run in runs:
        hosts = run.get("hosts") or []
        name = run.get("name") or ",".join(hosts)
        groups = sorted(set(group for host in hosts for group in host_groups.get(host, [])))
        expected, basis = (None, None) if run.get("available") is False else expected_value(None, 90, groups, thresholds, unit="GB/s")
        verdict = {
            "name": name,
            "scope": run.get("scope"),
            "hosts": hosts,
            "measured_gbytes": run.get("busbw_gbytes"),
            "expected_gbytes": expected,
            "basis": basis,
            "status": STATUS_PASS,
            "message": None,
        }
        label = "nccl-tests %s on %s" % (run.get("scope") or "run", ", ".join(hosts))
        if run.get("available") is False:
            verdict["status"] = STATUS_SKIPPED
            verdict["message"] = "%s skipped: %s" % (label, run.get("reason"))
        elif run.get("error"):
            verdict["status"] = STATUS_FAIL
            verdict["message"] = "%s failed: %s" % (label, run["error"])
        elif run.get("wrong"):
            verdict["status"] = STATUS_FAIL
            verdict["message"] = "%s found %s wrong results: data corruption, not a bandwidth problem" % (label, run["wrong"])
        elif expected is None or run.get("busbw_gbytes") is None or run["busbw_gbytes"] < expected:
            verdict["status"] = STATUS_FAIL
            verdict["message"] = "%s: measured %s GB/s bus bandwidth (%s), expected at least %s GB/s (%s)" % (
                label, _fmt(run.get("busbw_gbytes")), run.get("basis") or "busbw", _fmt(expected), basis,
            )
        verdicts[name] = verdict
    return verdicts
