# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: fabric_map_html
short_description: Render a fabric map as one self-contained HTML page with a picture
version_added: 0.1.0
author: gpufabric.core contributors
description:
  - Renders the output of P(gpufabric.core.fabric_map#filter) as a single HTML page that needs nothing but a
    browser, inline CSS and an inline SVG picture.
  - "The page holds: summary counts; a picture of switches, hosts and one line per rail from the host's port to the
    switch it reaches, miscabled links red and dashed, ports down grey and dotted; the findings (across hosts and
    those each host reported itself); a table of hosts by rail (switch and port, RDMA device and netdev); the
    switches with their ports."
  - The picture holds at most O(max_hosts_drawn) hosts, those with findings first; the tables list every host.
  - Every value taken from the facts is HTML-escaped. The output holds no time stamp, so an unchanged fabric gives
    an unchanged page.
options:
  _input:
    description: The fabric map returned by P(gpufabric.core.fabric_map#filter).
    type: dict
    required: true
  title:
    description: Title of the page.
    type: str
    default: gpufabric fabric map
  max_hosts_drawn:
    description: Largest number of hosts drawn in the picture.
    type: int
    default: 64
seealso:
  - plugin: gpufabric.core.fabric_map
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Write the fabric map as an HTML page on the controller
  ansible.builtin.copy:
    content: "{{ fabric_map | gpufabric.core.fabric_map_html(title='Fabric of cluster a', max_hosts_drawn=128) }}"
    dest: reports/fabric_map.html
    mode: "0644"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
_value:
  description: The HTML page, starting with C(<!DOCTYPE html>).
  type: str
  sample: "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>gpufabric fabric map</title>..."
"""

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.map_html import render_html

_REQUIRED_KEYS = ("summary", "hosts", "switches", "findings")


def fabric_map_html(fabric_map, title="gpufabric fabric map", max_hosts_drawn=64):
    if not isinstance(fabric_map, Mapping) or any(key not in fabric_map for key in _REQUIRED_KEYS):
        raise AnsibleFilterError(
            "gpufabric.core.fabric_map_html expects the output of gpufabric.core.fabric_map (a mapping with %s)"
            % ", ".join(_REQUIRED_KEYS))
    try:
        max_hosts_drawn = int(max_hosts_drawn)
    except (TypeError, ValueError):
        raise AnsibleFilterError("gpufabric.core.fabric_map_html: max_hosts_drawn must be an integer, not %r"
                                 % (max_hosts_drawn,)) from None
    if max_hosts_drawn < 1:
        raise AnsibleFilterError("gpufabric.core.fabric_map_html: max_hosts_drawn must be at least 1")
    try:
        return render_html(fabric_map, title=str(title), max_hosts_drawn=max_hosts_drawn)
    except (KeyError, TypeError) as exc:
        raise AnsibleFilterError("gpufabric.core.fabric_map_html: the fabric map is incomplete or altered (%s); "
                                 "pass the output of gpufabric.core.fabric_map unchanged" % exc) from exc


class FilterModule:
    def filters(self):
        return {"fabric_map_html": fabric_map_html}
