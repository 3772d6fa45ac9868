"""The official Kubernetes Python client (Debian's python3-kubernetes) against
nodenet's control plane, run by controlplane-python-client.test.ts:

    /usr/bin/python3 test/python-client.py KUBECONFIG NAMESPACE

1. list: a Deployment of 1 replica, its Pod listed by label;
2. watch with bookmarks: Watch().stream(list_namespaced_pod,
   allow_watch_bookmarks=True) from the list's resourceVersion, across a
   scale of the Deployment to 3 and back to 1;
3. a raw request with ?watch=True (what the client sends for a watch) and
   with ?watch=False.

Prints one JSON object on stdout with what it saw; the test judges it.
"""
import json
import sys
import threading
import time

from kubernetes import client, config, watch

kubeconfig, ns = sys.argv[1], sys.argv[2]
config.load_kube_config(config_file=kubeconfig)
core = client.CoreV1Api()
apps = client.AppsV1Api()
out = {}


def pods_named():
    return sorted(p.metadata.name for p in core.list_namespaced_pod(ns, label_selector="app=py").items)


def wait(what, cond, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for {what}; saw so far: {json.dumps(out)}")


core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
apps.create_namespaced_deployment(ns, {
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "py"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "py"}},
        "template": {"metadata": {"labels": {"app": "py"}},
                     "spec": {"containers": [{"name": "c", "image": "nodenet/host", "command": ["sleep", "60"]}]}},
    },
})
wait("the first Pod", lambda: len(pods_named()) == 1)

# 1. list
listed = core.list_namespaced_pod(ns, label_selector="app=py")
out["listed"] = [p.metadata.name for p in listed.items]
out["listRV"] = listed.metadata.resource_version

# 2. watch with bookmarks, from the list's resourceVersion, across a scale up and down
events = []
errors = []
w = watch.Watch()


def consume():
    try:
        for e in w.stream(core.list_namespaced_pod, ns, label_selector="app=py", resource_version=out["listRV"],
                          allow_watch_bookmarks=True, timeout_seconds=60):
            if e["type"] == "BOOKMARK":
                events.append({"type": "BOOKMARK", "rv": e["raw_object"]["metadata"]["resourceVersion"],
                               "kind": e["raw_object"].get("kind")})
            else:
                events.append({"type": e["type"], "name": e["object"].metadata.name,
                               "rv": e["object"].metadata.resource_version})
    except Exception as ex:  # reported, judged by the test
        errors.append(repr(ex))


t = threading.Thread(target=consume, daemon=True)
t.start()
added = lambda: {e["name"] for e in events if e["type"] == "ADDED"}
deleted = lambda: {e["name"] for e in events if e["type"] == "DELETED"}

apps.patch_namespaced_deployment_scale("py", ns, {"spec": {"replicas": 3}})
wait("3 Pods", lambda: len(pods_named()) == 3)
out["afterScaleUp"] = pods_named()
wait("2 ADDED events", lambda: len(added()) >= 2 or errors)
apps.patch_namespaced_deployment_scale("py", ns, {"spec": {"replicas": 1}})
wait("1 Pod", lambda: len(pods_named()) == 1)
out["afterScaleDown"] = pods_named()
wait("2 DELETED events", lambda: len(deleted()) >= 2 or errors)
wait("a bookmark after the scale down",
     lambda: any(e["type"] == "BOOKMARK" and int(e["rv"]) >= int(max(x["rv"] for x in events if x["type"] != "BOOKMARK"))
                 for e in events) or errors)
w.stop()
t.join(10)
out["events"] = events
out["watchErrors"] = errors
out["watchThreadEnded"] = not t.is_alive()

# 3. the raw request: ?watch=True is a watch (a stream of events), ?watch=False a list
raw = {}
for value in ("True", "False"):
    resp = core.api_client.call_api(
        f"/api/v1/namespaces/{ns}/pods", "GET",
        query_params=[("watch", value), ("resourceVersion", out["listRV"]), ("timeoutSeconds", "1")],
        header_params={"Accept": "application/json"}, auth_settings=["BearerToken"], _preload_content=False)[0]
    body = resp.data.decode("utf-8")
    lines = [json.loads(x) for x in body.splitlines() if x.strip()]
    raw[value] = {"lines": len(lines), "types": [x.get("type") for x in lines], "kinds": [x.get("kind") for x in lines]}
out["raw"] = raw
print(json.dumps(out))
