"""plugins/filter/verify_mode.py: every role's <role>_verify read one way, the deprecated booleans still accepted."""

import pytest

from ansible_collections.gpufabric.core.plugins.filter.verify_mode import FilterModule
from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import VERIFY_MODES, verify_mode
from ansible.errors import AnsibleFilterError
from ansible.utils.display import Display

verify_mode_filter = FilterModule().filters()["verify_mode"]


@pytest.mark.parametrize("mode", VERIFY_MODES)
def test_the_modes_are_themselves(mode):
    assert verify_mode(mode, "rdma_verify") == mode


def test_the_deprecated_booleans_mean_after_change_and_never_with_a_warning(monkeypatch):
    warned = []
    monkeypatch.setattr(Display, "deprecated", lambda self, msg, **kwargs: warned.append((msg, kwargs)))
    assert verify_mode_filter(True, "bonding_verify") == "after_change"
    assert verify_mode_filter(False, "routing_verify") == "never"
    assert verify_mode_filter("always", "nccl_verify") == "always"
    # A role where true meant every run keeps that meaning.
    assert verify_mode_filter(True, "routing_verify", true_means="always") == "always"
    assert warned[2][0] == "routing_verify: true is deprecated, use always"
    assert warned[:2] == [
        ("bonding_verify: true is deprecated, use after_change", {"version": "0.2.0", "collection_name": "gpufabric.core"}),
        ("routing_verify: false is deprecated, use never", {"version": "0.2.0", "collection_name": "gpufabric.core"})]


@pytest.mark.parametrize("value", ["yes", "True", "after-change", 1, None, ""])
def test_anything_else_is_refused_naming_the_variable(value):
    with pytest.raises(AnsibleFilterError, match=r"gpufabric.core.verify_mode: ipsec_verify: must be after_change, "
                                                 r"always or never \(true and false are deprecated\)"):
        verify_mode_filter(value, "ipsec_verify")
