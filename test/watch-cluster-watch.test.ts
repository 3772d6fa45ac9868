/**
 * The agent's other sources against the embedded control plane, with a
 * node's own token: every Node (the overlay's peers), this node's own Node,
 * and the Pods bound to this node, synced together; a Pod appears when the
 * scheduler's binding puts it on this node and not before, and a Pod bound
 * elsewhere never shows. No root needed.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { startControlPlane, type ControlPlane } from '../controlplane/control-plane.js';
import { silentLogger } from '../lib/log/log.js';
import { realClock } from '../lib/reconcile/clock.js';
import { waitFor } from '../agent/src/testing/wait.js';
import { boundPods, ClusterWatch, ownNode } from '../agent/src/watch/cluster-watch.js';
import { loadKubeConfig } from '../agent/src/watch/kube-source.js';

const dir = mkdtempSync(join(tmpdir(), 'nn-cluster-watch-'));
let cp: ControlPlane;
t.before(async () => {
  cp = await startControlPlane({ dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0, version: '0.1.0', nodes: ['n1', 'n2'] });
});
t.teardown(async () => {
  try {
    await cp?.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const name = (o: KubernetesObject) => `${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name}`;

t.test('all Nodes, this Node, and the Pods bound to this node', async (t) => {
  const core = loadKubeConfig(cp.kubeconfig).makeApiClient(CoreV1Api);
  for (const n of ['n1', 'n2']) await core.createNode({ body: { metadata: { name: n } } });
  // Bound before the agent starts (in its first list), bound elsewhere, and unbound.
  await core.createNamespacedPod({ namespace: 'default', body: { metadata: { name: 'early' }, spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'x' }] } } });
  await core.createNamespacedPod({ namespace: 'default', body: { metadata: { name: 'other' }, spec: { nodeName: 'n2', containers: [{ name: 'c', image: 'x' }] } } });
  await core.createNamespacedPod({ namespace: 'default', body: { metadata: { name: 'late' }, spec: { containers: [{ name: 'c', image: 'x' }] } } });

  const ev: string[] = [];
  const rec = (src: string) => ({
    add: (o: KubernetesObject) => ev.push(`${src} add ${name(o)}`),
    update: (_p: KubernetesObject, c: KubernetesObject) => ev.push(`${src} update ${name(c)}`),
    delete: (o: KubernetesObject) => ev.push(`${src} delete ${name(o)}`),
  });
  let synced = 0;
  const w = new ClusterWatch({
    kubeconfig: loadKubeConfig(cp.nodeKubeconfig('n1')),
    log: silentLogger(),
    clock: realClock,
    sources: [
      { kind: 'nodes', handler: rec('nodes'), synced: () => ev.push('nodes synced') },
      ownNode('n1', rec('self'), () => ev.push('self synced')),
      boundPods('n1', rec('pods'), () => ev.push('pods synced')),
    ],
    onSynced: () => synced++,
  });
  t.teardown(() => w.stop());
  await w.start();
  await waitFor(() => synced === 1, 'synced');
  const firstList = ev.splice(0);
  t.same(firstList.filter((e) => e.endsWith('synced')), ['nodes synced', 'self synced', 'pods synced'], 'each source synced once, after all three lists');
  t.same(firstList.filter((e) => !e.endsWith('synced')).sort(), ['nodes add n1', 'nodes add n2', 'pods add default/early', 'self add n1']);
  t.same([...w.errors()], []);

  // The scheduler's binding puts `late` on n1: it appears, as an add.
  await core.createNamespacedPodBinding({ namespace: 'default', name: 'late', body: { metadata: { name: 'late' }, target: { kind: 'Node', name: 'n1' } } });
  await waitFor(() => ev.includes('pods add default/late'), 'the bound Pod');
  // n2 changes: all-Nodes hears it, this node's own watch does not.
  const n2 = await core.readNode({ name: 'n2' });
  await core.replaceNode({ name: 'n2', body: { ...n2, metadata: { ...n2.metadata, labels: { zone: 'b' } } } });
  await waitFor(() => ev.includes('nodes update n2'), 'n2 updated');
  const n1 = await core.readNode({ name: 'n1' });
  await core.replaceNode({ name: 'n1', body: { ...n1, metadata: { ...n1.metadata, labels: { zone: 'a' } } } });
  await waitFor(() => ev.includes('self update n1') && ev.includes('nodes update n1'), 'n1 updated on both');
  await core.deleteNamespacedPod({ namespace: 'default', name: 'early', gracePeriodSeconds: 0 });
  await waitFor(() => ev.includes('pods delete default/early'), 'the deleted Pod');
  await core.deleteNamespacedPod({ namespace: 'default', name: 'other', gracePeriodSeconds: 0 });
  await new Promise((r) => setTimeout(r, 300));
  t.notOk(ev.some((e) => e.includes('other')), 'a Pod bound to another node is never heard of');
  t.same(w.list('pods@n1').map(name), ['default/late'], 'the cache holds what was delivered');
  t.equal(synced, 1, 'synced once');
});
