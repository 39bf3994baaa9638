"""Settings: flag > environment > TOML file > default, and clear messages for bad values."""

import pytest

from patchbay.core.settings import SettingsError, load_settings


def write_config(tmp_path, text):
    path = tmp_path / "patchbay.toml"
    path.write_text(text)
    return str(path)


def test_defaults():
    settings = load_settings({}, {})
    assert settings.public_base_url == "http://127.0.0.1:8080"
    assert settings.resolved_issuer == "http://127.0.0.1:8080"
    moved = load_settings({"port": 19081}, {})
    assert (moved.public_base_url, moved.resolved_issuer) == ("http://127.0.0.1:19081", "http://127.0.0.1:19081")
    assert settings.scheduler is True and settings.allow_insecure_targets is False
    assert settings.resolved_database_url.startswith("sqlite+aiosqlite:///")
    assert settings.resolved_database_url.endswith("patchbay-data/patchbay.db")
    assert settings.rate_limits["oidc_token"] == "20/minute"


def test_precedence_flag_over_env_over_file(tmp_path):
    config = write_config(tmp_path, 'base_url = "https://file.example"\nport = 7000\nscheduler = false\n')
    from_file = load_settings({}, {"PATCHBAY_CONFIG": config})
    assert (from_file.base_url, from_file.port, from_file.scheduler) == ("https://file.example", 7000, False)
    from_env = load_settings({}, {"PATCHBAY_CONFIG": config, "PATCHBAY_BASE_URL": "https://env.example", "PATCHBAY_SCHEDULER": "yes"})
    assert (from_env.base_url, from_env.port, from_env.scheduler) == ("https://env.example", 7000, True)
    from_flag = load_settings({"base_url": "https://flag.example", "port": 9000}, {"PATCHBAY_CONFIG": config, "PATCHBAY_BASE_URL": "https://env.example"})
    assert (from_flag.base_url, from_flag.port) == ("https://flag.example", 9000)


def test_secret_key_list_and_sections(tmp_path):
    config = write_config(tmp_path, '[smtp]\nhost = "mail.local"\nport = 2525\n[providers.hubspot]\nclient_id = "abc"\n[rate_limits]\noidc_token = "off"\n')
    settings = load_settings({}, {"PATCHBAY_CONFIG": config, "PATCHBAY_SECRET_KEY": "new, old", "PATCHBAY_SMTP_PORT": "2526"})
    assert settings.secret_key == ["new", "old"]
    assert (settings.smtp.host, settings.smtp.port) == ("mail.local", 2526)
    assert settings.providers == {"hubspot": {"client_id": "abc"}}
    assert settings.rate_limits["oidc_token"] == "off" and settings.rate_limits["oidc_register"] == "5/minute"


@pytest.mark.parametrize(
    ("flags", "environ", "config", "message"),
    [
        ({}, {"PATCHBAY_PORT": "eighty"}, None, "PATCHBAY_PORT: 'eighty' is not valid"),
        ({}, {"PATCHBAY_SCHEDULER": "maybe"}, None, "PATCHBAY_SCHEDULER"),
        ({}, {"PATCHBAY_BASE_URL": "ftp://x"}, None, "PATCHBAY_BASE_URL"),
        ({}, {"PATCHBAY_DATABASE_URL": "mysql://x"}, None, "PATCHBAY_DATABASE_URL"),
        ({"port": 70000}, {}, None, "not a TCP port"),
        ({}, {}, "colour = 1\n", "unknown setting(s) colour"),
        ({}, {}, "[smtp]\nhots = 1\n", "[smtp]: unknown key(s) hots"),
        ({}, {}, "[rate_limits]\noidc_tokens = '1/minute'\n", "unknown limit 'oidc_tokens'"),
        ({}, {}, "[rate_limits]\noidc_token = 'lots'\n", "[rate_limits] oidc_token"),
        ({}, {}, "port = [1\n", "is not valid TOML"),
    ],
)
def test_bad_values_are_named(tmp_path, flags, environ, config, message):
    if config is not None:
        environ = {**environ, "PATCHBAY_CONFIG": write_config(tmp_path, config)}
    with pytest.raises(SettingsError) as raised:
        load_settings(flags, environ)
    assert message in str(raised.value)


def test_missing_config_file_is_named(tmp_path):
    with pytest.raises(SettingsError, match="cannot read"):
        load_settings({}, {"PATCHBAY_CONFIG": str(tmp_path / "absent.toml")})
