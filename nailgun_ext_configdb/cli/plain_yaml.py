"""Plain YAML documents built straight from the parser's events: most of an upload's time was spent reading.

PyYAML's loaders, libyaml's included, compose a node for every value, then construct the Python objects from
the nodes in Python: two thirds of the time an astute.yaml takes to read. Hiera files are plain: mappings,
sequences and scalars, without tags, anchors, aliases or merge keys. ``load`` builds those objects from the
parser's events in one pass, and resolves each distinct plain scalar once, with the loader's own resolver and
constructors: the same objects, types included. Anything else in a document (a tag, an anchor, an alias, a merge
key, a mapping or sequence as a key, a second document) raises ``Unusual`` before a value is returned, and the
caller reads the file with the loader itself.
"""
from yaml import events
from yaml.nodes import ScalarNode

STR = "tag:yaml.org,2002:str"
#: what a plain scalar may resolve to here; anything else (a merge key ``<<``, ``=``) is Unusual
PLAIN_TAGS = frozenset(("tag:yaml.org,2002:null", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int",
                        "tag:yaml.org,2002:float", STR))
#: the key a mapping waits for
NO_KEY = object()


class Unusual(Exception):
    """The document holds more than plain mappings, sequences and scalars: read it with the loader."""


def load(stream, loader_class):
    """The document of ``stream`` as ``yaml.load(stream, Loader=loader_class)`` reads it, or ``Unusual``.

    Syntax errors are the parser's, as the loader raises them."""
    loader = loader_class(stream)
    try:
        return _document(loader)
    finally:
        loader.dispose()


def _document(loader):
    get = loader.get_event
    get()  # the stream's start
    if type(get()) is events.StreamEndEvent:
        return None
    plain = _plain_scalars(loader)
    root = None
    stack = []  # [container, the key its next value goes under (NO_KEY: the next scalar is a key)]
    while True:
        event = get()
        kind = type(event)
        if kind is events.ScalarEvent:
            if event.anchor is not None or event.tag is not None:
                raise Unusual
            value = plain(event.value) if event.implicit[0] else event.value
        elif kind is events.MappingStartEvent or kind is events.SequenceStartEvent:
            if event.anchor is not None or event.tag is not None or (stack and stack[-1][1] is NO_KEY):
                raise Unusual
            value = {} if kind is events.MappingStartEvent else []
        elif kind is events.MappingEndEvent or kind is events.SequenceEndEvent:
            stack.pop()
            if stack:
                continue
            break
        else:  # an alias
            raise Unusual
        if not stack:
            root = value
        else:
            top = stack[-1]
            container, key = top
            if key is NO_KEY:
                top[1] = value
            elif type(container) is list:
                container.append(value)
            else:
                container[key] = value
                top[1] = NO_KEY
        if kind is events.MappingStartEvent:
            stack.append([value, NO_KEY])
        elif kind is events.SequenceStartEvent:
            stack.append([value, None])
        elif not stack:
            break
    get()  # the document's end
    if type(get()) is not events.StreamEndEvent:
        raise Unusual  # a second document: the loader says what is wrong
    return root


def _plain_scalars(loader):
    """A function of a plain scalar's text: its value, as the loader resolves and constructs it (once per text).

    A text whose first character starts no implicit type (most: names, paths, addresses) is a string without
    asking the resolver, which would try no pattern either."""
    values = {}
    resolve = loader.resolve
    resolvers = loader.yaml_implicit_resolvers
    constructors = loader.yaml_constructors
    wildcard = None in resolvers  # a resolver for any first character: ask for every text

    def plain(text):
        try:
            return values[text]
        except KeyError:
            pass
        if text and not wildcard and text[0] not in resolvers:
            values[text] = text
            return text
        tag = resolve(ScalarNode, text, (True, False))
        if tag == STR:
            value = text
        elif tag in PLAIN_TAGS:
            value = constructors[tag](loader, ScalarNode(tag, text))
        else:
            raise Unusual
        values[text] = value
        return value

    return plain
