"""The upgrade pages: clusters with their seed or original, the nodes on either side of an upgrade and the task
that moved each, a move's progress; cloning and moving for whoever may, nothing of it for a reader.

The orchestrator is the one seam a test stands in for: it answers the move's provisioning task through
``task_obj.receive`` on the server's database, as Astute's ``provision_resp`` would (see test_e2e_octane).
"""
import json
import urllib.request

from nailgun_host.db.models import Task
from nailgun_host.objects import task as task_obj
from tests.auth import basic


def call(server, method, path, body=None):
    """The API's answer to ``method path`` for admin (HTTP Basic), as data."""
    request = urllib.request.Request(server.url + "/api/v1" + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers=dict(basic("admin"), **{"Content-Type": "application/json"}))
    with urllib.request.urlopen(request) as response:
        text = response.read()
    return json.loads(text) if text else None


def orig_with_nodes(server):
    """A Liberty cluster with a deployed controller and compute, and a Mitaka release to upgrade it to."""
    liberty = call(server, "POST", "/releases", {"name": "Liberty on Ubuntu 14.04", "version": "liberty-8.0",
                                                  "operating_system": "Ubuntu"})
    mitaka = call(server, "POST", "/releases", {"name": "Mitaka on Ubuntu 14.04", "version": "mitaka-9.0",
                                                 "operating_system": "Ubuntu"})
    orig = call(server, "POST", "/clusters", {"name": "production", "release_id": liberty["id"]})
    nodes = []
    for number, role in enumerate(("controller", "compute"), 1):
        mac = "52:54:00:aa:00:0{0}".format(number)
        node = call(server, "POST", "/nodes", {"mac": mac, "meta": {"interfaces": [
            {"name": "eth0", "mac": mac}, {"name": "eth1", "mac": "52:54:00:bb:00:0{0}".format(number)}]}})
        nodes.append(call(server, "PUT", "/nodes/{0}".format(node["id"]),
                          {"cluster_id": orig["id"], "roles": [role], "status": "ready"}))
    return orig, mitaka, nodes


def orchestrator_answers(session, seed_id, status, progress=None):
    """Astute's answer about the seed's move (its provisioning task) through the orchestrator seam."""
    session.expire_all()
    task = session.query(Task).filter_by(cluster_id=seed_id, name="provision").order_by(Task.id.desc()).first()
    task_obj.receive(dict({"task_uuid": task.uuid, "status": status},
                          **({} if progress is None else {"progress": progress})))
    session.commit()
    return task.id


def row_of(console, side, node_id):
    """The text of node ``node_id``'s row in a side's column (#orig-side, #seed-side), or None."""
    for row in console.find_all("{0} tbody tr".format(side)):
        cells = row.find_elements("css selector", "td")
        if any(cell.text == str(node_id) for cell in cells[:2]):
            return row.text
    return None


def click_and_wait_for_page(console, selector):
    """Click what changes the location hash, and wait until the new page is drawn."""
    console.driver.execute_script("document.body.dataset.ready = '';")
    console.find(selector).click()
    console.ready()


def test_an_admin_clones_and_moves_a_node_and_sees_it_on_the_seed_side_with_its_task(console, console_server,
                                                                                      session):
    orig, mitaka, (controller, compute) = orig_with_nodes(console_server)
    console.sign_in("admin")
    console.go("/clusters")
    assert "production" in console.text("#clusters") and "Upgrade" in console.text("#clusters thead")
    console.screenshot("clusters")

    console.go("/clusters/{0}".format(orig["id"]))
    assert "none" in console.text("#cluster")
    form = console.find("#clone")
    name = form.find_element("name", "name")
    name.clear()
    name.send_keys("production-upgrade")
    form.find_element("css selector", "option[value='{0}']".format(mitaka["id"])).click()
    form.find_element("css selector", "button[type=submit]").click()
    console.wait_for(lambda: "production-upgrade" in console.text(".confirm"))
    console.screenshot("clone-confirmation")
    click_and_wait_for_page(console, ".confirm button.primary")

    seed_id = int(console.driver.execute_script("return location.hash.split('/').pop()"))
    assert seed_id != orig["id"]
    assert "seed of Cluster {0}".format(orig["id"]) in console.text("#cluster")
    assert row_of(console, "#orig-side", controller["id"]) and not console.find_all("#seed-side tbody tr")
    assert console.text("#cluster-status") == call(console_server, "GET", "/clusters/{0}".format(seed_id))["status"]
    console.screenshot("seed-before-move")

    console.find("#orig-side input[value='{0}']".format(controller["id"])).click()
    console.find("#move-nodes").click()
    console.wait_for(lambda: "Move node {0} to the seed production-upgrade".format(controller["id"])
                     in console.text(".confirm"))
    console.find(".confirm button.primary").click()
    console.wait_for(lambda: row_of(console, "#seed-side", controller["id"]) is not None)
    assert "provisioning" in row_of(console, "#seed-side", controller["id"])
    assert row_of(console, "#orig-side", controller["id"]) is None
    assert row_of(console, "#orig-side", compute["id"]) is not None
    # the move changed the seed's status: the table at the top shows it as the sides do; no second move meanwhile
    seed_status = call(console_server, "GET", "/clusters/{0}".format(seed_id))["status"]
    assert seed_status != "new" and console.text("#cluster-status") == seed_status
    assert not console.find("#move-nodes").is_enabled()

    task_id = orchestrator_answers(session, seed_id, "running", 40)
    console.wait_for(lambda: "40%" in console.text("#move-progress"))
    assert "provision #{0}: running 40%".format(task_id) in row_of(console, "#seed-side", controller["id"])
    assert console.find("#move-progress progress").get_attribute("value") == "40"
    console.screenshot("move-running")

    orchestrator_answers(session, seed_id, "ready")
    console.wait_for(lambda: "provisioned" in (row_of(console, "#seed-side", controller["id"]) or ""))
    moved = row_of(console, "#seed-side", controller["id"])
    assert "provision #{0}: ready 100%".format(task_id) in moved and "controller (pending)" in moved
    assert console.text("#move-progress") == ""
    assert console.find("#move-nodes").is_enabled()
    console.screenshot("seed-after-move")

    console.go("/clusters")
    clusters = console.text("#clusters")
    assert "original of Cluster {0}".format(seed_id) in clusters and "seed of Cluster {0}".format(orig["id"]) in clusters
    console.screenshot("clusters-in-upgrade")


def test_a_reader_sees_both_clusters_and_sides_but_no_clone_or_move(console, console_server):
    orig, mitaka, (controller, compute) = orig_with_nodes(console_server)
    seed = call(console_server, "POST", "/clusters/{0}/upgrade/clone".format(orig["id"]),
                {"name": "production-upgrade", "release_id": mitaka["id"]})
    call(console_server, "POST", "/clusters/{0}/upgrade/assign".format(seed["id"]),
         {"nodes_ids": [compute["id"]], "reprovision": False})
    other = call(console_server, "POST", "/clusters", {"name": "staging", "release_id": mitaka["id"]})
    call(console_server, "POST", "/config/environments", {"id": orig["id"], "components": [],
                                                          "hierarchy_levels": ["nodes"]})
    console.sign_in("reader")

    console.go("/clusters")
    clusters = console.text("#clusters")
    assert "production" in clusters and "production-upgrade" in clusters and "staging" in clusters
    assert "original of Cluster {0}".format(seed["id"]) in clusters
    console.screenshot("clusters")

    console.go("/clusters/{0}".format(orig["id"]))
    assert "original of Cluster {0}".format(seed["id"]) in console.text("#cluster")
    assert console.find("#cluster a[href='#/environments/{0}']".format(orig["id"])).text == \
        "Environment {0}".format(orig["id"])
    assert "controller" in row_of(console, "#orig-side", controller["id"])
    moved = row_of(console, "#seed-side", compute["id"])
    assert "compute" in moved and "ready" in moved and "—" in moved  # moved without reinstallation: no task
    assert not console.find_all("#sides input") and not console.find_all("#move-nodes")
    console.screenshot("orig")

    console.go("/clusters/{0}".format(other["id"]))
    assert "staging" in console.text("#app h1") and not console.find_all("#clone") and not console.find_all("#app button")
    console.screenshot("cluster-without-upgrade")
