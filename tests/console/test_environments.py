"""The console's environment pages in a real browser: an environment, the effective values at a node as a tree with
each leaf's level and kind (secrets masked for a reader, clear for an admin), a document's history with the diff of
two versions and a revert, and the change feed, live."""
import json
import urllib.error
import urllib.request

from tests.auth import basic

#: astute's schema marks ssh.deploy_key secret; mysql.root_password is secret by its name (SECRETS.patterns)
ASTUTE_SCHEMA = {"type": "object", "properties": {
    "ssh": {"type": "object", "properties": {"deploy_key": {"type": "string", "x-secret": True}}}}}


def call(server, method, path, body=None, user="admin"):
    """The API's answer (decoded JSON, None when empty) to ``method path`` as ``user`` (HTTP Basic)."""
    request = urllib.request.Request(
        server.url + "/api/v1" + path, method=method, data=None if body is None else json.dumps(body).encode(),
        headers=dict(basic(user), **{"Content-Type": "application/json"}))
    with urllib.request.urlopen(request) as answer:
        text = answer.read().decode()
    return json.loads(text) if text else None


def seed(server):
    """Environment 1 (levels: nodes) of component fuel: astute with secrets at the environment level, an override
    and node 5's values; nova at the environment level. Answers {data source name: id}."""
    component = call(server, "POST", "/config/components", {"name": "fuel", "resource_definitions": [
        {"name": "astute", "content": {"schema": ASTUTE_SCHEMA}}, {"name": "nova"}]})
    ids = {definition["name"]: definition["id"] for definition in component["resource_definitions"]}
    call(server, "POST", "/config/environments", {"id": 1, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    astute = "/config/environments/1/{0}resources/%d/{1}" % ids["astute"]
    call(server, "PUT", astute.format("", "values"), {
        "mysql": {"root_password": "Mv1yTbAk", "port": 3306}, "debug": False, "ssh": {"deploy_key": "KEY-123"}})
    call(server, "PUT", astute.format("", "overrides"), {"mysql": {"port": 3307}})
    call(server, "PUT", astute.format("nodes/5/", "values"), {"debug": True})
    return ids


def leaf(console, key):
    """(value, source) of the effective tree's leaf ``key`` (the first one)."""
    item = console.find('li.leaf[data-key="{0}"]'.format(key))
    return item.find_element("css selector", ".value"), item.find_element("css selector", "a.source")


def follow(console, link):
    """Click ``link`` (an element) to another page of the console and wait until it is drawn."""
    console.driver.execute_script("document.body.dataset.ready = '';")
    link.click()
    console.ready()


def no_edit_control(console):
    assert not console.find_all("#edit-in-session")
    assert not console.find_all("#app button:not(#level-form *), #app textarea, #app .revert, #confirm-revert")


def test_a_reader_sees_where_each_value_comes_from_with_secrets_masked_and_nothing_to_edit(console, console_server):
    ids = seed(console_server)
    console.sign_in("reader")  # lands on the list
    console.wait_for(lambda: console.find_all("#environments"))
    console.screenshot("environments")
    follow(console, console.find('#environments a[href="#/environments/1"]'))
    assert console.text("#app h1") == "Environment 1"
    assert console.text("#components") == "fuel"
    sources = console.text("#data-sources")
    assert "astute" in sources and "nova" in sources
    level = console.wait_for(lambda: console.find_all('#level-values a.level[href="#/environments/1/effective/nodes/5"]'))[0]
    assert level.text == "/nodes/5/"
    assert "astute values" in console.text("#level-values")
    assert console.find_all('a[href="#/environments/1/sessions"]') and console.find_all('a[href="#/environments/1/feed"]')
    no_edit_control(console)
    console.screenshot("environment")

    follow(console, level)
    assert console.text("#app h1") == "Effective values at /nodes/5/"
    value, source = leaf(console, "debug")
    assert (value.text, source.text) == ("true", "/nodes/5/ values")
    value, source = leaf(console, "port")
    assert (value.text, source.text) == ("3307", "/ overrides")
    assert "overrides" in source.get_attribute("class").split()
    for key in ("root_password", "deploy_key"):
        value, source = leaf(console, key)
        assert value.text == '"<secret>"' and "secret" in value.get_attribute("class").split()
        assert source.text == "/ values"
    assert "Mv1yTbAk" not in console.text() and "KEY-123" not in console.text()
    no_edit_control(console)
    console.screenshot("effective-values")

    # a leaf's source is the history of the document it comes from
    follow(console, leaf(console, "port")[1])
    assert console.text("#app h1") == "History of the overrides of astute at /"
    assert len(console.find_all("#versions-table tbody tr")) == 1
    no_edit_control(console)
    console.screenshot("history-reader")

    console.sign_in("admin")
    console.go("/environments/1/effective/nodes/5")
    value, _ = leaf(console, "root_password")
    assert value.text == '"Mv1yTbAk"' and "secret" not in value.get_attribute("class").split()
    assert leaf(console, "deploy_key")[0].text == '"KEY-123"'
    assert console.find("#edit-in-session").get_attribute("href").endswith("#/environments/1/sessions")
    console.screenshot("effective-values-admin")
    assert ids["astute"] != ids["nova"]


def test_history_shows_each_version_a_diff_of_two_and_a_confirmed_revert(console, console_server):
    ids = seed(console_server)
    nova = "/config/environments/1/resources/%d/values" % ids["nova"]
    call(console_server, "PUT", nova, {"workers": 4, "debug": False}, user="admin")
    call(console_server, "PUT", nova, {"workers": 8, "debug": False}, user="member")
    console.sign_in("member")
    console.go("/environments/1/history/values/%d" % ids["nova"])
    assert console.text("#app h1") == "History of the values of nova at /"
    rows = [row.text for row in console.find_all("#versions-table tbody tr")]
    assert len(rows) == 2 and "member" in rows[0] and "admin" in rows[1]
    # the newest two versions side by side: the changed line removed on the left, added on the right
    assert [line.text.strip() for line in console.find_all(".diff-from .line.removed")] == ['"workers": 4']
    assert [line.text.strip() for line in console.find_all(".diff-to .line.added")] == ['"workers": 8']
    assert "replace /workers = 8" in console.text("ul.patch")
    console.screenshot("history-diff")

    console.find('button.revert[data-version="1"]').click()
    confirm = console.find("#confirm-revert")
    assert console.find("#revert-confirm").is_displayed()
    assert len(call(console_server, "GET", nova + "/history")) == 2  # nothing is written before the confirmation
    console.screenshot("revert-confirm")
    confirm.click()
    console.wait_for(lambda: len(console.find_all("#versions-table tbody tr")) == 3)
    newest = console.find("#versions-table tbody tr").text
    assert newest.startswith("3") or " 3 " in newest
    assert "member" in newest
    assert "Reverted: version 3 equals version 1" in console.text("#history-message")
    assert call(console_server, "GET", nova) == {"workers": 4, "debug": False}
    # the diff follows the newest version, and the revert shows in the live feed below
    console.wait_for(lambda: [line.text.strip() for line in console.find_all(".diff-to .line.added")] == ['"workers": 4'])
    console.wait_for(lambda: any("nova" in row.text and "member" in row.text
                                 for row in console.find_all("#feed tbody tr.new")))
    # any two versions: 1 and 3 are equal
    console.find('input[name="from"][value="1"]').click()
    console.wait_for(lambda: "The two versions are equal." in console.text("#diff"))
    console.screenshot("history-reverted")


def test_the_live_feed_shows_a_write_made_meanwhile_without_reloading(console, console_server):
    ids = seed(console_server)
    console.sign_in("reader")
    console.go("/environments/1/feed")
    assert len(console.find_all("#feed tbody tr")) == 3  # the seed's three writes
    console.driver.execute_script("window.stillThisPage = true;")
    console.screenshot("feed")
    call(console_server, "PUT", "/config/environments/1/nodes/7/resources/%d/values" % ids["nova"], {"workers": 2},
         user="member")
    console.wait_for(lambda: console.find_all("#feed tbody tr.new"))
    cells = [cell.text for cell in console.find("#feed tbody tr.new").find_elements("css selector", "td")]
    assert cells[:7] == ["4", "nova", "/nodes/7/", "values", "write", "1", "member"]
    assert console.driver.execute_script("return window.stillThisPage === true")
    link = console.find("#feed tbody tr.new a")
    assert link.get_attribute("href").endswith("#/environments/1/history/values/%d/nodes/7" % ids["nova"])
    console.screenshot("feed-live")


def test_edge_cases_read_plainly_an_empty_environment_a_long_value_and_a_slash_in_a_level_value(console,
                                                                                                console_server):
    """No level and no change: the page says so (no stray "null", no empty table); a value of 20,000 characters
    wraps in its cell and scrolls inside its side of a diff instead of pushing the page sideways; a level value
    with "/" is refused in the form, before any request."""
    ids = seed(console_server)
    empty = call(console_server, "POST", "/config/environments", {"components": [], "hierarchy_levels": []})["id"]
    nova = "/config/environments/1/resources/%d/values" % ids["nova"]
    call(console_server, "PUT", nova, {"motd": "short", "workers": 4})
    call(console_server, "PUT", nova, {"motd": "Z" * 20000, "workers": 4})
    console.sign_in("reader")

    console.go("/environments/{0}".format(empty))
    assert console.text("#levels") == "environment" and "null" not in console.text()
    console.go("/environments/{0}/feed".format(empty))
    assert "No change yet." in console.text("#feed") and not console.find("#feed table").is_displayed()

    sideways = "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
    for hash_path in ("/environments/1/effective", "/environments/1/history/values/%d" % ids["nova"]):
        console.go(hash_path)
        console.wait_for(lambda: "ZZZZ" in console.text())
        assert console.driver.execute_script(sideways) <= 0, hash_path
    console.screenshot("long-value-diff")

    console.go("/environments/1")
    console.find("#level-form input[name=nodes]").send_keys("rack 5/x")
    console.find("#level-form button").click()
    console.wait_for(lambda: console.text("#level-problem") == 'A level value cannot hold "/": rack 5/x')
    assert console.driver.execute_script("return location.hash") == "#/environments/1"
