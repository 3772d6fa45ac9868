import t from 'tap';
import { clusterIP, makeEndpointSlice, makeService, podIP, type EndpointSpec, type ServiceSpecInput } from '../testing/addresses.js';
import { describeAction, planConntrackCleanup } from './conntrack-plan.js';
import { EndpointsChangeTracker, EndpointsMap } from './endpoints-map.js';
import { parseEndpointSlice } from './model/endpoint-slice.js';
import { parseService } from './model/service.js';
import { ServicePortMap } from './service-map.js';

/** Drives the maps like the Proxier does and returns the plan of each step. */
function world() {
  const svcMap = new ServicePortMap();
  const epMap = new EndpointsMap();
  const ect = new EndpointsChangeTracker('node-1');
  let slicePrev: ReturnType<typeof parseEndpointSlice> | null = null;
  return {
    step(svc: ServiceSpecInput | null | undefined, eps: EndpointSpec[] | null | undefined, protocol: 'UDP' | 'TCP' = 'UDP'): string[] {
      const svcChanges = new Map();
      if (svc !== undefined) {
        const p = svc ? parseService(makeService(svc)) : null;
        svcChanges.set('default/s', { prev: null, cur: p && p.kind === 'service' ? p.ports : null });
      }
      if (eps !== undefined) {
        const cur = eps ? parseEndpointSlice(makeEndpointSlice({ service: 's', ports: [{ name: 'p', port: 5353, protocol }], endpoints: eps })) : null;
        const prevInfo = slicePrev && slicePrev.kind === 'slice' ? slicePrev.info : null;
        ect.update('default/s-abcde', prevInfo, cur && cur.kind === 'slice' ? cur.info : null);
        slicePrev = cur;
      }
      const sr = svcMap.apply(svcChanges);
      const er = epMap.apply(ect.drain());
      return planConntrackCleanup(sr, er, svcMap.view(), epMap.view()).map(describeAction);
    },
  };
}

const udp = (extra: Partial<ServiceSpecInput> = {}): ServiceSpecInput => ({
  name: 's',
  type: 'NodePort',
  clusterIP: clusterIP(53),
  ports: [{ name: 'p', port: 53, protocol: 'UDP', nodePort: 30053 }],
  ...extra,
});

t.test('a new UDP Service with endpoints clears its frontends (clients may hold entries from before)', async (t) => {
  const w = world();
  t.same(w.step(udp({ externalIPs: ['192.168.77.250'] }), [{ ip: podIP(1, 1) }]), ['service *:30053', 'service 10.96.0.53:53', 'service 192.168.77.250:53']);
});

t.test('0 → 1 serving endpoint clears the frontends; more endpoints do not', async (t) => {
  const w = world();
  t.same(w.step(udp(), []), [], 'no endpoints: nothing was DNATed, nothing to clear');
  t.same(w.step(undefined, [{ ip: podIP(1, 1), ready: false, serving: false }]), [], 'not serving still leads nowhere');
  t.same(w.step(undefined, [{ ip: podIP(1, 1) }]), ['service *:30053', 'service 10.96.0.53:53']);
  t.same(w.step(undefined, [{ ip: podIP(1, 1) }, { ip: podIP(1, 2) }]), []);
});

t.test('a removed endpoint: its flows on every frontend', async (t) => {
  const w = world();
  w.step(udp({ externalIPs: ['192.168.77.250'] }), [{ ip: podIP(1, 1) }, { ip: podIP(2, 1) }]);
  t.same(w.step(undefined, [{ ip: podIP(2, 1) }]), ['endpoint *:30053 -> 10.244.1.2', 'endpoint 10.96.0.53:53 -> 10.244.1.2', 'endpoint 192.168.77.250:53 -> 10.244.1.2']);
  t.same(w.step(undefined, [{ ip: podIP(2, 1), ready: false, serving: true, terminating: true }]), [], 'terminating but serving keeps its flows');
});

t.test('the last endpoint going away', async (t) => {
  const w = world();
  w.step(udp(), [{ ip: podIP(1, 1) }]);
  t.same(w.step(undefined, null), ['endpoint *:30053 -> 10.244.1.2', 'endpoint 10.96.0.53:53 -> 10.244.1.2']);
});

t.test('a deleted UDP Service clears all its frontends (no per-endpoint work on top)', async (t) => {
  const w = world();
  w.step(udp(), [{ ip: podIP(1, 1) }]);
  t.same(w.step(null, null), ['service *:30053', 'service 10.96.0.53:53']);
});

t.test('a changed NodePort: the old one is cleared, the new one too (it led nowhere before)', async (t) => {
  const w = world();
  w.step(udp(), [{ ip: podIP(1, 1) }]);
  t.same(w.step(udp({ ports: [{ name: 'p', port: 53, protocol: 'UDP', nodePort: 30054 }] }), undefined), ['service *:30053', 'service *:30054']);
});

t.test('TCP needs nothing', async (t) => {
  const w = world();
  t.same(w.step({ name: 's', clusterIP: clusterIP(53), ports: [{ name: 'p', port: 53 }] }, [{ ip: podIP(1, 1) }], 'TCP'), []);
  t.same(w.step(undefined, [], 'TCP'), []);
});
