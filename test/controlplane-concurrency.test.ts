/**
 * Optimistic concurrency as kube-apiserver's: 1,000 concurrent writers
 * read-modify-write the same 50 Services through the API (PUT with the
 * resourceVersion they read, retrying on 409 Conflict, as client-go's
 * RetryOnConflict does), and not one update is lost: each Service's counter
 * ends at the number of writers that incremented it. Durable SQLite under
 * it, plain HTTP on loopback. No root needed.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane, type ControlPlane } from '../controlplane/control-plane.js';

const dir = mkdtempSync(join(tmpdir(), 'nn-cp-conc-'));
const agent = new Agent({ keepAlive: true, maxSockets: 64 });
let cp: ControlPlane;

t.before(async () => {
  cp = await startControlPlane({ dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0, version: '0.1.0', insecureHttp: true });
});
t.teardown(async () => {
  agent.destroy();
  await cp?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function call(method: string, path: string, body?: unknown): Promise<{ code: number; json: Record<string, unknown> }> {
  const u = new URL(path, cp.url);
  const data = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method, agent, headers: data ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) } : {} }, (res) => {
      let b = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (b += c));
      res.on('end', () => resolve({ code: res.statusCode ?? 0, json: JSON.parse(b) as Record<string, unknown> }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

t.test('1,000 concurrent writers with retry-on-409 lose no update', async (t) => {
  const OBJECTS = 50;
  const WRITERS = 1000;
  const SVCS = '/api/v1/namespaces/default/services';
  for (let i = 0; i < OBJECTS; i++) {
    const r = await call('POST', SVCS, { apiVersion: 'v1', kind: 'Service', metadata: { name: `c${i}`, annotations: { count: '0' } }, spec: { ports: [{ port: 80 }] } });
    t.equal(r.code, 201);
  }
  let conflicts = 0;
  let firstConflict: Record<string, unknown> | undefined;
  const writer = async (w: number) => {
    const path = `${SVCS}/c${w % OBJECTS}`;
    for (let attempt = 0; attempt < 500; attempt++) {
      const got = await call('GET', path);
      const o = got.json as { metadata: { annotations: Record<string, string> } };
      o.metadata.annotations['count'] = String(Number(o.metadata.annotations['count']) + 1);
      o.metadata.annotations[`w${w}`] = 'x';
      const put = await call('PUT', path, o);
      if (put.code === 200) return;
      if (put.code !== 409) throw new Error(`writer ${w}: PUT ${put.code} ${JSON.stringify(put.json)}`);
      conflicts++;
      firstConflict ??= put.json;
    }
    throw new Error(`writer ${w} gave up`);
  };
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  t.ok(conflicts > 0, `${conflicts} conflicts were retried`);
  t.match(firstConflict, { kind: 'Status', reason: 'Conflict', code: 409, message: /the object has been modified; please apply your changes to the latest version and try again/ });
  const list = (await call('GET', SVCS)).json['items'] as { metadata: { name: string; annotations: Record<string, string> } }[];
  const counts = list.filter((s) => /^c\d+$/.test(s.metadata.name)).map((s) => Number(s.metadata.annotations['count']));
  t.equal(counts.length, OBJECTS);
  t.same(counts, Array(OBJECTS).fill(WRITERS / OBJECTS), 'every Service counted each of its writers once');
  t.equal(counts.reduce((a, b) => a + b, 0), WRITERS, 'no update lost');
  const marks = list.reduce((n, s) => n + Object.keys(s.metadata.annotations ?? {}).filter((k) => /^w\d+$/.test(k)).length, 0);
  t.equal(marks, WRITERS, 'and every writer\'s own mark is there');
});
