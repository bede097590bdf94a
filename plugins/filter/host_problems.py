# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: host_problems
short_description: Say why a host's operating system or service manager does not suit a gpufabric.core role
version_added: "0.1.0"
description:
  - "Takes the host's gathered facts and returns one sentence per problem (empty when the host suits the role): an
    OS family the role does not support, a service manager other than systemd where the role needs systemd, a
    release the roles were never tested on (unless O(untested))."
  - The one OS and service manager check of the collection. Every role adds these to the problems of its one
    preflight task (no task of its own), so that one task refuses both, before any change.
  - A fact that was not gathered (a play with C(gather_facts=false), a fact cache holding only some) is not checked
    here; the tasks that read it later fail on their own.
options:
  _input:
    description: The host's facts (C(ansible_facts)).
    type: dict
    required: true
  role:
    description: The role's name, for the message.
    type: str
    required: true
  os_families:
    description: The OS families (C(ansible_facts.os_family)) the role supports; empty for any.
    type: list
    elements: str
    required: true
  systemd:
    description: Whether the role needs systemd as the host's service manager (it runs or owns units).
    type: bool
    default: true
  untested:
    description:
      - Whether a release of a supported family that the tests never ran the roles on (Ubuntu, Rocky, Debian
        testing) is accepted. When false, such a host is refused, naming what is tested (Debian 12 and 13); the
        roles pass C(gpufabric_untested_platforms). Not checked for a role that supports any family.
    type: bool
    default: false
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Refuse an unsupported host together with bad variables
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "Nothing was changed. {{ __problems | join('; ') }}"
    quiet: true
  vars:
    __problems: "{{ ansible_facts | gpufabric.core.host_problems('rdma', ['Debian', 'RedHat']) }}"

- name: A role that writes files only, on any family
  ansible.builtin.assert:
    that: __problems | length == 0
    quiet: true
  vars:
    __problems: "{{ ansible_facts | gpufabric.core.host_problems('nccl', [], systemd=false) }}"
"""

RETURN = r"""
_value:
  description: One sentence per problem; empty when the host suits the role (or its facts were not gathered).
  type: list
  elements: str
  sample:
    - "the rdma role supports the Debian and RedHat families under systemd; this host is Alpine 3.20 (Alpine) with openrc"
"""


# The releases the roles run on in the tests (README, Supported platforms): the site test's lab and the Molecule
# scenarios. Others of a supported family (Ubuntu, Rocky) are rendered only, never run.
TESTED_RELEASES = {"Debian": ("12", "13")}


def _tested_problem(facts, role):
    """Why the host's release was never tested, or None (also when its distribution facts were not gathered)."""
    distribution, major = facts.get("distribution"), facts.get("distribution_major_version")
    if distribution is None or major is None or major in TESTED_RELEASES.get(distribution, ()):
        return None
    tested = "; ".join("%s %s" % (name, " and ".join(majors)) for name, majors in sorted(TESTED_RELEASES.items()))
    release = "%s %s" % (distribution, facts.get("distribution_version") or major)
    return ("the %s role is tested on %s only; this host is %s: set gpufabric_untested_platforms: true to run it "
            "there anyway (README, Supported platforms)" % (role, tested, release))


def host_problems(facts, role, os_families, systemd=True, untested=False):
    if not isinstance(facts, dict):
        raise TypeError("the input must be the host's facts (a dict), got %s" % type(facts).__name__)
    families = list(os_families or [])
    # Each fact is checked when it was gathered (a fact cache may hold some without the others).
    family = facts.get("os_family", families[0] if families else None)
    service_manager = facts.get("service_mgr", "systemd") or "an unknown service manager"
    if (not families or family in families) and (not systemd or service_manager == "systemd"):
        problem = None if untested or not families else _tested_problem(facts, role)
        return [problem] if problem else []
    release = " ".join(part for part in (facts.get("distribution") or "an unknown distribution",
                                         facts.get("distribution_version") or "") if part)
    needs = ("the %s families" % " and ".join(families) if families else "any OS family") + (
        " under systemd" if systemd else "")
    return ["the %s role supports %s; this host is %s (%s) with %s" % (role, needs, release, family, service_manager)]


class FilterModule:
    """The host_problems filter."""

    def filters(self):
        return {"host_problems": raising_filter_error("host_problems", host_problems, (TypeError,))}
