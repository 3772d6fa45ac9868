/**
 * The proxy's Kubernetes source against the embedded control plane, with a
 * node's own token: both lists before synced (each handler once), then
 * add, update with the previous object and delete with the last known one,
 * for Services and EndpointSlices across namespaces; a kubeconfig that
 * cannot be loaded is refused naming it. No root needed.
 */
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, DiscoveryV1Api } from '@kubernetes/client-node';
import { startControlPlane, type ControlPlane } from '../controlplane/control-plane.js';
import { silentLogger } from '../lib/log/log.js';
import { realClock } from '../lib/reconcile/clock.js';
import { waitFor } from '../agent/src/testing/wait.js';
import { KubeSource, loadKubeConfig } from '../agent/src/watch/kube-source.js';

const dir = mkdtempSync(join(tmpdir(), 'nn-kube-src-'));
let cp: ControlPlane;
t.before(async () => {
  cp = await startControlPlane({ dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0, version: '0.1.0', nodes: ['n1'] });
});
t.teardown(async () => {
  await cp?.stop();
  rmSync(dir, { recursive: true, force: true });
});

type O = { metadata?: { name?: string; namespace?: string; resourceVersion?: string } };
const id = (o: unknown) => `${(o as O).metadata?.namespace}/${(o as O).metadata?.name}`;

t.test('Services and EndpointSlices through the node\'s kubeconfig, synced after both lists', async (t) => {
  const admin = loadKubeConfig(cp.kubeconfig);
  const core = admin.makeApiClient(CoreV1Api);
  const disc = admin.makeApiClient(DiscoveryV1Api);
  await core.createNamespace({ body: { metadata: { name: 'other' } } });
  await core.createNamespacedService({ namespace: 'other', body: { metadata: { name: 'db' }, spec: { ports: [{ port: 5432 }] } } });
  const slice = (name: string, svc: string, ip: string) => ({ metadata: { name, labels: { 'kubernetes.io/service-name': svc } }, addressType: 'IPv4', ports: [{ port: 5432, protocol: 'TCP' }], endpoints: [{ addresses: [ip] }] });
  await disc.createNamespacedEndpointSlice({ namespace: 'other', body: slice('db-1', 'db', '10.244.1.5') });

  const events: string[] = [];
  // The cluster DNS addon's Service and slice (kube-system/kube-dns) come and change on their own: left out.
  const record = (e: string) => void (e.includes(' kube-system/') || events.push(e));
  const src = new KubeSource({
    kubeconfig: loadKubeConfig(cp.nodeKubeconfig('n1')),
    log: silentLogger(),
    clock: realClock,
    services: {
      onServiceAdd: (o) => record(`svc add ${id(o)}`),
      onServiceUpdate: (p, c) => record(`svc update ${id(c)} ${(p as O).metadata?.resourceVersion}->${(c as O).metadata?.resourceVersion}`),
      onServiceDelete: (o) => record(`svc delete ${id(o)}`),
      onServicesSynced: () => record('svc synced'),
    },
    slices: {
      onEndpointSliceAdd: (o) => record(`eps add ${id(o)}`),
      onEndpointSliceUpdate: (_p, c) => record(`eps update ${id(c)}`),
      onEndpointSliceDelete: (o) => record(`eps delete ${id(o)}`),
      onEndpointSlicesSynced: () => record('eps synced'),
    },
  });
  try {
    await src.start();
    await waitFor(() => events.includes('eps synced'), 'synced');
    const firstSynced = events.findIndex((e) => e.endsWith('synced'));
    t.same(events.slice(0, firstSynced).sort(), ['eps add default/kubernetes', 'eps add other/db-1', 'svc add default/kubernetes', 'svc add other/db'], 'both lists, across namespaces, before any synced');
    t.same(events.slice(firstSynced).sort(), ['eps synced', 'svc synced'], 'each handler synced once');
    events.length = 0;
    const before = (await core.readNamespacedService({ namespace: 'other', name: 'db' })).metadata!.resourceVersion;
    const after = (await core.patchNamespacedService({ namespace: 'other', name: 'db', body: [{ op: 'add', path: '/metadata/labels', value: { a: 'b' } }] })).metadata!.resourceVersion;
    await disc.createNamespacedEndpointSlice({ namespace: 'other', body: slice('db-2', 'db', '10.244.2.5') });
    await disc.deleteNamespacedEndpointSlice({ namespace: 'other', name: 'db-1' });
    await waitFor(() => events.length >= 3, 'the changes');
    t.same(events, [`svc update other/db ${before}->${after}`, 'eps add other/db-2', 'eps delete other/db-1']);
    t.same([...src.errors()], []);
  } finally {
    src.stop();
  }
});

t.test('a kubeconfig that cannot be used is refused, naming it', async (t) => {
  t.throws(() => loadKubeConfig(join(dir, 'missing.kubeconfig')), { code: 'NN_ERR_INVALID_CONFIG', message: /kubeconfig .*missing\.kubeconfig/ });
  const empty = join(dir, 'empty.kubeconfig');
  writeFileSync(empty, 'apiVersion: v1\nkind: Config\n');
  t.throws(() => loadKubeConfig(empty), { message: /no current cluster/ });
  const saved = process.env['KUBERNETES_SERVICE_HOST'];
  delete process.env['KUBERNETES_SERVICE_HOST'];
  t.throws(() => loadKubeConfig('in-cluster'), { message: /KUBERNETES_SERVICE_HOST is not set: not running in a Pod/ });
  if (saved !== undefined) process.env['KUBERNETES_SERVICE_HOST'] = saved;
});
