/**
 * The control plane on etcd (issue 26, first step): three real etcd members
 * (Debian's etcd-server) on loopback, two `nodenet control-plane`s on them
 * sharing one data directory's CA and tokens, and the real kubectl. Either
 * server answers with the same objects and resourceVersions; a watch opened
 * on one resumes on the other from its last resourceVersion with no 410;
 * the etcd leader killed under writes loses nothing acknowledged; the
 * `kubernetes` EndpointSlice lists the live servers, and one stopping turns
 * /readyz red first. Needs no root.
 */
import t from 'tap';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { startControlPlane, type ControlPlane } from '../controlplane/control-plane.js';
import { EtcdCluster } from '../controlplane/testing/etcd.js';

const dir = mkdtempSync(join(tmpdir(), 'nn-cp-etcd-'));
const etcd = await EtcdCluster.start(3);
const data = join(dir, 'data');
const storage = { kind: 'etcd' as const, endpoints: etcd.endpoints, prefix: '/registry' };
const servers: ControlPlane[] = [];
t.teardown(async () => {
  for (const s of servers) await s.stop().catch(() => {});
  await etcd.close();
  rmSync(dir, { recursive: true, force: true });
});
const kubeconfigs: string[] = [];
for (let i = 0; i < 2; i++) {
  // Each advertises an address of its own in the kubernetes EndpointSlice (TEST-NET-1 addresses, which nothing
  // here dials: an EndpointSlice may not hold a loopback address).
  const s = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: data, storage, compactEveryMs: 3_600_000, advertiseAddress: `192.0.2.${i + 1}` });
  servers.push(s);
  const kc = join(dir, `admin-${i}.kubeconfig`);
  copyFileSync(s.kubeconfig, kc);
  kubeconfigs.push(kc);
}

async function kubectl(i: number, args: readonly string[], input?: string): Promise<string> {
  const r = await execa('kubectl', [...args], { env: { KUBECONFIG: kubeconfigs[i]! }, reject: false, timeout: 60_000, ...(input !== undefined ? { input } : {}) });
  if (r.exitCode !== 0) throw new Error(`kubectl ${args.join(' ')} (server ${i}) exited ${r.exitCode}: ${r.stderr}`);
  return String(r.stdout);
}

/** The events of a watch on server i from rv, until n arrived (or 10 s). */
function watchFrom(i: number, rv: string, n: number): Promise<{ code: number; events: { type: string; object: { metadata: { name: string; resourceVersion: string } } }[] }> {
  const u = new URL(`/api/v1/namespaces/default/services?watch=1&resourceVersion=${rv}`, servers[i]!.url);
  const ca = readFileSync(join(data, 'pki', 'ca.crt'), 'utf8');
  const token = (JSON.parse(readFileSync(join(data, 'tokens.json'), 'utf8')) as { admin: string }).admin;
  return new Promise((resolve, reject) => {
    const events: { type: string; object: { metadata: { name: string; resourceVersion: string } } }[] = [];
    const req = request({ host: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, ca, headers: { Authorization: `Bearer ${token}` } }, (res) => {
      let buf = '';
      const timer = setTimeout(() => done(), 10_000);
      const done = () => {
        clearTimeout(timer);
        req.destroy();
        resolve({ code: res.statusCode ?? 0, events });
      };
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        buf += c;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (line.trim()) events.push(JSON.parse(line) as never);
        }
        if (events.length >= n) done();
      });
      res.on('end', done);
    });
    req.on('error', reject);
    req.end();
  });
}

const svc = (name: string) => `apiVersion: v1\nkind: Service\nmetadata: {name: ${name}}\nspec: {ports: [{port: 80}]}\n`;

t.test('two API servers on one etcd: the same objects and resourceVersions from either', async (t) => {
  t.match(await kubectl(0, ['apply', '-f', '-'], svc('web')), /service\/web created/);
  const a = JSON.parse(await kubectl(0, ['get', 'svc', 'web', '-o', 'json'])) as { metadata: { resourceVersion: string; uid: string }; spec: { clusterIP: string } };
  const b = JSON.parse(await kubectl(1, ['get', 'svc', 'web', '-o', 'json'])) as typeof a;
  t.equal(b.metadata.resourceVersion, a.metadata.resourceVersion, 'one resourceVersion: etcd\'s mod_revision');
  t.equal(b.metadata.uid, a.metadata.uid);
  t.equal(b.spec.clusterIP, a.spec.clusterIP);
  t.match(await kubectl(1, ['get', 'ipaddresses']), new RegExp(`^${a.spec.clusterIP.replaceAll('.', '\\.')}\\s+services/default/web`, 'm'), 'its IPAddress, written in the same etcd transaction');
  t.match(await kubectl(1, ['get', 'ns', '-o', 'name']), /namespace\/kube-system/, 'bootstrap ran once, without a conflict between the two');
});

t.test('a watch opened on one server resumes on the other from its last resourceVersion: no 410, nothing missed or repeated', async (t) => {
  const list = JSON.parse(await kubectl(0, ['get', '--raw', '/api/v1/namespaces/default/services'])) as { metadata: { resourceVersion: string } };
  const from = list.metadata.resourceVersion;
  for (const n of ['r1', 'r2', 'r3']) await kubectl(1, ['apply', '-f', '-'], svc(n));
  const first = await watchFrom(0, from, 3);
  t.equal(first.code, 200);
  t.same(first.events.map((e) => `${e.type} ${e.object.metadata.name}`), ['ADDED r1', 'ADDED r2', 'ADDED r3']);
  const mid = first.events[0]!.object.metadata.resourceVersion;
  const resumed = await watchFrom(1, mid, 2);
  t.equal(resumed.code, 200, 'no 410: the other server serves the same revisions');
  t.same(resumed.events.map((e) => `${e.type} ${e.object.metadata.name}`), ['ADDED r2', 'ADDED r3'], 'exactly the events after it');
});

t.test('the etcd leader killed under writes through both servers: writes go on after an election, nothing acknowledged is lost', async (t) => {
  const leader = await etcd.leader();
  t.ok(leader >= 0, `member ${leader} leads`);
  const acked: string[] = [];
  let failed = 0;
  let stop = false;
  let killed = false;
  let ackedBefore = 0;
  let ackedAfter = 0;
  const writers = [0, 1].map(async (i) => {
    for (let n = 0; !stop; n++) {
      const name = `k${i}-${n}`;
      const sentAfterKill = killed;
      try {
        await kubectl(i, ['create', 'service', 'clusterip', name, '--tcp=80:80']);
        acked.push(name);
        if (sentAfterKill) ackedAfter++;
        else ackedBefore++;
      } catch {
        failed++;
      }
    }
  });
  // Wait on writes, not on a clock: a loaded machine runs few kubectl per second.
  const until = async (cond: () => boolean, ms: number): Promise<void> => {
    for (const end = Date.now() + ms; !cond() && Date.now() < end;) await new Promise((r) => setTimeout(r, 100));
  };
  await until(() => ackedBefore >= 2, 60_000);
  await etcd.kill(leader);
  killed = true;
  // Writes sent after the kill: the first ones may be refused during the election, then they go through.
  await until(() => ackedAfter >= 3, 90_000);
  stop = true;
  await Promise.all(writers);
  const names = new Set((await kubectl(0, ['get', 'svc', '-o', 'name'])).split('\n').filter(Boolean).map((x) => x.replace('service/', '')));
  t.ok(ackedBefore >= 2, `${ackedBefore} writes acknowledged before the leader was killed`);
  t.ok(ackedAfter >= 3, `${ackedAfter} writes sent after the kill acknowledged (${failed} refused during the election)`);
  t.same(acked.filter((n) => !names.has(n)), [], 'every acknowledged Service is there');
  t.notOk(await etcd.leader() === leader, 'another member leads');
  etcd.start(leader);
  await etcd.waitReady();
});

/** GET path on a server's URL without a token (the health endpoints are anonymous). */
function getAnon(url: string, path: string): Promise<{ code: number; body: string }> {
  const u = new URL(path, url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, ca: readFileSync(join(data, 'pki', 'ca.crt'), 'utf8') }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { body += c; });
      res.on('end', () => resolve({ code: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const sliceAddresses = async (i: number) => (await kubectl(i, ['get', 'endpointslice', 'kubernetes', '-o', 'jsonpath={.endpoints[*].addresses[0]}'])).split(' ').filter(Boolean);

t.test('the kubernetes EndpointSlice lists every live API server; one stopping turns /readyz red first, then leaves at once', async (t) => {
  t.same(await sliceAddresses(1), ['192.0.2.1', '192.0.2.2'], 'both servers, from their leases');
  const third = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: data, storage, compactEveryMs: 3_600_000, advertiseAddress: '192.0.2.3', shutdownDelayMs: 1500 });
  t.teardown(() => third.stop().catch(() => {}));
  t.same(await sliceAddresses(0), ['192.0.2.1', '192.0.2.2', '192.0.2.3'], 'a third joins at its start');
  t.equal((await getAnon(third.url, '/readyz')).code, 200);
  const stopping = third.stop();
  await new Promise((r) => setTimeout(r, 300));
  const red = await getAnon(third.url, '/readyz?verbose');
  t.equal(red.code, 500, '/readyz is red during the shutdown delay');
  t.match(red.body, /\[-\]shutdown failed/, 'saying why, as kube-apiserver does');
  t.match(await kubectl(0, ['get', '--raw', '/version']), /gitVersion/, 'while the others serve as before');
  t.equal((await getAnon(third.url, '/healthz')).code, 200, 'and it still serves every request');
  t.same(await sliceAddresses(0), ['192.0.2.1', '192.0.2.2'], 'it left the slice at the start of its stop, no TTL to wait');
  await stopping;
  await t.rejects(getAnon(third.url, '/healthz'), 'then it closes');
});

t.test('leader election: one holder of kube-controller-manager and kube-scheduler; a clean stop hands both over at the next retry', async (t) => {
  const holder = async (i: number, lease: string) => kubectl(i, ['get', 'lease', '-n', 'kube-system', lease, '-o', 'jsonpath={.spec.holderIdentity}']);
  const cm = await holder(1, 'kube-controller-manager');
  const sched = await holder(1, 'kube-scheduler');
  t.match(cm, /^.+_[0-9a-f-]{36}$/, `kube-controller-manager held by ${cm}`);
  t.equal(sched, cm, 'the first server leads both');
  t.match(await kubectl(1, ['get', 'lease', '-n', 'kube-system']), /kube-controller-manager\s+\S+_[0-9a-f-]{36}/, 'kubectl shows the holders, as on a real cluster');
  await servers[0]!.stop();
  servers.shift();
  kubeconfigs.shift();
  let next = '';
  for (let i = 0; i < 50 && (next === '' || next === cm); i++) {
    await new Promise((r) => setTimeout(r, 200));
    next = await holder(0, 'kube-controller-manager');
  }
  t.not(next, cm, 'another replica holds it now');
  t.not(next, '');
  // The new leader's controllers act: a Deployment gets its ReplicaSet.
  await kubectl(0, ['create', 'deployment', 'after', '--image=nodenet/host', '--', 'sleep', '1']);
  let rs = '';
  for (let i = 0; i < 50 && !rs; i++) {
    await new Promise((r) => setTimeout(r, 200));
    rs = await kubectl(0, ['get', 'rs', '-l', 'app=after', '-o', 'name']);
  }
  t.match(rs, /replicaset\.apps\/after-/, 'reconciled by the new leader');
});
