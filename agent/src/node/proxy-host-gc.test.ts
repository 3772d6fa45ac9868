import t from 'tap';
import { setImmediate as tick } from 'node:timers/promises';
import { createLogger } from '../../../lib/log/log.js';
import { FakeConntrack } from '../netfilter/conntrack/conntrack.fake.js';
import { FakeSysctl } from '../netns/sysctl.fake.js';
import { FakeBackend } from '../proxy/backend.fake.js';
import { realClock } from '../../../lib/reconcile/clock.js';
import { clusterIP, makeEndpointSlice, makeService, nodeIP, nodeName, CLUSTER_CIDR } from '../testing/addresses.js';
import { LARGE_SYNC_SERVICE_PORTS, ProxyHost, type ProxySourceHandlers } from './proxy-host.js';

/** A host on fakes whose source delivers `n` Services at once; how many times it asked for a collection. */
async function run(n: number): Promise<{ gcs: number; host: ProxyHost; handlers: ProxySourceHandlers }> {
  let gcs = 0;
  let handlers: ProxySourceHandlers | null = null;
  const host = await ProxyHost.start({
    mode: 'iptables', backend: new FakeBackend('iptables'), conntrack: new FakeConntrack(), sysctl: new FakeSysctl(), clock: realClock,
    log: createLogger({ level: 'silent' }), removeOtherMode: async () => false, statusFile: null, minSyncIntervalMs: 0,
    nodeConfig: { nodeName: nodeName(1), nodeIPs: [nodeIP(1)], clusterCIDR: CLUSTER_CIDR, prefix: 'KUBE', masqueradeBit: 14 },
    startSource: async (h) => {
      handlers = h;
      for (let i = 1; i <= n; i++) {
        h.services.onServiceAdd(makeService({ name: `s${i}`, clusterIP: clusterIP(i), ports: [{ port: 80, targetPort: 8080 }] }));
        h.slices.onEndpointSliceAdd(makeEndpointSlice({ service: `s${i}`, ports: [{ port: 8080 }], endpoints: [{ ip: '10.244.1.5' }] }));
      }
      h.services.onServicesSynced();
      h.slices.onEndpointSlicesSynced();
      return { errors: () => [], stop: () => {} };
    },
    afterLargeFullSync: () => gcs++,
  });
  await host.proxier.syncNow();
  await tick();
  return { get gcs() { return gcs; }, host, handlers: handlers! };
}

t.test('a full sync of a large table asks for a collection; a small one, or a partial one, does not', async (t) => {
  const big = await run(LARGE_SYNC_SERVICE_PORTS);
  t.equal(big.host.proxier.lastSync?.scope, 'full');
  t.equal(big.gcs, 1, `one collection after the full sync of ${LARGE_SYNC_SERVICE_PORTS} service ports`);
  big.handlers.slices.onEndpointSliceUpdate(
    makeEndpointSlice({ service: 's7', ports: [{ port: 8080 }], endpoints: [{ ip: '10.244.1.5' }] }),
    makeEndpointSlice({ service: 's7', ports: [{ port: 8080 }], endpoints: [{ ip: '10.244.1.6' }] }),
  );
  await big.host.proxier.syncNow();
  await tick();
  t.equal(big.host.proxier.lastSync?.scope, 'partial');
  t.equal(big.gcs, 1, 'none after a partial sync');
  await big.host.stop();
  const small = await run(10);
  t.equal(small.gcs, 0, 'none after a small full sync');
  await small.host.stop();
});
