/**
 * The `kubernetes` EndpointSlice follows the API servers' leases: each
 * server is a reconciler with a clock of its own over one shared backend
 * (a killed server is one whose clock no longer runs: it renews nothing).
 */
import t, { type Test } from 'tap';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { silentLogger } from '../../lib/log/log.js';
import { Rest } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { loadSchemas } from '../api/schema.js';
import { ServiceAllocator } from '../alloc/service-allocator.js';
import { MemoryStorage } from '../store/memory-storage.js';
import type { Stored } from '../store/types.js';
import { WatchCache } from '../store/watch-cache.js';
import { APISERVER_LEASES, ApiServerEndpoints, kubernetesSlice, liveEndpoints } from './apiserver-endpoints.js';

const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Scale', 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);

async function server(t: Test, storage: MemoryStorage, ip: string) {
  const clock = new FakeClock(Date.UTC(2026, 11, 5));
  const cache = new WatchCache({ storage, clock });
  await cache.start();
  const services = new ServiceAllocator();
  services.start(cache);
  const rest = new Rest({ storage, cache, schemas, clock, services });
  const ep = new ApiServerEndpoints({ storage, cache, rest, clock, log: silentLogger(), ip, port: 6443 });
  t.teardown(() => { services.stop(); cache.close(); });
  const ips = async () => {
    await cache.fresh();
    return ((cache.get('endpointslices.discovery.k8s.io/default/kubernetes')?.object['endpoints'] ?? []) as { addresses: string[] }[]).flatMap((e) => e.addresses);
  };
  return { clock, cache, ep, ips };
}

/** Advances every running server's clock in steps, letting each check run. */
async function run(clocks: FakeClock[], ms: number, stepMs = 1000) {
  for (let done = 0; done < ms; done += stepMs) for (const c of clocks) await c.advance(stepMs);
}

t.test('each API server holds a lease; the slice lists the live ones; a killed one leaves after the TTL, a stopped one at once', async (t) => {
  const storage = new MemoryStorage();
  await storage.create('namespaces//default', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const a = await server(t, storage, '192.168.77.241');
  const b = await server(t, storage, '192.168.77.242');
  const c = await server(t, storage, '192.168.77.243');
  await a.ep.start();
  t.same((await a.ips()), ['192.168.77.241'], 'one server: itself');
  await b.ep.start();
  await c.ep.start();
  await run([a.clock, b.clock, c.clock], 2000);
  t.same((await a.ips()), ['192.168.77.241', '192.168.77.242', '192.168.77.243'], 'three servers: all three, sorted');
  const slice = a.cache.get('endpointslices.discovery.k8s.io/default/kubernetes')!;
  t.equal((slice.object.metadata?.['labels'] as Record<string, string>)['kubernetes.io/service-name'], 'kubernetes');
  t.same(slice.object['ports'], [{ name: 'https', port: 6443, protocol: 'TCP' }]);
  t.equal((await storage.list(`${APISERVER_LEASES}/`)).items.length, 3, 'three leases stored');

  // b is killed: its clock stops, it renews nothing. Renewals of a and c go on; after 15 s without a change of b's
  // lease, the others take it out.
  let gone = -1;
  for (let s = 1; s <= 30 && gone < 0; s++) {
    await run([a.clock, c.clock], 1000);
    if (!(await a.ips()).includes('192.168.77.242')) gone = s;
  }
  t.ok(gone >= 12 && gone <= 14, `b left the slice ${gone} s after its clock stopped: its lease last changed at its start, 2 s before, so 15 s (the TTL) after that change as the others saw it`);
  t.same((await a.ips()), ['192.168.77.241', '192.168.77.243']);
  t.equal((await storage.list(`${APISERVER_LEASES}/`)).items.length, 2, 'its lease deleted');
  await run([a.clock, c.clock], 30_000);
  t.same((await a.ips()), ['192.168.77.241', '192.168.77.243'], 'the live ones stay, renewing every 10 s');

  // c stops cleanly: out at once, no TTL to wait for.
  await c.ep.stop();
  await a.cache.fresh();
  t.same((await a.ips()), ['192.168.77.241'], 'a clean stop withdraws at once');
  // b comes back (a restart on its address): in again at its first renewal.
  await b.clock.advance(1000);
  await a.cache.fresh();
  t.same((await a.ips()), ['192.168.77.241', '192.168.77.242'], 'a restarted server is back');
  await a.ep.stop();
  await b.ep.stop();
});

t.test('liveEndpoints: a lease is dead only once its version has not changed for the TTL by this observer\'s clock', async (t) => {
  const lease = (ip: string, rev: number): Stored => ({ key: `${APISERVER_LEASES}//${ip}`, rev, createRev: rev, object: { metadata: { name: ip } }, json: '' });
  const seen = new Map([['10.0.0.2', { rev: 5, since: 1000 }], ['10.0.0.3', { rev: 6, since: 1000 }]]);
  const r = liveEndpoints([lease('10.0.0.2', 5), lease('10.0.0.3', 7), lease('10.0.0.10', 1)], seen, 16_000, 15_000, '10.0.0.1');
  t.same(r.live, ['10.0.0.1', '10.0.0.3', '10.0.0.10'], 'self always; a changed version is alive; numeric order');
  t.same(r.expired.map((l) => l.key), [`${APISERVER_LEASES}//10.0.0.2`]);
  t.same(liveEndpoints([lease('10.0.0.2', 5)], seen, 15_999, 15_000, '10.0.0.1').live, ['10.0.0.1', '10.0.0.2'], 'not before the TTL');
  t.equal(kubernetesSlice(['fd00::1'], 6443)['addressType'], 'IPv6');
});
