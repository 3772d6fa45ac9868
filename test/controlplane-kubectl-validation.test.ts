/**
 * The real kubectl against `nodenet control-plane` on loopback: the patches
 * issue 24 is about, and what kube-apiserver answers to each. A patch that
 * kube-apiserver accepts is stored as it stores it (defaulted, valid for the
 * agents); one it refuses is refused in its words, and nothing is stored.
 * No root needed.
 */
import t from 'tap';
import { testControlPlane } from '../controlplane/testing/control-plane.js';

const env = testControlPlane(t, 'nn-cp-validation-', { nodes: ['n1'] });
const { kubectl, ok } = env;

const SVC = `apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  sessionAffinity: ClientIP
  ports: [{port: 80, targetPort: 8080}]
`;

interface Svc {
  metadata: { resourceVersion: string };
  spec: Record<string, unknown>;
}
const getSvc = async (): Promise<Svc> => JSON.parse(await ok(['get', 'svc', 'web', '-o', 'json'])) as Svc;

t.test('kubectl patch svc web -p {"spec":{"sessionAffinity":"None"}} on a ClientIP Service: patched, the defaulted config gone with the affinity', async (t) => {
  await ok(['apply', '-f', '-'], { input: SVC });
  t.same((await getSvc()).spec['sessionAffinityConfig'], { clientIP: { timeoutSeconds: 10800 } }, 'ClientIP: the default timeout');
  const r = await kubectl(['patch', 'svc', 'web', '-p', '{"spec":{"sessionAffinity":"None"}}']);
  t.equal(r.code, 0, r.err);
  t.equal(r.out, 'service/web patched\n');
  const s = await getSvc();
  t.equal(s.spec['sessionAffinity'], 'None');
  t.notOk('sessionAffinityConfig' in s.spec, 'no config left behind for the agents to refuse');
});

t.test('kubectl patch svc web -p {"spec":{"sessionAffinity":"None","sessionAffinityConfig":null}}: patched', async (t) => {
  await ok(['patch', 'svc', 'web', '-p', '{"spec":{"sessionAffinity":"ClientIP"}}']);
  t.same((await getSvc()).spec['sessionAffinityConfig'], { clientIP: { timeoutSeconds: 10800 } });
  const r = await kubectl(['patch', 'svc', 'web', '-p', '{"spec":{"sessionAffinity":"None","sessionAffinityConfig":null}}']);
  t.equal(r.code, 0, r.err);
  t.equal(r.out, 'service/web patched\n');
  const s = await getSvc();
  t.equal(s.spec['sessionAffinity'], 'None');
  t.notOk('sessionAffinityConfig' in s.spec);
});

t.test('a patch kube-apiserver refuses: kubectl prints its words, and the stored Service is unchanged', async (t) => {
  await ok(['patch', 'svc', 'web', '-p', '{"spec":{"sessionAffinity":"ClientIP"}}']);
  const before = await getSvc();
  for (const type of ['strategic', 'merge']) {
    const r = await kubectl(['patch', 'svc', 'web', '--type', type, '-p', '{"spec":{"sessionAffinityConfig":{"clientIP":{"timeoutSeconds":0}}}}']);
    t.equal(r.code, 1, `${type}: refused`);
    t.equal(r.err, 'The Service "web" is invalid: spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0: must be greater than 0 and less than 86400\n');
  }
  const ipv6 = await kubectl(['patch', 'svc', 'web', '-p', '{"spec":{"ipFamilies":["IPv6"]}}']);
  t.equal(ipv6.code, 1);
  // kubectl lists several causes one per line.
  t.match(ipv6.err, /^The Service "web" is invalid: \n\* spec\.ipFamilies\[0\]: Invalid value: \["IPv6"\]: may not change once set\n\* spec\.clusterIPs\[0\]: Invalid value: "10\.\d+\.\d+\.\d+": expected an IPv6 value as indicated by `ipFamilies\[0\]`\n\* spec\.ipFamilies\[0\]: Invalid value: \["10\.\d+\.\d+\.\d+"\]: ipfamily IPv6 is not configured on cluster\n/);
  const en = await kubectl(['patch', 'svc', 'web', '--type', 'merge', '-p', '{"spec":{"type":"ExternalName","externalName":"db.example.com","clusterIP":"10.96.7.7","clusterIPs":["10.96.7.7"]}}']);
  t.equal(en.code, 1);
  t.match(en.err, /spec\.clusterIPs: Forbidden: may not be set for ExternalName services/);
  const after = await getSvc();
  t.equal(after.metadata.resourceVersion, before.metadata.resourceVersion, 'nothing stored');
  t.same(after.spec, before.spec);
});

t.test('a Pod\'s spec: an image may change, a port may not', async (t) => {
  await ok(['apply', '-f', '-'], { input: 'apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {app: p}}\nspec: {nodeName: n1, containers: [{name: c, image: "busybox:1.36"}]}\n' });
  t.equal(await ok(['set', 'image', 'pod/p', 'c=busybox:1.37']), 'pod/p image updated\n');
  const r = await kubectl(['patch', 'pod', 'p', '-p', '{"spec":{"containers":[{"name":"c","ports":[{"containerPort":80}]}]}}']);
  t.equal(r.code, 1);
  t.match(r.err, /^The Pod "p" is invalid: spec: Forbidden: pod updates may not change fields other than `spec\.containers\[\*\]\.image`/);
});

t.test('a Deployment\'s rolling update may not have both maxSurge and maxUnavailable 0', async (t) => {
  await ok(['create', 'deployment', 'api', '--image=busybox:1.36', '--replicas=0']);
  const r = await kubectl(['patch', 'deploy', 'api', '-p', '{"spec":{"strategy":{"rollingUpdate":{"maxSurge":0,"maxUnavailable":0}}}}']);
  t.equal(r.code, 1);
  t.equal(r.err, 'The Deployment "api" is invalid: spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0\n');
});
