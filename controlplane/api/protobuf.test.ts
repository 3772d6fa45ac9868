/**
 * The protobuf request-body decoder: the bodies the real kubectl sent
 * decode to the JSON it would have sent (its --dry-run=client -o json, or
 * for tokens and reviews the JSON written by hand), as the kind their URL takes,
 * hand-encoded bodies cover the Go shapes (pointers, values, inline
 * structs, maps, Time, MicroTime, IntOrString, Quantity), and every
 * malformed or unknown input is refused with its Status.
 */
import t, { type Test } from 'tap';
import { statusOf } from './errors.js';
import { decodeEnvelope, decodeProtobufBody, subresourceBody } from './protobuf.js';
import { kindMessage, messageNames, messageSpec } from './protobuf-schema.js';
import { KUBECTL_CAPTURES } from './protobuf-testdata.js';
import { apiVersionOf, RESOURCES } from './resources.js';

// A tiny encoder for hand-made bodies: field(num, value) with a string, a nested body (bytes) or a varint.
const varint = (v: bigint | number): number[] => {
  let n = BigInt.asUintN(64, BigInt(v));
  const out: number[] = [];
  do {
    const b = Number(n & 0x7fn);
    n >>= 7n;
    out.push(n ? b | 0x80 : b);
  } while (n);
  return out;
};
const len = (num: number, b: Uint8Array | string): number[] => {
  const bytes = typeof b === 'string' ? Buffer.from(b, 'utf8') : b;
  return [...varint((num << 3) | 2), ...varint(bytes.length), ...bytes];
};
const vi = (num: number, v: bigint | number | boolean): number[] => [...varint(num << 3), ...varint(typeof v === 'boolean' ? (v ? 1 : 0) : v)];
const msg = (...fields: number[][]): Uint8Array => Uint8Array.from(fields.flat());
const entry = (num: number, k: string, v: Uint8Array | string) => len(num, msg(len(1, k), len(2, v)));
/** The magic, then a runtime.Unknown around raw. */
const body = (apiVersion: string, kind: string, raw: Uint8Array, extra: number[][] = []) =>
  Uint8Array.from([0x6b, 0x38, 0x73, 0x00, ...len(1, msg(len(1, apiVersion), len(2, kind))), ...len(2, raw), ...extra.flat()]);

/**
 * The kind a POST to this path takes, as the server works it out: its resource's, or its subresource's body;
 * undefined for a resource not served yet (ResourceQuota).
 */
function expectedAt(path: string): { apiVersion: string; kind: string } | undefined {
  const segs = path.split('/').filter(Boolean);
  const [group, version, rest] = segs[0] === 'api' ? ['', segs[1]!, segs.slice(2)] : [segs[1]!, segs[2]!, segs.slice(3)];
  const [resource, , sub] = rest[0] === 'namespaces' && rest.length > 2 ? rest.slice(2) : rest;
  const r = RESOURCES.find((x) => x.group === group && x.version === version && x.resource === resource);
  if (!r) return undefined;
  return subresourceBody(sub ?? '') ?? { apiVersion: apiVersionOf(r), kind: r.kind };
}

function refused(t: Test, what: string, fn: () => unknown, code: number, message: RegExp): void {
  try {
    fn();
    t.fail(`${what}: decoded`);
  } catch (e) {
    const s = statusOf(e);
    t.equal(s.code, code, `${what}: HTTP ${code}`);
    t.match(s.message, message, `${what}: ${s.message}`);
  }
}

t.test('what kubectl sent decodes to the JSON it would have sent', async (t) => {
  for (const c of KUBECTL_CAPTURES) {
    const got = decodeProtobufBody(Buffer.from(c.protobuf, 'base64'), expectedAt(c.path));
    t.strictSame(got, JSON.parse(c.json), `kubectl ${c.args}`);
  }
  const dep = decodeProtobufBody(Buffer.from(KUBECTL_CAPTURES[0]!.protobuf, 'base64'), { apiVersion: 'apps/v1', kind: 'Deployment' });
  t.match(dep, { spec: { strategy: {}, template: { spec: { containers: [{ name: 'host', command: ['sleep', '1000'], resources: {} }] } } }, status: {} }, 'value structs stay as {} (encoding/json writes them)');
  t.notOk('generation' in (dep['metadata'] as object), 'a zero value scalar is left out (omitempty)');
  t.equal((dep['metadata'] as Record<string, unknown>)['creationTimestamp'], null, 'a zero Time is null, as encoding/json writes it');
});

t.test('the tables: every message parses, every served kind has one', async (t) => {
  const names = messageNames();
  t.ok(names.length > 150, `${names.length} messages`);
  for (const n of names) t.doesNotThrow(() => messageSpec(n), n);
  for (const r of RESOURCES) t.ok(kindMessage(apiVersionOf(r), r.kind), `${apiVersionOf(r)} ${r.kind}`);
  t.equal(messageSpec('meta.ObjectMeta').fullName, 'k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta');
  t.equal(messageSpec('core.PodSpec').fields.get(2)?.json, 'containers');
  t.equal(kindMessage('v1', 'PersistentVolume'), undefined);
  t.equal(kindMessage('apps/v1', 'DeleteOptions'), 'meta.DeleteOptions');
  for (const k of ['LimitRange', 'ResourceQuota']) t.ok(kindMessage('v1', k), `v1 ${k} (coming next)`);
  for (const r of RESOURCES) for (const sub of r.subresources) if (sub !== 'status' && sub !== 'log') t.ok(subresourceBody(sub), `${r.resource}/${sub}: its body's kind is known`);
  for (const sub of ['binding', 'scale', 'token']) {
    const e = subresourceBody(sub);
    t.ok(e && kindMessage(e.apiVersion, e.kind), `the body of a ${sub} subresource has a table`);
  }
  t.strictSame(subresourceBody('token'), { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest' });
  t.equal(subresourceBody('status'), undefined, 'status: the resource\'s own kind');
  t.equal(messageSpec('rbac.PolicyRule').fullName, 'k8s.io.api.rbac.v1.PolicyRule');
  t.equal(messageSpec('authentication.TokenRequestSpec').fields.get(4)?.shape, 'pointer', 'expirationSeconds');
  t.equal(messageSpec('rbac.ClusterRole').fields.get(2)?.shape, 'repeatedAlways', 'rules: a slice without omitempty');
});

t.test('a Pod: pointers, inline structs, maps, Time, IntOrString, Quantity, packed and unpacked repeated ints', async (t) => {
  const meta = msg(
    len(1, 'p'), len(3, 'default'), vi(7, 0),
    len(8, msg(vi(1, 1700000000), vi(2, 5))), // creationTimestamp: metav1.Time keeps only the seconds
    len(9, msg()), // deletionTimestamp present but zero: a non-nil pointer to a zero Time, null
    entry(11, 'app', 'web'), entry(11, 'tier', 'front'), entry(12, 'note', ''),
    len(13, msg(len(1, 'ReplicaSet'), len(3, 'rs'), len(4, 'u-1'), len(5, 'apps/v1'), vi(6, false))),
  );
  const container = msg(
    len(1, 'c'), len(2, 'img'), len(3, 'sleep'), len(3, '1'),
    len(6, msg(len(1, 'http'), vi(3, 8080), len(4, 'TCP'))),
    len(7, msg(len(1, 'A'), len(2, 'b'))),
    len(8, msg(entry(1, 'cpu', msg(len(1, '500m'))), entry(2, 'memory', msg(len(1, '64Mi'))))),
    len(11, msg(len(1, msg(len(2, msg(len(1, '/healthz'), len(2, msg(vi(1, 1), len(3, 'http'))))))), vi(2, 0), vi(4, 3))),
  );
  const spec = msg(
    len(1, msg(len(1, 'data'), len(2, msg(len(2, msg(len(1, 'Memory'))))))), // volume with an inline emptyDir
    len(2, container), len(3, 'Always'), vi(4, 30), len(10, 'n1'),
    len(14, msg(vi(4, 1000), vi(4, 2000), len(4, msg([...varint(3000), ...varint(4000)])))), // supplementalGroups, unpacked then packed
  );
  const status = msg(len(1, 'Running'), len(7, msg(vi(1, 1700000001))), len(6, '10.244.1.5'));
  const got = decodeProtobufBody(body('v1', 'Pod', msg(len(1, meta), len(2, spec), len(3, status))), { apiVersion: 'v1', kind: 'Pod' });
  t.strictSame(got, {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: {
      name: 'p', namespace: 'default', creationTimestamp: '2023-11-14T22:13:20Z', deletionTimestamp: null,
      labels: { app: 'web', tier: 'front' }, annotations: { note: '' },
      ownerReferences: [{ kind: 'ReplicaSet', name: 'rs', uid: 'u-1', apiVersion: 'apps/v1', controller: false }],
    },
    spec: {
      volumes: [{ name: 'data', emptyDir: { medium: 'Memory' } }],
      containers: [{
        name: 'c', image: 'img', command: ['sleep', '1'],
        ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
        env: [{ name: 'A', value: 'b' }],
        resources: { limits: { cpu: '500m' }, requests: { memory: '64Mi' } },
        readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 3 },
      }],
      restartPolicy: 'Always', terminationGracePeriodSeconds: 30, nodeName: 'n1',
      securityContext: { supplementalGroups: [1000, 2000, 3000, 4000] },
    },
    status: { phase: 'Running', podIP: '10.244.1.5', startTime: '2023-11-14T22:13:21Z' },
  });
});

t.test('pointers keep their zero, values do not; IntOrString and Quantity as encoding/json writes them', async (t) => {
  // Deployment: replicas (a pointer) 0 stays; minReadySeconds (a value) 0 goes; maxUnavailable an int, maxSurge a string.
  const dep = decodeProtobufBody(body('apps/v1', 'Deployment', msg(
    len(1, msg(len(1, 'd'))),
    len(2, msg(vi(1, 0), vi(5, 0), len(4, msg(len(1, 'RollingUpdate'), len(2, msg(len(1, msg(vi(1, 0), vi(2, 1))), len(2, msg(vi(1, 1), len(3, '25%')))))))))),
  ));
  t.strictSame(dep['spec'], { replicas: 0, template: { metadata: { creationTimestamp: null }, spec: {} }, strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: '25%' } } });
  // Service: port has no omitempty (always written); a value targetPort absent is 0, as Go writes an empty IntOrString.
  const svc = decodeProtobufBody(body('v1', 'Service', msg(len(2, msg(len(1, msg(len(2, 'UDP'))))))));
  t.strictSame(svc['spec'], { ports: [{ protocol: 'UDP', port: 0, targetPort: 0 }] });
  t.strictSame(svc['status'], { loadBalancer: {} });
  // Node: capacity is a map of Quantities; an empty Quantity is "0".
  const node = decodeProtobufBody(body('v1', 'Node', msg(len(1, msg(len(1, 'n1'))), len(3, msg(entry(1, 'pods', msg(len(1, '110'))), entry(1, 'cpu', msg())))))) as { status: Record<string, unknown> };
  t.strictSame(node.status['capacity'], { pods: '110', cpu: '0' });
  t.strictSame(node.status['daemonEndpoints'], { kubeletEndpoint: { Port: 0 } }, 'a value struct with a field without omitempty');
});

t.test('Lease and Event: MicroTime to the microsecond; EndpointSlice: pointer bools', async (t) => {
  const lease = decodeProtobufBody(body('coordination.k8s.io/v1', 'Lease', msg(
    len(1, msg(len(1, 'n1'), len(3, 'kube-node-lease'))),
    len(2, msg(len(1, 'n1'), vi(2, 0), len(4, msg(vi(1, 1700000000), vi(2, 123456789))))),
  )), { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' });
  t.strictSame(lease['spec'], { holderIdentity: 'n1', leaseDurationSeconds: 0, renewTime: '2023-11-14T22:13:20.123456Z' });
  const ev = decodeProtobufBody(body('v1', 'Event', msg(len(1, msg(len(1, 'e'))), len(2, msg(len(1, 'Pod'), len(3, 'p'))), len(3, 'Started'), vi(8, 2), len(10, msg(vi(1, 0)))))) as Record<string, unknown>;
  t.match(ev, { involvedObject: { kind: 'Pod', name: 'p' }, reason: 'Started', count: 2, eventTime: '1970-01-01T00:00:00.000000Z', source: {} });
  const eps = decodeProtobufBody(body('discovery.k8s.io/v1', 'EndpointSlice', msg(
    len(1, msg(len(1, 's'))), len(2, msg(len(1, '10.0.0.1'), len(2, msg(vi(1, false), vi(3, true))))), len(3, msg(len(1, 'http'), vi(3, 80))), len(4, 'IPv4'),
  )));
  t.strictSame(eps, { kind: 'EndpointSlice', apiVersion: 'discovery.k8s.io/v1', metadata: { name: 's', creationTimestamp: null }, addressType: 'IPv4', endpoints: [{ addresses: ['10.0.0.1'], conditions: { ready: false, terminating: true } }], ports: [{ name: 'http', port: 80 }] });
});

t.test('protobuf merge rules: a singular message twice merges, a scalar twice keeps the last', async (t) => {
  const ns = decodeProtobufBody(body('v1', 'Namespace', msg(len(1, msg(len(1, 'a'), entry(11, 'x', '1'))), len(1, msg(len(1, 'b'), entry(11, 'y', '2'))))));
  t.strictSame(ns['metadata'], { name: 'b', creationTimestamp: null, labels: { x: '1', y: '2' } });
  const del = decodeProtobufBody(body('meta.k8s.io/v1', 'DeleteOptions', msg(vi(1, 0), len(4, 'Foreground'), len(5, 'All'))), { apiVersion: 'v1', kind: 'DeleteOptions' });
  t.strictSame(del, { kind: 'DeleteOptions', apiVersion: 'meta.k8s.io/v1', gracePeriodSeconds: 0, propagationPolicy: 'Foreground', dryRun: ['All'] });
});

t.test('refused: malformed bodies (400), unknown fields (400), kinds unlike the URL (400), kinds without a table (415)', async (t) => {
  const pod = (raw: Uint8Array) => () => decodeProtobufBody(body('v1', 'Pod', raw), { apiVersion: 'v1', kind: 'Pod' });
  refused(t, 'no magic', () => decodeProtobufBody(Uint8Array.from([0x7b, 0x7d])), 400, /does not start with the magic/);
  refused(t, 'the magic alone', () => decodeProtobufBody(Uint8Array.from([0x6b, 0x38, 0x73, 0x00])), 400, /names no kind/);
  refused(t, 'a truncated varint', pod(msg([0x08 | 0x10, 0xff])), 400, /truncated varint/);
  refused(t, 'a varint of 11 bytes', pod(msg([0x18, ...Array<number>(10).fill(0xff), 0x01])), 400, /varint longer than/);
  refused(t, 'a length past the end', pod(msg([0x0a, 0x05, 0x0a])), 400, /past the end of its message/);
  refused(t, 'a truncated envelope', () => decodeProtobufBody(body('v1', 'Pod', msg()).subarray(0, 10)), 400, /past the end|truncated/);
  refused(t, 'a group wire type', pod(msg([0x0b])), 400, /wire type 3/);
  refused(t, 'field number 0', pod(msg([0x02, 0x00])), 400, /field number 0/);
  refused(t, 'a string as a varint', pod(msg(len(1, msg(vi(1, 5))))), 400, /metadata\.name \(field 1\) has wire type 0, not 2/);
  refused(t, 'a varint as a string', pod(msg(len(2, msg(len(4, 'thirty'))))), 400, /terminationGracePeriodSeconds \(field 4\) has wire type 2, not 0/);
  refused(t, 'invalid UTF-8', pod(msg(len(1, msg(len(1, Uint8Array.from([0xff, 0xfe])))))), 400, /not valid UTF-8/);
  refused(t, 'an unknown field of PodSpec', pod(msg(len(2, msg(vi(999, 1))))), 400, /k8s\.io\.api\.core\.v1\.PodSpec has no field 999 \(wire type 0, at Pod\.spec\) known to this server/);
  refused(t, 'an unknown field of ObjectMeta', pod(msg(len(1, msg(len(16, 'x'))))), 400, /ObjectMeta has no field 16/);
  refused(t, 'an unknown field of Time', pod(msg(len(1, msg(len(8, msg(vi(3, 1))))))), 400, /Timestamp has no field 3/);
  refused(t, 'an unknown field of runtime.Unknown', () => decodeProtobufBody(body('v1', 'Pod', msg(), [len(9, 'x')])), 400, /runtime\.Unknown has no field 9/);
  refused(t, 'an unknown field of a map entry', pod(msg(len(1, msg(len(11, msg(len(1, 'a'), len(3, 'b'))))))), 400, /map entry .* has no field 3/);
  refused(t, 'IntOrString of type 2', () => decodeProtobufBody(body('v1', 'Service', msg(len(2, msg(len(1, msg(len(4, msg(vi(1, 2)))))))))), 400, /IntOrString type 2/);
  refused(t, 'nanos out of range', () => decodeProtobufBody(body('coordination.k8s.io/v1', 'Lease', msg(len(2, msg(len(4, msg(vi(1, 1), vi(2, 1_000_000_000)))))))), 400, /nanos/);
  refused(t, 'an int64 beyond 2^53', pod(msg(len(2, msg(vi(4, 2n ** 60n))))), 400, /beyond what this server represents/);
  refused(t, 'a Service to a Pod URL', () => decodeProtobufBody(body('v1', 'Service', msg()), { apiVersion: 'v1', kind: 'Pod' }), 400, /holds v1, Kind=Service, but this URL takes v1, Kind=Pod/);
  refused(t, 'a wrong apiVersion', () => decodeProtobufBody(body('apps/v1beta1', 'Deployment', msg()), { apiVersion: 'apps/v1', kind: 'Deployment' }), 400, /apps\/v1beta1/);
  refused(t, 'a kind without a table', () => decodeProtobufBody(body('v1', 'PersistentVolume', msg())), 415, /protobuf bodies of kind v1\/PersistentVolume are not supported/);
  refused(t, 'a gzipped raw', () => decodeProtobufBody(body('v1', 'Pod', msg(), [len(3, 'gzip')])), 415, /contentEncoding "gzip"/);
  refused(t, 'a raw of another content type', () => decodeProtobufBody(body('v1', 'Pod', msg(), [len(4, 'application/json')])), 415, /contentType "application\/json"/);
});

t.test('RBAC and reviews: a slice without omitempty is null when empty, ExtraValue a JSON array, Secret data base64', async (t) => {
  const ab = Buffer.from([0, 1, 0xfe, 0xff]);
  const agg = decodeProtobufBody(body('rbac.authorization.k8s.io/v1', 'ClusterRole', msg(
    len(1, msg(len(1, 'agg'))), len(3, msg(len(1, msg(entry(1, 'a', 'b'))))),
  )), { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole' });
  t.strictSame(agg, { kind: 'ClusterRole', apiVersion: 'rbac.authorization.k8s.io/v1', metadata: { name: 'agg', creationTimestamp: null }, rules: null, aggregationRule: { clusterRoleSelectors: [{ matchLabels: { a: 'b' } }] } });
  const role = decodeProtobufBody(body('rbac.authorization.k8s.io/v1', 'Role', msg(len(2, msg(len(3, 'pods'))))));
  t.strictSame(role['rules'], [{ verbs: null, resources: ['pods'] }], 'verbs has no omitempty: null when empty');
  const rb = decodeProtobufBody(body('rbac.authorization.k8s.io/v1', 'RoleBinding', msg(len(2, msg(len(1, 'User'), len(3, 'alice'))))));
  t.strictSame(rb, { kind: 'RoleBinding', apiVersion: 'rbac.authorization.k8s.io/v1', metadata: { creationTimestamp: null }, subjects: [{ kind: 'User', name: 'alice' }], roleRef: { apiGroup: '', kind: '', name: '' } });
  const sar = decodeProtobufBody(body('authorization.k8s.io/v1', 'SubjectAccessReview', msg(len(2, msg(
    len(1, msg(len(2, 'list'), len(5, 'pods'), len(8, msg(len(2, msg(len(1, 'spec.nodeName'), len(2, 'In'), len(3, 'n1'))))))),
    len(3, 'bob'), entry(5, 'scopes', msg(len(1, 'a'), len(1, 'b'))), entry(5, 'none', msg()),
  )))));
  t.strictSame(sar['spec'], { resourceAttributes: { verb: 'list', resource: 'pods', fieldSelector: { requirements: [{ key: 'spec.nodeName', operator: 'In', values: ['n1'] }] } }, user: 'bob', extra: { scopes: ['a', 'b'], none: [] } });
  t.strictSame(sar['status'], { allowed: false });
  const rules = decodeProtobufBody(body('authorization.k8s.io/v1', 'SelfSubjectRulesReview', msg(len(2, msg(len(1, 'default'))))));
  t.strictSame(rules, { kind: 'SelfSubjectRulesReview', apiVersion: 'authorization.k8s.io/v1', metadata: { creationTimestamp: null }, spec: { namespace: 'default' }, status: { resourceRules: null, nonResourceRules: null, incomplete: false } });
  const tr = decodeProtobufBody(body('authentication.k8s.io/v1', 'TokenRequest', msg(len(2, msg(len(1, 'x'), vi(4, 600), len(3, msg(len(1, 'Pod'), len(3, 'p'))))))), { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest' });
  t.strictSame(tr, { kind: 'TokenRequest', apiVersion: 'authentication.k8s.io/v1', metadata: { creationTimestamp: null }, spec: { audiences: ['x'], expirationSeconds: 600, boundObjectRef: { kind: 'Pod', name: 'p' } }, status: { token: '', expirationTimestamp: null } });
  const secret = decodeProtobufBody(body('v1', 'Secret', msg(len(1, msg(len(1, 's'))), entry(2, 'bin', ab), len(3, 'Opaque'), vi(5, true))));
  t.strictSame(secret, { kind: 'Secret', apiVersion: 'v1', metadata: { name: 's', creationTimestamp: null }, data: { bin: ab.toString('base64') }, type: 'Opaque', immutable: true });
  const lr = decodeProtobufBody(body('v1', 'LimitRange', msg(len(2, msg(len(1, msg(len(1, 'Container'), entry(4, 'cpu', msg(len(1, '500m'))))))))));
  t.strictSame(lr['spec'], { limits: [{ type: 'Container', default: { cpu: '500m' } }] });
  t.strictSame(decodeProtobufBody(body('v1', 'LimitRange', msg()))['spec'], { limits: null });
  const rq = decodeProtobufBody(body('v1', 'ResourceQuota', msg(len(2, msg(entry(1, 'pods', msg(len(1, '10'))), len(3, msg(len(1, msg(len(1, 'PriorityClass'), len(2, 'In'), len(3, 'high'))))))))));
  t.strictSame(rq['spec'], { hard: { pods: '10' }, scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In', values: ['high'] }] } });
  t.strictSame(rq['status'], {});
  const ep = decodeProtobufBody(body('v1', 'Endpoints', msg(len(2, msg(len(1, msg(len(1, '10.0.0.1'), len(4, 'n1'))), len(3, msg(vi(2, 80))))))));
  t.strictSame(ep['subsets'], [{ addresses: [{ ip: '10.0.0.1', nodeName: 'n1' }], ports: [{ port: 80 }] }]);
});

t.test('refused: a field the new kinds\' tables lack', async (t) => {
  const role = (raw: Uint8Array) => () => decodeProtobufBody(body('rbac.authorization.k8s.io/v1', 'Role', raw), { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role' });
  refused(t, 'a PolicyRule field 6', role(msg(len(2, msg(len(1, 'get'), len(6, 'x'))))), 400, /k8s\.io\.api\.rbac\.v1\.PolicyRule has no field 6 \(wire type 2, at Role\.rules\[\]\) known to this server/);
  refused(t, 'a Role field 4', role(msg(vi(4, 1))), 400, /k8s\.io\.api\.rbac\.v1\.Role has no field 4/);
  refused(t, 'a ResourceAttributes field 10', () => decodeProtobufBody(body('authorization.k8s.io/v1', 'SelfSubjectAccessReview', msg(len(2, msg(len(1, msg(len(10, 'x')))))))), 400, /authorization\.v1\.ResourceAttributes has no field 10 \(wire type 2, at SelfSubjectAccessReview\.spec\.resourceAttributes\)/);
  refused(t, 'a field 2 of an ExtraValue', () => decodeProtobufBody(body('authentication.k8s.io/v1', 'TokenReview', msg(len(3, msg(len(2, msg(entry(4, 'k', msg(len(2, 'v')))))))))), 400, /the string list at TokenReview\.status\.user\.extra\["k"\] has no field 2/);
  refused(t, 'a TokenRequestSpec field 2', () => decodeProtobufBody(body('authentication.k8s.io/v1', 'TokenRequest', msg(len(2, msg(len(2, 'x')))))), 400, /authentication\.v1\.TokenRequestSpec has no field 2/);
  refused(t, 'a TokenRequest to a ServiceAccount URL', () => decodeProtobufBody(body('authentication.k8s.io/v1', 'TokenRequest', msg()), { apiVersion: 'v1', kind: 'ServiceAccount' }), 400, /holds authentication\.k8s\.io\/v1, Kind=TokenRequest, but this URL takes v1, Kind=ServiceAccount/);
});

t.test('the envelope alone', async (t) => {
  const e = decodeEnvelope(Buffer.from(KUBECTL_CAPTURES[3]!.protobuf, 'base64'));
  t.equal(e.apiVersion, 'v1');
  t.equal(e.kind, 'Namespace');
  t.ok(e.raw.length > 0);
});
