/**
 * planIpvsPartial: a partial plan (only the changed Services' ServicePorts redone) must be the plan a full
 * planIpvs makes of the same snapshot, and its delta exactly what changed in the sets and on the device.
 * Checked over seeded random sequences of changes of every kind the plan reads (endpoints local and remote,
 * terminating, external IPs, LB VIPs with source ranges, NodePorts, Local policies, affinity, Services
 * added and removed), and for the cases that must fall back to a full plan.
 */
import t from 'tap';
import { rng } from '../../../../lib/testing/rng.js';
import { parseCidr } from '../../../../lib/net/ip.js';
import { spnString, type EndpointInfo, type ProxySnapshot, type ServicePortInfo } from '../types.js';
import { CFG, ep, nodeConfig, svc, type SvcOpts } from '../test-fixtures.js';
import { planIpvs, planIpvsPartial, type IpvsPlan } from './plan.js';


type World = Map<string, { ports: [ServicePortInfo, EndpointInfo[]][] }>;

function randomService(r: () => number, i: number, gen: number): [ServicePortInfo, EndpointInfo[]][] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const o: SvcOpts = {};
  if (r() < 0.3) o.nodePort = 30000 + i;
  if (r() < 0.2) o.externalIPs = [`192.168.50.${(i % 200) + 1}`];
  if (r() < 0.2) {
    o.lbVIPs = [`198.51.100.${(i % 200) + 1}`];
    if (r() < 0.5) o.sourceRanges = [pick(['203.0.113.0/24', '192.168.0.0/16'])];
  }
  if (r() < 0.2) o.etp = 'Local';
  if (r() < 0.1) o.itp = 'Local';
  if (r() < 0.1) o.affinity = 60;
  const ports: [ServicePortInfo, EndpointInfo[]][] = [];
  const nports = r() < 0.2 ? 2 : 1;
  for (let p = 0; p < nports; p++) {
    const eps: EndpointInfo[] = [];
    const n = Math.floor(r() * 4);
    for (let k = 0; k < n; k++) {
      eps.push(ep(`10.244.${(i % 250) + 1}.${(gen * 7 + k * 3 + p) % 250 + 1}:${8080 + p}`, { local: r() < 0.4, ...(r() < 0.15 ? { ready: false, serving: true, terminating: true } : {}) }));
    }
    ports.push([svc('ns', `s${i}`, `10.96.${(i >> 8) & 255}.${i & 255}`, { ...o, port: 80 + p, portName: `p${p}`, ...(o.nodePort ? { nodePort: o.nodePort + p * 1000 } : {}) }), eps]);
  }
  return ports;
}

function snap(w: World): ProxySnapshot {
  const services = new Map<string, ServicePortInfo>();
  const endpoints = new Map<string, readonly EndpointInfo[]>();
  for (const { ports } of w.values()) for (const [s, eps] of ports) {
    services.set(spnString(s.spn), s);
    if (eps.length) endpoints.set(spnString(s.spn), eps);
  }
  return { services, endpoints };
}

/** What the plans must agree on, in comparable form. */
function view(p: IpvsPlan) {
  return {
    services: [...p.services].sort(([a], [b]) => (a < b ? -1 : 1)),
    sets: [...p.sets].map(([id, s]) => [id, s.name, [...s.entries]] as const),
    addresses: p.addresses,
    noNodeAccess: p.noNodeAccess,
    byService: [...p.byService].filter(([, v]) => v.length).sort(([a], [b]) => (a < b ? -1 : 1)),
    conflicts: p.conflicts,
  };
}

t.test('partial plans equal full plans over random changes; the deltas are exact', async (t) => {
  for (const seed of [1, 2, 3, 4, 5]) {
    const r = rng(seed);
    const w: World = new Map();
    for (let i = 1; i <= 40; i++) w.set(`ns/s${i}`, { ports: randomService(r, i, 0) });
    let plan = planIpvs(snap(w), CFG);
    let partials = 0;
    for (let step = 1; step <= 60; step++) {
      const changed = new Set<string>();
      for (let c = 0; c < 1 + Math.floor(r() * 3); c++) {
        const i = 1 + Math.floor(r() * 48);
        const key = `ns/s${i}`;
        if (w.has(key) && r() < 0.15) w.delete(key);
        else w.set(key, { ports: randomService(r, i, step) });
        changed.add(key);
      }
      const s = snap(w);
      const before = { sets: new Map([...plan.sets].map(([id, d]) => [d.name, new Set(d.entries)])), addresses: new Set(plan.addresses) };
      const full = planIpvs(s, CFG);
      const part = planIpvsPartial(plan, s, CFG, {}, changed);
      if (!part) {
        plan = full;
        continue;
      }
      partials++;
      t.same(view(part.plan), view(full), `seed ${seed} step ${step}: the partial plan is the full plan`);
      // The delta turns the old sets and addresses into the new ones, and names nothing that did not change.
      for (const [name, e] of part.delta.setDels) t.ok(before.sets.get(name)!.delete(e), `seed ${seed} step ${step}: ${name} had ${e}`);
      for (const [name, e] of part.delta.setAdds) {
        t.notOk(before.sets.get(name)!.has(e), `seed ${seed} step ${step}: ${name} lacked ${e}`);
        before.sets.get(name)!.add(e);
      }
      t.same([...full.sets.values()].map((d) => [d.name, [...before.sets.get(d.name)!].sort()]), [...full.sets.values()].map((d) => [d.name, [...d.entries]]), `seed ${seed} step ${step}: sets follow`);
      for (const a of part.delta.addressDels) t.ok(before.addresses.delete(a));
      for (const a of part.delta.addressAdds) before.addresses.add(a);
      t.same([...before.addresses].sort(), [...full.addresses].sort(), `seed ${seed} step ${step}: addresses follow`);
      const strays = [...full.services].filter(([k, d]) => !part.delta.keys.has(k) && [...changed].some((c) => d.svc === c || d.svc.startsWith(`${c}:`)));
      t.same(strays, [], `seed ${seed} step ${step}: every virtual service of a changed Service is in the delta's keys`);
      plan = part.plan;
    }
    t.ok(partials > 30, `seed ${seed}: ${partials} of 60 steps were partial`);
  }
});

t.test('what a partial plan leaves to a full one', async (t) => {
  const a = svc('ns', 'a', '10.96.0.1', { externalIPs: ['192.168.50.1'] });
  const b = svc('ns', 'b', '10.96.0.2');
  const base = (x: ServicePortInfo): ProxySnapshot => ({ services: new Map([[spnString(a.spn), a], [spnString(x.spn), x]]), endpoints: new Map() });
  const plan = () => planIpvs(base(b), CFG);
  // b takes a's external IP:port: who keeps it depends on the whole snapshot's order.
  const clash = svc('ns', 'b', '10.96.0.2', { externalIPs: ['192.168.50.1'] });
  t.equal(planIpvsPartial(plan(), base(clash), CFG, {}, new Set(['ns/b'])), null, 'a virtual service another Service owns');
  const withConflict = planIpvs(base(clash), CFG);
  t.equal(withConflict.conflicts.length, 1);
  t.equal(planIpvsPartial(withConflict, base(b), CFG, {}, new Set(['ns/b'])), null, 'a plan with conflicts');
  t.equal(planIpvsPartial(plan(), base(b), nodeConfig({ nodePortAddresses: [parseCidr('192.168.0.0/16').cidr] }), {}, new Set(['ns/b'])), null, 'other NodePort addresses');
  t.equal(planIpvsPartial(plan(), base(b), CFG, { scheduler: 'lc' }, new Set(['ns/b'])), null, 'other options');
  const onNode = svc('ns', 'b', '10.96.0.2', { externalIPs: [CFG.nodeIPs[0]!] });
  t.equal(planIpvsPartial(plan(), base(onNode), CFG, {}, new Set(['ns/b'])), null, "a VIP that is the node's address");
  const ok = planIpvsPartial(plan(), base(svc('ns', 'b', '10.96.0.3')), CFG, {}, new Set(['ns/b']));
  t.ok(ok, 'a ClusterIP change stays inside its Service');
  t.same(ok!.delta.addressAdds, ['10.96.0.3/32']);
  t.same(ok!.delta.addressDels, ['10.96.0.2/32']);
});
