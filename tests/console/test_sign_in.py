"""Signing in and out of the console, and what its cookie and CSRF token let a browser (or another site) do."""
import json
import urllib.error
import urllib.request


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
