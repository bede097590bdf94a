# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small checks shared by the roles' problems functions (rdma_inputs, nccl_inputs, verify_inputs, rollout, cooling).

Each returns a sentence naming the variable, or None when the value is fine. Patterns are matched whole
(re.fullmatch): with re.match and `$`, a value with a trailing newline passes and splits the file it is written
into. Values are already typed by the roles' argument_specs, which accept the strings Ansible converts ("5" for an
int), so numbers are read the same way here.

Standard library only: the cooling role installs this file on the host (host_program's layout) for
cooling/policy.py. interface_name_problem is the interface-name rule, one home for bonding, routing and the other
roles. ``masked`` is the last step of every problems filter: whatever the shape of the input, no password,
passphrase or URL credential it holds reaches a message.
"""

from __future__ import annotations

import ipaddress
import json
import math
import posixpath
import re
import socket

# Characters no value written into a one-line setting may hold: line ends and NUL (a \r splits a line for
# some readers just as \n does for all of them).
# What an interface name may hold here: the kernel refuses '/', ':' and whitespace, but systemd-networkd's and
# netplan's Name= and match read * ? [ ] as glob patterns and a leading ! as "every other interface", so a member
# "en*" or "!eth0" would put every NIC of the host into the bond; control characters (NUL, ESC, DEL) break the
# files and terminals they reach; a leading '-' reads as an option on ip's command line.
IFNAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
IFNAME_PATTERN = re.compile(r"[*?\[\]!]")
_LINE_BREAKS = re.compile(r"[\r\n\x00\x0b\x0c\x85\u2028\u2029]")
# What a path a role writes may hold: nothing a shell, a unit file or a config line would read differently.
_PATH = re.compile(r"/[A-Za-z0-9_.+@:,/-]*")

# Length limits, from what reads the value. execve(2) refuses one argument or one NAME=value environment string
# longer than MAX_ARG_STRLEN (32 pages: 131072 bytes with its NUL) with E2BIG, and every argument and environment
# string together must fit in ARG_MAX (a quarter of the stack limit, 2 MiB by default). A value exported from
# /etc/profile.d reaches every process of every login shell, so the limits for environments are far lower: no
# NCCL or MPI setting comes near 4096 characters (PATH_MAX, for values that are paths), and 32 KiB for all of them
# together leaves ARG_MAX to the commands' own arguments.
ENV_VALUE_MAX = 4096
ENV_TOTAL_MAX = 32768
ARGUMENT_MAX = 4096
PATH_MAX = 4096
# Directories where Prometheus node_exporter's textfile collector directory usually lives (Debian's package:
# /var/lib/prometheus/node-exporter; upstream's examples: /var/lib/node_exporter/textfile_collector; a tmpfs under
# /run). A root daemon that replaces a file there every cycle must never be pointed at a system file.
TEXTFILE_UNDER = ("/var/lib", "/run", "/srv", "/opt")

# Keys whose values are secrets, whatever the mapping they are in (not password_file and the like: a path); and a
# URL's user:password@ part.
_SECRET_KEY = re.compile(r"(?i)(?!.*_(file|path|dir)$)(.*(password|passwd|passphrase|secret|token|credential|api_?key"
                         r"|private_?key).*|(.*[_-])?pass([_-].*)?)")
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#@\s'\"]*)@")
SECRET_SHOWN = "<secret>"
# A secret this short is masked where it is quoted ('ab', "ab"), not everywhere: masking two letters in every word
# would make the message unreadable, and the checks never print such a value bare.
_BARE_SECRET_MIN = 4


def has_line_break(text):
    return bool(_LINE_BREAKS.search(text))


def full_match_problem(name, value, pattern, rule):
    """`name` must be a string matched whole by `pattern` (a compiled regular expression)."""
    if not isinstance(value, str) or has_line_break(value) or not pattern.fullmatch(value):
        return "%s: %s; got %r" % (name, rule, value)
    return None


# A decimal number as Prometheus's PromQL lexer and Go's ParseFloat read it, ASCII digits only: Python's float() and
# int() also take "1_000" and other scripts' digits ("\u0664"), which reach a rule file or a config as written.
DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


# What the C library's inet_aton (behind getaddrinfo: ipmitool, curl, Python's urllib) reads as an IPv4 address
# though ipaddress refuses it: a leading 0 is octal, 0x hex, fewer than four parts fill from the right
# (10.99.1.015 is 10.99.1.13, 10.99.269 is 10.99.1.13).
_LEGACY_IPV4 = re.compile(r"(?:0[xX][0-9A-Fa-f]+|[0-9]+)(?:\.(?:0[xX][0-9A-Fa-f]+|[0-9]+)){0,3}", re.ASCII)


def resolver_address(text):
    """The IP address `text` (an address, with or without /prefix) names as the resolver reads it, an IPv4-mapped
    IPv6 address as its IPv4; None for a host name."""
    try:
        address = ipaddress.ip_interface(text).ip
    except ValueError:
        host = text.partition("/")[0]
        if not _LEGACY_IPV4.fullmatch(host):
            return None
        try:
            address = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return getattr(address, "ipv4_mapped", None) or address


def ambiguous_address(host):
    """Why host, an IPv4 address in a spelling ipaddress refuses, is not the address it seems (10.99.1.013 is
    10.99.1.11 to the resolver), or None: the reader of the inventory would not see the BMC that is reached."""
    address = resolver_address(host) if isinstance(host, str) else None
    if address is None:
        return None
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return ("%r is read as %s by the resolver (a leading 0 is octal, 0x hex, a short form fills from the right); "
                "write %s" % (host, address, address))
    return None


# A bearer token as RFC 6750 writes one (token68), long enough not to be guessed.
TOKEN_MIN, TOKEN_MAX = 16, 512
_TOKEN = re.compile(r"[A-Za-z0-9._~+/=-]{%d,%d}" % (TOKEN_MIN, TOKEN_MAX))


def bearer_token_problem(name, value):
    """A bearer token (or "" for none); the value is never shown."""
    if value in (None, "") or isinstance(value, str) and _TOKEN.fullmatch(value):
        return None
    return ("%s: must be %d to %d characters of letters, digits and ._~+/=- (a bearer token: no whitespace or "
            "quotes); the value is not shown" % (name, TOKEN_MIN, TOKEN_MAX))


def as_int(value):
    """The int argument_specs would accept for value (an int or a string of one), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value.strip()):
        return int(value.strip())
    return None


def as_number(value):
    """The finite float argument_specs would accept for value, else None (YAML's .inf and .nan are not numbers here:
    a rate or threshold of infinity, or one that compares false with everything, disables the check it feeds)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str) and DECIMAL.fullmatch(value.strip()):
        number = float(value.strip())
    else:
        return None
    return number if math.isfinite(number) else None


def int_range_problem(name, value, low=None, high=None, allow_none=False, rule=None):
    """`name` must be an integer within [low, high] (either bound may be None)."""
    if value is None and allow_none:
        return None
    number = as_int(value)
    if number is None or (low is not None and number < low) or (high is not None and number > high):
        if rule is None:
            if low is not None and high is not None:
                rule = "must be an integer from %d to %d" % (low, high)
            elif low is not None:
                rule = "must be an integer of at least %d" % low
            else:
                rule = "must be an integer of at most %d" % high
        return "%s: %s; got %r" % (name, rule, value)
    return None


def path_problems(name, value, under=(), exact=(), allow_empty=False, what="path"):
    """Problems with a path a role writes (or reads): absolute, in normal form, inside `under` or one of `exact`.

    The path is normalised (posixpath.normpath) and must already be written that way, so that what the user reads
    in the inventory is the file that is written; `/etc/nccl/../../etc/passwd` is refused twice, for the `..` and
    because /etc/passwd is outside /etc/nccl. `under` lists directories (the path must be strictly below one),
    `exact` whole paths also allowed; both empty: any absolute path.
    """
    if allow_empty and value == "":
        return []
    if not isinstance(value, str) or not value:
        return ["%s: must be an absolute %s; got %r" % (name, what, value)]
    if not _PATH.fullmatch(value):
        return ["%s: must be an absolute %s of letters, digits and _ . + @ : , - only (no whitespace, line breaks, "
                "quotes or shell characters); got %r" % (name, what, value)]
    if len(value) > PATH_MAX:
        return ["%s: %d characters, longer than the kernel's PATH_MAX (%d); got %s"
                % (name, len(value), PATH_MAX, shown(value, 40))]
    problems = []
    normal = posixpath.normpath(value)
    if normal.startswith("//"):
        normal = "/" + normal.lstrip("/")
    if normal != value:
        problems.append("%s: must be written in normal form, without '..', '.', '//' or a trailing '/' "
                        "(it means %s); got %r" % (name, normal, value))
    inside = any(normal == path for path in exact) or any(normal.startswith(directory.rstrip("/") + "/")
                                                          for directory in under)
    if (under or exact) and not inside:
        places = ["under %s/" % directory.rstrip("/") for directory in under] + list(exact)
        problems.append("%s: must be %s; %s is outside" % (name, " or ".join(places), normal))
    return problems


# Every role's <role>_verify: when its verification phase runs. One type for all roles since 0.1.0; the booleans
# some roles took before are deprecated (accepted until 0.2.0): false meant never, true what that role did then,
# after a change (bonding, cooling, ipsec, nccl) or on every run (routing).
VERIFY_MODES = ("after_change", "always", "never")


def verify_mode(value, name, true_means="after_change"):
    """The mode a <role>_verify value stands for: after_change, always or never; a deprecated false gives never and
    a deprecated true gives true_means. Raises ValueError naming the variable for anything else."""
    if isinstance(value, bool):
        return true_means if value else "never"
    if value in VERIFY_MODES:
        return value
    raise ValueError("%s: must be after_change, always or never (true and false are deprecated); got %r"
                     % (name, value))


def kind_of(value):
    """What value is, in the words of the inventory (a list, a mapping...), never its content: for messages about a
    value that may hold a secret. (Ansible hands filters its own list and dict types: their class names mean
    nothing to a reader.)"""
    for kind, name in ((bool, "boolean"), (dict, "mapping"), ((list, tuple), "list"), (str, "string"),
                       ((int, float), "number")):
        if isinstance(value, kind):
            return name
    return "null" if value is None else type(value).__name__


def shown(value, limit=80):
    """repr(value) for a message, cut to about `limit` characters: a 200 kB value is named, not printed."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return "%s... (%d characters)" % (text[:limit], len(value) if isinstance(value, (str, list, dict)) else len(text))


def length_problem(name, value, limit, consumer):
    """`name` must be at most `limit` characters; consumer says what reads it (and why that limit)."""
    if isinstance(value, str) and len(value) > limit:
        return "%s: %d characters, more than the %d that %s takes; got %s" % (name, len(value), limit, consumer,
                                                                              shown(value, 40))
    return None


def environment_problems(name, variables, consumer):
    """Limits of a mapping exported as NAME=value strings (see ENV_VALUE_MAX and ENV_TOTAL_MAX)."""
    if not isinstance(variables, dict):
        return []
    problems = []
    total = 0
    for key in sorted(variables, key=str):
        value = variables[key]
        if value is None or isinstance(value, (dict, list)):
            continue
        text = str(value)
        total += len(str(key)) + 1 + len(text) + 1
        problem = length_problem("%s.%s" % (name, key), text, ENV_VALUE_MAX, consumer)
        if problem:
            problems.append(problem)
    if total > ENV_TOTAL_MAX:
        problems.append("%s: %d bytes of NAME=value strings in all, more than the %d that %s takes (execve refuses "
                        "an environment past ARG_MAX, and every command would carry it)"
                        % (name, total, ENV_TOTAL_MAX, consumer))
    return problems


def file_mode_problem(name, value):
    """A file mode must be a quoted octal string ('0640'). YAML reads an unquoted 0640 as the octal number 416 and
    an unquoted 644 as the decimal 644: as a number, the mode cannot be told from a typo, so it is refused."""
    if isinstance(value, bool) or isinstance(value, (int, float)):
        return ("%s: got the number %r; YAML reads an unquoted 0640 as 416 (octal) and 644 as 644 (decimal), so a "
                "number cannot say which mode was meant. Quote the mode: %s: '0640'" % (name, value, name))
    if not isinstance(value, str) or not re.fullmatch(r"0?[0-7]{3}", value):
        return "%s: must be an octal mode such as '0644' (quoted); got %s" % (name, shown(value))
    if int(value, 8) & 0o002:
        return "%s: %s lets every local user write the file; drop the write bit for others" % (name, value)
    return None


def mode_value(text):
    """The int of a mode that file_mode_problem accepted."""
    return int(text, 8)


def _secrets(value, under_secret_key=False, found=None):
    """Every secret string in value: those under a secret-named key (at any depth) and URL credentials."""
    found = [] if found is None else found
    if isinstance(value, dict):
        for key, item in value.items():
            _secrets(item, under_secret_key or bool(_SECRET_KEY.fullmatch(str(key))), found)
    elif isinstance(value, (list, tuple, set)):
        for item in value:
            _secrets(item, under_secret_key, found)
    elif value is not None and not isinstance(value, bool):
        text = str(value)
        if under_secret_key and text:
            found.append(text)
        for match in _URL_CREDENTIALS.finditer(text):
            userinfo = match.group("userinfo")
            if ":" in userinfo:
                found.append(userinfo.split(":", 1)[1])
    return found


def mask_url(text):
    """text with the password of every URL in it replaced (https://user:<secret>@host)."""
    def replace(match):
        user, colon, unused_password = match.group("userinfo").partition(":")
        return "%s%s%s@" % (match.group("scheme"), user, colon + SECRET_SHOWN if colon else "")
    return _URL_CREDENTIALS.sub(replace, text)


def masked(messages, *inputs):
    """messages with every secret found in inputs replaced by <secret>, bare or quoted (repr, JSON), and URL
    passwords masked: the safety net under the checks, which never print a mapping that may hold a password."""
    secrets = []
    for value in inputs:
        _secrets(value, found=secrets)
    forms = set()
    for secret in secrets:
        forms.update(form for form in (repr(secret), json.dumps(secret), json.dumps(secret, ensure_ascii=False))
                     if form)
        if len(secret) >= _BARE_SECRET_MIN:
            forms.update((secret, repr(secret)[1:-1], json.dumps(secret)[1:-1]))
    ordered = sorted(forms, key=len, reverse=True)
    result = []
    for message in messages:
        text = mask_url(str(message))
        for form in ordered:
            text = text.replace(form, SECRET_SHOWN)
        result.append(text)
    return result


def interface_name_problem(name):
    """Return why name cannot be a Linux interface name, or None."""
    if not isinstance(name, str) or not name:
        return "must be a non-empty string"
    if len(name) > 15:
        return "%r is longer than the kernel's 15 characters for an interface name" % name[:40]
    if IFNAME_PATTERN.search(name):
        return ("%r is a pattern, not an interface name: systemd-networkd and netplan would match every interface it "
                "fits (* ? [ ] and a leading ! are pattern characters)" % name)
    if not IFNAME.fullmatch(name):
        return ("%r is not an interface name (letters, digits, '_', '.' and '-', not first; no spaces, control "
                "characters, '/', ':' or '%%')" % name)
    return None
