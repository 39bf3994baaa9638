"""The token benchmark's peer, node-oidc-provider (tests/identity/node/oidc_provider_bench.mjs), as
``benchmarks/token_endpoint.py --processes 1,2`` runs it: two processes of Node's cluster module
sharing a port, every token verifying with the JWKS whichever worker signed it."""

import json
import os
import subprocess
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

from joserfc import jwt
from joserfc.jwk import KeySet

from tests.identity.conftest import NODE_DIR
from tests.serve_process import free_port

FORM = urlencode({"grant_type": "client_credentials", "client_id": "bench", "client_secret": "bench-secret", "scope": "api"}).encode()


def worker_pids(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def fetch(url: str, data: bytes | None = None) -> dict:
    with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=30) as response:  # a new connection each
        return json.loads(response.read())


def test_two_processes_sign_with_one_key(node_peers):
    port = free_port()
    process = subprocess.Popen(
        ["node", str(NODE_DIR / "oidc_provider_bench.mjs")],
        cwd=NODE_DIR,
        env={**os.environ, "PORT": str(port), "PROCESSES": "2"},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        started = json.loads(process.stdout.readline())
        assert started == {"issuer": f"http://127.0.0.1:{port}", "processes": 2, "scheduling": "rr"}
        workers = worker_pids(process.pid)
        assert len(workers) == 2
        # the primary hands the connections to the workers in turn: each request below is on a new
        # connection, so both workers sign tokens and serve the JWKS
        keys = [fetch(started["issuer"] + "/jwks") for _ in range(4)]
        assert all(key == keys[0] for key in keys)
        key_set = KeySet.import_key_set(keys[0])
        for _ in range(8):
            token = fetch(started["issuer"] + "/token", FORM)["access_token"]
            assert jwt.decode(token, key_set).claims["aud"] == "urn:bench:api"
    finally:
        process.terminate()
        assert process.wait(timeout=15) == 0
    for pid in workers:  # the primary stops its workers before it ends
        assert not Path(f"/proc/{pid}").exists()
