"""Settings: flag > environment > TOML file > default, every value read by pydantic as its field's
type, and clear messages naming the source of a bad value."""

import dataclasses
from pathlib import Path

import attrs
import pytest
from pydantic import BaseModel, Field

from patchbay.core.settings import Settings, SettingsError, SmtpSettings, load_section, load_settings


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


def test_values_are_read_by_pydantic_as_the_fields_types(tmp_path):
    config = write_config(tmp_path, 'log_level = "DEBUG"\ntrusted_proxies = ["10.0.0.0/8"]\n[smtp]\nusername = 1234\n')
    settings = load_settings({}, {"PATCHBAY_CONFIG": config, "PATCHBAY_WEBHOOKS_LONG_TAIL_SCHEDULE": "60, 120,", "PATCHBAY_SMTP_STARTTLS": "on"})
    assert settings.webhooks.long_tail_schedule == ["60", "120"] and settings.trusted_proxies == ["10.0.0.0/8"]
    assert settings.smtp.username == "1234" and settings.smtp.starttls is True  # a TOML number may stand for a string
    assert isinstance(settings.smtp, SmtpSettings) and Settings.model_fields["data_dir"].default == Path("./patchbay-data")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("port = true\n", "port (config file): True is not valid (expected a whole number)"),
        ("[smtp]\nport = 2.5\n", "[smtp] port: 2.5 is not valid"),
        ("[smtp]\nhost = true\n", "[smtp] host: True is not valid"),
        ("[webhooks]\nmax_retries = 'many'\n", "[webhooks] max_retries: 'many' is not valid"),
    ],
)
def test_a_value_of_the_wrong_type_is_named_with_its_source(tmp_path, config, message):
    with pytest.raises(SettingsError) as raised:
        load_settings({}, {"PATCHBAY_CONFIG": write_config(tmp_path, config)})
    assert message in str(raised.value)


@attrs.define(kw_only=True)
class AttrsSection:
    api_key: str | None = None
    retries: int = 3
    live: bool = False
    hosts: list[str] = attrs.field(factory=list)


@dataclasses.dataclass(kw_only=True)
class DataclassSection:
    api_key: str | None = None
    retries: int = 3
    live: bool = False
    hosts: list[str] = dataclasses.field(default_factory=list)


class PydanticSection(BaseModel):
    api_key: str | None = None
    retries: int = 3
    live: bool = False
    hosts: list[str] = Field(default_factory=list)


@pytest.mark.parametrize("cls", [AttrsSection, DataclassSection, PydanticSection])
def test_a_plugin_section_of_any_kind_is_read_like_a_core_one(cls):
    environ = {"PATCHBAY_PAY_RETRIES": "5", "PATCHBAY_PAY_HOSTS": "a.example, b.example"}
    section = load_section("pay", cls, {"api_key": "k", "live": "yes", "retries": 1}, environ)
    assert isinstance(section, cls)
    assert (section.api_key, section.retries, section.live, section.hosts) == ("k", 5, True, ["a.example", "b.example"])  # the variable beats the table
    with pytest.raises(SettingsError, match=r"^PATCHBAY_PAY_RETRIES: 'x' is not valid"):
        load_section("pay", cls, {}, {"PATCHBAY_PAY_RETRIES": "x"})
    with pytest.raises(SettingsError, match=r"^\[pay\]: unknown key\(s\) colour$"):
        load_section("pay", cls, {"colour": "red"}, {})
    assert load_section("pay", cls, {}, {}) == cls()
