"""The extension's URL map, relative to /api/v1 and /api (so the API lives at /api/v1/config).

A document's URL names its environment, its level pairs (``nodes/1/``, or none for the
environment level), its resource (an id, or a name that may hold ``/``) and its kind. The session
routes (``api.sessions``) and a batch of documents (``api.document_batches``) follow the environment's URL.
A document's GET answers are replayed from memory (``nailgun_platform.read_cache``) while the state they are
computed from is unchanged (``objects.fingerprint``).
"""
from nailgun_host.public import route
from nailgun_ext_configdb.api import changes, components, document_batches, documents, environments, pins
from nailgun_ext_configdb.api import resource_definitions, sessions
from nailgun_ext_configdb.objects import fingerprint

DOCUMENT = "/config/environments/<environment_id>/<levels>resources/<resource>/<kind>"
DOCUMENT_PATTERNS = {"levels": "(?:[^/]+/[^/]+/)*?", "resource": ".+?", "kind": "values|overrides|override"}

URLS = [
    route("/config/components", components.ConfigComponentCollectionHandler),
    route("/config/components/<component_id>", components.ConfigComponentHandler),
    route("/config/resource_definitions", resource_definitions.ConfigResourceDefinitionCollectionHandler),
    route("/config/resource_definitions/<resource_definition_id>",
          resource_definitions.ConfigResourceDefinitionHandler),
    route("/config/environments", environments.ConfigEnvironmentCollectionHandler),
    route("/config/environments/<environment_id>", environments.ConfigEnvironmentHandler),
    route("/config/environments/<environment_id>/changes", changes.ConfigChangesHandler, shareable=True),
    route("/config/environments/<environment_id>/documents", document_batches.ConfigDocumentBatchHandler),
    route("/config/environments/<environment_id>/pins", pins.ConfigPinsHandler),
    route("/config/environments/<environment_id>/pins/<resource>", pins.ConfigPinHandler, resource=".+"),
    route(DOCUMENT + "/keys/<operation>", documents.ConfigDocumentKeysHandler, operation="set|delete",
          **DOCUMENT_PATTERNS),
    route(DOCUMENT + "/history", documents.ConfigDocumentHistoryHandler, **DOCUMENT_PATTERNS),
    route(DOCUMENT + "/diff", documents.ConfigDocumentDiffHandler, **DOCUMENT_PATTERNS),
    route(DOCUMENT + "/revert", documents.ConfigDocumentRevertHandler, **DOCUMENT_PATTERNS),
    route(DOCUMENT, documents.ConfigDocumentHandler, fingerprint=fingerprint.DOCUMENTS, **DOCUMENT_PATTERNS),
] + list(sessions.ROUTES)
