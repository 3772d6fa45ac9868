/**
 * @kubernetes/client-node 1.4 (the agent's client from the next issue)
 * against the embedded control plane over TLS: typed calls, its default
 * JSON-patch, an informer, and a raw watch that resumes from its last
 * resourceVersion across a restart of the server, missing and repeating
 * nothing. No root needed.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api, KubeConfig, makeInformer, PatchStrategy, setHeaderOptions, Watch, type V1Service } from '@kubernetes/client-node';
import { startControlPlane, type ControlPlane } from '../controlplane/control-plane.js';
import { waitFor } from '../agent/src/testing/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'nn-cp-client-'));
const dataDir = join(dir, 'data');
let cp: ControlPlane | undefined;
let port = 0;

async function start(): Promise<ControlPlane> {
  cp = await startControlPlane({ dataDir, host: '127.0.0.1', port, version: '0.1.0' });
  port = Number(new URL(cp.url).port);
  return cp;
}

t.teardown(async () => {
  await cp?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const svc = (name: string, port = 80): V1Service => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, labels: { app: 'c' } }, spec: { ports: [{ name: `p${port}`, port }] } });

t.test('typed calls: create, read, list with a selector, JSON patch (client-node\'s default), strategic merge, delete; errors as ApiException with the Status', async (t) => {
  const c = await start();
  const kc = new KubeConfig();
  kc.loadFromFile(c.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const created = await core.createNamespacedService({ namespace: 'default', body: svc('one') });
  t.equal(created.spec?.type, 'ClusterIP');
  t.match(created.metadata?.uid, /^[0-9a-f-]{36}$/);
  t.equal((await core.readNamespacedService({ namespace: 'default', name: 'one' })).metadata?.resourceVersion, created.metadata?.resourceVersion);
  const listed = await core.listNamespacedService({ namespace: 'default', labelSelector: 'app=c' });
  t.same(listed.items.map((s) => s.metadata?.name), ['one']);
  t.match(listed.metadata?.resourceVersion, /^\d+$/);
  const patched = await core.patchNamespacedService({ namespace: 'default', name: 'one', body: [{ op: 'add', path: '/metadata/labels/patched', value: 'yes' }] });
  t.equal(patched.metadata?.labels?.['patched'], 'yes');
  const smp = await core.patchNamespacedService(
    { namespace: 'default', name: 'one', body: { spec: { ports: [{ name: 'https', port: 443 }] } } },
    setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
  );
  t.same(smp.spec?.ports?.map((p) => p.port), [443, 80], 'strategic merge by port: the new one first, the old one kept');
  const err = await core.createNamespacedService({ namespace: 'default', body: svc('bad', 70000) }).then(() => ({ code: 0, body: '' }), (e: unknown) => e as { code?: number; body?: string });
  t.equal(err.code, 422);
  t.match(JSON.parse(String(err.body)), { kind: 'Status', reason: 'Invalid', details: { causes: [{ field: 'spec.ports[0].port' }] } });
  const nf = await core.readNamespacedService({ namespace: 'default', name: 'nope' }).then(() => ({ code: 0 }), (e: unknown) => e as { code?: number });
  t.equal(nf.code, 404);
  const dep = await apps.createNamespacedDeployment({
    namespace: 'default',
    body: { metadata: { name: 'd' }, spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'x', image: 'none' }] } } } },
  });
  t.equal(dep.spec?.replicas, 1);
  const scale = await apps.replaceNamespacedDeploymentScale({ namespace: 'default', name: 'd', body: { metadata: { name: 'd', namespace: 'default' }, spec: { replicas: 5 } } });
  t.equal(scale.spec?.replicas, 5);
  await core.deleteNamespacedService({ namespace: 'default', name: 'one' });
  t.same((await core.listNamespacedService({ namespace: 'default' })).items.map((s) => s.metadata?.name), ['kubernetes'], 'only the kubernetes Service is left');
});

t.test('an informer lists and watches; a raw watch resumes from its resourceVersion across a server restart', async (t) => {
  let c = cp!;
  const kc = new KubeConfig();
  kc.loadFromFile(c.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  for (const n of ['a', 'b']) await core.createNamespacedService({ namespace: 'default', body: svc(n) });

  const inf = makeInformer(kc, '/api/v1/namespaces/default/services', () => core.listNamespacedService({ namespace: 'default' }));
  const seen: string[] = [];
  inf.on('add', (o) => seen.push(`add ${o.metadata?.name}`));
  inf.on('update', (o) => seen.push(`update ${o.metadata?.name}`));
  inf.on('delete', (o) => seen.push(`delete ${o.metadata?.name}`));
  let informerError: unknown;
  inf.on('error', (e) => (informerError = e));
  await inf.start();
  await waitFor(() => seen.includes('add a') && seen.includes('add b') && seen.includes('add kubernetes'), 'the informer\'s initial list');
  await core.createNamespacedService({ namespace: 'default', body: svc('c') });
  await core.patchNamespacedService({ namespace: 'default', name: 'a', body: [{ op: 'add', path: '/metadata/labels/x', value: 'y' }] });
  await core.deleteNamespacedService({ namespace: 'default', name: 'b' });
  await waitFor(() => seen.includes('add c') && seen.includes('update a') && seen.includes('delete b'), 'add, update and delete through the watch');
  t.same(inf.list().map((s) => s.metadata?.name).sort(), ['a', 'c', 'kubernetes'], 'the informer\'s cache is the server\'s state');
  t.equal(informerError, undefined, 'the informer saw no error while it ran');
  await inf.stop(); // (client-node reports its own abort as an error event)

  // A raw watch, as the agent's wrapper will hold it: remember the last resourceVersion.
  const events: string[] = [];
  let last = (await core.listNamespacedService({ namespace: 'default' })).metadata!.resourceVersion!;
  const watch = new Watch(kc);
  let ended: unknown = 'running';
  const open = () =>
    watch.watch('/api/v1/namespaces/default/services', { resourceVersion: last, allowWatchBookmarks: true }, (type, obj: V1Service) => {
      if (type !== 'BOOKMARK') events.push(`${type} ${obj.metadata?.name} ${obj.metadata?.resourceVersion}`);
      last = obj.metadata?.resourceVersion ?? last;
    }, (e) => (ended = e));
  await open();
  await core.createNamespacedService({ namespace: 'default', body: svc('d') });
  await waitFor(() => events.some((e) => e.startsWith('ADDED d ')), 'the raw watch');

  await c.stop();
  cp = undefined;
  await waitFor(() => ended !== 'running', 'the watch to end with the server');
  c = await start();
  const kc2 = new KubeConfig();
  kc2.loadFromFile(c.kubeconfig);
  const core2 = kc2.makeApiClient(CoreV1Api);
  // Written after the restart, before the watcher is back: it must get them, once.
  await core2.createNamespacedService({ namespace: 'default', body: svc('e') });
  await core2.deleteNamespacedService({ namespace: 'default', name: 'c' });
  ended = 'running';
  await open();
  await core2.createNamespacedService({ namespace: 'default', body: svc('f') });
  await waitFor(() => events.some((e) => e.startsWith('ADDED f ')), 'the resumed watch');
  const names = events.map((e) => e.split(' ').slice(0, 2).join(' '));
  t.same(names, ['ADDED d', 'ADDED e', 'DELETED c', 'ADDED f'], 'nothing missed, nothing repeated across the restart');
  const rvs = events.map((e) => Number(e.split(' ')[2]));
  t.same(rvs, [...rvs].sort((x, y) => x - y), 'resourceVersions ascend across the restart');
  t.equal(new Set(rvs).size, rvs.length, 'no revision reused');
  t.same((await core2.listNamespacedService({ namespace: 'default' })).items.map((s) => s.metadata?.name).sort(), ['a', 'd', 'e', 'f', 'kubernetes'], 'every acknowledged write survived');
});
