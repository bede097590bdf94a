"""The ipsec role's swanctl.conf template and preflight, run by ansible-playbook on the controller.

The template is rendered from the role's own files (defaults, vars, the swanctl_mesh filter) to a temporary folder,
then read back with a small parser of swanctl.conf's section syntax, so the tests see the structure strongSwan would
see. The preflight runs on localhost only (three inventory names, local connection, check mode): it must stop in its
input check, before facts, packages or the CA folder, when any mesh member's identity is bad.
"""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
SPECS = yaml.safe_load((ROOT / "roles" / "ipsec" / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]
DEFAULTS = yaml.safe_load((ROOT / "roles" / "ipsec" / "defaults" / "main.yml").read_text())
# What the reported injection set ipsec_child_rekey_time to: the newline and indentation make the rest a setting.
INJECTED_REKEY = "1h\n                mode = pass"


def ansible_env():
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"),
        "ANSIBLE_ROLES_PATH": str(ROOT / "roles"),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_LOCALHOST_WARNING": "false",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
        "ANSIBLE_CACHE_PLUGIN": "ansible.builtin.memory",
    })
    # Run from a temporary folder without the repository's ansible.cfg (its inventory, fact cache and callbacks).
    env.pop("ANSIBLE_CONFIG", None)
    return env


def run_playbook(tmp_path, playbook, inventory, extra_vars, *args):
    (tmp_path / "play.yml").write_text(yaml.safe_dump(playbook, sort_keys=False))
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory, sort_keys=False))
    result = subprocess.run(
        ["ansible-playbook", "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
         "-e", json.dumps(extra_vars)] + list(args),
        env=ansible_env(), capture_output=True, text=True, timeout=300, check=False, cwd=str(tmp_path))
    report = json.JSONDecoder().raw_decode(result.stdout[result.stdout.index("{"):])[0]
    return result.returncode, report


def parse_swanctl(text):
    """swanctl.conf as nested dicts; a repeated key in one section is kept as a list, so duplicates show."""
    root = {}
    stack = [root]
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip() if not raw.strip().startswith("#") else ""
        if not line:
            continue
        if line.endswith("{"):
            section = {}
            stack[-1][line[:-1].strip()] = section
            stack.append(section)
        elif line == "}":
            stack.pop()
        else:
            key, _equals, value = line.partition("=")
            key, value = key.strip(), value.strip()
            if key in stack[-1]:
                stack[-1][key] = [stack[-1][key], value] if not isinstance(stack[-1][key], list) else \
                    stack[-1][key] + [value]
            else:
                stack[-1][key] = value
    assert stack == [root], "unbalanced sections"
    return root


TEMPLATE_PLAY = [{
    "name": "Render the ipsec role's swanctl.conf",
    "hosts": "localhost",
    "connection": "local",
    "gather_facts": False,
    "vars_files": [str(ROOT / "roles" / "ipsec" / "defaults" / "main.yml"),
                   str(ROOT / "roles" / "ipsec" / "vars" / "main.yml")],
    "vars": {
        "ansible_python_interpreter": "{{ ansible_playbook_python }}",
        "__ipsec_mesh": "{{ 'node1' | gpufabric.core.swanctl_mesh(nodes=__nodes, controller_addresses=['10.0.0.9']) }}",
        "__nodes": [{"name": "node%d" % i, "address": "10.0.0.%d" % i, "id": "node%d" % i,
                     "selectors": ["10.0.0.0/29"] if i == 9 else []} for i in (1, 2)],
    },
    # The role's own task (configure.yml), with the file paths moved into the test's folder and no service to start
    # (this machine runs no strongSwan; the scenarios start the real one).
    "tasks": [dict(yaml.safe_load((ROOT / "roles" / "ipsec" / "tasks" / "configure.yml").read_text())[0],
                   name="Render")],
}]
TEMPLATE_PLAY[0]["tasks"][0]["gpufabric.core.ipsec_config"] = dict(
    TEMPLATE_PLAY[0]["tasks"][0]["gpufabric.core.ipsec_config"], swanctl_conf_path="{{ dest }}",
    charon_conf_path="{{ dest | dirname }}/charon.conf", certificate_path="{{ dest | dirname }}/x509/gpufabric.crt",
    ca_certificate_path="{{ dest | dirname }}/x509ca/gpufabric-ca.crt", ca_certificate=None, crl=None,
    crl_path="{{ dest | dirname }}/x509crl/gpufabric.crl", sysfs_root="{{ dest | dirname }}/sys", pq_kex="none",
    service="")


def render(tmp_path, **extra):
    dest = tmp_path / "swanctl.conf"
    rc, report = run_playbook(tmp_path, TEMPLATE_PLAY, {"all": {"hosts": {"localhost": {}}}},
                              dict(extra, dest=str(dest)))
    return rc, report, dest


def test_every_default_is_specified_with_the_same_value():
    options = SPECS["options"]
    assert set(options) == set(DEFAULTS)
    for name, value in DEFAULTS.items():
        assert options[name]["default"] == value, name


def test_template_quotes_every_value(tmp_path):
    rc, report, dest = render(tmp_path)
    assert rc == 0, json.dumps(report)[-3000:]
    conf = parse_swanctl(dest.read_text())
    conn = conf["connections"]["gf-node2"]
    assert conn["proposals"] == '"aes256gcm16-prfsha384-ecp384,aes256gcm16-prfsha384-x25519"'
    assert (conn["rekey_time"], conn["dpd_delay"]) == ('"4h"', '"30s"')
    assert conn["local"]["id"] == '"node1"' and conn["remote"]["id"] == '"node2"'
    child = conn["children"]["gf-node2"]
    assert (child["mode"], child["rekey_time"], child["start_action"]) == ('"tunnel"', '"1h"', '"trap|start"')
    assert child["local_ts"] == '"10.0.0.1/32"'


def test_newline_in_a_value_cannot_add_a_setting(tmp_path):
    """The reported injection: on the old template it rendered a second `mode = pass` into the CHILD section."""
    rc, report, dest = render(tmp_path, ipsec_child_rekey_time=INJECTED_REKEY)
    assert rc != 0
    task = report["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert "gpufabric.core.ipsec_config: value for swanctl.conf holds a control character" in task["msg"]
    assert not dest.exists()


@pytest.mark.parametrize("variable, value", [
    ("ipsec_dpd_delay", "30s\r\n        mobike = yes"),
    ("ipsec_ike_rekey_time", '4h" dpd_delay = "0'),
    ("ipsec_esp_proposals", ["aes256gcm16\n                mode = pass"]),
])
def test_no_free_form_value_reaches_the_file(tmp_path, variable, value):
    rc, report, dest = render(tmp_path, **{variable: value})
    assert rc != 0 and not dest.exists()


# The preflight

ROLE_PLAY = [{
    "name": "Apply the ipsec role on the controller in check mode",
    "hosts": "ipsec",
    "gather_facts": False,
    "roles": [{"role": "gpufabric.core.ipsec"}],
}]


def inventory(**node_vars):
    hosts = {name: dict({"ansible_connection": "local",
                         "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                         "ipsec_address": "10.0.0.%d" % index},
                        **node_vars.get(name, {}))
             for index, name in enumerate(("node1", "node2", "node3"), start=1)}
    return {"all": {"children": {"ipsec": {"hosts": hosts}}}}


def role_tasks(report):
    return [task for play in report["plays"] for task in play["tasks"]
            if task["task"]["name"].startswith("gpufabric.core.ipsec : ")]


@pytest.mark.parametrize("identity", ["%any", 'node3" remote_addrs = %any', "node3\n", "node3\r"],
                         ids=["wildcard", "embedded-quote", "newline", "carriage-return"])
def test_one_bad_identity_stops_every_host_before_anything_is_written(tmp_path, identity):
    # A CA folder that may be used (not under /tmp, which the check refuses) and is never created in check mode.
    pki = Path("/var/lib/gpufabric-unit-tests") / tmp_path.name / "pki"
    rc, report = run_playbook(tmp_path, ROLE_PLAY, inventory(node3={"ipsec_identity": identity}),
                              {"ipsec_pki_dir": str(pki)}, "--check")
    assert rc == 2
    names = [t["task"]["name"] for t in role_tasks(report)]
    # Argument validation, collecting the settings, the check, then the stop: no facts, no host command.
    assert names[-1] == "gpufabric.core.ipsec : Stop every host of the batch on any problem, before anything changes"
    assert not any("Gather" in name or "Read" in name for name in names)
    failed = role_tasks(report)[-1]["hosts"]
    # Every host fails, node1 and node2 included, each naming the host and variable.
    for host in ("node1", "node2", "node3"):
        assert failed[host]["failed"] is True
        assert "nothing was changed. node3: ipsec_identity: " in failed[host]["msg"]
        assert report["stats"][host]["failures"] == 1, report["stats"]
        assert report["stats"][host]["changed"] == 0
    assert not pki.exists()


def test_old_preflight_identity_regex_let_a_trailing_newline_through():
    preflight_before = "__ipsec_node.id is match('^[A-Za-z0-9][A-Za-z0-9.:_@-]*$')"
    pattern = re.search(r"match\('(.*)'\)", preflight_before).group(1)
    assert re.match(pattern, "node3\n")
    assert "$')" not in (ROOT / "roles" / "ipsec" / "tasks" / "preflight.yml").read_text()


# The CA key on the controller

PKI_PLAY = [{
    "name": "The controller side of the ipsec role's PKI phase",
    "hosts": "localhost",
    "connection": "local",
    "gather_facts": False,
    "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}"},
    "tasks": [{"name": "PKI", "ansible.builtin.include_role": {"name": "gpufabric.core.ipsec", "tasks_from": "pki"}}],
}]


def test_wrong_ca_passphrase_stops_the_run_and_keeps_the_key(tmp_path):
    """Before, failed_when: false recorded the failure as success: a wrong passphrase went unnoticed."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    pki = tmp_path / "pki"
    pki.mkdir(mode=0o700)
    key = ec.generate_private_key(ec.SECP384R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.BestAvailableEncryption(b"the right passphrase 0123"))
    (pki / "ca.key").write_bytes(key)
    (pki / "ca.key").chmod(0o600)
    rc, report = run_playbook(tmp_path, PKI_PLAY, {"all": {"hosts": {"localhost": {}}}},
                              {"ipsec_pki_dir": str(pki), "ipsec_pki_ca_passphrase": "a wrong passphrase 0123"})
    assert rc == 2
    tasks = report["plays"][0]["tasks"]
    last = tasks[-1]
    assert last["task"]["name"] == "gpufabric.core.ipsec : Keep the CA, its certificate and its CRL on the controller"
    message = last["hosts"]["localhost"]["msg"]
    assert "ipsec_pki_ca_passphrase must be the passphrase it is encrypted with" in message
    assert "a wrong passphrase" not in json.dumps(report)
    assert (pki / "ca.key").read_bytes() == key
    assert not (pki / "ca.crt").exists()
