/**
 * The Proxier with the iptables and nftables backends on their validating
 * fakes (no root), fed Kubernetes objects: an update the agent cannot use
 * leaves the rules exactly as they were (the whole ruleset compared, and
 * packets traced through it), is recorded, logged once, counted and told to
 * the object as one Warning Event; the next valid version is taken; a delete
 * removes the rules. The case first (issue 24: `kubectl patch svc web
 * -p '{"spec":{"sessionAffinity":"None"}}'` on a ClientIP Service leaves the
 * defaulted sessionAffinityConfig behind), then an EndpointSlice.
 */
import t, { type Test } from 'tap';
import { pino } from 'pino';
import type { IPv4 } from '../../../lib/net/ip.js';
import { FakeConntrack } from '../netfilter/conntrack/conntrack.fake.js';
import { FakeIptables } from '../netfilter/iptables/iptables.fake.js';
import { formatDump } from '../netfilter/iptables/iptables-parse.js';
import { NftFake } from '../netfilter/nft/nft.fake.js';
import { FakeClock } from '../../../lib/reconcile/clock.fake.js';
import { FakeEventRecorder } from '../../../lib/reconcile/event-recorder.fake.js';
import { CLUSTER_CIDR, clusterIP, makeEndpointSlice, makeService, nodeIP, nodeName, podIP, withField, type JsonObject } from '../testing/addresses.js';
import { traceIptables } from '../trace/iptables-tracer.js';
import { traceNftables } from '../trace/nft-tracer.js';
import { IptablesBackend } from './iptables/proxier.js';
import { NftablesBackend } from './nftables/proxier.js';
import { Proxier } from './proxier.js';
import type { ProxyBackend, ProxyNodeConfig } from './types.js';

const NODE: ProxyNodeConfig = { nodeName: nodeName(1), nodeIPs: [nodeIP(1)], clusterCIDR: CLUSTER_CIDR, prefix: 'KUBE', masqueradeBit: 14 };

interface Mode {
  readonly name: 'iptables' | 'nftables';
  /** A backend on a fresh fake, with the whole ruleset as text and a packet trace to a destination. */
  make(): { backend: ProxyBackend; rules(): string; trace(dst: string, port: number): string };
}

const MODES: readonly Mode[] = [
  {
    name: 'iptables',
    make() {
      const f = new FakeIptables();
      return {
        backend: new IptablesBackend({ iptables: f, nodeConfig: NODE, log: pino({ level: 'silent' }) }),
        rules: () => formatDump(f.dump()),
        trace: (dst, port) => traceIptables(f.dump(), { sourceIP: podIP(1, 5), destIP: dst as IPv4, destPort: port, protocol: 'TCP' }, { nodeIPs: [nodeIP(1)] }).destination,
      };
    },
  },
  {
    name: 'nftables',
    make() {
      const f = new NftFake();
      return {
        backend: new NftablesBackend({ nft: f, nodeConfig: NODE, log: pino({ level: 'silent' }) }),
        rules: () => JSON.stringify(f.table('ip', 'kube-proxy'), (_k, v: unknown) => (v instanceof Map ? [...v.entries()] : v instanceof Set ? [...v] : v)),
        trace: (dst, port) => traceNftables(f.table('ip', 'kube-proxy')!, { sourceIP: podIP(1, 5), protocol: 'TCP', destIP: dst as IPv4, destPort: port }, { nodeIPs: [nodeIP(1)] }).destination,
      };
    },
  },
];

function setup(t: Test, mode: Mode) {
  const clock = new FakeClock(0);
  const kernel = mode.make();
  const events = new FakeEventRecorder();
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  const proxier = new Proxier({ backend: kernel.backend, conntrack: new FakeConntrack(), clock, log, nodeConfig: NODE, minSyncIntervalMs: 1000, maxSyncIntervalMs: 30_000, events });
  proxier.start();
  t.teardown(() => proxier.stop());
  const settle = async () => {
    await clock.advance(1000);
    await proxier.whenIdle();
  };
  const warnings = () => lines.filter((l) => l['level'] === 40);
  return { clock, kernel, events, proxier, settle, warnings };
}

/** `o` at resourceVersion `rv` (the API server bumps it on every write). */
const at = (o: JsonObject, rv: number): JsonObject => withField(o, 'metadata.resourceVersion', String(rv));

const slice = (ips: string[]): JsonObject => makeEndpointSlice({ service: 'web', ports: [{ name: 'http', port: 8080 }], endpoints: ips.map((ip) => ({ ip, nodeName: nodeName(1) })) });
const BOTH = `${podIP(1, 1)}:8080, ${podIP(1, 2)}:8080`;

for (const mode of MODES) {
  t.test(`${mode.name}: a Service update the agent cannot use keeps its rules; the next valid one is taken; a delete removes them`, async (t) => {
    const s = setup(t, mode);
    const v1 = at(makeService({ name: 'web', clusterIP: clusterIP(1), ports: [{ name: 'http', port: 80 }], affinityTimeoutSeconds: 10800 }), 10);
    s.proxier.onServiceAdd(v1);
    s.proxier.onEndpointSliceAdd(slice([podIP(1, 1), podIP(1, 2)]));
    s.proxier.onServicesSynced();
    s.proxier.onEndpointSlicesSynced();
    await s.settle();
    const before = s.kernel.rules();
    t.equal(s.kernel.trace(clusterIP(1), 80), BOTH, 'served');
    t.match(before, mode.name === 'iptables' ? /--rcheck --seconds 10800/ : /@affinity-/, 'with ClientIP affinity');

    // kubectl patch svc web -p '{"spec":{"sessionAffinity":"None"}}': the defaulted sessionAffinityConfig stays.
    const v2 = at(withField(v1, 'spec.sessionAffinity', 'None'), 11);
    s.proxier.onServiceUpdate(v1, v2);
    await s.settle();
    t.equal(s.kernel.rules(), before, 'the rules are exactly as they were');
    t.equal(s.kernel.trace(clusterIP(1), 80), BOTH, 'the ClusterIP still answers');
    t.same(s.proxier.rejected(), [{ kind: 'Service', key: 'default/web', field: 'spec.sessionAffinityConfig', message: 'spec.sessionAffinityConfig: must not be set when sessionAffinity is None', servedFromLastGood: true, lastGoodResourceVersion: '10' }]);
    t.equal(s.warnings().length, 1, 'one warning');
    t.match(s.warnings()[0], { svc: 'default/web', kind: 'Service', field: 'spec.sessionAffinityConfig' });
    t.match(s.proxier.rejectionCounts(), [{ kind: 'Service', rejected: 1, servedFromLastGood: 1 }, { kind: 'EndpointSlice', rejected: 0, servedFromLastGood: 0 }]);
    t.match(s.events.events, [{ involved: { kind: 'Service', namespace: 'default', name: 'web', resourceVersion: '11' }, type: 'Warning', reason: 'InvalidObjectKeptLastGood' }]);
    t.equal(s.events.events.length, 1, 'one Event');
    t.equal(s.proxier.pendingChanges().services, 0, 'no change recorded');

    // The same bad version again (a relist): nothing more said.
    s.proxier.onServiceUpdate(v2, v2);
    await s.clock.advance(30_000);
    await s.proxier.whenIdle();
    t.equal(s.kernel.rules(), before, 'a periodic sync later: the same rules');
    t.equal(s.warnings().length, 1, 'still one warning');
    t.equal(s.events.events.length, 1, 'still one Event');

    // The user fixes it: the next valid version (no affinity) is taken.
    const v3 = at(withField(v2, 'spec.sessionAffinityConfig', undefined), 12);
    s.proxier.onServiceUpdate(v2, v3);
    await s.settle();
    t.not(s.kernel.rules(), before, 'rules rewritten');
    t.notMatch(s.kernel.rules(), mode.name === 'iptables' ? /--rcheck/ : /@affinity-/, 'no affinity any more');
    t.equal(s.kernel.trace(clusterIP(1), 80), BOTH);
    t.same(s.proxier.rejected(), []);
    t.match(s.proxier.rejectionCounts(), [{ kind: 'Service', rejected: 1, servedFromLastGood: 0 }]);

    // Broken again, then deleted: the delete takes the (kept) rules away.
    const v4 = at(withField(v3, 'spec.ports[0].port', 0), 13);
    s.proxier.onServiceUpdate(v3, v4);
    await s.settle();
    t.equal(s.kernel.trace(clusterIP(1), 80), BOTH, 'kept');
    s.proxier.onServiceDelete(v4);
    await s.settle();
    t.notMatch(s.kernel.trace(clusterIP(1), 80), /10\.244/, 'gone');
    t.notMatch(s.kernel.rules(), /default\/web/, 'no rule of it left');
    t.same(s.proxier.rejected(), []);
    t.match(s.proxier.rejectionCounts(), [{ kind: 'Service', rejected: 2, servedFromLastGood: 0 }]);
  });

  t.test(`${mode.name}: an EndpointSlice update the agent cannot use keeps its endpoints; the next valid one is taken; a delete removes them`, async (t) => {
    const s = setup(t, mode);
    const svc = makeService({ name: 'web', clusterIP: clusterIP(1), ports: [{ name: 'http', port: 80 }] });
    const e1 = at(slice([podIP(1, 1), podIP(1, 2)]), 20);
    s.proxier.onServiceAdd(svc);
    s.proxier.onEndpointSliceAdd(e1);
    s.proxier.onServicesSynced();
    s.proxier.onEndpointSlicesSynced();
    await s.settle();
    const before = s.kernel.rules();
    t.equal(s.kernel.trace(clusterIP(1), 80), BOTH);

    const e2 = at(withField(e1, 'endpoints[1].addresses[0]', '10.244.1.300'), 21);
    s.proxier.onEndpointSliceUpdate(e1, e2);
    await s.settle();
    t.equal(s.kernel.rules(), before, 'the rules are exactly as they were');
    t.equal(s.kernel.trace(clusterIP(1), 80), BOTH, 'both endpoints still served');
    t.match(s.proxier.rejected(), [{ kind: 'EndpointSlice', key: 'default/web-abcde', field: 'endpoints[1].addresses[0]', servedFromLastGood: true, lastGoodResourceVersion: '20' }]);
    t.equal(s.warnings().length, 1, 'one warning');
    t.match(s.proxier.rejectionCounts(), [{ kind: 'Service', rejected: 0 }, { kind: 'EndpointSlice', rejected: 1, servedFromLastGood: 1 }]);
    t.match(s.events.events, [{ involved: { kind: 'EndpointSlice', apiVersion: 'discovery.k8s.io/v1', namespace: 'default', name: 'web-abcde', resourceVersion: '21' }, reason: 'InvalidObjectKeptLastGood' }]);
    t.equal(s.events.events.length, 1, 'one Event');

    const e3 = at(slice([podIP(1, 2)]), 22);
    s.proxier.onEndpointSliceUpdate(e2, e3);
    await s.settle();
    t.equal(s.kernel.trace(clusterIP(1), 80), `${podIP(1, 2)}:8080`, 'the valid version taken');
    t.same(s.proxier.rejected(), []);

    const e4 = at(withField(e3, 'endpoints[0].addresses[0]', 'nope'), 23);
    s.proxier.onEndpointSliceUpdate(e3, e4);
    await s.settle();
    t.equal(s.kernel.trace(clusterIP(1), 80), `${podIP(1, 2)}:8080`, 'kept');
    s.proxier.onEndpointSliceDelete(e4);
    await s.settle();
    t.equal(s.kernel.trace(clusterIP(1), 80), 'REJECT', 'the slice deleted: no endpoints, the ClusterIP refuses');
    t.same(s.proxier.rejected(), []);
  });
}
