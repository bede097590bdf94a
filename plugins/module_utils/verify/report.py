# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bandwidth verification report: one dict, rendered as JSON, Prometheus text and HTML.

``build_report`` joins test results and gate verdicts; the renderers are pure functions of
that dict, so the three formats always agree. The HTML page is self-contained (inline CSS,
script and data, nothing fetched) so it can be mailed or archived as one file.
"""

from __future__ import annotations

import json
import time

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import prometheus_text
from ansible_collections.gpufabric.core.plugins.module_utils.hostio.html_pages import environment, markup

SCHEMA_VERSION = 1
_METRIC_PREFIX = "gpufabric_verify_"


def _round_spans(results):
    spans = {}
    for result in results:
        number = result.get("round")
        if number is None or result.get("started_at") is None:
            continue
        span = spans.setdefault(number, {"round": number, "pairs": [], "started_at": result["started_at"], "ended_at": result["ended_at"]})
        pair = [result["client"], result["server"]]
        if pair not in span["pairs"]:
            span["pairs"].append(pair)
        span["started_at"] = min(span["started_at"], result["started_at"])
        span["ended_at"] = max(span["ended_at"], result["ended_at"])
    return [spans[number] for number in sorted(spans)]


def _heatmap(hosts, verdicts):
    """{rail: {host: {peer: cell}}}: the value host measured against peer, and whether it passed."""
    heatmap = {}
    for host in hosts:
        for rail, rail_verdict in verdicts.get(host, {}).get("rails", {}).items():
            row = heatmap.setdefault(rail, {}).setdefault(host, {})
            for sample in rail_verdict["samples"]:
                row[sample["peer"]] = {
                    "value_gbps": sample["value_gbps"],
                    "expected_gbps": sample.get("expected_gbps"),
                    "passed": sample.get("passed"),
                    "error": sample.get("error"),
                }
    return heatmap


def build_report(results, verdicts, nccl_verdicts=None, meta=None, generated_at=None):
    """The report dict. Failures come first: every sentence a person must act on."""
    nccl_verdicts = nccl_verdicts or {}
    hosts = sorted(verdicts)
    failures = []
    for host in hosts:
        failures.extend(verdicts[host]["messages"])
    for name in sorted(nccl_verdicts):
        if nccl_verdicts[name]["status"] == "fail":
            failures.append(nccl_verdicts[name]["message"])
    statuses = [verdicts[host]["status"] for host in hosts]
    rails = sorted(set(rail for host in hosts for rail in verdicts[host]["rails"]), key=lambda rail: (not rail.isdigit(), rail.zfill(4)))
    generated_at = time.time() if generated_at is None else generated_at
    measured = results or any(verdict["status"] != "skipped" for verdict in nccl_verdicts.values())
    # A run where every host was skipped (no RDMA device, no GPU) must not read as a pass.
    verdict = "fail" if failures else "pass" if measured else "untested"
    return {
        "schema_version": SCHEMA_VERSION,
        "generated_at": generated_at,
        "generated_at_iso": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(generated_at)),
        "meta": meta or {},
        "verdict": verdict,
        "passed": verdict == "pass",
        "summary": {
            "hosts": len(hosts),
            "passed": statuses.count("pass"),
            "failed": statuses.count("fail"),
            "skipped": statuses.count("skipped"),
            "tests": len(results),
            "nccl_runs": len(nccl_verdicts),
        },
        "failures": failures,
        "hosts": dict((host, verdicts[host]) for host in hosts),
        "rails": rails,
        "heatmap": _heatmap(hosts, verdicts),
        "rounds": _round_spans(results),
        "nccl": nccl_verdicts,
        "tests": results,
    }


def render_json(report):
    return json.dumps(report, indent=2, sort_keys=True) + "\n"


# ---------------------------------------------------------------------------------------------
# Prometheus text exposition format, for node_exporter's textfile collector
# ---------------------------------------------------------------------------------------------

_METRICS = (
    ("host_pass", "1 when every rail of the host passed its bandwidth gate, 0 when one failed."),
    ("rail_bandwidth_gbps", "Measured bandwidth of a host's rail, Gbit/s (upper median over its pair tests)."),
    ("rail_expected_gbps", "Bandwidth a host's rail must reach to pass, Gbit/s."),
    ("rail_pass", "1 when the host's rail passed its bandwidth gate, 0 when it failed."),
    ("pair_bandwidth_gbps", "Bandwidth of one pair test in one direction, Gbit/s."),
    ("nccl_busbw_gbytes", "nccl-tests bus bandwidth read by the gate, GB/s."),
    ("nccl_pass", "1 when the nccl-tests run passed its bus bandwidth gate, 0 when it failed."),
    ("last_run_timestamp_seconds", "Unix time at which the verification report was generated."),
)

_DIRECTIONS = (
    ("client_to_server", "client_to_server_gbps"),
    ("server_to_client", "server_to_client_gbps"),
    ("bidirectional_sum", "aggregate_gbps"),
)


def render_prometheus(report, host=None):
    """Metrics in the text exposition format; host restricts them to one host (its textfile).

    Labels are written sorted by name, as they always were; a family without samples is left out.
    """
    exposition = prometheus_text.Exposition()
    families = dict((name, exposition.family(_METRIC_PREFIX + name, help_text)) for name, help_text in _METRICS)

    def sample(name, labels, value):
        families[name].add(dict(sorted(labels.items())), value)

    for name, verdict in report["hosts"].items():
        if host is not None and name != host:
            continue
        if verdict["status"] != "skipped":
            sample("host_pass", {"host": name}, verdict["status"] == "pass")
        for rail, rail_verdict in sorted(verdict["rails"].items()):
            labels = {"host": name, "rail": rail, "device": rail_verdict.get("device") or ""}
            sample("rail_bandwidth_gbps", labels, rail_verdict["measured_gbps"])
            sample("rail_expected_gbps", labels, rail_verdict["expected_gbps"])
            sample("rail_pass", labels, rail_verdict["passed"])
    for test in report["tests"]:
        if host is not None and host not in (test["client"], test["server"]):
            continue
        for direction, key in _DIRECTIONS:
            if test.get(key) is not None:
                labels = {
                    "client": test["client"], "server": test["server"], "rail": str(test.get("rail")), "direction": direction, "tool": test.get("tool") or "",
                }
                sample("pair_bandwidth_gbps", labels, test[key])
    for name, verdict in sorted(report["nccl"].items()):
        if host is not None and host not in verdict["hosts"]:
            continue
        labels = {"run": name, "scope": verdict.get("scope") or ""}
        if verdict["status"] != "skipped":
            sample("nccl_busbw_gbytes", labels, verdict["measured_gbytes"])
            sample("nccl_pass", labels, verdict["status"] == "pass")
    sample("last_run_timestamp_seconds", {}, round(report["generated_at"], 3))
    return exposition.render()


# ---------------------------------------------------------------------------------------------
# HTML: one self-contained page
# ---------------------------------------------------------------------------------------------

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1d1d1f; }
h1 { font-size: 1.4em; margin: 0 0 .3em; } h2 { font-size: 1.15em; margin: 1.4em 0 .4em; }
.verdict { display: inline-block; padding: .2em .7em; border-radius: 4px; font-weight: 600; color: #fff; }
.verdict.pass { background: #1a7f37; } .verdict.fail { background: #c62828; } .verdict.untested { background: #8a6d00; }
ol.failures li { color: #8e1b1b; margin: .25em 0; }
table { border-collapse: collapse; margin: .3em 0 1em; }
th, td { border: 1px solid #d0d0d0; padding: .25em .5em; text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f4f4f4; text-align: left; font-weight: 600; }
th.host-fail { background: #ffd7d7; color: #8e1b1b; }
th.host-fail::after { content: " \\2716"; }
td.self { background: #eee; }
td.cell-fail { outline: 2px solid #c62828; outline-offset: -2px; font-weight: 700; }
td.missing { color: #999; }
.legend { color: #555; font-size: .9em; }
</style>
</head>
<body data-rendered="false">
<h1>{{ title }}</h1>
<div id="summary"></div>
<h2>Failures</h2>
<div id="failures"></div>
<h2>Bandwidth heatmap per rail</h2>
<p class="legend">Row host measured against column host, Gbit/s: the slower direction of their test (half the sum for
bidirectional perftest). Colour: share of the expected value. Framed cells are below expectation; a marked row header is a
host that failed the rail.</p>
<div id="heatmaps"></div>
<h2>NCCL</h2>
<div id="nccl"></div>
<h2>Rounds</h2>
<div id="rounds"></div>
<noscript><p>This page draws its tables with JavaScript; the same data is in the JSON report beside it.</p></noscript>
<script id="report-data" type="application/json">{{ report | script_json }}</script>
<script>
"use strict";
(function () {
  var report = JSON.parse(document.getElementById("report-data").textContent);

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  // As the Python side prints: two decimals, three significant digits below 1.
  function fmt(value) {
    if (value === null || value === undefined) { return "n/a"; }
    var number = Number(value);
    return number !== 0 && Math.abs(number) < 1 ? String(Number(number.toPrecision(3))) : number.toFixed(2);
  }
  // Red below 50 % of the expectation, through yellow, to green at or above it.
  function shade(ratio) {
    var clamped = Math.max(0, Math.min(1, (ratio - 0.5) / 0.5));
    return "hsl(" + Math.round(clamped * 120) + ", 70%, 78%)";
  }

  var summary = document.getElementById("summary");
  summary.appendChild(el("span", {"class": "verdict " + report.verdict, "id": "verdict"}, report.verdict.toUpperCase()));
  var s = report.summary;
  summary.appendChild(el("p", {}, s.hosts + " hosts: " + s.passed + " passed, " + s.failed + " failed, " + s.skipped +
    " skipped; " + s.tests + " tests, " + report.rounds.length + " rounds; generated " + report.generated_at_iso +
    (report.meta.tool ? "; tool " + report.meta.tool : "") + (report.meta.mode ? ", mode " + report.meta.mode : "")));

  var failures = document.getElementById("failures");
  if (report.failures.length) {
    var list = el("ol", {"class": "failures", "id": "failure-list"});
    report.failures.forEach(function (sentence) { list.appendChild(el("li", {}, sentence)); });
    failures.appendChild(list);
  } else {
    failures.appendChild(el("p", {}, "None."));
  }

  var hosts = Object.keys(report.hosts).sort();
  var heatmaps = document.getElementById("heatmaps");
  report.rails.forEach(function (rail) {
    var rows = report.heatmap[rail] || {};
    heatmaps.appendChild(el("h3", {}, "Rail " + rail));
    var table = el("table", {"class": "heatmap", "data-rail": rail});
    var head = el("tr");
    head.appendChild(el("th", {}, "host \\\\ peer"));
    hosts.forEach(function (host) { head.appendChild(el("th", {}, host)); });
    head.appendChild(el("th", {}, "measured / expected"));
    table.appendChild(head);
    hosts.forEach(function (host) {
      var verdict = (report.hosts[host].rails || {})[rail];
      var row = el("tr", {"data-host": host});
      var name = el("th", {"scope": "row", "data-host": host}, host);
      if (verdict && !verdict.passed) { name.className = "host-fail"; row.className = "row-fail"; }
      if (verdict && verdict.message) { name.title = verdict.message; }
      row.appendChild(name);
      hosts.forEach(function (peer) {
        var cell = (rows[host] || {})[peer];
        var td;
        if (host === peer) {
          td = el("td", {"class": "self"}, "");
        } else if (!cell) {
          td = el("td", {"class": "missing"}, "-");
        } else {
          td = el("td", {"class": cell.passed ? "cell cell-pass" : "cell cell-fail", "data-host": host, "data-peer": peer},
            cell.error ? "error" : fmt(cell.value_gbps));
          if (cell.expected_gbps) { td.style.background = shade(cell.value_gbps / cell.expected_gbps); }
          td.title = cell.error || (fmt(cell.value_gbps) + " of " + fmt(cell.expected_gbps) + " Gbit/s expected");
        }
        row.appendChild(td);
      });
      row.appendChild(el("td", {}, verdict ? fmt(verdict.measured_gbps) + " / " + fmt(verdict.expected_gbps) : "-"));
      table.appendChild(row);
    });
    heatmaps.appendChild(table);
  });
  if (!report.rails.length) { heatmaps.appendChild(el("p", {}, "No bandwidth test ran.")); }

  var nccl = document.getElementById("nccl");
  var runs = Object.keys(report.nccl).sort();
  if (runs.length) {
    var ntable = el("table", {"id": "nccl-table"});
    var nhead = el("tr");
    ["run", "scope", "hosts", "bus bandwidth GB/s", "expected GB/s", "status"].forEach(function (label) { nhead.appendChild(el("th", {}, label)); });
    ntable.appendChild(nhead);
    runs.forEach(function (name) {
      var v = report.nccl[name];
      var row = el("tr", {"class": "nccl-" + v.status});
      [name, v.scope, v.hosts.join(", "), fmt(v.measured_gbytes), fmt(v.expected_gbytes), v.status].forEach(function (text) {
        row.appendChild(el("td", {}, text));
      });
      if (v.message) { row.title = v.message; }
      ntable.appendChild(row);
    });
    nccl.appendChild(ntable);
  } else {
    nccl.appendChild(el("p", {}, "No nccl-tests run."));
  }

  var rounds = document.getElementById("rounds");
  if (report.rounds.length) {
    var rtable = el("table", {"id": "rounds-table"});
    var rhead = el("tr");
    ["round", "pairs", "duration s"].forEach(function (label) { rhead.appendChild(el("th", {}, label)); });
    rtable.appendChild(rhead);
    report.rounds.forEach(function (span) {
      var row = el("tr");
      row.appendChild(el("td", {}, span.round));
      row.appendChild(el("td", {}, span.pairs.map(function (pair) { return pair.join(" \\u2192 "); }).join(", ")));
      row.appendChild(el("td", {}, (span.ended_at - span.started_at).toFixed(1)));
      rtable.appendChild(row);
    });
    rounds.appendChild(rtable);
  }
  document.body.setAttribute("data-rendered", "true");
}());
</script>
</body>
</html>
"""


def _script_json(report):
    """The report as JSON inside <script>: "</" would close the element early and "<!--" open a comment, so "<"
    is written as \\u003c (JSON allows it in strings, and outside strings JSON has no "<" at all). The result is
    markup the page prints as it is: HTML escaping would break the JSON."""
    return markup(json.dumps(report, sort_keys=True).replace("<", "\\u003c"))


_ENVIRONMENT = []


def render_html(report, title="gpufabric bandwidth verification"):
    if not _ENVIRONMENT:
        _ENVIRONMENT.append(environment({"verify.html": _PAGE}, {"script_json": _script_json}))
    return _ENVIRONMENT[0].get_template("verify.html").render(report=report, title=title)
