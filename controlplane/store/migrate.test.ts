/**
 * `nodenet control-plane migrate`: a real SQLite store moved into a real
 * etcd (Debian's etcd-server 3.4.23, one member on loopback ports of its
 * own). The SQLite store is filled by a real control plane (Services with
 * their ClusterIP and NodePort objects, Nodes with their pod CIDR claims, a
 * LoadBalancer with its IP claim) and then through the storage interface
 * (creates, updates, deletes, a compaction). Checked: every object in etcd
 * after, the same body but for its resourceVersion; the database file
 * unchanged; a control plane on the migrated etcd lists, watches and keeps
 * the allocations; a migration while a control plane holds the database, or
 * into a non-empty target, is refused with nothing written; a migration that
 * failed half-way goes on when run again. The paging and batching over the
 * in-memory store. Needs no root.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import { startControlPlane } from '../control-plane.js';
import { EtcdCluster } from '../testing/etcd.js';
import { EtcdStorage } from './etcd/etcd-storage.js';
import { LocalStorage } from './local-storage.js';
import { MemoryStorage } from './memory-storage.js';
import { bodyOf, migrateSqliteToEtcd, migrateStorage, walk } from './migrate.js';
import { openSqliteReadOnly } from './sqlite-readonly.js';
import { SqlitePersistence } from './sqlite-persistence.js';
import type { Storage } from './storage.js';
import { grOf, type KObject, type Stored } from './types.js';

const dir = mkdtempSync(join(tmpdir(), 'nn-migrate-'));
const etcd = await EtcdCluster.start(1, { prefix: 'nn-migrate-etcd-' });
t.teardown(async () => {
  await etcd.close();
  rmSync(dir, { recursive: true, force: true });
});
const data = join(dir, 'data');
const db = join(data, 'state.db');

interface Reply {
  readonly code: number;
  readonly json: Record<string, unknown>;
}

/** One plain-HTTP request to a control plane started with insecureHttp (no token: the admin). */
function call(base: string, method: string, path: string, body?: unknown): Promise<Reply> {
  const u = new URL(path, base);
  const data = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path: `${u.pathname}${u.search}`, headers: data ? { 'Content-Type': 'application/json' } : {} }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ code: res.statusCode ?? 0, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  for (const t0 = Date.now(); ; await new Promise((r) => setTimeout(r, 100))) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
  }
}

const meta = (o: Readonly<KObject>) => (o.metadata ?? {}) as { name?: string; uid?: string; creationTimestamp?: string; resourceVersion?: string };
const items = (r: Reply) => (r.json['items'] ?? []) as KObject[];
const sha = (f: string) => (existsSync(f) ? createHash('sha256').update(readFileSync(f)).digest('hex') : 'absent');
const slice = (i: number): KObject => ({
  apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: `eps-${String(i).padStart(3, '0')}`, namespace: 'shop', uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, creationTimestamp: '2026-12-05T10:00:00Z', labels: { 'kubernetes.io/service-name': 'web' } },
  addressType: 'IPv4', endpoints: [{ addresses: [`10.244.1.${i % 250}`] }], ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
});

// ---- the source: a real control plane's store, then the storage interface ----

{
  const cp = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: data, insecureHttp: true, loadBalancerPool: '192.0.2.0/28', compactEveryMs: 3_600_000 });
  try {
    const ok = async (r: Promise<Reply>) => {
      const x = await r;
      if (x.code >= 300) throw new Error(`HTTP ${x.code}: ${JSON.stringify(x.json)}`);
      return x;
    };
    await ok(call(cp.url, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } }));
    await ok(call(cp.url, 'POST', '/api/v1/namespaces/shop/services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { ports: [{ port: 80 }] } }));
    await ok(call(cp.url, 'POST', '/api/v1/namespaces/shop/services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'np' }, spec: { type: 'NodePort', ports: [{ port: 80, nodePort: 30080 }] } }));
    await ok(call(cp.url, 'POST', '/api/v1/namespaces/shop/services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'lb' }, spec: { type: 'LoadBalancer', ports: [{ port: 443 }] } }));
    for (const n of ['n1', 'n2', 'n3']) await ok(call(cp.url, 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: n } }));
    // The controllers (behind leader election) give the Nodes their pod CIDRs and the LoadBalancer its address.
    await until('pod CIDRs', async () => (items(await call(cp.url, 'GET', '/api/v1/nodes')).every((n) => (n['spec'] as { podCIDR?: string } | undefined)?.podCIDR) ? true : undefined));
    await until('the load balancer IP', async () => ((await call(cp.url, 'GET', '/api/v1/namespaces/shop/services/lb')).json['status'] as { loadBalancer?: { ingress?: unknown[] } } | undefined)?.loadBalancer?.ingress?.length ? true : undefined);
  } finally {
    await cp.stop();
  }
  const s = new LocalStorage({ persistence: new SqlitePersistence(db) });
  const stored: Stored[] = [];
  for (let i = 0; i < 240; i++) stored.push(await s.create(`endpointslices.discovery.k8s.io/shop/eps-${String(i).padStart(3, '0')}`, slice(i)));
  for (let i = 0; i < 40; i++) {
    const cur = stored[i]!;
    await s.update(cur.key, { ...cur.object, endpoints: [{ addresses: ['10.244.9.9'], conditions: { ready: false } }] }, cur.rev);
  }
  for (let i = 200; i < 220; i++) await s.delete(stored[i]!.key);
  await s.compact((await s.currentRev()) - 30);
  await s.close();
}

// ---- the migration ----

t.test('a database a running control plane holds is refused, and nothing is written', async (t) => {
  const holder = new LocalStorage({ persistence: new SqlitePersistence(db) });
  try {
    const err = await migrateSqliteToEtcd({ dir: data, endpoints: etcd.endpoints }).then(() => null, (e: unknown) => e);
    t.ok(err instanceof NodenetError && err.code === ErrorCode.StoreLocked, 'StoreLocked');
    t.match((err as Error).message, new RegExp(`in use by a running nodenet control plane \\(pid ${process.pid}\\): stop it first`));
  } finally {
    await holder.close();
  }
  const target = new EtcdStorage({ client: etcd.client() });
  t.same((await target.list('')).items, [], 'etcd holds nothing');
  await target.close();
});

// What the source holds, read-only, and its files' hashes, before the migration (set by the test below).
const before = new Map<string, Stored>();
let sourceRev = 0;
const files = [db, `${db}-wal`];
let hashes: string[] = [];

t.test('every object is copied, the same but for its resourceVersion; the database is left as it was', async (t) => {
  const src = openSqliteReadOnly(db);
  for await (const s of walk(src, 1000)) before.set(s.key, s);
  sourceRev = await src.currentRev();
  await src.close();
  hashes = files.map(sha);
  const progress: number[] = [];
  const r = await migrateSqliteToEtcd({ dir: data, endpoints: etcd.endpoints, pageSize: 50, batch: 16, onProgress: (p) => progress.push(p.copied) });
  t.equal(r.copied, before.size, `${before.size} objects copied`);
  t.equal(r.verified, before.size, 'and read back');
  t.equal(r.skipped, 0);
  t.equal(r.sourceRev, sourceRev, 'at the source\'s revision');
  t.ok(r.transactions >= Math.ceil(before.size / 16), `${r.transactions} transactions of at most 16`);
  t.same(progress, [...progress].sort((a, b) => a - b), 'progress only grows');
  t.equal(progress[progress.length - 1], before.size);
  const byGr = new Map<string, number>();
  for (const k of before.keys()) byGr.set(grOf(k), (byGr.get(grOf(k)) ?? 0) + 1);
  t.same(new Map(r.resources.map((c) => [c.resource, c.copied])), byGr, 'the counts per resource');
  for (const gr of ['services', 'nodes', 'namespaces', 'endpointslices.discovery.k8s.io', 'ipaddresses.networking.k8s.io', 'servicenodeports.nodenet.io', 'podcidrs.nodenet.io', 'loadbalancerips.nodenet.io', 'leases.coordination.k8s.io']) {
    t.ok((byGr.get(gr) ?? 0) > 0, `${gr} came along (${byGr.get(gr) ?? 0})`);
  }
  t.equal([...before.keys()].filter((k) => k.startsWith('endpointslices.discovery.k8s.io/shop/')).length, 220, 'the deleted slices did not');

  const target = new EtcdStorage({ client: etcd.client() });
  try {
    const after = new Map<string, Stored>();
    for await (const s of walk(target, 100)) after.set(s.key, s);
    t.same([...after.keys()], [...before.keys()], 'the same keys');
    let same = 0;
    let uids = 0;
    let withUid = 0;
    for (const [k, s] of before) {
      const m = after.get(k)!;
      if (bodyOf(m.object) === bodyOf(s.object)) same++;
      if (meta(s.object).uid) withUid++;
      if (meta(s.object).uid && meta(m.object).uid === meta(s.object).uid && meta(m.object).creationTimestamp === meta(s.object).creationTimestamp) uids++;
      if (m.rev <= r.targetRevBefore || m.rev > r.targetRev || meta(m.object).resourceVersion !== String(m.rev)) t.fail(`${k}: resourceVersion ${meta(m.object).resourceVersion} is not etcd's`);
    }
    t.equal(same, before.size, 'every body the same');
    t.ok(withUid > 240, `${withUid} objects with a uid`);
    t.equal(uids, withUid, 'every uid and creationTimestamp kept');
    const updated = after.get('endpointslices.discovery.k8s.io/shop/eps-000')!;
    t.same((updated.object['endpoints'] as unknown[])[0], { addresses: ['10.244.9.9'], conditions: { ready: false } }, 'an updated object as it was last');
  } finally {
    await target.close();
  }
  t.same(files.map(sha), hashes, 'state.db and its WAL are byte for byte the same');
  const again = openSqliteReadOnly(db);
  t.equal(await again.currentRev(), sourceRev, 'and the source\'s revision');
  await again.close();
});

t.test('a control plane on the migrated etcd serves them: lists, paged lists, watches, and the allocations hold', async (t) => {
  const cp = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: data, insecureHttp: true, loadBalancerPool: '192.0.2.0/28', storage: { kind: 'etcd', endpoints: etcd.endpoints, prefix: '/registry' }, compactEveryMs: 3_600_000 });
  try {
    const svcs = await call(cp.url, 'GET', '/api/v1/namespaces/shop/services');
    t.equal(svcs.code, 200);
    t.same(items(svcs).map((o) => meta(o).name), ['lb', 'np', 'web']);
    for (const o of items(svcs)) t.equal(meta(o).uid, meta(before.get(`services/shop/${meta(o).name}`)!.object).uid, `${meta(o).name}: the same uid`);
    const lb = items(svcs).find((o) => meta(o).name === 'lb')!;
    t.same(lb['status'], before.get('services/shop/lb')!.object['status'], 'the load balancer keeps its address');

    const names: string[] = [];
    let cont = '';
    let pages = 0;
    do {
      const page = await call(cp.url, 'GET', `/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices?limit=50${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
      t.equal(page.code, 200);
      names.push(...items(page).map((o) => meta(o).name!));
      cont = ((page.json['metadata'] as { continue?: string }).continue) ?? '';
      pages++;
    } while (cont);
    t.equal(names.length, 220, `220 EndpointSlices in ${pages} pages`);
    t.same(names, [...names].sort(), 'in order');

    const nodes = items(await call(cp.url, 'GET', '/api/v1/nodes'));
    t.same(nodes.map((n) => (n['spec'] as { podCIDR: string }).podCIDR), ['n1', 'n2', 'n3'].map((n) => (before.get(`nodes//${n}`)!.object['spec'] as { podCIDR: string }).podCIDR), 'the Nodes keep their pod CIDRs');

    // A watch from the list's resourceVersion sees what comes next.
    const rv = (svcs.json['metadata'] as { resourceVersion: string }).resourceVersion;
    const events: { type: string; name: string }[] = [];
    const watch = request({ host: new URL(cp.url).hostname, port: new URL(cp.url).port, path: `/api/v1/namespaces/shop/services?watch=1&resourceVersion=${rv}` });
    const got = new Promise<void>((resolve) => {
      watch.on('response', (res) => {
        let buf = '';
        res.on('data', (c: Buffer) => {
          buf += c.toString();
          for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
            const ev = JSON.parse(buf.slice(0, i)) as { type: string; object: KObject };
            buf = buf.slice(i + 1);
            events.push({ type: ev.type, name: meta(ev.object).name ?? '' });
            if (meta(ev.object).name === 'after') resolve();
          }
        });
      });
    });
    watch.on('error', () => {});
    watch.end();
    const created = await call(cp.url, 'POST', '/api/v1/namespaces/shop/services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'after' }, spec: { ports: [{ port: 80 }] } });
    t.equal(created.code, 201);
    await Promise.race([got, new Promise((r) => setTimeout(r, 10_000))]);
    watch.destroy();
    t.same(events, [{ type: 'ADDED', name: 'after' }], 'the watch from the list\'s resourceVersion has the new Service, and only it');

    // The migrated allocation objects still hold their values.
    const webIP = (before.get('services/shop/web')!.object['spec'] as { clusterIP: string }).clusterIP;
    const ip = await call(cp.url, 'POST', '/api/v1/namespaces/shop/services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'ip-taken' }, spec: { clusterIP: webIP, ports: [{ port: 80 }] } });
    t.equal(ip.code, 422, `web's ClusterIP ${webIP} is taken`);
    t.match(ip.json['message'], /already allocated/);
    const port = await call(cp.url, 'POST', '/api/v1/namespaces/shop/services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'port-taken' }, spec: { type: 'NodePort', ports: [{ port: 80, nodePort: 30080 }] } });
    t.equal(port.code, 422, 'NodePort 30080 is taken');
  } finally {
    await cp.stop();
  }
  t.same(files.map(sha), hashes, 'a control plane on etcd with the same data directory leaves state.db alone');
});

t.test('a second migration into the now non-empty target is refused, and nothing is written', async (t) => {
  const target = new EtcdStorage({ client: etcd.client() });
  try {
    const rev = await target.currentRev();
    const err = await migrateSqliteToEtcd({ dir: data, endpoints: etcd.endpoints }).then(() => null, (e: unknown) => e);
    t.ok(err instanceof NodenetError && err.code === ErrorCode.AlreadyExists, 'AlreadyExists');
    t.match((err as Error).message, /the target already holds objects \(.+ and more\): migrate into an empty one/);
    t.equal(await target.currentRev(), rev, 'etcd\'s revision did not move');
  } finally {
    await target.close();
  }
});

/** `s` whose n-th transaction fails as a lost connection would (the outcome unknown; here nothing was written). */
function failingTxn(s: Storage, n: number): Storage {
  let calls = 0;
  return new Proxy(s, {
    get(target, prop) {
      if (prop === 'txn') {
        return (ops: Parameters<Storage['txn']>[0]) => (++calls === n ? Promise.reject(new NodenetError(ErrorCode.Timeout, 'etcd txn: request timed out (injected)')) : target.txn(ops));
      }
      const v = Reflect.get(target, prop) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

t.test('a migration that failed half-way goes on when run again with a non-empty target allowed; a different object stops it first', async (t) => {
  const source = openSqliteReadOnly(db);
  const target = new EtcdStorage({ client: etcd.client(), prefix: '/resume' });
  try {
    const err = await migrateStorage(source, failingTxn(target, 3), { batch: 16 }).then(() => null, (e: unknown) => e);
    t.ok(err instanceof NodenetError && err.code === ErrorCode.Timeout, 'the write\'s error');
    t.match((err as Error).message, /writing 16 object\(s\) \(.+ \.\. .+\) failed after 32 were copied: etcd txn: request timed out \(injected\)\. Run the migration again with a non-empty target allowed/);

    const refused = await migrateStorage(source, target, { batch: 16 }).then(() => null, (e: unknown) => e);
    t.ok(refused instanceof NodenetError && refused.code === ErrorCode.AlreadyExists, 'not allowed: refused');

    const r = await migrateStorage(source, target, { batch: 16, allowNonEmpty: true });
    t.equal(r.skipped, 32, 'the two transactions that went through are skipped');
    t.equal(r.copied, before.size - 32);
    t.equal(r.verified, before.size);
    t.equal(r.resources.reduce((n, c) => n + c.skipped, 0), 32);

    // Someone changed an object in the target: the next run refuses before writing anything.
    const victim = (await target.get('services/shop/web'))!;
    await target.update(victim.key, { ...victim.object, metadata: { ...victim.object.metadata, labels: { changed: 'yes' } } }, victim.rev);
    await target.create('services/shop/only-in-etcd', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'only-in-etcd', namespace: 'shop' } });
    const rev = await target.currentRev();
    const conflict = await migrateStorage(source, target, { allowNonEmpty: true }).then(() => null, (e: unknown) => e);
    t.ok(conflict instanceof NodenetError && conflict.code === ErrorCode.Conflict, 'Conflict');
    t.match((conflict as Error).message, /the target holds 1 object\(s\) that differ from the source's: services\/shop\/web; nothing was written/);
    t.equal(await target.currentRev(), rev, 'nothing was written');

    await target.update(victim.key, victim.object as KObject, (await target.get(victim.key))!.rev);
    const done = await migrateStorage(source, target, { allowNonEmpty: true });
    t.match(done, { copied: 0, skipped: before.size, extra: 1, verified: before.size }, 'put back: all there, the extra key left alone');
  } finally {
    await target.close();
    await source.close();
  }
});

// ---- paging and batching, over the in-memory store ----

t.test('pages and transactions: every object once, in key order, at most `batch` objects and `batchBytes` per transaction', async (t) => {
  const source = new MemoryStorage();
  for (let i = 0; i < 23; i++) await source.create(`services/ns${i % 3}/s${String(i).padStart(2, '0')}`, { apiVersion: 'v1', kind: 'Service', metadata: { name: `s${i}` } });
  const big = { apiVersion: 'v1', kind: 'Event', metadata: { name: 'big' }, message: 'x'.repeat(3000) };
  await source.create('events/ns0/big', big);
  // A write after the migration starts is not part of it: the copy is at one revision.
  const target = new MemoryStorage();
  const sizes: number[] = [];
  const spy = new Proxy(target, {
    get(tg, prop) {
      if (prop === 'txn') return (ops: Parameters<Storage['txn']>[0]) => (sizes.push(ops.length), tg.txn(ops));
      const v = Reflect.get(tg, prop) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(tg) : v;
    },
  });
  let clock = 0;
  const r = await migrateStorage(source, spy, { pageSize: 5, batch: 4, batchBytes: 2000, now: () => (clock += 1000) });
  t.equal(r.copied, 24);
  t.equal(r.ms, 1000, 'timed with the injected clock');
  t.ok(sizes.every((n) => n <= 4), `transactions of at most 4: ${sizes.join(' ')}`);
  t.equal(sizes[0], 1, 'the big Event goes alone (it sorts first)');
  t.same(r.resources, [{ resource: 'events', copied: 1, skipped: 0 }, { resource: 'services', copied: 23, skipped: 0 }]);
  const keys: string[] = [];
  for await (const s of walk(target, 7)) keys.push(s.key);
  t.same(keys, (await source.list('')).items.map((s) => s.key), 'the same keys, in order');
  t.equal(new Set(keys).size, 24);
});

t.test('walk: pages at the first page\'s revision, so a write during the walk is not seen', async (t) => {
  const s = new MemoryStorage();
  for (let i = 0; i < 6; i++) await s.create(`services/a/s${i}`, { metadata: { name: `s${i}` } });
  const seen: string[] = [];
  for await (const x of walk(s, 2)) {
    seen.push(x.key);
    if (seen.length === 1) await s.create('services/a/s9', { metadata: { name: 's9' } });
  }
  t.same(seen, ['services/a/s0', 'services/a/s1', 'services/a/s2', 'services/a/s3', 'services/a/s4', 'services/a/s5']);
});

t.test('bodyOf: the JSON without the resourceVersion, whatever its place in metadata', async (t) => {
  t.equal(bodyOf({ kind: 'Service', metadata: { resourceVersion: '7', name: 'a' }, spec: {} }), bodyOf({ kind: 'Service', metadata: { name: 'a', resourceVersion: '9' }, spec: {} }));
  t.not(bodyOf({ kind: 'Service', metadata: { name: 'a' } }), bodyOf({ kind: 'Service', metadata: { name: 'b' } }));
  t.equal(bodyOf({ kind: 'X' }), '{"kind":"X","metadata":{}}');
});
