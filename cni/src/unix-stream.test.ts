/**
 * unix-stream: one contract for both transports (libuv's pipe handle through
 * process.binding, and node:net), against real unix sockets.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { netStream } from './net-stream.js';
import { pipeWrapBindings, pipeWrapStream, unixTransport, type OpenUnixStream, type StreamHandlers, type UnixStream } from './unix-stream.js';

const work = mkdtempSync(join(tmpdir(), 'nn-unix-stream-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
let n = 0;
const sockPath = (): string => join(work, `s${n++}.sock`);

async function server(t: { teardown(fn: () => unknown): void }, onConn: (s: Socket) => void): Promise<string> {
  const path = sockPath();
  const srv = createServer((s) => {
    s.on('error', () => {}); // the client going away first is part of some cases
    onConn(s);
  });
  await new Promise<void>((res) => srv.listen(path, res));
  t.teardown(() => new Promise<void>((res) => srv.close(() => res())));
  return path;
}

type Event = { kind: 'connect' } | { kind: 'data'; data: Buffer } | { kind: 'error'; code: string } | { kind: 'end' };

/** Opens a stream and records its events; `until` resolves when `stop` says the recording is complete. */
function record(open: OpenUnixStream, path: string, onConnect?: (s: UnixStream) => void): { events: Event[]; stream: UnixStream; done: (stop: (e: Event[]) => boolean) => Promise<void> } {
  const events: Event[] = [];
  let check = (): void => {};
  let stream: UnixStream | undefined;
  const h: StreamHandlers = {
    connect: () => {
      events.push({ kind: 'connect' });
      if (onConnect && stream) onConnect(stream);
      check();
    },
    data: (data) => {
      events.push({ kind: 'data', data: Buffer.from(data) });
      check();
    },
    error: (code) => {
      events.push({ kind: 'error', code });
      check();
    },
    end: () => {
      events.push({ kind: 'end' });
      check();
    },
  };
  stream = open(path, h);
  const s = stream;
  return {
    events,
    stream: s,
    done: (stop) => new Promise<void>((resolve) => {
      check = () => {
        if (stop(events)) resolve();
      };
      check();
    }),
  };
}
const bytes = (es: Event[]): Buffer => Buffer.concat(es.flatMap((e) => (e.kind === 'data' ? [e.data] : [])));
const kinds = (es: Event[]): string[] => es.filter((e) => e.kind !== 'data').map((e) => (e.kind === 'error' ? `error ${e.code}` : e.kind));

t.test('this Node gives the shim its fast transport (libuv pipe handle), not node:net', async (t) => {
  t.not(pipeWrapBindings(), null);
  t.equal(await unixTransport(), pipeWrapStream);
});

const transports: [string, OpenUnixStream][] = [['pipe_wrap', pipeWrapStream], ['node:net', netStream]];
for (const [name, open] of transports) {
  t.test(`${name}: connect, write, read the answer, end when the peer closes`, async (t) => {
    const path = await server(t, (s) => {
      const got: Buffer[] = [];
      s.on('data', (d: Buffer) => {
        got.push(d);
        if (Buffer.concat(got).toString() === 'ping') s.end('pong');
      });
    });
    const r = record(open, path, (s) => s.write(Buffer.from('ping')));
    await r.done((es) => es.some((e) => e.kind === 'end' || e.kind === 'error'));
    t.same(kinds(r.events), ['connect', 'end']);
    t.equal(bytes(r.events).toString(), 'pong');
  });

  t.test(`${name}: a large write that the socket cannot take at once arrives whole and in order`, async (t) => {
    const size = 8 * 1024 * 1024;
    const payload = Buffer.alloc(size);
    for (let i = 0; i < size; i += 4) payload.writeUInt32BE(i, i);
    const path = await server(t, (s) => {
      const got: Buffer[] = [];
      let len = 0;
      s.on('data', (d: Buffer) => {
        got.push(d);
        len += d.length;
        if (len === size) s.end(Buffer.from(String(Buffer.concat(got).equals(payload))));
      });
    });
    const r = record(open, path, (s) => {
      s.write(payload.subarray(0, size / 2));
      s.write(payload.subarray(size / 2));
    });
    await r.done((es) => es.some((e) => e.kind === 'end' || e.kind === 'error'));
    t.same(kinds(r.events), ['connect', 'end']);
    t.equal(bytes(r.events).toString(), 'true');
  });

  t.test(`${name}: no socket is ENOENT, a socket nobody serves is ECONNREFUSED, each reported once`, async (t) => {
    const missing = record(open, join(work, 'nope.sock'));
    await missing.done((es) => es.length > 0);
    await new Promise((r) => setTimeout(r, 20));
    t.same(kinds(missing.events), ['error ENOENT']);

    const stale = sockPath();
    spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(stale)}, () => process.kill(process.pid, 'SIGKILL'))`]);
    const refused = record(open, stale);
    await refused.done((es) => es.length > 0);
    await new Promise((r) => setTimeout(r, 20));
    t.same(kinds(refused.events), ['error ECONNREFUSED']);
  });

  t.test(`${name}: a peer that drops the connection unread is an error or an end, never silence`, async (t) => {
    const path = await server(t, (s) => s.destroy());
    const r = record(open, path, (s) => s.write(Buffer.alloc(1024 * 1024)));
    await r.done((es) => es.some((e) => e.kind === 'end' || e.kind === 'error'));
    t.match(kinds(r.events).join(','), /^connect,(end|error ECONNRESET|error EPIPE)$/);
  });

  t.test(`${name}: after close() no handler runs and writes are ignored; close is idempotent`, async (t) => {
    let serverGot = 0;
    let peer: Socket | undefined;
    const path = await server(t, (s) => {
      peer = s;
      s.on('data', (d: Buffer) => (serverGot += d.length));
      s.write('hello');
    });
    const r = record(open, path, (s) => s.close());
    await r.done((es) => es.length > 0);
    r.stream.write(Buffer.from('late'));
    r.stream.close();
    await new Promise((res) => setTimeout(res, 50));
    peer?.end('more');
    await new Promise((res) => setTimeout(res, 50));
    t.same(kinds(r.events), ['connect']);
    t.equal(bytes(r.events).length, 0);
    t.equal(serverGot, 0);
  });
}
