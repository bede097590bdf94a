"""Docs generated from the source of truth (scripts/docs.py).

The variable tables in the role READMEs are rendered from meta/argument_specs.yml and must be current; the specs must
hold the same names and defaults as defaults/main.yml; the docs site (antsibull-docs, Sphinx) builds without a warning
and has a page for every plugin, every role and the changelog.
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from integration_helpers import ROOT, run_logged, tail

DOCS = ROOT / "scripts" / "docs.py"
ROLES = sorted(p.name for p in (ROOT / "roles").iterdir()
               if p.is_dir() and not p.name.startswith("_") and (p / "meta" / "argument_specs.yml").is_file())
# Plugin folders whose files get a page of their own on the docs site, and the type antsibull-docs names them by.
PAGE_TYPES = {"modules": "module", "filter": "filter", "callback": "callback", "lookup": "lookup",
              "inventory": "inventory", "test": "test", "connection": "connection", "become": "become",
              "cache": "cache", "vars": "vars", "strategy": "strategy", "action": None}


def _load_docs_module():
    spec = importlib.util.spec_from_file_location("gpufabric_docs", DOCS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


docs = _load_docs_module()


def run_docs(*args, script=DOCS):
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=120,
                          check=False, cwd=str(script.parent.parent))


def copy_for_check(tmp_path):
    """What `--check` reads, copied: the script, and each role's README and argument specs."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(DOCS, tmp_path / "scripts" / "docs.py")
    for role in ROLES:
        (tmp_path / "roles" / role / "meta").mkdir(parents=True)
        shutil.copy(ROOT / "roles" / role / "README.md", tmp_path / "roles" / role / "README.md")
        shutil.copy(ROOT / "roles" / role / "meta" / "argument_specs.yml",
                    tmp_path / "roles" / role / "meta" / "argument_specs.yml")
    return tmp_path / "scripts" / "docs.py"


# --- (a) the READMEs' generated part is current ---------------------------------------------------------------

def test_every_role_readme_is_current():
    result = run_docs("--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_role_readme_has_one_generated_table_under_variables():
    for role in ROLES:
        text = (ROOT / "roles" / role / "README.md").read_text(encoding="utf-8")
        assert text.count(docs.BEGIN) == 1 and text.count(docs.END) == 1, role
        variables = text.index("\n## Variables\n")
        assert variables < text.index(docs.BEGIN), role
        # The table sits inside the Variables section, not under a later heading.
        assert "\n## " not in text[variables + 1:text.index(docs.BEGIN)].split("\n", 1)[1], role


def test_every_option_of_every_role_is_a_row_of_its_readme():
    for role in ROLES:
        readme = (ROOT / "roles" / role / "README.md").read_text(encoding="utf-8")
        table = readme.split(docs.BEGIN, 1)[1].split(docs.END, 1)[0]
        rows = re.findall(r"^\| `([^`]+)` \|", table, flags=re.M)
        paths = [row[0] for row in docs.option_rows(docs.main_options(ROOT / "roles" / role))]
        assert rows == paths, role
        assert len(set(rows)) == len(rows), role


def test_check_names_a_readme_whose_table_was_edited_by_hand(tmp_path):
    script = copy_for_check(tmp_path)
    assert run_docs("--check", script=script).returncode == 0
    readme = tmp_path / "roles" / "rdma" / "README.md"
    text = readme.read_text(encoding="utf-8")
    edited = text.replace("| `rdma_reboot_timeout` | int | `1800` |", "| `rdma_reboot_timeout` | int | `900` |")
    assert edited != text
    readme.write_text(edited, encoding="utf-8")
    result = run_docs("--check", script=script)
    assert result.returncode == 1
    assert result.stdout.strip() == "roles/rdma/README.md: stale, run scripts/docs.py"
    assert readme.read_text(encoding="utf-8") == edited, "--check must not write"
    # Without --check the table is written back, and the copy is current again.
    assert run_docs(script=script).returncode == 0
    assert readme.read_text(encoding="utf-8") == text
    assert run_docs("--check", script=script).returncode == 0


def test_check_names_a_readme_whose_spec_changed(tmp_path):
    script = copy_for_check(tmp_path)
    spec = tmp_path / "roles" / "cooling" / "meta" / "argument_specs.yml"
    text = spec.read_text(encoding="utf-8")
    spec.write_text(text.replace("      cooling_reboot_timeout:\n", "      cooling_new_option:\n"
                                 "        description: An option added without regenerating the README.\n"
                                 "        type: int\n        default: 7\n      cooling_reboot_timeout:\n"),
                    encoding="utf-8")
    result = run_docs("--check", script=script)
    assert result.returncode == 1
    assert result.stdout.splitlines() == ["roles/cooling/README.md: stale, run scripts/docs.py"]


def test_a_readme_without_markers_is_an_error_naming_it(tmp_path):
    script = copy_for_check(tmp_path)
    readme = tmp_path / "roles" / "nccl" / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace(docs.END, ""), encoding="utf-8")
    result = run_docs("--check", script=script)
    assert result.returncode == 2
    assert "roles/nccl/README.md: needs the markers" in result.stderr


def test_a_description_with_broken_markup_is_an_error_naming_the_option(tmp_path):
    script = copy_for_check(tmp_path)
    spec = tmp_path / "roles" / "nccl" / "meta" / "argument_specs.yml"
    spec.write_text(spec.read_text(encoding="utf-8").replace(
        "description: Path of the NCCL topology file, under C(/etc/nccl/) in normal form (no C(..)).",
        "description: Path of the C(NCCL topology file"),
        encoding="utf-8")
    result = run_docs("--check", script=script)
    assert result.returncode == 2
    assert "nccl_topology_xml_path: description does not parse as Ansible markup" in result.stderr


# --- the rendering itself -------------------------------------------------------------------------------------

def test_ansible_markup_becomes_markdown():
    rendered = docs.markup_to_md(
        ["Use C(ipmitool -I lanplus) with V(true), O(bonding_mtu=9000), I(never) B(ever), M(ansible.posix.sysctl),"
         " E(HOME), L(the guide,https://example.org/guide) and U(https://example.org).", "A <chip> with a_b *x*."],
        "bonding", "test")
    assert rendered == (
        "Use `ipmitool -I lanplus` with `true`, `bonding_mtu=9000`, *never* **ever**, `ansible.posix.sysctl`,"
        " `HOME`, [the guide](https://example.org/guide) and <https://example.org>.<br><br>"
        "A &lt;chip> with a_b \\*x\\*.")


def test_an_option_of_another_plugin_names_it():
    assert docs.markup_to_md("See O(ansible.posix.sysctl#module:reload).", "bonding", "test") == (
        "See `reload` (of `ansible.posix.sysctl`).")


def test_suboptions_are_rows_with_dotted_paths():
    options = {
        "bonding_bonds": {"type": "list", "elements": "dict", "default": [], "description": "Bonds.",
                          "options": {"name": {"type": "str", "required": True, "description": "Name."},
                                      "routes": {"type": "list", "elements": "dict", "description": "Routes.",
                                                 "options": {"to": {"type": "str", "description": "To."}}}}},
        "cooling_bmc": {"type": "dict", "default": {}, "description": "BMC.",
                        "options": {"ipmi": {"type": "dict", "description": "IPMI."}}},
    }
    assert [row[0] for row in docs.option_rows(options)] == [
        "bonding_bonds", "bonding_bonds[].name", "bonding_bonds[].routes", "bonding_bonds[].routes[].to",
        "cooling_bmc", "cooling_bmc.ipmi"]


def test_cells_keep_pipes_and_backticks_inside_their_cell():
    assert docs.cell(docs.code("a|b")) == "`a\\|b`"
    assert docs.code("a`b") == "`` a`b ``"
    assert docs.value_md("no") == '`"no"`'
    assert docs.value_md("") == '`""`'
    assert docs.value_md(["*", "root"]) == "`['*', root]`"
    assert docs.value_md({"a": 1}) == "`{a: 1}`"
    assert docs.value_md("{{ lookup('ansible.builtin.env', 'HOME') }}/x") == (
        "`\"{{ lookup('ansible.builtin.env', 'HOME') }}/x\"`")


# --- (b) defaults/main.yml and the argument specs agree ---------------------------------------------------------

@pytest.mark.parametrize("role", ROLES)
def test_defaults_and_argument_specs_hold_the_same_names_and_defaults(role):
    """Every default is specified with the same value, and every specified default is in defaults/main.yml.

    An option without a default in the spec stays undefined until the inventory sets it (verify_address: the role
    tests `is defined`), so it must not be in defaults/main.yml either.
    """
    options = docs.main_options(ROOT / "roles" / role)
    defaults = yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text(encoding="utf-8")) or {}
    specified = {name for name, spec in options.items() if "default" in spec}
    assert sorted(set(defaults) - set(options)) == [], "in defaults/main.yml, not in the argument specs"
    assert sorted(specified - set(defaults)) == [], "a default in the argument specs, not in defaults/main.yml"
    assert sorted(set(defaults) - specified) == [], "in defaults/main.yml, without a default in the argument specs"
    different = {name: (options[name]["default"], value) for name, value in defaults.items()
                 if options[name]["default"] != value or type(options[name]["default"]) is not type(value)}
    assert different == {}, "argument specs default != defaults/main.yml"
    undescribed = [path for path, spec in docs.option_rows(options) if not spec.get("description")]
    assert undescribed == []


# --- (c) the docs site --------------------------------------------------------------------------------------------

def _pages_expected():
    pages = {"index.html", "changelog.html", "collections/gpufabric/core/index.html"}
    for folder, kind in PAGE_TYPES.items():
        for path in sorted((ROOT / "plugins" / folder).glob("*.py")) if kind else []:
            if path.name != "__init__.py":
                pages.add("collections/gpufabric/core/%s_%s.html" % (path.stem, kind))
    pages.update("collections/gpufabric/core/%s_role.html" % role for role in ROLES)
    pages.update("guides/%s.html" % path.stem for path in (ROOT / "docs").glob("*.md"))
    return pages


def test_docs_site_builds_without_warnings_with_a_page_per_plugin_role_and_the_changelog(tmp_path):
    dest = tmp_path / "site"
    # antsibull-docs runs ansible-doc, which finds the collection through its link in .build/collections.
    env = {"ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"),
           "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])}
    rc, out = run_logged("docs-site", [sys.executable, str(DOCS), "site", str(dest)], timeout=300, env=env)
    # sphinx-build runs with -W: any warning fails the build.
    assert rc == 0, tail(out)
    assert [line for line in out.splitlines() if "WARNING" in line or "ERROR" in line] == []
    html = dest / "build" / "html"
    built = {str(p.relative_to(html)) for p in html.rglob("*.html")}
    missing = sorted(_pages_expected() - built)
    assert missing == [], missing
    assert len([p for p in built if p.startswith("collections/gpufabric/core/") and p.endswith("_module.html")]) == \
        len([p for p in (ROOT / "plugins" / "modules").glob("*.py") if p.name != "__init__.py"])
    for role in ROLES:
        page = (html / "collections" / "gpufabric" / "core" / ("%s_role.html" % role)).read_text(encoding="utf-8")
        for name in docs.main_options(ROOT / "roles" / role):
            assert name in page, (role, name)
    # The guides (docs/*.md): every section heading, the tables as tables, the images beside them, in the navigation.
    index = (html / "index.html").read_text(encoding="utf-8")
    for guide in sorted((ROOT / "docs").glob("*.md")):
        page = (html / "guides" / (guide.stem + ".html")).read_text(encoding="utf-8")
        assert 'href="guides/%s.html"' % guide.stem in index, guide.name
        text = guide.read_text(encoding="utf-8")
        for heading in re.findall(r"^#{2,3} (.+)$", text, flags=re.MULTILINE):
            words = re.sub(r"`", "", heading).split()[:3]
            assert ">" + " ".join(words) in re.sub(r"</?code>", "", page), (guide.name, heading)
        assert ("<table>" in page) == bool(re.search(r"^\|.*\|$", text, flags=re.MULTILINE)), guide.name
        for image in re.findall(r"\]\((images/[^)]+)\)", text):
            assert (html / "guides" / image).is_file(), image
    changelog = (html / "changelog.html").read_text(encoding="utf-8")
    # Every release, and every fragment not released yet.
    for version in yaml.safe_load((ROOT / "changelogs" / "changelog.yaml").read_text(encoding="utf-8"))["releases"]:
        assert "v%s" % version in changelog, version
    fragments = sorted((ROOT / "changelogs" / "fragments").glob("*.yml"))
    for fragment in fragments:
        # The trivial section is left out of the changelog by design (changelogs/config.yaml).
        sections = {name: section for name, section in (yaml.safe_load(fragment.read_text(encoding="utf-8")) or {}).items()
                    if name != "trivial"}
        if not sections:
            continue
        entries = [entry for section in sections.values() for entry in (section if isinstance(section, list) else [section])]
        first_words = " ".join(entries[0].split()[:3])
        assert first_words.split("``", maxsplit=1)[0] in changelog, fragment.name
    # References to docs.ansible.com pages resolve to links, without intersphinx downloads.
    module_page = (html / "collections" / "gpufabric" / "core" / "bond_config_module.html").read_text(encoding="utf-8")
    assert "https://docs.ansible.com/projects/ansible/latest/collections/ansible/posix/sysctl_module.html" in module_page


def test_site_refuses_to_replace_a_folder_it_did_not_build(tmp_path):
    keep = tmp_path / "notes.txt"
    keep.write_text("not a docs site", encoding="utf-8")
    result = run_docs("site", str(tmp_path))
    assert result.returncode == 2
    assert "is not a docs site built by scripts/docs.py" in result.stderr
    assert keep.read_text(encoding="utf-8") == "not a docs site"
