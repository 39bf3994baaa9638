"""A real relying party: openid-client (npm, OpenID certified) against a live ``patchbay serve``."""


def test_openid_client_runs_every_flow_against_patchbay_serve(node, live_server):
    result = node("rp_flow.mjs", {"ISSUER": live_server.url, "EMAIL": "live@example.com", "PASSWORD": "correct horse battery"})
    assert result["issuer"] == live_server.url
    assert result["callbackIss"] == live_server.url  # RFC 9207, checked by openid-client too
    assert result["sub"] == live_server.user["id"] and result["email"] == "live@example.com"
    assert result["idTokenType"] == "id_token"
    assert result["hasRefresh"] is True
    assert result["userinfo"]["sub"] == live_server.user["id"]
    assert result["userinfo"]["organization_id"] == live_server.workspace_id
    assert "workspace.admin" in result["userinfo"]["permissions"]
    assert result["refreshedSameToken"] is True and result["refreshedIdTokenSub"] == live_server.user["id"]
    assert result["introspection"]["active"] is True and result["introspection"]["sub"] == live_server.user["id"]
    assert result["refreshAfterRevocation"] == "invalid_grant"
    assert result["logoutState"] == "bye-state"
    assert result["afterLogoutError"] == "login_required"
