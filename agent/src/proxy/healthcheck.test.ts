/**
 * The service health server on loopback: real HTTP on 127.0.0.1, ports the
 * kernel picked free just before.
 */
import t from 'tap';
import { silentLogger } from '../../../lib/log/log.js';
import { freePort } from '../../../lib/testing/ports.js';
import { ep, snapshot, svc } from './test-fixtures.js';
import { healthBody, healthCheckNodePorts, localReadyEndpoints, ServiceHealthServer, type HealthListen, httpListen } from './healthcheck.js';

async function get(port: number): Promise<{ status: number; body: string; weight: string | null; type: string | null } | Error> {
  try {
    const r = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2000) });
    return { status: r.status, body: await r.text(), weight: r.headers.get('x-load-balancing-endpoint-weight'), type: r.headers.get('content-type') };
  } catch (e) {
    return e as Error;
  }
}

const lbSvc = (port: number, name = 'web') => svc('shop', name, '172.30.0.50', { lbVIPs: ['1.2.3.4'], etp: 'Local', healthCheckNodePort: port, nodePort: 30080 });

t.test('counts: distinct IPs of local ready endpoints over all ports; ports per Service', async (t) => {
  const http = svc('shop', 'web', '172.30.0.50', { portName: 'http', etp: 'Local', lbVIPs: ['1.2.3.4'], healthCheckNodePort: 32000 });
  const https = svc('shop', 'web', '172.30.0.50', { portName: 'https', port: 443, etp: 'Local', lbVIPs: ['1.2.3.4'], healthCheckNodePort: 32000 });
  const snap = snapshot(
    [http, [ep('10.180.0.1:80', { local: true }), ep('10.180.0.2:80', { local: true, ready: false, serving: true, terminating: true }), ep('10.180.0.3:80')]],
    [https, [ep('10.180.0.1:443', { local: true }), ep('10.180.0.4:443', { local: true })]],
    [svc('shop', 'db', '172.30.0.51'), [ep('10.180.0.9:80', { local: true })]],
  );
  t.same([...healthCheckNodePorts(snap)], [['shop/web', 32000]]);
  t.same(localReadyEndpoints(snap).get('shop/web'), 2, '10.180.0.1 (two ports, one IP) and 10.180.0.4; terminating and remote ones do not count');
});

t.test('the body is kube-proxy\'s JSON', async (t) => {
  t.equal(healthBody('shop/web', 2, true), '{\n\t"service": {\n\t\t"namespace": "shop",\n\t\t"name": "web"\n\t},\n\t"localEndpoints": 2,\n\t"serviceProxyHealthy": true\n}');
  t.same(JSON.parse(healthBody('shop/web', 0, false)), { service: { namespace: 'shop', name: 'web' }, localEndpoints: 0, serviceProxyHealthy: false });
});

t.test('200 with local endpoints, 503 without or when the proxy is unhealthy; servers follow the Services', async (t) => {
  const port = await freePort();
  let healthy = true;
  const hs = new ServiceHealthServer({ log: silentLogger(), addresses: ['127.0.0.1'], proxyHealthy: () => healthy });
  t.teardown(() => hs.close());

  await hs.update(snapshot([lbSvc(port), [ep('10.180.0.1:80', { local: true }), ep('10.180.0.2:80')]]));
  t.same([...hs.listening()], [['shop/web', port]]);
  let r = await get(port);
  t.notOk(r instanceof Error, String(r));
  if (!(r instanceof Error)) {
    t.equal(r.status, 200);
    t.same(JSON.parse(r.body), { service: { namespace: 'shop', name: 'web' }, localEndpoints: 1, serviceProxyHealthy: true });
    t.equal(r.weight, '1');
    t.equal(r.type, 'application/json');
  }

  healthy = false;
  r = await get(port);
  t.match(r, { status: 503 }, 'proxy not healthy: 503 even with endpoints');
  healthy = true;

  await hs.update(snapshot([lbSvc(port), [ep('10.180.0.2:80')]]));
  r = await get(port);
  t.match(r, { status: 503, weight: '0' }, 'no local endpoint: 503');
  if (!(r instanceof Error)) t.same(JSON.parse(r.body).localEndpoints, 0);

  await hs.update(snapshot([lbSvc(port), []]));
  t.match(await get(port), { status: 503 }, 'no endpoints at all: 503');

  // The Service gone: the port is closed.
  await hs.update(snapshot([svc('shop', 'other', '172.30.0.60'), []]));
  t.same([...hs.listening()], []);
  t.type(await get(port), Error, 'nothing listens any more');

  // It comes back on another port; the old one stays closed.
  const port2 = await freePort();
  await hs.update(snapshot([lbSvc(port2), [ep('10.180.0.1:80', { local: true })]]));
  t.match(await get(port2), { status: 200 });
  await hs.update(snapshot([lbSvc(port), [ep('10.180.0.1:80', { local: true })]]));
  t.match(await get(port), { status: 200 }, 'port changed: the new one answers');
  t.type(await get(port2), Error, '...and the old one is closed');
});

t.test('a port that cannot be opened is tried again at the next update', async (t) => {
  const port = await freePort();
  let fail = true;
  const listen: HealthListen = async (ip, p, h) => {
    if (fail) throw Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE' });
    return httpListen(ip, p, h);
  };
  const hs = new ServiceHealthServer({ log: silentLogger(), addresses: ['127.0.0.1'], proxyHealthy: () => true, listen });
  t.teardown(() => hs.close());
  const snap = snapshot([lbSvc(port), [ep('10.180.0.1:80', { local: true })]]);
  await hs.update(snap);
  t.same([...hs.listening()], [], 'not open');
  fail = false;
  await hs.update(snap);
  t.same([...hs.listening()], [['shop/web', port]]);
  t.match(await get(port), { status: 200 });
});

t.test('a taken port on one address closes the others of the same Service', async (t) => {
  const port = await freePort();
  const blocker = await httpListen('127.0.0.1', port, (_q, s) => s.end('other'));
  t.teardown(() => blocker.close());
  const hs = new ServiceHealthServer({ log: silentLogger(), addresses: ['127.0.0.2', '127.0.0.1'], proxyHealthy: () => true });
  await hs.update(snapshot([lbSvc(port), [ep('10.180.0.1:80', { local: true })]]));
  t.same([...hs.listening()], []);
  await blocker.close();
  // 127.0.0.2's listener was closed again: a fresh bind there works.
  const probe = await httpListen('127.0.0.2', port, (_q, s) => s.end());
  await probe.close();
  await hs.close();
  await hs.update(snapshot([lbSvc(port), [ep('10.180.0.1:80', { local: true })]]));
  t.same([...hs.listening()], [], 'after close(), updates open nothing');
});
