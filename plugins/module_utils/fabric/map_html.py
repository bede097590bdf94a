# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render a fabric map (fabric_map.build_fabric_map) as one self-contained HTML page.

The page needs nothing but a browser: inline CSS, an inline SVG picture of hosts, rails and switches
(miscabled links drawn red and dashed), the findings, a host-by-rail table and the switch ports.
A fleet of thousands of hosts cannot be drawn legibly, so the picture holds at most max_hosts_drawn
hosts, those with findings first; the tables always list every host.

The markup is in the Jinja2 templates below (html_pages renders them, autoescaped); this module computes what
they show: which hosts are drawn, where, and in what colour.
"""

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.fabric.map import SEVERITIES, natural_key
from ansible_collections.gpufabric.core.plugins.module_utils.hostio.html_pages import environment, markup

# Colour per rail index (cycled), chosen to stay distinct from the red of a miscabled link.
RAIL_COLOURS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#bcbd22", "#e377c2", "#7f7f7f")
MISCABLED_COLOUR = "#d62728"
DOWN_COLOUR = "#999999"

# The picture. Coordinates come from render_svg; x positions print with one decimal, y positions as integers.
_SVG = """\
{% macro x(value) %}{{ "%.1f"|format(value) }}{% endmacro %}
<svg xmlns="http://www.w3.org/2000/svg" width="{{ "%d"|format(width) }}" height="{{ "%d"|format(height) }}" \
viewBox="0 0 {{ "%d"|format(width) }} {{ "%d"|format(height) }}" role="img" aria-label="fabric map">
<text x="{{ margin }}" y="20" font-size="12">rails:</text>
{%- for item in legend.rails -%}
<rect x="{{ item.rect_x }}" y="10" width="12" height="12" fill="{{ item.colour }}"/>\
<text x="{{ item.text_x }}" y="20" font-size="11">{{ item.rail }}</text>
{%- endfor -%}
<line x1="{{ legend.offset }}" y1="16" x2="{{ legend.offset + 30 }}" y2="16" stroke="{{ miscabled_colour }}" \
stroke-width="3" stroke-dasharray="7 4"/><text x="{{ legend.offset + 35 }}" y="20" font-size="11">miscabled</text>\
<line x1="{{ legend.offset + 110 }}" y1="16" x2="{{ legend.offset + 140 }}" y2="16" stroke="{{ down_colour }}" \
stroke-width="1.5" stroke-dasharray="2 3"/><text x="{{ legend.offset + 145 }}" y="20" font-size="11">port down</text>
{% for line in lines %}
<line x1="{{ x(line.x1) }}" y1="{{ line.y1 }}" x2="{{ x(line.x2) }}" y2="{{ line.y2 }}" stroke="{{ line.stroke }}" \
stroke-width="{{ line.width }}"{% if line.dash %} stroke-dasharray="{{ line.dash }}"{% endif %}>\
<title>{{ line.tip }}</title></line>{% if not loop.last %}{{ "\\n" }}{% endif %}
{% endfor %}

{% for switch in switches %}
<g><title>{{ switch.name }}: rails {{ switch.rails }}</title><rect x="{{ x(switch.x) }}" y="{{ switch_y }}" \
width="{{ switch_w }}" height="{{ switch_h }}" rx="5" fill="#f4f4f4" stroke="#444"/><text x="{{ x(switch.centre) }}" \
y="{{ switch_y + 24 }}" text-anchor="middle" font-size="12">{{ switch.label }}</text></g>\
{% if not loop.last or hosts %}{{ "\\n" }}{% endif %}
{% endfor %}
{% for host in hosts %}
<g><title>{{ host.name }} (group {{ host.group }}): {{ host.status }}</title><rect x="{{ x(host.x) }}" \
y="{{ host_y }}" width="{{ host_w }}" height="{{ host_h }}" rx="5" fill="{{ host.fill }}" stroke="{{ host.stroke }}" \
stroke-width="{{ host.stroke_width }}"/><text x="{{ x(host.centre) }}" y="{{ host_y + 34 }}" text-anchor="middle" \
font-size="12">{{ host.label }}</text></g>
{%- for port in host.ports %}
{{ "\\n" }}<g><title>{{ port.tip }}</title><rect x="{{ x(port.x) }}" y="{{ host_y + 4 }}" width="12" height="12" \
fill="{{ port.colour }}"/><text x="{{ x(port.x + 6) }}" y="{{ host_y + 14 }}" text-anchor="middle" font-size="9" \
fill="#fff">{{ port.rail }}</text></g>
{%- endfor %}
{% if not loop.last %}{{ "\\n" }}{% endif %}
{% endfor %}

{% if note %}<text x="{{ margin }}" y="{{ height - 15 }}" font-size="12">{{ note }}</text>{% endif %}</svg>"""

_PAGE = """\
<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title><style>
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.9em}th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;
vertical-align:top}th{background:#f4f4f4;position:sticky;top:0}
.cards{display:flex;gap:.8em;flex-wrap:wrap}.card{border:1px solid #ddd;border-radius:6px;padding:.5em 1em}
.card b{display:block;font-size:1.4em}
.error{background:#fde0e0}.warning{background:#fff3cd}.info{background:#e8f1fb}.ok{background:#e6f4ea}
.no_facts{background:#eee}td.misaligned{background:#fde0e0;font-weight:bold}td.down{background:#eee;
color:#666}td.unknown{color:#888}.picture{overflow:auto;border:1px solid #ddd;max-height:80vh}
.mono{font-family:ui-monospace,Menlo,Consolas,monospace}small{color:#666}
</style></head><body><h1>{{ title }}</h1>
{#- The summary cards #}
<div class="cards">
{%- for label, value in cards -%}
<div class="card"><b>{{ value }}</b>{{ label }}</div>
{%- endfor -%}
</div><p>Miscabled hosts: <b>{{ miscabled }}</b></p><h2>Picture</h2><div class="picture">{{ svg }}</div>
{#- Findings #}
<h2>Findings</h2><p><small>Scope <i>fleet</i>: found by comparing each host with its peer group; scope \
<i>host</i>: found by topology_facts on the host itself.</small></p>
{%- if findings %}

<table><tr><th>severity</th><th>scope</th><th>kind</th><th>host</th><th>rail</th><th>finding</th></tr>
{%- for item in findings %}
<tr class="{{ item.severity }}"><td>{{ item.severity }}</td><td>{{ item.get("scope") }}</td><td>{{ item.kind }}</td>\
<td>{{ item.host or "" }}</td><td>{{ "" if item.rail is none else item.rail }}</td><td>{{ item.message }}</td></tr>\
{% if not loop.last %}{{ "\\n" }}{% endif %}
{% endfor %}
</table>
{%- else -%}
<p>No findings.</p>
{%- endif -%}
{#- Rails per host #}
<h2>Rails per host</h2><p><small>Each cell: switch and port the rail's NIC reaches (LLDP), then RDMA device / \
netdev. Red: miscabled against the rail's peer group; grey: port down.</small></p>
<table><tr><th>host</th><th>group</th><th>rails from</th>
{%- for rail in range(rail_count) %}<th>rail {{ rail }}</th>{% endfor %}</tr>
{% for row in rail_rows %}
<tr><td class="{{ row.status }}">{{ row.host }}</td><td>{{ row.group }}</td><td>{{ row.source }}</td>
{%- for cell in row.cells -%}
{% if cell is none %}<td class="unknown"></td>{% else %}<td class="{{ cell.css }}"><span class="mono">\
{{ cell.text }}</span><br><small>{{ cell.detail }}{{ cell.extra }}</small></td>{% endif %}
{%- endfor %}</tr>{% if not loop.last %}{{ "\\n" }}{% endif %}
{% endfor %}
</table>
<h2>Switches</h2>
{%- if switches -%}
<table><tr><th>switch</th><th>rails</th><th>hosts</th><th>ports</th></tr>
{%- for switch in switches %}
<tr><td>{{ switch.name }}</td><td>{{ switch.rails }}</td><td>{{ switch.hosts }}</td><td class="mono">\
{{ switch.ports }}</td></tr>{% if not loop.last %}{{ "\\n" }}{% endif %}
{% endfor %}
</table>
{%- else -%}
<p>No switch seen through LLDP.</p>
{%- endif -%}
<h2>Routed uplinks (BGP)</h2><p><small>Each host's BGP sessions to its leaves, as FRRouting reports them.\
</small></p>
{%- if routed %}

<table><tr><th>host</th><th>leaf</th><th>peer</th><th>unnumbered on</th><th>leaf AS</th><th>BGP state</th></tr>
{% for row in routed %}
<tr><td class="{{ row.status }}">{{ row.host }}</td><td>{{ row.leaf }}</td><td class="mono">{{ row.peer }}</td>\
<td>{{ row.interface or "" }}</td><td>{{ row.remote_as }}</td><td class="{{ "ok" if row.established else "error" }}">\
{{ row.state }}</td></tr>{% if not loop.last %}{{ "\\n" }}{% endif %}
{% endfor %}
</table>
{% else -%}
<p>No routed uplink (no host runs FRRouting with BGP sessions).</p>
{%- endif -%}
</body></html>
"""

_TEMPLATES = {"fabric_map.html": _PAGE, "fabric_map.svg": _SVG}
_ENVIRONMENT = []


def _template(name):
    if not _ENVIRONMENT:
        _ENVIRONMENT.append(environment(_TEMPLATES))
    return _ENVIRONMENT[0].get_template(name)


def _hosts_to_draw(hosts, limit):
    """All hosts when they fit; else the hosts with findings, then their peers (so that a miscabled host is seen
    beside hosts cabled right), then the others. Drawn grouped by peer group."""
    names = list(hosts)
    if len(names) > limit:
        rank = {"error": 0, "no_facts": 1, "warning": 2, "info": 3}
        problems = sorted((host for host in names if hosts[host]["status"] in rank),
                          key=lambda host: (rank[hosts[host]["status"]], natural_key(host)))[:limit]
        chosen = set(problems)
        peers = {}
        for host in names:
            peers.setdefault(hosts[host]["peer_group"], []).append(host)
        # Round robin over the problem hosts' groups, so that each of them is drawn beside some peers.
        queues = [[host for host in peers[group] if host not in chosen]
                  for group in sorted({hosts[host]["peer_group"] for host in problems}, key=natural_key)]
        while len(chosen) < limit and any(queues):
            for queue in queues:
                if queue and len(chosen) < limit:
                    chosen.add(queue.pop(0))
        for host in names:
            if len(chosen) >= limit:
                break
            chosen.add(host)
        names = [host for host in names if host in chosen]
    return sorted(names, key=lambda host: (natural_key(hosts[host]["peer_group"]), natural_key(host)))


def _rail_cell_class(rail):
    if rail.get("up") is False:
        return "down"
    if rail.get("aligned") is False:
        return "misaligned"
    if rail.get("switch") is None:
        return "unknown"
    return ""


def render_svg(fabric_map, max_hosts_drawn=64):
    """The picture: switches on top, hosts below, one line per rail from the host's port to its switch."""
    hosts = fabric_map["hosts"]
    drawn = _hosts_to_draw(hosts, max_hosts_drawn)
    max_rails = max([rail["rail"] + 1 for host in drawn for rail in hosts[host]["rails"]] or [0])
    port_pitch, host_gap = 18, 24
    host_w = max(120, 20 + max_rails * port_pitch)
    host_h, switch_w, switch_h, switch_gap = 44, 130, 40, 24
    margin, switch_y, host_y = 20, 50, 280

    # Switches reached by the drawn hosts: those of the first peer group drawn come first, each group's in rail
    # order; a switch is placed by the hosts whose rails are expected there, so a miscabled link stands out as a
    # long red line. Hosts are drawn grouped by peer group, so this keeps the other lines short.
    group_rank = {}
    for host in drawn:
        group_rank.setdefault(hosts[host]["peer_group"], len(group_rank))
    switch_rails, switch_place = {}, {}
    for host in drawn:
        for rail in hosts[host]["rails"]:
            if rail.get("switch") is not None:
                switch_rails.setdefault(rail["switch"], set()).add(rail["rail"])
                place = (0 if rail.get("aligned") is not False else 1, group_rank[hosts[host]["peer_group"]],
                         rail["rail"])
                switch_place[rail["switch"]] = min(switch_place.get(rail["switch"], place), place)
    switches = sorted(switch_rails, key=lambda name: (switch_place[name][1:], natural_key(name)))
    switches_w = len(switches) * (switch_w + switch_gap) - switch_gap
    # Spread the hosts under the switches when these take more room, so that each sits below its leaves.
    host_pitch = max(host_w + host_gap, (switches_w + host_gap) / float(max(len(drawn), 1)))
    hosts_w = len(drawn) * host_pitch - host_gap
    width = max(hosts_w, switches_w, 400) + 2 * margin
    hosts_x0 = margin + (width - 2 * margin - hosts_w) / 2.0
    switches_x0 = margin + (width - 2 * margin - switches_w) / 2.0
    height = host_y + host_h + 60
    switch_x = {name: switches_x0 + i * (switch_w + switch_gap) for i, name in enumerate(switches)}

    lines, boxes = [], []
    for name in switches:
        boxes.append({"name": name, "rails": ", ".join(str(r) for r in sorted(switch_rails[name])),
                      "x": switch_x[name], "centre": switch_x[name] + switch_w / 2.0, "label": name[:20]})
    host_boxes = []
    for position, host in enumerate(drawn):
        entry = hosts[host]
        x = hosts_x0 + position * host_pitch
        ports = []
        for rail in entry["rails"]:
            port_x = x + 10 + rail["rail"] * port_pitch
            colour = RAIL_COLOURS[rail["rail"] % len(RAIL_COLOURS)]
            tip = "%s rail %s: %s %s -> %s %s%s" % (
                host, rail["rail"], rail.get("device") or "", rail.get("netdev") or "", rail.get("switch") or "?",
                rail.get("switch_port") or "", {False: " (MISCABLED)", None: ""}.get(rail.get("aligned"), ""))
            ports.append({"tip": tip, "x": port_x, "colour": colour, "rail": rail["rail"]})
            if rail.get("switch") is None:
                continue
            line = {"x1": port_x + 6, "y1": host_y + 4, "x2": switch_x[rail["switch"]] + switch_w / 2.0,
                    "y2": switch_y + switch_h, "stroke": colour, "width": "1.5", "dash": None, "tip": tip}
            if rail.get("aligned") is False:
                line.update(stroke=MISCABLED_COLOUR, width="3", dash="7 4")
            elif rail.get("up") is False:
                line.update(stroke=DOWN_COLOUR, dash="2 3")
            lines.append(line)
        host_boxes.append({
            "name": host, "group": entry["peer_group"], "status": entry["status"], "x": x, "centre": x + host_w / 2.0,
            "fill": {"error": "#fde0e0", "warning": "#fff3cd", "no_facts": "#eeeeee"}.get(entry["status"], "#e6f4ea"),
            "stroke": MISCABLED_COLOUR if entry["miscabled"] else "#444", "stroke_width": 3 if entry["miscabled"] else 1,
            "label": host[:18], "ports": ports})

    legend_rails = [{"rect_x": margin + 40 + rail * 34, "text_x": margin + 55 + rail * 34, "rail": rail,
                     "colour": RAIL_COLOURS[rail]} for rail in range(min(max_rails, len(RAIL_COLOURS)))]
    note = None
    if len(drawn) < len(hosts):
        note = "%d of %d hosts drawn, those with findings first; the tables below list all of them." % (
            len(drawn), len(hosts))
    return _template("fabric_map.svg").render(
        width=width, height=height, margin=margin, switch_y=switch_y, switch_w=switch_w, switch_h=switch_h,
        host_y=host_y, host_w=host_w, host_h=host_h, miscabled_colour=MISCABLED_COLOUR, down_colour=DOWN_COLOUR,
        legend={"rails": legend_rails, "offset": margin + 50 + max(min(max_rails, len(RAIL_COLOURS)), 1) * 34},
        lines=lines, switches=boxes, hosts=host_boxes, note=note)


def _rail_rows(hosts, rail_count):
    rows = []
    for host, entry in hosts.items():
        cells = [None] * rail_count
        for rail in entry["rails"]:
            extra = []
            if rail.get("aligned") is False:
                extra.append("expected %s" % rail.get("expected_switch"))
            if rail.get("up") is False:
                extra.append(str(rail.get("state")))
            cells[rail["rail"]] = {
                "css": _rail_cell_class(rail),
                "text": "%s %s" % (rail.get("switch") or "?", rail.get("switch_port") or ""),
                "detail": " / ".join(str(part) for part in (rail.get("device"), rail.get("netdev")) if part),
                "extra": " - " + ", ".join(extra) if extra else "",
            }
        rows.append({"host": host, "status": entry["status"], "group": entry["peer_group"],
                     "source": entry["rail_source"], "cells": cells})
    return rows


def render_html(fabric_map, title="gpufabric fabric map", max_hosts_drawn=64):
    """Return the whole page as a string; every value from the facts is HTML-escaped."""
    summary = fabric_map["summary"]
    hosts = fabric_map["hosts"]
    cards = [("hosts", summary["hosts"]), ("with facts", summary["hosts_with_facts"]),
             ("rails", summary["rails"]), ("switches", summary["switches"])]
    cards += [("%s findings" % severity, summary["findings"][severity]) for severity in reversed(SEVERITIES)]
    cards.append(("miscabled hosts", len(summary["miscabled_hosts"])))
    rail_count = max([rail["rail"] + 1 for entry in hosts.values() for rail in entry["rails"]] or [0])
    switches = [{"name": name, "rails": ", ".join(str(rail) for rail in entry["rails"]), "hosts": entry["hosts"],
                 "ports": "; ".join("%s: %s rail %s" % (port["port"], port["host"], port["rail"])
                                    for port in entry["ports"])}
                for name, entry in fabric_map["switches"].items()]
    # Each host's BGP sessions to its leaves, beside the LLDP view (a routed uplink is an L3 hop, not a rail).
    routed = [dict(uplink, host=host, status=entry["status"])
              for host, entry in hosts.items() for uplink in entry.get("routed_uplinks") or []]
    return _template("fabric_map.html").render(
        title=title, cards=cards, miscabled=", ".join(summary["miscabled_hosts"]) or "none",
        svg=markup(render_svg(fabric_map, max_hosts_drawn)), findings=fabric_map["findings"],
        rail_count=rail_count, rail_rows=_rail_rows(hosts, rail_count), switches=switches, routed=routed)
