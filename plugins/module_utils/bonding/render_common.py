# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the three renderers share: the header of every managed file and the INI writer (networkd, keyfiles)."""

from __future__ import annotations

MANAGED_HEADER = "Managed by gpufabric.core.bonding (Ansible): local changes are overwritten."


def _ini(sections):
    """Render [(section, [(key, value), ...]), ...] as an INI file; None values are left out."""
    blocks = []
    for section, pairs in sections:
        lines = ["[%s]" % section] + ["%s=%s" % (k, v) for k, v in pairs if v is not None]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"
