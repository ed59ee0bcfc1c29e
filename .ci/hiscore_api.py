"""The few HTTP calls the schemathesis stage makes itself (seeding, and
the rows its hooks make for a call), to the server at HISCORE_URL."""

import json
import os
import urllib.error
import urllib.request

URL = os.environ["HISCORE_URL"]


def call(method, path, body=None, token=None):
    """One request: (status, decoded JSON answer)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(URL + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            status, text = response.status, response.read()
    except urllib.error.HTTPError as refused:
        status, text = refused.code, refused.read()
    return status, (json.loads(text) if text else None)


def ok(answer):
    """The body of a 2xx answer; anything else stops the caller."""
    status, body = answer
    if not 200 <= status < 300:
        raise RuntimeError(f"a request the stage made itself was answered {status}: {body}")
    return body
