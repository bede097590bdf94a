# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric-cooling: a fail-safe fan-curve and liquid-cooling watchdog for GPU servers (stdlib only).

cooling_curve.py, cooling_policy.py, cooling_sensors.py, parse_common.py, file_transaction.py and
prometheus_text.py in this package are copies of the gpufabric.core collection's module_utils, installed by the
gpufabric.core.cooling role.
"""

from __future__ import annotations

__version__ = "0.1.0"
