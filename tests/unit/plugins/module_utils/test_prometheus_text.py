"""The collection's one Prometheus text writer: escaping, names, values, and the atomic textfile write.

Every rendered text is read back with prometheus_client's own parser (the reference implementation of the
format in Python), and, where promtool is installed, checked by `promtool check metrics` too.
"""

import math
import os
import shutil
import stat
import subprocess

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import prometheus_text as pt


def parse(text):
    return {family.name: family for family in text_string_to_metric_families(text)}


HOSTILE = [
    'quote " inside',
    "back\\slash",
    "line\nfeed",
    "trailing backslash\\",
    '\\"already escaped\\"',
    "} 1\ngpufabric_injected 1",
    "unicode: Größe 温度 ✓",
    "",
    "tab\tand\rcarriage return",
]


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_label_value_comes_back_unchanged(value):
    exposition = pt.Exposition()
    exposition.family("gpufabric_test_info", "A test family.").add({"host": value, "rail": "rail0"}, 1)
    text = exposition.render()
    # One sample line whatever the value: nothing the value holds can start a line or a sample of its own.
    assert len([line for line in text.split("\n") if line and not line.startswith("#")]) == 1  # the format splits on \n only
    families = parse(text)
    assert list(families) == ["gpufabric_test_info"]  # no injected family
    [sample] = families["gpufabric_test_info"].samples
    assert sample.labels == {"host": value, "rail": "rail0"}
    assert sample.value == 1.0


def test_escaping_is_the_formats():
    assert pt.escape_label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    assert pt.escape_help('say "x"\\\nnext') == 'say "x"\\\\\\nnext'


def test_help_with_a_line_feed_stays_one_line():
    exposition = pt.Exposition()
    exposition.family("gpufabric_x", "first line\nsecond \\ line").add({}, 2)
    text = exposition.render()
    assert text.splitlines()[0] == "# HELP gpufabric_x first line\\nsecond \\\\ line"
    assert parse(text)["gpufabric_x"].documentation == "first line\nsecond \\ line"


@pytest.mark.parametrize("name", ["", "1starts_with_digit", "has-dash", "has space", "gpufabric_x{a=1}", None, "ünï",
                                  "gpufabric_x\n"])
def test_bad_metric_names_are_refused(name):
    with pytest.raises(pt.MetricError, match="metric name"):
        pt.Exposition().family(name, "help")


@pytest.mark.parametrize("name", ["", "0rail", "rail-name", "rail name", "ünï", 3, "rail\n"])
def test_bad_label_names_are_refused(name):
    family = pt.Exposition().family("gpufabric_x", "help")
    with pytest.raises(pt.MetricError, match="label name"):
        family.add({name: "v"}, 1)


def test_reserved_label_names_are_refused():
    family = pt.Exposition().family("gpufabric_x", "help")
    with pytest.raises(pt.MetricError, match="reserves"):
        family.add({"__name__": "other_metric"}, 1)


def test_a_counter_must_end_in_total_and_the_type_must_be_known():
    exposition = pt.Exposition()
    with pytest.raises(pt.MetricError, match="_total"):
        exposition.family("gpufabric_flaps", "help", "counter")
    with pytest.raises(pt.MetricError, match="type"):
        exposition.family("gpufabric_x", "help", "histogram")
    exposition.family("gpufabric_flaps_total", "State changes.", "counter").add({"port": "1"}, 3)
    family = parse(exposition.render())["gpufabric_flaps"]  # the parser strips _total from a counter family's name
    assert family.type == "counter" and family.samples[0].value == 3.0


def test_a_family_declared_twice_must_agree():
    exposition = pt.Exposition()
    first = exposition.family("gpufabric_x", "help")
    assert exposition.family("gpufabric_x", "help") is first
    with pytest.raises(pt.MetricError, match="declared twice"):
        exposition.family("gpufabric_x", "help", "untyped")


def test_the_same_label_set_twice_is_refused_whatever_the_order():
    family = pt.Exposition().family("gpufabric_x", "help")
    family.add({"a": "1", "b": "2"}, 1)
    with pytest.raises(pt.MetricError, match="twice"):
        family.add({"b": "2", "a": "1"}, 0)


@pytest.mark.parametrize("value, text", [
    (True, "1"), (False, "0"), (None, "NaN"), (3, "3"), (70.0, "70"), (0.48, "0.48"), (1796034399.5, "1796034399.5"),
    (float("nan"), "NaN"), (float("inf"), "+Inf"), (float("-inf"), "-Inf"), (1e20, "1e+20"), (-2.5, "-2.5"), ("7", "7"),
])
def test_values(value, text):
    assert pt.format_value(value) == text


def test_a_value_that_is_no_number_is_refused():
    with pytest.raises(pt.MetricError, match="not a number"):
        pt.Exposition().family("gpufabric_x", "help").add({}, "up")


def test_unknown_is_nan_and_parses_as_nan():
    exposition = pt.Exposition()
    exposition.family("gpufabric_x", "help").add({"port": "1"}, None)
    assert math.isnan(parse(exposition.render())["gpufabric_x"].samples[0].value)


def test_order_is_kept_and_empty_families_are_left_out_unless_asked():
    exposition = pt.Exposition()
    exposition.family("gpufabric_b", "B.")
    exposition.family("gpufabric_a", "A.").add({"z": "1", "a": "2"}, 1)
    assert exposition.render() == '# HELP gpufabric_a A.\n# TYPE gpufabric_a gauge\ngpufabric_a{z="1",a="2"} 1\n'
    assert exposition.render(keep_empty=True).startswith("# HELP gpufabric_b B.\n# TYPE gpufabric_b gauge\n# HELP gpufabric_a")
    assert pt.Exposition().render() == ""


def test_write_textfile_replaces_the_file_atomically(tmp_path):
    path = tmp_path / "gpufabric_health.prom"
    path.write_text("old\n")
    reader = open(path)  # a reader that opened the old file keeps reading the old file
    exposition = pt.Exposition()
    exposition.family("gpufabric_x", "help").add({}, 1)
    pt.write_textfile(str(path), exposition.render())
    assert reader.read() == "old\n"
    reader.close()
    assert path.read_text() == exposition.render()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert sorted(os.listdir(tmp_path)) == ["gpufabric_health.prom"]  # no temporary file left behind


def test_a_failed_rename_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "gpufabric_health.prom"
    path.write_text("old\n")

    def refuse(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(file_transaction.os, "rename", refuse)
    with pytest.raises(OSError):
        pt.write_textfile(str(path), "gpufabric_x 1\n")
    assert path.read_text() == "old\n" and sorted(os.listdir(tmp_path)) == ["gpufabric_health.prom"]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian package prometheus) is not installed")
def test_promtool_accepts_the_output():
    exposition = pt.Exposition()
    exposition.family("gpufabric_port_up", "1 when the port is up.").add({"host": 'a"b', "rail": "rail\n0"}, 1)
    exposition.family("gpufabric_port_state_changes_total", "Port state changes.", "counter").add({"host": "x"}, 4)
    result = subprocess.run(["promtool", "check", "metrics"], input=exposition.render(), capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
