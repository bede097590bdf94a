"""The remediation loop's variables refused before anything runs, each problem naming its variable."""

import pytest

from ansible_collections.gpufabric.core.plugins.module_utils.health.remediation_inputs import remediation_problems

GOOD = {"remediation_alertmanager_url": "http://alertmanager.example.org:9093"}


def test_a_webhook_beyond_loopback_is_usable_with_a_token_whose_value_no_problem_shows():
    token = "c2VjcmV0LXRva2VuLWZvci10ZXN0"
    assert remediation_problems(dict(GOOD, remediation_webhook_host="10.0.0.5", remediation_webhook_token=token)) == []
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        assert remediation_problems(dict(GOOD, remediation_webhook_host=host)) == []
    for host in ("0.0.0.0", "10.0.0.5", "fabric-ctl.example.org"):
        [problem] = remediation_problems(dict(GOOD, remediation_webhook_host=host))
        assert problem.startswith("remediation_webhook_token: required when remediation_webhook_host (%s)" % host)
    assert remediation_problems(dict(GOOD, remediation_webhook_tls_cert_file="/etc/gpufabric/webhook.pem",
                                     remediation_webhook_tls_key_file="/etc/gpufabric/webhook-key.pem")) == []
    [problem] = remediation_problems(dict(GOOD, remediation_webhook_tls_cert_file="webhook.pem",
                                          remediation_webhook_tls_key_file="/etc/gpufabric/webhook-key.pem"))
    assert problem.startswith("remediation_webhook_tls_cert_file: must be an absolute file")
    problems = remediation_problems(dict(GOOD, remediation_webhook_token=token + " x"))
    assert problems and all(token not in problem for problem in problems)


def test_the_defaults_with_an_alertmanager_are_usable():
    assert remediation_problems(GOOD) == []
    assert remediation_problems(dict(GOOD, remediation_max_drained=3, remediation_webhook_port="8080",
                                     remediation_reason_prefix="fabric-loop:", remediation_textfile_dir=None,
                                     remediation_action_window=0, remediation_reconcile_interval=0)) == []


@pytest.mark.parametrize("name, value, words", [
    ("remediation_max_drained", 0, "must be a number of nodes (1 or more)"),
    ("remediation_max_drained", "0%", "above 0 % and at most 100 %"),
    ("remediation_max_drained", "101%", "above 0 % and at most 100 %"),
    ("remediation_reason_prefix", "gpu fabric:", "must be a word ending in a colon"),
    ("remediation_reason_prefix", '"gpufabric:', "scontrol keeps it whole"),
    ("remediation_reason_prefix", "gpufabric:\n", "must be a word ending in a colon"),
    ("remediation_reason_prefix", "gpufabric", "must be a word ending in a colon"),
    ("remediation_reason_prefix", "", "must be a word ending in a colon"),
    ("remediation_reason_prefix", "a" * 33 + ":", "at most 32 characters"),
    ("remediation_webhook_port", 0, "must be a TCP port from 1 to 65535"),
    ("remediation_webhook_port", 65536, "must be a TCP port from 1 to 65535"),
    ("remediation_webhook_port", "http", "must be a TCP port from 1 to 65535"),
    ("remediation_webhook_host", "0.0.0.0 --evil", "the address (or host name)"),
    ("remediation_webhook_token", "short", "must be 16 to 512 characters"),
    ("remediation_webhook_token", "a token with spaces in it", "must be 16 to 512 characters"),
    ("remediation_webhook_max_body_bytes", 10, "from 1024 to 16777216"),
    ("remediation_webhook_max_queued_alerts", 0, "from 1 to 10000"),
    ("remediation_webhook_tls_cert_file", "/etc/gpufabric/webhook.pem", "goes with remediation_webhook_tls_key_file"),
    ("remediation_action_window", -1, "from 0 to 86400"),
    ("remediation_reconcile_interval", 90000, "from 0 (no reconcile tick)"),
    ("remediation_alertmanager_url", "", "needs Alertmanager's URL"),
    ("remediation_alertmanager_url", "http://am:9093/?x=1", "no query"),
    ("remediation_alertmanager_url", "ftp://am", "http:// or https://"),
    ("remediation_page_for", 10, "from 60 to 86400"),
    ("remediation_page_labels", {"alertname": "x"}, "set by the page itself"),
    ("remediation_page_labels", {"bad-label": "x"}, "is not a Prometheus label name"),
    ("remediation_page_labels", {"team": "a\nb"}, "one-line value"),
    ("remediation_state_dir", "/etc/gpufabric", "must be under /var/lib/"),
    ("remediation_state_dir", "/var/lib/../etc", "normal form"),
    ("remediation_textfile_dir", "relative/dir", "absolute directory"),
    ("remediation_fabric_map", "/srv/maps/map.json\n", "absolute file"),
])
def test_bad_input_is_refused_naming_the_variable(name, value, words):
    problems = remediation_problems(dict(GOOD, **{name: value}))
    assert len(problems) >= 1
    assert problems[0].startswith(name) and words in problems[0], problems


def test_the_peer_group_the_fleet_must_be_a_group_of_the_inventory():
    settings = {"remediation_alertmanager_url": "http://127.0.0.1:9093", "remediation_peer_group": "gpu_node"}
    wanted = ["remediation_peer_group: 'gpu_node' is not a group of the inventory: it is the fleet, the only hosts the "
              "loop drains and re-verifies against"]
    assert remediation_problems(settings, groups=["all", "gpu_nodes"]) == wanted
    assert remediation_problems(dict(settings, remediation_peer_group="gpu_nodes"), groups=["all", "gpu_nodes"]) == []
    # Without re-verification it is still the fleet: the only hosts ever drained.
    assert remediation_problems(dict(settings, remediation_verify=False), groups=["all", "gpu_nodes"]) == wanted
    assert remediation_problems(settings) == []  # no inventory given: not checked


def test_alertmanagers_basic_auth_needs_both_and_never_shows_the_password():
    settings = {"remediation_alertmanager_url": "https://am.example.org:9093"}
    for half in ({"remediation_alertmanager_username": "loop"}, {"remediation_alertmanager_password": "s3cret"}):
        [problem] = remediation_problems(dict(settings, **half))
        assert problem.startswith("remediation_alertmanager_username and remediation_alertmanager_password")
        assert "s3cret" not in problem
    assert remediation_problems(dict(settings, remediation_alertmanager_username="loop",
                                     remediation_alertmanager_password="s3cret")) == []
