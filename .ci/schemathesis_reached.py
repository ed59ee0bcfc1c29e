"""After a schemathesis run: how many operations reached a 2xx at least
once (from the statuses .ci/schemathesis_hooks.py logged), and a failure
naming each that did not. Exclusions are the script's own (initialize,
fuzzed apart; the live pages, never fuzzed: a stream never ends).

Usage: schemathesis_reached.py STATUS_LOG OPENAPI_URL"""

import collections
import json
import sys
import urllib.request

# Initialize is fuzzed apart; the document is what the run is loaded from.
EXCLUDED = {("POST", "/api/admin/initialize"), ("GET", "/api/openapi.json")}

log, openapi_url = sys.argv[1], sys.argv[2]
with urllib.request.urlopen(openapi_url, timeout=30) as response:
    document = json.load(response)
operations = {
    (method.upper(), path)
    for path, item in document["paths"].items()
    for method in item
    if method in ("get", "post", "put", "patch", "delete") and not path.endswith("/live")
} - EXCLUDED
statuses = collections.defaultdict(collections.Counter)
with open(log, encoding="utf-8") as lines:
    for line in lines:
        method, path, status, _code = line.split()
        statuses[(method, path)][int(status)] += 1
missed = sorted(op for op in operations if not any(200 <= s < 300 for s in statuses[op]))
print(f"operations that reached a 2xx: {len(operations) - len(missed)} of {len(operations)}"
      f" (excluded: the live pages; initialize, fuzzed apart; the OpenAPI document)")
for method, path in missed:
    print(f"  never a 2xx: {method} {path} {dict(statuses[(method, path)])}", file=sys.stderr)
sys.exit(1 if missed else 0)
