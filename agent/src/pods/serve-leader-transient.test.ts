/**
 * An app's leader election (`nodenet serve --leader-elect`) through API errors a replica meets at its start in a
 * busy cluster: its RoleBinding not yet seen by the authorizer (403), the API not reachable yet (a connection
 * reset, nothing listening), an answer that is not JSON. As client-go's elector, it never ends on them: each try
 * fails (a warning when it differs from the last failure, debug when it repeats), it retries every retry period,
 * and leads once the API answers. Against a small fake of the Lease API on
 * loopback, no root and no control plane.
 */
import t, { type Test } from 'tap';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { silentLogger } from '../../../lib/log/log.js';
import { startAppLeader } from './serve-leader.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const timings = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 200 };
const status = (res: ServerResponse, code: number, reason: string) => {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, code, message: `${reason} (fake)` }));
};

/** What the fake API does with each request, in turn; once they are used up it is a working Lease API. */
type Fault = 'forbidden' | 'reset' | 'not-json' | 'unavailable';

function fakeLeaseApi(faults: Fault[]) {
  let lease: Record<string, unknown> | null = null;
  let rv = 0;
  const seen: string[] = [];
  const body = (req: IncomingMessage) => new Promise<string>((r) => { let s = ''; req.on('data', (d: Buffer) => { s += d.toString(); }); req.on('end', () => r(s)); });
  const server = createServer((req, res) => {
    void (async () => {
      const fault = faults.shift();
      seen.push(`${req.method} ${fault ?? 'ok'}`);
      if (fault === 'forbidden') return status(res, 403, 'Forbidden');
      if (fault === 'reset') return req.socket.destroy();
      if (fault === 'unavailable') return status(res, 503, 'ServiceUnavailable');
      if (fault === 'not-json') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end('{not json');
      }
      const text = await body(req);
      if (req.method === 'GET') {
        if (!lease) return status(res, 404, 'NotFound');
      } else {
        const l = JSON.parse(text) as { metadata: Record<string, unknown> };
        if (req.method === 'POST' && lease) return status(res, 409, 'AlreadyExists');
        if (req.method === 'PUT' && (!lease || l.metadata['resourceVersion'] !== (lease['metadata'] as Record<string, unknown>)['resourceVersion'])) return status(res, 409, 'Conflict');
        lease = { ...l, metadata: { ...l.metadata, resourceVersion: String(++rv) } };
      }
      res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(lease));
    })();
  });
  return { server, seen, holder: () => ((lease?.['spec'] as { holderIdentity?: string } | undefined)?.holderIdentity ?? '') };
}

function kubeconfigFor(dir: string, port: number): string {
  const f = join(dir, 'kubeconfig');
  writeFileSync(f, `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]\ncurrent-context: x\n`);
  return f;
}


/** Records unhandled rejections and exceptions during a case, with a scratch dir; `cleanup` registers the teardown. */
function watchUnhandled(t: Test): { unhandled: unknown[]; dir: string; cleanup: (leader: { stop(): Promise<void> }, server: Server) => void } {
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => { unhandled.push(e); };
  process.on('unhandledRejection', onUnhandled);
  process.on('uncaughtException', onUnhandled);
  const dir = mkdtempSync(join(tmpdir(), 'nn-serve-leader-transient-'));
  return {
    unhandled, dir,
    cleanup: (leader, server) => t.teardown(async () => {
      await leader.stop();
      server.closeAllConnections();
      server.close();
      process.off('unhandledRejection', onUnhandled);
      process.off('uncaughtException', onUnhandled);
      rmSync(dir, { recursive: true, force: true });
    }),
  };
}

t.test('403s, resets, a 503 and a body that is not JSON: the elector retries through them and leads', async (t) => {
  const { unhandled, dir, cleanup } = watchUnhandled(t);
  const api = fakeLeaseApi(['forbidden', 'forbidden', 'reset', 'not-json', 'unavailable', 'forbidden']);
  await new Promise<void>((r) => api.server.listen(0, '127.0.0.1', r));
  const port = (api.server.address() as { port: number }).port;
  const lines: { level: number; msg: string; err?: string }[] = [];
  const log = pino({ level: 'debug' }, { write: (l: string) => { lines.push(JSON.parse(l) as (typeof lines)[number]); } });
  const leader = startAppLeader({ lease: 'app', namespace: 'default', identity: 'app-0', kubeconfig: kubeconfigFor(dir, port), log, timings });
  cleanup(leader, api.server);
  for (let i = 0; i < 100 && !leader.isLeader; i++) await sleep(50);
  t.ok(leader.isLeader, `it leads once the API answers (requests: ${api.seen.join(', ')})`);
  t.equal(api.holder(), 'app-0', 'the Lease names it');
  t.equal(leader.answer(), 'leader app-0');
  t.same(unhandled, [], 'no unhandled rejection or exception on the way');
  // Each failure is said (a warning), a repeat of the same one only at debug, and the way back once.
  const warns = lines.filter((l) => l.level === 40);
  t.match(warns[0], { msg: /lease try failed; retrying/, err: /403/ }, `the first failure, a 403, is a warning: ${JSON.stringify(warns[0])}`);
  t.equal(warns.length, 5, `the 403, the reset, the body that is not JSON, the 503, the 403 again: each once (${warns.map((w) => (w.err ?? '').split('\n')[0]).join('; ')})`);
  t.ok(lines.some((l) => l.level === 20 && /403/.test(l.err ?? '')), 'the repeated 403 at debug');
  t.equal(lines.filter((l) => l.msg === 'lease tries succeed again').length, 1, 'the way back said once');
});

t.test('nothing listening at first: tries fail with a refused connection, and it leads once the API is up', async (t) => {
  const { unhandled, dir, cleanup } = watchUnhandled(t);
  // A free port, closed again: connections to it are refused until the fake API listens there.
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as { port: number }).port;
  await new Promise<void>((r) => probe.close(() => r()));
  const api = fakeLeaseApi([]);
  const leader = startAppLeader({ lease: 'app', namespace: 'default', identity: 'app-1', kubeconfig: kubeconfigFor(dir, port), log: silentLogger(), timings });
  cleanup(leader, api.server);
  await sleep(700);
  t.notOk(leader.isLeader, 'no leading without an API');
  await new Promise<void>((r) => api.server.listen(port, '127.0.0.1', r));
  for (let i = 0; i < 100 && !leader.isLeader; i++) await sleep(50);
  t.ok(leader.isLeader, 'it leads once the API listens');
  t.equal(api.holder(), 'app-1');
  t.same(unhandled, [], 'no unhandled rejection or exception on the way');
});
