# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric-health: samples the fabric against the state the roles deployed and writes Prometheus series for
node_exporter's textfile collector. The sampling code is the collection's module_utils (health_sample and its
readers), installed beside this package under ansible_collections/gpufabric/core/plugins/module_utils by the
gpufabric.core.health role."""
