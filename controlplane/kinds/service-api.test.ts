/**
 * Service updates through the REST verbs (a real storage and watch cache over FakePersistence), for the patches
 * issue 24 found: what kube-apiserver stores or refuses when a client patches a Service's
 * session affinity, type or IP families, so that no update leaves a Service the agents cannot use.
 */
import t, { type Test } from 'tap';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { RESOURCES } from '../api/resources.js';
import { Rest } from '../api/rest.js';
import { loadSchemas } from '../api/schema.js';
import { FakePersistence } from '../store/persistence.fake.js';
import { openTestStore } from '../testing/store.js';
import type { KObject } from '../store/types.js';
import { failure } from '../testing/control-plane.js';

type O = Record<string, unknown>;
const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
const NS = RESOURCES.find((r) => r.resource === 'namespaces')!;
const SVC = RESOURCES.find((r) => r.resource === 'services')!;

async function setup(t: Test) {
  const clock = new FakeClock(Date.parse('2024-05-01T10:00:00Z'));
  const ts = openTestStore({ persistence: new FakePersistence(), clock });
  const store = ts.cache;
  let n = 0;
  const rest = new Rest({ storage: ts.storage, cache: store, schemas, clock, uid: () => `uid-${++n}` });
  t.teardown(() => ts.close());
  await rest.create(NS, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  return { store, rest };
}


const svc = (spec: O = {}): KObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { selector: { app: 'web' }, clusterIP: '10.96.0.20', ports: [{ port: 80 }], ...spec } });
const specOf = (o: KObject): O => o['spec'] as O;

t.test('issue 24: sessionAffinity None by strategic merge and by merge patch: stored without the defaulted config, as kube-apiserver does', async (t) => {
  for (const type of ['strategic', 'merge'] as const) {
    const { rest, store } = await setup(t);
    const created = await rest.create(SVC, 'default', svc({ sessionAffinity: 'ClientIP' }));
    t.same(specOf(created.object)['sessionAffinityConfig'], { clientIP: { timeoutSeconds: 10800 } }, `${type}: ClientIP gets the default config`);
    const patched = await rest.patch(SVC, 'default', 'web', type, { spec: { sessionAffinity: 'None' } });
    t.equal(specOf(patched.object)['sessionAffinity'], 'None', `${type}: patched`);
    t.notOk('sessionAffinityConfig' in specOf(patched.object), `${type}: SetDefaults_Service drops the config of a Service without affinity`);
    t.same(store.get('services/default/web')!.object, patched.object, `${type}: stored as answered`);
  }
});

t.test('a client that sends both None and a config in one object: the config goes (defaulting), on update and on create', async (t) => {
  const { rest } = await setup(t);
  const c = await rest.create(SVC, 'default', svc({ sessionAffinity: 'None', sessionAffinityConfig: { clientIP: { timeoutSeconds: 60 } } }));
  t.notOk('sessionAffinityConfig' in specOf(c.object));
  await rest.patch(SVC, 'default', 'web', 'merge', { spec: { sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 60 } } } });
  const put = await rest.update(SVC, 'default', 'web', svc({ sessionAffinity: 'None', sessionAffinityConfig: { clientIP: { timeoutSeconds: 60 } } }));
  t.notOk('sessionAffinityConfig' in specOf(put.object));
});

t.test('ClientIP affinity: the timeout is 1..86400 seconds; a timeout patched away is defaulted again', async (t) => {
  const { rest, store } = await setup(t);
  await rest.create(SVC, 'default', svc({ sessionAffinity: 'ClientIP' }));
  const before = store.get('services/default/web');
  for (const v of [0, 86401, -5]) {
    const s = await failure(() => rest.patch(SVC, 'default', 'web', 'merge', { spec: { sessionAffinityConfig: { clientIP: { timeoutSeconds: v } } } }));
    t.equal(s.message, `Service "web" is invalid: spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: ${v}: must be greater than 0 and less than 86400`);
    t.same(s.details?.causes, [{ reason: 'FieldValueInvalid', field: 'spec.sessionAffinityConfig.clientIP.timeoutSeconds', message: `Invalid value: ${v}: must be greater than 0 and less than 86400` }]);
  }
  t.equal(store.get('services/default/web'), before, 'nothing stored');
  const max = await rest.patch(SVC, 'default', 'web', 'merge', { spec: { sessionAffinityConfig: { clientIP: { timeoutSeconds: 86400 } } } });
  t.same(specOf(max.object)['sessionAffinityConfig'], { clientIP: { timeoutSeconds: 86400 } });
  const gone = await rest.patch(SVC, 'default', 'web', 'merge', { spec: { sessionAffinityConfig: null } });
  t.same(specOf(gone.object)['sessionAffinityConfig'], { clientIP: { timeoutSeconds: 10800 } }, 'the default again');
});

t.test('type ExternalName by patch: the allocated IPs and families go with the type, as dropTypeDependentFields; ones the client sets are refused', async (t) => {
  const { rest } = await setup(t);
  await rest.create(SVC, 'default', svc({ type: 'NodePort', ports: [{ port: 80, nodePort: 30080 }] }));
  const en = await rest.patch(SVC, 'default', 'web', 'strategic', { spec: { type: 'ExternalName', externalName: 'db.example.com.' } });
  const s = specOf(en.object);
  for (const k of ['clusterIP', 'clusterIPs', 'ipFamilies', 'ipFamilyPolicy', 'externalTrafficPolicy']) t.notOk(k in s, `${k} dropped`);
  t.notOk('nodePort' in ((s['ports'] as O[])[0] ?? {}), 'the NodePort dropped');
  const back = await rest.patch(SVC, 'default', 'web', 'strategic', { spec: { type: 'ClusterIP' } });
  t.same(specOf(back.object)['ipFamilies'], ['IPv4'], 'families again');

  const { rest: r2 } = await setup(t);
  await r2.create(SVC, 'default', svc());
  const bad = await failure(() => r2.patch(SVC, 'default', 'web', 'merge', { spec: { type: 'ExternalName', externalName: 'db.example.com', clusterIP: '10.96.0.21', clusterIPs: ['10.96.0.21'] } }));
  t.equal(bad.message, 'Service "web" is invalid: spec.clusterIPs: Forbidden: may not be set for ExternalName services');
});

t.test('ipFamilies may not change once set; an IPv6 family is not configured on this IPv4 cluster', async (t) => {
  const { rest } = await setup(t);
  await rest.create(SVC, 'default', svc());
  const s = await failure(() => rest.patch(SVC, 'default', 'web', 'merge', { spec: { ipFamilies: ['IPv6'] } }));
  t.same(s.details?.causes?.map((c) => `${c.field}: ${c.message}`), [
    'spec.ipFamilies[0]: Invalid value: ["IPv6"]: may not change once set',
    'spec.clusterIPs[0]: Invalid value: "10.96.0.20": expected an IPv6 value as indicated by `ipFamilies[0]`',
    'spec.ipFamilies[0]: Invalid value: ["10.96.0.20"]: ipfamily IPv6 is not configured on cluster',
  ]);
});
