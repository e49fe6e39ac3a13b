"""The console's configuration sessions (sessions.js): open a session, stage a document in the JSON editor, see
the staged diff, deploy or abandon; a conflicting deploy names the document and who changed it; a reader gets
no control."""
import json
import urllib.error
import urllib.request

from tests.auth import basic

#: the data source's schema: the editor's schema error comes from it
SCHEMA = {"type": "object", "properties": {"debug": {"type": "boolean"}, "workers": {"type": "integer"}}}


def call(server, method, path, body=None, user="admin", headers=None):
    """The API's answer (status, JSON or None) to a request as ``user`` (HTTP Basic)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(server.url + "/api/v1" + path, data=data, method=method,
                                     headers=dict(basic(user), **{"Content-Type": "application/json"},
                                                  **(headers or {})))
    try:
        with urllib.request.urlopen(request) as answer:
            text = answer.read().decode()
            return answer.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        text = error.read().decode()
        return error.code, json.loads(text) if text else None


def seed(server):
    """A component with a data source (nova, with a schema), an unlinked environment and nova's first values:
    (environment id, nova's id)."""
    status, component = call(server, "POST", "/config/components", {
        "name": "lcm", "resource_definitions": [{"name": "nova", "content": {"schema": SCHEMA}}]})
    assert status == 201, component
    status, environment = call(server, "POST", "/config/environments",
                               {"components": [component["id"]], "hierarchy_levels": ["nodes"]})
    assert status == 201, environment
    resource = component["resource_definitions"][0]["id"]
    status, _ = call(server, "PUT", "/config/environments/{0}/resources/{1}/values".format(environment["id"], resource),
                     {"debug": False, "workers": 2})
    assert status == 204
    return environment["id"], resource


def click_and_wait(console, selector):
    """Click what moves to another page (a hash change) and wait until that page is drawn."""
    console.driver.execute_script("document.body.dataset.ready = ''")
    console.find(selector).click()
    console.ready()


def open_session(console, environment):
    """Open a session from the sessions page; its id (from the session page it lands on)."""
    console.open("/environments/{0}/sessions".format(environment))
    click_and_wait(console, "#open-session")
    return console.driver.execute_script("return location.hash").rsplit("/", 1)[1]


def pick(console):
    """Pick nova's values at the environment level on the session page: the editor."""
    click_and_wait(console, "#pick-document button[type=submit]")


def write(console, document):
    console.driver.execute_script("document.getElementById('editor').value = arguments[0]", document)


def edit(console, document):
    """Pick nova's values at the environment level on the session page, and write ``document`` in the editor."""
    pick(console)
    console.driver.execute_script("document.getElementById('editor').value = arguments[0]", document)


def stage(console, document):
    edit(console, document)
    click_and_wait(console, "#stage")
    assert "/edit/" not in console.driver.execute_script("return location.hash")


def test_a_member_opens_a_session_edits_sees_the_diff_and_deploys(console, console_server):
    environment, resource = seed(console_server)
    console.sign_in("member")
    session = open_session(console, environment)
    assert console.text("#session-state") == "open"
    assert "Nothing staged" in console.text("#session-diff")
    console.screenshot("session-open")

    pick(console)
    assert json.loads(console.find("#editor").get_attribute("value")) == {"debug": False, "workers": 2}
    write(console, json.dumps({"debug": False, "workers": 4}, indent=2))
    console.screenshot("editor")
    click_and_wait(console, "#stage")

    diff = console.find("#session-diff")
    assert "values of nova at /" in diff.text
    row = console.find("#session-diff table.patch tbody tr")
    assert [cell.text for cell in row.find_elements("css selector", "td")] == ["replace", "/workers", "2", "4"]
    console.screenshot("session-diff")
    # staged, not applied: the API still answers the deployed values without the session's header
    values = "/config/environments/{0}/resources/{1}/values".format(environment, resource)
    assert call(console_server, "GET", values, user="member")[1]["workers"] == 2

    console.find("#deploy").click()
    console.wait_for(lambda: console.text("#session-state") == "deployed")
    assert "Deployed in revision" in console.text("#deployed")
    assert not console.find_all("#deploy") and not console.find_all("#abandon")
    console.screenshot("session-deployed")

    status, history = call(console_server, "GET", values + "/history", user="member")
    assert status == 200 and [entry["author"] for entry in history] == ["admin", "member"]
    assert call(console_server, "GET", values, user="member")[1] == {"debug": False, "workers": 4}
    status, answer = call(console_server, "GET", "/config/environments/{0}/sessions/{1}".format(environment, session),
                          user="member")
    assert answer["state"] == "deployed"
    # the document's history page (environments' helper) from the deployed session's link
    click_and_wait(console, "#deployed a.history-link")
    assert console.text("#app h1") == "History of the values of nova at /"
    assert "member" in console.find("#versions-table tbody tr").text
    console.screenshot("history")
    # the feed names the deploy's session and leads back to it, as the sessions page lists open sessions only
    link = console.find("#feed a.session-link")
    assert link.text == session[:8]
    click_and_wait(console, "#feed a.session-link")
    assert console.text("#session-state") == "deployed"


def test_the_editor_shows_syntax_and_schema_errors_in_place_and_stages_nothing(console, console_server):
    environment, _ = seed(console_server)
    console.sign_in("member")
    session = open_session(console, environment)
    edit(console, '{\n  "debug": false,\n  "workers": 4,\n}')
    console.find("#stage").click()
    assert console.text("#editor-errors") == \
        "JSON syntax error at line 4, column 1: expected a property name in double quotes."
    console.screenshot("editor-syntax-error")

    write(console, '{"debug": false, "workers": "many"}')
    console.find("#stage").click()
    console.wait_for(lambda: console.find_all("#editor-errors div.error"))
    assert "many" in console.text("#editor-errors") or "integer" in console.text("#editor-errors")
    assert "/edit/values/" in console.driver.execute_script("return location.hash")
    console.screenshot("editor-schema-error")

    status, answer = call(console_server, "GET", "/config/environments/{0}/sessions/{1}".format(environment, session),
                          user="member")
    assert status == 200 and answer["documents"] == []
    console.find("#cancel").click()
    console.wait_for(lambda: console.find_all("#no-changes"))

    # abandoned meanwhile (another tab): Stage says so in words and stays off
    pick(console)
    write(console, '{"debug": true, "workers": 4}')
    status, _ = call(console_server, "DELETE", "/config/environments/{0}/sessions/{1}".format(environment, session),
                     user="member")
    assert status in (200, 204)
    console.find("#stage").click()
    console.wait_for(lambda: "is abandoned" in console.text("#editor-errors"))
    errors = console.text("#editor-errors")
    assert "state: abandoned" in errors and "{" not in errors and "Open a new session" in errors
    assert not console.find("#stage").is_enabled()


def test_a_second_deploy_of_the_same_key_is_shown_as_a_conflict(console, other_console, console_server):
    environment, resource = seed(console_server)
    console.sign_in("member")
    other_console.sign_in("admin")
    first = open_session(console, environment)
    second = open_session(other_console, environment)
    assert first != second
    stage(console, '{"debug": false, "workers": 4}')
    stage(other_console, '{"debug": false, "workers": 8}')
    # the admin sees both sessions in the list, the member only theirs
    other_console.open("/environments/{0}/sessions".format(environment))
    assert len(other_console.find_all("table.sessions tbody tr")) == 2
    other_console.screenshot("sessions-admin")

    console.find("#deploy").click()
    console.wait_for(lambda: console.text("#session-state") == "deployed")
    console.screenshot("first-deployed")

    other_console.open("/environments/{0}/sessions/{1}".format(environment, second))
    other_console.find("#deploy").click()
    other_console.wait_for(lambda: other_console.text("#session-state") == "invalid")
    conflict = other_console.text("#conflict")
    assert "values of nova at /: changed in revision 2 by member" in conflict
    assert "Deploy refused" in other_console.text("#deploy-refused")
    assert not other_console.find_all("#deploy")
    other_console.screenshot("session-conflict")
    values = "/config/environments/{0}/resources/{1}/values".format(environment, resource)
    assert call(console_server, "GET", values)[1]["workers"] == 4


def test_a_reader_gets_no_session_control_and_an_admin_abandons_a_members_session(console, console_server):
    environment, _ = seed(console_server)
    status, opened = call(console_server, "POST", "/config/environments/{0}/configure".format(environment), user="member")
    assert status == 200
    console.sign_in("reader")
    console.open("/environments/{0}/sessions".format(environment))
    assert "Sessions of environment" in console.text()
    assert not console.find_all("#open-session") and not console.find_all("#app button")
    assert console.find_all("#no-sessions")
    console.screenshot("sessions-reader")
    console.open("/environments/{0}/sessions/{1}".format(environment, opened["id"]))
    assert "another user" in console.text() and not console.find_all("#deploy, #abandon, #pick-document")
    console.screenshot("session-reader-refused")

    console.sign_in("admin")
    console.open("/environments/{0}/sessions/{1}".format(environment, opened["id"]))
    assert not console.find_all("#deploy") and not console.find_all("#pick-document")
    console.find("#abandon").click()
    assert console.find("#confirm-abandon").is_displayed()
    console.screenshot("abandon-confirmation")
    console.find("#abandon-yes").click()
    console.wait_for(lambda: console.text("#session-state") == "abandoned")
    console.screenshot("session-abandoned")
    status, answer = call(console_server, "GET", "/config/environments/{0}/sessions/{1}".format(
        environment, opened["id"]), user="member")
    assert answer["state"] == "abandoned"


def test_a_draft_outlives_the_end_of_the_sign_in_and_comes_back_after_a_new_one(console, console_server):
    from selenium.webdriver.common.keys import Keys

    from tests.auth import LOCAL_USERS

    environment, _ = seed(console_server)
    console.sign_in("member")
    session = open_session(console, environment)
    pick(console)
    editor_hash = console.driver.execute_script("return location.hash")
    editor = console.find("#editor")
    editor.send_keys(Keys.CONTROL, "a")
    editor.send_keys('{"debug": true, "workers": 6}')  # typed: the page keeps the draft as it is typed
    console.driver.delete_cookie("nailgun_console")  # the sign-in ends (its token expired)
    console.find("#stage").click()
    console.wait_for(lambda: console.find("#sign-in").is_displayed())
    assert "session has ended" in console.text("#sign-in-error")
    console.screenshot("signed-out-while-editing")
    form = console.find("#sign-in form")
    form.find_element("name", "username").send_keys("member")
    form.find_element("name", "password").send_keys(LOCAL_USERS["member"])
    console.driver.execute_script("document.body.dataset.ready = ''")
    form.find_element("css selector", "button[type=submit]").click()
    console.ready()
    assert console.driver.execute_script("return location.hash") == editor_hash  # back where the sign-in was asked
    assert json.loads(console.find("#editor").get_attribute("value")) == {"debug": True, "workers": 6}
    click_and_wait(console, "#stage")
    status, answer = call(console_server, "GET", "/config/environments/{0}/sessions/{1}".format(environment, session),
                          user="member")
    assert status == 200 and len(answer["documents"]) == 1
