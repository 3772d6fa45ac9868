import t from 'tap';
import {
  categorizeEndpoints,
  externallyAccessible,
  externalPolicyLocal,
  internalPolicyLocal,
  usesClusterEndpoints,
  usesLocalEndpoints,
  type EndpointCategories,
} from './categorize.js';
import { ep, svc } from './test-fixtures.js';
import { endpointString, type EndpointInfo, type ServicePortInfo } from './types.js';

const names = (eps: EndpointCategories['cluster']): string[] => eps.map(endpointString);
const summary = (c: EndpointCategories) => ({ cluster: names(c.cluster), local: names(c.local), allReachable: names(c.allReachable), hasAny: c.hasAny });

// Endpoint states as the EndpointSlice controller reports them.
const terminating = { ready: false, serving: true, terminating: true } as const;
const terminatingNotServing = { ready: false, serving: false, terminating: true } as const;
const notReady = { ready: false, serving: false, terminating: false } as const;

t.test('policy predicates', async (t) => {
  const cases = [
    { name: 'ClusterIP, Cluster/Cluster', s: svc('ns', 'a', '172.30.0.41'), ext: false, etpL: false, itpL: false, cl: true, lo: false },
    { name: 'ClusterIP, etp Local (no external access: ignored)', s: svc('ns', 'a', '172.30.0.41', { etp: 'Local' }), ext: false, etpL: false, itpL: false, cl: true, lo: false },
    { name: 'ClusterIP, itp Local', s: svc('ns', 'a', '172.30.0.41', { itp: 'Local' }), ext: false, etpL: false, itpL: true, cl: false, lo: true },
    { name: 'NodePort, etp Local', s: svc('ns', 'a', '172.30.0.41', { nodePort: 30001, etp: 'Local' }), ext: true, etpL: true, itpL: false, cl: true, lo: true },
    { name: 'external IP, etp Local', s: svc('ns', 'a', '172.30.0.41', { externalIPs: ['192.168.99.1'], etp: 'Local' }), ext: true, etpL: true, itpL: false, cl: true, lo: true },
    { name: 'NodePort, itp Local, etp Cluster (external still needs Cluster)', s: svc('ns', 'a', '172.30.0.41', { nodePort: 30001, itp: 'Local' }), ext: true, etpL: false, itpL: true, cl: true, lo: true },
  ];
  for (const c of cases) {
    t.same(
      [externallyAccessible(c.s), externalPolicyLocal(c.s), internalPolicyLocal(c.s), usesClusterEndpoints(c.s), usesLocalEndpoints(c.s)],
      [c.ext, c.etpL, c.itpL, c.cl, c.lo],
      c.name,
    );
  }
});

// Service shapes the cases use.
const clusterIPSvc = svc('ns', 'a', '172.30.0.41');
const itpLocal = svc('ns', 'a', '172.30.0.41', { itp: 'Local' });
const etpLocal = svc('ns', 'a', '172.30.0.41', { nodePort: 30001, etp: 'Local' });
const itpLocalNodePort = svc('ns', 'a', '172.30.0.41', { nodePort: 30001, itp: 'Local' });

interface Case {
  name: string;
  s: ServicePortInfo;
  eps: EndpointInfo[];
  cluster: string[];
  local: string[];
  allReachable: string[];
  hasAny: boolean;
}
const cases: Case[] = [
  {
    name: 'Cluster policy: Ready endpoints only, while any is Ready',
    s: clusterIPSvc,
    eps: [ep('10.180.0.1'), ep('10.180.0.2', terminating), ep('10.180.0.3', notReady), ep('10.180.0.4', { local: true })],
    cluster: ['10.180.0.1:80', '10.180.0.4:80'], local: [], allReachable: ['10.180.0.1:80', '10.180.0.4:80'], hasAny: true,
  },
  {
    name: 'Cluster policy: nothing Ready falls back to serving-and-terminating',
    s: clusterIPSvc,
    eps: [ep('10.180.0.1', terminating), ep('10.180.0.2', terminatingNotServing), ep('10.180.0.3', notReady), ep('10.180.0.4', { ...terminating, local: true })],
    cluster: ['10.180.0.1:80', '10.180.0.4:80'], local: [], allReachable: ['10.180.0.1:80', '10.180.0.4:80'], hasAny: true,
  },
  {
    name: 'internal policy Local: this node only, Cluster set never computed',
    s: itpLocal,
    eps: [ep('10.180.0.1'), ep('10.180.0.2', { local: true }), ep('10.180.0.3', { ...terminating, local: true })],
    cluster: [], local: ['10.180.0.2:80'], allReachable: ['10.180.0.2:80'], hasAny: true,
  },
  {
    name: 'internal policy Local, no local endpoints: nothing reachable, but hasAny (the renderers drop, not reject)',
    s: itpLocal,
    eps: [ep('10.180.0.1'), ep('10.180.0.2')],
    cluster: [], local: [], allReachable: [], hasAny: true,
  },
  {
    name: 'internal policy Local, no local endpoints, a remote terminating one: hasAny',
    s: itpLocal,
    eps: [ep('10.180.0.1', terminating)],
    cluster: [], local: [], allReachable: [], hasAny: true,
  },
  {
    name: 'Local set falls back on its own: Ready elsewhere, only terminating here',
    s: itpLocal,
    eps: [ep('10.180.0.1'), ep('10.180.0.2', { ...terminating, local: true }), ep('10.180.0.3', { ...terminatingNotServing, local: true })],
    cluster: [], local: ['10.180.0.2:80'], allReachable: ['10.180.0.2:80'], hasAny: true,
  },
  {
    name: 'external policy Local: Cluster set for short-circuited traffic, Local set for external',
    s: etpLocal,
    eps: [ep('10.180.0.1'), ep('10.180.0.2', { local: true }), ep('10.180.0.3', { ...terminating, local: true })],
    cluster: ['10.180.0.1:80', '10.180.0.2:80'], local: ['10.180.0.2:80'], allReachable: ['10.180.0.1:80', '10.180.0.2:80'], hasAny: true,
  },
  {
    name: 'external policy Local, no local endpoints: Cluster set only',
    s: etpLocal,
    eps: [ep('10.180.0.1'), ep('10.180.0.2')],
    cluster: ['10.180.0.1:80', '10.180.0.2:80'], local: [], allReachable: ['10.180.0.1:80', '10.180.0.2:80'], hasAny: true,
  },
  {
    name: 'external policy Local, Ready elsewhere, terminating here: the union merges both, Cluster first',
    s: etpLocal,
    eps: [ep('10.180.0.1', { ...terminating, local: true }), ep('10.180.0.5'), ep('10.180.0.3')],
    cluster: ['10.180.0.5:80', '10.180.0.3:80'], local: ['10.180.0.1:80'], allReachable: ['10.180.0.5:80', '10.180.0.3:80', '10.180.0.1:80'], hasAny: true,
  },
  {
    name: 'internal Local, external Cluster (NodePort): both sets',
    s: itpLocalNodePort,
    eps: [ep('10.180.0.1'), ep('10.180.0.2', { local: true })],
    cluster: ['10.180.0.1:80', '10.180.0.2:80'], local: ['10.180.0.2:80'], allReachable: ['10.180.0.1:80', '10.180.0.2:80'], hasAny: true,
  },
];
for (const s of [clusterIPSvc, itpLocal, etpLocal, itpLocalNodePort]) {
  const policies = `itp ${s.internalTrafficPolicy}, etp ${s.externalTrafficPolicy}${s.nodePort ? ', NodePort' : ''}`;
  const none = { cluster: [], local: [], allReachable: [], hasAny: false };
  cases.push({ name: `no endpoints (${policies}): empty, hasAny false (the renderers reject)`, s, eps: [], ...none });
  const unusable = [ep('10.180.0.1', notReady), ep('10.180.0.2', { ...terminatingNotServing, local: true })];
  cases.push({ name: `only unusable endpoints (${policies}): empty, hasAny false`, s, eps: unusable, ...none });
}

t.test('categorizeEndpoints', async (t) => {
  for (const c of cases) {
    const want = { cluster: c.cluster, local: c.local, allReachable: c.allReachable, hasAny: c.hasAny };
    t.same(summary(categorizeEndpoints(c.eps, c.s)), want, c.name);
  }
});

t.test('Local inside Cluster: the union is the Cluster list itself', async (t) => {
  const c = categorizeEndpoints([ep('10.180.0.1'), ep('10.180.0.2', { local: true })], etpLocal);
  t.equal(c.allReachable, c.cluster);
});

t.test('input order is kept (sorting is the renderer\'s choice); the union holds each ip:port once', async (t) => {
  const s = etpLocal;
  const eps = [ep('10.180.0.9'), ep('10.180.0.10:8080', { ...terminating, local: true }), ep('10.180.0.2'), ep('10.180.0.10:80', { ...terminating, local: true })];
  t.same(summary(categorizeEndpoints(eps, s)), {
    cluster: ['10.180.0.9:80', '10.180.0.2:80'],
    local: ['10.180.0.10:8080', '10.180.0.10:80'],
    allReachable: ['10.180.0.9:80', '10.180.0.2:80', '10.180.0.10:8080', '10.180.0.10:80'],
    hasAny: true,
  });
  // The same ip:port in both sets (two objects) is reachable once.
  const twice = [ep('10.180.0.1'), ep('10.180.0.1', { ...terminating, local: true })];
  t.same(names(categorizeEndpoints(twice, s).allReachable), ['10.180.0.1:80']);
});
