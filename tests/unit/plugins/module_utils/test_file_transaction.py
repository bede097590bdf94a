# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""file_transaction: plan, diff and an all-or-nothing install, on real files in the test's directory."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft


def _current(desired):
    return ft.read_all(desired)


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_plan_creates_replaces_remodes_removes_and_skips_unchanged(tmp_path):
    same, other, moded, gone = (tmp_path / name for name in ("same", "other", "moded", "gone"))
    for path, text, mode in ((same, "a\n", 0o644), (other, "old\n", 0o644), (moded, "m\n", 0o644), (gone, "g\n", 0o600)):
        path.write_text(text)
        path.chmod(mode)
    desired = [
        {"path": str(same), "content": "a\n", "mode": 0o644},
        {"path": str(other), "content": "new\n", "mode": 0o644},
        {"path": str(moded), "content": "m\n", "mode": 0o600},
        {"path": str(gone), "content": None, "mode": 0o600},
        {"path": str(tmp_path / "fresh"), "content": "f\n", "mode": 0o640},
        {"path": str(tmp_path / "never"), "content": None, "mode": 0o600},
    ]
    changes = ft.plan(desired, _current(desired))
    assert [(os.path.basename(c["path"]), c["action"]) for c in changes] == [
        ("other", "replace"), ("moded", "mode"), ("gone", "remove"), ("fresh", "create")]
    assert ft.plan(desired[:1], _current(desired[:1])) == []


def test_plan_refuses_a_path_listed_twice(tmp_path):
    entry = {"path": str(tmp_path / "x"), "content": "x", "mode": 0o644}
    with pytest.raises(ValueError, match="listed twice"):
        ft.plan([entry, entry], {})


def test_read_current_refuses_a_directory(tmp_path):
    with pytest.raises(ValueError, match="not a regular file"):
        ft.read_current(str(tmp_path))


def test_secret_content_never_in_diff_or_summary(tmp_path):
    desired = [{"path": str(tmp_path / "ipmi.pass"), "content": "hunter2\n", "mode": 0o600, "secret": True}]
    changes = ft.plan(desired, _current(desired))
    shown = repr(ft.diff_entries(changes)) + repr(ft.summary(changes))
    assert "hunter2" not in shown
    assert "secret: 8 bytes" in ft.diff_entries(changes)[0]["after"]


def test_apply_installs_everything_with_modes(tmp_path):
    (tmp_path / "old").write_text("old\n")
    desired = [{"path": str(tmp_path / "conf"), "content": "c\n", "mode": 0o640},
               {"path": str(tmp_path / "sub" / "key"), "content": "k\n", "mode": 0o600},
               {"path": str(tmp_path / "old"), "content": None, "mode": 0o600}]
    changes = ft.plan(desired, _current(desired[:1] + desired[2:]))
    assert ft.apply(changes, make_directories=[(str(tmp_path / "sub"), 0o750)]) == []
    assert (tmp_path / "conf").read_text() == "c\n" and _mode(tmp_path / "conf") == 0o640
    assert (tmp_path / "sub" / "key").read_text() == "k\n" and _mode(tmp_path / "sub" / "key") == 0o600
    assert _mode(tmp_path / "sub") == 0o750
    assert not (tmp_path / "old").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conf", "sub"]  # no staged file left behind
    assert ft.plan(desired, _current(desired)) == []


def test_a_validation_problem_installs_nothing(tmp_path):
    (tmp_path / "a").write_text("a-old\n")
    desired = [{"path": str(tmp_path / "a"), "content": "a-new\n", "mode": 0o644},
               {"path": str(tmp_path / "b"), "content": "bad\n", "mode": 0o644}]
    changes = ft.plan(desired, _current(desired))

    def validate(change, staged):
        with open(staged) as handle:
            return "%s is bad" % change["path"] if handle.read() == "bad\n" else None

    problems = ft.apply(changes, validate=validate)
    assert problems == ["%s is bad" % (tmp_path / "b")]
    assert (tmp_path / "a").read_text() == "a-old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]
    assert ft.check(changes, validate) == problems
    assert (tmp_path / "a").read_text() == "a-old\n"


def test_a_failed_install_step_restores_the_files_already_replaced(tmp_path):
    (tmp_path / "a").write_text("a-old\n")
    (tmp_path / "a").chmod(0o640)
    (tmp_path / "c").write_text("c-old\n")
    # The third step fails for real: the path to remove is a non-empty directory by the time apply runs.
    desired = [{"path": str(tmp_path / "a"), "content": "a-new\n", "mode": 0o644},
               {"path": str(tmp_path / "b"), "content": "b-new\n", "mode": 0o644},
               {"path": str(tmp_path / "c"), "content": None, "mode": 0o644}]
    changes = ft.plan(desired, _current(desired))
    (tmp_path / "c").unlink()
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "keep").write_text("k")
    with pytest.raises(OSError):
        ft.apply(changes)
    assert (tmp_path / "a").read_text() == "a-old\n" and _mode(tmp_path / "a") == 0o640
    assert not (tmp_path / "b").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "c"]


def test_a_file_whose_rename_fails_leaves_no_staged_copy(tmp_path):
    desired = [{"path": str(tmp_path / "a"), "content": "a\n", "mode": 0o644},
               {"path": str(tmp_path / "b"), "content": "b\n", "mode": 0o644}]
    changes = ft.plan(desired, ft.read_all(desired))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "keep").write_text("k")
    with pytest.raises(OSError):
        ft.apply(changes)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]


def test_make_directory_gives_the_modes_asked_whatever_the_umask(tmp_path):
    leaf = tmp_path / "a" / "b" / "c"
    previous = os.umask(0o077)
    try:
        assert ft.make_directory(str(leaf), 0o750, parents_mode=0o755) == [str(tmp_path / "a"), str(tmp_path / "a" / "b"), str(leaf)]
        # Without parents_mode the parents are what os.makedirs would make: 0777 less the umask.
        assert ft.make_directory(str(tmp_path / "x" / "y"), 0o755) == [str(tmp_path / "x"), str(tmp_path / "x" / "y")]
    finally:
        os.umask(previous)
    assert [_mode(path) for path in (tmp_path / "a", tmp_path / "a" / "b", leaf)] == [0o755, 0o755, 0o750]
    assert [_mode(path) for path in (tmp_path / "x", tmp_path / "x" / "y")] == [0o700, 0o755]
    assert ft.make_directory(str(leaf), 0o700) == [] and _mode(leaf) == 0o750


def _owner(path):
    info = os.lstat(path)
    return info.st_uid, info.st_gid


def test_an_owner_is_given_and_a_file_of_another_owner_is_a_change(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root")
    path = tmp_path / "helper"
    desired = [{"path": str(path), "content": "x\n", "mode": 0o755, "owner": (0, 0)}]
    assert ft.apply(ft.plan(desired, ft.read_all(desired))) == []
    assert _owner(path) == (0, 0) and ft.plan(desired, ft.read_all(desired)) == []
    os.chown(path, 65534, 65534)
    changes = ft.plan(desired, ft.read_all(desired))
    assert [c["action"] for c in changes] == ["owner"]
    assert ft.diff_entries(changes)[0]["before"] == "owner 65534:65534\n"
    assert ft.apply(changes) == [] and _owner(path) == (0, 0)
    # Without an owner in the entry, the owner is left as it is and is no change.
    os.chown(path, 65534, 65534)
    assert ft.plan([dict(desired[0], owner=None)], ft.read_all(desired)) == []


def test_a_restore_gives_back_the_previous_owner_and_mode(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root")
    path = tmp_path / "conf"
    path.write_text("old\n")
    path.chmod(0o640)
    os.chown(path, 65534, 65534)
    desired = [{"path": str(path), "content": "new\n", "mode": 0o644, "owner": (0, 0)}]

    def refuse():
        raise RuntimeError("refused")

    with pytest.raises(RuntimeError):
        ft.apply(ft.plan(desired, ft.read_all(desired)), after=refuse)
    assert path.read_text() == "old\n" and _mode(path) == 0o640 and _owner(path) == (65534, 65534)


def test_a_refused_result_undoes_files_and_the_directories_created_for_them(tmp_path):
    (tmp_path / "kept").write_text("kept-old\n")
    desired = [{"path": str(tmp_path / "kept"), "content": "kept-new\n", "mode": 0o644},
               {"path": str(tmp_path / "new" / "deep" / "file"), "content": "n\n", "mode": 0o644}]
    seen = []

    def after():
        # Runs with every file in place, as a program reading its configuration would see them.
        seen.append((tmp_path / "kept").read_text())
        raise ValueError("the program refuses its configuration")

    with pytest.raises(ValueError, match="refuses"):
        ft.apply(ft.plan(desired, ft.read_all(desired)),
                 make_directories=[(str(tmp_path / "new" / "deep"), 0o750)], after=after)
    assert seen == ["kept-new\n"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]
    assert (tmp_path / "kept").read_text() == "kept-old\n"


def test_missing_parents_of_a_wanted_directory_are_0755_whatever_the_umask(tmp_path):
    desired = [{"path": str(tmp_path / "a" / "b" / "f"), "content": "f\n", "mode": 0o600}]
    previous = os.umask(0o077)
    try:
        assert ft.apply(ft.plan(desired, ft.read_all(desired)), make_directories=[(str(tmp_path / "a" / "b"), 0o700)]) == []
    finally:
        os.umask(previous)
    assert _mode(tmp_path / "a") == 0o755 and _mode(tmp_path / "a" / "b") == 0o700


def test_a_validation_problem_leaves_no_directory_behind(tmp_path):
    desired = [{"path": str(tmp_path / "d" / "f"), "content": "bad\n", "mode": 0o644}]
    problems = ft.apply(ft.plan(desired, ft.read_all(desired)), validate=lambda change, staged: "bad",
                        make_directories=[(str(tmp_path / "d"), 0o755)])
    assert problems == ["bad"] and list(tmp_path.iterdir()) == []


def test_write_atomically_and_remove(tmp_path):
    path = tmp_path / "record"
    ft.write_atomically(str(path), b"one\n", 0o600)
    ft.write_atomically(str(path), b"two\n", 0o640)
    assert path.read_bytes() == b"two\n" and _mode(path) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record"]
    assert ft.remove(str(path)) is True and ft.remove(str(path)) is False
    assert list(tmp_path.iterdir()) == []


def test_replace_symlink_swaps_the_target_in_one_step(tmp_path):
    link = tmp_path / "current"
    ft.replace_symlink(str(link), "first")
    ft.replace_symlink(str(link), "second")
    assert os.readlink(link) == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["current"]


def test_set_attributes_changes_mode_and_owner_not_content(tmp_path):
    key = tmp_path / "host.key"
    key.write_text("key material\n")
    os.chmod(key, 0o644)
    owner = (os.getuid(), os.getgid())
    ft.set_attributes(str(key), 0o600, owner)
    assert _mode(key) == 0o600 and (key.stat().st_uid, key.stat().st_gid) == owner
    assert key.read_text() == "key material\n"
    ft.set_attributes(str(tmp_path), 0o700)
    assert _mode(tmp_path) == 0o700


def test_append_adds_lines_to_a_log_created_with_its_mode(tmp_path):
    log = tmp_path / "rollback.log"
    ft.append(str(log), "one\n")
    ft.append(str(log), "two\n", mode=0o644)
    assert log.read_text() == "one\ntwo\n" and _mode(log) == 0o600


def test_staged_directory_is_the_directory_as_the_changes_leave_it_then_gone(tmp_path):
    config = tmp_path / "network"
    config.mkdir()
    (config / "keep.network").write_text("k\n")
    (config / "old.network").write_text("o\n")
    desired = [{"path": str(config / "old.network"), "content": None, "mode": 0o644},
               {"path": str(config / "new.netdev"), "content": "n\n", "mode": 0o640}]
    with ft.staged_directory(str(config), ft.plan(desired, ft.read_all(desired)), "etc/network") as root:
        staged = os.path.join(root, "etc", "network")
        assert sorted(os.listdir(staged)) == ["keep.network", "new.netdev"]
        assert _mode(os.path.join(staged, "new.netdev")) == 0o640
    assert not os.path.exists(root)
    assert sorted(os.listdir(str(config))) == ["keep.network", "old.network"]
