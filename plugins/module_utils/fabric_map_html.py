# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render a fabric map (fabric_map.build_fabric_map) as one self-contained HTML page.

The page needs nothing but a browser: inline CSS, an inline SVG picture of hosts, rails and switches
(miscabled links drawn red and dashed), the findings, a host-by-rail table and the switch ports.
A fleet of thousands of hosts cannot be drawn legibly, so the picture holds at most max_hosts_drawn
hosts, those with findings first; the tables always list every host.
"""

from __future__ import annotations

from html import escape

from ansible_collections.gpufabric.core.plugins.module_utils.fabric_map import SEVERITIES, natural_key

# Colour per rail index (cycled), chosen to stay distinct from the red of a miscabled link.
RAIL_COLOURS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#bcbd22", "#e377c2", "#7f7f7f")
MISCABLED_COLOUR = "#d62728"
DOWN_COLOUR = "#999999"

_CSS = """
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
"""


def _e(value):
    return escape("" if value is None else str(value), quote=True)


def _cards(summary):
    items = [("hosts", summary["hosts"]), ("with facts", summary["hosts_with_facts"]),
             ("rails", summary["rails"]), ("switches", summary["switches"])]
    items += [("%s findings" % severity, summary["findings"][severity]) for severity in reversed(SEVERITIES)]
    items.append(("miscabled hosts", len(summary["miscabled_hosts"])))
    return '<div class="cards">%s</div>' % "".join(
        '<div class="card"><b>%s</b>%s</div>' % (_e(value), _e(label)) for label, value in items)


def _findings_table(findings):
    if not findings:
        return "<p>No findings.</p>"
    rows = "\n".join(
        '<tr class="%s"><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>' % (
            _e(item["severity"]), _e(item["severity"]), _e(item.get("scope")), _e(item["kind"]),
            _e(item["host"] or ""), _e("" if item["rail"] is None else item["rail"]), _e(item["message"]))
        for item in findings)
    return ("\n<table><tr><th>severity</th><th>scope</th><th>kind</th><th>host</th><th>rail</th><th>finding</th></tr>"
            "%s</table>" % rows)


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
    for i, name in enumerate(switches):
        x = switch_x[name]
        boxes.append(
            '<g><title>%s: rails %s</title><rect x="%.1f" y="%d" width="%d" height="%d" rx="5" fill="#f4f4f4" '
            'stroke="#444"/><text x="%.1f" y="%d" text-anchor="middle" font-size="12">%s</text></g>' % (
                _e(name), _e(", ".join(str(r) for r in sorted(switch_rails[name]))), x, switch_y, switch_w,
                switch_h, x + switch_w / 2.0, switch_y + 24, _e(name[:20])))
    for position, host in enumerate(drawn):
        entry = hosts[host]
        x = hosts_x0 + position * host_pitch
        fill = {"error": "#fde0e0", "warning": "#fff3cd", "no_facts": "#eeeeee"}.get(entry["status"], "#e6f4ea")
        stroke = MISCABLED_COLOUR if entry["miscabled"] else "#444"
        boxes.append(
            '<g><title>%s (group %s): %s</title><rect x="%.1f" y="%d" width="%d" height="%d" rx="5" fill="%s" '
            'stroke="%s" stroke-width="%d"/><text x="%.1f" y="%d" text-anchor="middle" font-size="12">%s</text>'
            '</g>' % (_e(host), _e(entry["peer_group"]), _e(entry["status"]), x, host_y, host_w, host_h, fill,
                      stroke, 3 if entry["miscabled"] else 1, x + host_w / 2.0, host_y + 34, _e(host[:18])))
        for rail in entry["rails"]:
            port_x = x + 10 + rail["rail"] * port_pitch
            colour = RAIL_COLOURS[rail["rail"] % len(RAIL_COLOURS)]
            tip = "%s rail %s: %s %s -> %s %s%s" % (
                host, rail["rail"], rail.get("device") or "", rail.get("netdev") or "", rail.get("switch") or "?",
                rail.get("switch_port") or "", {False: " (MISCABLED)", None: ""}.get(rail.get("aligned"), ""))
            boxes.append('<g><title>%s</title><rect x="%.1f" y="%d" width="12" height="12" fill="%s"/>'
                         '<text x="%.1f" y="%d" text-anchor="middle" font-size="9" fill="#fff">%s</text></g>' % (
                             _e(tip), port_x, host_y + 4, colour, port_x + 6, host_y + 14, _e(rail["rail"])))
            if rail.get("switch") is None:
                continue
            target_x = switch_x[rail["switch"]] + switch_w / 2.0
            style = 'stroke="%s" stroke-width="1.5"' % colour
            if rail.get("aligned") is False:
                style = 'stroke="%s" stroke-width="3" stroke-dasharray="7 4"' % MISCABLED_COLOUR
            elif rail.get("up") is False:
                style = 'stroke="%s" stroke-width="1.5" stroke-dasharray="2 3"' % DOWN_COLOUR
            lines.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" %s><title>%s</title></line>' % (
                port_x + 6, host_y + 4, target_x, switch_y + switch_h, style, _e(tip)))

    legend = ['<text x="%d" y="20" font-size="12">rails:</text>' % margin]
    for rail in range(min(max_rails, len(RAIL_COLOURS))):
        legend.append('<rect x="%d" y="10" width="12" height="12" fill="%s"/><text x="%d" y="20" font-size="11">'
                      '%d</text>' % (margin + 40 + rail * 34, RAIL_COLOURS[rail], margin + 55 + rail * 34, rail))
    offset = margin + 50 + max(min(max_rails, len(RAIL_COLOURS)), 1) * 34
    legend.append('<line x1="%d" y1="16" x2="%d" y2="16" stroke="%s" stroke-width="3" stroke-dasharray="7 4"/>'
                  '<text x="%d" y="20" font-size="11">miscabled</text>' % (offset, offset + 30, MISCABLED_COLOUR,
                                                                           offset + 35))
    legend.append('<line x1="%d" y1="16" x2="%d" y2="16" stroke="%s" stroke-width="1.5" stroke-dasharray="2 3"/>'
                  '<text x="%d" y="20" font-size="11">port down</text>' % (offset + 110, offset + 140, DOWN_COLOUR,
                                                                           offset + 145))
    note = ""
    if len(drawn) < len(hosts):
        note = '<text x="%d" y="%d" font-size="12">%d of %d hosts drawn, those with findings first; the tables ' \
               'below list all of them.</text>' % (margin, height - 15, len(drawn), len(hosts))
    parts = ("".join(legend), "\n".join(lines), "\n".join(boxes), note)
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" '
            'aria-label="fabric map">\n%s</svg>' % (width, height, width, height, "\n".join(parts)))


def _rail_table(fabric_map):
    hosts = fabric_map["hosts"]
    rail_count = max([rail["rail"] + 1 for entry in hosts.values() for rail in entry["rails"]] or [0])
    head = "".join("<th>rail %d</th>" % rail for rail in range(rail_count))
    rows = []
    for host, entry in hosts.items():
        cells = ['<td class="unknown"></td>'] * rail_count
        for rail in entry["rails"]:
            text = "%s %s" % (rail.get("switch") or "?", rail.get("switch_port") or "")
            detail = " / ".join(str(part) for part in (rail.get("device"), rail.get("netdev")) if part)
            extra = []
            if rail.get("aligned") is False:
                extra.append("expected %s" % rail.get("expected_switch"))
            if rail.get("up") is False:
                extra.append(str(rail.get("state")))
            cells[rail["rail"]] = '<td class="%s"><span class="mono">%s</span><br><small>%s%s</small></td>' % (
                _rail_cell_class(rail), _e(text), _e(detail), _e(" - " + ", ".join(extra) if extra else ""))
        rows.append('<tr><td class="%s">%s</td><td>%s</td><td>%s</td>%s</tr>' % (
            _e(entry["status"]), _e(host), _e(entry["peer_group"]), _e(entry["rail_source"]), "".join(cells)))
    return "\n<table><tr><th>host</th><th>group</th><th>rails from</th>%s</tr>\n%s</table>\n" % (head, "\n".join(rows))


def _switch_table(switches):
    if not switches:
        return "<p>No switch seen through LLDP.</p>"
    rows = "\n".join("<tr><td>%s</td><td>%s</td><td>%s</td><td class=\"mono\">%s</td></tr>" % (
        _e(name), _e(", ".join(str(rail) for rail in entry["rails"])), _e(entry["hosts"]),
        _e("; ".join("%s: %s rail %s" % (port["port"], port["host"], port["rail"]) for port in entry["ports"])))
        for name, entry in switches.items())
    return "<table><tr><th>switch</th><th>rails</th><th>hosts</th><th>ports</th></tr>%s</table>" % rows


def _routed_table(fabric_map):
    """Each host's BGP sessions to its leaves, beside the LLDP view (a routed uplink is an L3 hop, not a rail)."""
    rows = []
    for host, entry in fabric_map["hosts"].items():
        for uplink in entry.get("routed_uplinks") or []:
            rows.append('<tr><td class="%s">%s</td><td>%s</td><td class="mono">%s</td><td>%s</td><td>%s</td>'
                        '<td class="%s">%s</td></tr>' % (
                            _e(entry["status"]), _e(host), _e(uplink["leaf"]), _e(uplink["peer"]),
                            _e(uplink["interface"] or ""), _e(uplink["remote_as"]),
                            "ok" if uplink["established"] else "error", _e(uplink["state"])))
    if not rows:
        return "<p>No routed uplink (no host runs FRRouting with BGP sessions).</p>"
    return ("\n<table><tr><th>host</th><th>leaf</th><th>peer</th><th>unnumbered on</th><th>leaf AS</th>"
            "<th>BGP state</th></tr>\n%s</table>\n" % "\n".join(rows))


def render_html(fabric_map, title="gpufabric fabric map", max_hosts_drawn=64):
    """Return the whole page as a string; every value from the facts is HTML-escaped."""
    summary = fabric_map["summary"]
    miscabled = ", ".join(summary["miscabled_hosts"]) or "none"
    return "".join((
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>%s</title><style>%s</style></head>'
        '<body>' % (_e(title), _CSS),
        "<h1>%s</h1>" % _e(title),
        _cards(summary),
        "<p>Miscabled hosts: <b>%s</b></p>" % _e(miscabled),
        "<h2>Picture</h2><div class=\"picture\">%s</div>" % render_svg(fabric_map, max_hosts_drawn),
        "<h2>Findings</h2><p><small>Scope <i>fleet</i>: found by comparing each host with its peer group; scope "
        "<i>host</i>: found by topology_facts on the host itself.</small></p>", _findings_table(fabric_map["findings"]),
        "<h2>Rails per host</h2><p><small>Each cell: switch and port the rail's NIC reaches (LLDP), then RDMA "
        "device / netdev. Red: miscabled against the rail's peer group; grey: port down.</small></p>",
        _rail_table(fabric_map),
        "<h2>Switches</h2>", _switch_table(fabric_map["switches"]),
        "<h2>Routed uplinks (BGP)</h2><p><small>Each host's BGP sessions to its leaves, as FRRouting reports "
        "them.</small></p>", _routed_table(fabric_map),
        "</body></html>\n",
    ))
