"""No address is ever handed out twice: not in one request, not by concurrent requests."""
import concurrent.futures

import requests


def _set_management_range(app, env, cluster_id, first, last):
    config = env.network_configuration(cluster_id)
    management = next(n for n in config["networks"] if n["name"] == "management")
    app.put_json("/api/v1/clusters/{0}/network_configuration/neutron/".format(cluster_id),
                 {"networks": [{"id": management["id"], "ip_ranges": [[first, last]]}]})


def test_exhausted_network_refuses_the_whole_assignment(app, env):
    cluster = env.create_cluster()
    _set_management_range(app, env, cluster["id"], "192.168.0.10", "192.168.0.11")
    nodes = [env.create_node() for _ in range(3)]
    response = app.post_json("/api/v1/clusters/{0}/assignment/".format(cluster["id"]),
                             [{"id": n["id"], "roles": ["compute"]} for n in nodes], status=400)
    assert "Not enough free IP addresses in network 'management'" in response.json["message"]
    assert all(env.get_node(n["id"])["cluster"] is None for n in nodes)
    assert app.get("/api/v1/nodes/").json[0]["network_data"][0]["name"] == "fuelweb_admin"


def test_addresses_are_reused_only_after_release(app, env):
    cluster = env.create_cluster()
    _set_management_range(app, env, cluster["id"], "192.168.0.10", "192.168.0.10")
    first, second = env.create_node(), env.create_node()
    url = "/api/v1/clusters/{0}/".format(cluster["id"])
    app.post_json(url + "assignment/", [{"id": first["id"], "roles": ["compute"]}])
    app.post_json(url + "assignment/", [{"id": second["id"], "roles": ["compute"]}], status=400)
    app.post_json(url + "unassignment/", [{"id": first["id"]}])
    app.post_json(url + "assignment/", [{"id": second["id"], "roles": ["compute"]}])
    management = [d["ip"] for d in env.get_node(second["id"])["network_data"] if d["name"] == "management"]
    assert management == ["192.168.0.10/24"]


def test_concurrent_assignments_never_share_an_address(live_server):
    session = requests.Session()
    base = live_server.url + "/api/v1/"

    def post(path, body):
        response = session.post(base + path, json=body)
        assert response.status_code in (200, 201), response.text
        return response.json()

    release = post("releases/", {"name": "R", "version": "mitaka-9.0", "operating_system": "Ubuntu"})
    cluster = post("clusters/", {"name": "env", "release_id": release["id"]})
    node_ids = [post("nodes/", {"mac": "52:54:00:aa:00:{0:02x}".format(i)})["id"] for i in range(24)]

    def assign(node_id):
        response = requests.post(base + "clusters/{0}/assignment/".format(cluster["id"]),
                                 json=[{"id": node_id, "roles": ["controller" if node_id % 2 else "compute"]}])
        return response.status_code, response.text

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(assign, node_ids))
    assert all(status == 200 for status, _ in results), results
    nodes = session.get(base + "nodes/").json()
    vips = session.get(base + "clusters/{0}/network_configuration/ips/vips/".format(cluster["id"])).json()
    for name in ("management", "storage", "public"):
        taken = [d["ip"].split("/")[0] for n in nodes for d in n["network_data"] if d["name"] == name]
        taken += [v["ip_addr"] for v in vips if v["network"] in {d["network_id"] for n in nodes
                                                              for d in n["network_data"] if d["name"] == name}]
        assert len(taken) == len(set(taken)), name
    assert sum(1 for n in nodes for d in n["network_data"] if d["name"] == "management") == 24
