"""Signing in and out of the console, and what its cookie and CSRF token let a browser (or another site) do."""
import urllib.parse


def test_a_reader_signs_in_sees_the_environments_and_signs_out(console):
    console.sign_in("reader")
    assert "reader" in console.text("#who")
    assert "Environments" in console.text()
    console.screenshot("environments")
    cookie = console.driver.get_cookie("nailgun_console")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/ui/"
    console.find("#sign-out button").click()
    console.wait_for(lambda: console.find("#sign-in").is_displayed())
    assert console.driver.get_cookie("nailgun_console") is None


def test_a_wrong_password_is_refused_with_the_form_again(console):
    console.sign_in("reader", "not the password")
    assert console.find("#sign-in").is_displayed()
    assert "Wrong user name or password" in console.text("#sign-in-error")
    assert console.driver.get_cookie("nailgun_console") is None


HTML = '<img src=x onerror="document.title=\'owned\'"><script>document.title=\'owned\'</script><b>bold</b>'
#: a level value cannot hold "/" (the API routes on it)
LEVEL_HTML = '<img src=x onerror="document.title=\'owned\'"><b>bold'


def test_what_the_api_holds_is_drawn_as_text_never_as_html(console, console_server):
    """Names, level values, keys and values that look like HTML show as the text they are, on every page."""
    from tests.console.test_environments import call

    component = call(console_server, "POST", "/config/components", {"name": HTML, "resource_definitions": [
        {"name": "r" + HTML}]})
    environment = call(console_server, "POST", "/config/environments", {
        "components": [component["id"]], "hierarchy_levels": ["nodes"]})["id"]
    resource = component["resource_definitions"][0]["id"]
    level = "nodes/" + urllib.parse.quote(LEVEL_HTML, safe="")
    call(console_server, "PUT", "/config/environments/{0}/{1}/resources/{2}/values".format(environment, level, resource),
         {HTML: HTML})
    console.sign_in("reader")
    hashes = ["/environments/{0}".format(environment),
              "/environments/{0}/effective/{1}".format(environment, level),
              "/environments/{0}/history/values/{1}/{2}".format(environment, resource, level),
              "/environments/{0}/feed".format(environment)]
    for index, hash_path in enumerate(hashes):
        console.open(hash_path)
        console.wait_for(lambda: HTML in console.text())  # drawn, as text
        assert not console.find_all("#app img, #app script, #app b"), hash_path
        assert console.driver.title == "Fuel configuration console"
        console.screenshot("as-text-{0}".format(index))


def test_a_crafted_address_is_refused_in_words(console, console_server):
    """A hash no page has, a malformed %-escape, and a "." or ".." segment (which would take a request to another
    path of the API) each show what is wrong with the address, and no request leaves for it."""
    from tests.console.test_environments import call

    component = call(console_server, "POST", "/config/components", {"name": "c", "resource_definitions": [
        {"name": "r"}]})
    environment = call(console_server, "POST", "/config/environments", {
        "components": [component["id"]], "hierarchy_levels": ["nodes"]})["id"]
    console.sign_in("reader")
    effective = "/environments/{0}/effective/nodes/".format(environment)
    refused = {"/no-such-page": "No page at #/no-such-page",
               effective + "%E0%A4%A": "The address has a malformed %-escape: #" + effective + "%E0%A4%A",
               effective + "%2e%2e": "Not a path of the API: /config/environments/{0}/nodes/../".format(environment),
               effective + ".": "Not a path of the API: /config/environments/{0}/nodes/./".format(environment)}
    for hash_path, message in refused.items():
        console.open(hash_path)
        assert message in console.text(), (hash_path, console.text())
