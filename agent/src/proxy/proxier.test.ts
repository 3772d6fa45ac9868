import t from 'tap';
import { silentLogger } from '../../../lib/log/log.js';
import { FakeConntrack } from '../netfilter/conntrack/conntrack.fake.js';
import { CLUSTER_CIDR, clusterIP, makeEndpointSlice, makeService, nodeIP, nodeName, podIP, withField, type EndpointSpec, type JsonObject } from '../testing/addresses.js';
import { FakeBackend } from './backend.fake.js';
import { FakeClock } from '../../../lib/reconcile/clock.fake.js';
import { Proxier, type ProxierDeps } from './proxier.js';
import type { ProxyBackend, ProxySnapshot, SyncScope } from './types.js';

const MIN = 1000;
const MAX = 30_000;

function setup(over: Partial<ProxierDeps> = {}) {
  const clock = new FakeClock(0);
  const backend = new FakeBackend();
  const conntrack = new FakeConntrack();
  const proxier = new Proxier({
    backend,
    conntrack,
    clock,
    log: silentLogger(),
    nodeConfig: { nodeName: nodeName(1), nodeIPs: [nodeIP(1)], clusterCIDR: CLUSTER_CIDR, prefix: 'KUBE', masqueradeBit: 14 },
    minSyncIntervalMs: MIN,
    maxSyncIntervalMs: MAX,
    retryBaseMs: 1000,
    ...over,
  });
  proxier.start();
  return { clock, backend, conntrack, proxier };
}

const web = (port = 80): JsonObject => makeService({ name: 'web', clusterIP: clusterIP(1), ports: [{ name: 'http', port }] });
const webSlice = (ips: string[]): JsonObject =>
  makeEndpointSlice({ service: 'web', ports: [{ name: 'http', port: 8080 }], endpoints: ips.map((ip) => ({ ip, nodeName: nodeName(1) })) });
const dns = (): JsonObject =>
  makeService({ name: 'dns', type: 'NodePort', clusterIP: clusterIP(10), ports: [{ name: 'dns', port: 53, protocol: 'UDP', nodePort: 30053 }] });
const dnsSlice = (eps: EndpointSpec[]): JsonObject => makeEndpointSlice({ service: 'dns', ports: [{ name: 'dns', port: 53, protocol: 'UDP' }], endpoints: eps });

/** Both sources listed and synced, first full sync done. */
async function synced(s: ReturnType<typeof setup>, services: JsonObject[], slices: JsonObject[]): Promise<void> {
  for (const o of services) s.proxier.onServiceAdd(o);
  for (const o of slices) s.proxier.onEndpointSliceAdd(o);
  s.proxier.onServicesSynced();
  s.proxier.onEndpointSlicesSynced();
  await s.clock.advance(0);
}

t.test('nothing is applied until both Services and EndpointSlices have synced', async (t) => {
  const s = setup();
  s.proxier.onServiceAdd(web());
  s.proxier.onEndpointSliceAdd(webSlice([podIP(1, 1)]));
  await s.clock.advance(MAX * 3);
  t.equal(s.backend.syncs.length, 0, 'periodic runs do nothing either');
  s.proxier.onServicesSynced();
  await s.clock.advance(MAX * 3);
  t.equal(s.backend.syncs.length, 0, 'Services alone are not enough');
  t.equal(s.proxier.ready, false);
  s.proxier.onEndpointSlicesSynced();
  await s.clock.advance(0);
  t.same(s.backend.scopes(), ['full']);
  t.same(s.backend.syncs[0]!.snapshot.endpoints.get('default/web:http')!.map((e) => `${e.ip}:${e.port}`), ['10.244.1.2:8080'], 'everything listed before sync is in the first snapshot');
  t.equal(s.proxier.ready, true);
  t.equal(s.proxier.lastSync?.reason, 'first');
});

t.test('the first sync runs as soon as both lists are in, not a minSyncInterval after the events of the lists', async (t) => {
  const s = setup();
  s.proxier.onServiceAdd(web());
  s.proxier.onEndpointSliceAdd(webSlice([podIP(1, 1)]));
  await s.clock.advance(100);
  s.proxier.onServicesSynced();
  s.proxier.onEndpointSlicesSynced();
  await s.clock.advance(0);
  t.same(s.backend.scopes(), ['full'], `synced at once (${MIN} ms min interval), with no wait`);
  t.equal(s.proxier.lastSync?.startedAt, 100, 'it started when the second list was in');
});

t.test('full first, then partial syncs with exactly the changed Services', async (t) => {
  const s = setup();
  const other = makeService({ name: 'other', clusterIP: clusterIP(2), ports: [{ port: 443 }] });
  await synced(s, [web(), other], [webSlice([podIP(1, 1)])]);

  // A burst of events inside the min interval: one sync.
  await s.clock.advance(100);
  s.proxier.onEndpointSliceUpdate(webSlice([podIP(1, 1)]), webSlice([podIP(1, 1), podIP(1, 2)]));
  const third = makeService({ name: 'third', clusterIP: clusterIP(3), ports: [{ port: 9000 }] });
  s.proxier.onServiceAdd(third);
  s.proxier.onServiceUpdate(other, other); // no-op: must not appear in the scope
  await s.clock.advance(MIN - 101);
  t.equal(s.backend.syncs.length, 1, 'min interval respected');
  await s.clock.advance(1);
  t.same(s.backend.scopes(), ['full', 'partial default/third,default/web']);
  t.ok(s.backend.installedEquals(s.proxier.snapshot()), 'the partial sync left the installed state complete');
  t.equal(s.proxier.lastSync?.scope, 'partial');
  t.equal(s.proxier.lastSync?.changedServices, 2);

  // A delete.
  await s.clock.advance(MIN);
  s.proxier.onServiceDelete(other);
  await s.clock.advance(0);
  t.equal(s.backend.scopes().at(-1), 'partial default/other');
  t.ok(s.backend.installedEquals(s.proxier.snapshot()));
  t.notOk(s.proxier.snapshot().services.has('default/other'));

  // Add then delete before the sync cancels: nothing changes.
  await s.clock.advance(MIN);
  const tmp = makeService({ name: 'tmp', clusterIP: clusterIP(4), ports: [{ port: 1 }] });
  s.proxier.onServiceAdd(tmp);
  s.proxier.onServiceDelete(tmp);
  await s.clock.advance(MAX);
  t.equal(s.backend.scopes().at(-1), 'partial ', 'only the periodic sync, with nothing changed');
});

t.test('a failed sync forces the next one full, retried with a doubling backoff', async (t) => {
  const s = setup();
  await synced(s, [web()], [webSlice([podIP(1, 1)])]);
  await s.clock.advance(5000);
  s.backend.failNext(2);
  s.proxier.onEndpointSliceUpdate(webSlice([podIP(1, 1)]), webSlice([podIP(1, 2)]));
  await s.clock.advance(0);
  t.same(s.backend.scopes(), ['full', 'partial default/web FAILED']);
  t.equal(s.proxier.lastSync?.ok, false);
  t.match(s.proxier.lastSync?.error, /iptables-restore/);
  await s.clock.advance(999);
  t.equal(s.backend.syncs.length, 2, 'retry not before 1 s');
  await s.clock.advance(1);
  t.same(s.backend.scopes().slice(2), ['full FAILED']);
  t.equal(s.proxier.lastSync?.reason, 'after-failure');
  await s.clock.advance(1999);
  t.equal(s.backend.syncs.length, 3, 'second retry waits 2 s');
  await s.clock.advance(1);
  t.same(s.backend.scopes().slice(3), ['full']);
  t.equal(s.proxier.lastSync?.ok, true);
  t.ok(s.backend.installedEquals(s.proxier.snapshot()));

  // Back to partial syncs, with only the changes made after the recovery.
  await s.clock.advance(MIN);
  s.proxier.onServiceAdd(makeService({ name: 'x', clusterIP: clusterIP(5), ports: [{ port: 1 }] }));
  await s.clock.advance(0);
  t.same(s.backend.scopes().at(-1), 'partial default/x');
});

t.test('a missing canary forces a full sync', async (t) => {
  const s = setup();
  await synced(s, [web()], [webSlice([podIP(1, 1)])]);
  await s.clock.advance(MIN);
  s.backend.removeCanary();
  s.proxier.onEndpointSliceUpdate(webSlice([podIP(1, 1)]), webSlice([podIP(1, 3)]));
  await s.clock.advance(0);
  t.same(s.backend.scopes(), ['full', 'full']);
  t.equal(s.proxier.lastSync?.reason, 'canary-missing');
  t.ok(s.backend.installedEquals(s.proxier.snapshot()));
  t.ok(s.backend.canaryCheckCount >= 1);
});

t.test('a full sync at least every fullSyncIntervalMs', async (t) => {
  const s = setup({ fullSyncIntervalMs: 60_000 });
  await synced(s, [web()], []);
  await s.clock.advance(MAX); // periodic, partial
  await s.clock.advance(MAX); // 60 s after the first: full
  t.same(s.backend.scopes(), ['full', 'partial ', 'full']);
  t.equal(s.proxier.lastSync?.reason, 'periodic-full');
});

t.test('UDP: removing an endpoint deletes its flows on the ClusterIP and the NodePort, and only those', async (t) => {
  const s = setup();
  const both = [{ ip: podIP(1, 1) }, { ip: podIP(2, 1) }];
  await synced(s, [dns()], [dnsSlice(both)]);
  t.same(s.conntrack.describe(), ['service *:30053', 'service 10.96.0.10:53'], 'a new UDP Service with endpoints clears its frontends');
  s.conntrack.calls.length = 0;
  s.conntrack
    .addFlow({ origDst: clusterIP(10), origPortDst: 53, replySrc: podIP(1, 1) })
    .addFlow({ origDst: clusterIP(10), origPortDst: 53, replySrc: podIP(2, 1) })
    .addFlow({ origDst: nodeIP(1), origPortDst: 30053, replySrc: podIP(1, 1) })
    .addFlow({ origDst: nodeIP(1), origPortDst: 30053, replySrc: podIP(2, 1) });
  await s.clock.advance(MIN);
  s.proxier.onEndpointSliceUpdate(dnsSlice(both), dnsSlice([{ ip: podIP(2, 1) }]));
  await s.clock.advance(0);
  t.same(s.conntrack.describe(), ['endpoint *:30053 -> 10.244.1.2', 'endpoint 10.96.0.10:53 -> 10.244.1.2']);
  t.same(
    s.conntrack.table.map((f) => `${f.origDst}:${f.origPortDst}>${f.replySrc}`),
    ['10.96.0.10:53>10.244.2.2', '192.168.77.11:30053>10.244.2.2'],
  );
  t.equal(s.proxier.lastSync?.conntrackActions, 2);
});

t.test('UDP: a Service going from 0 to 1 endpoint clears the entries of clients that met the REJECT', async (t) => {
  const s = setup();
  await synced(s, [dns()], []);
  t.same(s.conntrack.calls, [], 'no endpoints, nothing to clear');
  // An unreplied, un-NATed entry: the reply would come from the ClusterIP itself.
  s.conntrack.addFlow({ origDst: clusterIP(10), origPortDst: 53, replySrc: clusterIP(10) });
  await s.clock.advance(MIN);
  s.proxier.onEndpointSliceAdd(dnsSlice([{ ip: podIP(1, 1) }]));
  await s.clock.advance(0);
  t.same(s.conntrack.describe(), ['service *:30053', 'service 10.96.0.10:53']);
  t.same(s.conntrack.table, []);
});

t.test('UDP: conntrack work waits for a successful sync; a conntrack failure does not fail the sync', async (t) => {
  const s = setup();
  const both = [{ ip: podIP(1, 1) }, { ip: podIP(2, 1) }];
  await synced(s, [dns()], [dnsSlice(both)]);
  s.conntrack.calls.length = 0;
  await s.clock.advance(MIN);
  s.backend.failNext();
  s.proxier.onEndpointSliceUpdate(dnsSlice(both), dnsSlice([{ ip: podIP(2, 1) }]));
  await s.clock.advance(0);
  t.same(s.conntrack.calls, [], 'rules not applied: the old endpoint may still be in use');
  s.conntrack.failNext();
  await s.clock.advance(1000);
  t.equal(s.proxier.lastSync?.ok, true);
  t.equal(s.proxier.lastSync?.scope, 'full');
  t.same(s.conntrack.describe(), ['endpoint 10.96.0.10:53 -> 10.244.1.2'], 'the first deletion failed (logged), the rest ran');
});

t.test('TCP endpoint changes cause no conntrack work', async (t) => {
  const s = setup();
  await synced(s, [web()], [webSlice([podIP(1, 1)])]);
  await s.clock.advance(MIN);
  s.proxier.onEndpointSliceDelete(webSlice([podIP(1, 1)]));
  await s.clock.advance(0);
  t.same(s.conntrack.calls, []);
  t.same(s.backend.scopes(), ['full', 'partial default/web']);
});

t.test('an invalid Service is rejected with its field and does not prevent the others from syncing', async (t) => {
  const s = setup();
  const bad = withField(makeService({ name: 'bad', clusterIP: clusterIP(7), ports: [{ port: 80 }] }), 'spec.ports[0].port', 0);
  await synced(s, [web(), bad], [webSlice([podIP(1, 1)])]);
  t.same([...s.backend.syncs[0]!.snapshot.services.keys()], ['default/web:http']);
  t.same(s.proxier.rejected().map((r) => [r.key, r.field]), [['default/bad', 'spec.ports[0].port']]);

  // Fixed: it appears, and only it is synced.
  await s.clock.advance(MIN);
  const fixed = withField(bad, 'spec.ports[0].port', 81);
  s.proxier.onServiceUpdate(bad, fixed);
  await s.clock.advance(0);
  t.same(s.proxier.rejected(), []);
  t.equal(s.backend.scopes().at(-1), 'partial default/bad');
  t.ok(s.proxier.snapshot().services.has('default/bad'));

  // Broken again by an update: its last valid version stays served (proxier-last-good.test.ts has the details).
  await s.clock.advance(MIN);
  const syncs = s.backend.syncs.length;
  const broken = withField(withField(fixed, 'spec.clusterIPs', undefined), 'spec.clusterIP', 'not-an-ip');
  s.proxier.onServiceUpdate(fixed, broken);
  await s.clock.advance(MIN);
  t.same(s.proxier.rejected().map((r) => [r.field, r.servedFromLastGood]), [['spec.clusterIP', true]]);
  t.same([...s.proxier.snapshot().services.keys()], ['default/bad', 'default/web:http'], 'its rules stay');
  t.equal(s.backend.syncs.length, syncs, 'nothing to sync');
  t.ok(s.backend.installedEquals(s.proxier.snapshot()));

  // Deleting the rejected object clears the rejection and takes the rules it kept away.
  s.proxier.onServiceDelete(broken);
  t.same(s.proxier.rejected(), []);
  await s.clock.advance(MIN);
  t.same([...s.proxier.snapshot().services.keys()], ['default/web:http']);
  t.equal(s.backend.scopes().at(-1), 'partial default/bad');
  t.ok(s.backend.installedEquals(s.proxier.snapshot()));
});

t.test('headless and other rule-less Services are listed as ignored and get no rules', async (t) => {
  const s = setup();
  await synced(s, [web(), makeService({ name: 'h', clusterIP: 'None', ports: [{ port: 80 }] })], []);
  t.same(s.proxier.ignored().map((i) => i.key), ['default/h']);
  t.same([...s.backend.syncs[0]!.snapshot.services.keys()], ['default/web:http']);
});

t.test('stats of the last sync', async (t) => {
  const s = setup();
  await synced(s, [web(), dns()], [webSlice([podIP(1, 1), podIP(1, 2)])]);
  const st = s.proxier.lastSync!;
  t.equal(st.ok, true);
  t.equal(st.scope, 'full');
  t.equal(st.servicePorts, 2);
  t.equal(st.endpoints, 2);
  t.equal(st.ruleCount, 4, 'from the backend');
  t.equal(st.startedAt, 0);
  t.equal(s.proxier.syncCount, 1);
});

t.test('syncs never overlap, even when syncNow is called directly', async (t) => {
  let active = 0;
  let maxActive = 0;
  const scopes: SyncScope[] = [];
  const slow: ProxyBackend = {
    mode: 'nftables',
    async sync(_s: ProxySnapshot, scope: SyncScope) {
      active++;
      maxActive = Math.max(maxActive, active);
      scopes.push(scope);
      await new Promise((r) => setImmediate(r));
      active--;
    },
    async canaryMissing() {
      return false;
    },
    async cleanup() {},
  };
  const s = setup({ backend: slow });
  s.proxier.onServicesSynced();
  s.proxier.onEndpointSlicesSynced();
  await Promise.all([s.proxier.syncNow(), s.proxier.syncNow(), s.proxier.syncNow()]);
  t.equal(maxActive, 1);
  t.equal(scopes.length, 3);
  t.same(scopes.map((x) => x.full), [true, false, false]);
  t.equal(s.proxier.lastSync?.ruleCount, null, 'a backend without lastSyncRuleCount');
});

t.test('onSyncDone reports every attempt after its conntrack work: the applied snapshot, or null on failure', async (t) => {
  const done: { endpoints: string[] | null; ok: boolean; conntrackCallsBefore: number }[] = [];
  let s: ReturnType<typeof setup> | undefined;
  s = setup({
    onSyncDone: (snap, stats) =>
      done.push({
        endpoints: snap ? (snap.endpoints.get('default/dns:dns') ?? []).map((e) => e.ip) : null,
        ok: stats.ok,
        conntrackCallsBefore: s!.conntrack.calls.length,
      }),
  });
  await synced(s, [dns()], [dnsSlice([{ ip: podIP(1, 1), nodeName: nodeName(1) }])]);
  // a UDP Service that gains endpoints has its (ClusterIP and NodePort) entries flushed first: cached rejects go
  t.same(done, [{ endpoints: ['10.244.1.2'], ok: true, conntrackCallsBefore: 2 }]);
  s.proxier.onEndpointSliceUpdate(dnsSlice([{ ip: podIP(1, 1), nodeName: nodeName(1) }]), dnsSlice([{ ip: podIP(1, 2), nodeName: nodeName(1) }]));
  await s.clock.advance(MIN);
  t.equal(done.length, 2);
  t.same(done[1]!.endpoints, ['10.244.1.3']);
  t.ok(done[1]!.conntrackCallsBefore > 2, 'the removed endpoint\'s conntrack cleanup ran before the callback');
  s.backend.failNext(1);
  s.proxier.onEndpointSliceUpdate(dnsSlice([{ ip: podIP(1, 2), nodeName: nodeName(1) }]), dnsSlice([]));
  await s.clock.advance(MIN);
  t.same(done[2], { endpoints: null, ok: false, conntrackCallsBefore: done[2]!.conntrackCallsBefore });
});
