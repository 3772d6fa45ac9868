/**
 * A node whose Lease stops loses its endpoints, with real processes on
 * loopback: the control plane (a 1.5 s node monitor grace period), the
 * agent's NodeRegistration with the node's own token (a Lease renewed every
 * 200 ms), a Service selecting a Pod bound to that node and made Ready by
 * the test as a kubelet would, and the real kubectl. The registration stops:
 * the Node goes Ready=Unknown and is tainted unreachable, the Pod becomes not
 * ready, its endpoint neither ready nor serving, and Events say so. A new
 * registration (the agent restarted) posts Ready again and the taints go.
 * No root needed.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, DiscoveryV1Api } from '@kubernetes/client-node';
import { execa } from 'execa';
import { startControlPlane, type ControlPlane } from '../controlplane/control-plane.js';
import { silentLogger } from '../lib/log/log.js';
import { realClock } from '../lib/reconcile/clock.js';
import { waitFor } from '../agent/src/testing/wait.js';
import { loadKubeConfig } from '../agent/src/watch/kube-source.js';
import { NodeRegistration } from '../agent/src/watch/node-registration.js';

const GRACE_MS = 1_500;
const dir = mkdtempSync(join(tmpdir(), 'nn-node-lifecycle-'));
let cp: ControlPlane;
const regs: NodeRegistration[] = [];

t.before(async () => {
  cp = await startControlPlane({ dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0, version: '0.1.0', nodes: ['n1'], nodeMonitorGracePeriodMs: GRACE_MS });
});
t.teardown(async () => {
  for (const r of regs) r.stop();
  try {
    await cp?.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

async function kubectl(args: readonly string[]): Promise<string> {
  const r = await execa('kubectl', [...args], { env: { KUBECONFIG: cp.kubeconfig }, reject: false, timeout: 60_000 });
  if (r.exitCode !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.exitCode}: ${String(r.stderr)}`);
  return String(r.stdout);
}

const nodeReady = () => kubectl(['get', 'node', 'n1', '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}']);
const nodeTaints = async () => (await kubectl(['get', 'node', 'n1', '-o', 'jsonpath={range .spec.taints[*]}{.key}:{.effect}{"\\n"}{end}'])).split('\n').filter(Boolean);

function register(): NodeRegistration {
  const reg = new NodeRegistration({ kubeconfig: loadKubeConfig(cp.nodeKubeconfig('n1')), nodeName: 'n1', addresses: ['192.168.77.21'], clock: realClock, log: silentLogger(), leaseMs: 200, leaseSeconds: 1 });
  regs.push(reg);
  return reg;
}

t.test('a node whose Lease stops: Ready=Unknown, tainted, its Pod not ready, its endpoint not ready; back: the taints go', async (t) => {
  const admin = loadKubeConfig(cp.kubeconfig);
  const core = admin.makeApiClient(CoreV1Api);
  const discovery = admin.makeApiClient(DiscoveryV1Api);
  const reg = register();
  await reg.start();

  await core.createNamespacedService({ namespace: 'default', body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] } } });
  await core.createNamespacedPod({ namespace: 'default', body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-1', labels: { app: 'web' } }, spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'none', ports: [{ containerPort: 8080 }] }] } } });
  // What the kubelet would post.
  const now = new Date();
  await core.replaceNamespacedPodStatus({ name: 'web-1', namespace: 'default', body: { ...(await core.readNamespacedPod({ name: 'web-1', namespace: 'default' })), status: { phase: 'Running', podIP: '10.244.0.5', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }] } } });
  const endpoint = async () => {
    const slices = await discovery.listNamespacedEndpointSlice({ namespace: 'default', labelSelector: 'kubernetes.io/service-name=web' });
    return slices.items.flatMap((s) => s.endpoints ?? []).find((e) => e.addresses[0] === '10.244.0.5')?.conditions;
  };
  await waitFor(async () => (await endpoint())?.ready === true, 'the endpoint ready');
  t.match(await endpoint(), { ready: true, serving: true });

  // Alive for longer than the grace period: nothing happens.
  await sleep(GRACE_MS + 1_000);
  t.equal(await nodeReady(), 'True', 'a renewing node stays Ready');
  t.same(await nodeTaints(), []);

  reg.stop();
  const stoppedAt = Date.now();
  await waitFor(async () => (await nodeReady()) === 'Unknown', 'the Node Ready=Unknown', { timeoutMs: 20_000, intervalMs: 200 });
  t.ok(Date.now() - stoppedAt >= GRACE_MS - 300, `Unknown after the grace period (${Date.now() - stoppedAt} ms)`);
  t.equal(await kubectl(['get', 'node', 'n1', '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].reason}']), 'NodeStatusUnknown');
  t.equal(await kubectl(['get', 'node', 'n1', '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].message}']), 'Kubelet stopped posting node status.');
  await waitFor(async () => (await nodeTaints()).length === 1, 'the taint');
  // The only Node is down: to the controller every Node is, which is upstream's master disruption mode (most likely
  // the control plane is the one cut off): NoSchedule, but no NoExecute, so nothing is evicted.
  t.same(await nodeTaints(), ['node.kubernetes.io/unreachable:NoSchedule']);
  t.match(await kubectl(['get', 'nodes']), /^n1\s+NotReady\s/m, 'kubectl shows it NotReady');

  await waitFor(async () => (await kubectl(['get', 'pod', 'web-1', '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'])) === 'False', 'the Pod not ready');
  await waitFor(async () => (await endpoint())?.ready === false, 'the endpoint not ready');
  t.match(await endpoint(), { ready: false, serving: false, terminating: false }, 'no traffic goes to it');
  await waitFor(async () => /NodeNotReady Pod\/web-1/.test(await kubectl(['get', 'events', '-o', 'jsonpath={range .items[*]}{.reason} {.involvedObject.kind}/{.involvedObject.name}{"\\n"}{end}'])), 'the Events');
  const events = await kubectl(['get', 'events', '-o', 'jsonpath={range .items[*]}{.reason} {.involvedObject.kind}/{.involvedObject.name}: {.message}{"\\n"}{end}']);
  t.match(events, /^NodeNotReady Node\/n1: Node n1 status is now: NodeNotReady$/m);
  t.match(events, /^NodeNotReady Pod\/web-1: Node is not ready$/m);

  // The agent comes back: it posts Ready again and renews its Lease.
  const again = register();
  await again.start();
  await waitFor(async () => (await nodeTaints()).length === 0, 'the taints gone', { timeoutMs: 20_000, intervalMs: 200 });
  t.equal(await nodeReady(), 'True');
  await sleep(GRACE_MS + 500);
  t.equal(await nodeReady(), 'True', 'and it stays Ready while it renews');
  t.same(await nodeTaints(), []);
  const pod = await core.readNamespacedPod({ name: 'web-1', namespace: 'default' });
  t.notOk(pod.metadata?.deletionTimestamp, 'its Pod was not evicted (300 s by default)');
  again.stop();
});
