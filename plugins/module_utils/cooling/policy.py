# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validate a whole cooling policy: zones, their sensors and curves, fan groups, BMCs and liquid cooling.

Used twice with the same code: on the Ansible controller by the cooling_policy_problems filter in the
role's preflight (prefix "cooling_", so messages name the inventory variables), and on the host by the
controller's `--check-config` (prefix "", naming the keys of the JSON config), which is the template's
`validate:` command. Stdlib only and relative imports only: the role installs this file unchanged.
"""

from __future__ import annotations

import posixpath
import re

from ansible_collections.gpufabric.core.plugins.module_utils.cooling.curve import FULL_DUTY, as_number, curve_problems
from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import (
    ARGUMENT_MAX,
    ENV_TOTAL_MAX,
    PATH_MAX,
    TEXTFILE_UNDER,
    ambiguous_address,
    kind_of,
    length_problem,
    mask_url,
    masked,
    path_problems,
)

SENSOR_BACKENDS = ("ipmi", "redfish", "hwmon", "nvml", "nvidia_smi")
FAN_BACKENDS = ("hwmon", "ipmi_raw", "redfish")
AGGREGATES = ("max", "mean")
STOP_ACTIONS = ("full", "bmc")
LIQUID_ACTIONS = ("alert", "power_limit", "shutdown")
REDFISH_AUTH = ("session", "basic")
# Validating patterns are matched with fullmatch: "$" would let a trailing newline through.
_ZONE_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
_RAW_BYTE = re.compile(r"0x[0-9a-fA-F]{1,2}|\{duty\}|\{zone\}")
_HWMON_CHIP = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_HWMON_PWM = re.compile(r"pwm[1-9][0-9]?")
_HWMON_TEMP = re.compile(r"temp[1-9][0-9]?_input")
_REDFISH_PATH = re.compile(r"/redfish/v1(/[A-Za-z0-9_.:@%-]+)+/?")
_HOST = re.compile(r"[A-Za-z0-9_.:-]{1,253}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_BASE_URL = re.compile(r"(https?)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(:[0-9]{1,5})?/?")
# The longest a stale reading may drive the fans: a loaded GPU whose fans hold a low duty reaches its slowdown
# temperature within a couple of minutes, and systemd's watchdog (cooling_watchdog_sec, 120 s) restarts a stuck loop
# on the same scale. 120 s also leaves room for stale_after >= 2 x interval at the longest interval (60 s).
STALE_AFTER_MAX = 120
# IPMI 2.0 cipher suites (IPMI 2.0 specification, table 22-20): the two with authentication (RAKP-HMAC-SHA1 or
# -SHA256), integrity (HMAC-SHA1-96 or HMAC-SHA256-128) and AES-CBC-128 confidentiality. Every other suite lacks
# one of them or uses MD5 or RC4.
IPMI_CIPHER_SUITES = (3, 17)
_IPMI_CIPHER_FLAWS = {0: "no authentication, no integrity, no encryption: anyone on the BMC network can command "
                         "the fans", 1: "no integrity and no encryption", 2: "no encryption", 6: "MD5, and no "
                         "integrity or encryption", 15: "no integrity and no encryption", 16: "no encryption"}
# ipmitool keeps the first 16 bytes of a user name and the first 20 of a password (IPMI 2.0's fields, ipmitool's
# ssn_params.username and IPMI_AUTHCODE_BUFFER_SIZE) and drops the rest without a word.
IPMI_USER_MAX = 16
IPMI_PASSWORD_MAX = 20
# Redfish user names and passwords travel in a JSON session request or a Basic header: no protocol limit, but no BMC
# takes more than a few dozen characters; 256 keeps every request small.
REDFISH_CREDENTIAL_MAX = 256
# Sensor selectors, fan targets and CDU ids become command arguments, URL paths and metric labels: one short line.
NAME_MAX = 256


def _redfish_path(path):
    """A path under /redfish/v1 on the BMC, without . or .. segments (which would climb out of the service root)."""
    return (isinstance(path, str) and bool(_REDFISH_PATH.fullmatch(path))
            and not any(segment in (".", "..") or segment.lower().startswith("%2e") for segment in path.split("/")))


def _positive(value):
    number = as_number(value)
    return number is not None and number > 0


def _integer(value, low, high):
    """True for an int (not bool, not "623") within low..high."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _clean_text(value):
    """A non-empty string with no control characters (newline, carriage return, NUL ...)."""
    return isinstance(value, str) and bool(value.strip()) and not _CONTROL.search(value)


def _hwmon_root_problem(root):
    if not isinstance(root, str) or not root.startswith("/") or _CONTROL.search(root) or len(root) > PATH_MAX:
        return "must be an absolute directory (at most %d characters), got %r" % (PATH_MAX, root[:80] if isinstance(
            root, str) else root)
    if posixpath.normpath(root) != root.rstrip("/") or ".." in root.split("/"):
        return "must be a normalised path (no '..', '.' or '//'), got %r" % root
    if root == "/proc" or root.startswith("/proc/"):
        return "must not be under /proc, got %r" % root
    return None


def hwmon_selector_problem(selector, root, file_pattern, what):
    """Why an hwmon selector is unusable (None when usable): chip/file or an absolute path under root."""
    if not _clean_text(selector):
        return "must be <chip name>/<%s> or an absolute path under %s, got %r" % (what, root, selector)
    if selector.startswith("/"):
        if ".." in selector.split("/") or posixpath.normpath(selector) != selector or \
                not selector.startswith(str(root).rstrip("/") + "/"):
            return "%r must be a normalised path under the hwmon root %s (no '..')" % (selector, root)
        name = posixpath.basename(selector)
    else:
        chip, unused, name = selector.partition("/")
        if not _HWMON_CHIP.fullmatch(chip) or chip in (".", ".."):
            return "%r: the chip name (hwmonN/name) must be a plain name" % selector
    if not file_pattern.fullmatch(name):
        return "%r: the file must be a %s file (%s)" % (selector, what, file_pattern.pattern)
    return None


def _zone_problems(name, zone, path, hwmon_root="/sys/class/hwmon"):
    where = "%s.%s" % (path, name)
    if not isinstance(name, str) or not _ZONE_NAME.fullmatch(name):
        return ["%s: zone names are lower-case identifiers (they become metric labels), got %r" % (path, name)]
    if not isinstance(zone, dict):
        return ["%s: a zone is a mapping with sensors and curve, got %r" % (where, zone)]
    problems = []
    min_duty = as_number(zone.get("min_duty", 0))
    if min_duty is None or not 0 <= min_duty <= 100:
        problems.append("%s.min_duty: must be a number 0-100, got %r" % (where, zone.get("min_duty")))
        min_duty = 0.0
    hysteresis = as_number(zone.get("hysteresis", 0))
    if hysteresis is None or not 0 <= hysteresis <= 20:
        problems.append("%s.hysteresis: must be 0-20 degrees C, got %r" % (where, zone.get("hysteresis")))
    if zone.get("aggregate", "max") not in AGGREGATES:
        problems.append("%s.aggregate: must be one of %s, got %r" % (where, ", ".join(AGGREGATES), zone.get("aggregate")))
    curve = zone.get("curve")
    bad_curve = curve_problems(curve, where + ".curve", min_duty)
    problems.extend(bad_curve)
    critical = as_number(zone.get("critical_temp"))
    if critical is None or not -40.0 <= critical <= 150.0:
        problems.append("%s.critical_temp: every zone needs the temperature (-40..150 C) at which its fans must be at "
                        "100 %%, got %r" % (where, zone.get("critical_temp")))
    elif not bad_curve:
        full = [as_number(p.get("temp")) for p in curve if isinstance(p, dict) and as_number(p.get("duty")) == FULL_DUTY]
        full = [t for t in full if t is not None]
        if not full or min(full) > critical:
            problems.append("%s.curve: must reach 100 %% duty at or below critical_temp %g C (%s)"
                            % (where, critical, "first 100 %% point at %g C" % min(full) if full else "it never reaches 100 %"))
    sensors = zone.get("sensors")
    if not isinstance(sensors, list) or not sensors:
        problems.append("%s.sensors: a zone needs at least one sensor {backend, selector}" % where)
        return problems
    for index, sensor in enumerate(sensors):
        spot = "%s.sensors[%d]" % (where, index)
        if not isinstance(sensor, dict):
            problems.append("%s: a sensor is a mapping {backend, selector}, got %r" % (spot, sensor))
            continue
        if sensor.get("backend") not in SENSOR_BACKENDS:
            problems.append("%s.backend: must be one of %s, got %r" % (spot, ", ".join(SENSOR_BACKENDS), sensor.get("backend")))
        if not _clean_text(sensor.get("selector")) or len(sensor["selector"]) > NAME_MAX:
            problems.append("%s.selector: must name the sensor (IPMI SDR name, Redfish sensor name, hwmon file, GPU index), "
                            "one line of at most %d characters, got %r" % (spot, NAME_MAX, sensor.get("selector")))
        elif sensor.get("backend") == "hwmon":
            problem = hwmon_selector_problem(sensor["selector"], hwmon_root, _HWMON_TEMP, "tempN_input")
            if problem:
                problems.append("%s.selector: %s" % (spot, problem))
    return problems


def _group_problems(name, group, zones, bmc, profile, path, zones_path, hwmon_root="/sys/class/hwmon"):
    where = "%s.%s" % (path, name)
    if not isinstance(name, str) or not _ZONE_NAME.fullmatch(name):
        return ["%s: fan group names are lower-case identifiers (they become metric labels), got %r" % (path, name)]
    if not isinstance(group, dict):
        return ["%s: a fan group is a mapping with backend, target and zones, got %r" % (where, group)]
    problems = []
    backend = group.get("backend")
    if backend not in FAN_BACKENDS:
        problems.append("%s.backend: must be one of %s, got %r" % (where, ", ".join(FAN_BACKENDS), backend))
    target = group.get("target")
    if not _clean_text(target) or len(target) > NAME_MAX:
        problems.append("%s.target: must name what the duty is written to (hwmon pwm file, profile zone, Redfish URI) "
                        "in one line of at most %d characters" % (where, NAME_MAX))
    elif backend == "hwmon":
        problem = hwmon_selector_problem(target, hwmon_root, _HWMON_PWM, "pwmN")
        if problem:
            problems.append("%s.target: %s" % (where, problem))
    elif backend == "redfish" and not _redfish_path(target):
        # A path on the configured BMC only: an absolute URL would send the BMC's credentials elsewhere.
        problems.append("%s.target: must be a Redfish path on the BMC (/redfish/v1/..., no '.' or '..' segment), got %r"
                        % (where, target))
    if "min_duty" in group:
        min_duty = as_number(group["min_duty"])
        if min_duty is None or not 0 <= min_duty <= 100:
            problems.append("%s.min_duty: must be a number 0-100 (%%), got %r" % (where, group["min_duty"]))
    if "max_duty" in group:
        # A cap below 100 % would defeat the fail-safe and the critical temperature; above 100 % means nothing.
        problems.append("%s.max_duty: not supported: a fan group must be able to reach 100 %% (fail-safe, critical_temp), "
                        "got %r" % (where, group["max_duty"]))
    group_zones = group.get("zones")
    if not isinstance(group_zones, list) or not group_zones:
        problems.append("%s.zones: list the zones whose duty drives this group" % where)
    else:
        for zone in group_zones:
            if zone not in zones:
                problems.append(
                    "%s.zones: zone %r is not defined in %s (defined: %s)"
                    % (where, zone, zones_path, ", ".join(sorted(zones)) or "none")
                )
    for key in ("max_step_up", "max_step_down"):
        if key in group and (not _positive(group[key]) or as_number(group[key]) > 100):
            problems.append("%s.%s: must be a percentage per cycle, above 0 and at most 100, got %r" % (where, key, group[key]))
    if backend == "ipmi_raw":
        if not isinstance(bmc.get("ipmi"), dict):
            problems.append("%s: backend ipmi_raw needs an IPMI BMC (bmc.ipmi)" % where)
        if not profile:
            problems.append("%s: backend ipmi_raw needs a vendor raw-command profile (ipmi_profile)" % where)
        elif group.get("target") not in profile.get("zones", {}):
            problems.append(
                "%s.target: %r is not a fan zone of the %s profile (zones: %s)"
                % (where, group.get("target"), profile.get("name"), ", ".join(sorted(profile.get("zones", {}))))
            )
    if backend == "redfish" and not isinstance(bmc.get("redfish"), dict):
        problems.append("%s: backend redfish needs a Redfish BMC (bmc.redfish)" % where)
    return problems


def profile_problems(profile, path):
    """A vendor raw-command profile: manual/set/handback byte lists and named fan zones."""
    if not profile:
        return []
    if not isinstance(profile, dict):
        return ["%s: must be a mapping, got %r" % (path, profile)]
    problems = []
    for key in ("manual", "set_duty", "handback"):
        command = profile.get(key)
        if not isinstance(command, list) or len(command) < 2 or not all(isinstance(b, str) and _RAW_BYTE.fullmatch(b) for b in command):
            problems.append("%s.%s: must be a list of at least two bytes like '0x30' ({duty} and {zone} allowed), got %r" % (path, key, command))
    if "{duty}" not in (profile.get("set_duty") or []):
        problems.append("%s.set_duty: must contain the placeholder {duty}" % path)
    zones = profile.get("zones")
    if not isinstance(zones, dict) or not zones or not all(isinstance(v, str) and _RAW_BYTE.fullmatch(v) for v in zones.values()):
        problems.append("%s.zones: must map fan zone names to a byte like '0x00', got %r" % (path, zones))
    if profile.get("duty_scale") not in (100, 255):
        problems.append("%s.duty_scale: must be 100 (duty in percent) or 255, got %r" % (path, profile.get("duty_scale")))
    return problems


def _number_problems(settings, where, rules):
    """rules: (key, integer?, low, high, sentence); only keys that are set are checked."""
    problems = []
    for key, integer, low, high, sentence in rules:
        if key not in settings:
            continue
        value = settings[key]
        good = _integer(value, low, high) if integer else (as_number(value) is not None and low < as_number(value) <= high)
        if not good:
            problems.append("%s.%s: must be %s, got %r" % (where, key, sentence, value))
    return problems


def _credential_problems(endpoint, where, user_max, password_max, consumer):
    """user and password: one line each, within what the consumer keeps. The password is never shown."""
    problems = []
    user = endpoint.get("user")
    if user is not None and (not _clean_text(user) or len(user.encode("utf-8")) > user_max):
        problems.append("%s.user: must be one line of at most %d bytes (%s), got %r" % (
            where, user_max, consumer, user[:80] if isinstance(user, str) else user))
    password = endpoint.get("password")
    if password not in (None, "") and (not isinstance(password, str) or _CONTROL.search(password)
                                       or len(password.encode("utf-8")) > password_max):
        problems.append("%s.password: must be one line of at most %d bytes (%s); the value is not shown" % (
            where, password_max, consumer))
    return problems


def _not_a_mapping(where, value, what):
    """The sentence for an endpoint of the wrong shape: its type, never its content (it may hold a password)."""
    return "%s: must be a mapping (%s), got a %s" % (where, what, kind_of(value))


def _ipmi_problems(ipmi, where):
    if not isinstance(ipmi, dict):
        return [_not_a_mapping(where, ipmi, "host, user, password, interface, cipher_suite ...")]
    problems = []
    interface = ipmi.get("interface", "lanplus")
    if interface not in ("lanplus", "open"):
        problems.append("%s.interface: must be lanplus (over the network) or open (local /dev/ipmi0), got %r" % (where, interface))
    if interface == "lanplus" and not (isinstance(ipmi.get("host"), str) and _HOST.fullmatch(ipmi["host"])):
        problems.append("%s.host: interface lanplus needs the BMC's address or name, got %r" % (where, ipmi.get("host")))
    elif interface == "lanplus" and ambiguous_address(ipmi["host"]):
        problems.append("%s.host: %s" % (where, ambiguous_address(ipmi["host"])))
    problems.extend(_number_problems(ipmi, where, (
        ("port", True, 1, 65535, "a UDP port, an integer 1-65535"),
        ("cipher_suite", True, 0, 17, "an IPMI cipher suite id, an integer 0-17 (3 or 17 on current BMCs)"),
        # ipmitool's -N takes whole seconds: 2.5 would silently become 2.
        ("timeout", True, 1, 60, "whole seconds, an integer 1-60 (ipmitool -N takes no fraction and no unit: 5, "
                                 "not \"5s\" or 2.5)"),
        ("retries", True, 0, 10, "an integer 0-10"),
    )))
    suite = ipmi.get("cipher_suite")
    if _integer(suite, 0, 17) and suite not in IPMI_CIPHER_SUITES and interface == "lanplus":
        problems.append("%s.cipher_suite: %d is refused (%s); use 17 (HMAC-SHA256, AES-128) or 3 (HMAC-SHA1, "
                        "AES-128)" % (where, suite, _IPMI_CIPHER_FLAWS.get(suite, "MD5 or RC4, or no encryption")))
    for key in ("password_file", "ipmitool"):
        if key in ipmi and (not _clean_text(ipmi[key]) or len(ipmi[key]) > PATH_MAX):
            problems.append("%s.%s: must be one line of text, got %r" % (where, key, ipmi[key]))
    problems.extend(_credential_problems(ipmi, where, IPMI_USER_MAX, IPMI_PASSWORD_MAX,
                                         "ipmitool silently cuts longer ones"))
    return problems


def redfish_base_url_problem(url, allow_insecure_http):
    """Why a Redfish base_url is unusable (None when usable). The URL is shown without any password in it."""
    if isinstance(url, str) and "@" in url:
        return ("must be the BMC's https://HOST[:PORT] without a user or password (set them in user and password), "
                "got %r" % mask_url(url))
    match = _BASE_URL.fullmatch(url) if isinstance(url, str) else None
    if not match:
        return "must be the BMC's https://HOST[:PORT] (no path, user or query), got %s" % (
            repr(mask_url(url)) if isinstance(url, str) else "a " + kind_of(url),)
    if match.group(3) and not 1 <= int(match.group(3)[1:]) <= 65535:
        return "port must be 1-65535, got %r" % url
    if ambiguous_address(match.group(2)):
        return "the host %s" % ambiguous_address(match.group(2))
    if match.group(1) == "http" and allow_insecure_http is not True:
        return "%r is plain http: the BMC's credentials would cross the network in clear; use https, or set " \
               "allow_insecure_http: true for a lab BMC" % url
    return None


def _redfish_problems(redfish, where):
    if not isinstance(redfish, dict):
        return [_not_a_mapping(where, redfish, "base_url, user, password, auth, verify_tls ...")]
    problems = []
    insecure = redfish.get("allow_insecure_http", False)
    if not isinstance(insecure, bool):
        problems.append("%s.allow_insecure_http: must be true or false, got %r" % (where, insecure))
    problem = redfish_base_url_problem(redfish.get("base_url"), insecure)
    if problem:
        problems.append("%s.base_url: %s" % (where, problem))
    if redfish.get("auth", "session") not in REDFISH_AUTH:
        problems.append("%s.auth: must be one of %s, got %r" % (where, ", ".join(REDFISH_AUTH), redfish.get("auth")))
    if not isinstance(redfish.get("verify_tls", True), bool):
        problems.append("%s.verify_tls: must be true or false, got %r" % (where, redfish.get("verify_tls")))
    problems.extend(_number_problems(redfish, where, (
        ("timeout", False, 0, 60, "seconds, a number above 0 and at most 60 (no unit: 5, not \"5s\")"),
    )))
    for key, limit in (("password_file", PATH_MAX), ("ca_file", PATH_MAX), ("chassis", NAME_MAX),
                       ("thermal", NAME_MAX)):
        if key in redfish and (not _clean_text(redfish[key]) or len(redfish[key]) > limit):
            problems.append("%s.%s: must be one line of text of at most %d characters, got %r" % (
                where, key, limit, redfish[key][:80] if isinstance(redfish[key], str) else redfish[key]))
    problems.extend(_credential_problems(redfish, where, REDFISH_CREDENTIAL_MAX, REDFISH_CREDENTIAL_MAX,
                                         "no BMC takes longer ones"))
    return problems


def _bmc_problems(bmc, path):
    problems = []
    if not isinstance(bmc, dict):
        return [_not_a_mapping(path, bmc, "optional ipmi and redfish endpoints")]
    if bmc.get("ipmi") is not None:
        problems.extend(_ipmi_problems(bmc["ipmi"], path + ".ipmi"))
    if bmc.get("redfish") is not None:
        problems.extend(_redfish_problems(bmc["redfish"], path + ".redfish"))
    return problems


def _command_problem(command):
    """Why an action command is unusable (None when usable): an argument list, never a shell string."""
    if not isinstance(command, list) or not command:
        return "must be an argument list such as [/usr/local/bin/page-oncall, --severity, critical] (a string " \
               "would be run as one program name), got %r" % (command,)
    if not all(isinstance(word, str) and "\x00" not in word for word in command):
        return "every argument must be a string without NUL, got %r" % (command,)
    if any(len(word) > ARGUMENT_MAX for word in command) or sum(len(word) + 1 for word in command) > ENV_TOTAL_MAX:
        # execve takes at most 128 KiB per argument; no alert or shutdown command needs more than a path.
        return "every argument must be at most %d characters, %d in all" % (ARGUMENT_MAX, ENV_TOTAL_MAX)
    if not _clean_text(command[0]) or command[0] != command[0].strip() or \
            ("/" in command[0] and not command[0].startswith("/")):
        return "the program %r must be a name found on PATH or an absolute path" % (command[0],)
    return None


def _liquid_problems(liquid, path, bmc_path="bmc", bmc=None):
    if not liquid:
        return []
    if not isinstance(liquid, dict):
        return ["%s: must be a mapping, got %r" % (path, liquid)]
    problems = []
    if not isinstance((bmc or {}).get("redfish"), dict):
        # Without Redfish there is nothing to read CDUs and leak detectors from: refuse rather than watch nothing.
        problems.append("%s: liquid-cooling monitoring reads Redfish ThermalEquipment and LeakDetection: it needs %s.redfish"
                        % (path, bmc_path))
    if not liquid.get("cdus") and not liquid.get("leak_detection_uris"):
        problems.append("%s: monitors nothing: set cdus or leak_detection_uris (or leave %s empty)" % (path, path))
    for key in ("alert_command", "shutdown_command"):
        if key in liquid and liquid[key] not in (None, [], ""):
            problem = _command_problem(liquid[key])
            if problem:
                problems.append("%s.%s: %s" % (path, key, problem))
        elif key in liquid and liquid[key] == "":
            problems.append("%s.%s: must be an argument list, got an empty string" % (path, key))
    uris = liquid.get("leak_detection_uris", [])
    if not isinstance(uris, list) or not all(_redfish_path(u) and len(u) <= NAME_MAX for u in uris):
        problems.append("%s.leak_detection_uris: must be a list of Redfish paths on the BMC (/redfish/v1/...), got %r" % (path, uris))
    if liquid.get("leak_action", "alert") not in LIQUID_ACTIONS:
        problems.append("%s.leak_action: must be one of %s, got %r" % (path, ", ".join(LIQUID_ACTIONS), liquid.get("leak_action")))
    needs_limit = liquid.get("leak_action") == "power_limit"
    cdus = liquid.get("cdus", {})
    if not isinstance(cdus, dict):
        return problems + ["%s.cdus: must map CDU ids to thresholds, got %r" % (path, cdus)]
    for cdu, limits in cdus.items():
        where = "%s.cdus.%s" % (path, cdu)
        if not isinstance(cdu, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", cdu):
            problems.append("%s.cdus: CDU ids are Redfish ids (letters, digits, _ . -), got %r" % (path, cdu))
            continue
        if not isinstance(limits, dict):
            problems.append("%s: must be a mapping of thresholds, got %r" % (where, limits))
            continue
        for key in ("supply_temp_max", "return_temp_max", "delta_temp_max", "flow_min_lpm"):
            if key in limits and as_number(limits[key]) is None:
                problems.append("%s.%s: must be a number, got %r" % (where, key, limits[key]))
        if limits.get("action", "alert") not in LIQUID_ACTIONS:
            problems.append("%s.action: must be one of %s, got %r" % (where, ", ".join(LIQUID_ACTIONS), limits.get("action")))
        needs_limit = needs_limit or limits.get("action") == "power_limit"
    if needs_limit and not _positive(liquid.get("power_limit_watts")):
        problems.append("%s.power_limit_watts: action power_limit needs the per-GPU limit in watts" % path)
    return problems


def policy_problems(policy, prefix=""):
    """Return every problem in a cooling policy, each naming the variable; empty when it is usable.

    policy keys: zones, fan_groups, bmc, ipmi_profile, interval, stale_after, on_stop, liquid.
    prefix is prepended to top-level names ("cooling_" in the role).
    """
    if not isinstance(policy, dict):
        return ["the cooling policy must be a mapping, got %s" % type(policy).__name__]

    def name(key):
        return prefix + key

    problems = []
    zones = policy.get("zones")
    if not isinstance(zones, dict) or not zones:
        problems.append("%s: define at least one zone (cpu, gpu, inlet ...) with sensors and a curve" % name("zones"))
        zones = {}
    hwmon_root = policy.get("hwmon_root", "/sys/class/hwmon")
    problem = _hwmon_root_problem(hwmon_root)
    if problem:
        problems.append("%s: %s" % (name("hwmon_root"), problem))
    for zone_name, zone in zones.items():
        problems.extend(_zone_problems(zone_name, zone, name("zones"), hwmon_root))
    bmc = policy.get("bmc") or {}
    problems.extend(_bmc_problems(bmc, name("bmc")))
    # A BMC of the wrong shape is named above; the checks below read it as no BMC at all.
    bmc = bmc if isinstance(bmc, dict) else {}
    profile = policy.get("ipmi_profile") or {}
    problems.extend(profile_problems(profile, name("ipmi_profile")))
    groups = policy.get("fan_groups")
    if not isinstance(groups, dict) or not groups:
        problems.append("%s: define at least one fan group (backend, target, zones)" % name("fan_groups"))
        groups = {}
    for group_name, group in groups.items():
        problems.extend(_group_problems(group_name, group, zones, bmc, profile, name("fan_groups"), name("zones"), hwmon_root))
    used = set()
    for group in groups.values():
        if isinstance(group, dict) and isinstance(group.get("zones"), list):
            used.update(group["zones"])
    for zone_name in zones:
        if zone_name not in used:
            problems.append("%s.%s: no fan group uses this zone, so its temperature would cool nothing" % (name("zones"), zone_name))
    for zone_name, zone in zones.items():
        for sensor in (zone or {}).get("sensors") or []:
            backend = sensor.get("backend") if isinstance(sensor, dict) else None
            if backend in ("ipmi", "redfish") and not isinstance(bmc.get(backend), dict):
                problems.append("%s.%s: sensor backend %s needs %s.%s" % (name("zones"), zone_name, backend, name("bmc"), backend))
    interval = as_number(policy.get("interval"))
    stale = as_number(policy.get("stale_after"))
    if interval is None or not 0.5 <= interval <= 60:
        problems.append("%s: must be 0.5-60 seconds, got %r" % (name("interval"), policy.get("interval")))
    if stale is None or interval is None or stale < 2 * interval:
        # One missed cycle must not trip the fail-safe, two must be allowed to.
        problems.append("%s: must be at least twice %s, got %r" % (name("stale_after"), name("interval"), policy.get("stale_after")))
    elif stale > STALE_AFTER_MAX:
        problems.append("%s: must be at most %d seconds: fans would hold their duty on readings that old while the GPUs "
                        "heat up, got %r" % (name("stale_after"), STALE_AFTER_MAX, policy.get("stale_after")))
    problems.extend(metrics_file_problems(policy.get("metrics_file", ""), name("metrics_file")))
    if policy.get("on_stop", "full") not in STOP_ACTIONS:
        problems.append("%s: must be one of %s, got %r" % (name("on_stop"), ", ".join(STOP_ACTIONS), policy.get("on_stop")))
    problems.extend(_liquid_problems(policy.get("liquid"), name("liquid"), name("bmc"), bmc))
    if "gpu_mig_layout" in policy:
        problems.extend(mig_layout_problems(policy.get("gpu_mig_layout"), policy.get("gpu_mig_config"), prefix))
    # Whatever the shape of the BMC settings, no password they hold reaches a message.
    return masked(problems, policy)


def metrics_file_problems(path, name="metrics_file"):
    """The textfile collector file the controller (root) replaces every cycle: empty for none, else an absolute
    path ending in .prom (the only files node_exporter's textfile collector reads) under TEXTFILE_UNDER, so that
    no system file (/etc/passwd, a unit, a library) can be named."""
    if path in ("", None):
        return []
    problems = path_problems(name, path, under=TEXTFILE_UNDER, what="file path")
    if not problems and not path.endswith(".prom"):
        problems.append("%s: must end in .prom, the only files node_exporter's textfile collector reads; got %r"
                        % (name, path))
    if not problems:
        problem = length_problem(name, path, PATH_MAX, "the kernel (PATH_MAX)")
        if problem:
            problems.append(problem)
    return problems


_MIG_LAYOUT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def mig_layout_problems(layout, mig_config, prefix=""):
    """The MIG layout passed to nvidia-mig-parted -c: a name defined in the mig-parted configuration."""
    if layout in (None, ""):
        return []
    defined = (mig_config or {}).get("mig-configs") if isinstance(mig_config, dict) else None
    defined = defined if isinstance(defined, dict) else {}
    if not isinstance(layout, str) or not _MIG_LAYOUT.fullmatch(layout):
        return ["%sgpu_mig_layout: must be a layout name (letters, digits, . _ -; not an option), got %r" % (prefix, layout)]
    if layout not in defined:
        return ["%sgpu_mig_layout: %r is not a layout under %sgpu_mig_config['mig-configs'] (defined: %s)"
                % (prefix, layout, prefix, ", ".join(sorted(defined)) or "none")]
    return []
