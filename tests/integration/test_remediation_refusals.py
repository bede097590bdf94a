"""Bad remediation input refused before anything runs: by playbooks/remediate.yml's first task (no Slurm query, no
alert read) and by playbooks/check_inventory.yml (no host contacted), each problem naming its variable."""

import json

import pytest
import yaml

from integration_helpers import ROOT, run_logged, tail

ENV = {"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default", "ANSIBLE_NOCOLOR": "1",
       "ANSIBLE_CACHE_PLUGIN": "ansible.builtin.memory"}
BAD = {"remediation_max_drained": "0%", "remediation_reason_prefix": "gpu fabric:", "remediation_webhook_port": 70000}
WORDS = ["remediation_max_drained: a percentage of the partition must be above 0 % and at most 100 %",
         "remediation_reason_prefix: must be a word ending in a colon",
         "remediation_webhook_port: must be a TCP port from 1 to 65535; got 70000"]


def test_remediate_refuses_bad_input_in_its_first_task(tmp_path):
    # The Slurm controller is a host nobody can reach: the run must stop before it would be contacted.
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"remediation_alertmanager_url": "http://192.0.2.1:9093"},
        "children": {"slurm_controller": {"hosts": {"slurm-ctl-unreachable": {"ansible_host": "192.0.2.1"}}}}}}))
    alert = {"status": "firing", "labels": {
        "alertname": "GpufabricPortDown", "gpufabric_scope": "node", "gpufabric_remediation": "drain", "host": "node1"}}
    rc, out = run_logged("remediate-refusal", ["ansible-playbook", "-i", str(tmp_path / "hosts.yml"),
                                               str(ROOT / "playbooks" / "remediate.yml"), "-e",
                                               json.dumps(dict(BAD, remediation_alerts=[alert]))],
                         timeout=300, env=ENV)
    assert rc == 2, tail(out)
    text = " ".join(out.split())
    for words in WORDS:
        assert words in text, tail(out)
    assert "Plan |" not in out and "slurm-ctl-unreachable" not in out.split("PLAY RECAP")[0]


@pytest.mark.parametrize("variable", sorted(BAD))
def test_check_inventory_refuses_each_before_the_rulebook_starts(variable):
    extra_vars = {variable: BAD[variable], "remediation_alertmanager_url": "http://am.example.org:9093"}
    rc, out = run_logged("check-inventory-remediation-" + variable, [
        "ansible-playbook", "-i", str(ROOT / "inventories" / "example"), str(ROOT / "playbooks" / "check_inventory.yml"),
        "--limit", "all[0]", "-e", json.dumps(extra_vars)],
        timeout=300, env=ENV)
    assert rc == 2, tail(out)
    [words] = [words for words in WORDS if words.startswith(variable)]
    assert words in " ".join(out.split()), tail(out)
