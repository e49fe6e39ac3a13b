"""The console in a real browser: Debian's ``chromium`` (headless) through ``chromium-driver`` and Selenium,
against a ``nailgun-api`` in local mode with the test users (admin, member, reader).

The pages are the API's answers drawn in the browser; the database behind them is the same on either backend,
so these tests run on the SQLite pass only. Each test's screenshots go to ``build/test-output/console/``
(``NAILGUN_TEST_OUTPUT`` moves it), for a reviewer to look at.
"""
import os
import re
import shutil

import pytest

from tests.auth import LOCAL_USERS, auth_server, local_settings

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
OUTPUT = os.path.join(os.environ.get("NAILGUN_TEST_OUTPUT") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "build", "test-output"), "console")
#: how long a page may take to draw before a test gives up on it (seconds)
WAIT = 15

pytestmark = [
    pytest.mark.skipif(bool(os.environ.get("NAILGUN_TEST_DB_URL")),
                       reason="the console draws the API's answers: its tests run on the SQLite pass"),
]


def pytest_collection_modifyitems(items):
    for item in items:
        if str(item.fspath).startswith(os.path.dirname(__file__)):
            for mark in pytestmark:
                item.add_marker(mark)


@pytest.fixture(scope="module")
def console_server(request, migrated_db, tmp_path_factory):
    """A ``nailgun-api`` in local mode (the test users) for a module's tests."""
    server = auth_server(request.getfixturevalue("db_url"), local_settings(),
                         directory=str(tmp_path_factory.mktemp("console-server")))
    yield server
    server.stop()


def new_browser(tmp_path_factory):
    """A headless chromium. Without Debian's chromium and chromium-driver the test skips, or fails under CI
    (``CI=true``), where run_tests.sh installs them."""
    if not (CHROMIUM and CHROMEDRIVER):
        message = "needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--no-first-run", "--window-size=1400,1000",
                     "--user-data-dir=" + str(tmp_path_factory.mktemp("chromium-profile"))):
        options.add_argument(argument)
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One headless chromium for a module's tests (its cookies are cleared before each test)."""
    driver = new_browser(tmp_path_factory)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def second_browser(tmp_path_factory):
    """Another chromium, for a second user at the same time."""
    driver = new_browser(tmp_path_factory)
    yield driver
    driver.quit()


class Console:
    """One browser on the console of one server: sign in, go to a page, wait for it to be drawn, screenshots."""

    def __init__(self, driver, server, test_name):
        self.driver, self.server = driver, server
        self.output = os.path.join(OUTPUT, re.sub(r"[^\w.-]+", "_", test_name))
        self.shots = 0

    def open(self, hash_path=""):
        """Go to ``/ui/#<hash_path>`` and wait until the page is drawn. From another page of the console that is a
        change of the hash only (no new document, so the old page's ``ready`` would still say drawn): ``go``."""
        if hash_path and self.driver.current_url.startswith(self.server.url + "/ui/") and \
                not self.driver.find_element("id", "sign-in").is_displayed():
            return self.go(hash_path)
        self.driver.get(self.server.url + "/ui/" + ("#" + hash_path if hash_path else ""))
        if hash_path and not self.driver.find_element("id", "sign-in").is_displayed():
            self.ready()

    def go(self, hash_path):
        """Follow the in-page link to ``#<hash_path>`` as a click does, and wait until the page is drawn."""
        self.driver.execute_script(  # the hash already shown fires no hashchange: draw it again all the same
            "document.body.dataset.ready = '';"
            "if (location.hash === arguments[0]) window.dispatchEvent(new HashChangeEvent('hashchange'));"
            "else location.hash = arguments[0];", hash_path if hash_path.startswith("#") else "#" + hash_path)
        self.ready()

    def ready(self):
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(self.driver, WAIT).until(
            lambda driver: driver.execute_script("return document.body.dataset.ready === '1'"))

    def sign_in(self, user, password=None):
        self.driver.delete_all_cookies()
        self.driver.get(self.server.url + "/ui/")
        form = self.driver.find_element("css selector", "#sign-in form")
        form.find_element("name", "username").send_keys(user)
        form.find_element("name", "password").send_keys(LOCAL_USERS[user] if password is None else password)
        form.submit()
        if password is None:
            self.ready()

    def find(self, selector):
        return self.driver.find_element("css selector", selector)

    def find_all(self, selector):
        return self.driver.find_elements("css selector", selector)

    def text(self, selector="#app"):
        return self.find(selector).text

    def wait_for(self, condition, timeout=WAIT):
        """Wait until ``condition()`` is true; an element it read that the page drew again meanwhile, or that is
        not drawn yet, counts as not yet."""
        from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(self.driver, timeout, ignored_exceptions=(
            NoSuchElementException, StaleElementReferenceException)).until(lambda driver: condition())

    def screenshot(self, name):
        """Save the whole page as ``<output>/<test>/<n>-<name>.png``."""
        os.makedirs(self.output, exist_ok=True)
        self.shots += 1
        path = os.path.join(self.output, "{0:02d}-{1}.png".format(self.shots, name))
        self.driver.save_screenshot(path)
        return path


@pytest.fixture
def console(browser, console_server, request):
    return Console(browser, console_server, request.node.name)


@pytest.fixture
def other_console(second_browser, console_server, request):
    return Console(second_browser, console_server, request.node.name + "-second")
