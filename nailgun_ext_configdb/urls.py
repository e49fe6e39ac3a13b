"""The extension's URL map, relative to /api/v1 and /api (so the API lives at /api/v1/config)."""
from nailgun_ext_configdb.api import catalog, documents, environments

#: ids fit a 32-bit integer column; longer digit strings match no route (404)
ID = r"(\d{1,9})"
#: environment id, level pairs ("nodes/1/" or ""), resource id or name (may hold "/"), values|overrides
DOCUMENT = r"/config/environments/(\d{1,9})/((?:[^/]+/[^/]+/)*?)resources/(.+?)/(values|overrides|override)"

URLS = [
    {"uri": r"/config/components/?", "handler": catalog.ConfigComponentCollectionHandler},
    {"uri": rf"/config/components/{ID}/?", "handler": catalog.ConfigComponentHandler},
    {"uri": r"/config/resource_definitions/?", "handler": catalog.ConfigResourceDefinitionCollectionHandler},
    {"uri": rf"/config/resource_definitions/{ID}/?", "handler": catalog.ConfigResourceDefinitionHandler},
    {"uri": r"/config/environments/?", "handler": environments.ConfigEnvironmentCollectionHandler},
    {"uri": rf"/config/environments/{ID}/?", "handler": environments.ConfigEnvironmentHandler},
    {"uri": DOCUMENT + r"/keys/(set|delete)/?", "handler": documents.ConfigDocumentKeysHandler},
    {"uri": DOCUMENT + r"/history/?", "handler": documents.ConfigDocumentHistoryHandler},
    {"uri": DOCUMENT + r"/diff/?", "handler": documents.ConfigDocumentDiffHandler},
    {"uri": DOCUMENT + r"/revert/?", "handler": documents.ConfigDocumentRevertHandler},
    {"uri": DOCUMENT + r"/?", "handler": documents.ConfigDocumentHandler},
]
