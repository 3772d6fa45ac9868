/**
 * The proxy's Kubernetes source asks for kube-proxy's label selector
 * (`!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless`)
 * on both lists and watches: Services another proxy serves, headless-labelled
 * ones and their EndpointSlices are never delivered. Against the embedded
 * control plane with a node's token; no root needed.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, DiscoveryV1Api } from '@kubernetes/client-node';
import { startControlPlane, type ControlPlane } from '../controlplane/control-plane.js';
import { silentLogger } from '../lib/log/log.js';
import { realClock } from '../lib/reconcile/clock.js';
import { waitFor } from '../agent/src/testing/wait.js';
import { KubeSource, loadKubeConfig, PROXY_LABEL_SELECTOR } from '../agent/src/watch/kube-source.js';

const dir = mkdtempSync(join(tmpdir(), 'nn-kube-labels-'));
let cp: ControlPlane;
t.before(async () => {
  cp = await startControlPlane({ dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0, version: '0.1.0', nodes: ['n1'] });
});
t.teardown(async () => {
  await cp?.stop();
  rmSync(dir, { recursive: true, force: true });
});

type O = { metadata?: { name?: string; namespace?: string } };
const id = (o: unknown) => `${(o as O).metadata?.namespace}/${(o as O).metadata?.name}`;

t.test('kube-proxy\'s selector', async (t) => {
  t.equal(PROXY_LABEL_SELECTOR, '!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless');
});

t.test('labelled Services and slices are neither listed nor watched', async (t) => {
  const admin = loadKubeConfig(cp.kubeconfig);
  const core = admin.makeApiClient(CoreV1Api);
  const disc = admin.makeApiClient(DiscoveryV1Api);
  const svc = (name: string, labels: Record<string, string>) => ({ metadata: { name, labels }, spec: { ports: [{ port: 80 }] } });
  const slice = (name: string, service: string, labels: Record<string, string>) => ({
    metadata: { name, labels: { 'kubernetes.io/service-name': service, ...labels } },
    addressType: 'IPv4',
    ports: [{ port: 80, protocol: 'TCP' }],
    endpoints: [{ addresses: ['10.244.1.5'] }],
  });
  await core.createNamespacedService({ namespace: 'default', body: svc('mine', {}) });
  await core.createNamespacedService({ namespace: 'default', body: svc('theirs', { 'service.kubernetes.io/service-proxy-name': 'other-proxy' }) });
  await core.createNamespacedService({ namespace: 'default', body: svc('hl', { 'service.kubernetes.io/headless': '' }) });
  await disc.createNamespacedEndpointSlice({ namespace: 'default', body: slice('mine-1', 'mine', {}) });
  await disc.createNamespacedEndpointSlice({ namespace: 'default', body: slice('theirs-1', 'theirs', { 'service.kubernetes.io/service-proxy-name': 'other-proxy' }) });

  const events: string[] = [];
  const src = new KubeSource({
    kubeconfig: loadKubeConfig(cp.nodeKubeconfig('n1')),
    log: silentLogger(),
    clock: realClock,
    services: {
      onServiceAdd: (o) => events.push(`svc add ${id(o)}`),
      onServiceUpdate: (_p, c) => events.push(`svc update ${id(c)}`),
      onServiceDelete: (o) => events.push(`svc delete ${id(o)}`),
      onServicesSynced: () => events.push('svc synced'),
    },
    slices: {
      onEndpointSliceAdd: (o) => events.push(`eps add ${id(o)}`),
      onEndpointSliceUpdate: (_p, c) => events.push(`eps update ${id(c)}`),
      onEndpointSliceDelete: (o) => events.push(`eps delete ${id(o)}`),
      onEndpointSlicesSynced: () => events.push('eps synced'),
    },
  });
  try {
    await src.start();
    await waitFor(() => events.includes('eps synced'), 'synced');
    // The cluster DNS addon's Service and slice (kube-system/kube-dns), unlabelled, are listed too: left out here.
    const inDefault = () => events.filter((e) => !e.includes(' kube-system/'));
    t.same(inDefault().filter((e) => !e.endsWith('synced')).sort(), ['eps add default/kubernetes', 'eps add default/mine-1', 'svc add default/kubernetes', 'svc add default/mine'], 'the list leaves out the labelled ones');
    events.length = 0;
    // Created after the list: the watch leaves them out too; a plain one still arrives.
    await core.createNamespacedService({ namespace: 'default', body: svc('theirs2', { 'service.kubernetes.io/service-proxy-name': 'x' }) });
    await core.createNamespacedService({ namespace: 'default', body: svc('mine2', {}) });
    await waitFor(() => events.includes('svc add default/mine2'), 'mine2');
    t.same(inDefault(), ['svc add default/mine2'], 'the labelled one created first never arrived');
  } finally {
    src.stop();
  }
});
