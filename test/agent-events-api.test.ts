/**
 * The agent's Warning Events through the real path (node/compose.ts's
 * recorder: the embedded kubelet's HTTP calls with a node's own kubeconfig)
 * against the embedded control plane: accepted by its validation and its
 * node authorizer, a repeat counted on the first, a Node's Event in
 * `default`, found by kubectl describe's field selectors. No root needed.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { startControlPlane, type ControlPlane } from '../controlplane/control-plane.js';
import { silentLogger } from '../lib/log/log.js';
import { apiEventRecorder } from '../agent/src/node/compose.js';
import { objectReference } from '../lib/reconcile/event-recorder.js';
import { loadKubeConfig } from '../agent/src/watch/kube-source.js';

const dir = mkdtempSync(join(tmpdir(), 'nn-agent-events-'));
let cp: ControlPlane;
t.before(async () => {
  cp = await startControlPlane({ dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0, version: '0.1.0', nodes: ['n1', 'n2'] });
});
t.teardown(async () => {
  await cp?.stop();
  rmSync(dir, { recursive: true, force: true });
});

t.test('Events about a Service and a Node, written with a node\'s token, counted and found by their object', async (t) => {
  const core = loadKubeConfig(cp.kubeconfig).makeApiClient(CoreV1Api);
  const svc = await core.createNamespacedService({ namespace: 'default', body: { metadata: { name: 'web' }, spec: { ports: [{ port: 80 }] } } });
  const node = await core.createNode({ body: { metadata: { name: 'n2' } } });
  const rec = apiEventRecorder(async () => loadKubeConfig(cp.nodeKubeconfig('n1')), 'nodenet-proxy', 'n1', silentLogger());
  const svcRef = objectReference(JSON.parse(JSON.stringify(svc)), 'Service', 'v1')!;
  rec.event(svcRef, 'Warning', 'InvalidObjectKeptLastGood', 'Cannot use this version of the Service: spec.sessionAffinityConfig: must not be set when sessionAffinity is None.');
  rec.event(svcRef, 'Warning', 'InvalidObjectKeptLastGood', 'Cannot use this version of the Service: spec.sessionAffinityConfig: must not be set when sessionAffinity is None.');
  rec.event(objectReference(JSON.parse(JSON.stringify(node)), 'Node', 'v1')!, 'Warning', 'InvalidObjectKeptLastGood', 'Cannot use this version of the Node.');
  await rec.idle();

  const list = await core.listNamespacedEvent({ namespace: 'default', fieldSelector: 'involvedObject.kind=Service,involvedObject.name=web' });
  t.equal(list.items.length, 1, 'one Event for the repeat');
  const e = list.items[0]!;
  t.equal(e.count, 2, 'counted twice');
  t.equal(e.type, 'Warning');
  t.equal(e.reason, 'InvalidObjectKeptLastGood');
  t.same(e.source, { component: 'nodenet-proxy', host: 'n1' });
  t.equal(e.involvedObject.uid, svc.metadata?.uid);
  t.equal(e.involvedObject.resourceVersion, svc.metadata?.resourceVersion);
  const nodeEvents = await core.listNamespacedEvent({ namespace: 'default', fieldSelector: 'involvedObject.kind=Node,involvedObject.name=n2' });
  t.equal(nodeEvents.items.length, 1, 'the Node\'s Event, in default');
  t.equal(nodeEvents.items[0]!.involvedObject.namespace, undefined);
});
