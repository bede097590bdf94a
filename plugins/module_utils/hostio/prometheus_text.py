# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one writer of Prometheus text (exposition format 0.0.4) in the collection.

Every program and module that publishes metrics builds them here: the verification report's textfile, the cooling
controller and the gpufabric-health sampler. A metric family is declared once with its HELP and TYPE, samples are
added with their labels, and ``render`` writes families in the order they were declared, samples in the order they
were added, labels in the order of the mapping given. Names are checked when declared, label names and values when
added, so a bad name fails where it is made rather than in node_exporter's log.

Plain text rather than prometheus_client: the output is a few lines of a stable format, the same code runs in
modules, on hosts without python3-prometheus-client and in the host programs, and one code path means one output to
test. The escaping is the format's: in label values backslash, double quote and line feed; in HELP backslash and
line feed. ``write_textfile`` replaces the file atomically (file_transaction.write_atomically: a temporary file
beside it, fsync, rename), so node_exporter's textfile collector never reads half a file; the temporary file's name
does not end in .prom, so the collector never reads it either.

Standard library only, relative imports only: host programs install this file unchanged beside their own code.
"""

from __future__ import annotations

import math
import re

from .file_transaction import write_atomically

# \Z, not $: a name with a final line break would split the exposition line.
METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*\Z")
TYPES = ("gauge", "counter", "untyped")


class MetricError(ValueError):
    """A metric or label name the exposition format does not allow, or a sample it cannot carry."""


def escape_label_value(value):
    """A label value as it goes between the double quotes: backslash, double quote and line feed escaped."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text):
    """HELP text: backslash and line feed escaped (double quotes stay as they are there)."""
    return str(text).replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value):
    """A sample value: booleans as 0/1, None as NaN (unknown), integral numbers without a fraction, +Inf/-Inf."""
    if value is None:
        return "NaN"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, float):
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise MetricError("%r is not a number" % (value,)) from None
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 1e15:
        return "%d" % value
    return repr(value)


def label_problems(labels):
    """What is wrong with a label set (names the format refuses or reserves); [] when it is usable."""
    problems = []
    for name in labels:
        if not isinstance(name, str) or not LABEL_NAME.match(name):
            problems.append("label name %r is not [a-zA-Z_][a-zA-Z0-9_]*" % (name,))
        elif name.startswith("__"):
            problems.append("label name %r starts with __, which Prometheus reserves" % name)
    return problems


class Family:
    """One metric family: its name, HELP, TYPE and samples."""

    def __init__(self, name, help_text, kind="gauge"):
        if not isinstance(name, str) or not METRIC_NAME.match(name):
            raise MetricError("metric name %r is not [a-zA-Z_:][a-zA-Z0-9_:]*" % (name,))
        if kind not in TYPES:
            raise MetricError("metric %s: type %r is not one of %s" % (name, kind, ", ".join(TYPES)))
        if kind == "counter" and not name.endswith("_total"):
            raise MetricError("counter %s: a counter's name ends in _total" % name)
        self.name = name
        self.help = help_text
        self.kind = kind
        self.samples = []
        self._seen = set()

    def add(self, labels, value):
        """Add one sample; labels is a mapping (its order is kept), value a number, bool or None (unknown)."""
        labels = dict(labels or {})
        problems = label_problems(labels)
        if problems:
            raise MetricError("metric %s: %s" % (self.name, "; ".join(problems)))
        key = tuple(sorted((name, str(text)) for name, text in labels.items()))
        if key in self._seen:
            raise MetricError("metric %s: the label set %s is given twice" % (self.name, dict(key)))
        self._seen.add(key)
        self.samples.append((labels, format_value(value)))
        return self

    def lines(self):
        out = ["# HELP %s %s" % (self.name, escape_help(self.help)), "# TYPE %s %s" % (self.name, self.kind)]
        for labels, value in self.samples:
            if labels:
                text = ",".join('%s="%s"' % (name, escape_label_value(labels[name])) for name in labels)
                out.append("%s{%s} %s" % (self.name, text, value))
            else:
                out.append("%s %s" % (self.name, value))
        return out


class Exposition:
    """The metric families of one textfile, rendered in the order they were declared."""

    def __init__(self):
        self.families = {}

    def family(self, name, help_text, kind="gauge"):
        """Declare a family (or return the one declared under that name, which must then agree)."""
        if name in self.families:
            existing = self.families[name]
            if existing.kind != kind:
                raise MetricError("metric %s is declared twice, as %s and as %s" % (name, existing.kind, kind))
            return existing
        self.families[name] = Family(name, help_text, kind)
        return self.families[name]

    def render(self, keep_empty=False):
        """The exposition text; families without samples are left out unless keep_empty."""
        lines = []
        for family in self.families.values():
            if family.samples or keep_empty:
                lines.extend(family.lines())
        return "\n".join(lines) + "\n" if lines else ""


def write_textfile(path, text, mode=0o644):
    """Replace path (a node_exporter textfile, name ending in .prom) with text, atomically."""
    write_atomically(path, text.encode("utf-8"), mode)
