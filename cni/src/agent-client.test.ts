import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type ServerHttp2Stream } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CniServiceService } from '../../proto/cni/v1/cni.js';
import { CniRequest, CniResponse } from '../../proto/cni/v1/cni_messages.js';
import { silentLogger } from '../../agent/src/log/log.js';
import { FakeCniHandler } from '../../agent/src/cniserver/handler.fake.js';
import { startCniServer } from '../../agent/src/cniserver/server.js';
import { makeCallAgent, METHOD, methodPath, toReply } from './agent-client.js';
import type { CallAgent } from './agent-reply.js';
import { netStream } from './net-stream.js';
import type { CniCallRequest } from './skel.js';
import { pipeWrapStream, type OpenUnixStream } from './unix-stream.js';

const work = mkdtempSync(join(tmpdir(), 'nn-cni-client-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
let n = 0;
const sockPath = (): string => join(work, `s${n++}.sock`);

const req: CniCallRequest = {
  containerId: 'cl01', netns: '/var/run/netns/nn-cl', ifName: 'eth0', args: 'A=1', path: '/opt/cni/bin',
  config: new TextEncoder().encode(JSON.stringify({ cniVersion: '1.1.0', name: 'nodenet', type: 'nodenet-cni' })),
};

/** A raw HTTP/2 server on a unix socket that answers every stream with `answer`. */
async function rawServer(t: { teardown(fn: () => unknown): void }, answer: (stream: ServerHttp2Stream, headers: Record<string, unknown>, body: Buffer) => void): Promise<string> {
  const path = sockPath();
  const srv = createServer();
  srv.on('stream', (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => answer(stream, headers, Buffer.concat(chunks)));
  });
  await new Promise<void>((res) => srv.listen(path, res));
  t.teardown(() => new Promise<void>((res) => {
    srv.close(() => res());
  }));
  return path;
}
const framed = (msg: Uint8Array): Buffer => {
  const b = Buffer.alloc(5 + msg.length);
  b.writeUInt32BE(msg.length, 1);
  b.set(msg, 5);
  return b;
};

t.test('method paths are the ones the generated gRPC service definition names', async (t) => {
  const served = Object.values(CniServiceService).map((d) => d.path).sort();
  t.same(Object.keys(METHOD).map((c) => methodPath(c as keyof typeof METHOD)).sort(), served);
});

// Every exchange runs over both transports the shim may use.
const transports: [string, OpenUnixStream][] = [['pipe_wrap', pipeWrapStream], ['node:net', netStream]];
for (const [name, open] of transports) {
  const callAgent: CallAgent = makeCallAgent(() => open);

  t.test(`${name}: against the agent's real server: every command, request intact, in-band errors`, async (t) => {
    const socket = sockPath();
    const handler = new FakeCniHandler();
    const srv = await startCniServer({ socketPath: socket, handler, log: silentLogger() });
    t.teardown(() => srv.close());
    const add = await callAgent(socket, 'ADD', req, 5000);
    t.equal(add.kind, 'ok');
    if (add.kind === 'ok') t.equal(JSON.parse(new TextDecoder().decode(add.result)).ips[0].address, '10.244.1.2/24');
    const got = handler.calls[0]!.req;
    t.same({ ...got, config: Buffer.from(got.config) }, { ...req, config: Buffer.from(req.config) });
    for (const cmd of ['CHECK', 'STATUS', 'GC', 'DEL'] as const) {
      const r = await callAgent(socket, cmd, cmd === 'CHECK' ? { ...req, config: new TextEncoder().encode(JSON.stringify({ cniVersion: '1.1.0', name: 'nodenet', type: 't', prevResult: { ips: [{ address: '10.244.1.2/24' }] } })) } : req, 5000);
      t.same(r, { kind: 'ok', result: Buffer.alloc(0) }, cmd);
    }
    t.same(handler.calls.map((c) => c.cmd), ['add', 'check', 'status', 'gc', 'del']);
    const bad = await callAgent(socket, 'ADD', { ...req, config: new TextEncoder().encode('{"cniVersion":"1.1.0","name":"n","type":"t","mtu":-1}') }, 5000);
    t.same(bad, { kind: 'cni-error', code: 7, msg: 'mtu: must be an integer from 0 to 65535, got -1', details: 'mtu' });
  });

  t.test(`${name}: no socket, a stale socket, or a dead peer: unreachable`, async (t) => {
    const missing = await callAgent(join(work, 'nope.sock'), 'ADD', req, 5000);
    t.equal(missing.kind, 'unreachable');
    t.match(missing.kind === 'unreachable' && missing.detail, /ENOENT/);

    const stale = sockPath();
    spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(stale)}, () => process.kill(process.pid, 'SIGKILL'))`]);
    const refused = await callAgent(stale, 'DEL', req, 5000);
    t.equal(refused.kind, 'unreachable');
    t.match(refused.kind === 'unreachable' && refused.detail, /ECONNREFUSED/);

    const crashing = await rawServer(t, (stream) => stream.session?.destroy());
    t.equal((await callAgent(crashing, 'ADD', req, 5000)).kind, 'unreachable', 'connection dropped mid-call');
  });

  t.test(`${name}: grpc statuses from the server map onto reply kinds, messages percent-decoded`, async (t) => {
    const trailersOnly = (code: number, msg: string) => (stream: ServerHttp2Stream): void => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(code), 'grpc-message': encodeURIComponent(msg) }, { endStream: true });
    };
    // nghttp2 Huffman-codes a message when that is shorter: the shim does not decode those (it only feeds details).
    t.match(await callAgent(await rawServer(t, trailersOnly(12, 'unknown method Frob')), 'ADD', req, 5000), { kind: 'failed', detail: /^grpc UNIMPLEMENTED: / });
    t.match(await callAgent(await rawServer(t, trailersOnly(14, 'draining')), 'ADD', req, 5000), { kind: 'unreachable', detail: /^grpc UNAVAILABLE: / });
    t.match(await callAgent(await rawServer(t, trailersOnly(4, 'deadline')), 'ADD', req, 5000), { kind: 'timeout', detail: /^grpc DEADLINE_EXCEEDED: / });
    t.match(await callAgent(await rawServer(t, trailersOnly(13, '~~~~')), 'GC', req, 5000), { kind: 'failed', detail: 'grpc INTERNAL: ~~~~' }, 'a message nghttp2 sends raw is shown');
  });

  t.test(`${name}: the request on the wire: path, headers, one framed message`, async (t) => {
    let seen: { headers: Record<string, unknown>; body: Buffer } | undefined;
    const sock = await rawServer(t, (stream, headers, body) => {
      seen = { headers, body };
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(framed(CniResponse.encode({ outcome: { $case: 'result', result: Buffer.from('{"ok":1}') } }).finish()));
    });
    const r = await callAgent(sock, 'CHECK', req, 1234);
    t.same(r, { kind: 'ok', result: Buffer.from('{"ok":1}') });
    t.equal(seen?.headers[':path'], '/nodenet.cni.v1.CniService/Check');
    t.equal(seen?.headers[':method'], 'POST');
    t.equal(seen?.headers['content-type'], 'application/grpc');
    t.equal(seen?.headers['te'], 'trailers');
    t.equal(seen?.headers['grpc-timeout'], '1234m');
    const body = seen!.body;
    t.equal(body[0], 0, 'not compressed');
    t.equal(body.readUInt32BE(1), body.length - 5);
    const decoded = CniRequest.decode(body.subarray(5));
    t.same({ ...decoded, config: Buffer.from(decoded.config) }, { ...req, config: Buffer.from(req.config) });
  });

  t.test(`${name}: our own deadline: timeout, and the call does not hang`, async (t) => {
    const sock = await rawServer(t, () => {});
    const started = Date.now();
    const r = await callAgent(sock, 'ADD', req, 200);
    t.same(r, { kind: 'timeout', detail: 'no answer within 200 ms' });
    t.ok(Date.now() - started < 2000);
  });
}

t.test('toReply rejects malformed answers', async (t) => {
  const good = framed(CniResponse.encode({ outcome: { $case: 'error', error: { code: 11, msg: 'later', details: 'd' } } }).finish());
  t.same(toReply(200, 0, '', good), { kind: 'cni-error', code: 11, msg: 'later', details: 'd' });
  t.same(toReply(200, 0, '', framed(new Uint8Array())), { kind: 'ok', result: new Uint8Array() }, 'empty message: success without output');
  t.match(toReply(404, undefined, '', Buffer.alloc(0)), { kind: 'failed', detail: 'HTTP/2 status 404' });
  t.match(toReply(200, undefined, '', good), { kind: 'failed', detail: /without grpc-status/ });
  t.match(toReply(200, 0, '', Buffer.from([0, 0])), { kind: 'failed', detail: /without a message/ });
  t.match(toReply(200, 0, '', Buffer.concat([Buffer.from([1]), good.subarray(1)])), { kind: 'failed', detail: /compressed/ });
  t.match(toReply(200, 0, '', good.subarray(0, good.length - 1)), { kind: 'failed', detail: /framed as/ });
  t.match(toReply(200, 0, '', framed(Buffer.from([0xff, 0xff, 0xff]))), { kind: 'failed', detail: /undecodable/ });
});

