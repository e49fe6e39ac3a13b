"""YAML of settings files, read strictly: a key given twice in one mapping is an error.

PyYAML keeps the last of two equal keys without a word, so a section appended below another
of the same name (``AUTH: {policy_file: ...}`` under ``AUTH: {method: local, ...}``) would
silently replace it, and switch authentication off. ``DuplicateKey`` names the key by its
dotted path and both lines. Keys a YAML merge (``<<``) brings in may still be overridden: that
is what a merge is for.
"""
import yaml


class DuplicateKey(ValueError):
    """A key given twice in one mapping of a YAML document."""


class StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing repeated keys (see the module docstring)."""

    def construct_document(self, node):
        self._paths = {}
        self._name_mappings(node, (), set())
        return super().construct_document(node)

    def _name_mappings(self, node, path, seen):
        """Note the dotted path of every mapping below ``node`` (an alias is walked once)."""
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            self._paths[id(node)] = path
            for key_node, value_node in node.value:
                self._name_mappings(value_node, path + (_key_name(key_node),), seen)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self._name_mappings(item, path + (str(index),), seen)

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first = {}
            for key_node, _value in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    if key in first:
                        path = self._paths.get(id(node), ()) + (_key_name(key_node),)
                        raise DuplicateKey("{0} is given twice (lines {1} and {2}): give each setting once; the "
                                           "second would silently replace the first".format(
                                               ".".join(path), first[key], line))
                    first[key] = line
                except TypeError:  # an unhashable key: the base class says so
                    continue
        return super().construct_mapping(node, deep)


def _key_name(key_node):
    return key_node.value if isinstance(key_node, yaml.ScalarNode) else "<{0}>".format(key_node.id)


def load(stream):
    """The one document of ``stream``, as ``yaml.safe_load`` reads it; DuplicateKey for a repeated key."""
    return yaml.load(stream, Loader=StrictLoader)
