"""plugins/filter/host_problems.py: the OS family and service manager check that role preflights merge with their
variables' check."""

from ansible_collections.gpufabric.core.plugins.filter.host_problems import host_problems

DEBIAN = {"os_family": "Debian", "service_mgr": "systemd", "distribution": "Debian", "distribution_version": "12.8"}


def test_a_supported_host_has_no_problem():
    assert host_problems(DEBIAN, "rdma", ["Debian", "RedHat"]) == []


def test_an_unsupported_family_or_init_is_named():
    assert host_problems(dict(DEBIAN, os_family="Alpine", distribution="Alpine", distribution_version="3.20",
                              service_mgr="openrc"), "rdma", ["Debian", "RedHat"]) == [
        "the rdma role supports the Debian and RedHat families under systemd; this host is Alpine 3.20 (Alpine) "
        "with openrc"]
    assert "with an unknown service manager" in host_problems(dict(DEBIAN, service_mgr=None), "rdma", ["Debian"])[0]
    assert "(Alpine) with systemd" in host_problems({"os_family": "Alpine"}, "rdma", ["Debian"])[0]
    assert "with openrc" in host_problems({"service_mgr": "openrc"}, "rdma", ["Debian"])[0]


def test_facts_not_gathered_are_not_checked():
    assert host_problems({}, "rdma", ["Debian"]) == []
    # A fact cache with the distribution facts but not the service manager.
    assert host_problems({"os_family": "Debian", "distribution": "Debian"}, "rdma", ["Debian", "RedHat"]) == []


def test_a_role_without_units_or_family_limits_checks_only_what_it_needs():
    openrc = dict(DEBIAN, service_mgr="openrc")
    assert host_problems(openrc, "nccl", ["Debian", "RedHat"], systemd=False) == []
    assert host_problems(dict(openrc, os_family="Alpine"), "verify", [], systemd=False) == []
    assert host_problems(openrc, "verify", [], systemd=True) == [
        "the verify role supports any OS family under systemd; this host is Debian 12.8 (Debian) with openrc"]
    assert host_problems(dict(DEBIAN, os_family="Suse", distribution="SLES"), "nccl", ["Debian"], systemd=False) == [
        "the nccl role supports the Debian families; this host is SLES 12.8 (Suse) with systemd"]


UBUNTU = {"os_family": "Debian", "service_mgr": "systemd", "distribution": "Ubuntu", "distribution_version": "24.04",
          "distribution_major_version": "24"}


def test_a_release_never_tested_is_refused_unless_allowed():
    """Ubuntu and Rocky are of supported families but were only ever rendered, never run (README)."""
    assert host_problems(UBUNTU, "rdma", ["Debian", "RedHat"]) == [
        "the rdma role is tested on Debian 12 and 13 only; this host is Ubuntu 24.04: set "
        "gpufabric_untested_platforms: true to run it there anyway (README, Supported platforms)"]
    rocky = dict(UBUNTU, os_family="RedHat", distribution="Rocky", distribution_version="9.4",
                 distribution_major_version="9")
    assert "this host is Rocky 9.4" in host_problems(rocky, "bonding", ["Debian", "RedHat"])[0]
    # Debian testing reports n/a as its major version (the ipsec scenario's forky nodes allow it).
    forky = dict(DEBIAN, distribution_version="n/a", distribution_major_version="n/a")
    assert "this host is Debian n/a" in host_problems(forky, "ipsec", ["Debian"])[0]
    for facts in (UBUNTU, rocky, forky):
        assert host_problems(facts, "rdma", ["Debian", "RedHat"], untested=True) == []


def test_the_tested_releases_and_roles_of_any_family_pass():
    for major in ("12", "13"):
        assert host_problems(dict(DEBIAN, distribution_major_version=major), "rdma", ["Debian"]) == []
    assert host_problems(UBUNTU, "verify", [], systemd=False) == []
    # Facts gathered without the distribution's version are not judged.
    assert host_problems(dict(UBUNTU, distribution_major_version=None), "rdma", ["Debian"]) == []
