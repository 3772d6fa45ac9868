/**
 * LimitRanges and ResourceQuotas through the real kubectl (issue 27): a LimitRange's defaults on a Pod that states
 * none (with the annotation saying so), its min and max refusing Pods in upstream's words; a ResourceQuota counted by
 * its controller (`kubectl get quota`, `kubectl describe quota`), charged by admission, refusing the create over it
 * with upstream's 403, given back when a Pod goes; ten creates racing for three places take exactly three; a dry run
 * is checked but not charged; a Pod that does not state what a cpu quota counts is refused. No root needed.
 */
import t from 'tap';
import { testControlPlane } from '../controlplane/testing/control-plane.js';
import { waitFor as wait } from '../agent/src/testing/wait.js';

const env = testControlPlane(t, 'nn-quota-', { nodes: ['n1'] });
const kubectl = (args: string[], input?: string) => env.kubectl(args, input === undefined ? {} : { input });
const ok = (args: string[], input?: string) => env.ok(args, input === undefined ? {} : { input });
const waitFor = (what: string, f: () => Promise<boolean>) => wait(f, what, { timeoutMs: 20_000, intervalMs: 100 });
const pod = (ns: string, name: string, resources?: object) => JSON.stringify({
  apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns },
  spec: { containers: [{ name: 'c', image: 'busybox', ...(resources ? { resources } : {}) }] },
});

t.test('a LimitRange: defaults a Pod\'s resources and says so; refuses a Pod outside its min and max', async (t) => {
  await ok(['create', 'namespace', 'lr']);
  await ok(['apply', '-f', '-'], JSON.stringify({
    apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'limits', namespace: 'lr' },
    spec: { limits: [
      { type: 'Container', default: { cpu: '500m', memory: '256Mi' }, defaultRequest: { cpu: '200m' }, max: { cpu: '1' }, min: { cpu: '100m' } },
      { type: 'Pod', max: { memory: '1Gi' } },
    ] },
  }));
  const lr = JSON.parse(await ok(['get', 'limits', 'limits', '-n', 'lr', '-o', 'json'])) as { spec: { limits: { defaultRequest: Record<string, string> }[] } };
  t.same(lr.spec.limits[0]!.defaultRequest, { cpu: '200m', memory: '256Mi' }, 'its own defaults: defaultRequest memory from default');
  t.match(await ok(['get', 'limitranges', '-n', 'lr']), /NAME\s+CREATED AT\nlimits\s+\d{4}-/);
  await ok(['apply', '-f', '-'], pod('lr', 'plain'));
  const p = JSON.parse(await ok(['get', 'pod', 'plain', '-n', 'lr', '-o', 'json'])) as { metadata: { annotations: Record<string, string> }; spec: { containers: { resources: unknown }[] } };
  t.same(p.spec.containers[0]!.resources, { limits: { cpu: '500m', memory: '256Mi' }, requests: { cpu: '200m', memory: '256Mi' } });
  t.equal(p.metadata.annotations['kubernetes.io/limit-ranger'], 'LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c');
  const big = await kubectl(['apply', '-f', '-'], pod('lr', 'big', { limits: { cpu: '2' } }));
  t.not(big.code, 0);
  t.match(big.err, /pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2/);
  const small = await kubectl(['apply', '-f', '-'], pod('lr', 'small', { requests: { cpu: '50m' } }));
  t.match(small.err, /pods "small" is forbidden: minimum cpu usage per Container is 100m, but request is 50m/);
  const mem = await kubectl(['apply', '-f', '-'], pod('lr', 'mem', { limits: { memory: '2Gi' } }));
  t.match(mem.err, /pods "mem" is forbidden: maximum memory usage per Pod is 1Gi, but limit is 2Gi/);
  t.equal((await kubectl(['get', 'pod', 'big', '-n', 'lr'])).code, 1, 'nothing refused was stored');
  const bad = await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'bad', namespace: 'lr' }, spec: { limits: [{ type: 'Container', min: { cpu: '2' }, max: { cpu: '1' } }] } }));
  t.match(bad.err, /spec.limits\[0\].min\[cpu\]: Invalid value: "2": min value 2 is greater than max value 1/);
});

t.test('a ResourceQuota: counted, charged, refusing over it in upstream\'s words, given back', async (t) => {
  await ok(['create', 'namespace', 'rq']);
  await ok(['create', 'quota', 'q', '-n', 'rq', '--hard=pods=2,requests.cpu=1,limits.memory=1Gi']);
  await waitFor('the quota counted', async () => /pods: 0\/2/.test((await kubectl(['get', 'quota', '-n', 'rq'])).out));
  t.match(await ok(['get', 'quota', '-n', 'rq']), /NAME\s+AGE\s+REQUEST\s+LIMIT\nq\s+\S+\s+pods: 0\/2, requests.cpu: 0\/1\s+limits.memory: 0\/1Gi/);
  const unstated = await kubectl(['apply', '-f', '-'], pod('rq', 'bare'));
  t.match(unstated.err, /pods "bare" is forbidden: failed quota: q: must specify limits.memory for: c; requests.cpu for: c/);
  const res = { requests: { cpu: '400m' }, limits: { memory: '256Mi' } };
  await ok(['apply', '-f', '-'], pod('rq', 'p1', res));
  t.match(await ok(['get', 'quota', 'q', '-n', 'rq', '-o', 'jsonpath={.status.used}']), /"pods":"1".*"requests.cpu":"400m"/, 'charged at admission');
  const dry = await kubectl(['apply', '--dry-run=server', '-f', '-'], pod('rq', 'dry', res));
  t.equal(dry.code, 0, 'a dry run fits');
  await ok(['apply', '-f', '-'], pod('rq', 'p2', res));
  const used = JSON.parse(await ok(['get', 'quota', 'q', '-n', 'rq', '-o', 'jsonpath={.status.used}'])) as Record<string, string>;
  t.same(used, { 'limits.memory': '512Mi', pods: '2', 'requests.cpu': '800m' }, 'the dry run was not charged');
  const over = await kubectl(['apply', '-f', '-'], pod('rq', 'p3', res));
  t.not(over.code, 0);
  t.match(over.err, /Error from server \(Forbidden\).*pods "p3" is forbidden: exceeded quota: q, requested: pods=1,requests.cpu=400m, used: pods=2,requests.cpu=800m, limited: pods=2,requests.cpu=1/);
  t.match(await ok(['describe', 'quota', 'q', '-n', 'rq']), /Resource\s+Used\s+Hard\n-+\s+-+\s+-+\nlimits.memory\s+512Mi\s+1Gi\npods\s+2\s+2\nrequests.cpu\s+800m\s+1/);
  await ok(['delete', 'pod', 'p1', '-n', 'rq', '--wait=false']);
  await waitFor('p1 given back', async () => /pods: 1\/2/.test((await kubectl(['get', 'quota', '-n', 'rq'])).out));
  t.pass('deleting a Pod gives its place back (the controller counted again)');
  await ok(['apply', '-f', '-'], pod('rq', 'p3', res));
  t.pass('p3 fits now');
});

t.test('ten creates racing for three places: exactly three are stored, the others get the 403', async (t) => {
  await ok(['create', 'namespace', 'race']);
  await ok(['create', 'quota', 'secrets', '-n', 'race', '--hard=count/secrets=3']);
  await waitFor('the quota counted', async () => /count\/secrets: 0\/3/.test((await kubectl(['get', 'quota', '-n', 'race'])).out));
  const results = await Promise.all(Array.from({ length: 10 }, (_, i) => kubectl(['create', 'secret', 'generic', `s${i}`, '-n', 'race', `--from-literal=k=${i}`])));
  const created = results.filter((r) => r.code === 0).length;
  t.equal(created, 3, 'three created');
  for (const r of results.filter((x) => x.code !== 0)) t.match(r.err, /secrets "s\d" is forbidden: exceeded quota: secrets, requested: count\/secrets=1, used: count\/secrets=3, limited: count\/secrets=3/);
  const names = (await ok(['get', 'secrets', '-n', 'race', '-o', 'name'])).trim().split('\n');
  t.equal(names.length, 3, `stored: ${names.join(' ')}`);
  t.equal(await ok(['get', 'quota', 'secrets', '-n', 'race', '-o', 'jsonpath={.status.used.count/secrets}']), '3');
});

t.test('a quota with scopes counts only what they select; bad quotas are refused', async (t) => {
  await ok(['create', 'namespace', 'scoped']);
  await ok(['create', 'quota', 'besteffort', '-n', 'scoped', '--hard=pods=1', '--scopes=BestEffort']);
  await waitFor('counted', async () => /pods: 0\/1/.test((await kubectl(['get', 'quota', '-n', 'scoped'])).out));
  await ok(['apply', '-f', '-'], pod('scoped', 'be1'));
  const be2 = await kubectl(['apply', '-f', '-'], pod('scoped', 'be2'));
  t.match(be2.err, /exceeded quota: besteffort/);
  await ok(['apply', '-f', '-'], pod('scoped', 'burstable', { requests: { cpu: '100m' } }));
  t.pass('a Pod with requests is not BestEffort: not counted');
  const bad = await kubectl(['create', 'quota', 'bad', '-n', 'scoped', '--hard=cpu=1', '--scopes=BestEffort']);
  t.match(bad.err, /spec.scopes: Invalid value: \["BestEffort"\]: unsupported scope applied to resource/);
  const conflict = await kubectl(['create', 'quota', 'c', '-n', 'scoped', '--hard=pods=1', '--scopes=Terminating,NotTerminating']);
  t.match(conflict.err, /conflicting scopes/);
  const name = await kubectl(['create', 'quota', 'n', '-n', 'scoped', '--hard=widgets=1']);
  t.match(name.err, /spec.hard\[widgets\]: Invalid value: "widgets": must be a standard resource type or fully qualified/);
});
