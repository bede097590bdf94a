"""AWX as code: the execution environment's build context and the configuration playbook.

The AWX service cannot run on this machine; what can be checked is checked: ansible-builder produces a complete
build context, awx_configure.yml passes the syntax check (ansible-lint covers it too), and its surveys are generated
from the roles' real argument_specs. ansible-runner, the engine AWX uses, runs site.yml against the lab in
test_site.py.
"""

import json
from pathlib import Path
import subprocess

import pytest
import yaml

from integration_helpers import ROOT, run_logged, tail


def test_ansible_builder_creates_a_complete_build_context(tmp_path):
    rc, out = run_logged("ansible-galaxy-build", ["ansible-galaxy", "collection", "build", "--force",
                                                  "--output-path", str(ROOT / "meta" / "ee")], timeout=300)
    assert rc == 0, tail(out)
    context = tmp_path / "context"
    rc, out = run_logged("ansible-builder-create", ["ansible-builder", "create", "-f", "execution-environment.yml",
                                                    "-c", str(context)], timeout=300)
    assert rc == 0, tail(out)
    containerfile = (context / "Containerfile").read_text()
    # A base image anyone can pull, by name (no placeholder, no local tag), overridable with --build-arg.
    assert 'ARG EE_BASE_IMAGE="centos:stream9"' in containerfile
    assert "python3.11" in containerfile
    # No tarball version is written anywhere but galaxy.yml.
    for path in ("execution-environment.yml", "meta/ee/requirements.yml", "meta/execution-environment.yml",
                 "README.md", "Makefile"):
        assert "gpufabric-core-0" not in (ROOT / path).read_text() and "gpufabric-ee:0" not in (ROOT / path).read_text()
    assert "ansible-galaxy collection install" in containerfile
    assert "COPY _build/collections/ /tmp/gpufabric-collections/" in containerfile
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    built = sorted(p.name for p in (context / "_build" / "collections").iterdir())
    assert built == ["gpufabric-core-%s.tar.gz" % version]
    # Installed under one name whatever the version: the requirements never go stale when galaxy.yml's changes.
    assert "RUN mv /tmp/gpufabric-collections/gpufabric-core-*.tar.gz /tmp/gpufabric-collections/gpufabric-core.tar.gz" \
        in containerfile
    galaxy = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    names = [c["name"] for c in galaxy["collections"]]
    assert "/tmp/gpufabric-collections/gpufabric-core.tar.gz" in names
    requirements = (context / "_build" / "requirements.txt").read_text()
    assert "netaddr==1.3.0" in requirements and "cryptography==" in requirements and "jmespath" not in requirements
    # The controller only needs SSH: ipmitool, iperf3 and the rest run on the hosts.
    bindep = (context / "_build" / "bindep.txt").read_text()
    assert "openssh-clients [platform:rpm]" in bindep and "\nipmitool" not in bindep


def test_awx_configure_playbook_passes_syntax_check():
    proc = subprocess.run(["ansible-playbook", "--syntax-check", "playbooks/awx_configure.yml"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_awx_configure_refuses_to_run_without_a_project_url():
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", "playbooks/awx_configure.yml"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert proc.returncode != 0
    assert "awx_project_scm_url must name the Git repository" in proc.stdout


def test_every_job_template_playbook_exists():
    play = yaml.safe_load((ROOT / "playbooks" / "awx_configure.yml").read_text())[0]
    for template in play["vars"]["awx_job_templates"]:
        assert (ROOT / template["playbook"]).is_file(), template["playbook"]
        if template["role"]:
            assert (ROOT / "roles" / template["role"] / "meta" / "argument_specs.yml").is_file()


def test_the_bmc_credential_injects_the_password_the_inventorys_bmc_endpoints_read():
    """AWX's credential, not a vaulted file in Git: its type injects gpufabric_bmc_password, which the example
    inventory's cooling endpoints name; its input is secret, so AWX never shows it."""
    tasks = yaml.safe_load((ROOT / "playbooks" / "awx_configure.yml").read_text())[0]["tasks"]
    credential_type = next(task["awx.awx.credential_type"] for task in tasks if "awx.awx.credential_type" in task)
    assert credential_type["inputs"]["fields"] == [{"id": "password", "label": "BMC password", "type": "string",
                                                    "secret": True}]
    assert credential_type["injectors"] == {"extra_vars": {"gpufabric_bmc_password":
                                                           "{% raw %}{{ password }}{% endraw %}"}}
    bmcs = [yaml.safe_load(path.read_text()).get("cooling_bmc") or {}
            for path in (ROOT / "inventories" / "example" / "group_vars").glob("*.yml")]
    passwords = [endpoint.get("password") for bmc in bmcs for endpoint in bmc.values()]
    assert passwords and set(passwords) == {"{{ gpufabric_bmc_password }}"}, passwords


def render_surveys(tmp_path):
    """Template the same expression the job template task uses, on the real argument_specs of every role; returns
    {job template name: survey spec} for the templates with a survey."""
    play = yaml.safe_load((ROOT / "playbooks" / "awx_configure.yml").read_text())[0]
    roles = [t["role"] for t in play["vars"]["awx_job_templates"] if t["role"]]
    playbook = tmp_path / "surveys.yml"
    content = ("{{ lookup('ansible.builtin.file', '%s/roles/' ~ item ~ '/meta/argument_specs.yml')"
               " | ansible.builtin.from_yaml | gpufabric.core.survey_spec(item) | ansible.builtin.to_json }}" % ROOT)
    render = {"dest": str(tmp_path / "{{ item }}.json"), "mode": "0644", "content": content}
    playbook.write_text(yaml.safe_dump([{
        "name": "Render surveys", "hosts": "localhost", "gather_facts": False,
        "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}"},
        "tasks": [{"name": "Render", "ansible.builtin.copy": render, "loop": roles}],
    }]))
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", str(playbook)], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    return {t["name"]: json.loads((tmp_path / f"{t['role']}.json").read_text())
            for t in play["vars"]["awx_job_templates"] if t["role"]}


@pytest.fixture(scope="module")
def surveys(tmp_path_factory):
    return render_surveys(tmp_path_factory.mktemp("surveys"))


def test_survey_specs_render_for_every_role(surveys):
    play = yaml.safe_load((ROOT / "playbooks" / "awx_configure.yml").read_text())[0]
    roles = {t["name"]: t["role"] for t in play["vars"]["awx_job_templates"] if t["role"]}
    assert set(surveys) == set(roles)
    for name, survey in surveys.items():
        role = roles[name]
        specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
        options = specs["argument_specs"]["main"]["options"]
        assert survey["spec"], f"{role}: no survey questions"
        for question in survey["spec"]:
            option = options[question["variable"]]
            assert option.get("type", "str") not in ("list", "dict", "bool")
            assert "default" not in question, question  # AWX would pass it over the inventory
            if option.get("choices"):
                assert question["type"] == "multiplechoice"
                assert question["choices"] == [str(c) for c in option["choices"]]


# A launch as AWX builds it. AWX's SurveyJobTemplateMixin (awx/main/models/mixins.py: _update_unified_job_kwargs and
# _survey_element_validation) gives the job, as extra vars (Ansible's highest precedence): the template's own extra
# vars, over them every survey default that passes its question's validation, over those the launch's answers and
# extra vars. An unanswered question without a default passes nothing.

def survey_answer_errors(question, value):
    """AWX's per-question check of a value (the part that decides whether a default is passed)."""
    kind = question["type"]
    if kind in ("text", "textarea", "password"):
        return [] if isinstance(value, str) else ["expected a string"]
    if kind == "integer":
        # AWX tests the exact type: a bool is refused.
        return [] if isinstance(value, int) and not isinstance(value, bool) else ["expected an integer"]
    if kind == "float":
        return [] if isinstance(value, (int, float)) and not isinstance(value, bool) else ["expected a number"]
    if kind == "multiplechoice":
        choices = question["choices"].split("\n") if isinstance(question["choices"], str) else question["choices"]
        return [] if value in choices else ["not one of the choices"]
    return []


def awx_launch_extra_vars(survey, answers=None, template_extra_vars=None, job_id=4711):
    extra_vars = dict(template_extra_vars or {})
    for question in survey["spec"]:
        default = question.get("default")
        if default is not None and not survey_answer_errors(question, default):
            extra_vars[question["variable"]] = default
    for variable, value in (answers or {}).items():
        question = next(q for q in survey["spec"] if q["variable"] == variable)
        assert not survey_answer_errors(question, value), (variable, value)  # AWX refuses the launch otherwise
        extra_vars[variable] = value
    # AWX's own job variables (ipsec and check_inventory read awx_job_id).
    extra_vars.update({"awx_job_id": job_id, "tower_job_id": job_id})
    return extra_vars


def inventory_values_in_a_play(tmp_path, names, extra_vars=None):
    """What a play sees of each variable of `names` on every host of the example inventory, with these extra vars."""
    out = tmp_path / ("values-%d.json" % len(list(tmp_path.glob("values-*.json"))))
    content = ("{ {% for h in groups['all'] %}{{ h | to_json }}: { {% for v in __names %}{{ v | to_json }}: "
               "{{ (hostvars[h][v] if v in hostvars[h] else '<undefined>') | to_json }}{{ '' if loop.last else ',' }}"
               "{% endfor %} }{{ '' if loop.last else ',' }}{% endfor %} }")
    playbook = tmp_path / "values.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Read the surveyed variables as a job sees them", "hosts": "localhost", "gather_facts": False,
        "connection": "local",
        "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}", "__names": sorted(names)},
        "tasks": [{"name": "Write them",
                   "ansible.builtin.copy": {"dest": str(out), "mode": "0644", "content": content}}],
    }]))
    command = ["ansible-playbook", "-i", str(ROOT / "inventories" / "example"), str(playbook)]
    if extra_vars:
        command += ["-e", json.dumps(extra_vars)]
    rc, output = run_logged("awx-launch-" + out.stem, command, timeout=300,
                            env={"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default", "ANSIBLE_NOCOLOR": "1"})
    assert rc == 0, tail(output)
    return json.loads(out.read_text())


def test_an_unanswered_survey_launch_leaves_every_inventory_value_unchanged(surveys, tmp_path):
    """Every job template's survey, launched unanswered as AWX builds the job: each surveyed variable reaches the
    play with the inventory's value on every host (rdma_expected_rate_gbps 400 on the HGX group, not 0); an answer
    reaches it as given."""
    names = {q["variable"] for survey in surveys.values() for q in survey["spec"]}
    launches = {name: awx_launch_extra_vars(survey) for name, survey in surveys.items()}
    # Nothing but AWX's job variables: no question passes anything when left empty.
    assert all(set(extra) == {"awx_job_id", "tower_job_id"} for extra in launches.values()), launches
    inventory = inventory_values_in_a_play(tmp_path, names)
    assert inventory["gpu-r01-n01"]["rdma_expected_rate_gbps"] == 400
    assert inventory["gpu-r01-n01"]["rdma_driver_source"] == "doca"
    merged = {}
    for extra in launches.values():
        merged.update(extra)
    assert inventory_values_in_a_play(tmp_path, names, merged) == inventory
    # The same path carries an answer: the test would see a default that AWX passed.
    answered = awx_launch_extra_vars(surveys["gpufabric rdma"], {"rdma_expected_rate_gbps": 200})
    seen = inventory_values_in_a_play(tmp_path, names, answered)
    assert {values["rdma_expected_rate_gbps"] for values in seen.values()} == {200}
    assert {host: values["rdma_driver_source"] for host, values in seen.items()} == \
        {host: values["rdma_driver_source"] for host, values in inventory.items()}


# The whole fleet in one job, and a CA that outlives the job

WHOLE_FLEET_PLAYBOOKS = {"discover.yml", "ipsec.yml", "nccl.yml", "verify.yml"}


def imported_playbooks(path):
    """The playbook's own name and every playbook it imports, transitively."""
    names = {path.name}
    for play in yaml.safe_load(path.read_text()) or []:
        imported = play.get("ansible.builtin.import_playbook") or play.get("import_playbook")
        if imported:
            # A collection playbook by its name (remediate.yml, which ansible-rulebook runs alone, out of the tree).
            local = imported.split("gpufabric.core.", 1)[1] + ".yml" if imported.startswith("gpufabric.core.") \
                else imported
            names |= imported_playbooks(path.parent / local)
    return names


def test_job_templates_whose_plays_need_the_whole_fleet_are_not_sliced():
    """A sliced ipsec job creates one CA per slice (each in its own execution environment): the mesh splits."""
    play = yaml.safe_load((ROOT / "playbooks" / "awx_configure.yml").read_text())[0]
    sliced = {t["name"] for t in play["vars"]["awx_job_templates"] if t["slice"]}
    whole_fleet = {t["name"] for t in play["vars"]["awx_job_templates"]
                   if imported_playbooks(ROOT / t["playbook"]) & WHOLE_FLEET_PLAYBOOKS}
    assert {"gpufabric discover", "gpufabric ipsec", "gpufabric nccl", "gpufabric verify",
            "gpufabric configure"} <= whole_fleet
    assert sliced & whole_fleet == set()
    assert sliced == {"gpufabric rdma", "gpufabric bonding", "gpufabric cooling", "gpufabric routing"}
    # Every playbook a user runs has its job template (rollout_guard.yml is site.yml's, soft_roce.yml the labs').
    templated = {Path(t["playbook"]).name for t in play["vars"]["awx_job_templates"]}
    not_templated = {"awx_configure.yml", "rollout_guard.yml", "soft_roce.yml"}
    assert templated >= {p.name for p in (ROOT / "playbooks").glob("*.yml")} - not_templated
    # The playbook says why, next to the list.
    text = (ROOT / "playbooks" / "awx_configure.yml").read_text()
    for reason in ("discover: builds the fabric map", "health, scheduler: each reads the fabric map", "ipsec: one CA signs every host",
                   "nccl: its consistency check", "verify: the bandwidth sweep", "configure (site.yml)"):
        assert reason in text


IPSEC_PLAY = [{"name": "The ipsec role as an AWX job runs it", "hosts": "ipsec", "gather_facts": False,
               "roles": [{"role": "gpufabric.core.ipsec"}]}]


def run_ipsec_preflight(tmp_path, extra_vars):
    hosts = {name: {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                    "ipsec_address": address} for name, address in (("node1", "10.0.0.1"), ("node2", "10.0.0.2"))}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"ipsec": {"hosts": hosts}}}}))
    (tmp_path / "play.yml").write_text(yaml.safe_dump(IPSEC_PLAY))
    env = {"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default", "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_CACHE_PLUGIN": "ansible.builtin.memory", "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks"}
    return run_logged("awx-ipsec-" + tmp_path.name, ["ansible-playbook", "-i", str(tmp_path / "hosts.yml"),
                                                     str(tmp_path / "play.yml"), "--check",
                                                     "-e", json.dumps(extra_vars)], timeout=300, env=env)


@pytest.mark.parametrize("job_var", ["awx_job_id", "tower_job_id"])
def test_ipsec_from_awx_refuses_the_default_ca_folder_before_anything(tmp_path, job_var):
    rc, out = run_ipsec_preflight(tmp_path, {job_var: 4711})
    assert rc == 2, tail(out)
    words = " ".join(out.split())
    for host in ("node1", "node2"):
        assert f"fatal: [{host}]" in out
    assert "node1: ipsec_pki_dir: running from AWX (job 4711)" in words
    assert "TASK [gpufabric.core.ipsec : Gather the facts" not in out


def test_ipsec_from_awx_refuses_a_ca_folder_inside_the_execution_environment(tmp_path):
    rc, out = run_ipsec_preflight(tmp_path, {"awx_job_id": 12, "ipsec_pki_dir": "/runner/pki"})
    assert rc == 2, tail(out)
    assert "/runner/pki is inside the AWX execution environment" in " ".join(out.split())


@pytest.mark.parametrize("extra, passes", [
    ({"awx_job_id": 12}, False),
    ({"awx_job_id": 12, "ipsec_pki_dir": "/srv/gpufabric/pki/ipsec"}, True),
    ({}, True),
])
def test_check_inventory_applies_the_same_awx_rule(extra, passes):
    command = ["ansible-playbook", "-i", str(ROOT / "inventories" / "example"),
               str(ROOT / "playbooks" / "check_inventory.yml"), "--limit", "ipsec"]
    if extra:
        command += ["-e", json.dumps(extra)]
    rc, out = run_logged("awx-check-inventory-%d" % len(extra), command, timeout=300,
                         env={"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default", "ANSIBLE_NOCOLOR": "1",
                              "ANSIBLE_SHOW_CUSTOM_STATS": "1"})
    # The job's artifacts in AWX (set_stats, summed over the hosts): how many were checked, which failed.
    stats = json.loads(out.split("\tRUN: ", 1)[1].split("\n", 1)[0])
    assert stats["gpufabric_check_inventory_hosts"] == 2, tail(out)
    # set_stats sums per host in the order the hosts finish: a set of hosts, in no set order.
    assert sorted(stats["gpufabric_check_inventory_failed_hosts"]) == ([] if passes else ["inf-r03-n01", "inf-r03-n02"])
    if passes:
        assert rc == 0, tail(out)
    else:
        assert rc != 0
        # Each host's last task repeats every problem of that host in one line.
        failures = [line for line in out.splitlines() if line.startswith("fatal: [") and "check(s) failed" in line]
        assert len(failures) == 2 and all("running from AWX (job 12)" in line for line in failures), tail(out)
