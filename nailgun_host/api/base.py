"""What every handler, core or extension, builds on: routes, request input, JSON output.

A handler method returns plain data (dict, list, str, None); the request processor
serializes it to JSON. Bytes are sent as they are (a body already serialized). Status
and headers are set with ``set_status``/``web.header``.
Methods a handler does not define answer 405 with a correct ``Allow`` header
(PATCH included, which web.py itself leaves out).

Input is read only through the helpers here: ``json_body`` for bodies (through a handler's
``body()``, which applies the schema it declares), ``query`` and
its typed readers for query strings, ``route`` for URL templates, so every route reads
ids, bodies and parameters the same way.
"""
import http
import re
import urllib.parse

import web

from nailgun_host import auth, errors, policy, validation
from nailgun_host.db import only_reads
from nailgun_host.objects import task as task_obj
from nailgun_host.settings import settings
from nailgun_platform import secrets as platform_secrets
from nailgun_platform.etags import none_match  # noqa: F401 (handlers answer If-None-Match with it)
from nailgun_platform.secrets import masking

HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")

_PLACEHOLDER = re.compile(r"<([a-z_]+)>")


def route(template, handler, fingerprint=None, shareable=False, **patterns):
    """A URL map entry ``{"uri": regex, "handler": class, "template": template, "patterns": patterns}``.

    ``template`` is the path as the docs' API tables show it, e.g. ``/clusters/<cluster_id>/model``.
    A placeholder named ``id`` or ``*_id`` is an id (``validation.ID_PATTERN``); any other
    needs its regex in ``patterns``. A trailing slash is always optional, as in Nailgun.

    ``fingerprint``: the GET answers of this route may be replayed from memory while it tells the same
    for their URL: an object with ``read(rows)``, the state read in one statement through a statement
    reader's ``rows``, and ``of(state, path)``, the part of it a URL's answers depend on
    (``nailgun_platform.read_cache`` says what it must cover); the entry then has it too.

    ``shareable``: a GET answer of this route depends on nothing but its path, its query, ``If-None-Match``, the
    database and whether the identity may read through the route's rule and sees secrets, so requests run
    together may share one run (``nailgun_platform.shared_runs``). A route with a fingerprint is.
    """
    def placeholder(match):
        name = match.group(1)
        if name in patterns:
            return "({0})".format(patterns[name])
        if name == "id" or name.endswith("_id"):
            return validation.ID_PATTERN
        raise ValueError("No pattern for <{0}> in {1}".format(name, template))

    regex = _PLACEHOLDER.sub(placeholder, re.escape(template).replace(r"\<", "<").replace(r"\>", ">"))
    entry = {"uri": regex.rstrip("/") + "/?", "handler": handler, "template": template, "patterns": patterns}
    if fingerprint is not None:
        entry["fingerprint"] = fingerprint
    if shareable or fingerprint is not None:
        entry["shareable"] = True
    return entry


def status_line(code):
    """``"404 Not Found"``: the status line of an HTTP status code."""
    return "{0} {1}".format(code, http.HTTPStatus(code).phrase)


def set_status(code):
    web.ctx.status = status_line(code)


# -- the request body ----------------------------------------------------------------------

def request_body():
    """The raw request body, read at most once and never beyond the size cap."""
    if "nailgun_body" not in web.ctx:
        limit = int(settings["MAX_REQUEST_BODY"])
        length = validation.content_length(web.ctx.env)
        if length is not None and length > limit:
            raise errors.RequestTooLarge(
                "Request body is larger than the limit of {0} bytes".format(limit))
        stream = web.ctx.env["wsgi.input"]
        if web.ctx.env.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked":
            data = stream.read(limit + 1)
        else:
            data = stream.read(length) if length else b""
        if len(data) > limit:
            raise errors.RequestTooLarge(
                "Request body is larger than the limit of {0} bytes".format(limit))
        web.ctx.nailgun_body = data
    return web.ctx.nailgun_body


def json_body(schema=None, media_types=None, object_only=False, wrapping=None):
    """The request body as JSON: decoded within the limits of ``validation``, then checked.

    ``media_types``: the Content-Types accepted (415 otherwise); by default any, since
    Nailgun's clients (and curl -d) send JSON under various types.
    ``object_only``: a body that is not a JSON object is 400 before the schema runs.
    ``wrapping``: the decoded body's levels around the values it carries, not counted in their depth
    (``validation.decode_json``).
    """
    if media_types is not None:
        content_type = web.ctx.env.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
        if content_type not in media_types:
            raise errors.UnsupportedMediaType("Content-Type '{0}' is not supported; send {1}".format(
                content_type, " or ".join(media_types)))
    data = validation.decode_json(request_body(), wrapping)
    if object_only and not isinstance(data, dict):
        raise errors.InvalidData("The body must be a JSON object")
    if schema is not None:
        validation.validate_schema(data, schema)
    return data


# -- the query string ----------------------------------------------------------------------

def query():
    """The query string as ``{name: last value}``; a bare ``?flag`` is ``""``.

    Never the body: web.input would parse a PUT body as a form.
    """
    return {name: values[-1] for name, values in
            urllib.parse.parse_qs(web.ctx.env.get("QUERY_STRING", ""), keep_blank_values=True).items()}


def id_param(name, required=False):
    """An id or version number in the query string (``?cluster_id=3``); 400 unless it follows the id rule."""
    value = query().get(name)
    if value is None:
        if required:
            raise errors.InvalidData("The query parameter {0} is required".format(name))
        return None
    parsed = validation.parse_id(value)
    if parsed is None:
        raise errors.InvalidData("The query parameter {0} must be a whole number from 1 to {1}".format(
            name, validation.MAX_ID))
    return parsed


def revision_param(name):
    """A revision in the query string: an id, or 0 (the revision of an environment nothing was written to)."""
    return 0 if query().get(name) == "0" else id_param(name)


#: how a flag may be written: present bare (``?effective``) or with a value
FLAG_VALUES = {"": True, "1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


def flag_param(name):
    """A yes/no query parameter: absent is False, bare ``?name`` is True, ``=1/true/yes`` or ``=0/false/no``."""
    value = query().get(name)
    if value is None:
        return False
    if value.lower() not in FLAG_VALUES:
        raise errors.InvalidData("The query parameter {0} must be one of 1, true, yes, 0, false, no (or bare)".format(
            name))
    return FLAG_VALUES[value.lower()]


def list_param(name):
    """``?name=a,b,c`` as its non-empty items, in the order given ([] when absent or empty)."""
    return [item for item in query().get(name, "").split(",") if item]


def id_list_param(name):
    """``?name=1,2,3`` as ids, in the order given ([] when absent or empty)."""
    ids = []
    for item in list_param(name):
        parsed = validation.parse_id(item)
        if parsed is None:
            raise errors.InvalidData("'{0}' must be a comma-separated list of ids".format(name))
        ids.append(parsed)
    return ids


# -- answers --------------------------------------------------------------------------------

def respond_with_task(task):
    """A task handed to the orchestrator: 202 while it works on it, 200 once it has finished."""
    set_status(200 if task.status in task_obj.FINISHED else 202)
    return task_obj.to_dict(task)


# -- who is asking ----------------------------------------------------------------------------

def identity():
    """The request's identity, established by ``nailgun_host.auth.middleware``.

    A request that reached a handler without one (an application served without the
    middleware) is refused unless authentication is off: the check fails closed.
    """
    found = web.ctx.env.get(auth.ENVIRON_KEY)
    if found is not None:
        return found
    if settings["AUTH"].get("method", "none") == "none":
        return auth.ANONYMOUS
    raise errors.Unauthorized("Authentication required",
                              headers={"WWW-Authenticate": 'Basic realm="{0}"'.format(settings["AUTH"]["realm"])})


#: where the read cache puts its answer to ``sees_secrets`` (the answer it keeps must be the one computed)
SEES_SECRETS_KEY = "nailgun.sees_secrets"


def sees_secrets():
    """Whether the request's identity may see secret values in clear (policy ``nailgun:read_secrets``),
    asked once per request: a policy file changed in between must not make one answer half of each."""
    decided = web.ctx.env.get(SEES_SECRETS_KEY)
    if decided is None:
        decided = web.ctx.env[SEES_SECRETS_KEY] = policy.allowed(policy.READ_SECRETS, identity())
    return decided


def read_access(environ, rule):
    """The read cache's question (``nailgun_platform.read_cache``): None when the request has no identity or
    ``rule`` refuses it, or when it sees secrets and the keys are not at hand (the key manager's, fetched no
    longer: the application answers, 503 while they cannot be fetched); else whether it sees secrets (kept in
    the environ, as ``sees_secrets`` would)."""
    identity = environ.get(auth.ENVIRON_KEY)
    if identity is None:
        return None
    shown = policy.read_access(rule, identity)
    if shown is not None:
        environ[SEES_SECRETS_KEY] = shown
    if shown and not platform_secrets.keys_at_hand():
        return None
    return shown


def allowed(rule):
    """Whether the request's identity may do what ``rule`` guards (an extension's own rules ask here)."""
    return policy.allowed(rule, identity())


def authorize(rule):
    """403 naming ``rule`` unless the request's identity may do what it guards."""
    policy.authorize(rule, identity())


def authorize_changing_secrets():
    """403 naming ``nailgun:change_secrets`` unless the request's identity may change what is secret
    (a write that would declassify stored secrets, or constrain them into an oracle)."""
    policy.authorize(policy.CHANGE_SECRETS, identity())


def authorize_declassified(found):
    """Refuse (403 naming ``nailgun:change_secrets``) a write that would leave the secret values at the
    pointers ``found`` stored and readable as plain ones, unless this identity may change what is secret.

    The one check of every such write: the objects find the pointers (``classify.declassified``)
    and call this, which their callers hand them, before they write anything.
    """
    asking = identity()
    if found and not policy.allowed(policy.CHANGE_SECRETS, asking):
        raise errors.NotAllowed(
            "This change would make secret values plain ones, readable by anyone (at {0}): policy does not "
            "allow {1} for user {2} (roles: {3})".format(", ".join(sorted(found)), policy.CHANGE_SECRETS,
                                                          asking.name, ", ".join(asking.roles) or "none"),
            [policy.CHANGE_SECRETS])


#: set (``true``) on an answer in which at least one secret reads as the mask: a client that needs
#: the values (the Hiera backends) fails clearly instead of handing the mask to Puppet
MASKED_HEADER = "X-Secrets-Masked"


def shown(document, secret):
    """``document`` as this request's identity may see it: clear, or with the ``secret`` pointers masked."""
    if not secret or sees_secrets():
        return document
    masked = masking.mask(document, secret)
    if masked is not document and masked != document:
        web.header(MASKED_HEADER, "true")
    return masked


#: the longest author name a client may give (the record adds " (via <identity>)" within 255)
MAX_AUTHOR = 128


def author():
    """Who a change is recorded as made by: the identity, or whom a service acts for.

    ``X-Config-Author`` names the author only without authentication, or from an identity
    the policy lets act for others (``nailgun:act_for_others``); then the record says both.
    From anyone else it is refused (403) rather than silently ignored.
    """
    asking = identity()
    try:  # WSGI hands headers over as latin-1; clients send UTF-8
        claimed = web.ctx.env.get("HTTP_X_CONFIG_AUTHOR", "").encode("latin-1").decode("utf-8").strip()
    except UnicodeError:
        raise errors.InvalidData("X-Config-Author must be UTF-8")
    if len(claimed) > MAX_AUTHOR or not claimed.isprintable():
        raise errors.InvalidData("X-Config-Author must be at most {0} printable characters".format(MAX_AUTHOR))
    if not asking.authenticated:
        return (claimed or asking.name)[:255]
    if claimed and claimed != asking.name:
        policy.authorize(policy.ACT_FOR_OTHERS, asking)
        return "{0} (via {1})".format(claimed, asking.name)[:255]
    return asking.name[:255]


# -- handlers --------------------------------------------------------------------------------

class BaseHandler:
    """Base of every handler: a JSON 405 for missing methods, OPTIONS from what is defined.

    ``request_schemas`` declares the JSON schema of each method's body (``{"PUT": schemas.X}``)
    and ``request_media_types`` the Content-Types a method restricts its body to. ``body()``
    reads a body by them, and ``nailgun_host.openapi`` describes the API from them: one place.
    """

    #: answers without an identity (``version``, ``health``): the middleware lets them through
    public = False
    #: its GET and HEAD write nothing: on PostgreSQL they run without a transaction, and a write is refused
    #: (``nailgun_host.db.only_reads``); a read that creates what it finds missing keeps the default
    reads_only = False
    #: the policy rule of a method, where it is not ``nailgun:read`` (GET, HEAD, OPTIONS) or
    #: ``nailgun:write`` (every other method), e.g. ``{"DELETE": policy.ADMIN}``
    policy_rules = {}
    #: the rules a method also asks inside, besides its own (a secret shown or masked, a declassifying write):
    #: ``{"PUT": (policy.CHANGE_SECRETS,)}``; the documented policy lists the route under them too
    policy_checks = {}
    request_schemas = {}
    request_media_types = {}

    def __init__(self):
        if self.reads_only:
            only_reads()
        if not self.public:
            policy.authorize(self.policy_rule(web.ctx.method), identity())

    @classmethod
    def policy_rule(cls, method):
        default = policy.READ if method in ("GET", "HEAD", "OPTIONS") else policy.WRITE
        return cls.policy_rules.get(method, default)
    #: the JSON schema of each method's 2xx answer, for the description (default: an object or a list)
    response_schemas = {}
    #: answers besides 2xx and errors, ``{"GET": {"304": "why"}}``, for the description
    other_responses = {}

    def _method_not_allowed(self, *args, **kwargs):
        raise errors.MethodNotAllowed(
            "Method {0} is not allowed on this resource".format(web.ctx.method),
            self.allowed_methods())

    GET = POST = PUT = PATCH = DELETE = _method_not_allowed

    def OPTIONS(self, *args):
        web.header("Allow", ", ".join(self.allowed_methods() + ["OPTIONS"]))
        set_status(204)

    @classmethod
    def request_schema(cls, method):
        """The JSON schema of ``method``'s body, or None when it takes none (or any JSON)."""
        return cls.request_schemas.get(method)

    @classmethod
    def takes_body(cls, method):
        """Whether ``method`` reads a JSON body (declared in ``request_schemas``)."""
        return method in cls.request_schemas or method in cls.request_media_types

    def body(self, **kwargs):
        """The request's JSON body, checked against what this handler declares for its method."""
        method = web.ctx.method
        return json_body(self.request_schema(method), media_types=self.request_media_types.get(method), **kwargs)

    @classmethod
    def allowed_methods(cls):
        allowed = [m for m in HTTP_METHODS
                   if getattr(cls, m) is not BaseHandler._method_not_allowed]
        if "GET" in allowed:
            allowed.insert(allowed.index("GET") + 1, "HEAD")
        return allowed


class CollectionHandler(BaseHandler):
    """A collection URL: GET lists ``objects.list_all(**filters())``, POST creates one (201).

    ``objects`` is the domain module (``to_dict``, ``list_all``, ``create``); a body is
    valid for ``create_schema``.
    """

    objects = None
    create_schema = None
    response_schemas = {"GET": {"type": "array", "items": {"type": "object"}}, "POST": {"type": "object"}}

    @classmethod
    def request_schema(cls, method):
        return cls.create_schema if method == "POST" else super().request_schema(method)

    @classmethod
    def takes_body(cls, method):
        return method == "POST" or super().takes_body(method)

    def filters(self):
        """Keyword arguments for ``objects.list_all`` read from the query string."""
        return {}

    def respond(self, data):
        return data

    def GET(self):
        return self.respond([self.objects.to_dict(o) for o in self.objects.list_all(**self.filters())])

    def POST(self):
        created = self.objects.create(self.body())
        set_status(201)
        return self.objects.to_dict(created)


class ItemHandler(BaseHandler):
    """An object's URL: GET shows it, PUT changes it and DELETE removes it (204), both under its row lock.

    ``objects`` is the domain module (``to_dict``, ``get``, ``update``, ``delete``); a PUT
    body is valid for ``update_schema``.
    """

    objects = None
    update_schema = None
    response_schemas = {"GET": {"type": "object"}, "PUT": {"type": "object"}, "PATCH": {"type": "object"}}

    @classmethod
    def request_schema(cls, method):
        return cls.update_schema if method in ("PUT", "PATCH") else super().request_schema(method)

    @classmethod
    def takes_body(cls, method):
        return method in ("PUT", "PATCH") or super().takes_body(method)

    def respond(self, data):
        return data

    def GET(self, object_id):
        return self.respond(self.objects.to_dict(self.objects.get(object_id)))

    def PUT(self, object_id):
        found = self.objects.get(object_id, lock=True)
        return self.objects.to_dict(self.objects.update(found, self.body()))

    def DELETE(self, object_id):
        self.objects.delete(self.objects.get(object_id, lock=True))
        set_status(204)
