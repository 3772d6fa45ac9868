/**
 * The control plane on etcd under faults (issue 26's fault tests that need
 * no network namespace): three real etcd members (Debian's etcd-server) on
 * loopback, two API servers on them, clients writing Leases through both
 * over HTTPS. Every test records its history of creates, compare-and-swap
 * updates and reads and checks it offline (controlplane/testing/
 * linearizability.ts): nothing acknowledged lost, reordered or duplicated,
 * and a write whose outcome was unknown found applied once or not at all.
 *
 * - the etcd leader killed (SIGKILL) under writes, 10 times, the killed
 *   member restarted each round;
 * - quorum lost (2 of 3 members killed) and restored: writes and reads fail
 *   with 503/504 and a Status naming etcd, never a false success;
 * - a watch cut twice during a catch-up from an old revision (the member
 *   it is on killed, then its connection reset through a proxy): every
 *   revision delivered exactly once, in order;
 * - a watcher stalled past compaction (its watch ended by the server, and it
 *   not back until the history it would resume from is compacted) gets 410
 *   Expired and lists again.
 * Needs no root.
 */
import t, { type Test } from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { rng } from '../lib/testing/rng.js';
import { startControlPlane, type ControlPlane } from '../controlplane/control-plane.js';
import { EtcdClient, parseEtcdEndpoints } from '../controlplane/store/etcd/client.js';
import { EtcdStorage } from '../controlplane/store/etcd/etcd-storage.js';
import type { StoreEvent } from '../controlplane/store/types.js';
import { EtcdCluster } from '../controlplane/testing/etcd.js';
import { checkHistory, classifyHttpWrite, explain, HistoryRecorder, type Call, type Op, type Result } from '../controlplane/testing/linearizability.js';

const dir = mkdtempSync(join(tmpdir(), 'nn-cp-etcd-faults-'));
const data = join(dir, 'data');
const clusters: EtcdCluster[] = [];
const servers: ControlPlane[] = [];
const agents: Agent[] = [];
t.teardown(async () => {
  for (const a of agents) a.destroy();
  for (const s of servers) await s.stop().catch(() => {});
  for (const c of clusters) await c.close();
  rmSync(dir, { recursive: true, force: true });
});
const etcd = await EtcdCluster.start(3);
clusters.push(etcd);
const storage = { kind: 'etcd' as const, endpoints: etcd.endpoints, prefix: '/registry' };
for (let i = 0; i < 2; i++) {
  servers.push(await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: data, storage, compactEveryMs: 3_600_000, advertiseAddress: `192.0.2.${i + 1}` }));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const clock = { now: () => Math.round(performance.now() * 1000) / 1000 };

interface Answer {
  readonly code: number;
  readonly json: Record<string, unknown>;
}

/** HTTPS to one API server with the admin token, over kept-alive connections; a request with no answer in 15 s rejects. */
class Api {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 16 });
  private readonly ca: string;
  private readonly token: string;

  constructor(
    readonly name: string,
    private readonly url: string,
    dataDir: string,
  ) {
    agents.push(this.agent);
    this.ca = readFileSync(join(dataDir, 'pki', 'ca.crt'), 'utf8');
    this.token = (JSON.parse(readFileSync(join(dataDir, 'tokens.json'), 'utf8')) as { admin: string }).admin;
  }

  call(method: string, path: string, body?: unknown): Promise<Answer> {
    const u = new URL(path, this.url);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request({
        host: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, method, ca: this.ca, agent: this.agent, timeout: 15_000,
        headers: { Authorization: `Bearer ${this.token}`, ...(payload !== undefined ? { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(payload)) } : {}) },
      }, (res) => {
        let b = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => { b += c; });
        res.on('end', () => {
          let json: Record<string, unknown> = {};
          try {
            json = JSON.parse(b) as Record<string, unknown>;
          } catch {
            /* not JSON */
          }
          resolve({ code: res.statusCode ?? 0, json });
        });
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error('no answer in 15 s')));
      req.on('error', reject);
      req.end(payload);
    });
  }
}

const apis = servers.map((s, i) => new Api(`api${i}`, s.url, data));
const LEASES = '/apis/coordination.k8s.io/v1/namespaces/default/leases';
const lease = (name: string, holder: string, rv?: number) => ({
  apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, ...(rv !== undefined ? { resourceVersion: String(rv) } : {}) }, spec: { holderIdentity: holder },
});
const rvOf = (a: Answer) => Number((a.json['metadata'] as { resourceVersion?: string } | undefined)?.resourceVersion ?? NaN);
const holderOf = (a: Answer) => String((a.json['spec'] as { holderIdentity?: string } | undefined)?.holderIdentity ?? '');

/** One recorded register operation on the Lease `key` through api; resolves to its Result and the answer (none: no answer). */
async function op(rec: HistoryRecorder, api: Api, client: string, key: string, call: Call): Promise<{ result: Result; answer: Answer | null; recorded: Op }> {
  const invoke = clock.now();
  let answer: Answer | null = null;
  let result: Result;
  try {
    if (call.type === 'create') answer = await api.call('POST', LEASES, lease(key, call.value));
    else if (call.type === 'update') answer = await api.call('PUT', `${LEASES}/${key}`, lease(key, call.value, call.expectRev));
    else answer = await api.call('GET', `${LEASES}/${key}`);
    const reason = String(answer.json['reason'] ?? '');
    if (call.type === 'get') {
      result = answer.code === 200 ? { type: 'ok', rv: rvOf(answer), value: holderOf(answer) } : answer.code === 404 ? { type: 'notFound' } : { type: 'unknown', why: `${answer.code} ${reason}` };
    } else {
      result = classifyHttpWrite(answer.code, reason, answer.code < 300 ? rvOf(answer) : undefined, String(answer.json['message'] ?? ''));
    }
  } catch (e) {
    result = { type: 'unknown', why: e instanceof Error ? e.message : String(e) };
  }
  const recorded = rec.push(`${client}@${api.name}`, key, call, result, invoke);
  return { result, answer, recorded };
}

/**
 * Clients writing and reading Leases through the API servers until stopped: creates, CAS updates on the version
 * each last saw (so some conflict), reads; a write whose outcome is unknown is retried as it was (a create, or a CAS
 * on the same version), then read back.
 */
function workload(rec: HistoryRecorder, keys: readonly string[], perServer: number, seed: number) {
  const r = rng(seed);
  let stopped = false;
  let seq = 0;
  const acks: number[] = []; // invoke times of acknowledged writes
  const retries = new Map<string, number>(); // what the retries of unknown writes got
  const clients = apis.flatMap((api) => Array.from({ length: perServer }, (_, n) => ({ api, name: `c${n}` })));
  const loops = clients.map(async ({ api, name }) => {
    const known = new Map<string, number>();
    const learn = (key: string, res: Result, write: boolean) => {
      if (res.type === 'ok') known.set(key, res.rv);
      else if (res.type === 'notFound' || res.type === 'conflict' || (write && res.type === 'exists')) known.delete(key);
    };
    while (!stopped) {
      const key = keys[Math.floor(r() * keys.length)]!;
      const rv = known.get(key);
      const x = r();
      const value = `${api.name}-${name}-${seq++}`;
      const call: Call = rv === undefined ? (x < 0.5 ? { type: 'create', value } : { type: 'get' }) : x < 0.25 ? { type: 'get' } : x < 0.9 ? { type: 'update', value, expectRev: rv } : { type: 'create', value };
      const first = await op(rec, api, name, key, call);
      learn(key, first.result, call.type !== 'get');
      if (first.result.type === 'ok' && call.type !== 'get') acks.push(first.recorded.invoke);
      if (call.type !== 'get' && first.result.type === 'unknown') {
        // The client's retry: the same request again, then a read.
        await sleep(200);
        const again = await op(rec, api, name, key, call);
        retries.set(again.result.type, (retries.get(again.result.type) ?? 0) + 1);
        learn(key, again.result, true);
        learn(key, (await op(rec, api, name, key, { type: 'get' })).result, false);
      } else if (first.result.type === 'conflict' || first.result.type === 'exists') {
        learn(key, (await op(rec, api, name, key, { type: 'get' })).result, false);
      }
      await sleep(r() * 10);
    }
  });
  return {
    /** Writes acknowledged that were invoked after time `since`. */
    ackedSince: (since: number) => acks.filter((a) => a > since).length,
    /** What the retries of writes with an unknown outcome got: ok (the first was not applied), exists or conflict (it was, or another write came first). */
    retries: () => [...retries.entries()].map(([k, n]) => `${n} ${k}`).join(', ') || 'none',
    async stop(): Promise<void> {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

/** Every key read through every server at the end (recorded): what the checker holds the writes to. */
async function readAll(rec: HistoryRecorder, keys: readonly string[]): Promise<void> {
  for (const api of apis) for (const key of keys) await op(rec, api, 'final', key, { type: 'get' });
}

/**
 * The checker's verdict on a history, as a tap assertion; a failing history is kept in a file (named in the
 * message) for a closer look.
 */
function linearizable(t: Test, rec: HistoryRecorder, name: string): void {
  const r = checkHistory(rec.ops);
  if (r.ok) {
    t.pass(explain(r));
    return;
  }
  const file = join(tmpdir(), `nn-etcd-faults-${name}-${process.pid}.json`);
  writeFileSync(file, JSON.stringify(rec.ops));
  t.fail(`${explain(r)}\n(the history: ${file})`);
}

function stats(ops: readonly Op[]): string {
  const writes = ops.filter((o) => o.call.type !== 'get');
  const n = (f: (o: Op) => boolean) => writes.filter(f).length;
  return `${ops.length} operations, ${writes.length} writes: ${n((o) => o.result.type === 'ok')} acknowledged, ${n((o) => o.result.type === 'conflict' || o.result.type === 'exists')} refused by their check, ${n((o) => o.result.type === 'unknown')} unknown, ${n((o) => o.result.type === 'failed')} failed`;
}

/** Until member i answers and has a leader (a restarted member caught up enough to serve). */
async function memberReady(i: number): Promise<void> {
  for (let n = 0; n < 150; n++) {
    const c = etcd.client(i);
    try {
      const st = await c.status(1000);
      if (st.leader !== 0n) return;
    } catch {
      /* starting */
    } finally {
      c.close();
    }
    await sleep(100);
  }
  throw new Error(`etcd member ${i} did not come back`);
}

t.test('the etcd leader killed under writes through two API servers, 10 times: writes go on, the history is linearizable', async (t) => {
  const rec = new HistoryRecorder(clock);
  const keys = Array.from({ length: 12 }, (_, i) => `kill-${i}`);
  const w = workload(rec, keys, 3, 26);
  const leaders: number[] = [];
  try {
    for (let round = 0; round < 10; round++) {
      await sleep(600);
      const leader = await etcd.waitLeader();
      leaders.push(leader);
      const killedAt = clock.now();
      await etcd.kill(leader);
      // Writes invoked after the kill are acknowledged once another member leads.
      for (let i = 0; i < 300 && w.ackedSince(killedAt) < 3; i++) await sleep(50);
      t.ok(w.ackedSince(killedAt) >= 3, `round ${round + 1}: m${leader} killed; writes acknowledged after it (${w.ackedSince(killedAt)})`);
      t.not(await etcd.waitLeader(leader), leader, `round ${round + 1}: another member leads`);
      etcd.start(leader);
      await memberReady(leader);
    }
  } finally {
    await w.stop();
  }
  await readAll(rec, keys);
  linearizable(t, rec, 'leader-kill');
  const acked = rec.ops.filter((o) => o.call.type !== 'get' && o.result.type === 'ok').length;
  t.ok(acked > 100, stats(rec.ops));
  t.ok(rec.ops.some((o) => o.call.type !== 'get' && o.result.type === 'unknown'), 'some writes had an unknown outcome (and were checked as such)');
  t.comment(`leaders killed: ${leaders.map((l) => `m${l}`).join(' ')}; ${stats(rec.ops)}; the retries of the unknown writes got: ${w.retries()}`);
});

t.test('quorum lost (2 of 3 members killed) and restored: writes fail with 503/504 naming etcd, never a false success; then everything goes on', async (t) => {
  const rec = new HistoryRecorder(clock);
  const keys = Array.from({ length: 6 }, (_, i) => `quorum-${i}`);
  const before = workload(rec, keys, 2, 27);
  await sleep(1500);
  await before.stop();
  await etcd.waitLeader();
  const down = await etcd.followers();
  // Kill the two followers: the leader stays alone, accepts proposals it cannot commit, and steps down.
  await etcd.killAll(down.slice(0, 2));
  const lossAt = clock.now();
  const ops: Promise<{ result: Result; answer: Answer | null; recorded: Op; what: string }>[] = [];
  // Every server: a create of a new key, a CAS update on the version last read, and a read, all at once.
  const current = new Map<string, number>();
  for (const o of rec.ops) if (o.result.type === 'ok') current.set(o.key, Math.max(o.result.rv, current.get(o.key) ?? 0));
  for (const api of apis) {
    const key = keys.filter((k) => current.has(k))[apis.indexOf(api)]!;
    ops.push(op(rec, api, 'loss', `quorum-new-${api.name}`, { type: 'create', value: `loss-create-${api.name}` }).then((x) => ({ ...x, what: `${api.name} create` })));
    ops.push(op(rec, api, 'loss', key, { type: 'update', value: `loss-update-${api.name}`, expectRev: current.get(key)! }).then((x) => ({ ...x, what: `${api.name} update` })));
    ops.push(op(rec, api, 'loss', key, { type: 'get' }).then((x) => ({ ...x, what: `${api.name} get` })));
  }
  const during = await Promise.all(ops);
  for (const { answer, result, what } of during) {
    t.not(result.type, 'ok', `${what}: no success without a quorum`);
    t.ok(answer && (answer.code === 503 || answer.code === 504), `${what}: ${answer?.code} ${String(answer?.json['reason'])}`);
    t.equal(answer?.json['kind'], 'Status');
    t.match(String(answer?.json['reason']), /^(ServiceUnavailable|Timeout)$/);
    t.match(String(answer?.json['message']), /etcd/, `${what}: the message names etcd: ${String(answer?.json['message'])}`);
    t.match(String(answer?.json['message']), /quorum|unavailable|no leader|No connection established/i, `${what}: the message says why`);
  }
  t.comment(`quorum lost for ${((clock.now() - lossAt) / 1000).toFixed(1)} s; the answers: ${[...new Set(during.map((d) => `${d.answer?.code} ${String(d.answer?.json['message'] ?? '').slice(0, 60)}`))].join(' | ')}`);
  etcd.startAll();
  await etcd.waitReady();
  for (const i of down) await memberReady(i);
  // The clients find out what became of the writes they could not know about, then write as before.
  for (const api of apis) {
    await op(rec, api, 'after', `quorum-new-${api.name}`, { type: 'get' });
    await op(rec, api, 'after', keys.filter((k) => current.has(k))[apis.indexOf(api)]!, { type: 'get' });
  }
  const restoredAt = clock.now();
  const after = workload(rec, [...keys, ...apis.map((a) => `quorum-new-${a.name}`)], 2, 28);
  for (let i = 0; i < 300 && after.ackedSince(restoredAt) < 20; i++) await sleep(50);
  await after.stop();
  t.ok(after.ackedSince(restoredAt) >= 20, `writes acknowledged after the quorum came back (${after.ackedSince(restoredAt)})`);
  await readAll(rec, [...keys, ...apis.map((a) => `quorum-new-${a.name}`)]);
  linearizable(t, rec, 'quorum');
  t.comment(stats(rec.ops));
});

t.test('a watch cut during a catch-up from an old revision (its member killed, its connection reset) resumes with every revision exactly once, in order', async (t) => {
  const [a, b] = (await etcd.followers()) as [number, number];
  t.ok(a !== undefined && b !== undefined, `followers m${a} and m${b}`);
  const writer = new EtcdStorage({ client: etcd.client(), prefix: '/nn-catchup' });
  t.teardown(() => writer.close());
  const from = await writer.currentRev();
  // The history to catch up on: creates, updates and deletes of 300 keys, 3,000 revisions (etcd 3.4 sends a
  // catch-up 1,000 revisions per response, one response per 100 ms sync round).
  const written = new Map<number, string>(); // rev -> "TYPE key"
  const N = 300;
  const keyOf = (i: number) => `leases/default/c${i}`;
  const obj = (i: number, gen: number) => ({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: `c${i}`, namespace: 'default' }, spec: { holderIdentity: `g${gen}` } });
  await Promise.all(Array.from({ length: 16 }, async (_, lane) => {
    for (let i = lane; i < N; i += 16) {
      let cur = await writer.create(keyOf(i), obj(i, 0));
      written.set(cur.rev, `ADDED ${keyOf(i)}`);
      for (let g = 1; g <= 8; g++) {
        cur = await writer.update(keyOf(i), obj(i, g), cur.rev);
        written.set(cur.rev, `MODIFIED ${keyOf(i)}`);
      }
      const del = await writer.delete(keyOf(i), cur.rev);
      written.set(del.rev, `DELETED ${keyOf(i)}`);
    }
  }));
  await writer.close();
  t.equal(written.size, N * 10);
  // The watcher reaches two followers through proxies, a first. Cut 1 kills a, the member it is on: it resumes on
  // b. Cut 2 resets its connection to b (b stays up): it resumes on b again.
  const pa = await etcd.proxy(a);
  const pb = await etcd.proxy(b);
  const logged: { msg: string; rev?: number }[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void logged.push(JSON.parse(line) as { msg: string; rev?: number }) });
  const watcher = new EtcdStorage({ client: new EtcdClient({ endpoints: parseEtcdEndpoints(`${pa.endpoint},${pb.endpoint}`) }), prefix: '/nn-catchup', log });
  t.teardown(() => watcher.close());
  const got: StoreEvent[] = [];
  const errors: Error[] = [];
  const cuts: string[] = [];
  let done: () => void = () => {};
  const finished = new Promise<void>((r) => (done = r));
  const h = watcher.watch({
    prefix: 'leases/',
    afterRev: from,
    onEvent: (e) => {
      got.push(e);
      if (got.length === Math.floor(written.size * 0.3)) {
        cuts.push(`m${a} killed after ${got.length} events (through its proxy: ${pa.open} connection)`);
        void etcd.kill(a);
      }
      if (got.length === Math.floor(written.size * 0.6)) cuts.push(`${pb.cut()} connection to m${b} reset after ${got.length} events`);
      if (got.length >= written.size) done();
    },
    onError: (e) => {
      errors.push(e);
      done();
    },
  });
  const timer = setTimeout(done, 60_000);
  await finished;
  clearTimeout(timer);
  // Nothing more may come: a repeat after the last event would show here.
  await sleep(500);
  h.stop();
  await watcher.close();
  etcd.start(a);
  await memberReady(a);
  t.same(errors.map((e) => e.message), [], 'no error: the watch resumed by itself');
  t.equal(cuts.length, 2, cuts.join('; '));
  t.match(cuts[1], /^1 connection/, 'the watch was on m' + b + ' when its connection was reset');
  const broken = logged.filter((l) => /watch broken/.test(l.msg)).map((l) => l.rev ?? -1);
  const lastRev = Math.max(...written.keys());
  t.ok(broken.length >= 2 && broken.every((r) => r > from && r < lastRev), `the stream broke in the middle of the catch-up and was opened again from the revision after ${broken.join(', ')} (the catch-up runs from ${from} to ${lastRev})`);
  const revs = got.map((e) => e.rev);
  t.equal(got.length, written.size, `${got.length} events for ${written.size} revisions`);
  t.equal(new Set(revs).size, revs.length, 'no revision twice');
  t.ok(revs.every((r, i) => i === 0 || r > revs[i - 1]!), 'in revision order');
  t.same(got.map((e) => `${e.rev} ${e.type} ${e.key}`), [...written.entries()].sort((x, y) => x[0] - y[0]).map(([rev, what]) => `${rev} ${what}`), 'exactly the revisions written, each once');
  // Each event's previous version is the one the event before it on that key delivered.
  const last = new Map<string, number>();
  const badPrev = got.filter((e) => {
    const want = last.get(e.key);
    last.set(e.key, e.rev);
    return e.type === 'ADDED' ? e.prev !== null : e.prev?.rev !== want;
  });
  t.same(badPrev.map((e) => `${e.rev} ${e.key}`), [], 'every event carries the version before it');
});

t.test('a watcher stalled past compaction gets 410 Expired and lists again; what it then holds is the truth', async (t) => {
  // A control plane of its own on one member, with a 1 s history compacted every 300 ms.
  const one = await EtcdCluster.start(1);
  clusters.push(one);
  const cdata = join(dir, 'compact');
  const cp = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', dataDir: cdata, storage: { kind: 'etcd', endpoints: one.endpoints, prefix: '/registry' }, historyMs: 1000, compactEveryMs: 300, advertiseAddress: '192.0.2.9' });
  servers.push(cp);
  const api = new Api('compact', cp.url, cdata);
  const rec = new HistoryRecorder(clock);
  const keys = Array.from({ length: 5 }, (_, i) => `stall-${i}`);
  let seq = 0;
  const known = new Map<string, number>();
  const write = async () => {
    const key = keys[seq % keys.length]!;
    const rv = known.get(key);
    const res = await op(rec, api, 'w', key, rv === undefined ? { type: 'create', value: `s${seq++}` } : { type: 'update', value: `s${seq++}`, expectRev: rv });
    if (res.result.type === 'ok') known.set(key, res.result.rv);
  };

  // The informer: list, then watch from the list's resourceVersion; on 410, list again. Its lists are recorded reads.
  const cache = new Map<string, { holder: string; rv: number }>();
  let listed = 0;
  const list = async (): Promise<number> => {
    const invoke = clock.now();
    const a = await api.call('GET', LEASES);
    t.equal(a.code, 200);
    listed++;
    cache.clear();
    for (const it of (a.json['items'] as Answer['json'][]) ?? []) {
      const name = String((it['metadata'] as { name: string }).name);
      if (!keys.includes(name)) continue;
      cache.set(name, { holder: holderOf({ code: 200, json: it }), rv: rvOf({ code: 200, json: it }) });
    }
    const complete = clock.now();
    for (const key of keys) {
      const c = cache.get(key);
      rec.push('informer', key, { type: 'get' }, c ? { type: 'ok', rv: c.rv, value: c.holder } : { type: 'notFound' }, invoke, complete);
    }
    return Number((a.json['metadata'] as { resourceVersion: string }).resourceVersion);
  };
  /** A watch from rv, ended by the server after `seconds`: its events, up to an ERROR that ends it. */
  const watchLines = (rv: number, seconds: number): Promise<{ type: string; object: Record<string, unknown> }[]> =>
    new Promise((resolve, reject) => {
      const u = new URL(`${LEASES}?watch=1&resourceVersion=${rv}&timeoutSeconds=${seconds}`, cp.url);
      const req = request({ host: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, ca: readFileSync(join(cdata, 'pki', 'ca.crt'), 'utf8'), headers: { Authorization: `Bearer ${(JSON.parse(readFileSync(join(cdata, 'tokens.json'), 'utf8')) as { admin: string }).admin}` } }, (res) => {
        let b = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => { b += c; });
        res.on('end', () => resolve(b.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as { type: string; object: Record<string, unknown> })));
      });
      req.on('error', reject);
      req.end();
    });
  let lastRv = 0;
  const apply = (evs: readonly { type: string; object: Record<string, unknown> }[]): { type: string; object: Record<string, unknown> } | undefined => {
    for (const ev of evs) {
      if (ev.type === 'ERROR') return ev;
      const name = String((ev.object['metadata'] as { name: string }).name);
      const rv = rvOf({ code: 200, json: ev.object });
      t.ok(rv > lastRv || ev.type === 'BOOKMARK', `event at ${rv} after ${lastRv}`);
      lastRv = rv;
      if (!keys.includes(name)) continue;
      if (ev.type === 'DELETED') cache.delete(name);
      else cache.set(name, { holder: holderOf({ code: 200, json: ev.object }), rv });
    }
    return undefined;
  };

  for (let i = 0; i < 10; i++) await write();
  lastRv = await list();
  // A first watch, served and ended by the server after 1 s, while writes go on.
  const first = watchLines(lastRv, 1);
  for (let i = 0; i < 5; i++) await write();
  t.equal(apply(await first), undefined, 'the first watch ends without an error');
  // Stalled: the informer does not come back while writes go on and the history it would resume from is compacted.
  const stalledAt = lastRv;
  for (let i = 0; i < 200 && (await cp.storage.compactedRev()) <= stalledAt; i++) {
    await write();
    await sleep(30);
  }
  t.ok((await cp.storage.compactedRev()) > stalledAt, `compacted past ${stalledAt}`);
  const resumed = await watchLines(stalledAt, 5);
  const err = apply(resumed);
  t.ok(err, 'the resumed watch ends with an ERROR event');
  t.equal(err?.object['code'], 410);
  t.equal(err?.object['reason'], 'Expired');
  t.match(String(err?.object['message']), /too old resource version/);
  // Relist, and watch from there: the informer holds the truth.
  lastRv = await list();
  const after = watchLines(lastRv, 1);
  for (let i = 0; i < 5; i++) await write();
  t.equal(apply(await after), undefined, 'the watch after the relist ends without an error');
  t.equal(listed, 2, 'listed again once');
  const truth = new Map<string, { holder: string; rv: number }>();
  for (const key of keys) {
    const a = await api.call('GET', `${LEASES}/${key}`);
    if (a.code === 200) truth.set(key, { holder: holderOf(a), rv: rvOf(a) });
  }
  t.same([...cache.entries()].sort(), [...truth.entries()].sort(), 'the informer\'s cache is the current state');
  // The storage API says the same: a watch from the stalled revision ends with Expired.
  const expired = await new Promise<string>((resolve) => {
    const h = cp.storage.watch({ prefix: '', afterRev: stalledAt, onEvent: () => {}, onError: (e) => resolve(e.code) });
    setTimeout(() => {
      h.stop();
      resolve('no error');
    }, 5000);
  });
  t.equal(expired, 'NN_ERR_EXPIRED');
  linearizable(t, rec, 'stalled-watch');
});
