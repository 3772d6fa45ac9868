/**
 * Query parameters over the wire, read as kube-apiserver converts them
 * (net/query.ts): every spelling of a boolean a client may send (`True`
 * from the Python client, a bare `?watch`, `yes`), integers as
 * strconv.ParseInt takes them, `timeoutSeconds` 0 and negative as upstream,
 * `orphanDependents` as a query parameter, `force` refused outside apply,
 * and `pretty`. No root needed.
 */
import t from 'tap';
import { testControlPlane } from '../controlplane/testing/control-plane.js';
import { waitFor } from '../agent/src/testing/wait.js';

const env = testControlPlane(t, 'nn-cp-query-', { bookmarkEveryMs: 200 });
const SVCS = '/api/v1/namespaces/default/services';
const svc = (name: string) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { ports: [{ port: 80 }] } });
const lines = (body: string) => body.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { type: string; object: { kind?: string; metadata?: { name?: string } } });

t.test('watch: any value but absent, false and 0 asks for a watch; a list otherwise', async (t) => {
  const rv = ((await env.call('GET', SVCS)).json['metadata'] as { resourceVersion: string }).resourceVersion;
  t.equal((await env.call('POST', SVCS, svc('w1'))).code, 201);
  for (const v of ['watch', 'watch=', 'watch=True', 'watch=true', 'watch=1', 'watch=yes', 'watch=TRUE']) {
    const r = await env.call('GET', `${SVCS}?${v}&resourceVersion=${rv}&timeoutSeconds=1`);
    t.equal(r.code, 200, v);
    t.same(lines(r.body).map((e) => `${e.type} ${e.object.metadata?.name}`), ['ADDED w1'], `?${v} is a watch: the event after the revision`);
  }
  for (const v of ['watch=false', 'watch=False', 'watch=0', '']) {
    const r = await env.call('GET', `${SVCS}?${v}`);
    t.equal(r.json['kind'], 'ServiceList', `?${v} is a list`);
  }
});

t.test('allowWatchBookmarks=True gets bookmarks; timeoutSeconds 0 is the default, a negative one ends the watch at once', async (t) => {
  const r = await env.call('GET', `${SVCS}?watch=True&allowWatchBookmarks=True&resourceVersion=0&timeoutSeconds=1`);
  const evs = lines(r.body);
  t.ok(evs.some((e) => e.type === 'BOOKMARK' && e.object.kind === 'Service'), 'a bookmark within the second');
  t.ok(evs.some((e) => e.type === 'ADDED' && e.object.metadata?.name === 'kubernetes'), 'resourceVersion=0: the current state first');
  const t0 = performance.now();
  const neg = await env.call('GET', `${SVCS}?watch=1&resourceVersion=0&timeoutSeconds=-5`);
  t.ok(performance.now() - t0 < 5000, 'timeoutSeconds=-5 ended the watch at once');
  t.ok(lines(neg.body).length > 0, 'after the current state');
  const bad = await env.call('GET', `${SVCS}?watch=1&timeoutSeconds=soon`);
  t.equal(bad.code, 400);
  t.match(bad.json, { reason: 'BadRequest', message: 'strconv.ParseInt: parsing "soon": invalid syntax' });
  // timeoutSeconds=0 is kube-apiserver's default (30 to 60 minutes), not "end now" and not "never": the watch is still
  // open after a write made a second later, and sees it.
  const zero = env.call('GET', `${SVCS}?watch=1&timeoutSeconds=0`, undefined, {}, { until: (b) => b.includes('"name":"w0"') });
  await new Promise((r) => setTimeout(r, 1000));
  t.equal((await env.call('POST', SVCS, svc('w0'))).code, 201);
  t.ok(lines((await zero).body).some((e) => e.type === 'ADDED' && e.object.metadata?.name === 'w0'), 'timeoutSeconds=0: the watch was open a second later');
});

t.test('integers as strconv.ParseInt takes them; a negative limit is no limit, as upstream', async (t) => {
  t.equal(((await env.call('GET', `${SVCS}?limit=%2B1`)).json['items'] as unknown[]).length, 1, 'limit=+1');
  const all = ((await env.call('GET', SVCS)).json['items'] as unknown[]).length;
  t.equal(((await env.call('GET', `${SVCS}?limit=-1`)).json['items'] as unknown[]).length, all, 'limit=-1 lists everything');
  const r = await env.call('GET', `${SVCS}?limit=1.5`);
  t.match(r, { code: 400, json: { message: 'strconv.ParseInt: parsing "1.5": invalid syntax' } });
  t.match(await env.call('DELETE', `${SVCS}/w1?gracePeriodSeconds=x`), { code: 400, json: { message: 'strconv.ParseInt: parsing "x": invalid syntax' } });
});

t.test('DELETE ?orphanDependents=True orphans, as the body\'s field does; dryRun in the query or the body', async (t) => {
  const dep = {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'o' },
    spec: { replicas: 0, selector: { matchLabels: { app: 'o' } }, template: { metadata: { labels: { app: 'o' } }, spec: { containers: [{ name: 'c', image: 'x' }] } } },
  };
  t.equal((await env.call('POST', '/apis/apps/v1/namespaces/default/deployments', dep)).code, 201);
  const rsList = async () => (await env.call('GET', '/apis/apps/v1/namespaces/default/replicasets')).json['items'] as { metadata: { name: string; ownerReferences?: unknown[] } }[];
  await waitFor(async () => (await rsList()).length === 1, 'the ReplicaSet');
  t.equal((await env.call('DELETE', '/apis/apps/v1/namespaces/default/deployments/o?dryRun=All')).code, 200);
  t.equal((await env.call('GET', '/apis/apps/v1/namespaces/default/deployments/o')).code, 200, 'dryRun=All deleted nothing');
  t.match(await env.call('DELETE', '/apis/apps/v1/namespaces/default/deployments/o', { dryRun: ['Some'] }), { code: 400, json: { message: /dryRun: Unsupported value: "Some"/ } });
  t.equal((await env.call('DELETE', '/apis/apps/v1/namespaces/default/deployments/o?orphanDependents=True')).code, 200);
  await waitFor(async () => (await env.call('GET', '/apis/apps/v1/namespaces/default/deployments/o')).code === 404, 'the Deployment gone');
  await waitFor(async () => (await rsList())[0]?.metadata.ownerReferences === undefined, 'the ReplicaSet orphaned');
  t.equal((await rsList()).length, 1, 'the ReplicaSet stays, without its owner');
});

t.test('force is for apply patches only; pretty indents', async (t) => {
  const merge = { 'Content-Type': 'application/merge-patch+json' };
  t.match(await env.call('PATCH', `${SVCS}/w1?force=true`, { metadata: { labels: { a: 'b' } } }, merge), {
    code: 422, json: { reason: 'Invalid', message: 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch' },
  });
  t.match(await env.call('PATCH', `${SVCS}/w1?force=false`, { metadata: { labels: { a: 'b' } } }, merge), { code: 422 }, 'force=false is still a force parameter');
  const apply = await env.call('PATCH', `${SVCS}/w1?force=True&fieldManager=me`, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'w1', labels: { a: 'b' } } }, { 'Content-Type': 'application/apply-patch+yaml' });
  t.equal(apply.code, 200, 'an apply may be forced');
  const pretty = await env.call('GET', `${SVCS}/w1?pretty=True`);
  t.match(pretty.body, /^\{\n  "[a-zA-Z]+": [^\n]*\n  "/, 'pretty: two-space indented JSON');
  t.same(JSON.parse(pretty.body), (await env.call('GET', `${SVCS}/w1`)).json, 'the same object');
  t.notOk((await env.call('GET', `${SVCS}/w1?pretty=false`)).body.includes('\n'), 'pretty=false: compact');
});
