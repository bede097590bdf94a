"""Static quality gates: ansible-lint's production profile, ansible-test sanity, docs and changelog."""

import yaml

from integration_helpers import ROOT, run_logged, tail


def test_ansible_lint_production_profile_is_clean():
    rc, out = run_logged("ansible-lint", ["ansible-lint", "--profile", "production", "--nocolor"], timeout=900)
    assert rc == 0, tail(out)


def test_ansible_test_sanity_is_clean():
    rc, out = run_logged("ansible-test-sanity", [str(ROOT / "scripts" / "sanity.sh")], timeout=1800)
    assert rc == 0, tail(out)


def test_no_sanity_ignore_entries():
    ignores = list((ROOT / "tests" / "sanity").glob("ignore-*.txt"))
    assert [p.name for p in ignores if p.read_text().strip()] == []


def test_changelog_fragments_are_valid():
    rc, out = run_logged("antsibull-changelog", ["antsibull-changelog", "lint"], timeout=120)
    assert rc == 0, tail(out)


def test_the_released_changelog_is_valid():
    # changelogs/changelog.yaml is written by `antsibull-changelog release` (ansible-lint leaves it out: its layout
    # is the tool's, not the project's YAML style).
    rc, out = run_logged("antsibull-changelog-yaml", ["antsibull-changelog", "lint-changelog-yaml",
                                                      str(ROOT / "changelogs" / "changelog.yaml")], timeout=120)
    assert rc == 0, tail(out)


def _is_internal(role):
    """An internal role (tasks other roles import with tasks_from) says so in its galaxy description; it is named
    without the leading underscore of the usual convention because ansible-lint's production profile refuses one."""
    meta = yaml.safe_load((role / "meta" / "main.yml").read_text())
    return meta["galaxy_info"]["description"].startswith("Internal ")


def test_every_role_has_argument_specs_and_readme():
    for role in sorted((ROOT / "roles").iterdir()):
        if not role.is_dir():
            continue
        assert (role / "README.md").is_file(), role.name
        # An internal role's values are typed by the argument_specs of the roles that pass them.
        if not _is_internal(role):
            assert (role / "meta" / "argument_specs.yml").is_file(), role.name
    assert [role.name for role in sorted((ROOT / "roles").iterdir()) if _is_internal(role)] == ["common"]
