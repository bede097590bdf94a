"""Sphinx extension for the docs site of scripts/docs.py: references to the Ansible documentation, without the network.

antsibull-docs writes references to pages of docs.ansible.com (common return values, the configuration settings,
plugins of other collections such as ansible.posix.sysctl). With intersphinx, Sphinx resolves them by downloading the
inventories of docs.ansible.com at every build; without a network each one is a warning. This extension links them to
docs.ansible.com by rule instead: the labels of collection plugins (`ansible_collections.NS.NAME.PLUGIN_TYPE`), and a
short table of the docsite's own labels. A label that fits neither, and any label of gpufabric.core itself, is left
unresolved, so Sphinx still warns about it.
"""

import re

from docutils import nodes

ANSIBLE_DOCS = "https://docs.ansible.com/projects/ansible/latest/"
# Labels of docs.ansible.com pages that antsibull-docs refers to, and where they are.
DOCSITE_LABELS = {
    "common_return_values": "reference_appendices/common_return_values.html",
    "ansible_configuration_settings": "reference_appendices/config.html",
    "callback_plugins": "plugins/callback.html",
    "action_plugins": "plugins/action.html",
}
_PLUGIN_LABEL = re.compile(r"ansible_collections\.(?P<ns>\w+)\.(?P<name>\w+)\.(?P<plugin>\w+)_(?P<type>[a-z]+)\Z")
OWN_COLLECTION = ("gpufabric", "core")


def external_url(label):
    """The docs.ansible.com address of a label, or None for a label this extension does not know."""
    if label in DOCSITE_LABELS:
        return ANSIBLE_DOCS + DOCSITE_LABELS[label]
    match = _PLUGIN_LABEL.match(label)
    if not match or (match["ns"], match["name"]) == OWN_COLLECTION:
        return None
    return "%scollections/%s/%s/%s_%s.html" % (ANSIBLE_DOCS, match["ns"], match["name"], match["plugin"], match["type"])


def resolve(app, env, node, contnode):
    if node.get("refdomain") != "std" or node.get("reftype") != "ref":
        return None
    url = external_url(node.get("reftarget", ""))
    if url is None:
        return None
    reference = nodes.reference("", "", internal=False, refuri=url)
    reference.append(contnode)
    return reference


def setup(app):
    app.connect("missing-reference", resolve)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
