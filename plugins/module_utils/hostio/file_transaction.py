# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A set of whole files brought to their desired content and mode as one transaction.

The one writer of files for the collection's modules and host programs: every file they install, replace or
remove goes through here (fsync, atomic rename, undo). Planning is pure (``plan``, ``diff_entries``); ``apply``
stages every new file next to its target (same file system, so the rename is atomic), then renames them into place
one by one and, when any step fails (or the caller's ``after`` check refuses the result), puts every file it had
already replaced or removed back and removes the directories it created. ``write_atomically`` replaces one file on
its own (a state file, a record). Standard library only, no imports from the collection: host programs install
this file unchanged beside their own code.

A desired entry is a dict: ``path``, ``content`` (text, or None for "must not exist"), ``mode`` (int),
``secret`` (True: the content never appears in a diff or a result), and optionally ``owner`` ((uid, gid): the
file gets it, and a file with another owner is a change).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile

REDACTED = "<secret: %d bytes, not shown>\n"
# Directories created above a wanted one: traversable by every user, as /etc, /usr/local/lib and /var/lib are.
PARENTS_MODE = 0o755
# Every temporary file this module stages begins with it (mkstemp: 0600, O_EXCL, beside its target).
TEMPORARY_PREFIX = ".gpufabric-"


def read_current(path, with_owner=False):
    """(text or None, mode or None) of path as it is now, and with with_owner its (uid, gid) or None third; a
    directory or other non-file is an error."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return (None, None, None) if with_owner else (None, None)
    if not stat.S_ISREG(info.st_mode):
        raise ValueError("%s exists and is not a regular file" % path)
    with open(path, "rb") as handle:
        data = handle.read()
    current = (data.decode("utf-8", errors="surrogateescape"), stat.S_IMODE(info.st_mode))
    return current + ((info.st_uid, info.st_gid),) if with_owner else current


def read_all(desired):
    """{path: read_current(path)} for every desired entry, with the owner where the entry names one."""
    return {entry["path"]: read_current(entry["path"], with_owner=entry.get("owner") is not None)
            for entry in desired}


def plan(desired, current):
    """The changes that bring the files to desired.

    current maps each path to (text or None, mode or None[, (uid, gid) or None]), as read_current (read_all)
    returns. Returns a list of dicts, in the order of desired: path, action (create | replace | mode | owner |
    remove), before, after, mode, before_mode, owner, before_owner, secret.
    """
    changes = []
    seen = set()
    for entry in desired:
        path = entry["path"]
        if path in seen:
            raise ValueError("%s is listed twice" % path)
        seen.add(path)
        before, before_mode, before_owner = (tuple(current.get(path, ())) + (None, None, None))[:3]
        after = entry.get("content")
        if after is None:
            if before is not None:
                changes.append(_change(entry, "remove", before, None, before_mode, before_owner))
            continue
        owner = entry.get("owner")
        if before is None:
            action = "create"
        elif before != after:
            action = "replace"
        elif before_mode != entry["mode"]:
            action = "mode"
        elif owner is not None and before_owner is not None and tuple(before_owner) != tuple(owner):
            action = "owner"
        else:
            continue
        changes.append(_change(entry, action, before, after, before_mode, before_owner))
    return changes


def _change(entry, action, before, after, before_mode, before_owner):
    owner = entry.get("owner")
    return {"path": entry["path"], "action": action, "before": before, "after": after,
            "mode": entry.get("mode"), "before_mode": before_mode,
            "owner": tuple(owner) if owner is not None else None,
            "before_owner": tuple(before_owner) if before_owner is not None else None,
            "secret": bool(entry.get("secret"))}


def _shown(text, secret):
    if text is None:
        return ""
    return REDACTED % len(text.encode("utf-8", errors="surrogateescape")) if secret else text


def diff_entries(changes):
    """Ansible diff entries, one per changed file; a secret file's content is replaced by its size."""
    entries = []
    for change in changes:
        entry = {"before_header": change["path"], "after_header": change["path"],
                 "before": _shown(change["before"], change["secret"]),
                 "after": _shown(change["after"], change["secret"])}
        if change["action"] == "mode":
            entry["before"] = "(mode only)\n"
            entry["after"] = "mode %04o\n" % change["mode"]
        elif change["action"] == "owner":
            entry["before"] = "owner %d:%d\n" % change["before_owner"]
            entry["after"] = "owner %d:%d\n" % change["owner"]
        entries.append(entry)
    return entries


def summary(changes):
    """What a result may show of the changes: no content at all."""
    return [{"path": change["path"], "action": change["action"]} for change in changes]


def write_atomically(path, data, mode, owner=None):
    """Replace path with data (bytes) through a temporary file beside it and a rename, so that a reader sees the
    old file or the new one, never part of one. mkstemp creates the temporary file 0600; it gets mode (and owner,
    a (uid, gid) pair, when given) before the rename."""
    fd, temporary = tempfile.mkstemp(prefix=TEMPORARY_PREFIX, dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            if owner is not None:
                os.fchown(handle.fileno(), owner[0], owner[1])
            os.fsync(handle.fileno())
        os.rename(temporary, path)
    except BaseException:
        if os.path.lexists(temporary):
            os.unlink(temporary)
        raise
    _fsync_directory(os.path.dirname(path) or ".")


def append(path, text, mode=0o600):
    """Add text at the end of the file at path (a log), created with mode when missing; durable when it returns."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        os.write(fd, text.encode("utf-8", errors="surrogateescape"))
        os.fsync(fd)
    finally:
        os.close(fd)


def remove(path):
    """Remove the file or link at path, durably; True when there was one."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    _fsync_directory(os.path.dirname(path) or ".")
    return True


def set_attributes(path, mode, owner=None):
    """Give the existing file or directory at path mode, then owner (uid, gid) when given, its content untouched:
    the mode first, so that a file readable by others is narrowed before it changes hands."""
    os.chmod(path, mode)
    if owner is not None:
        os.chown(path, owner[0], owner[1])


def replace_symlink(path, target):
    """Point the symbolic link path at target through a link beside it and a rename: a reader sees the old link or
    the new one, never none."""
    temporary = os.path.join(os.path.dirname(path), ".gpufabric-%s.link" % os.path.basename(path))
    remove(temporary)
    os.symlink(target, temporary)
    try:
        os.rename(temporary, path)
    except BaseException:
        remove(temporary)
        raise
    _fsync_directory(os.path.dirname(path) or ".")


def _stage(change):
    directory = os.path.dirname(change["path"])
    fd, temp = tempfile.mkstemp(prefix=TEMPORARY_PREFIX, suffix=".tmp", dir=directory)
    try:
        # The mode first: a secret is never readable by others, not even for an instant.
        os.fchmod(fd, change["mode"])
        if change.get("owner") is not None:
            os.fchown(fd, change["owner"][0], change["owner"][1])
        with os.fdopen(fd, "wb") as handle:
            handle.write(change["after"].encode("utf-8", errors="surrogateescape"))
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise
    return temp


def _fsync_directory(directory):
    """Make a rename or removal in directory durable (the file's own fsync does not cover its directory entry)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_directories(changes):
    for directory in sorted({os.path.dirname(change["path"]) for change in changes}):
        _fsync_directory(directory)


def make_directory(path, mode, owner=None, parents_mode=None):
    """Create path with mode, not narrowed by the umask, and its missing parents: with parents_mode likewise, or
    without it as os.makedirs does (0777 less the umask). Each gets owner (uid, gid) when given. Returns the
    directories created, outermost first."""
    missing = []
    directory = path
    while directory and not os.path.isdir(directory):
        missing.append(directory)
        directory = os.path.dirname(directory)
    for directory in reversed(missing):
        wanted = mode if directory == path else parents_mode
        os.mkdir(directory, 0o777 if wanted is None else wanted)
        if wanted is not None:
            os.chmod(directory, wanted)
        if owner is not None:
            os.chown(directory, owner[0], owner[1])
    return missing[::-1]


def apply(changes, validate=None, make_directories=None, after=None):
    """Install the changes; all of them or, on any failure, none.

    validate(change, staged_path) runs for every staged file before anything is replaced; it returns a problem
    text or None. make_directories lists (path, mode) created first (missing parents get PARENTS_MODE). after(),
    when given, runs once every file is in place: an exception from it undoes the whole transaction and is raised
    again (a check of the installed result, such as a program reading the configuration written with it). Returns
    the list of validation problems (nothing installed when not empty); raises OSError (or after's exception) after
    restoring the previous files. Unless everything was installed, the directories this call created are removed
    again (those left empty).
    """
    created, staged = [], {}
    installed = False
    try:
        for directory, mode in make_directories or ():
            created += make_directory(directory, mode, parents_mode=PARENTS_MODE)
        for change in changes:
            if change["after"] is not None:
                staged[change["path"]] = _stage(change)
        problems = []
        for change in changes:
            if validate and change["path"] in staged:
                problem = validate(change, staged[change["path"]])
                if problem:
                    problems.append(problem)
        if problems:
            return problems
        done = []
        try:
            for change in changes:
                if change["after"] is None:
                    os.unlink(change["path"])
                else:
                    os.replace(staged[change["path"]], change["path"])
                    del staged[change["path"]]
                done.append(change)
            _fsync_directories(done)
            if after is not None:
                after()
        except BaseException:
            _restore(done)
            raise
        installed = True
        return []
    finally:
        for temp in staged.values():
            try:
                os.unlink(temp)
            except FileNotFoundError:
                pass
        if not installed:
            for directory in reversed(created):
                try:
                    os.rmdir(directory)
                except OSError:
                    pass


@contextlib.contextmanager
def staged_directory(directory, changes, inside):
    """A private copy of directory as the changes (all inside it) would leave it, at <temporary root>/<inside>, for a
    tool that validates a whole directory (the files it holds now, each new one with its mode); removed on exit.
    Yields the temporary root (0700)."""
    root = tempfile.mkdtemp(prefix="gpufabric-stage-")
    try:
        target = os.path.join(root, inside)
        if os.path.isdir(directory):
            shutil.copytree(directory, target, symlinks=True)
        else:
            os.makedirs(target)
        for change in changes:
            path = os.path.join(target, os.path.relpath(change["path"], directory))
            if change["after"] is None:
                remove(path)
                continue
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as handle:
                os.fchmod(handle.fileno(), change["mode"])
                handle.write(change["after"].encode("utf-8", errors="surrogateescape"))
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def check(changes, validate):
    """validate() every new file without touching its directory (check mode): staged in a private temp dir."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="gpufabric-check-") as directory:
        for index, change in enumerate(changes):
            if change["after"] is None:
                continue
            staged = os.path.join(directory, "%d-%s" % (index, os.path.basename(change["path"])))
            with open(os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as handle:
                handle.write(change["after"].encode("utf-8", errors="surrogateescape"))
            problem = validate(change, staged)
            if problem:
                problems.append(problem)
    return problems


def _restore(done):
    """Put back the content, mode and owner of every file the failed transaction already changed."""
    for change in reversed(done):
        path = change["path"]
        if change["before"] is None:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            continue
        previous = dict(change, after=change["before"], mode=change.get("before_mode") or change["mode"],
                        owner=change.get("before_owner"))
        os.replace(_stage(previous), path)
    _fsync_directories(done)


def remove_stale_temporaries(directory, check_mode=False):
    """Remove what write_atomically and apply staged in directory and never renamed: their process was killed
    (SIGKILL, power loss) between the write and the rename, and a temporary file may hold a whole secret. Only for
    a directory whose writers all hold one lock, held by the caller now: a temporary file of a writer still running
    would otherwise go. Returns the paths removed (in check mode, that would be)."""
    removed = []
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return removed
    for name in names:
        path = os.path.join(directory, name)
        if name.startswith(TEMPORARY_PREFIX) and (os.path.islink(path) or not os.path.isdir(path)):
            if not check_mode:
                os.unlink(path)
            removed.append(path)
    return removed
