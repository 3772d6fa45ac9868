/**
 * The agent's API balancer: the pure choice of a server, and the real
 * thing between a client and two HTTPS servers on loopback (no root): a
 * server whose /readyz turns red, or which leaves the list, loses its
 * connections at once and new ones go to the other.
 */
import t from 'tap';
import { createServer, type Server } from 'node:https';
import { request } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { issue } from '../../../lib/pki/pki.js';
import { silentLogger } from '../../../lib/log/log.js';
import { realClock } from '../../../lib/reconcile/clock.js';
import { ApiBalancer, selectServer, serversFromSlice } from './api-balancer.js';

t.test('selectServer: stay on a healthy current server, else the next healthy one, else the configured one', async (t) => {
  const list = ['a:1', 'b:1', 'c:1'];
  t.equal(selectServer(list, new Set(['a:1', 'b:1', 'c:1']), 'b:1', 'lb:1'), 'b:1', 'no flapping while it is healthy');
  t.equal(selectServer(list, new Set(['a:1', 'c:1']), 'b:1', 'lb:1'), 'c:1', 'the next after the failed one');
  t.equal(selectServer(list, new Set(['a:1']), 'c:1', 'lb:1'), 'a:1', 'wrapping');
  t.equal(selectServer(list, new Set(['lb:1']), 'a:1', 'lb:1'), 'lb:1', 'none listed is healthy: the configured server');
  t.equal(selectServer(list, new Set(), 'b:1', 'lb:1'), 'b:1', 'nothing healthy: try the current one anyway');
  t.equal(selectServer(list, new Set(), null, 'lb:1'), 'a:1');
  t.equal(selectServer(['lb:1'], new Set(), null, 'lb:1'), 'lb:1');
});

t.test('serversFromSlice: the ready endpoints on the https port', async (t) => {
  t.same(serversFromSlice({ endpoints: [{ addresses: ['10.0.0.2'], conditions: { ready: true } }, { addresses: ['10.0.0.3'], conditions: { ready: false } }, { addresses: ['fd00::1'] }], ports: [{ name: 'https', port: 6443 }] }), ['10.0.0.2:6443', '[fd00::1]:6443']);
  t.same(serversFromSlice({ endpoints: [{ addresses: ['10.0.0.2'] }], ports: [] }), [], 'no port: nothing');
  t.same(serversFromSlice(null), []);
});

const ca = issue({ commonName: 'test-ca', organization: 'nodenet', isCA: true });
const cert = issue({ commonName: 'apiserver', hosts: ['127.0.0.1', 'localhost'], issuer: { certPem: ca.certPem, keyPem: ca.keyPem, commonName: 'test-ca', organization: 'nodenet' } });

/** An HTTPS server answering /readyz (200 or 500 as told) and /who (its name), and holding /watch open. */
async function apiServer(name: string) {
  const state = { ready: true };
  const s: Server = createServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => {
    if (req.url === '/readyz') res.writeHead(state.ready ? 200 : 500).end(state.ready ? 'ok' : 'shutting down');
    else if (req.url === '/watch') res.writeHead(200).write(`${name}\n`); // held open, as a watch
    else res.writeHead(200).end(name);
  });
  const sockets = new Set<Socket>();
  s.on('connection', (c: Socket) => { sockets.add(c); c.on('close', () => sockets.delete(c)); });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  return { state, port: (s.address() as AddressInfo).port, close: () => { for (const c of sockets) c.destroy(); return new Promise<void>((r) => s.close(() => r())); } };
}

function get(port: number, path: string): Promise<{ body: string; ended: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, ca: ca.certPem, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      const ended = new Promise<string>((r) => { res.on('close', () => r('closed')); res.on('end', () => r('end')); });
      res.once('data', (c: string) => { body += c; resolve({ body: body.trim(), ended }); });
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('the balancer: a server that turns red loses its connections, and new ones go to the healthy one', async (t) => {
  const a = await apiServer('a');
  const b = await apiServer('b');
  const bal = new ApiBalancer({ server: { host: '127.0.0.1', port: a.port }, ca: ca.certPem, log: silentLogger(), clock: realClock, healthEveryMs: 100 });
  t.teardown(async () => { await bal.stop(); await a.close(); await b.close(); });
  t.same((await bal.check(`127.0.0.1:${a.port}`)).coversLoopback, true, 'the probe sees the certificate covers 127.0.0.1');
  await bal.start();
  t.equal((await get(bal.port, '/who')).body, 'a', 'before any slice: the configured server');
  bal.setServers([`127.0.0.1:${a.port}`, `127.0.0.1:${b.port}`]);
  await sleep(300);
  const watch = await get(bal.port, '/watch');
  t.equal(watch.body, 'a', 'a long-lived request held on a');
  a.state.ready = false; // a begins its shutdown: /readyz red, still serving
  t.equal(await Promise.race([watch.ended, sleep(3000).then(() => 'still open')]), 'closed', 'its connection is closed at the next check');
  t.equal((await get(bal.port, '/who')).body, 'b', 'a new request goes to b');
  t.same(bal.healthyServers, [`127.0.0.1:${b.port}`]);
  a.state.ready = true;
  await sleep(300);
  t.equal((await get(bal.port, '/who')).body, 'b', 'a healthy again: b stays in use (no flapping)');
  // b leaves the EndpointSlice (stopped, or its lease expired): its connections move at once.
  const w2 = await get(bal.port, '/watch');
  t.equal(w2.body, 'b');
  bal.setServers([`127.0.0.1:${a.port}`]);
  t.equal(await Promise.race([w2.ended, sleep(3000).then(() => 'still open')]), 'closed', 'closed when b left the list');
  t.equal((await get(bal.port, '/who')).body, 'a');
  // a killed outright: refused dials; the configured server is a, so nothing is left; the request fails, not hangs.
  await a.close();
  await sleep(300);
  await t.rejects(get(bal.port, '/who'), 'no server: the client sees the connection fail');
});

t.test('a server killed between two checks: the refused dial goes on to the next server, the client never sees it', async (t) => {
  const a = await apiServer('a');
  const b = await apiServer('b');
  // Checks every minute: the balancer still believes a is healthy when it dies.
  const bal = new ApiBalancer({ server: { host: '127.0.0.1', port: a.port }, ca: ca.certPem, log: silentLogger(), clock: realClock, healthEveryMs: 60_000 });
  t.teardown(async () => { await bal.stop(); await b.close(); });
  await bal.start();
  bal.setServers([`127.0.0.1:${a.port}`, `127.0.0.1:${b.port}`]);
  await sleep(200);
  t.equal((await get(bal.port, '/who')).body, 'a');
  await a.close();
  t.equal((await get(bal.port, '/who')).body, 'b', 'dialled on to b');
  t.same(bal.healthyServers, [`127.0.0.1:${b.port}`], 'a is passed over until its next check');
});
