import t from 'tap';
import { planPod, type PodPlan } from './pod-spec.js';
import { etcHosts, formatMap, goQuote, podObjectRefs, podTokenSpecs, volumePayload, type Payload, type VolumeContext } from './volumes.js';

type O = Record<string, unknown>;
const b64 = (s: string) => Buffer.from(s).toString('base64');
const CM = { data: { 'app.conf': 'a=1', other: 'o' }, binaryData: { blob: b64('\u0000\u0001') } };
const SECRET = { data: { password: b64('s3cret'), user: b64('me') } };

function setup(volumes: O[], o: { token?: () => string; containers?: O[] } = {}): { plan: PodPlan; ctx: VolumeContext } {
  const pod = { metadata: { name: 'p', namespace: 'app', uid: 'u1', labels: { b: 'two', a: 'one "quoted"\n' }, annotations: { note: 'x' } }, spec: { volumes, containers: o.containers ?? [{ name: 'c', image: 'nodenet/host', command: ['x'], resources: { requests: { memory: '32Mi' } } }] } };
  const r = planPod(pod);
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  return {
    plan: r.plan,
    ctx: {
      pod, plan: r.plan, node: { cpu: '2', memory: '1Gi', 'ephemeral-storage': '10Gi' },
      configMap: (n) => (n === 'cm' ? CM : null),
      secret: (n) => (n === 'sec' ? SECRET : null),
      token: o.token ?? (() => 'tok-1'),
    },
  };
}
const files = (p: Payload) => Object.fromEntries([...p].map(([k, f]) => [k, `${f.data.toString('utf8')} 0${f.mode.toString(8)}`]));
const payloadOf = (v: O, o: { token?: () => string } = {}) => {
  const { plan, ctx } = setup([{ name: 'v', ...v }], o);
  return volumePayload(plan.volumes[0]!, ctx);
};

t.test('configMap and secret volumes: every key at its name, or the items at their paths, modes', async (t) => {
  const all = payloadOf({ configMap: { name: 'cm' } });
  t.same(all.ok && files(all.payload), { 'app.conf': 'a=1 0644', other: 'o 0644', blob: '\u0000\u0001 0644' }, 'data and binaryData, defaultMode 0644');
  const items = payloadOf({ configMap: { name: 'cm', defaultMode: 0o600, items: [{ key: 'app.conf', path: 'conf/app.conf', mode: 0o400 }, { key: 'other', path: 'o.txt' }] } });
  t.same(items.ok && files(items.payload), { 'conf/app.conf': 'a=1 0400', 'o.txt': 'o 0600' });
  const sec = payloadOf({ secret: { secretName: 'sec', items: [{ key: 'password', path: 'pw' }] } });
  t.same(sec.ok && files(sec.payload), { pw: 's3cret 0644' }, 'decoded');
  t.same(payloadOf({ configMap: { name: 'cm', items: [{ key: 'nokey', path: 'x' }] } }), { ok: false, message: 'configmap references non-existent config key: nokey' });
  t.same(payloadOf({ secret: { secretName: 'sec', items: [{ key: 'nokey', path: 'x' }] } }), { ok: false, message: 'references non-existent secret key: nokey' });
  t.same(payloadOf({ configMap: { name: 'gone' } }), { ok: false, message: 'configmap "gone" not found' });
  t.same(payloadOf({ secret: { secretName: 'gone' } }), { ok: false, message: 'secret "gone" not found' });
  const opt = payloadOf({ configMap: { name: 'gone', optional: true } });
  t.ok(opt.ok && opt.payload.size === 0, 'an optional missing ConfigMap: an empty volume');
  const optKey = payloadOf({ configMap: { name: 'cm', optional: true, items: [{ key: 'nokey', path: 'x' }, { key: 'other', path: 'y' }] } });
  t.same(optKey.ok && files(optKey.payload), { y: 'o 0644' }, 'an optional missing key is left out');
});

t.test('downwardAPI: metadata fields, labels and annotations as sorted key="value" lines, resourceFieldRef', async (t) => {
  const r = payloadOf({ downwardAPI: { items: [
    { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
    { path: 'ns', fieldRef: { fieldPath: 'metadata.namespace' } },
    { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
    { path: 'b', fieldRef: { fieldPath: "metadata.labels['b']" } },
    { path: 'mem', resourceFieldRef: { containerName: 'c', resource: 'requests.memory', divisor: '1Mi' }, mode: 0o400 },
  ] } });
  t.same(r.ok && files(r.payload), { name: 'p 0644', ns: 'app 0644', labels: 'a="one \\"quoted\\"\\n"\nb="two" 0644', b: 'two 0644', mem: '32 0400' });
  t.equal(formatMap({}), '');
  t.equal(goQuote('tab\there \u0007 ü'), '"tab\\there \\a ü"');
});

t.test('projected: the sources together, the token at its path; errors joined as upstream\'s aggregate', async (t) => {
  const kubeApiAccess = { projected: { defaultMode: 420, sources: [
    { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
    { configMap: { name: 'cm', items: [{ key: 'app.conf', path: 'ca.crt' }] } },
    { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
  ] } };
  const r = payloadOf(kubeApiAccess);
  t.same(r.ok && files(r.payload), { token: 'tok-1 0644', 'ca.crt': 'a=1 0644', namespace: 'app 0644' });
  const bad = payloadOf({ projected: { sources: [{ configMap: { name: 'gone' } }, { secret: { name: 'gone2' } }, { serviceAccountToken: { path: 't' } }] } }, { token: () => { throw new Error('failed to fetch token: 403'); } });
  t.same(bad, { ok: false, message: '[configmap "gone" not found, secret "gone2" not found, failed to fetch token: 403]' });
  const { plan } = setup([{ name: 'v', ...kubeApiAccess }, { name: 'w', secret: { secretName: 'sec' } }], { containers: [{ name: 'c', image: 'nodenet/host', command: ['x'], envFrom: [{ configMapRef: { name: 'envcm' } }], env: [{ name: 'S', valueFrom: { secretKeyRef: { name: 'envsec', key: 'k' } } }] }] });
  t.same(podObjectRefs(plan), { configMaps: new Set(['cm', 'envcm']), secrets: new Set(['sec', 'envsec']) }, 'what the kubelet watches');
  t.same(podTokenSpecs(plan), [{ audience: '', expirationSeconds: 3607 }]);
});

t.test('the Pod\'s /etc/hosts as the kubelet writes it', async (t) => {
  t.equal(etcHosts({ podIPs: ['10.244.1.5'], hostname: 'web', subdomain: '', namespace: 'app', hostAliases: [] }),
    '# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n10.244.1.5\tweb\n');
  const h = etcHosts({ podIPs: ['10.244.1.5'], hostname: 'web', subdomain: 'sub', namespace: 'app', hostAliases: [{ ip: '10.1.2.3', hostnames: ['foo.local', 'bar.local'] }] });
  t.match(h, /\n10\.244\.1\.5\tweb\.sub\.app\.svc\.cluster\.local\tweb\n\n# Entries added by HostAliases\.\n10\.1\.2\.3\tfoo\.local\tbar\.local\n$/);
});
