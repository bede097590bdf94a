# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What is wrong with the verify role's variables, checked on the controller before any test runs.

verify_problems() takes one host's verify_* variables by name (other names are ignored) after argument_specs has
checked their types and choices, and the hosts of the play (for the rules that need them: an explicit plan names
play hosts, a sweep needs two of them). It returns one sentence per problem naming the variable. The role runs it
for every host, since group and host variables differ between hosts.
"""

from __future__ import annotations

import re

from ansible_collections.gpufabric.core.plugins.module_utils.verify.gates import GATE_PERCENT_MAX, GATE_PERCENT_MIN
from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import (
    ARGUMENT_MAX,
    ENV_TOTAL_MAX,
    PATH_MAX,
    TEXTFILE_UNDER,
    as_int,
    as_number,
    environment_problems,
    full_match_problem,
    has_line_break,
    int_range_problem,
    length_problem,
    masked,
    path_problems,
)

PERFTEST_TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw")
# Where a perftest sweep's rails come from (bandwidth.RAILS_FROM).
RAILS_FROM = ("gpus", "rdma_devices")
# perftest rail r listens on verify_base_port + r: leave room for this many rails below 65536.
MAX_RAILS = 64
MESSAGE_SIZE = re.compile(r"[0-9]+[KMGkmg]?")
PROGRAM = re.compile(r"[A-Za-z0-9_.+-]+|/[A-Za-z0-9_.+/-]+")
ENVIRONMENT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ADDRESS = re.compile(r"[A-Za-z0-9_.:%-]+")
# node_exporter's textfile collector directory: Debian's /var/lib/prometheus/node-exporter, the upstream
# /var/lib/node_exporter/textfile_collector, or a tmpfs under /run.


def _threshold_problems(name, thresholds, problems):
    if not isinstance(thresholds, dict):
        problems.append("%s: must map inventory group names to positive numbers; got %r" % (name, thresholds))
        return
    for group in sorted(thresholds, key=str):
        number = as_number(thresholds[group])
        if number is None or number <= 0:
            problems.append("%s.%s: must be a positive number; got %r" % (name, group, thresholds[group]))


def _rounds_problems(rounds, hosts, problems):
    if not isinstance(rounds, list):
        problems.append("verify_rounds: must be a list of rounds; got %r" % (rounds,))
        return
    for index, pairs in enumerate(rounds):
        name = "verify_rounds[%d]" % index
        if not isinstance(pairs, list):
            problems.append("%s: must be a list of [client, server] pairs; got %r" % (name, pairs))
            continue
        seen = []
        for position, pair in enumerate(pairs):
            if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(h, str) for h in pair):
                problems.append("%s[%d]: must be a [client, server] pair of host names; got %r" % (name, position, pair))
                continue
            unknown = [host for host in pair if hosts is not None and host not in hosts]
            if unknown:
                verb = "is" if len(unknown) == 1 else "are"
                problems.append("%s[%d]: %s %s not a host of this play" % (name, position, ", ".join(unknown), verb))
            twice = sorted(set(host for host in pair if host in seen or pair.count(host) > 1))
            if twice:
                problems.append("%s[%d]: %s already tested in this round" % (name, position, ", ".join(twice)))
            seen.extend(pair)


def verify_problems(settings, hosts=None):
    """Every problem with one host's verify variables (a dict of name: value), one sentence each.

    hosts: the hosts of the play, or None where they are not known (the rules that need them are skipped).
    """
    if not isinstance(settings, dict):
        return ["the verify settings must be a dict of verify_* variables; got %s" % type(settings).__name__]
    problems = []
    get = settings.get
    for name, default, low in (("verify_duration", 10, 1), ("verify_poll_interval", 2, 1),
                               ("verify_timeout_margin", 30, 0), ("verify_streams", 1, 1), ("verify_qps", 1, 1),
                               ("verify_path_mtu_max_probes", 18, 2)):
        problem = int_range_problem(name, get(name, default), low)
        if problem:
            problems.append(problem)
    problem = int_range_problem("verify_clock_retries", get("verify_clock_retries", 1), 0, 5)
    if problem:
        problems.append(problem)
    problem = int_range_problem("verify_message_size", get("verify_message_size"), 1, allow_none=True,
                                rule="must be null (perftest's default) or a size in bytes of at least 1")
    if problem:
        problems.append(problem)
    percent = as_number(get("verify_gate_percent", 90))
    if percent is None or not GATE_PERCENT_MIN <= percent <= GATE_PERCENT_MAX:
        problems.append("verify_gate_percent: must be a share of the port rate from %d to %d %%; got %r"
                        % (GATE_PERCENT_MIN, GATE_PERCENT_MAX, get("verify_gate_percent")))
    problem = int_range_problem("verify_base_port", get("verify_base_port"), 1, 65535 - MAX_RAILS, allow_none=True,
                                rule="must be null or a port from 1 to %d (rail r uses the port + r)"
                                % (65535 - MAX_RAILS))
    if problem:
        problems.append(problem)
    _threshold_problems("verify_thresholds_gbps", get("verify_thresholds_gbps", {}), problems)
    _threshold_problems("verify_nccl_thresholds_gbytes", get("verify_nccl_thresholds_gbytes", {}), problems)
    tool = get("verify_bandwidth_tool", "ib_write_bw")
    if get("verify_use_cuda", False) and tool not in PERFTEST_TOOLS:
        problems.append("verify_use_cuda: GPUDirect buffers need a perftest tool (%s), not verify_bandwidth_tool %s"
                        % (", ".join(PERFTEST_TOOLS), tool))
    rails_from = get("verify_rails_from", "gpus")
    if rails_from not in RAILS_FROM:
        problems.append("verify_rails_from: must be one of %s; got %r" % (", ".join(RAILS_FROM), rails_from))
    elif rails_from == "rdma_devices" and get("verify_use_cuda", False):
        problems.append("verify_use_cuda: GPUDirect buffers need each rail's GPU, and verify_rails_from "
                        "rdma_devices tests RDMA devices without one; set verify_rails_from: gpus")
    rails = get("verify_rails", [])
    if not isinstance(rails, list) or any(as_int(rail) is None or as_int(rail) < 0 for rail in rails):
        problems.append("verify_rails: must list rail numbers (0 and up); got %r" % (rails,))
    if hosts is not None and get("verify_sweep", True) and len(hosts) < 2:
        problems.append("verify_sweep: a bandwidth sweep needs at least two hosts in the play; %d here (set "
                        "verify_sweep: false to run nccl-tests alone)" % len(hosts))
    _rounds_problems(get("verify_rounds", []), hosts, problems)
    problem = full_match_problem("verify_nccl_max_bytes", str(get("verify_nccl_max_bytes", "8G")), MESSAGE_SIZE,
                                 "must be a size such as 8G, 512M or 1048576")
    if problem:
        problems.append(problem)
    binary = get("verify_nccl_binary", "all_reduce_perf")
    problem = length_problem("verify_nccl_binary", binary, PATH_MAX, "execve (PATH_MAX)") or full_match_problem(
        "verify_nccl_binary", binary, PROGRAM,
        "must be a program name or an absolute path, without spaces or shell characters")
    if problem:
        problems.append(problem)
    args = get("verify_nccl_mpirun_args", [])
    for index, arg in enumerate(args if isinstance(args, list) else [args]):
        name = "verify_nccl_mpirun_args[%d]" % index
        if not isinstance(arg, str) or has_line_break(arg):
            problems.append("%s: must be a one-line argument; got %r" % (name, arg))
        else:
            # mpirun's argv: execve takes 128 KiB per argument; no mpirun option needs more than a path.
            problem = length_problem(name, arg, ARGUMENT_MAX, "mpirun's command line")
            if problem:
                problems.append(problem)
    if isinstance(args, list) and sum(len(str(arg)) + 1 for arg in args) > ENV_TOTAL_MAX:
        problems.append("verify_nccl_mpirun_args: more than %d bytes of arguments in all" % ENV_TOTAL_MAX)
    environment = get("verify_nccl_environment", {})
    if not isinstance(environment, dict):
        problems.append("verify_nccl_environment: must map variable names to values; got %r" % (environment,))
    else:
        for key in sorted(environment, key=str):
            value = environment[key]
            if not isinstance(key, str) or not ENVIRONMENT_NAME.fullmatch(key):
                problems.append("verify_nccl_environment: %r is not an environment variable name" % (key,))
            elif isinstance(value, (dict, list)) or has_line_break(str(value)):
                problems.append("verify_nccl_environment.%s: must be a one-line string or number; got %r" % (key, value))
        problems.extend(environment_problems("verify_nccl_environment", environment,
                                             "the environment of mpirun and nccl-tests"))
    problems.extend(path_problems("verify_report_dir", get("verify_report_dir", ""), what="directory"))
    if get("verify_report_dir") == "/":
        problems.append("verify_report_dir: must be a directory of its own, not /")
    textfile = get("verify_textfile_dir")
    if textfile is not None:
        problems.extend(path_problems("verify_textfile_dir", textfile, under=TEXTFILE_UNDER, what="directory"))
    if "verify_address" in settings:
        problem = length_problem("verify_address", settings["verify_address"], 253, "DNS (a name of 253 characters)") \
            or full_match_problem("verify_address", settings["verify_address"], ADDRESS,
                                  "must be the address or name this host's peers reach it on")
        if problem:
            problems.append(problem)
    return masked(problems, settings)
