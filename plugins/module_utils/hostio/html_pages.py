# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Jinja2 for the collection's HTML pages: the fabric map and the bandwidth verification report.

The page modules (fabric_map_html, verify_report) keep their templates as Jinja2 source beside their code and
render them here, with autoescaping on. The templates are Python strings rather than .j2 files because the
verify_report module runs the renderer inside Ansible's module payload, which carries module_utils' Python
files and nothing else.

Every value a template prints is escaped with html.escape (quote=True), the escaping these pages always had, so
that the same facts give the same bytes; values that already are markup (Markup) pass unchanged, and None prints
as nothing.
"""

from __future__ import annotations

from html import escape

try:
    from jinja2 import DictLoader, Environment, StrictUndefined
    from markupsafe import Markup

    HAS_JINJA2 = True
    JINJA2_IMPORT_ERROR = None
except ImportError as exc:  # modules report it with missing_required_lib; controllers always have Jinja2
    HAS_JINJA2 = False
    JINJA2_IMPORT_ERROR = exc


class HtmlPageError(RuntimeError):
    """A page cannot be rendered here (no Jinja2)."""


def _escape(value):
    if HAS_JINJA2 and isinstance(value, Markup):
        return value
    return Markup(escape("" if value is None else str(value), quote=True))


def environment(templates, filters=None):
    """A Jinja2 environment over {name: template source}: autoescape, html.escape for every value, strict names.

    trim_blocks and lstrip_blocks let a template put its block tags on lines of their own without printing them.
    """
    if not HAS_JINJA2:
        raise HtmlPageError("rendering an HTML page needs the Python library Jinja2 (%s)" % JINJA2_IMPORT_ERROR)
    env = Environment(loader=DictLoader(templates), autoescape=True, finalize=_escape, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(filters or {})
    return env


def markup(text):
    """Trusted markup (what another template rendered) that a template prints as it is."""
    return Markup(text)
