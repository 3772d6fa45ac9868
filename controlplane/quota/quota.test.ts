/**
 * LimitRanges and ResourceQuotas without a server: what objects use (quota/usage.ts), the kinds' validation
 * (kinds/quota.ts), the LimitRanger plugin's defaults and constraints, and the ResourceQuota plugin's charge over a
 * real store: the 403s in upstream's words, a charge that a cached quota refuses made again against the stored one,
 * two charges racing for the last place, a dry run not charged; and the controller counting a namespace.
 */
import t from 'tap';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { openTestStore } from '../testing/store.js';
import { RESOURCES } from '../api/resources.js';
import type { User } from '../auth/authz.js';
import type { AdmissionRequest } from '../admission/admission.js';
import { applyDefaults, limitViolations } from '../admission/limit-ranger.js';
import { resourceQuota } from '../admission/resource-quota.js';
import { defaultLimitRange, validateLimitRange, validateResourceQuota } from '../kinds/quota.js';
import { defaultPod } from '../kinds/pod.js';
import type { Test } from 'tap';
import { evaluatorFor, namespaceUsage, podAmounts, podUsage, prettyPrint, resourceList, toObject } from './usage.js';
import type { KObject } from '../store/types.js';

type O = Record<string, unknown>;
const R = (resource: string) => RESOURCES.find((r) => r.resource === resource)!;
const admin: User = { name: 'admin', groups: ['system:masters'] };
const req = (resource: string, o: Partial<AdmissionRequest> = {}): AdmissionRequest =>
  ({ operation: 'CREATE', resource: R(resource), subresource: '', namespace: 'ns', name: 'x', user: admin, dryRun: false, ...o });
const ctr = (name: string, requests?: O, limits?: O, extra: O = {}) => ({ name, image: 'i', resources: { ...(requests ? { requests } : {}), ...(limits ? { limits } : {}) }, ...extra });

t.test('a Pod\'s requests: the containers\' sum, or the largest init container (sidecars add up), plus the overhead', async (t) => {
  const spec = {
    containers: [ctr('a', { cpu: '100m', memory: '64Mi' }), ctr('b', { cpu: '200m' })],
    initContainers: [ctr('i1', { cpu: '1' }), ctr('side', { cpu: '50m', memory: '1Gi' }, undefined, { restartPolicy: 'Always' }), ctr('i2', { cpu: '100m' })],
    overhead: { cpu: '10m' },
  };
  t.equal(prettyPrint(podAmounts(spec, 'requests')), 'cpu=1010m,memory=1088Mi');
  const u = podUsage({ spec }, 0);
  t.equal(prettyPrint(u), 'count/pods=1,cpu=1010m,memory=1088Mi,pods=1,requests.cpu=1010m,requests.memory=1088Mi');
  t.equal(prettyPrint(podUsage({ spec, status: { phase: 'Succeeded' } }, 0)), 'count/pods=1', 'a finished Pod uses only its count');
  const past = { spec, metadata: { deletionTimestamp: '2026-01-01T00:00:00Z', deletionGracePeriodSeconds: 30 } };
  t.equal(prettyPrint(podUsage(past, Date.parse('2026-01-01T00:00:31Z'))), 'count/pods=1', 'past its deletion grace period');
  t.equal(prettyPrint(podUsage(past, Date.parse('2026-01-01T00:00:29Z'))).includes('pods=1'), true, 'within it');
  const ext = podUsage({ spec: { containers: [ctr('g', { 'example.com/gpu': '2', 'hugepages-2Mi': '4Mi' }, { 'example.com/gpu': '2', 'hugepages-2Mi': '4Mi' })] } }, 0);
  t.equal(toObject(ext)['requests.example.com/gpu'], '2');
  t.equal(toObject(ext)['hugepages-2Mi'], '4Mi');
});

t.test('a Service counts its node ports and load balancer; other kinds count/<resource>[.<group>]', async (t) => {
  const svc = evaluatorFor({ group: '', resource: 'services' });
  t.equal(prettyPrint(svc.usage({ spec: { type: 'NodePort', ports: [{ port: 80 }, { port: 443 }] } }, 0)), 'count/services=1,services=1,services.loadbalancers=0,services.nodeports=2');
  t.equal(prettyPrint(svc.usage({ spec: { type: 'LoadBalancer', allocateLoadBalancerNodePorts: false, ports: [{ port: 80, nodePort: 30001 }, { port: 81 }] } }, 0)), 'count/services=1,services=1,services.loadbalancers=1,services.nodeports=1');
  t.ok(svc.handles('UPDATE'), 'a Service\'s type may change on update');
  const deploy = evaluatorFor({ group: 'apps', resource: 'deployments' });
  t.equal(prettyPrint(deploy.usage({}, 0)), 'count/deployments.apps=1');
  t.notOk(deploy.handles('UPDATE'));
  t.equal(prettyPrint(evaluatorFor({ group: '', resource: 'configmaps' }).usage({}, 0)), 'configmaps=1,count/configmaps=1');
});

t.test('scopes select Pods only; the controller\'s count of a namespace', async (t) => {
  const quota = { spec: { hard: { pods: '5', 'count/configmaps': '3', 'requests.memory': '1Gi' }, scopes: ['NotBestEffort'] } };
  const pods = [
    { spec: { containers: [ctr('a', { memory: '100Mi' })] } },
    { spec: { containers: [ctr('b')] } }, // BestEffort: not selected
    { spec: { containers: [ctr('c', { memory: '200Mi' })] }, status: { phase: 'Failed' } },
  ];
  const used = namespaceUsage(quota, resourceList(quota.spec.hard), (r) => (r.resource === 'pods' ? pods : r.resource === 'configmaps' ? [{}, {}] : []), 0);
  // count/configmaps stays 0: a scoped quota selects no ConfigMap.
  t.same(toObject(used), { 'count/configmaps': '0', pods: '1', 'requests.memory': '100Mi' });
  const pc = { spec: { hard: { pods: '1' }, scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In', values: ['high'] }] } } };
  const ev = evaluatorFor({ group: '', resource: 'pods' });
  t.ok(ev.matchesScopes(pc, { spec: { priorityClassName: 'high' } }));
  t.notOk(ev.matchesScopes(pc, { spec: { priorityClassName: 'low' } }));
  t.notOk(ev.matchesScopes(pc, { spec: {} }));
});

t.test('LimitRange: its own defaults and upstream\'s validation', async (t) => {
  const lr: O = { spec: { limits: [{ type: 'Container', max: { cpu: '2' }, min: { memory: '64Mi' } }, { type: 'Pod', max: { cpu: '4' } }] } };
  defaultLimitRange(lr);
  t.same((lr['spec'] as { limits: O[] }).limits[0], { type: 'Container', max: { cpu: '2' }, min: { memory: '64Mi' }, default: { cpu: '2' }, defaultRequest: { cpu: '2', memory: '64Mi' } });
  t.same((lr['spec'] as { limits: O[] }).limits[1], { type: 'Pod', max: { cpu: '4' } }, 'a Pod item gets none');
  t.same(validateLimitRange(lr), []);
  const msgs = (o: O) => validateLimitRange(o).map((e) => `${e.field}: ${e.message}`);
  t.same(msgs({ spec: { limits: [{ type: 'Pod', default: { cpu: '1' } }] } }), ["spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"]);
  t.same(msgs({ spec: { limits: [{ type: 'Container' }, { type: 'Container' }] } }), ['spec.limits[1].type: Duplicate value: "Container"']);
  t.same(msgs({ spec: { limits: [{ type: 'Widget' }] } }), ['spec.limits[0].type: Invalid value: "Widget": must be a standard limit type or fully qualified']);
  t.same(msgs({ spec: { limits: [{ type: 'Container', default: { cpu: '1' }, defaultRequest: { cpu: '2' } }] } }), ['spec.limits[0].defaultRequest[cpu]: Invalid value: "2": default request value 2 is greater than default limit value 1']);
  t.same(msgs({ spec: { limits: [{ type: 'Container', maxLimitRequestRatio: { cpu: '500m' } }] } }), ['spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: "500m": ratio 500m is less than 1']);
  t.same(msgs({ spec: { limits: [{ type: 'Container', min: { cpu: '1' }, max: { cpu: '2' }, maxLimitRequestRatio: { cpu: '3' } }] } }), ['spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: "3": ratio 3 is greater than max/min = 2.000000']);
  t.same(msgs({ spec: { limits: [{ type: 'Container', max: { pods: '1' } }] } }), ['spec.limits[0].max[pods]: Invalid value: "pods": must be a standard resource for containers']);
  t.same(msgs({ spec: { limits: [{ type: 'Container', default: { 'example.com/gpu': '2' }, defaultRequest: { 'example.com/gpu': '1' } }] } }), ['spec.limits[0].defaultRequest[example.com/gpu]: Invalid value: "1": default value 2 must equal to defaultRequest value 1 in example.com/gpu']);
  t.same(msgs({ spec: { limits: [{ type: 'PersistentVolumeClaim', max: {} }] } }), ['spec.limits[0].limits: Required value: either minimum or maximum storage value is required, but neither was provided']);
});

t.test('ResourceQuota: upstream\'s validation', async (t) => {
  const msgs = (o: O, old: O | null = null) => validateResourceQuota(o, old).map((e) => `${e.field}: ${e.message}`);
  t.same(msgs({ spec: { hard: { pods: '10', 'count/deployments.apps': '2', 'requests.example.com/gpu': '1' } } }), []);
  t.same(msgs({ spec: { hard: { pods: '-1' } } }), ['spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0']);
  t.same(msgs({ spec: { hard: { storage: '1Gi' } } }), ['spec.hard[storage]: Invalid value: "storage": must be a standard resource for quota']);
  t.same(msgs({ spec: { hard: { pods: 'lots' } } }), [`spec.hard[pods]: Invalid value: "lots": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`]);
  t.same(msgs({ spec: { hard: { pods: '1' }, scopes: ['Sometimes'] } }), ['spec.scopes: Invalid value: ["Sometimes"]: unsupported scope']);
  t.same(msgs({ spec: { hard: { pods: '1' }, scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In' }] } } }), ["spec.scopeSelector.matchExpressions[0].values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"]);
  t.same(msgs({ spec: { hard: { pods: '1' }, scopeSelector: { matchExpressions: [{ scopeName: 'BestEffort', operator: 'In', values: ['x'] }] } } })[0], "spec.scopeSelector.matchExpressions[0].operator: Invalid value: \"In\": must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity");
  t.same(msgs({ spec: { hard: { pods: '1' }, scopes: ['Terminating'] } }, { spec: { hard: { pods: '1' } } }), ['spec.scopes: Invalid value: ["Terminating"]: field is immutable']);
});

t.test('LimitRanger: defaults with the annotation; constraints in upstream\'s words', async (t) => {
  const ranges = [{ spec: { limits: [{ type: 'Container', default: { cpu: '500m' }, defaultRequest: { cpu: '100m', memory: '32Mi' }, max: { cpu: '1' }, maxLimitRequestRatio: { cpu: '4' } }, { type: 'Pod', min: { memory: '64Mi' } }] } }];
  const pod: O = { metadata: { name: 'p' }, spec: { containers: [ctr('web', undefined, { memory: '128Mi' }), ctr('log', { cpu: '200m', memory: '16Mi' }, { cpu: '300m' })], initContainers: [ctr('init')] } };
  defaultPod(pod); // the API's defaults come first: web requests the memory it limits
  applyDefaults(pod, ranges);
  t.equal((pod['metadata'] as { annotations: O }).annotations['kubernetes.io/limit-ranger'],
    'LimitRanger plugin set: cpu request for container web; cpu limit for container web; cpu, memory request for init container init; cpu limit for init container init');
  const web = (pod['spec'] as { containers: { resources: O }[] }).containers[0]!.resources;
  t.same(web, { limits: { memory: '128Mi', cpu: '500m' }, requests: { memory: '128Mi', cpu: '100m' } });
  // web and init: 500m over 100m; the Pod's 144Mi of requests and 128Mi of limits are above its 64Mi minimum.
  const ratio = 'cpu max limit to request ratio per Container is 4, but provided ratio is 5.000000';
  t.same(limitViolations(pod, ranges), [ratio, ratio]);
  const big: O = { spec: { containers: [ctr('a', { cpu: '2' }, { cpu: '2' })] } };
  t.same(limitViolations(big, [{ spec: { limits: [{ type: 'Container', max: { cpu: '1' }, min: { memory: '1Mi' } }] } }]), ['minimum memory usage per Container is 1Mi.  No request is specified', 'maximum cpu usage per Container is 1, but limit is 2']);
});

const QUOTA_KEY = 'resourcequotas/ns/q';
async function withQuota(t: Test, hard: O, used: O) {
  const ts = openTestStore({ clock: new FakeClock() });
  t.teardown(() => ts.close());
  const q = await ts.storage.create(QUOTA_KEY, { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'q', namespace: 'ns' }, spec: { hard }, status: { hard, used } } as KObject);
  const plugin = resourceQuota({ cache: ts.cache, storage: ts.storage, clock: new FakeClock() });
  return { ts, q, plugin };
}
const usedOf = async (ts: { storage: { get(k: string): Promise<{ object: O } | undefined> } }) => ((await ts.storage.get(QUOTA_KEY))!.object['status'] as { used: O }).used;
const podObj = (cpu: string) => ({ metadata: { name: 'p', namespace: 'ns' }, spec: { containers: [ctr('c', { cpu }, { cpu })] } });

t.test('ResourceQuota admission: charges before the write; refuses over it, and what it cannot count', async (t) => {
  const { ts, plugin } = await withQuota(t, { pods: '2', 'requests.cpu': '1' }, { pods: '0', 'requests.cpu': '0' });
  await plugin.validate!(req('pods'), podObj('600m'), null);
  t.same(await usedOf(ts), { pods: '1', 'requests.cpu': '600m' });
  await plugin.validate!(req('pods', { dryRun: true }), podObj('100m'), null);
  t.same(await usedOf(ts), { pods: '1', 'requests.cpu': '600m' }, 'a dry run is not charged');
  await t.rejects(async () => plugin.validate!(req('pods', { name: 'p2' }), podObj('500m'), null), { message: 'pods "p2" is forbidden: exceeded quota: q, requested: requests.cpu=500m, used: requests.cpu=600m, limited: requests.cpu=1' });
  await t.rejects(async () => plugin.validate!(req('pods', { name: 'p3' }), { spec: { containers: [ctr('c'), ctr('d', { cpu: '1m' })] } }, null), { message: 'pods "p3" is forbidden: failed quota: q: must specify requests.cpu for: c' });
  await plugin.validate!(req('configmaps'), { metadata: { name: 'cm' } }, null);
  t.same(await usedOf(ts), { pods: '1', 'requests.cpu': '600m' }, 'a kind the quota does not count');
  await plugin.validate!(req('pods', { subresource: 'status', operation: 'UPDATE' }), podObj('9'), podObj('1'));
  t.pass('a subresource write is not evaluated');
});

t.test('ResourceQuota admission: a quota whose usage was never counted refuses', async (t) => {
  const { plugin } = await withQuota(t, { pods: '2' }, {});
  await t.rejects(async () => plugin.validate!(req('pods'), podObj('1m'), null), { message: 'pods "x" is forbidden: status unknown for quota: q, resources: pods' });
});

t.test('ResourceQuota admission: two writes racing for the last place; a stale cache is checked against the store', async (t) => {
  const { ts, q, plugin } = await withQuota(t, { 'count/secrets': '1' }, { 'count/secrets': '0' });
  const results = await Promise.allSettled([plugin.validate!(req('secrets', { name: 'a' }), {}, null), plugin.validate!(req('secrets', { name: 'b' }), {}, null)]);
  t.same(results.map((r) => r.status).sort(), ['fulfilled', 'rejected'], 'one takes it, one is refused');
  const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
  t.match(String(lost.reason), /exceeded quota: q, requested: count\/secrets=1, used: count\/secrets=1, limited: count\/secrets=1/);
  t.same(await usedOf(ts), { 'count/secrets': '1' });
  // The controller gave the place back (used 0 in the store) but this cache still says 1: the store decides.
  const cur = (await ts.storage.get(QUOTA_KEY))!;
  await ts.storage.update(QUOTA_KEY, { ...cur.object, status: { hard: { 'count/secrets': '1' }, used: { 'count/secrets': '0' } } } as KObject, cur.rev);
  const stale = { list: () => ({ items: [{ ...cur }], rev: cur.rev }) };
  const p2 = resourceQuota({ cache: stale as never, storage: ts.storage, clock: new FakeClock() });
  await p2.validate!(req('secrets', { name: 'c' }), {}, null);
  t.same(await usedOf(ts), { 'count/secrets': '1' }, 'charged against the stored quota');
  t.ok(q.rev > 0);
});
