/**
 * The agent's Node registration against the embedded control plane, with
 * the node's own token: the Node is created with its addresses and Ready,
 * node IPAM gives it a pod CIDR the agent reads, the Lease in
 * kube-node-lease is renewed on the clock, and a restarted agent updates
 * rather than re-creates. No root needed.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { startControlPlane, type ControlPlane } from '../controlplane/control-plane.js';
import { silentLogger } from '../lib/log/log.js';
import { FakeClock } from '../lib/reconcile/clock.fake.js';
import { waitFor } from '../agent/src/testing/wait.js';
import { loadKubeConfig } from '../agent/src/watch/kube-source.js';
import { microTime, NodeRegistration } from '../agent/src/watch/node-registration.js';

const dir = mkdtempSync(join(tmpdir(), 'nn-node-reg-'));
let cp: ControlPlane;
t.before(async () => {
  cp = await startControlPlane({ dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0, version: '0.1.0', nodes: ['n1'] });
});
t.teardown(async () => {
  try {
    await cp?.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

t.test('microTime', async (t) => {
  t.equal(microTime(Date.UTC(2026, 11, 1, 12, 0, 0, 123)), '2026-12-01T12:00:00.123000Z');
});

t.test('registers its Node, reads its pod CIDR, renews its Lease, and re-registers as an update', async (t) => {
  const clock = new FakeClock(Date.UTC(2026, 11, 1, 12));
  const kc = loadKubeConfig(cp.nodeKubeconfig('n1'));
  const reg = new NodeRegistration({ kubeconfig: kc, nodeName: 'n1', addresses: ['192.168.77.11'], capacity: { cpu: '2', memory: '24Gi', pods: '110' }, clock, log: silentLogger() });
  await reg.start();
  const admin = loadKubeConfig(cp.kubeconfig);
  const core = admin.makeApiClient(CoreV1Api);
  const node = await core.readNode({ name: 'n1' });
  t.match(node.status, { addresses: [{ type: 'InternalIP', address: '192.168.77.11' }, { type: 'Hostname', address: 'n1' }], capacity: { cpu: '2', pods: '110' }, conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }] });
  t.equal(node.metadata?.labels?.['kubernetes.io/hostname'], 'n1');
  const cidr = await reg.podCIDR(10_000);
  t.match(cidr, /^10\.244\.\d+\.0\/24$/, `node IPAM gave it ${cidr}`);
  const leases = admin.makeApiClient(CoordinationV1Api);
  const first = await leases.readNamespacedLease({ namespace: 'kube-node-lease', name: 'n1' });
  t.match(first.spec, { holderIdentity: 'n1', leaseDurationSeconds: 40 });
  await clock.advance(10_000);
  await waitFor(() => reg.renewals === 2, 'the renewal');
  const second = await leases.readNamespacedLease({ namespace: 'kube-node-lease', name: 'n1' });
  t.not(String(second.spec?.renewTime), String(first.spec?.renewTime), 'renewTime moved');
  t.not(second.metadata?.resourceVersion, first.metadata?.resourceVersion);
  reg.stop();
  await clock.advance(30_000);
  t.equal(reg.renewals, 2, 'stopped: no more renewals');
  // A restarted agent: the Node exists, its status is patched, its pod CIDR kept.
  const again = new NodeRegistration({ kubeconfig: kc, nodeName: 'n1', addresses: ['192.168.77.12'], clock, log: silentLogger() });
  await again.start();
  again.stop();
  const after = await core.readNode({ name: 'n1' });
  t.equal(after.metadata?.uid, node.metadata?.uid, 'the same Node');
  t.equal(after.spec?.podCIDR, cidr, 'its pod CIDR kept');
  t.ok(after.status?.addresses?.some((a) => a.address === '192.168.77.12'), 'its new address');
});

t.test('a Node marked Ready=Unknown by the control plane is posted Ready again, as a kubelet does', async (t) => {
  const kc = loadKubeConfig(cp.nodeKubeconfig('n1'));
  const reg = new NodeRegistration({ kubeconfig: kc, nodeName: 'n1', addresses: ['192.168.77.11'], clock: new FakeClock(Date.UTC(2026, 11, 1, 13)), log: silentLogger() });
  await reg.start();
  t.teardown(() => reg.stop());
  const core = loadKubeConfig(cp.kubeconfig).makeApiClient(CoreV1Api);
  // What the node lifecycle controller writes when the Lease was not renewed.
  await core.replaceNodeStatus({ name: 'n1', body: { ...(await core.readNode({ name: 'n1' })), status: { conditions: [{ type: 'Ready', status: 'Unknown', reason: 'NodeStatusUnknown', message: 'Kubelet stopped posting node status.' }] } } });
  await waitFor(() => reg.readyReposts === 1, 'the agent posts Ready again');
  const n = await core.readNode({ name: 'n1' });
  t.match(n.status?.conditions?.find((c) => c.type === 'Ready'), { status: 'True', reason: 'KubeletReady' });
  t.ok(n.status?.addresses?.some((a) => a.address === '192.168.77.11'), 'with its addresses');
});

t.test('another node\'s token cannot register this Node', async (t) => {
  const kc = loadKubeConfig(cp.nodeKubeconfig('n1'));
  const reg = new NodeRegistration({ kubeconfig: kc, nodeName: 'n2', addresses: ['192.168.77.13'], clock: new FakeClock(), log: silentLogger() });
  const err = await reg.start().then(() => null, (e: unknown) => e as { code?: number });
  t.equal(err?.code, 403);
});
