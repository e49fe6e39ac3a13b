"""Release metadata (issue 9, item 1): what POST and PUT /releases accept can always be used.

A release is the template of every cluster made from it, so malformed metadata used to
surface later as 500s in cluster creation, assignment, deployment defaults or
clone_release, and ``from_settings`` handed any server setting (DATABASE_URL) to
whoever read the deployment defaults.
"""
import copy
import ipaddress
import itertools

import pytest
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from nailgun_host.db.models import Release
from nailgun_host.objects import attributes
from nailgun_host.objects import release as release_obj

RELEASES = "/api/v1/releases/"
CLONE_RELEASE = "/api/v1/clusters/{0}/upgrade/clone_release/{1}/"
DEFAULTS = "/api/v1/clusters/{0}/orchestrator/deployment/defaults/"
_numbers = itertools.count(1)
PROPERTY_RUNS = hypothesis_settings(
    max_examples=25, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                           HealthCheck.data_too_large])


def _release(**metadata):
    data = {"name": "R{0}".format(next(_numbers)), "version": "mitaka-9.0", "operating_system": "Ubuntu"}
    data.update(metadata)
    return data


def _defaults(field):
    return release_obj.release_defaults()[field]


def _with(field, change):
    """The default ``field`` metadata after ``change`` (a function editing it in place)."""
    value = _defaults(field)
    change(value)
    return {field: value}


def _generated(**entries):
    metadata = _defaults("attributes_metadata")
    metadata["generated"].update(entries)
    return {"attributes_metadata": metadata}


def _network(**fields):
    def change(metadata):
        metadata["neutron"]["networks"][1].update(fields)
        for key in [k for k, v in fields.items() if v is _DROP]:
            del metadata["neutron"]["networks"][1][key]
    return _with("networks_metadata", change)


_DROP = object()

#: the issue's examples and their kin: each was stored with 201 and broke something later
INVALID_METADATA = {
    "from_settings DATABASE_URL": _generated(deployment_id={"generator": "from_settings",
                                                            "generator_arg": "DATABASE_URL"}),
    "from_settings SQLITE_PATH": _generated(path={"generator": "from_settings", "generator_arg": "SQLITE_PATH"}),
    "from_settings without generator_arg": _generated(dns={"generator": "from_settings"}),
    "length abc": _generated(secret={"generator": "password", "length": "abc"}),
    "length 30 million": _generated(secret={"generator": "password", "length": 30_000_000}),
    "length 0": _generated(secret={"generator": "hexstring", "length": 0}),
    "length 1.5": _generated(secret={"generator": "password", "length": 1.5}),
    "length true": _generated(secret={"generator": "password", "length": True}),
    "too much generated in all": _generated(**{"s{0}".format(i): {"generator": "password", "length": 4096}
                                               for i in range(17)}),
    "unknown generator": _generated(secret={"generator": "ip"}),
    "generator that is not a string": _generated(secret={"generator": ["password"]}),
    "generated itself a generator": {"attributes_metadata": {"generated": {"generator": "uuid4"}}},
    "generated a list": {"attributes_metadata": {"generated": []}},
    "editable field a string": _with("attributes_metadata",
                                     lambda m: m["editable"]["common"].update(debug="yes")),
    "editable section a list": _with("attributes_metadata", lambda m: m["editable"].update(common=[])),
    "network without a name": _network(name=_DROP),
    "network with an empty name": _network(name=""),
    "network named like the admin network": _network(name="fuelweb_admin"),
    "network given twice": _network(name="public"),
    "/32 CIDR": _network(cidr="192.168.0.7/32"),
    "/31 CIDR": _network(cidr="192.168.0.6/31"),
    "CIDR with host bits": _network(cidr="192.168.0.1/24"),
    "CIDR out of range": _network(cidr="300.168.0.0/24"),
    "CIDR prefix 33": _network(cidr="192.168.0.0/33"),
    "CIDR not a string": _network(cidr=24),
    "gateway outside the CIDR": _network(gateway="10.0.0.1"),
    "ip_range outside the CIDR": _network(ip_range=["192.168.0.2", "192.168.9.9"]),
    "ip_range reversed": _network(ip_range=["192.168.0.200", "192.168.0.2"]),
    "ip_range without a CIDR": _network(cidr=None, ip_range=["192.168.0.2", "192.168.0.9"]),
    "vlan 5000": _network(vlan_start=5000),
    "vlan a string": _network(vlan_start="101"),
    "networks not a list": _with("networks_metadata", lambda m: m["neutron"].update(networks={})),
    "network config bad internal CIDR": _with(
        "networks_metadata", lambda m: m["neutron"]["config"].update(internal_cidr="192.168.111.0/16")),
    "network config reversed floating range": _with(
        "networks_metadata",
        lambda m: m["neutron"]["config"].update(floating_ranges=[["172.16.0.254", "172.16.0.130"]])),
    "role that is a string": _with("roles_metadata", lambda m: m.update(controller="Controller")),
    "role conflicts a string": _with("roles_metadata", lambda m: m["controller"].update(conflicts="compute")),
    "role restriction a string": _with("roles_metadata",
                                       lambda m: m["mongo"].update(restrictions=["settings:x.y.value == 1"])),
    "role restriction without condition": _with("roles_metadata",
                                                lambda m: m["mongo"].update(restrictions=[{"message": "x"}])),
    "network role without an id": _with("network_roles_metadata", lambda m: m[0].pop("id")),
    "network role without default_mapping": _with("network_roles_metadata",
                                                  lambda m: m[0].pop("default_mapping")),
    "network role that is a string": _with("network_roles_metadata", lambda m: m.append("public/vip")),
    "network role given twice": _with("network_roles_metadata", lambda m: m.append(copy.deepcopy(m[0]))),
    "VIP without a name": _with("network_roles_metadata",
                                lambda m: m[0]["properties"]["vip"].append({"namespace": "haproxy"})),
    "VIP given twice in a network": _with(
        "network_roles_metadata", lambda m: m[0]["properties"]["vip"].append({"name": "public"})),
    "VIP list a dict": _with("network_roles_metadata", lambda m: m[0]["properties"].update(vip={})),
}


def _release_count(session):
    session.rollback()
    return session.query(Release).count()


@pytest.mark.parametrize("metadata", INVALID_METADATA.values(), ids=list(INVALID_METADATA))
def test_invalid_release_metadata_is_refused_at_post_and_put(app, env, session, metadata):
    before = _release_count(session)
    response = app.post_json(RELEASES, _release(**metadata), status=400)
    assert response.json["message"] and isinstance(response.json["errors"], list)
    assert _release_count(session) == before
    release = env.create_release(name="valid")
    app.put_json(RELEASES + "{0}/".format(release["id"]), metadata, status=400)
    assert app.get(RELEASES + "{0}/".format(release["id"])).json == release


def test_deployment_id_is_the_cluster_id_and_settings_stay_on_the_server(app, env):
    """Nailgun's deployment_id is the cluster's id: no release template decides it."""
    release = env.create_release(**_generated(
        deployment_id={"generator": "password", "length": 12},
        dns={"generator": "from_settings", "generator_arg": "DNS_DOMAIN"}))
    cluster = env.create_cluster(release_id=release["id"])
    node = env.create_node()
    app.post_json("/api/v1/clusters/{0}/assignment/".format(cluster["id"]),
                  [{"id": node["id"], "roles": ["controller"]}])
    defaults = app.get(DEFAULTS.format(cluster["id"])).json
    assert [item["deployment_id"] for item in defaults] == [cluster["id"]]


def test_generators_make_values_of_the_asked_length(app, env, session):
    release = env.create_release(**_generated(
        odd={"generator": "hexstring", "length": 7}, longest={"generator": "password",
                                                                "length": attributes.MAX_GENERATED_LENGTH}))
    cluster = env.create_cluster(release_id=release["id"])
    from nailgun_host.db.models import Cluster
    generated = session.get(Cluster, cluster["id"]).generated_attributes
    assert len(generated["odd"]) == 7 and int(generated["odd"], 16) >= 0
    assert len(generated["longest"]) == attributes.MAX_GENERATED_LENGTH and generated["longest"].isalnum()
    assert generated["longest"].isascii() and len(set(generated["longest"])) > 50


def test_a_release_stored_before_validation_answers_400_not_500(app, env, session):
    """Rows written by older versions skipped the schemas: their templates fail cleanly."""
    release = env.create_release(name="legacy")
    row = session.get(Release, release["id"])
    row.attributes_metadata = {"generated": {"secret": {"generator": "from_settings",
                                                        "generator_arg": "DATABASE_URL"}}}
    session.commit()
    response = app.post_json("/api/v1/clusters/", {"name": "env", "release_id": release["id"]}, status=400)
    assert "DATABASE_URL" not in response.text and "generator" in response.json["message"]


# -- property: every release the server accepts can be used ---------------------------------

#: text any database stores (the host refuses NUL and lone surrogates in every body)
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20)
NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=12)
KEYS = NAMES.filter(lambda key: key != "generator")
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10 ** 6, 10 ** 6), TEXT,
                    st.sampled_from(["{settings.MASTER_IP}", "env_{cluster.id}", "{unknown}"]))
GENERATORS = st.one_of(
    st.fixed_dictionaries({"generator": st.sampled_from(["password", "hexstring"])},
                          optional={"length": st.integers(1, attributes.MAX_GENERATED_LENGTH)}),
    st.fixed_dictionaries({"generator": st.sampled_from(["uuid4", "random_int"])}),
    st.fixed_dictionaries({"generator": st.just("from_settings"),
                           "generator_arg": st.sampled_from(attributes.SETTINGS_FOR_RELEASES)}),
)
GENERATED = st.dictionaries(KEYS, st.recursive(
    st.one_of(GENERATORS, SCALARS),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(KEYS, children, max_size=3)),
    max_leaves=8), max_size=5)
FIELDS = st.fixed_dictionaries(
    {"value": st.recursive(SCALARS, lambda c: st.lists(c, max_size=3), max_leaves=4)},
    optional={"type": st.sampled_from(["checkbox", "text", "radio", "password"]), "label": TEXT,
              "weight": st.integers(0, 100),
              "values": st.lists(st.fixed_dictionaries({"data": SCALARS}), max_size=2)})
EDITABLE = st.dictionaries(KEYS, st.dictionaries(KEYS, FIELDS, max_size=3), max_size=4)


@st.composite
def release_networks(draw):
    names = draw(st.lists(NAMES.filter(lambda n: n != "fuelweb_admin"), max_size=5, unique=True))
    networks = []
    for index, name in enumerate(names):
        network = {"name": name, "vlan_start": draw(st.one_of(st.none(), st.integers(1, 4094)))}
        if draw(st.booleans()):
            prefix = draw(st.integers(8, 30))
            net = ipaddress.ip_network("10.{0}.0.0/{1}".format(index, prefix), strict=False)
            hosts = list(itertools.islice(net.hosts(), 256)) + [net[-2]]
            first, last = sorted(draw(st.lists(st.sampled_from(hosts), min_size=2, max_size=2)))
            network.update(cidr=str(net), ip_range=[str(first), str(last)],
                           notation=draw(st.sampled_from(["cidr", "ip_ranges", None])),
                           use_gateway=draw(st.booleans()),
                           gateway=draw(st.one_of(st.none(), st.sampled_from([str(h) for h in hosts]))))
        else:
            network.update(cidr=None, notation=draw(st.sampled_from(["cidr", None])))
        networks.append(network)
    return networks


@st.composite
def network_roles(draw, network_names):
    ids = draw(st.lists(NAMES, max_size=5, unique=True))
    roles = []
    for role_id in ids:
        mapping = draw(st.sampled_from(network_names + ["fuelweb_admin", "nowhere"]))
        vips = draw(st.lists(st.fixed_dictionaries({"name": NAMES}, optional={"namespace": st.one_of(
            st.none(), NAMES)}), max_size=3, unique_by=lambda vip: vip["name"]))
        roles.append({"id": role_id, "default_mapping": mapping, "properties": {
            "subnet": draw(st.booleans()), "gateway": draw(st.booleans()), "vip": vips}})
    taken, unique = set(), []
    for role in roles:  # one VIP per name in each network
        role["properties"]["vip"] = [v for v in role["properties"]["vip"]
                                     if (role["default_mapping"], v["name"]) not in taken]
        taken.update((role["default_mapping"], v["name"]) for v in role["properties"]["vip"])
        unique.append(role)
    return unique


@st.composite
def valid_releases(draw):
    role_names = ["controller"] + draw(st.lists(NAMES, max_size=4, unique=True))
    role_names = list(dict.fromkeys(role_names))
    roles = {name: draw(st.fixed_dictionaries({}, optional={
        "name": TEXT, "conflicts": st.lists(st.sampled_from(role_names), unique=True),
        "has_primary": st.booleans(), "public_ip_required": st.booleans(),
        "restrictions": st.lists(st.fixed_dictionaries(
            {"condition": st.sampled_from(["settings:common.debug.value == true", "cluster:mode == 'x'", ""])},
            optional={"message": TEXT}), max_size=2)})) for name in role_names}
    networks = draw(release_networks())
    provider = {"networks": networks}
    if draw(st.booleans()):
        provider["config"] = _defaults("networks_metadata")["neutron"]["config"]
    return _release(
        attributes_metadata={"editable": draw(EDITABLE), "generated": draw(GENERATED)},
        networks_metadata={draw(st.sampled_from(["neutron", "nova_network"])): provider},
        roles_metadata=roles,
        network_roles_metadata=draw(network_roles([n["name"] for n in networks])))


def _no_server_error(response):
    """``response`` after checking that it is no server error, and errors are JSON errors."""
    assert response.status_int < 500, response.text
    if response.status_int >= 400:
        assert set(response.json) == {"message", "errors"}
    return response


@PROPERTY_RUNS
@given(data=valid_releases())
def test_an_accepted_release_never_breaks_clusters_made_from_it(app, env, data):
    """Create, assign a controller, read deployment defaults, clone the release: no 5xx."""
    release = app.post_json(RELEASES, data, status=201).json
    provider = next(iter(data["networks_metadata"]))
    cluster = _no_server_error(app.post_json("/api/v1/clusters/", {
        "name": "C{0}".format(next(_numbers)), "release_id": release["id"], "net_provider": provider},
        expect_errors=True))
    assert cluster.status_int == 201, cluster.text
    cluster_id = cluster.json["id"]
    node = env.create_node()
    _no_server_error(app.post_json("/api/v1/clusters/{0}/assignment/".format(cluster_id),
                                   [{"id": node["id"], "roles": ["controller"]}], expect_errors=True))
    defaults = _no_server_error(app.get(DEFAULTS.format(cluster_id), expect_errors=True))
    if defaults.status_int == 200:
        assert {item["deployment_id"] for item in defaults.json} <= {cluster_id}
    _no_server_error(app.get("/api/v1/clusters/{0}/network_configuration/{1}/".format(cluster_id, provider),
                             expect_errors=True))
    clone = _no_server_error(app.post(CLONE_RELEASE.format(cluster_id, release["id"]), expect_errors=True))
    assert clone.status_int == 200, clone.text
    _no_server_error(app.put_json(RELEASES + "{0}/".format(release["id"]), data, expect_errors=True))


#: (field, wrong value) pairs: kinds of metadata a cluster cannot be built from
WRONG_METADATA = st.one_of(
    st.tuples(st.just("length"), st.one_of(
        st.integers(max_value=0), st.integers(min_value=attributes.MAX_GENERATED_LENGTH + 1), TEXT,
        st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.none())),
    st.tuples(st.just("generator"), st.one_of(TEXT.filter(lambda t: t not in attributes.GENERATORS),
                                              st.integers(), st.lists(TEXT, max_size=2))),
    st.tuples(st.just("generator_arg"), TEXT.filter(lambda t: t not in attributes.SETTINGS_FOR_RELEASES)),
    st.tuples(st.just("cidr"), st.one_of(
        st.integers(31, 32).map("192.168.0.0/{0}".format), st.integers(33, 99).map("192.168.0.0/{0}".format),
        st.integers(1, 255).map("192.168.0.{0}/24".format), TEXT)),
    st.tuples(st.just("role"), st.one_of(TEXT, st.integers(), st.lists(TEXT, max_size=2), st.none())),
    st.tuples(st.just("network_role"), st.sampled_from(["id", "default_mapping"])),
)


def _apply(kind, value):
    if kind in ("length", "generator", "generator_arg"):
        spec = {"generator": "password", "generator_arg": "MASTER_IP"}
        spec[kind] = value
        return _generated(wrong=spec)
    if kind == "cidr":
        return _network(cidr=value)
    if kind == "role":
        return _with("roles_metadata", lambda m: m.update(controller=value))
    return _with("network_roles_metadata", lambda m: m[1].pop(value))


@PROPERTY_RUNS
@given(wrong=WRONG_METADATA)
def test_wrong_release_metadata_is_400_and_stores_nothing(app, session, wrong):
    before = _release_count(session)
    response = app.post_json(RELEASES, _release(**_apply(*wrong)), expect_errors=True)
    assert response.status_int == 400, response.text
    assert _release_count(session) == before
