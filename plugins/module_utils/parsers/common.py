# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers shared by every parser in this collection.

Parsers are plain functions from the text of one command to plain data. They raise
ParseError with a message naming the command and what was wrong; filters turn it into
AnsibleFilterError and modules into fail_json, so users never see a traceback.
"""

from __future__ import annotations

import re

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


_SIGNED_INT = re.compile(r"-?\d+")
_UNSIGNED_INT = re.compile(r"\d+")


def int_or_none(value, signed=True):
    """The int of a whole decimal number (white space around it allowed; a sign when signed), else None (None, empty,
    or any other text). The one reading of "a number or nothing" the parsers share."""
    if value is None:
        return None
    text = value.strip()
    return int(text) if (_SIGNED_INT if signed else _UNSIGNED_INT).fullmatch(text) else None


class ParseError(ValueError):
    """The text given to a parser is not output of the command it parses."""

    def __init__(self, command, problem):
        self.command = command
        self.problem = problem
        super().__init__("cannot parse `%s` output: %s" % (command, problem))


def clean_lines(text, command):
    """Return the lines of text without ANSI escapes, carriage returns or trailing spaces.

    Raises ParseError when text is not a string or holds nothing but whitespace.
    """
    if not isinstance(text, str):
        raise ParseError(command, "expected text, got %s" % type(text).__name__)
    lines = [_ANSI_ESCAPE.sub("", line).rstrip() for line in text.replace("\r", "").split("\n")]
    if not any(lines):
        raise ParseError(command, "the output is empty")
    return lines


def describe_line(number, line):
    """'line 12 (MII Status: up)': how parsers name the line they refuse."""
    return "line %d (%s)" % (number, line.strip()[:100])


class FieldsOnce:
    """Stores each field of a block once.

    Outputs made of blocks (a CA and its ports, a bond's slaves) name a block once, then list its fields.
    When a block's header line is lost, the next block's fields would silently overwrite the previous
    block's: a field seen twice in one block is refused instead, naming the line and the lost header.
    """

    def __init__(self, command, missing_header):
        self.command = command
        self.missing_header = missing_header
        self._seen = set()

    def set(self, block, name, value, number, line):
        if (id(block), name) in self._seen:
            raise ParseError(self.command, "%s: a second %r in the same block; %s is missing before it"
                             % (describe_line(number, line), name, self.missing_header))
        self._seen.add((id(block), name))
        block[name] = value
