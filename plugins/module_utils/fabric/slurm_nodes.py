# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm's nodes as `scontrol show node` prints them, and the rules of this collection's drains.

Plain functions, used by the gpufabric.core.slurm_node_state module and the remediation role's filters:
- ``parse_scontrol_nodes``: the records of ``scontrol show node`` (the multi-line form every release prints, and
  the one-line ``-o`` form), each a dict of Slurm's own keys plus the state split into its base and flags and the
  reason split from the ``[user@time]`` that scontrol appends to it.
- ``drain_owner``: whose drain a node is in: ``ours`` (the loop's ledger records the drain and Slurm still shows its
  reason, user and time unchanged), ``foreign`` (drained or down for anyone else: a person, a health check, Slurm
  itself, a reason someone edited), or None (in service).
  Only ``ours`` may ever be resumed; only None may be drained.
- ``drain_reason``: the reason a drain is given, from one alert: prefix, rail, interface, what broke, since when,
  the alert's name, leaf and leaf port, kept within what Slurm keeps whole (``REASON_MAX_BYTES``).
- ``reason_prefix_problem``: whether a reason prefix survives scontrol and still tells our drains from others'.

What Slurm does with a reason (scontrol's ``update_node.c``, and the lab's Slurm 22.05 and 24.11):
- ``scontrol update NodeName=n State=DRAIN Reason=...`` takes the reason from one argument; spaces, commas and
  ``=`` stay as they are when the argument reaches scontrol whole (this module passes an argv list, no shell).
- One leading and one trailing double quote are removed (scontrol strips the quotes people type around a reason).
- A line break splits the reason over lines in ``scontrol show node``; a carriage return or other control
  character is kept but garbles every listing.
- slurmctld keeps any length, but slurmdbd stores a node event's reason as a MySQL TINYTEXT (255 bytes, see
  ``event_table_fields`` in Slurm's accounting_storage/mysql plugin): a longer reason is cut in ``sacctmgr show
  event``. Reasons here are kept within 255 bytes of UTF-8.
"""

from __future__ import annotations

import re

# The reason as the node event in Slurm's accounting database keeps it whole (TINYTEXT).
REASON_MAX_BYTES = 255
# Room left for the reason's text after the prefix: a prefix longer than this leaves too little to say what broke.
PREFIX_MAX_CHARS = 32
# A prefix: a word and a colon, so that no reason written by a person or by Slurm ("Not responding",
# "Kill task failed", "Low RealMemory", "NHC: ...") starts with it by accident, and nothing scontrol alters or
# splits (quotes, whitespace, line breaks).
_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*:")
# " [user@2026-12-04T10:00:00]" that scontrol appends to the first line of a reason.
_REASON_SUFFIX = re.compile(r"^(?P<text>.*?) \[(?P<user>[^@\[\]\s]+)@(?P<time>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]+)\]$")
# Keys whose value runs to the end of the line in the multi-line form: free text with spaces.
_TEXT_KEYS = ("Reason", "Comment", "Extra", "OS")
_KEY = re.compile(r"(?:(?<=\s)|^)([A-Za-z_][A-Za-z0-9_]*)=")
# State suffixes sinfo and older scontrol releases append to the base state: * not responding, ~ powered down,
# # powering up, % powering down, ! pending power down, $ maintenance, @ pending reboot, ^ reboot issued,
# - planned.
_STATE_SYMBOLS = "*~#%!$@^-"
# Base states that mean the node is out of service for a reason someone gave.
DOWN_STATES = ("DOWN", "FAIL", "FAILING")
# What an alert name says, in a reason: Gpufabric<What> -> words an operator reads in `sinfo -R`.
ALERT_WORDS = {
    "GpufabricPortDown": "down",
    "GpufabricPortFlapping": "flapping",
    "GpufabricPortCarrierLost": "lost carrier",
    "GpufabricPortRateLow": "below rate",
    "GpufabricCablingMismatch": "miscabled",
    "GpufabricBondPartnerLost": "LACP partner lost",
    "GpufabricBgpPeerDown": "BGP down",
    "GpufabricBfdPeerDown": "BFD down",
    "GpufabricIpsecSaMissing": "IPsec SA missing",
    "GpufabricPcieLinkDegraded": "PCIe link degraded",
    "GpufabricRoceEcnOff": "ECN off",
}
# What a label value may hold in a reason: anything else (whitespace, quotes, brackets, control characters)
# becomes "_", so an alert label cannot reshape the reason or the [user@time] that Slurm appends.
_REASON_WORD = re.compile(r"[^A-Za-z0-9_.:/@+,=-]")


class ScontrolParseError(ValueError):
    """Output that is not `scontrol show node`."""


def _records(text):
    """Split the output into one list of lines per node."""
    records = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.startswith("NodeName="):
            records.append([line])
        elif records and line.strip():
            records[-1].append(line)
        elif line.strip():
            raise ScontrolParseError("line before the first NodeName=: %r" % line[:80])
    return records


def _pairs(line):
    """key=value pairs of one line; a free-text key (Reason, OS ...) takes the rest of the line."""
    found = []
    matches = list(_KEY.finditer(line))
    for index, match in enumerate(matches):
        key = match.group(1)
        if key in _TEXT_KEYS and (index == 0 or key == "Reason"):
            found.append((key, line[match.end():].rstrip()))
            break
        end = matches[index + 1].start() if index + 1 < len(matches) else len(line)
        found.append((key, line[match.end():end].strip()))
    return found


def split_state(state):
    """'IDLE+DRAIN' -> ('IDLE', ['DRAIN'], False); 'DOWN*' -> ('DOWN', [], True)."""
    parts = [part for part in (state or "").split("+") if part]
    if not parts:
        return "UNKNOWN", [], False
    base = parts[0]
    not_responding = "*" in base or "NOT_RESPONDING" in parts[1:]
    base = base.rstrip(_STATE_SYMBOLS) or "UNKNOWN"
    flags = [part.rstrip(_STATE_SYMBOLS) for part in parts[1:]]
    return base, flags, not_responding


def split_reason(text):
    """A reason as scontrol shows it -> (reason, user, time); user and time None when Slurm appended none."""
    if text is None:
        return None, None, None
    first, rest = (text.split("\n", 1) + [""])[:2]
    match = _REASON_SUFFIX.match(first)
    if not match:
        return text, None, None
    reason = match.group("text") + ("\n" + rest if rest else "")
    return reason, match.group("user"), match.group("time")


def _node(lines):
    fields = {}
    reason_lines = None
    for line in lines:
        if reason_lines is not None and line.startswith("       ") and "=" not in line.split()[0]:
            reason_lines.append(line.strip())  # a reason of several lines continues, indented by 7
            continue
        for key, value in _pairs(line.strip()):
            fields[key] = value
            if key == "Reason":
                reason_lines = [value]
                break
        else:
            reason_lines = None if "Reason" not in fields else reason_lines
    if reason_lines is not None:
        fields["Reason"] = "\n".join(reason_lines)
    name = fields.get("NodeName")
    if not name:
        raise ScontrolParseError("a record without a NodeName: %r" % lines[0][:80])
    base, flags, not_responding = split_state(fields.get("State"))
    reason, user, when = split_reason(fields.get("Reason"))
    partitions = [part for part in (fields.get("Partitions") or "").split(",") if part]
    drained = "DRAIN" in flags or base in ("DRAINED", "DRAINING", "DRAIN")
    return {
        "name": name,
        "state": fields.get("State"),
        "base_state": base,
        "flags": flags,
        "not_responding": not_responding,
        "drained": drained,
        "down": base in DOWN_STATES,
        "reason": reason if reason not in ("", "(null)", "None") else None,
        "reason_user": user,
        "reason_time": when,
        "partitions": partitions,
        "fields": fields,
    }


def parse_scontrol_nodes(text):
    """Every node of `scontrol show node` (or `scontrol -o show node`) output, in the order printed.

    Each node: name, state (as printed), base_state, flags, not_responding, drained, down, reason (without the
    [user@time] that scontrol appends; None when there is none), reason_user, reason_time, partitions, and every
    field as printed (fields). "No nodes in the system" and empty output give [].
    """
    if not isinstance(text, str):
        raise ScontrolParseError("scontrol output must be text, got %s" % type(text).__name__)
    if not text.strip() or text.strip() == "No nodes in the system":
        return []
    return [_node(lines) for lines in _records(text)]


def drain_owner(node, prefix, recorded=None):
    """'ours', 'foreign' (drained or down for anyone else) or None (in service: this loop may drain it).

    A drain is this loop's only when its ledger says so (recorded: the ledger's entry for the node, its last action
    a drain) and Slurm still shows the drain it set: the same reason, user and time as Slurm showed right after it.
    A reason a person extended, a drain set again by another user, or a person's reason that merely starts with
    the prefix is theirs."""
    reason = node.get("reason") or ""
    recorded = recorded or {}
    if node.get("drained") and reason.startswith(prefix) and recorded.get("action") == "drain" \
            and "slurm_reason" in recorded \
            and (recorded["slurm_reason"], recorded.get("slurm_user"), recorded.get("slurm_time")) \
            == (reason, node.get("reason_user"), node.get("reason_time")):
        return "ours"
    if node.get("drained") or node.get("down"):
        return "foreign"
    return None


def reason_prefix_problem(name, prefix):
    """A sentence naming `name` when prefix cannot tell this loop's drains from others' intact, else None."""
    if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix) or len(prefix) > PREFIX_MAX_CHARS:
        return ("%s: must be a word ending in a colon, such as gpufabric:, of at most %d characters (letters, "
                "digits, _ . - then :), so that scontrol keeps it whole (it strips quotes and splits lines) and no "
                "reason a person or Slurm writes starts with it; got %r" % (name, PREFIX_MAX_CHARS, prefix))
    return None


def reason_problem(reason):
    """What scontrol or slurmdbd would do to this reason, or None when it keeps it as it is."""
    if not isinstance(reason, str) or not reason.strip():
        return "a drain needs a reason (scontrol refuses a drain without one)"
    if re.search(r"[\x00-\x1f\x7f]", reason):
        return "a line break or control character splits or garbles the reason in scontrol show node"
    if reason.startswith('"') or reason.endswith('"'):
        return "scontrol strips one leading and one trailing double quote from a reason"
    if len(reason.encode("utf-8")) > REASON_MAX_BYTES:
        return "longer than %d bytes, which slurmdbd cuts (TINYTEXT)" % REASON_MAX_BYTES
    return None


def _word(value):
    text = _REASON_WORD.sub("_", str(value)) if value not in (None, "") else ""
    return text


def _since(starts_at):
    """Alertmanager's startsAt (RFC 3339, nanoseconds) as 2026-12-04T10:00:00Z."""
    match = re.match(r"^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.[0-9]+)?(Z|[+-][0-9:]+)?$",
                     str(starts_at or ""))
    if not match:
        return None
    zone = match.group(2) or ""
    return match.group(1) + ("Z" if zone in ("Z", "+00:00") else zone)


def _fit(text, limit):
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit - 3].decode("utf-8", errors="ignore").rstrip() + "..."


def alert_words(alertname):
    """What an alert says in a drain reason: the table's words, else the name after Gpufabric, lower case."""
    if alertname in ALERT_WORDS:
        return ALERT_WORDS[alertname]
    what = re.sub(r"^Gpufabric", "", str(alertname or "fault"))
    what = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", what).lower()
    # Spaces between words stay; anything else outside _REASON_WORD becomes "_", as in the labels.
    return " ".join(_REASON_WORD.sub("_", word) for word in what.split()) or "fault"


def drain_reason(prefix, labels, starts_at=None):
    """The drain reason for one alert: 'gpufabric: rail1 eth2 down since 2026-12-04T10:00:00Z
    (GpufabricPortDown leaf-b swp2)', at most REASON_MAX_BYTES bytes; what does not fit is cut from the end."""
    labels = labels or {}
    where = " ".join(part for part in (_word(labels.get("rail")), _word(labels.get("netdev"))
                                       or _word(labels.get("device"))) if part)
    since = _since(starts_at)
    head = " ".join(part for part in (prefix, where, alert_words(labels.get("alertname")),
                                      "since " + since if since else "") if part)
    detail = " ".join(part for part in (_word(labels.get("alertname")), _word(labels.get("leaf")),
                                        _word(labels.get("leaf_port"))) if part)
    reason = "%s (%s)" % (head, detail) if detail else head
    return _fit(reason, REASON_MAX_BYTES)
