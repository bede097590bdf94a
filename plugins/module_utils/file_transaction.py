# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A set of whole files brought to their desired content and mode as one transaction.

Used by the desired-state modules of the roles whose files have no activation step of their own
(gpufabric.core.cooling_config, gpufabric.core.nccl_env). Planning is pure (``plan``, ``diff_entries``);
``apply`` stages every new file next to its target (same file system, so the rename is atomic), then renames
them into place one by one and, when any step fails, puts every file it had already replaced or removed back.

A desired entry is a dict: ``path``, ``content`` (text, or None for "must not exist"), ``mode`` (int),
``secret`` (True: the content never appears in a diff or a result).
"""

from __future__ import annotations

import os
import stat
import tempfile

REDACTED = "<secret: %d bytes, not shown>\n"
# Every temporary file this module stages begins with it (mkstemp: 0600, O_EXCL, beside its target).
TEMPORARY_PREFIX = ".gpufabric-"


def read_current(path):
    """(text or None, mode or None) of path as it is now; a directory or other non-file is an error."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None, None
    if not stat.S_ISREG(info.st_mode):
        raise ValueError("%s exists and is not a regular file" % path)
    with open(path, "rb") as handle:
        data = handle.read()
    return data.decode("utf-8", errors="surrogateescape"), stat.S_IMODE(info.st_mode)


def plan(desired, current):
    """The changes that bring the files to desired.

    current maps each path to (text or None, mode or None), as read_current returns. Returns a list of dicts,
    in the order of desired: path, action (create | replace | mode | remove), before, after, mode, before_mode,
    secret.
    """
    changes = []
    seen = set()
    for entry in desired:
        path = entry["path"]
        if path in seen:
            raise ValueError("%s is listed twice" % path)
        seen.add(path)
        before, before_mode = current.get(path, (None, None))
        after = entry.get("content")
        if after is None:
            if before is not None:
                changes.append(_change(entry, "remove", before, None, before_mode))
            continue
        if before is None:
            action = "create"
        elif before != after:
            action = "replace"
        elif before_mode != entry["mode"]:
            action = "mode"
        else:
            continue
        changes.append(_change(entry, action, before, after, before_mode))
    return changes


def _change(entry, action, before, after, before_mode):
    return {"path": entry["path"], "action": action, "before": before, "after": after,
            "mode": entry.get("mode"), "before_mode": before_mode, "secret": bool(entry.get("secret"))}


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


def _stage(change):
    directory = os.path.dirname(change["path"])
    fd, temp = tempfile.mkstemp(prefix=TEMPORARY_PREFIX, suffix=".tmp", dir=directory)
    try:
        # The mode first: a secret is never readable by others, not even for an instant.
        os.fchmod(fd, change["mode"])
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
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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


def apply(changes, validate=None, make_directories=None):
    """Install the changes; all of them or, on any failure, none.

    validate(change, staged_path) runs for every staged file before anything is replaced; it returns a problem
    text or None. make_directories lists (path, mode) created first (left in place on failure: empty
    directories hold nothing). Returns the list of validation problems (nothing installed when not empty);
    raises OSError after restoring the previous files when an install step fails.
    """
    for directory, mode in make_directories or ():
        make_directory(directory, mode)
    staged = {}
    try:
        for change in changes:
            if change["after"] is not None:
                staged[change["path"]] = _stage(change)
        problems = []
        if validate:
            for change in changes:
                if change["path"] in staged:
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
                    os.replace(staged.pop(change["path"]), change["path"])
                done.append(change)
        except BaseException:
            _restore(done)
            raise
        for directory in sorted({os.path.dirname(change["path"]) for change in changes}):
            _fsync_directory(directory)
        return []
    finally:
        for temp in staged.values():
            try:
                os.unlink(temp)
            except FileNotFoundError:
                pass


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
    """Put back the content and mode of every file the failed transaction already changed."""
    for change in reversed(done):
        path = change["path"]
        if change["before"] is None:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            continue
        previous = dict(change, after=change["before"], mode=change.get("before_mode") or change["mode"])
        os.replace(_stage(previous), path)


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
