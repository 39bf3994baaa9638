"""The importer: it adds a file only for a provider that has none (a corrected file is never
touched), says what it added and skipped, gives a new alias what its provider's file checked by
hand, and knows every row of the facts; and the rules it maps the facts with (placeholders,
"a || b" fallbacks, aliases, default credential injection, skips)."""

import csv
import io
import os
import shutil
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from patchbay.providers import catalog
from patchbay.providers.catalog import import_facts

FACTS = Path(os.environ.get("PATCHBAY_PROVIDER_FACTS", import_facts.DEFAULT_FACTS))
needs_facts = pytest.mark.skipif(not FACTS.exists(), reason=f"the provider facts file is not at {FACTS}")
COLUMNS = (
    "slug display_name categories auth_mode alias_of authorization_url token_url default_scopes scope_separator "
    "pkce token_request_auth_method api_base_url credential_headers credential_query health_check "
    "rate_limit_reset_header retry_after_header rate_limit_remaining_header connection_params has_webhooks"
).split()


def row(**facts):
    return {**dict.fromkeys(COLUMNS, ""), "slug": "acme", "display_name": "Acme", "categories": "crm", **facts}


def facts_file(path: Path, *rows) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def run(*argv) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert import_facts.main([str(arg) for arg in argv]) == 0
    return out.getvalue()


def test_the_importer_adds_missing_files_and_never_touches_a_corrected_one(tmp_path):
    facts = facts_file(
        tmp_path / "facts.csv",
        row(slug="acme", auth_mode="API_KEY", api_base_url="https://api.acme.io", credential_headers='{"X-Key": "${apiKey}"}'),
        row(slug="beta", display_name="Beta", auth_mode="BASIC", api_base_url="https://beta.io/api", rate_limit_reset_header="X-Reset"),
        row(slug="gamma", auth_mode="OAUTH1", api_base_url="https://gamma.io"),
    )
    out = tmp_path / "definitions"
    out.mkdir()
    corrected = '# checked by hand\nname = "acme"\ndisplay_name = "Acme Corp"\n'
    (out / "acme.toml").write_text(corrected)

    dry = run("--facts", facts, "--out", out, "--dry-run")
    assert "would add 1 providers" in dry and not (out / "beta.toml").exists()

    printed = run("--facts", facts, "--out", out)
    assert (out / "acme.toml").read_text() == corrected
    assert f"added 1 providers to {out}: beta" in printed
    assert "left 1 providers that have a file as they are" in printed
    assert "skipped 1 rows that cannot be definitions:" in printed and "gamma  auth mode OAUTH1 is not supported" in printed
    beta = catalog.definition("beta", out)  # the written file loads like any other
    assert beta.credential_headers == {"authorization": "Basic {basic}"} and beta.retry_headers.reset_at == "x-reset"
    assert (out / "beta.toml").read_text().startswith('name = "beta"\ndisplay_name = "Beta"\ncategory = "crm"\n')

    again = run("--facts", facts, "--out", out)
    assert "added 0 providers" in again and "left 2 providers" in again


def test_a_new_alias_takes_the_hand_checked_facts_of_its_provider_on_the_same_token_server(tmp_path):
    oauth = dict(auth_mode="OAUTH2", authorization_url="https://${connectionConfig.host}/auth", api_base_url="https://api.acme.io")
    facts = facts_file(
        tmp_path / "facts.csv",
        row(slug="acme", token_url="https://${connectionConfig.host}/token", **oauth),
        row(slug="acme-eu", alias_of="acme", categories="hr"),
        row(slug="acme-other", alias_of="acme", token_url="https://${connectionConfig.host}/v2/token"),
        row(slug="acme-key", alias_of="acme", auth_mode="API_KEY", credential_headers='{"x-key": "${apiKey}"}'),
        row(slug="acme-cc", alias_of="acme", auth_mode="OAUTH2_CC", token_url="https://${connectionConfig.host}/token"),
    )
    out = tmp_path / "definitions"
    out.mkdir()
    # the provider's own file, corrected by hand: its revocation URL and the hosts its OAuth app may reach
    (out / "acme.toml").write_text(
        'name = "acme"\nauth_mode = "oauth2"\ntoken_url = "https://{host}/token"\nrevocation_url = "https://{host}/revoke"\noauth_hosts = ["login.acme.io", "*.acme.eu"]\n'
    )
    run("--facts", facts, "--out", out)
    eu = catalog.definition("acme-eu", out)
    assert eu.revocation_url == "https://{host}/revoke" and eu.oauth_hosts == ("login.acme.io", "*.acme.eu") and eu.category == "hr"
    other = catalog.definition("acme-other", out)  # another token endpoint: nothing inherited
    assert other.revocation_url is None and other.oauth_hosts == ()
    assert catalog.definition("acme-key", out).revocation_url is None
    cc = catalog.definition("acme-cc", out)  # client credentials at the same token endpoint: its hosts, no revocation
    assert cc.oauth_hosts == ("login.acme.io", "*.acme.eu") and cc.revocation_url is None


@needs_facts
def test_every_row_of_the_facts_has_a_file_or_a_reason(tmp_path):
    """Nothing to import from the facts into the committed catalog: every row the mapping supports
    has its file, and each row it cannot map says why."""
    out = tmp_path / "definitions"
    shutil.copytree(catalog.DEFINITIONS, out)
    result = import_facts.import_facts(FACTS, out)
    assert result.added == {}
    assert len(result.kept) >= 850 and all(reason for _, reason in result.skipped)
    supported_but_skipped = [slug for slug, reason in result.skipped if "auth mode" not in reason]
    assert len(supported_but_skipped) <= 25, supported_but_skipped


def test_placeholders_become_connection_params_and_credential_fields():
    assert import_facts.translate("https://${connectionConfig.subdomain}.acme.io", credentials=False) == "https://{subdomain}.acme.io"
    assert import_facts.translate("Token ${apiKey}", credentials=True) == "Token {api_key}"
    assert import_facts.translate("Basic ${base64(${credentials.username}:${credentials.password})}", credentials=True) == "Basic {basic}"
    assert import_facts.translate('{"literal": 1}', credentials=True) == '{{"literal": 1}}'
    for computed in ("${now:X}", "${clientId}", "${base64(${connectionConfig.tenant}+${credentials.username})}"):
        with pytest.raises(import_facts.Skip):
            import_facts.translate(f"x {computed}", credentials=True)
    with pytest.raises(import_facts.Skip):  # a credential may not appear in a URL
        import_facts.translate("https://api.acme.io/bot${apiKey}", credentials=False)


def test_fallback_urls_become_a_template_with_defaults():
    solved = import_facts.resolve_fallback("https://${connectionConfig.host}/oauth || https://login.acme.io/oauth", credentials=False)
    assert solved == ("https://{host}/oauth", {"host": "login.acme.io"}, set())
    same_param = import_facts.resolve_fallback(
        "https://${connectionConfig.sub}-${connectionConfig.region}.acme.io || https://api-${connectionConfig.region}.acme.io",
        credentials=False,
    )
    assert same_param == ("https://{sub}-{region}.acme.io", {"sub": "api"}, set())
    header = import_facts.resolve_fallback("${connectionConfig.version} || 2024-01-01", credentials=True)
    assert header == ("{version}", {"version": "2024-01-01"}, set())
    # b uses another parameter: a (the general form) is kept and b's parameter is no longer needed
    other = import_facts.resolve_fallback("https://${connectionConfig.hostname} || https://${connectionConfig.subdomain}.acme.io", credentials=False)
    assert other == ("https://{hostname}", {}, {"subdomain"})


def test_map_row_fills_in_oauth_facts_and_default_injection():
    definition = import_facts.map_row(
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
    basic = import_facts.map_row(row(auth_mode="BASIC", api_base_url="https://acme.io"))
    assert basic["credential_headers"] == {"authorization": "Basic {basic}"} and basic["capabilities"] == ("proxy",)
    query = import_facts.map_row(
        row(auth_mode="OAUTH2_CC", token_url="https://acme.io/t", api_base_url="https://acme.io", credential_query='{"token": "${accessToken}"}')
    )
    assert query["credential_headers"] == {} and query["credential_query"] == {"token": "{access_token}"}


def test_oauth_login_asks_only_for_parameters_a_template_uses():
    facts = dict(api_base_url="https://${connectionConfig.subdomain}.acme.io", connection_params="realmId subdomain")
    notes: list[str] = []
    oauth = import_facts.map_row(row(auth_mode="OAUTH2", authorization_url="https://acme.io/a", token_url="https://acme.io/t", **facts), notes)
    assert oauth["connection_params"] == ("subdomain",)  # realmId arrives in the callback, not before the login
    assert notes == ["connection parameter(s) realmId used by no template left out"]
    api_key = import_facts.map_row(row(auth_mode="API_KEY", credential_headers='{"x-key": "${apiKey}"}', **facts))
    assert api_key["connection_params"] == ("realmId", "subdomain")  # typed in at connect time


def test_map_row_refuses_what_a_definition_cannot_say():
    for facts, reason in [
        (row(auth_mode="OAUTH1", api_base_url="https://acme.io"), "auth mode OAUTH1 is not supported"),
        (row(auth_mode="API_KEY", api_base_url="https://acme.io"), "no credential injection"),
        (row(auth_mode="API_KEY"), "no API base URL"),
    ]:
        with pytest.raises(import_facts.Skip, match=reason):
            import_facts.map_row(facts)


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
    child = import_facts.resolve_alias("child", rows)
    assert (child["auth_mode"], child["token_url"], child["api_base_url"]) == ("OAUTH2", "https://a.io/token", "https://hr.a.io")
    assert (child["display_name"], child["categories"], child["has_webhooks"]) == ("Child", "hr", "yes")
    basic = import_facts.resolve_alias("basic", rows)
    assert basic["auth_mode"] == "BASIC" and basic["token_url"] == "" and basic["api_base_url"] == "https://api.a.io"
    with pytest.raises(import_facts.Skip, match="does not resolve"):
        import_facts.resolve_alias("loop", rows)


def test_categories_drop_tags_and_pick_the_specific_one_as_primary():
    assert import_facts._categories(row(categories="marketing support crm popular")) == ("crm", ("marketing", "support"))
    assert import_facts._categories(row(categories="mcp")) == ("other", ())
    assert import_facts._categories(row(slug="acme-ads", categories="marketing")) == ("ads", ("marketing",))
