"""The generator: deterministic, its committed output up to date, and the mapping rules it applies
to the facts (placeholders, "a || b" fallbacks, aliases, default credential injection, skips)."""

import os
from pathlib import Path

import pytest

from patchbay.providers.catalog import generate

FACTS = Path(os.environ.get("PATCHBAY_PROVIDER_FACTS", generate.DEFAULT_FACTS))
COMMITTED = Path(generate.__file__).parent / "data"
needs_facts = pytest.mark.skipif(not FACTS.exists(), reason=f"the provider facts file is not at {FACTS}")


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.glob("*.json"))}


@needs_facts
def test_generator_is_deterministic_and_the_committed_output_is_up_to_date(tmp_path, capsys):
    first, second = tmp_path / "one", tmp_path / "two"
    assert generate.main(["--facts", str(FACTS), "--out", str(first)]) == 0
    summary = capsys.readouterr().out
    assert generate.main(["--facts", str(FACTS), "--out", str(second), "--quiet"]) == 0
    assert _files(first) == _files(second)
    assert _files(first) == _files(COMMITTED), "run providers/catalog/generate.py and commit its output"
    # the summary lists every skipped row with its reason
    assert "skipped" in summary and "walmart" in summary and "cannot be expressed" in summary


@needs_facts
def test_stale_category_files_are_removed(tmp_path):
    (tmp_path / "gone.json").write_text("[]")
    generate.main(["--facts", str(FACTS), "--out", str(tmp_path), "--quiet"])
    assert not (tmp_path / "gone.json").exists()


def row(**facts):
    base = dict.fromkeys(
        "slug display_name categories auth_mode alias_of authorization_url token_url default_scopes scope_separator "
        "pkce token_request_auth_method api_base_url credential_headers credential_query health_check "
        "rate_limit_reset_header retry_after_header rate_limit_remaining_header connection_params has_webhooks".split(),
        "",
    )
    return {**base, "slug": "acme", "display_name": "Acme", "categories": "crm", **facts}


def test_placeholders_become_connection_params_and_credential_fields():
    assert generate.translate("https://${connectionConfig.subdomain}.acme.io", credentials=False) == "https://{subdomain}.acme.io"
    assert generate.translate("Token ${apiKey}", credentials=True) == "Token {api_key}"
    assert generate.translate("Basic ${base64(${credentials.username}:${credentials.password})}", credentials=True) == "Basic {basic}"
    assert generate.translate('{"literal": 1}', credentials=True) == '{{"literal": 1}}'
    for computed in ("${now:X}", "${clientId}", "${base64(${connectionConfig.tenant}+${credentials.username})}"):
        with pytest.raises(generate.Skip):
            generate.translate(f"x {computed}", credentials=True)
    with pytest.raises(generate.Skip):  # a credential may not appear in a URL
        generate.translate("https://api.acme.io/bot${apiKey}", credentials=False)


def test_fallback_urls_become_a_template_with_defaults():
    solved = generate.resolve_fallback("https://${connectionConfig.host}/oauth || https://login.acme.io/oauth", credentials=False)
    assert solved == ("https://{host}/oauth", {"host": "login.acme.io"}, set())
    same_param = generate.resolve_fallback(
        "https://${connectionConfig.sub}-${connectionConfig.region}.acme.io || https://api-${connectionConfig.region}.acme.io",
        credentials=False,
    )
    assert same_param == ("https://{sub}-{region}.acme.io", {"sub": "api"}, set())
    header = generate.resolve_fallback("${connectionConfig.version} || 2024-01-01", credentials=True)
    assert header == ("{version}", {"version": "2024-01-01"}, set())
    # b uses another parameter: a (the general form) is kept and b's parameter is no longer needed
    other = generate.resolve_fallback("https://${connectionConfig.hostname} || https://${connectionConfig.subdomain}.acme.io", credentials=False)
    assert other == ("https://{hostname}", {}, {"subdomain"})


def test_map_row_fills_in_oauth_facts_and_default_injection():
    definition = generate.map_row(
        row(
            auth_mode="OAUTH2",
            authorization_url="https://acme.io/authorize",
            token_url="https://acme.io/token",
            default_scopes="read write",
            scope_separator=",",
            token_request_auth_method="basic",
            api_base_url="https://${connectionConfig.subdomain}.acme.io || https://www.acme.io",
            connection_params="subdomain",
            rate_limit_reset_header="X-RateLimit-Reset",
            health_check="GET v1/me",
            has_webhooks="yes",
        )
    )
    assert definition["auth_mode"] == "oauth2" and definition["pkce"] is True
    assert definition["scopes"] == ("read", "write") and definition["scope_separator"] == ","
    assert definition["token_auth_method"] == "client_secret_basic"
    assert definition["api_base_url"] == "https://{subdomain}.acme.io"
    assert definition["connection_param_defaults"] == {"subdomain": "www"}
    assert definition["credential_headers"] == {"authorization": "Bearer {access_token}"}
    assert definition["retry_headers"] == {"reset_at": "x-ratelimit-reset"}
    assert definition["health_check"] == "GET /v1/me"
    assert definition["capabilities"] == ("oauth", "proxy", "webhook_receive") and definition["webhooks"] is True
    basic = generate.map_row(row(auth_mode="BASIC", api_base_url="https://acme.io"))
    assert basic["credential_headers"] == {"authorization": "Basic {basic}"} and basic["capabilities"] == ("proxy",)
    query = generate.map_row(
        row(auth_mode="OAUTH2_CC", token_url="https://acme.io/t", api_base_url="https://acme.io", credential_query='{"token": "${accessToken}"}')
    )
    assert query["credential_headers"] == {} and query["credential_query"] == {"token": "{access_token}"}


def test_oauth_login_asks_only_for_parameters_a_template_uses():
    facts = dict(api_base_url="https://${connectionConfig.subdomain}.acme.io", connection_params="realmId subdomain")
    notes: list[str] = []
    oauth = generate.map_row(row(auth_mode="OAUTH2", authorization_url="https://acme.io/a", token_url="https://acme.io/t", **facts), notes)
    assert oauth["connection_params"] == ("subdomain",)  # realmId arrives in the callback, not before the login
    assert notes == ["connection parameter(s) realmId used by no template left out"]
    api_key = generate.map_row(row(auth_mode="API_KEY", credential_headers='{"x-key": "${apiKey}"}', **facts))
    assert api_key["connection_params"] == ("realmId", "subdomain")  # typed in at connect time


def test_map_row_refuses_what_a_definition_cannot_say():
    for facts, reason in [
        (row(auth_mode="OAUTH1", api_base_url="https://acme.io"), "auth mode OAUTH1 is not supported"),
        (row(auth_mode="API_KEY", api_base_url="https://acme.io"), "no credential injection"),
        (row(auth_mode="API_KEY"), "no API base URL"),
    ]:
        with pytest.raises(generate.Skip, match=reason):
            generate.map_row(facts)


def test_aliases_inherit_their_targets_facts_but_not_another_auth_mode():
    rows = {
        "base": row(
            slug="base",
            auth_mode="OAUTH2",
            authorization_url="https://a.io/auth",
            token_url="https://a.io/token",
            api_base_url="https://api.a.io",
            has_webhooks="yes",
        ),
        "child": row(slug="child", display_name="Child", categories="hr", alias_of="base", api_base_url="https://hr.a.io"),
        "basic": row(slug="basic", alias_of="base", auth_mode="BASIC"),
        "loop": row(slug="loop", alias_of="loop"),
    }
    child = generate.resolve_alias("child", rows)
    assert (child["auth_mode"], child["token_url"], child["api_base_url"]) == ("OAUTH2", "https://a.io/token", "https://hr.a.io")
    assert (child["display_name"], child["categories"], child["has_webhooks"]) == ("Child", "hr", "yes")
    basic = generate.resolve_alias("basic", rows)
    assert basic["auth_mode"] == "BASIC" and basic["token_url"] == "" and basic["api_base_url"] == "https://api.a.io"
    with pytest.raises(generate.Skip, match="does not resolve"):
        generate.resolve_alias("loop", rows)


def test_categories_drop_tags_and_pick_the_specific_one_as_primary():
    assert generate._categories(row(categories="marketing support crm popular")) == ("crm", ("marketing", "support"))
    assert generate._categories(row(categories="mcp")) == ("other", ())
    assert generate._categories(row(slug="acme-ads", categories="marketing")) == ("ads", ("marketing",))


def test_every_correction_says_why():
    for table in (generate.CORRECTIONS, generate.FACT_FIXES):
        for slug, (fields, why) in table.items():
            assert fields and len(why) > 20, slug
