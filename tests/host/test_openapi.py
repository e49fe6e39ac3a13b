"""GET /api/v1/openapi.json: valid OpenAPI 3.1 that describes every route and method of the URL maps, and no other."""
import inspect

from openapi_spec_validator import validate

from nailgun_host import openapi
from nailgun_host.api.base import BaseHandler
from nailgun_host.extensions import get_all_extensions
from nailgun_host.urls import URLS


def _routes():
    routes = list(URLS)
    for extension in get_all_extensions():
        routes.extend(extension.urls)
    return routes


def test_served_description_is_valid_openapi_3_1(app):
    answer = app.get("/api/v1/openapi.json")
    assert answer.content_type == "application/json"
    description = answer.json
    assert description["openapi"].startswith("3.1")
    validate(description)
    assert app.get("/api/openapi.json/").json == description


def test_every_route_and_method_is_described_and_nothing_else(app):
    described = {(path, method.upper()) for path, item in app.get("/api/v1/openapi.json").json["paths"].items()
                 for method in item}
    expected = {(openapi.path_of(entry["template"]), method) for entry in _routes()
                for method in entry["handler"].allowed_methods() if method in openapi.METHODS}
    assert described == expected


def test_request_bodies_are_the_schemas_the_handlers_validate_with(app):
    paths = app.get("/api/v1/openapi.json").json["paths"]
    for entry in _routes():
        handler = entry["handler"]
        for method in handler.allowed_methods():
            if method not in openapi.METHODS:
                continue
            operation = paths[openapi.path_of(entry["template"])][method.lower()]
            if not handler.takes_body(method):
                assert "requestBody" not in operation, (handler, method)
                continue
            schema = handler.request_schema(method)
            for content in operation["requestBody"]["content"].values():
                assert content["schema"] == ({} if schema is None else openapi._schema(schema)), (handler, method)


def test_every_method_that_reads_a_body_declares_it():
    """A handler reads its body with ``self.body()``, which the description knows of, never json_body directly."""
    for entry in _routes():
        handler = entry["handler"]
        for method in handler.allowed_methods():
            function = getattr(handler, method, None)
            if method not in openapi.METHODS or function is getattr(BaseHandler, method):
                continue
            source = inspect.getsource(function)
            assert "json_body(" not in source, (handler, method)
            if "self.body(" in source:
                assert handler.takes_body(method), (handler, method)
