"""The environment model: an environment as one JSON document, read whole or by RFC 6901
path and changed by RFC 6902 patches under a per-path policy (spec 000, for Fuel).

An operator reviews the Upgrade Seed this way and adjusts it before nodes move. The
policy says which operations each path takes: the name and editable attribute values
always, networking parameters and network addresses only before the environment is
deployed (left ``new``, or holds a node past discovery), ids, the release, node data and
generated secrets never. A patch is checked
whole (policy, then the resulting document against the model's schema, then the
network rules of the host) before anything is written.

Secrets: generated attributes always read as ``masking.MASK`` here (``/clusters/<id>/generated``
serves them to whom may see them); the values of password (and secret-named) editable fields
are ``editable_secrets``, which the handler masks for whoever may not see secrets. A patch
applies to the model as its client sees it, and the mask it leaves at a secret keeps the
stored value.

The patch itself (pointers, operations, the policy's patterns, the errors) is ``nailgun_platform.patching``'s,
shared with ConfigDB; staging a patch in a configuration session is ``model_session``'s.
"""
import copy
import json

import jsonpointer

from nailgun_host.public import attribute_values, cluster_obj, errors, network_obj as network, value_secrets
from nailgun_platform.public import classify, masking, patching, pointers, validate_schema
from nailgun_ext_upgrade import schemas

MASK = masking.MASK
EDIT = ("add", "replace", "remove")
NETWORK_FIELDS = ("cidr", "gateway", "vlan_start", "ip_ranges")

#: (path pattern, allowed operations, only before deployment); patterns as ``nailgun_platform.patching`` reads them
POLICY = (
    ("/name", ("replace",), False),
    ("/attributes/editable/*/*", ("replace",), False),
    ("/attributes/editable/*/*/**", EDIT, False),
    ("/networking_parameters/*", ("replace",), True),
    ("/networking_parameters/*/**", EDIT, True),
    ("/node_groups/*/networks/*/cidr", ("replace",), True),
    ("/node_groups/*/networks/*/gateway", ("replace",), True),
    ("/node_groups/*/networks/*/vlan_start", ("replace",), True),
    ("/node_groups/*/networks/*/ip_ranges", ("replace",), True),
    ("/node_groups/*/networks/*/ip_ranges/**", EDIT, True),
)

ATTRIBUTE_TYPES = {
    "checkbox": {"type": "boolean"},
    "text": {"type": "string"}, "password": {"type": "string"}, "textarea": {"type": "string"},
    "hidden": {"type": "string"}, "select": {"type": "string"}, "radio": {"type": "string"},
    "text_list": {"type": "array", "items": {"type": "string"}},
    "textarea_list": {"type": "array", "items": {"type": "string"}},
    "number": {"type": "number"},
}


# -- reading ---------------------------------------------------------------------------------

def mask(tree):
    """Generated attributes with every value hidden: the keys show what exists, never a secret."""
    return masking.mask(tree, classify.every_leaf(tree)) if tree else tree


def editable_secrets(cluster):
    """The pointers of the model's secret editable values (password and secret-named fields)."""
    return {"/attributes/editable" + pointer for pointer in value_secrets(cluster.editable_attributes)}


def generated_pointers(model):
    """The pointers of the model's (masked) generated values."""
    generated = model["attributes"]["generated"]
    return {"/attributes/generated" + pointer for pointer in pointers.leaves(generated)} if generated else set()


def _network(net):
    return {"id": net.id, "cidr": net.cidr, "gateway": net.gateway, "vlan_start": net.vlan_start,
            "ip_ranges": [[r.first, r.last] for r in net.ip_ranges]}


def build(cluster):
    """The model of an environment."""
    groups = {g.id: g.name for g in cluster.node_groups}
    networks = {}
    for net in network.cluster_networks(cluster):
        networks.setdefault(net.group_id, {})[net.name] = _network(net)
    release = cluster.release
    return {
        "id": cluster.id, "name": cluster.name, "status": cluster.status, "mode": cluster.mode,
        "net_provider": cluster.net_provider,
        "release": {"id": release.id, "name": release.name, "version": release.version,
                    "operating_system": release.operating_system},
        "attributes": {"editable": attribute_values(cluster.editable_attributes),
                       "generated": mask(cluster.generated_attributes)},
        "networking_parameters": copy.deepcopy(cluster.networking_parameters),
        "node_groups": {g.name: {"id": g.id, "is_default": g.is_default, "networks": networks.get(g.id, {})}
                        for g in cluster.node_groups},
        "nodes": [{"id": n.id, "hostname": n.hostname, "status": n.status, "roles": n.roles,
                   "pending_roles": n.pending_roles, "node_group": groups.get(n.group_id)}
                  for n in cluster_obj.nodes_query(cluster.id)],
    }


def section_pointer(path):
    """The RFC 6901 pointer of a model path from a URL (None, "" and "/" are the whole model)."""
    return "/" + path.strip("/") if path and path.strip("/") else ""


def within(secret, pointer):
    """The pointers of ``secret`` inside the section at ``pointer``, relative to it."""
    return {item[len(pointer):] for item in secret if item == pointer or item.startswith(pointer + "/")}


def section(model, path):
    """The part of the model at an RFC 6901 path ("" or "/" is all of it); 404 if absent."""
    pointer = section_pointer(path)
    try:
        return jsonpointer.resolve_pointer(model, pointer)
    except jsonpointer.JsonPointerException:
        raise errors.ObjectNotFound("The model of environment {0} has no section '{1}'".format(
            model["id"], pointer))


# -- the policy ------------------------------------------------------------------------------

def policy(deployed):
    """``patching``'s policy for an environment: the network parts allow nothing once it is deployed."""
    return {pattern: () if before_deployment and deployed else operations
            for pattern, operations, before_deployment in POLICY}


def is_deployed(cluster):
    """Deployed once it left ``new`` or holds a node past discovery (a node moved in keeps its OS)."""
    return cluster.status != "new" or any(node.status != "discover" for node in cluster_obj.nodes_query(cluster.id))


def check_policy(cluster, operations):
    """403 for what the policy forbids, saying so when only the deployment forbids it; ``test`` only
    reads and is always allowed."""
    deployed = is_deployed(cluster)
    try:
        patching.check_policy(operations, policy(deployed), default=())
    except errors.NotAllowed as exc:
        first = exc.errors[0]
        if deployed and first["op"] in patching.allowed(policy(False), first["path"], default=()):
            raise errors.NotAllowed("{0} (environment {1} is deployed)".format(exc.message, cluster.id), exc.errors)
        raise


# -- the patched document ----------------------------------------------------------------------

def _value_schema(field):
    """The schema of one editable value: its type's, or one of the choices of a radio or select."""
    choices = [choice.get("data") for choice in field.get("values") or [] if isinstance(choice, dict)]
    if field.get("type") in ("radio", "select") and choices:
        return {"enum": choices}
    return ATTRIBUTE_TYPES.get(field.get("type")) or _json_type(field.get("value"))


def _json_type(value):
    """A value of a type the model does not know keeps the JSON type it has (a list stays a list)."""
    for json_type, python_type in (("boolean", bool), ("array", list), ("object", dict), ("string", str)):
        if isinstance(value, python_type):
            return {"type": json_type}
    return {"type": "number"} if isinstance(value, (int, float)) else {}


def schema_for(cluster):
    """What a patched model must look like: attribute types from the cluster's own metadata."""
    editable = {}
    for name, fields in cluster.editable_attributes.items():
        if not isinstance(fields, dict):
            continue
        properties = {key: _value_schema(field)
                      for key, field in fields.items() if key != "metadata" and isinstance(field, dict)}
        editable[name] = {"type": "object", "properties": properties, "required": sorted(properties),
                          "additionalProperties": False}
    return {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 50},
            "attributes": {"type": "object", "properties": {"editable": {
                "type": "object", "properties": editable, "required": sorted(editable),
                "additionalProperties": False}}},
            "networking_parameters": schemas.NETWORKING_PARAMETERS,
            "node_groups": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                "networks": {"type": "object", "additionalProperties": schemas.MODEL_NETWORK}}}},
        },
    }


def _changed_networks(before, after):
    result = []
    for group, data in after["node_groups"].items():
        for name, net in data["networks"].items():
            if net != before["node_groups"][group]["networks"][name]:
                result.append({key: net[key] for key in ("id",) + NETWORK_FIELDS})
    return result


def _editable_with(cluster, values):
    editable = copy.deepcopy(cluster.editable_attributes)
    for name, fields in values.items():
        for key, value in fields.items():
            editable[name][key]["value"] = value
    return editable


def _validated(document, schema, secret):
    """``validate_schema``, its message withheld when it would quote a secret value of ``document``."""
    try:
        validate_schema(document, schema)
    except errors.InvalidData as exc:
        quoted = [pointers.get(document, pointer) for pointer in secret if pointers.get(document, pointer, None)]
        if any(repr(value) in exc.message or json.dumps(value) in exc.message for value in quoted):
            raise errors.InvalidData("The patched model is not valid where a secret is stored (the reason "
                                     "would quote it, so it is not shown)")
        raise


def _without_generated(model):
    return dict(model, attributes=dict(model["attributes"], generated={}))


def patched(cluster, operations, view=lambda model, secret: model, base=None):
    """``(before, after)``: the current model and what the patch makes of ``base`` (the current model,
    or the one a session stages), checked against the policy and the model's schema; nothing written.

    ``view(model, secret)`` is the model as the client sees it (masked for a reader): the
    patch, ``test`` operations included, applies to that, and the mask left at a secret keeps
    the value ``base`` has there.
    """
    patching.check_operations(operations)
    check_policy(cluster, operations)
    before = build(cluster)
    base = before if base is None else base
    secret = editable_secrets(cluster)
    # generated values read as the mask here and no patch may touch them (check_policy): they are
    # left out of the unmasking, which refuses a mask where no secret is stored
    after = masking.unmask(_without_generated(patching.apply(view(base, secret), operations)),
                           _without_generated(base), secret)
    after["attributes"]["generated"] = before["attributes"]["generated"]
    _validated(after, schema_for(cluster), secret)
    return before, after


def write(cluster, before, after, *, authorize_declassified):
    """Write what ``after`` changes of the model ``before`` (the network rules are checked on the way).

    ``authorize_declassified``: see ``cluster_obj.update_editable``.
    """
    networks = _changed_networks(before, after)
    if after["name"] != before["name"]:
        cluster_obj.check_name_free(after["name"], cluster.id)
    if networks or after["networking_parameters"] != before["networking_parameters"]:
        network.update_configuration(cluster, {"networks": networks,
                                               "networking_parameters": after["networking_parameters"]})
    if after["attributes"]["editable"] != before["attributes"]["editable"]:
        cluster_obj.update_editable(cluster, _editable_with(cluster, after["attributes"]["editable"]),
                                    replace=True, authorize_declassified=authorize_declassified)
    cluster_obj.update(cluster, {"name": after["name"]})


def apply_patch(cluster, operations, view=lambda model, secret: model, *, authorize_declassified):
    """Check the whole patch, then write what it changed; returns the new model (see ``patched``)."""
    before, after = patched(cluster, operations, view)
    write(cluster, before, after, authorize_declassified=authorize_declassified)
    return build(cluster)
