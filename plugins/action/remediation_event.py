# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gpufabric.core.remediation_event (documented in plugins/modules/remediation_event.py)."""

from __future__ import annotations

from ansible.plugins.action import ActionBase
from ansible.utils.unsafe_proxy import wrap_var

from ansible_collections.gpufabric.core.plugins.module_utils.health.remediation import RemediationError, alerts_from


def given_alerts(task_vars):
    """(where the alerts came from, their value as given), read from the task's variables without templating them:
    extra vars are trusted templates, and an alert's labels must never be evaluated."""
    if "remediation_alerts" in task_vars:
        return "remediation_alerts", task_vars["remediation_alerts"]
    event = task_vars.get("ansible_eda")
    if isinstance(event, dict) and "event" in event:
        return "ansible_eda.event", event["event"]
    return "none", []


class ActionModule(ActionBase):
    """Returns the run's alerts as data marked unsafe; runs nothing on any host."""

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset()
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        source, value = given_alerts(task_vars or {})
        try:
            alerts = alerts_from(wrap_var(value))
        except RemediationError as exc:
            return dict(result, failed=True, source=source, msg="%s: %s" % (source, exc))
        result.update(changed=False, source=source, alerts=wrap_var(alerts))
        return result
