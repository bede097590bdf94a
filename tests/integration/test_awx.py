"""AWX as code: the execution environment's build context and the configuration playbook.

The AWX service cannot run on this machine; what can be checked is checked: ansible-builder produces a complete
build context, awx_configure.yml passes the syntax check (ansible-lint covers it too), and its surveys are generated
from the roles' real argument_specs. ansible-runner, the engine AWX uses, runs site.yml against the lab in
test_site.py.
"""

import shutil
import subprocess

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
    assert "ansible-galaxy collection install" in containerfile
    assert "COPY _build/collections/ /tmp/gpufabric-collections/" in containerfile
    built = sorted(p.name for p in (context / "_build" / "collections").iterdir())
    assert built == ["gpufabric-core-0.1.0.tar.gz"]
    galaxy = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    names = [c["name"] for c in galaxy["collections"]]
    assert "/tmp/gpufabric-collections/gpufabric-core-0.1.0.tar.gz" in names
    assert "netaddr==1.3.0" in (context / "_build" / "requirements.txt").read_text()
    assert "ipmitool [platform:rpm]" in (context / "_build" / "bindep.txt").read_text()


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


def test_survey_specs_render_for_every_role(tmp_path):
    """Template the same expression the job template task uses, on the real argument_specs of every role."""
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
    for role in roles:
        survey = yaml.safe_load((tmp_path / f"{role}.json").read_text())
        specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
        options = specs["argument_specs"]["main"]["options"]
        assert survey["spec"], f"{role}: no survey questions"
        for question in survey["spec"]:
            option = options[question["variable"]]
            assert option.get("type", "str") not in ("list", "dict", "bool")
            assert "{{" not in str(question.get("default", "")), question
            if option.get("choices"):
                assert question["type"] == "multiplechoice"
                assert question["choices"] == [str(c) for c in option["choices"]]
    shutil.rmtree(tmp_path, ignore_errors=True)
