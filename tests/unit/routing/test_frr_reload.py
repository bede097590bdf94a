# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""frr-reload.py --test output, as frr_config reads it to decide `changed`."""

from __future__ import annotations

import pytest

from ansible_collections.gpufabric.core.plugins.module_utils.routing.frr_reload import (
    FrrReloadError,
    changes_pending,
    diff_text,
    enable_daemons,
    parse_reload_test,
)
from fixture_data import read_fixture


def test_no_change_prints_nothing():
    parsed = parse_reload_test(read_fixture("frr/lab-reload-test-no-change.txt"))
    assert parsed == {"delete": [], "add": []}
    assert not changes_pending(parsed)


def test_changed_bfd_interval_is_one_line_each_way_under_its_context():
    parsed = parse_reload_test(read_fixture("frr/lab-reload-test-bfd-interval.txt"))
    assert parsed == {
        "delete": ["bfd", " profile gpufabric", "  no transmit-interval 150"],
        "add": ["bfd", " profile gpufabric", "  transmit-interval 200"],
    }
    assert changes_pending(parsed)
    before, after = diff_text(parsed)
    assert before.splitlines()[-1] == "-   no transmit-interval 150"
    assert after.splitlines()[-1] == "+   transmit-interval 200"


def test_text_outside_a_section_is_refused():
    with pytest.raises(FrrReloadError, match="unexpected output"):
        parse_reload_test("Traceback (most recent call last):\n")


def test_enable_daemons_in_the_daemons_file_debian_ships():
    shipped = read_fixture("frr/debian12-frr-8.4.4-daemons.txt")
    enabled = enable_daemons(shipped, ["bgpd", "bfdd"])
    changed = [(old, new) for old, new in zip(shipped.splitlines(), enabled.splitlines()) if old != new]
    # Only the two switches; bgpd_options and the comments stay as the package wrote them.
    assert changed == [("bgpd=no", "bgpd=yes"), ("bfdd=no", "bfdd=yes")]
    assert enable_daemons(enabled, ["bgpd", "bfdd"]) == enabled


def test_a_daemon_the_file_does_not_name_is_added_and_the_last_of_two_lines_set():
    assert enable_daemons("zebra=yes\nbgpd=no\nbgpd=no\n", ["bgpd", "bfdd"]) == "zebra=yes\nbgpd=no\nbgpd=yes\nbfdd=yes\n"
