"""``GET /stats``: seed 001's General Request Statistics, one entry per host serving the API."""
from nailgun_host import policy, stats
from nailgun_host.api.base import BaseHandler
from nailgun_host.db import db

_HOST_ENTRY = {
    "type": "object",
    "required": ["id", "host", "created", "updated", "request_count", "error_count", "requests_per_second",
                 "errors_per_second", "average_response_time", "requests_per_tenant", "requests_per_user",
                 "cpu_percent", "cpu_count"],
    "properties": {
        "id": {"type": "integer"}, "host": {"type": "string"},
        "created": {"type": "string"}, "updated": {"type": "string"},
        "request_count": {"type": "integer"}, "error_count": {"type": "integer"},
        "requests_per_second": {"type": "number"}, "errors_per_second": {"type": "number"},
        "average_response_time": {"type": "number"},
        "requests_per_tenant": {"type": "string", "description": "a JSON object in a string, as in seed 001"},
        "requests_per_user": {"type": "string", "description": "a JSON object in a string, like requests_per_tenant"},
        "cpu_percent": {"type": "number"}, "cpu_count": {"type": "integer"},
    },
}


class StatsHandler(BaseHandler):
    """The counts every process of every host added to the database (at most ``STATS.flush_seconds`` old)."""

    policy_rules = {"GET": policy.READ_STATS, "HEAD": policy.READ_STATS}
    response_schemas = {"GET": {"type": "array", "items": _HOST_ENTRY}}

    def GET(self):
        return stats.read(db)
