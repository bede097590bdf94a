# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The files of the nccl role, rendered from the variables that nccl_config.nccl_config() derived.

Pure functions (no host access), used by gpufabric.core.nccl_env. The text is what the role's templates wrote
before the module existed, byte for byte, so that upgrading the collection changes no file.
"""

from __future__ import annotations

import re
import shlex

HEADER = "Managed by Ansible (gpufabric.core.nccl); derived from the host's topology, edits are overwritten."
FILE_MODE = 0o644


def conf_text(variables, user_names, topology_source, header=HEADER):
    """NCCL's configuration file (/etc/nccl.conf): NAME=VALUE lines, sorted as variables is."""
    lines = ["# %s" % header,
             "# Topology: %s. NCCL reads this file at every job start; the environment" % topology_source,
             "# wins over it. Change values through nccl_variables (group or host vars), not here."]
    overridden = [name for name in variables if name in user_names]
    if overridden:
        lines.append("# From nccl_variables: %s" % ", ".join(overridden))
    lines.extend("%s=%s" % (name, value) for name, value in variables.items())
    return "\n".join(lines) + "\n"


def profile_text(variables, conf_path, header=HEADER):
    """The login-shell profile script: the same values as exports, quoted for the shell."""
    lines = ["# %s" % header, "# The values of %s, for tools that only read the environment." % conf_path]
    lines.extend("export %s=%s" % (name, shlex.quote(str(value))) for name, value in variables.items())
    return "\n".join(lines) + "\n"


def env_file_text(variables, header=HEADER):
    """KEY=VALUE, unquoted, for Slurm prologs, systemd EnvironmentFile=, docker --env-file and enroot."""
    lines = ["# %s" % header,
             "# KEY=VALUE, unquoted: read by Slurm prologs, systemd EnvironmentFile=, docker --env-file and enroot alike."]
    lines.extend("%s=%s" % (name, value) for name, value in variables.items())
    return "\n".join(lines) + "\n"


def desired_files(params):
    """file_transaction entries for the role's files; a path given with no content must be absent.

    params: variables (dict, in file order), user_names (names set through nccl_variables), topology_source,
    conf_path, profile_script_path ("" for none; then profile_script_remove names the file to remove),
    env_file_path ("" for none), topology_xml (text, "" for none), topology_xml_path.
    """
    variables = params["variables"]
    files = [{"path": params["conf_path"], "mode": FILE_MODE,
              "content": conf_text(variables, params.get("user_names") or [], params["topology_source"])}]
    if params.get("profile_script_path"):
        files.append({"path": params["profile_script_path"], "mode": FILE_MODE,
                      "content": profile_text(variables, params["conf_path"])})
    elif params.get("profile_script_remove"):
        files.append({"path": params["profile_script_remove"], "mode": FILE_MODE, "content": None})
    if params.get("env_file_path"):
        files.append({"path": params["env_file_path"], "mode": FILE_MODE, "content": env_file_text(variables)})
    if params.get("topology_xml_path"):
        files.append({"path": params["topology_xml_path"], "mode": FILE_MODE,
                      "content": params.get("topology_xml") or None})
    return files


def value_problems(variables):
    """What no file may hold: a value spanning lines would start a new variable in every format."""
    return ["variables.%s: the value holds a line break" % name
            for name, value in variables.items() if "\n" in str(value) or "\r" in str(value)]


# A line of a shell fragment or of /etc/environment that sets an NCCL variable (the environment wins over the file).
_SETS_NCCL_VARIABLE = re.compile(r"^\s*(export\s+)?NCCL_[A-Z0-9_]+=", re.M)
# Where login shells and PAM take their environment from.
OTHER_SETTINGS_GLOBS = ("/etc/profile.d/*.sh", "/etc/*.sh", "/etc/environment")


def conf_problems(text, variables, retired, conf_path):
    """What is wrong with the configuration file's text read back: it must hold exactly the NAME=VALUE lines of
    variables, in order, and none of the retired names. An empty list when it does."""
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    expected = ["%s=%s" % (name, value) for name, value in variables.items()]
    left = [line for line in lines if line.split("=", 1)[0].strip() in retired]
    if lines == expected and not left:
        return []
    return ["%s holds %s, expected %s (retired, must be absent: %s). Something else writes this file."
            % (conf_path, lines, expected, ", ".join(retired))]


def sets_nccl_variables(text):
    """Whether a shell fragment or environment file sets an NCCL variable."""
    return bool(_SETS_NCCL_VARIABLE.search(text))
