# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What is wrong with the rdma role's variables, checked on the controller before any host changes.

rdma_problems() takes the role's variables by name (rdma_*, as the role's preflight and check_inventory.yml
collect them; other names are ignored) after argument_specs has checked their types and choices, and returns one
sentence per problem, each naming the variable. The same rules for the boot-time tuning configuration are applied
again on the host by roles/rdma/files/gpufabric_rdma_tune.py.
"""

from __future__ import annotations

import re

from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import (
    ARGUMENT_MAX,
    as_number,
    full_match_problem,
    has_line_break,
    int_range_problem,
    length_problem,
    masked,
)

# Each value is written into a file (sources list, modprobe.d, limits.d, the tune script's JSON) or a command line:
# every pattern is matched whole.
URL = re.compile(r"(https?|file)://[^\s\"'<>\\`]+")
PACKAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+_-]*")
PACKAGE_VERSION = re.compile(r"[A-Za-z0-9.+:~_*-]*")
MODULE = re.compile(r"[A-Za-z0-9_-]+")
MEMLOCK_LIMIT = re.compile(r"unlimited|[1-9][0-9]*")
# pam_limits domains: *, user, @group, %group, uid or gid ranges (1000:, :2000, @500:600).
MEMLOCK_DOMAIN = re.compile(r"\*|%?@?[A-Za-z0-9_.-]+(:[0-9]*)?|@?:[0-9]+")
CPULIST = re.compile(r"([0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*)?")
DEVICE = re.compile(r"[A-Za-z0-9_.-]+")
MLXCONFIG_PARAMETER = re.compile(r"[A-Z0-9_]+(\[[0-9.]+\])?")
MLXCONFIG_VALUE = re.compile(r"[A-Za-z0-9_.()-]+")
GPG_KEY_BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
# A line of /etc/modprobe.d: kmod reads lines of any length, but no module takes options near this long, and the
# kernel hands them to the module as one string.
MODULE_OPTIONS_MAX = 1024
# An apt source line and wget/curl's argv: servers refuse request lines past 8 KiB; 2048 is the practical URL limit.
URL_MAX = 2048


def _list_problems(problems, name, values, pattern, rule):
    if not isinstance(values, list):
        problems.append("%s: must be a list; got %r" % (name, values))
        return
    for index, value in enumerate(values):
        problem = full_match_problem("%s[%d]" % (name, index), value, pattern, rule)
        if problem:
            problems.append(problem)


def _cpulist_problem(name, value):
    problem = full_match_problem(name, value, CPULIST, "must be a cpulist such as 0-1,56 (or empty)")
    if problem:
        return problem
    for item in filter(None, value.split(",")):
        first, _sep, last = item.partition("-")
        if last and int(last) < int(first):
            return "%s: the range %s runs backwards" % (name, item)
    return None


def _doca_problems(settings, problems):
    doca = settings.get("rdma_driver_source") == "doca"
    url = settings.get("rdma_doca_repo_url", "")
    if url != "" or doca:
        rule = ("must be the http(s):// or file:// URL of the DOCA-OFED mirror"
                + (" when rdma_driver_source is doca" if doca else ""))
        problem = (length_problem("rdma_doca_repo_url", url, URL_MAX, "apt's source line")
                   or full_match_problem("rdma_doca_repo_url", url, URL, rule))
        if problem:
            problems.append(problem)
    key_url = settings.get("rdma_doca_gpg_key_url", "")
    key = settings.get("rdma_doca_gpg_key", "")
    if key_url != "":
        problem = length_problem("rdma_doca_gpg_key_url", key_url, URL_MAX, "the download's URL") or \
            full_match_problem("rdma_doca_gpg_key_url", key_url, URL, "must be an http(s):// or file:// URL")
        if problem:
            problems.append(problem)
    if key != "" and (not isinstance(key, str) or GPG_KEY_BEGIN not in key):
        problems.append("rdma_doca_gpg_key: must be an ASCII-armoured public key (%s ...)" % GPG_KEY_BEGIN)
    if doca and key_url == "" and key == "":
        problems.append("rdma_doca_gpg_key_url: (or rdma_doca_gpg_key) must give the repository's signing key "
                        "when rdma_driver_source is doca")
    for name, pattern, rule in (
        ("rdma_doca_package", PACKAGE, "must be a package name"),
        ("rdma_doca_version", PACKAGE_VERSION, "must be a package version (a trailing * allowed), without spaces"),
    ):
        problem = full_match_problem(name, settings.get(name, ""), pattern, rule)
        if problem:
            problems.append(problem)


def _module_options_problems(options, problems):
    if not isinstance(options, dict):
        problems.append("rdma_module_options: must map module names to option strings; got %r" % (options,))
        return
    for module in sorted(options, key=str):
        value = options[module]
        name = "rdma_module_options.%s" % module
        if full_match_problem(name, module, MODULE, ""):
            problems.append("rdma_module_options: %r is not a kernel module name (letters, digits, _ and -)"
                            % (module,))
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            problems.append("%s: must be an option string such as 'name=value'; got %r" % (name, value))
            continue
        text = str(value)
        if not text.strip() or has_line_break(text) or "#" in text or "\\" in text:
            # modprobe joins a line ending in a backslash with the next one, and no option needs one elsewhere.
            problems.append("%s: must be a non-empty one-line option string without '#' or '\\'; got %r" % (
                name, text[:80]))
        elif len(text) > MODULE_OPTIONS_MAX:
            problems.append(length_problem(name, text, MODULE_OPTIONS_MAX, "a line of /etc/modprobe.d"))


def _mlxconfig_problems(settings, problems):
    if not isinstance(settings, dict):
        problems.append("rdma_mlxconfig_settings: must map mlxconfig parameter names to values; got %r" % (settings,))
        return
    for parameter in sorted(settings, key=str):
        if full_match_problem("", parameter, MLXCONFIG_PARAMETER, ""):
            problems.append("rdma_mlxconfig_settings: %r is not an mlxconfig parameter name (capitals, digits, _ and "
                            "an optional [index])" % (parameter,))
            continue
        value = settings[parameter]
        text = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None
        if text is None or len(text) > ARGUMENT_MAX or full_match_problem("", text, MLXCONFIG_VALUE, ""):
            problems.append("rdma_mlxconfig_settings.%s: must be a plain value (letters, digits, _ . ( ) -); got %r"
                            % (parameter, value))


def rdma_problems(settings):
    """Every problem with the rdma role's variables (a dict of name: value), one sentence each."""
    if not isinstance(settings, dict):
        return ["the rdma settings must be a dict of rdma_* variables; got %s" % type(settings).__name__]
    problems = []
    _doca_problems(settings, problems)
    for name in ("rdma_inbox_packages", "rdma_extra_packages", "rdma_doca_hold_extra_packages"):
        _list_problems(problems, name, settings.get(name, []), PACKAGE, "must be a package name")
    _module_options_problems(settings.get("rdma_module_options", {}), problems)
    _list_problems(problems, "rdma_modules_load", settings.get("rdma_modules_load", []), MODULE,
                   "must be a kernel module name")
    limit = settings.get("rdma_memlock_limit", "unlimited")
    if isinstance(limit, int) and not isinstance(limit, bool):
        limit = str(limit)
    problem = full_match_problem("rdma_memlock_limit", limit, MEMLOCK_LIMIT,
                                 "must be 'unlimited' or a positive size in KiB")
    if problem:
        problems.append(problem)
    _list_problems(problems, "rdma_memlock_domains", settings.get("rdma_memlock_domains", []), MEMLOCK_DOMAIN,
                   "must be a pam_limits domain (user, @group, %group, uid range, *)")
    problem = _cpulist_problem("rdma_irq_affinity_exclude_cpus", settings.get("rdma_irq_affinity_exclude_cpus", ""))
    if problem:
        problems.append(problem)
    _list_problems(problems, "rdma_devices", settings.get("rdma_devices", []), DEVICE,
                   "must be an RDMA device or netdev name")
    for name in ("rdma_roce_tos", "rdma_roce_traffic_class"):
        problem = int_range_problem(name, settings.get(name, -1), -1, 255, rule="must be -1 (leave as is) or 0-255")
        if problem:
            problems.append(problem)
    for name, low in (("rdma_device_wait_seconds", 0), ("rdma_reboot_timeout", 1)):
        problem = int_range_problem(name, settings.get(name, low), low)
        if problem:
            problems.append(problem)
    rate = as_number(settings.get("rdma_expected_rate_gbps", 0))
    if rate is None or rate < 0:
        problems.append("rdma_expected_rate_gbps: must be a number of at least 0 (0 accepts any rate); got %r"
                        % (settings.get("rdma_expected_rate_gbps"),))
    _mlxconfig_problems(settings.get("rdma_mlxconfig_settings", {}), problems)
    # A mirror URL may carry user:password@: never in a message.
    return masked(problems, settings)
