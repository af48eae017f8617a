"""Secrets come only from the environment or a file, and every command, URL and environment
value that is recorded or shown goes through one redaction (redact/): the module's own rules.
That the harness, the supervisor's logs and the reports' pages use it: harness/tests/test_redact.py."""
import pytest

import redact
from redact import (MASK, SecretError, check_url_has_no_credentials, influx_token, redact_argv,
                    redact_command, redact_env, redact_text, redact_url)

TOKEN = "tok-9f8e7d6c5b4a"
PASSWORD = "s3cr3tpw"


@pytest.fixture(autouse=True)
def _no_registered_secrets(monkeypatch):
    monkeypatch.setattr(redact, "_registered", set())


def test_url_credentials_become_stars_and_the_rest_of_the_url_stays():
    assert redact_url(f"http://user:{PASSWORD}@127.0.0.1:8086/x") == "http://***@127.0.0.1:8086/x"
    assert redact_url("https://tok@influx.lab:8086") == "https://***@influx.lab:8086"
    assert redact_url("http://127.0.0.1:8086/query?a=b@c") == "http://127.0.0.1:8086/query?a=b@c"
    assert redact_url("mail root@lab1 about it") == "mail root@lab1 about it"


@pytest.mark.parametrize("argv", [
    ["pytest", "suites/", f"--influx-token={TOKEN}"],
    ["pytest", "suites/", "--influx-token", TOKEN],
    ["pytest", "suites/", f"--influx-url=http://u:{PASSWORD}@h:1/", f"--api-key={TOKEN}"],
    ["pytest", "suites/", "--password", PASSWORD, f"--influx-bucket={TOKEN}"],
    ["env", f"OFBENCH_INFLUX_TOKEN={TOKEN}", f"DB_PASSWORD={PASSWORD}", "pytest"],
])
def test_commands_keep_no_secret_value(argv):
    for line in (redact_command(argv, environ={}), " ".join(redact_argv(argv, environ={})),
                 redact_text(" ".join(argv), environ={})):
        assert TOKEN not in line and PASSWORD not in line, line
        assert MASK in line and line.startswith(argv[0])


def test_every_influx_option_value_is_redacted_and_other_options_kept():
    got = redact_command(["pytest", "suites/", "--dut=lab1", "-m", "quick",
                          "--influx-url=http://127.0.0.1:8086", "--influx-org", "lab"],
                         environ={})
    assert got == "pytest suites/ --dut=lab1 -m quick --influx-url=*** --influx-org ***"


def test_known_secret_values_are_masked_wherever_they_appear():
    env = {"OFBENCH_INFLUX_TOKEN": TOKEN, "LAB_PASS": PASSWORD, "OFBENCH_DUT": "lab1"}
    text = f"curl -H 'Authorization: Token {TOKEN}' -k {PASSWORD} lab1"
    assert redact_text(text, environ=env) == "curl -H 'Authorization: Token ***' -k *** lab1"
    redact.register_secret("from-a-file-123")
    assert redact_text("x from-a-file-123 y", environ={}) == "x *** y"
    assert redact_text("- 1 -", environ={"X_TOKEN": "-"}) == "- 1 -"  # too short to search


def test_environment_drops_secret_names_and_masks_url_credentials():
    env = {"OFBENCH_INFLUX_TOKEN": TOKEN, "OFBENCH_INFLUX_URL": f"http://u:{PASSWORD}@h:1/",
           "OFBENCH_LAB_PASSWORD": PASSWORD, "OFBENCH_SSH_KEY": "x" * 8, "AWS_SECRET": "y" * 8,
           "GH_AUTH": "z" * 8, "CREDENTIALS_FILE": "/c", "OFBENCH_SWITCH_LOOKUP": "dtree"}
    assert redact_env(env) == {"OFBENCH_INFLUX_URL": "http://***@h:1/",
                               "OFBENCH_SWITCH_LOOKUP": "dtree"}


def test_token_comes_from_the_file_then_the_environment_never_argv(tmp_path):
    f = tmp_path / "token"
    f.write_text(f"{TOKEN}\n")
    assert influx_token(str(f), "-", environ={"OFBENCH_INFLUX_TOKEN": "other-token"}) == TOKEN
    assert TOKEN in redact.known_secrets({})  # masked in any text from now on
    assert influx_token(None, "-", environ={"OFBENCH_INFLUX_TOKEN": "env-token"}) == "env-token"
    assert influx_token(None, "-", environ={}) == "-"
    with pytest.raises(SecretError, match=r"--influx-token: a token on the command line .*"
                                          r"OFBENCH_INFLUX_TOKEN.*--influx-token-file"):
        influx_token(None, TOKEN, environ={})
    with pytest.raises(SecretError, match=r"--influx-token-file: cannot read .*missing"):
        influx_token(str(tmp_path / "missing"), "-", environ={})
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(SecretError, match=r"--influx-token-file: .*empty is empty"):
        influx_token(str(tmp_path / "empty"), "-", environ={})


def test_a_url_with_credentials_is_refused_without_echoing_them():
    check_url_has_no_credentials("http://127.0.0.1:8086")
    check_url_has_no_credentials("local")
    with pytest.raises(SecretError) as e:
        check_url_has_no_credentials(f"http://user:{PASSWORD}@127.0.0.1:1/")
    assert PASSWORD not in str(e.value) and "--influx-url: http://***@127.0.0.1:1/" in str(e.value)
