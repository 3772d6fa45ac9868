/**
 * The cluster DNS addon (controlplane/addons/coredns.ts) through the real kubectl (the one on PATH) against
 * `nodenet control-plane` on loopback: what the control plane creates at start in kube-system (Deployment coredns,
 * Service kube-dns on 10.96.0.10, ServiceAccount, ClusterRole and binding); what the coredns ServiceAccount may do
 * (impersonated, and with a real token of its own); a user's scale that survives a restart; `disable: ['coredns']`
 * that creates none. No root needed.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { testControlPlane } from '../controlplane/testing/control-plane.js';
import { startControlPlane } from '../controlplane/control-plane.js';
import { waitFor } from '../agent/src/testing/wait.js';

const ENTRY = '/opt/nodenet/dist/nodenet.js';
const env = testControlPlane(t, 'nn-cp-coredns-', { nodenetEntry: ENTRY });
const { kubectl, ok } = env;

t.test('kubectl sees the addon: deployment/coredns (2 replicas), service/kube-dns on 10.96.0.10 with 3 ports, the SA and RBAC', async (t) => {
  t.equal(await ok(['-n', 'kube-system', 'get', 'deployment', 'coredns', '-o', 'jsonpath={.spec.replicas} {.metadata.labels.k8s-app} {.spec.template.spec.serviceAccountName} {.spec.template.spec.priorityClassName}']), '2 kube-dns coredns system-cluster-critical');
  t.equal(await ok(['-n', 'kube-system', 'get', 'deployment', 'coredns', '-o', 'jsonpath={.spec.template.spec.containers[0].command}']), JSON.stringify([process.execPath, ENTRY, 'dns']), 'node <the entry given> dns');
  // The Deployment controller makes its ReplicaSet and 2 Pods (Pending: no Node here), as with any Deployment.
  await waitFor(async () => (await ok(['-n', 'kube-system', 'get', 'pods', '-l', 'k8s-app=kube-dns', '--no-headers'])).trim().split('\n').filter(Boolean).length === 2, 'the 2 coredns Pods', { intervalMs: 200 });
  const svc = await ok(['-n', 'kube-system', 'get', 'service', 'kube-dns', '--no-headers']);
  t.match(svc, /^kube-dns\s+ClusterIP\s+10\.96\.0\.10\s+<none>\s+53\/UDP,53\/TCP,9153\/TCP\s+\S+$/m, `kubectl get svc: ${svc.trim()}`);
  t.equal(await ok(['-n', 'kube-system', 'get', 'service', 'kube-dns', '-o', 'jsonpath={.spec.selector.k8s-app} {.metadata.labels.kubernetes\\.io/name} {.metadata.annotations.prometheus\\.io/port}']), 'kube-dns CoreDNS 9153');
  t.match(await ok(['-n', 'kube-system', 'get', 'serviceaccount', 'coredns', '-o', 'name']), /^serviceaccount\/coredns$/m);
  t.match(await ok(['get', 'clusterrole', 'system:coredns', '-o', 'name']), /^clusterrole\.rbac\.authorization\.k8s\.io\/system:coredns$/m);
  t.equal(await ok(['get', 'clusterrolebinding', 'system:coredns', '-o', 'jsonpath={.roleRef.name} {.subjects[0].kind} {.subjects[0].namespace}/{.subjects[0].name}']), 'system:coredns ServiceAccount kube-system/coredns');
});

t.test('the coredns ServiceAccount lists and watches what DNS reads, and may not write', async (t) => {
  const as = ['--as', 'system:serviceaccount:kube-system:coredns'];
  for (const [verb, what] of [['list', 'endpointslices.discovery.k8s.io'], ['watch', 'endpointslices.discovery.k8s.io'], ['list', 'services'], ['watch', 'services'], ['list', 'pods'], ['watch', 'pods'], ['list', 'namespaces'], ['watch', 'namespaces']] as const) {
    t.equal((await ok(['auth', 'can-i', verb, what, '--all-namespaces', ...as])).trim(), 'yes', `can-i ${verb} ${what}`);
  }
  for (const [verb, what] of [['create', 'services'], ['delete', 'pods'], ['get', 'secrets']] as const) {
    const r = await kubectl(['auth', 'can-i', verb, what, '-n', 'default', ...as]);
    t.equal(r.out.trim(), 'no', `can-i ${verb} ${what}: no`);
  }
  // A real token of the ServiceAccount (TokenRequest), used as the DNS server's Pods use theirs.
  const token = (await ok(['-n', 'kube-system', 'create', 'token', 'coredns'])).trim();
  t.equal(await ok(['--token', token, 'get', 'endpointslices.discovery.k8s.io', '-A', '-o', 'jsonpath={.kind}']), 'List', 'lists EndpointSlices in every namespace');
  const watch = await env.call('GET', '/apis/discovery.k8s.io/v1/endpointslices?watch=1&timeoutSeconds=1', undefined, { Authorization: `Bearer ${token}` }, { until: (b) => b.length > 0 });
  t.equal(watch.code, 200, 'watches EndpointSlices');
  const create = await kubectl(['--token', token, '-n', 'default', 'create', 'service', 'clusterip', 'nope', '--tcp=80']);
  t.not(create.code, 0);
  t.match(create.err, /forbidden/i, 'may not create a Service');
});

t.test('a user\'s scale sticks across a restart; a deleted object comes back; --disable coredns creates none', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nn-cp-coredns-restart-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const start = (o: { disable?: string[] } = {}) => startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: join(dir, 'data'), nodenetEntry: ENTRY, ...o });
  const k = (kc: string, args: string[]) => execa('kubectl', args, { env: { KUBECONFIG: kc }, timeout: 60_000 }).then((r) => String(r.stdout));

  let cp = await start();
  try {
    await k(cp.kubeconfig, ['-n', 'kube-system', 'scale', 'deployment', 'coredns', '--replicas', '3']);
    await k(cp.kubeconfig, ['-n', 'kube-system', 'label', 'service', 'kube-dns', 'edited=yes']);
    await k(cp.kubeconfig, ['delete', 'clusterrolebinding', 'system:coredns']);
  } finally {
    await cp.stop();
  }
  cp = await start();
  try {
    t.equal(await k(cp.kubeconfig, ['-n', 'kube-system', 'get', 'deployment', 'coredns', '-o', 'jsonpath={.spec.replicas}']), '3', 'the scale stuck: not re-created, not overwritten');
    t.equal(await k(cp.kubeconfig, ['-n', 'kube-system', 'get', 'service', 'kube-dns', '-o', 'jsonpath={.metadata.labels.edited}']), 'yes', 'the edit stuck');
    t.equal(await k(cp.kubeconfig, ['get', 'clusterrolebinding', 'system:coredns', '-o', 'jsonpath={.subjects[0].name}']), 'coredns', 'what was deleted is created again at start');
  } finally {
    await cp.stop();
  }

  const bare = mkdtempSync(join(tmpdir(), 'nn-cp-coredns-off-'));
  t.teardown(() => rmSync(bare, { recursive: true, force: true }));
  const off = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: join(bare, 'data'), disable: ['coredns'] });
  try {
    for (const what of [['-n', 'kube-system', 'deployment', 'coredns'], ['-n', 'kube-system', 'service', 'kube-dns'], ['-n', 'kube-system', 'serviceaccount', 'coredns'], ['clusterrole', 'system:coredns'], ['clusterrolebinding', 'system:coredns']]) {
      const r = await execa('kubectl', ['get', ...what], { env: { KUBECONFIG: off.kubeconfig }, reject: false, timeout: 60_000 });
      t.not(r.exitCode, 0, `${what.at(-2)} ${what.at(-1)}: none`);
      t.match(String(r.stderr), /NotFound|not found/);
    }
  } finally {
    await off.stop();
  }
  await t.rejects(startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: join(bare, 'data2'), disable: ['traefik'] }), /--disable "traefik": not an addon/);
});
