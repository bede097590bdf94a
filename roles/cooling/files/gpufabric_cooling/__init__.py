# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric-cooling: a fail-safe fan-curve and liquid-cooling watchdog for GPU servers (stdlib only).

The curves, validation, parsers and file writers are the gpufabric.core collection's module_utils, imported
absolutely: the gpufabric.core.cooling role installs them unchanged beside this package, under
<lib>/ansible_collections/gpufabric/core/plugins/module_utils (the collection's one host-program layout).
"""

from __future__ import annotations

__version__ = "0.1.0"
