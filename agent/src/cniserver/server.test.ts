import { setImmediate as setImmediatePromise } from 'node:timers/promises';
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { pino } from 'pino';
import { CniServiceClient, type CniRequest, type CniResponse } from '../../../proto/cni/v1/cni.js';
import { CniRequest as CniRequestCodec, CniResponse as CniResponseCodec } from '../../../proto/cni/v1/cni_messages.js';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { FakeCniHandler } from './handler.fake.js';
import { parseGrpcTimeout, startCniServer } from './server.js';

function memLog(): { log: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { log, lines };
}

function tmp(t: { teardown(fn: () => void): void }): string {
  const d = mkdtempSync(join(tmpdir(), 'nn-cniserver-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

type Method = 'add' | 'del' | 'check' | 'status' | 'gc';
function call(socket: string, method: Method, req: Partial<CniRequest>): Promise<{ err: ServiceError | null; resp: CniResponse | undefined }> {
  const client = new CniServiceClient(`unix:${socket}`, credentials.createInsecure());
  const full: CniRequest = { containerId: '', netns: '', ifName: '', args: '', path: '', config: Buffer.alloc(0), ...req };
  return new Promise((resolve) => {
    client[method](full, new Metadata(), { deadline: Date.now() + 5000 }, (err, resp) => {
      client.close();
      resolve({ err, resp });
    });
  });
}

const conf = (extra: Record<string, unknown> = {}): Buffer => Buffer.from(JSON.stringify({ cniVersion: '1.0.0', name: 'nodenet', type: 'nodenet-cni', ...extra }));
const pod = { containerId: 'ctr-1', netns: '/var/run/netns/nn-x', ifName: 'eth0', args: 'K8S_POD_NAME=a', path: '/opt/cni/bin' };

t.test('socket directory 0700 when created, socket 0600, removed on close', async (t) => {
  const dir = join(tmp(t), 'run', 'nodenet');
  const socket = join(dir, 'cni.sock');
  const { log, lines } = memLog();
  const srv = await startCniServer({ socketPath: socket, handler: new FakeCniHandler(), log });
  t.equal(statSync(dir).mode & 0o777, 0o700);
  t.ok(statSync(socket).isSocket());
  t.equal(statSync(socket).mode & 0o777, 0o600);
  t.ok(lines.some((l) => l['msg'] === 'CNI server listening' && l['subsys'] === 'cniserver'));
  await srv.close();
  await srv.close();
  t.notOk(existsSync(socket), 'socket removed');
  const after = await call(socket, 'status', { path: '/p', config: conf({ cniVersion: '1.1.0' }) });
  t.equal(after.err?.code, status.UNAVAILABLE, 'nothing listens after close');
});

t.test('every method reaches the handler with the request intact; ADD returns the result bytes', async (t) => {
  const socket = join(tmp(t), 'cni.sock');
  const handler = new FakeCniHandler();
  const { log, lines } = memLog();
  const srv = await startCniServer({ socketPath: socket, handler, log });
  t.teardown(() => srv.close());

  const add = await call(socket, 'add', { ...pod, config: conf() });
  t.equal(add.err, null);
  t.equal(add.resp?.outcome?.$case, 'result');
  const result = add.resp?.outcome?.$case === 'result' ? JSON.parse(add.resp.outcome.result.toString()) : undefined;
  t.same(result?.ips, [{ interface: 1, address: '10.244.1.2/24', gateway: '10.244.1.1' }]);
  t.equal(result?.cniVersion, '1.0.0');
  t.same({ ...handler.calls[0]!.req, config: Buffer.from(handler.calls[0]!.req.config).toString() }, { ...pod, config: conf().toString() });

  const prevResult = result;
  const check = await call(socket, 'check', { ...pod, config: conf({ prevResult }) });
  t.same(check.resp?.outcome, { $case: 'result', result: Buffer.alloc(0) }, 'CHECK ok: empty result');
  for (const m of ['status', 'gc'] as const) {
    const r = await call(socket, m, { path: '/opt/cni/bin', config: conf({ cniVersion: '1.1.0', 'cni.dev/valid-attachments': [{ containerID: 'ctr-1', ifname: 'eth0' }] }) });
    t.equal(r.resp?.outcome?.$case, 'result', m);
  }
  t.equal(handler.attachments.size, 1, 'GC kept the valid attachment');
  const del = await call(socket, 'del', { ...pod, netns: '', config: conf() });
  t.equal(del.resp?.outcome?.$case, 'result');
  t.equal(handler.attachments.size, 0);
  t.same(handler.calls.map((c) => c.cmd), ['add', 'check', 'status', 'gc', 'del']);
  const done = lines.filter((l) => l['msg'] === 'CNI call done');
  t.same(done.map((l) => l['cmd']), ['ADD', 'CHECK', 'STATUS', 'GC', 'DEL']);
  t.equal(done[0]!['containerID'], 'ctr-1');
  t.equal(typeof done[0]!['durationMs'], 'number');
});

t.test('a NodenetError travels in band with its CNI code, message and details', async (t) => {
  const socket = join(tmp(t), 'cni.sock');
  const handler = new FakeCniHandler();
  const { log, lines } = memLog();
  const srv = await startCniServer({ socketPath: socket, handler, log });
  t.teardown(() => srv.close());

  const bad = await call(socket, 'add', { ...pod, config: conf({ mtu: 'big' }) });
  t.equal(bad.err, null, 'not a gRPC error');
  t.same(bad.resp?.outcome, { $case: 'error', error: { code: 7, msg: 'mtu: must be an integer from 0 to 65535, got "big"', details: 'mtu' } });

  handler.failNext('add', new NodenetError(ErrorCode.IpamExhausted, 'no free address in 10.244.1.0/24', { details: 'range 10.244.1.0/24' }));
  const ex = await call(socket, 'add', { ...pod, config: conf() });
  t.same(ex.resp?.outcome, { $case: 'error', error: { code: 999, msg: 'no free address in 10.244.1.0/24', details: 'range 10.244.1.0/24' } });

  handler.ready = false;
  const st = await call(socket, 'status', { path: '/p', config: conf({ cniVersion: '1.1.0' }) });
  t.same(st.resp?.outcome, { $case: 'error', error: { code: 50, msg: 'agent is not ready', details: '' } });

  const unknown = await call(socket, 'check', { ...pod, containerId: 'nope', config: conf({ prevResult: { cniVersion: '1.0.0' } }) });
  t.equal(unknown.resp?.outcome?.$case === 'error' && unknown.resp.outcome.error.code, 3);

  const failed = lines.filter((l) => l['msg'] === 'CNI call failed');
  t.same(failed.map((l) => [l['level'], l['cniCode']]), [[40, 7], [50, 999], [40, 50], [40, 3]], 'warn for CNI errors, error for 999');
});

t.test('anything else thrown becomes 999', async (t) => {
  const socket = join(tmp(t), 'cni.sock');
  const handler = new FakeCniHandler();
  const srv = await startCniServer({ socketPath: socket, handler, log: memLog().log });
  t.teardown(() => srv.close());
  handler.failNext('del', new TypeError('cannot read properties of undefined'));
  const a = await call(socket, 'del', { ...pod, config: conf() });
  t.same(a.resp?.outcome, { $case: 'error', error: { code: 999, msg: 'cannot read properties of undefined', details: '' } });
  handler.failNext('gc', 'a bare string');
  const b = await call(socket, 'gc', { path: '/p', config: conf({ cniVersion: '1.1.0' }) });
  t.same(b.resp?.outcome, { $case: 'error', error: { code: 999, msg: 'a bare string', details: '' } });
});

t.test('a stale socket left by a dead process is replaced', async (t) => {
  const socket = join(tmp(t), 'cni.sock');
  // A process that binds the path and dies without cleaning up.
  const r = spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(socket)}, () => process.kill(process.pid, 'SIGKILL'))`]);
  t.equal(r.signal, 'SIGKILL');
  t.ok(statSync(socket).isSocket(), 'stale socket present');
  const { log, lines } = memLog();
  const srv = await startCniServer({ socketPath: socket, handler: new FakeCniHandler(), log });
  t.teardown(() => srv.close());
  t.ok(lines.some((l) => l['msg'] === 'removed stale CNI socket'));
  const st = await call(socket, 'status', { path: '/p', config: conf({ cniVersion: '1.1.0' }) });
  t.equal(st.resp?.outcome?.$case, 'result');
});

t.test('a live socket or a non-socket file at the path is left alone and start fails', async (t) => {
  const dir = tmp(t);
  const live = join(dir, 'live.sock');
  const other = createServer();
  await new Promise<void>((res) => other.listen(live, res));
  t.teardown(() => new Promise<void>((res) => other.close(() => res())));
  await t.rejects(startCniServer({ socketPath: live, handler: new FakeCniHandler(), log: memLog().log }), { message: /another process is serving/ });
  t.ok(statSync(live).isSocket(), 'the live socket is still there');

  const file = join(dir, 'file.sock');
  writeFileSync(file, 'precious');
  await t.rejects(startCniServer({ socketPath: file, handler: new FakeCniHandler(), log: memLog().log }), { message: /is not a socket/ });
  t.equal(readFileSync(file, 'utf8'), 'precious');
  await t.rejects(startCniServer({ socketPath: 'rel/cni.sock', handler: new FakeCniHandler(), log: memLog().log }), { message: /must be absolute/ });
});

t.test('close waits for an in-flight call', async (t) => {
  const socket = join(tmp(t), 'cni.sock');
  const handler = new FakeCniHandler();
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => (release = r));
  let arrived: () => void = () => {};
  const inHandler = new Promise<void>((r) => (arrived = r));
  handler.status = async () => {
    arrived();
    return gate;
  };
  const srv = await startCniServer({ socketPath: socket, handler, log: memLog().log });
  const inflight = call(socket, 'status', { path: '/p', config: conf({ cniVersion: '1.1.0' }) });
  await inHandler;
  let closed = false;
  const closing = srv.close().then(() => (closed = true));
  await setImmediatePromise();
  t.equal(closed, false, 'still draining while the call is in the handler');
  release();
  const res = await inflight;
  await closing;
  t.equal(res.resp?.outcome?.$case, 'result', 'the in-flight call completed');
  t.equal(closed, true);
});

/** One raw HTTP/2 request to the server: headers, a body, and what came back (status, trailers, data). */
async function raw(socket: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number | undefined; fields: Record<string, unknown>; data: Buffer }> {
  const { connect: h2connect } = await import('node:http2');
  const session = h2connect('http://localhost', { createConnection: () => createConnection(socket) });
  try {
    return await new Promise((resolve, reject) => {
      const req = session.request({ ':method': 'POST', ':path': '/nodenet.cni.v1.CniService/Status', 'content-type': 'application/grpc', te: 'trailers', ...headers });
      const fields: Record<string, unknown> = {};
      const data: Buffer[] = [];
      let status: number | undefined;
      req.on('response', (h) => {
        status = Number(h[':status']);
        Object.assign(fields, h);
      });
      req.on('trailers', (h) => Object.assign(fields, h));
      req.on('data', (d: Buffer) => data.push(d));
      req.on('end', () => resolve({ status, fields, data: Buffer.concat(data) }));
      req.on('error', reject);
      req.end(body);
    });
  } finally {
    session.close();
  }
}
const frameMsg = (msg: Uint8Array, flag = 0): Buffer => {
  const b = Buffer.alloc(5 + msg.length);
  b[0] = flag;
  b.writeUInt32BE(msg.length, 1);
  b.set(msg, 5);
  return b;
};

t.test('gRPC over HTTP/2 as grpc-js serves it: content type, methods, message count, compression, size, deadlines', async (t) => {
  const socket = join(tmp(t), 'cni.sock');
  const handler = new FakeCniHandler();
  const srv = await startCniServer({ socketPath: socket, handler, log: memLog().log });
  t.teardown(() => srv.close());
  const statusReq = CniRequestCodec.encode({ containerId: '', netns: '', ifName: '', args: '', path: '/p', config: conf({ cniVersion: '1.1.0' }) }).finish();

  const ok = await raw(socket, {}, frameMsg(statusReq));
  t.equal(ok.status, 200);
  t.equal(ok.fields['grpc-status'], '0', 'status in the trailers');
  t.equal(ok.fields['content-type'], 'application/grpc+proto');
  t.same(CniResponseCodec.decode(ok.data.subarray(5)).outcome, { $case: 'result', result: Buffer.alloc(0) });

  t.equal((await raw(socket, { 'content-type': 'application/json' }, frameMsg(statusReq))).status, 415, 'not gRPC: HTTP 415');
  const unknown = await raw(socket, { ':path': '/nodenet.cni.v1.CniService/Frob' }, frameMsg(statusReq));
  t.match(unknown.fields, { 'grpc-status': String(status.UNIMPLEMENTED), 'grpc-message': /does%20not%20implement/ }, 'unknown method, trailers-only');
  t.equal((await raw(socket, {}, Buffer.alloc(0))).fields['grpc-status'], String(status.UNIMPLEMENTED), 'no message');
  t.equal((await raw(socket, {}, Buffer.concat([frameMsg(statusReq), frameMsg(statusReq)]))).fields['grpc-status'], String(status.UNIMPLEMENTED), 'two messages');
  t.equal((await raw(socket, { 'grpc-encoding': 'gzip' }, frameMsg(statusReq, 1))).fields['grpc-status'], String(status.UNIMPLEMENTED), 'compressed');
  t.equal((await raw(socket, {}, frameMsg(statusReq).subarray(0, 7))).fields['grpc-status'], String(status.INTERNAL), 'truncated');
  t.equal((await raw(socket, {}, frameMsg(Buffer.from([0xff, 0xff])))).fields['grpc-status'], String(status.INTERNAL), 'undecodable');
  t.equal((await raw(socket, {}, frameMsg(Buffer.alloc(4 * 1024 * 1024 + 1)))).fields['grpc-status'], String(status.RESOURCE_EXHAUSTED), 'over 4 MiB');
  t.equal((await raw(socket, { 'grpc-timeout': 'soon' }, frameMsg(statusReq))).fields['grpc-status'], String(status.INTERNAL), 'malformed grpc-timeout');
  t.equal(handler.calls.length, 1, 'only the good call reached the handler');

  // A handler slower than the caller's deadline: DEADLINE_EXCEEDED (grpc-js's client sends grpc-timeout), then the server lives on.
  let release: () => void = () => {};
  handler.status = () => new Promise<void>((r) => (release = r));
  const client = new CniServiceClient(`unix:${socket}`, credentials.createInsecure());
  const err = await new Promise<ServiceError | null>((resolve) => {
    client.status({ containerId: '', netns: '', ifName: '', args: '', path: '/p', config: conf({ cniVersion: '1.1.0' }) }, new Metadata(), { deadline: Date.now() + 150 }, (e) => resolve(e));
  });
  client.close();
  t.equal(err?.code, status.DEADLINE_EXCEEDED);
  release();
  handler.status = async () => {};
  t.equal((await call(socket, 'status', { path: '/p', config: conf({ cniVersion: '1.1.0' }) })).resp?.outcome?.$case, 'result', 'still serving');
});

t.test('parseGrpcTimeout: the units of the gRPC spec, absent and malformed told apart', async (t) => {
  t.equal(parseGrpcTimeout('30000m'), 30_000);
  t.equal(parseGrpcTimeout('2S'), 2000);
  t.equal(parseGrpcTimeout('1H'), 3_600_000);
  t.equal(parseGrpcTimeout('1500u'), 1);
  t.equal(parseGrpcTimeout(undefined), undefined);
  t.equal(parseGrpcTimeout('123456789m'), null, 'at most 8 digits');
  t.equal(parseGrpcTimeout('5x'), null);
});
