/**
 * The test server on real sockets on loopback: what each protocol answers,
 * readiness toggling, /exit and /shutdown, a graceful terminate with a delay
 * during which it still serves (not ready), one log line per request.
 */
import t, { type Test } from 'tap';
import { connect } from 'node:net';
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { pino } from 'pino';
import { peerAddress, startServe, type ServeServer } from './serve.js';

type Line = { msg: string; kind?: string; path?: string; code?: number };

function logLines() {
  const lines: Line[] = [];
  return { log: pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Line) }), lines };
}

async function serve(t: Test, over: { termDelayMs?: number } = {}) {
  const { log, lines } = logLines();
  const s = await startServe({ name: 'web-1', bind: '127.0.0.1', tcp: [0], udp: [0], http: [0], termDelayMs: over.termDelayMs ?? 0, log });
  t.teardown(() => { s.terminate(); return s.done.then(() => undefined); });
  return { s, lines, http: (path: string) => get(s, path) };
}

async function get(s: ServeServer, path: string): Promise<{ status: number; body: string }> {
  const r = await fetch(`http://127.0.0.1:${s.ports.http[0]}${path}`);
  return { status: r.status, body: await r.text() };
}

/** Reads from a TCP connection until `n` bytes arrived. */
function readN(c: ReturnType<typeof connect>, n: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = '';
    const on = (d: Buffer) => { got += d.toString(); if (got.length >= n) { c.off('data', on); resolve(got); } };
    c.on('data', on);
    c.once('error', reject);
  });
}

t.test('peer addresses: IPv4-mapped IPv6 shows as IPv4', async (t) => {
  t.equal(peerAddress('::ffff:10.244.1.5', 4242), '10.244.1.5:4242');
  t.equal(peerAddress('127.0.0.1', 1), '127.0.0.1:1');
  t.equal(peerAddress('fd00::1', 80), 'fd00::1:80');
});

t.test('HTTP: hostname, clientip, echo, healthz, 404; one log line per request', async (t) => {
  const { s, lines, http } = await serve(t);
  t.ok(s.ports.http[0]! > 0 && s.ports.tcp[0]! > 0 && s.ports.udp[0]! > 0, 'port 0 picks free ports, reported');
  t.same(await http('/'), { status: 200, body: 'web-1\n' });
  t.same(await http('/hostname'), { status: 200, body: 'web-1\n' });
  const ip = await http('/clientip');
  t.match(ip.body, /^127\.0\.0\.1:\d+\n$/);
  t.same(await http('/echo?msg=hello%20there'), { status: 200, body: 'hello there' }, 'echo is exact, no newline added');
  t.same(await http('/healthz'), { status: 200, body: 'ok\n' });
  t.equal((await http('/nope')).status, 404);
  const httpLines = lines.filter((l) => l.kind === 'http');
  t.same(httpLines.map((l) => [l.path, l.code]), [['/', 200], ['/hostname', 200], ['/clientip', 200], ['/echo', 200], ['/healthz', 200], ['/nope', 404]]);
  t.match(httpLines[1]!.msg, /^GET \/hostname 200 from 127\.0\.0\.1:\d+$/);
});

t.test('readyz toggles with ?set=fail|ok', async (t) => {
  const { http } = await serve(t);
  t.same(await http('/readyz'), { status: 200, body: 'ok\n' });
  t.equal((await http('/readyz?set=fail')).status, 200);
  t.same(await http('/readyz'), { status: 503, body: 'not ready\n' });
  t.equal((await http('/healthz')).status, 200, 'liveness is not readiness');
  t.equal((await http('/readyz?set=maybe')).status, 400);
  await http('/readyz?set=ok');
  t.equal((await http('/readyz')).status, 200);
});

t.test('TCP: greets with name and client address, then echoes until the client closes', async (t) => {
  const { s, lines } = await serve(t);
  const c = connect(s.ports.tcp[0]!, '127.0.0.1');
  await once(c, 'connect');
  const port = c.localPort;
  const greeting = `web-1 127.0.0.1:${port}\n`;
  t.equal(await readN(c, greeting.length), greeting);
  c.write('ping 1\n');
  t.equal(await readN(c, 7), 'ping 1\n');
  c.write('ping 2\n');
  t.equal(await readN(c, 7), 'ping 2\n', 'the same connection keeps working');
  c.end();
  await once(c, 'close');
  t.ok(lines.some((l) => l.kind === 'tcp' && l.msg === `tcp connection from 127.0.0.1:${port}`));
});

t.test('UDP: every datagram is answered with the name and the client address', async (t) => {
  const { s, lines } = await serve(t);
  const u = createSocket('udp4');
  t.teardown(() => u.close());
  await new Promise<void>((r) => u.bind(0, '127.0.0.1', () => r()));
  for (const i of [1, 2]) {
    const reply = once(u, 'message');
    u.send(`hi ${i}`, s.ports.udp[0]!, '127.0.0.1');
    const [msg] = (await reply) as [Buffer];
    t.equal(msg.toString(), `web-1 127.0.0.1:${u.address().port}\n`);
  }
  t.equal(lines.filter((l) => l.kind === 'udp').length, 2);
});

t.test('/exit?code=N answers, then closes everything (open connections too) and reports code N', async (t) => {
  const { s, http } = await serve(t);
  const c = connect(s.ports.tcp[0]!, '127.0.0.1');
  await once(c, 'connect');
  c.on('error', () => undefined);
  c.resume(); // flowing, or the EOF is never read and 'close' never comes
  const closed = once(c, 'close');
  t.equal((await http('/exit?code=x')).status, 400);
  t.equal((await http('/exit?code=300')).status, 400);
  t.same(await http('/exit?code=7'), { status: 200, body: 'exiting 7\n' });
  t.same(await s.done, { code: 7, reason: 'exit' });
  await closed;
  await t.rejects(fetch(`http://127.0.0.1:${s.ports.http[0]}/`), 'the HTTP listener is closed');
});

t.test('/shutdown is a graceful stop with code 0: echo clients see EOF', async (t) => {
  const { s, http } = await serve(t);
  const c = connect(s.ports.tcp[0]!, '127.0.0.1');
  await once(c, 'connect');
  const ended = once(c, 'end');
  c.resume();
  t.same(await http('/shutdown'), { status: 200, body: 'shutting down\n' });
  await ended;
  c.end();
  t.same(await s.done, { code: 0, reason: 'shutdown' });
});

t.test('terminate (SIGTERM) with a delay: still serving but not ready, then closed, code 0', async (t) => {
  const { s, http } = await serve(t, { termDelayMs: 300 });
  s.terminate();
  s.terminate(); // idempotent
  t.same(await http('/readyz'), { status: 503, body: 'terminating\n' }, 'during the delay it answers, not ready');
  t.same(await http('/hostname'), { status: 200, body: 'web-1\n' });
  await http('/readyz?set=ok');
  t.equal((await http('/readyz')).status, 503, 'a terminating server cannot be made ready again');
  t.same(await s.done, { code: 0, reason: 'terminated' });
});

t.test('a port in use is an error, and what was opened is closed again', async (t) => {
  const { s } = await serve(t);
  const { log } = logLines();
  await t.rejects(startServe({ name: 'x', bind: '127.0.0.1', tcp: [0], udp: [], http: [s.ports.http[0]!], termDelayMs: 0, log }), { code: 'EADDRINUSE' });
});
