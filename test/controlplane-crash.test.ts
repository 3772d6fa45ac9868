/**
 * `kill -9` of `nodenet control-plane` under a stream of writes, 8 times
 * (NODENET_CRASH_ROUNDS for a longer soak; each round restarts the server),
 * over HTTP as clients see it (the store-level version of this is
 * store/sqlite-persistence.test.ts):
 * - every write the server acknowledged (201) is there after the restart;
 * - the revision sequence is never reused: every acknowledged
 *   resourceVersion is distinct, and each incarnation's are above the last's;
 * - a watcher that reconnects after each restart with its last
 *   resourceVersion misses nothing and sees nothing twice: at the end it
 *   has seen exactly the objects the server holds, each once, in ascending
 *   revision order.
 * Plain HTTP on loopback (the TLS path is the kubectl test's). No root.
 */
import t from 'tap';
import { AGENT_JS } from '../agent/src/lab/lab.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '../agent/src/testing/wait.js';
import { freePort } from '../lib/testing/ports.js';

const dir = mkdtempSync(join(tmpdir(), 'nn-cp-crash-'));
const agent = new Agent({ keepAlive: true, maxSockets: 16 });
let child: ChildProcess | null = null;

t.teardown(() => {
  child?.kill('SIGKILL');
  agent.destroy();
  rmSync(dir, { recursive: true, force: true });
});

function call(port: number, method: string, path: string, body?: unknown): Promise<{ code: number; body: string }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = request({ host: '127.0.0.1', port, method, path, agent, headers: data ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) } : {} }, (res) => {
      let b = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (b += c));
      res.on('end', () => resolve({ code: res.statusCode ?? 0, body: b }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(data);
  });
}

async function startServer(port: number): Promise<ChildProcess> {
  const c = spawn(process.execPath, [AGENT_JS, 'control-plane', '--data-dir', join(dir, 'data'), '--listen', `127.0.0.1:${port}`, '--insecure-http', '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'inherit'] });
  await waitFor(async () => (await call(port, 'GET', '/readyz').catch(() => ({ code: 0 }))).code === 200, 'the control plane to serve', { timeoutMs: 30_000, intervalMs: 50 });
  return c;
}

/** A watch from `rv` that reports each event; ends when the server dies. */
function watch(port: number, rv: string, onEvent: (type: string, name: string, rv: number) => void): Promise<void> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: `/api/v1/namespaces/default/services?watch=1&resourceVersion=${rv}&allowWatchBookmarks=true` }, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        buf += c;
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          const ev = JSON.parse(line) as { type: string; object: { metadata: { name: string; resourceVersion: string } } };
          onEvent(ev.type, ev.object.metadata.name, Number(ev.object.metadata.resourceVersion));
        }
      });
      res.on('close', () => resolve());
      res.on('error', () => resolve());
    });
    req.on('error', () => resolve());
    req.end();
  });
}

const ROUNDS = Number(process.env['NODENET_CRASH_ROUNDS'] ?? 8);

t.test(`kill -9 under writes, ${ROUNDS} times: no acknowledged write lost, no revision reused, the watcher resumes exactly`, async (t) => {
  const port = await freePort();
  const acked = new Map<string, number>(); // name → acknowledged resourceVersion
  const watched: { type: string; name: string; rv: number }[] = [];
  let lastRv = '';
  let floor = 0; // every revision of an incarnation is above every acknowledged one before it
  let seq = 0;
  for (let round = 0; round < ROUNDS; round++) {
    child = await startServer(port);
    const exited = new Promise((r) => child!.once('exit', r));
    if (!lastRv) lastRv = JSON.parse((await call(port, 'GET', '/api/v1/namespaces/default/services')).body).metadata.resourceVersion;
    const watcher = watch(port, lastRv, (type, name, rv) => {
      if (type === 'BOOKMARK') return;
      watched.push({ type, name, rv });
      lastRv = String(rv);
    });
    let dead = false;
    const writers = Array.from({ length: 8 }, async () => {
      while (!dead) {
        const name = `s-${++seq}`;
        const r = await call(port, 'POST', '/api/v1/namespaces/default/services', { apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { ports: [{ port: 80 }] } }).catch(() => null);
        if (!r) return; // the server died under this write: not acknowledged
        if (r.code !== 201) throw new Error(`create ${name}: ${r.code} ${r.body}`);
        const rv = Number(JSON.parse(r.body).metadata.resourceVersion);
        if (rv <= floor) throw new Error(`revision ${rv} acknowledged for ${name} is not above ${floor}, the last incarnation's highest`);
        acked.set(name, rv);
      }
    });
    await sleep(150 + Math.random() * 350);
    child.kill('SIGKILL');
    await exited;
    dead = true;
    await Promise.all(writers);
    await watcher;
    floor = Math.max(floor, ...acked.values());
    child = null;
    agent.destroy();
  }
  child = await startServer(port);
  const list = JSON.parse((await call(port, 'GET', '/api/v1/namespaces/default/services')).body) as { items: { metadata: { name: string; resourceVersion: string } }[] };
  // The last events: the watcher catches up on the final incarnation.
  const watcher = watch(port, lastRv, (type, name, rv) => {
    if (type !== 'BOOKMARK') watched.push({ type, name, rv });
  });
  // The `kubernetes` Service was made at the first start, before the watcher's first list.
  const stored = new Map(list.items.filter((i) => i.metadata.name !== 'kubernetes').map((i) => [i.metadata.name, Number(i.metadata.resourceVersion)]));
  await waitFor(() => watched.length >= stored.size, 'the watcher to catch up');
  child.kill('SIGKILL');
  await watcher;

  t.ok(acked.size > 10 * ROUNDS, `${acked.size} acknowledged writes across ${ROUNDS} crashes`);
  const lost = [...acked.keys()].filter((n) => !stored.has(n));
  t.same(lost, [], 'every acknowledged write is there after the restarts');
  t.same([...acked].filter(([n, rv]) => stored.get(n) !== rv), [], 'with the resourceVersion it was acknowledged with');
  const rvs = [...acked.values()];
  t.equal(new Set(rvs).size, rvs.length, 'no revision acknowledged twice');
  t.same(watched.filter((e) => e.type !== 'ADDED'), [], 'only creates happened');
  const names = watched.map((e) => e.name);
  t.equal(new Set(names).size, names.length, 'the watcher saw no event twice');
  t.same([...names].sort(), [...stored.keys()].sort(), 'and missed none: it saw exactly what the server holds');
  t.same(watched.map((e) => e.rv), [...watched.map((e) => e.rv)].sort((a, b) => a - b), 'in ascending revision order');
});
