/**
 * App-level leader election (`nodenet serve --leader-elect`) against a real control plane, as a ServiceAccount whose
 * Role allows its Lease: three replicas, exactly one leads and the Lease names it; the leader stopped (its Pod
 * deleted: SIGTERM) hands the Lease on within the lease duration; a ServiceAccount without the Role never leads and
 * is refused by RBAC; a replica whose token is bound to its Pod still releases the Lease once that Pod is being
 * deleted (its grace period). Through the CLI, /leader answers. No root needed.
 */
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { startControlPlane } from '../../../controlplane/control-plane.js';
import { silentLogger } from '../../../lib/log/log.js';
import { inClusterNamespace, startAppLeader, type AppLeader } from './serve-leader.js';
import { serveCommand } from '../cli/serve-cmd.js';

const dir = mkdtempSync(join(tmpdir(), 'nn-serve-leader-'));
const cp = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: dir });
t.teardown(async () => {
  await cp.stop();
  rmSync(dir, { recursive: true, force: true });
});
const kubectl = async (...args: string[]) => String((await execa('kubectl', ['--kubeconfig', cp.kubeconfig, ...args], { timeout: 60_000 })).stdout);
const timings = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A kubeconfig with a ServiceAccount's token instead of the admin's. */
async function saKubeconfig(sa: string): Promise<string> {
  await kubectl('create', 'serviceaccount', sa);
  const token = (await kubectl('create', 'token', sa)).trim();
  const cfg = parseYaml(readFileSync(cp.kubeconfig, 'utf8')) as { users: { user: Record<string, string> }[] };
  cfg.users[0]!.user = { token };
  const f = join(dir, `${sa}.kubeconfig`);
  writeFileSync(f, toYaml(cfg));
  return f;
}

t.test('three replicas: one leader, the Lease names it; a clean stop hands it on within the lease duration', async (t) => {
  await kubectl('create', 'role', 'elector', '--verb=get,create,update', '--resource=leases.coordination.k8s.io');
  await kubectl('create', 'rolebinding', 'elector', '--role=elector', '--serviceaccount=default:app');
  const kc = await saKubeconfig('app');
  const replicas = new Map<string, AppLeader>();
  for (const id of ['app-0', 'app-1', 'app-2']) replicas.set(id, startAppLeader({ lease: 'app', namespace: 'default', identity: id, kubeconfig: kc, log: silentLogger(), timings }));
  t.teardown(async () => { for (const r of replicas.values()) await r.stop(); });
  const leaders = async () => {
    for (let i = 0; i < 100; i++) {
      const l = [...replicas].filter(([, r]) => r.isLeader).map(([id]) => id);
      if (l.length === 1) return l;
      await sleep(100);
    }
    return [...replicas].filter(([, r]) => r.isLeader).map(([id]) => id);
  };
  const [first] = await leaders();
  t.ok(first, `one leads: ${first}`);
  t.equal((await kubectl('get', 'lease', 'app', '-o', 'jsonpath={.spec.holderIdentity}')).trim(), first, 'the Lease names it');
  const want = (id: string) => (id === first ? `leader ${id}` : `follower ${first}`);
  for (let i = 0; i < 30 && [...replicas].some(([id, r]) => r.answer() !== want(id)); i++) await sleep(100);
  for (const [id, r] of replicas) t.equal(r.answer(), want(id), `${id} answers (a follower once it has read the Lease)`);
  const t0 = Date.now();
  await replicas.get(first!)!.stop();
  replicas.delete(first!);
  const [second] = await leaders();
  const took = Date.now() - t0;
  t.ok(second && second !== first, `${second} took over in ${took} ms`);
  t.ok(took <= timings.leaseDurationMs + timings.retryPeriodMs * 3, 'within the lease duration (the release makes it quicker)');
  t.equal((await kubectl('get', 'lease', 'app', '-o', 'jsonpath={.spec.leaseTransitions}')).trim(), '1');
});

// The demo's case: the leader's Pod deleted. Its projected token is bound to the Pod, which has a deletionTimestamp
// (now + the grace period) from the delete on; the release on SIGTERM runs in that grace period, so the token must
// still be taken then (upstream refuses it only once the deletionTimestamp is a leeway in the past).
t.test('a token bound to the Pod: released on SIGTERM while the Pod is being deleted', async (t) => {
  await kubectl('create', 'serviceaccount', 'podded');
  await kubectl('create', 'rolebinding', 'podded', '--role=elector', '--serviceaccount=default:podded');
  const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'sl-n1' } };
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'podded-0' }, spec: { nodeName: 'sl-n1', serviceAccountName: 'podded', terminationGracePeriodSeconds: 30, containers: [{ name: 'app', image: 'nodenet/host', command: ['sleep', '3600'] }] } };
  for (const o of [node, pod]) await execa('kubectl', ['--kubeconfig', cp.kubeconfig, 'create', '-f', '-'], { input: JSON.stringify(o) });
  const uid = (await kubectl('get', 'pod', 'podded-0', '-o', 'jsonpath={.metadata.uid}')).trim();
  const token = (await kubectl('create', 'token', 'podded', '--bound-object-kind=Pod', '--bound-object-name=podded-0', `--bound-object-uid=${uid}`)).trim();
  const cfg = parseYaml(readFileSync(cp.kubeconfig, 'utf8')) as { users: { user: Record<string, string> }[] };
  cfg.users[0]!.user = { token };
  const kc = join(dir, 'podded.kubeconfig');
  writeFileSync(kc, toYaml(cfg));
  let stop = () => {};
  const run = serveCommand(['--http', '0', '--tcp', '', '--udp', '', '--bind', '127.0.0.1', '--name', 'podded-0', '--leader-elect', 'podded', '--kubeconfig', kc], {
    stdout: () => {}, env: {}, log: silentLogger(), onSignal: (fn) => { stop = fn; return () => {}; },
  });
  const holder = async () => (await kubectl('get', 'lease', 'podded', '-o', 'jsonpath={.spec.holderIdentity}').catch(() => '')).trim();
  for (let i = 0; i < 50 && (await holder()) !== 'podded-0'; i++) await sleep(100);
  t.equal(await holder(), 'podded-0', 'it leads');
  await kubectl('delete', 'pod', 'podded-0', '--wait=false');
  t.match((await kubectl('get', 'pod', 'podded-0', '-o', 'jsonpath={.metadata.deletionTimestamp}')).trim(), /^\d{4}-/, 'its Pod is being deleted (graceful: on a node)');
  stop();
  t.equal(await run, 0);
  t.equal(await holder(), '', 'released on SIGTERM, with the token of a Pod in its grace period');
});

t.test('a ServiceAccount whose Role does not cover the Lease never leads', async (t) => {
  const kc = await saKubeconfig('nobody');
  const r = startAppLeader({ lease: 'other', namespace: 'default', identity: 'x', kubeconfig: kc, log: silentLogger(), timings });
  await sleep(1500);
  t.notOk(r.isLeader);
  t.equal(r.answer(), 'follower');
  await r.stop();
  const denied = await execa('kubectl', ['--kubeconfig', kc, 'get', 'lease', 'other'], { reject: false });
  t.match(String(denied.stderr), /leases.coordination.k8s.io "other" is forbidden: User "system:serviceaccount:default:nobody"/);
});

t.test('nodenet serve --leader-elect answers /leader; the flags are checked', async (t) => {
  const kc = await saKubeconfig('cli');
  await kubectl('create', 'rolebinding', 'cli', '--role=elector', '--serviceaccount=default:cli');
  let stop = () => {};
  const out: string[] = [];
  const run = serveCommand(['--http', '0', '--tcp', '', '--udp', '', '--bind', '127.0.0.1', '--name', 'solo', '--leader-elect', 'cli', '--kubeconfig', kc], {
    stdout: (s) => out.push(s), env: {}, log: silentLogger(), onSignal: (fn) => { stop = fn; return () => {}; },
  });
  let port = 0;
  for (let i = 0; i < 50 && !port; i++) {
    port = Number(/127\.0\.0\.1:(\d+)/.exec(out.join(''))?.[1] ?? 0);
    await sleep(100);
  }
  const get = () => new Promise<string>((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/leader' }, (res) => {
      let b = '';
      res.on('data', (c: Buffer) => { b += c.toString(); });
      res.on('end', () => resolve(b));
    }).on('error', reject).end();
  });
  let answer = '';
  for (let i = 0; i < 50 && answer !== 'leader solo\n'; i++) {
    answer = await get();
    await sleep(100);
  }
  t.equal(answer, 'leader solo\n');
  stop();
  t.equal(await run, 0);
  t.equal((await kubectl('get', 'lease', 'cli', '-o', 'jsonpath={.spec.holderIdentity}')).trim(), '', 'released on SIGTERM');
  await t.rejects(serveCommand(['--leader-elect', 'Bad_Name'], { stdout: () => {}, env: {} }), /a Lease name/);
  await t.rejects(serveCommand(['--kubeconfig', kc], { stdout: () => {}, env: {} }), /go with --leader-elect/);
  t.equal(inClusterNamespace({ POD_NAMESPACE: 'team' }), 'team');
  t.equal(inClusterNamespace({}, () => 'mine\n'), 'mine');
  t.equal(inClusterNamespace({}, () => { throw new Error('no file'); }), 'default');
});
