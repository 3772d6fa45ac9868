/**
 * The strategic merge patch against upstream's semantics
 * (k8s.io/apimachinery/pkg/util/strategicpatch, server side), on the real
 * schemas of the served kinds: the patch strategies and merge keys of the
 * Go types, the directives, list ordering, and the errors.
 */
import t from 'tap';
import { loadSchemas } from './schema.js';
import { PATCH_STRATEGIES, StrategicPatchError, strategicMergePatch } from './strategic-merge.js';

const schemas = await loadSchemas(['V1Service', 'V1Pod', 'V1Deployment', 'V1ReplicaSet', 'V1EndpointSlice', 'V1Node', 'V1Namespace']);

type O = Record<string, any>;
const smp = (model: string, original: unknown, patch: unknown) => strategicMergePatch(schemas, model, original, patch) as O;
const names = (list: O[]) => list.map((x) => x['name']);

const service = (ports: O[]): O => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', namespace: 'default', labels: { app: 'web' } },
  spec: { type: 'ClusterIP', clusterIP: '10.96.0.10', selector: { app: 'web' }, ports },
});
const pod = (containers: O[], extra: O = {}): O => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace: 'default' },
  spec: { containers, ...extra },
});

t.test('Service spec.ports merge by port: kubectl apply adding a second port keeps the first', async (t) => {
  const live = service([{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }]);
  // What kubectl apply sends when the configuration gains port 443.
  const patch = { spec: { '$setElementOrder/ports': [{ port: 80 }, { port: 443 }], ports: [{ name: 'https', port: 443, targetPort: 8443 }] } };
  const out = smp('V1Service', live, patch);
  t.strictSame(out['spec']['ports'], [
    { name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' },
    { name: 'https', port: 443, targetPort: 8443 },
  ]);
  t.equal(out['spec']['clusterIP'], '10.96.0.10', 'fields the patch does not name are kept');
  t.strictSame(out['metadata'], live['metadata']);
});

t.test('Service spec.ports: a port the patch names is merged into, not replaced', async (t) => {
  const live = service([
    { name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30080 },
    { name: 'https', port: 443, targetPort: 8443, protocol: 'TCP' },
  ]);
  const out = smp('V1Service', live, { spec: { ports: [{ port: 80, targetPort: 9090 }] } });
  t.strictSame(out['spec']['ports'], [
    { name: 'http', port: 80, targetPort: 9090, protocol: 'TCP', nodePort: 30080 },
    { name: 'https', port: 443, targetPort: 8443, protocol: 'TCP' },
  ]);
});

t.test('Service spec.ports without $setElementOrder: a new port comes before the server-only ones, as upstream orders it', async (t) => {
  const live = service([{ port: 80 }]);
  const out = smp('V1Service', live, { spec: { ports: [{ port: 443 }] } });
  t.strictSame(out['spec']['ports'], [{ port: 443 }, { port: 80 }]);
});

t.test('the merge key compares as JSON values: "80" is not 80', async (t) => {
  const out = smp('V1Service', service([{ port: 80, name: 'a' }]), { spec: { ports: [{ port: '80', name: 'b' }] } });
  t.equal(out['spec']['ports'].length, 2);
});

t.test('Pod spec.containers merge by name; env by name; ports by containerPort', async (t) => {
  const live = pod([
    {
      name: 'app',
      image: 'app:1',
      env: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }],
      ports: [{ containerPort: 8080, protocol: 'TCP', name: 'http' }],
    },
    { name: 'sidecar', image: 'side:1' },
  ]);
  const out = smp('V1Pod', live, {
    spec: {
      containers: [
        {
          name: 'app',
          image: 'app:2',
          env: [{ name: 'B', value: 'two' }, { name: 'C', value: '3' }],
          ports: [{ containerPort: 9090, name: 'metrics' }],
        },
      ],
    },
  });
  const [app, sidecar] = out['spec']['containers'] as O[];
  t.strictSame(sidecar, { name: 'sidecar', image: 'side:1' }, 'the container the patch does not name is untouched');
  t.equal(app!['image'], 'app:2');
  // env: B and C are the patch's (in its order); A, server-only, stays before B where it was.
  t.strictSame(app!['env'], [{ name: 'A', value: '1' }, { name: 'B', value: 'two' }, { name: 'C', value: '3' }]);
  t.strictSame(app!['ports'], [{ containerPort: 9090, name: 'metrics' }, { containerPort: 8080, protocol: 'TCP', name: 'http' }], 'the existing port is kept');
  t.strictSame(names(out['spec']['containers']), ['app', 'sidecar']);
});

t.test('Pod: adding a container with a strategic patch puts it first (upstream order) and keeps the others', async (t) => {
  const out = smp('V1Pod', pod([{ name: 'app', image: 'a' }]), { spec: { containers: [{ name: 'debug', image: 'busybox' }] } });
  t.strictSame(out['spec']['containers'], [{ name: 'debug', image: 'busybox' }, { name: 'app', image: 'a' }]);
});

t.test('merged lists keep the patch order, server-only items where the server had them (upstream "preserve the order from the patch")', async (t) => {
  const live = pod([{ name: 'a' }, { name: 'b', image: 'b' }, { name: 'c' }]);
  const all = smp('V1Pod', live, { spec: { containers: [{ name: 'c', image: 'c' }, { name: 'a', image: 'a' }, { name: 'b', tty: true }] } });
  t.strictSame(all['spec']['containers'], [{ name: 'c', image: 'c' }, { name: 'a', image: 'a' }, { name: 'b', image: 'b', tty: true }]);
  const some = smp('V1Pod', live, { spec: { containers: [{ name: 'c', image: 'c' }, { name: 'a', image: 'a' }] } });
  t.strictSame(names(some['spec']['containers']), ['b', 'c', 'a'], 'b preceded c on the server, so it comes before c');
});

t.test('$setElementOrder orders the merged list; server-only items keep their place', async (t) => {
  const live = pod([{ name: '1', image: 'x' }, { name: '2' }, { name: '7' }, { name: '9' }, { name: '8' }, { name: '3' }, { name: '4' }]);
  const out = smp('V1Pod', live, { spec: { '$setElementOrder/containers': [{ name: '2' }, { name: '1' }, { name: '4' }, { name: '3' }] } });
  t.strictSame(names(out['spec']['containers']), ['2', '1', '7', '9', '8', '4', '3']);
  t.equal(out['spec']['containers'][1]['image'], 'x', 'the items are the server items, reordered');

  const added = smp('V1Pod', pod([{ name: 'a' }, { name: 'b' }]), {
    spec: { '$setElementOrder/containers': [{ name: 'c' }, { name: 'a' }, { name: 'b' }], containers: [{ name: 'c', image: 'c' }] },
  });
  t.strictSame(names(added['spec']['containers']), ['c', 'a', 'b']);

  const missing = smp('V1Pod', pod([{ name: 'a' }, { name: 'c' }]), {
    spec: { '$setElementOrder/containers': [{ name: 'c' }, { name: 'b' }, { name: 'a' }], containers: [{ name: 'c', image: 'c' }, { name: 'a', image: 'a' }] },
  });
  t.strictSame(missing['spec']['containers'], [{ name: 'c', image: 'c' }, { name: 'a', image: 'a' }], 'an ordered item that exists nowhere is ignored');
});

t.test('$setElementOrder with a deletion: kubectl apply removing a port', async (t) => {
  const live = service([{ port: 80, name: 'http' }, { port: 443, name: 'https' }, { port: 8080, name: 'alt' }]);
  const out = smp('V1Service', live, { spec: { '$setElementOrder/ports': [{ port: 8080 }, { port: 80 }], ports: [{ port: 443, $patch: 'delete' }] } });
  t.strictSame(out['spec']['ports'], [{ port: 8080, name: 'alt' }, { port: 80, name: 'http' }]);
});

t.test('$setElementOrder that disagrees with the patch list is an error', async (t) => {
  const live = pod([{ name: '1' }, { name: '3' }, { name: '2' }]);
  t.throws(
    () => smp('V1Pod', live, { spec: { '$setElementOrder/containers': [{ name: '1' }, { name: '2' }, { name: '3' }], containers: [{ name: '3', image: 'x' }, { name: '1', image: 'y' }] } }),
    { name: 'StrategicPatchError', message: /doesn't match \$setElementOrder list/ },
  );
  t.throws(() => smp('V1Pod', live, { spec: { '$setElementOrder/containers': [{ image: 'x' }] } }), { message: /does not contain declared merge key: name/ }, 'order items need the merge key');
});

t.test('$patch: delete on a list item removes it (every item with that key); without the merge key it is an error', async (t) => {
  const live = pod([{ name: 'app', env: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }, { name: 'A', value: 'dup' }] }]);
  const out = smp('V1Pod', live, { spec: { containers: [{ name: 'app', env: [{ name: 'A', $patch: 'delete' }] }] } });
  t.strictSame(out['spec']['containers'][0]['env'], [{ name: 'B', value: '2' }]);
  const absent = smp('V1Pod', live, { spec: { containers: [{ name: 'nope', $patch: 'delete' }] } });
  t.strictSame(absent['spec'], live['spec'], 'deleting an item that is not there changes nothing');
  t.throws(() => smp('V1Pod', live, { spec: { containers: [{ $patch: 'delete', image: 'x' }] } }), { name: 'StrategicPatchError', message: /does not contain declared merge key: name/ });
});

t.test('$patch: delete on a map empties it (upstream returns {}, the key stays)', async (t) => {
  const live = pod([{ name: 'a' }], { nodeSelector: { zone: 'a', disk: 'ssd' } });
  const out = smp('V1Pod', live, { spec: { nodeSelector: { $patch: 'delete' } } });
  t.strictSame(out['spec']['nodeSelector'], {});
  t.strictSame(out['spec']['containers'], [{ name: 'a' }]);
  t.strictSame(smp('V1Pod', live, { $patch: 'delete' }), {}, 'on the whole object');
  const fresh = smp('V1Pod', pod([{ name: 'a' }]), { spec: { nodeSelector: { $patch: 'delete' } } });
  t.notOk('nodeSelector' in fresh['spec'], 'a new map that deletes itself adds nothing');
});

t.test('$patch: replace on a list: the list is the patch items', async (t) => {
  const live = pod([{ name: 'a', image: 'a' }, { name: 'b', image: 'b' }]);
  const out = smp('V1Pod', live, { spec: { containers: [{ $patch: 'replace' }, { name: 'c', image: 'c' }] } });
  t.strictSame(out['spec']['containers'], [{ name: 'c', image: 'c' }]);
  const empty = smp('V1Pod', live, { spec: { containers: [{ $patch: 'replace' }] } });
  t.strictSame(empty['spec']['containers'], [], 'replace alone empties the list');
  const env = smp('V1Pod', pod([{ name: 'a', env: [{ name: 'X', value: '1' }] }]), { spec: { containers: [{ name: 'a', env: [{ name: 'Y', value: '2' }, { $patch: 'replace' }] }] } });
  t.strictSame(env['spec']['containers'][0]['env'], [{ name: 'Y', value: '2' }], 'the marker may come anywhere in the list');
});

t.test('$patch: replace on a map: the map is the patch, less the directive', async (t) => {
  const live = { metadata: { name: 'p', labels: { a: '1', b: '2' }, annotations: { x: 'y' } } };
  const out = smp('V1Pod', live, { metadata: { labels: { $patch: 'replace', c: '3' } } });
  t.strictSame(out['metadata'], { name: 'p', labels: { c: '3' }, annotations: { x: 'y' } });
  t.strictSame(smp('V1Pod', live, { $patch: 'replace', kind: 'Pod' }), { kind: 'Pod' }, 'on the whole object');
  t.strictSame(smp('V1Pod', live, { metadata: { labels: { $patch: 'replace' } } })['metadata']['labels'], {}, 'replace with nothing else empties the map');
});

t.test('$retainKeys: Deployment spec.strategy from RollingUpdate to Recreate', async (t) => {
  const live = {
    spec: {
      replicas: 2,
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } },
    },
  };
  const out = smp('V1Deployment', live, { spec: { strategy: { $retainKeys: ['type'], type: 'Recreate' } } });
  t.strictSame(out['spec'], { replicas: 2, strategy: { type: 'Recreate' } });
  const kept = smp('V1Deployment', live, { spec: { strategy: { $retainKeys: ['rollingUpdate', 'type'], rollingUpdate: { maxSurge: 1 } } } });
  t.strictSame(kept['spec']['strategy'], { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: '25%' } }, 'listed keys still merge');
  const noDirective = smp('V1Deployment', live, { spec: { strategy: { type: 'Recreate' } } });
  t.strictSame(noDirective['spec']['strategy'], { type: 'Recreate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } }, 'without the directive the map merges');
  t.throws(() => smp('V1Deployment', live, { spec: { strategy: { $retainKeys: ['type'], type: 'Recreate', rollingUpdate: {} } } }), {
    name: 'StrategicPatchError',
    message: /^invalid patch format of retainKeys/,
  });
  t.throws(() => smp('V1Deployment', live, { spec: { strategy: { $retainKeys: 'type' } } }), { message: /^invalid patch format of retainKeys/ });
  const nulls = smp('V1Deployment', live, { spec: { strategy: { $retainKeys: ['type'], rollingUpdate: null } } });
  t.strictSame(nulls['spec']['strategy'], { type: 'RollingUpdate' }, 'a null for an unlisted key is allowed');
});

t.test('$retainKeys in a merged list item: a volume switching source (volumes: merge,retainKeys by name)', async (t) => {
  const live = pod([{ name: 'a' }], { volumes: [{ name: 'data', hostPath: { path: '/srv' } }, { name: 'tmp', emptyDir: {} }] });
  const out = smp('V1Pod', live, { spec: { volumes: [{ name: 'data', $retainKeys: ['emptyDir', 'name'], emptyDir: { medium: 'Memory' } }] } });
  t.strictSame(out['spec']['volumes'], [{ name: 'data', emptyDir: { medium: 'Memory' } }, { name: 'tmp', emptyDir: {} }]);
});

t.test('metadata.finalizers is a merged list of scalars (patchStrategy merge): union, upstream order', async (t) => {
  const live = { metadata: { name: 'n', finalizers: ['a', 'b'] } };
  t.strictSame(smp('V1Namespace', live, { metadata: { finalizers: ['b', 'c'] } })['metadata']['finalizers'], ['a', 'b', 'c']);
  t.strictSame(smp('V1Namespace', live, { metadata: { finalizers: ['c', 'a'] } })['metadata']['finalizers'], ['c', 'a', 'b']);
  t.strictSame(smp('V1Namespace', { metadata: { finalizers: ['a', 'a'] } }, { metadata: { finalizers: ['a'] } })['metadata']['finalizers'], ['a'], 'duplicates collapse');
  t.strictSame(smp('V1Namespace', live, { metadata: { finalizers: [] } })['metadata']['finalizers'], ['a', 'b'], 'an empty list adds nothing');
  t.strictSame(smp('V1Namespace', live, { metadata: { finalizers: null } })['metadata'], { name: 'n' }, 'null removes the list');
  t.strictSame(smp('V1Node', { spec: { podCIDRs: ['10.244.1.0/24'] } }, { spec: { podCIDRs: ['fd00::/64'] } })['spec']['podCIDRs'], ['fd00::/64', '10.244.1.0/24'], 'NodeSpec.podCIDRs merges too');
});

t.test('$deleteFromPrimitiveList removes scalars; with $setElementOrder, as kubectl apply sends it', async (t) => {
  const live = { metadata: { name: 'n', finalizers: ['a', 'b', 'c', 'c', 'd'] } };
  const out = smp('V1Namespace', live, { metadata: { '$deleteFromPrimitiveList/finalizers': ['c'] } });
  t.strictSame(out['metadata']['finalizers'], ['a', 'b', 'd'], 'every copy goes');
  const apply = smp('V1Namespace', { metadata: { finalizers: ['1', '2', '3'] } }, {
    metadata: { '$setElementOrder/finalizers': ['4', '2', '1'], finalizers: ['4'], '$deleteFromPrimitiveList/finalizers': ['3'] },
  });
  t.strictSame(apply['metadata']['finalizers'], ['4', '2', '1']);
  const serverOnly = smp('V1Namespace', { metadata: { finalizers: ['1', '4', '2'] } }, { metadata: { '$setElementOrder/finalizers': ['3', '1', '2'], finalizers: ['3'] } });
  t.strictSame(serverOnly['metadata']['finalizers'], ['3', '1', '4', '2'], 'a server-only scalar keeps its place');
  t.strictSame(smp('V1Namespace', { metadata: { name: 'n' } }, { metadata: { '$deleteFromPrimitiveList/finalizers': ['a'] } })['metadata'], { name: 'n' }, 'deleting from a missing list adds nothing');
  t.throws(() => smp('V1Namespace', live, { metadata: { '$deleteFromPrimitiveList/finalizers': 'c' } }), { name: 'StrategicPatchError', message: /invalid patch format of primitive list/ });
  t.throws(() => smp('V1Namespace', live, { metadata: { $deleteFromPrimitiveList: ['c'] } }), { message: /invalid patch format of primitive list/ }, 'the directive needs "/<field>"');
});

t.test('lists without a patch strategy are replaced whole (atomic), scalars or objects', async (t) => {
  const live = pod([{ name: 'a', args: ['--x', '--y'], command: ['run'] }], { tolerations: [{ key: 'k1', operator: 'Exists' }, { key: 'k2', operator: 'Exists' }] });
  const out = smp('V1Pod', live, { spec: { tolerations: [{ key: 'k3', operator: 'Exists' }], containers: [{ name: 'a', args: ['--z'] }] } });
  t.strictSame(out['spec']['tolerations'], [{ key: 'k3', operator: 'Exists' }]);
  t.strictSame(out['spec']['containers'][0], { name: 'a', args: ['--z'], command: ['run'] });
  const svc = smp('V1Service', { spec: { ipFamilies: ['IPv4', 'IPv6'], externalIPs: ['1.2.3.4'] } }, { spec: { ipFamilies: ['IPv6'], externalIPs: ['5.6.7.8'] } });
  t.strictSame(svc['spec'], { ipFamilies: ['IPv6'], externalIPs: ['5.6.7.8'] });
  const dep = smp('V1Deployment', { spec: { selector: { matchExpressions: [{ key: 'a', operator: 'Exists' }] } } }, { spec: { selector: { matchExpressions: [{ key: 'b', operator: 'Exists' }] } } });
  t.strictSame(dep['spec']['selector']['matchExpressions'], [{ key: 'b', operator: 'Exists' }], 'LabelSelector.matchExpressions is atomic');
});

t.test('EndpointSlice endpoints and ports are atomic (+listType=atomic, no patch strategy) upstream too', async (t) => {
  const live = {
    addressType: 'IPv4',
    endpoints: [{ addresses: ['10.0.0.1'], conditions: { ready: true } }, { addresses: ['10.0.0.2'] }],
    ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
  };
  const out = smp('V1EndpointSlice', live, { endpoints: [{ addresses: ['10.0.0.3'] }], ports: [{ name: 'https', port: 443 }] });
  t.strictSame(out, { addressType: 'IPv4', endpoints: [{ addresses: ['10.0.0.3'] }], ports: [{ name: 'https', port: 443 }] });
  t.equal(PATCH_STRATEGIES['V1EndpointSlice'], undefined);
  t.equal(PATCH_STRATEGIES['V1Endpoint'], undefined);
});

t.test('Deployment spec.template.spec.containers merge by name, two levels down', async (t) => {
  const live = {
    metadata: { name: 'd', labels: { app: 'd' } },
    spec: {
      replicas: 1,
      template: {
        metadata: { labels: { app: 'd' } },
        spec: {
          containers: [
            { name: 'app', image: 'app:1', env: [{ name: 'LOG', value: 'info' }] },
            { name: 'proxy', image: 'envoy:1' },
          ],
        },
      },
    },
  };
  const out = smp('V1Deployment', live, {
    spec: { template: { metadata: { annotations: { restartedAt: 'now' } }, spec: { containers: [{ name: 'app', image: 'app:2', env: [{ name: 'LOG', value: 'debug' }] }] } } },
  });
  t.strictSame(out['spec']['template']['spec']['containers'], [
    { name: 'app', image: 'app:2', env: [{ name: 'LOG', value: 'debug' }] },
    { name: 'proxy', image: 'envoy:1' },
  ]);
  t.strictSame(out['spec']['template']['metadata'], { labels: { app: 'd' }, annotations: { restartedAt: 'now' } });
  t.equal(out['spec']['replicas'], 1);
});

t.test('nested maps (labels, annotations, nodeSelector) merge key by key; null deletes one key', async (t) => {
  const live = { metadata: { name: 'p', labels: { app: 'web', tier: 'fe' }, annotations: { a: '1' } }, spec: { nodeSelector: { zone: 'a' } } };
  const out = smp('V1Pod', live, { metadata: { labels: { tier: null, version: 'v2' }, annotations: { a: '2' } }, spec: { nodeSelector: { disk: 'ssd' } } });
  t.strictSame(out['metadata'], { name: 'p', labels: { app: 'web', version: 'v2' }, annotations: { a: '2' } });
  t.strictSame(out['spec']['nodeSelector'], { zone: 'a', disk: 'ssd' });
  const proto = smp('V1Pod', live, JSON.parse('{"metadata":{"labels":{"__proto__":"x"}}}'));
  t.ok(Object.prototype.hasOwnProperty.call(proto['metadata']['labels'], '__proto__'), 'a "__proto__" label is data');
  t.equal(Object.getPrototypeOf(proto['metadata']['labels']), Object.prototype);
});

t.test('null removes a key; nulls inside a value the patch adds whole are dropped', async (t) => {
  const live = service([{ port: 80 }]);
  const out = smp('V1Service', live, { spec: { clusterIP: null, selector: null, nope: null } });
  t.strictSame(out['spec'], { type: 'ClusterIP', ports: [{ port: 80 }] });
  const added = smp('V1Pod', { spec: {} }, { spec: { securityContext: { runAsUser: 1000, runAsGroup: null, sysctls: [{ name: 'a', value: null }] } } });
  t.strictSame(added['spec']['securityContext'], { runAsUser: 1000, sysctls: [{ name: 'a' }] });
});

t.test('a value of another JSON type, or a new one, is the patch value less its directives', async (t) => {
  const out = smp('V1Pod', { spec: { containers: 'oops', nodeSelector: ['x'] } }, { spec: { containers: [{ name: 'a' }], nodeSelector: { a: 'b' } } });
  t.strictSame(out['spec'], { containers: [{ name: 'a' }], nodeSelector: { a: 'b' } });
  const fresh = smp('V1Pod', { spec: {} }, {
    spec: {
      containers: [{ name: 'a', env: [{ name: 'X', $patch: 'delete' }, { name: 'Y', value: 'y' }] }, { $patch: 'replace' }],
      volumes: [{ name: 'v', $retainKeys: ['name', 'emptyDir'], emptyDir: {} }],
    },
  });
  t.strictSame(fresh['spec'], { containers: [{ name: 'a', env: [{ name: 'Y', value: 'y' }] }], volumes: [{ name: 'v', emptyDir: {} }] });
  // Upstream drops a new map carrying `$patch: replace`; we keep what it asks for.
  t.strictSame(smp('V1Pod', { spec: {} }, { spec: { nodeSelector: { $patch: 'replace', a: 'b' } } })['spec'], { nodeSelector: { a: 'b' } });
});

t.test('metadata.ownerReferences merge by uid', async (t) => {
  const live = { metadata: { name: 'rs', ownerReferences: [{ uid: 'u1', kind: 'Deployment', name: 'd', controller: true }] } };
  const out = smp('V1ReplicaSet', live, { metadata: { ownerReferences: [{ uid: 'u1', blockOwnerDeletion: true }, { uid: 'u2', kind: 'Foo', name: 'f' }] } });
  t.strictSame(out['metadata']['ownerReferences'], [
    { uid: 'u1', kind: 'Deployment', name: 'd', controller: true, blockOwnerDeletion: true },
    { uid: 'u2', kind: 'Foo', name: 'f' },
  ]);
});

t.test('status lists: Pod conditions merge by type, Node addresses by type', async (t) => {
  const live = { status: { conditions: [{ type: 'Ready', status: 'False' }, { type: 'PodScheduled', status: 'True' }] } };
  const out = smp('V1Pod', live, { status: { conditions: [{ type: 'Ready', status: 'True' }] } });
  t.strictSame(out['status']['conditions'], [{ type: 'Ready', status: 'True' }, { type: 'PodScheduled', status: 'True' }]);
  const node = smp('V1Node', { status: { addresses: [{ type: 'InternalIP', address: '10.0.0.1' }, { type: 'Hostname', address: 'n1' }] } }, { status: { addresses: [{ type: 'InternalIP', address: '10.0.0.2' }] } });
  t.strictSame(node['status']['addresses'], [{ type: 'InternalIP', address: '10.0.0.2' }, { type: 'Hostname', address: 'n1' }]);
});

t.test('the inputs are not modified', async (t) => {
  const live = pod([{ name: 'app', env: [{ name: 'A', value: '1' }] }], { nodeSelector: { a: 'b' } });
  const patch = { spec: { containers: [{ name: 'app', env: [{ name: 'A', $patch: 'delete' }] }, { name: 'new', env: [{ name: 'B', value: null }] }], nodeSelector: { a: null } } };
  const before = structuredClone(live);
  const patchBefore = structuredClone(patch);
  const out = smp('V1Pod', live, patch);
  t.strictSame(live, before);
  t.strictSame(patch, patchBefore);
  t.not(out['spec'], live['spec']);
  t.strictSame(out['spec']['containers'], [{ name: 'app', env: [] }, { name: 'new', env: [{ name: 'B' }] }]);
});

t.test('a non-object original is patched as {}', async (t) => {
  t.strictSame(smp('V1Pod', null, { metadata: { name: 'a' } }), { metadata: { name: 'a' } });
  t.strictSame(smp('V1Pod', 'x', {}), {});
});

t.test('errors: StrategicPatchError for a patch that is not an object and for bad directives', async (t) => {
  const live = pod([{ name: 'a' }]);
  for (const p of [[], 'x', 1, null, true]) t.throws(() => smp('V1Pod', live, p), { name: 'StrategicPatchError', message: 'a strategic merge patch must be a JSON object' }, JSON.stringify(p));
  t.throws(() => smp('V1Pod', live, { spec: { $patch: 'bogus' } }), { message: /^unknown patch type: bogus in map/ });
  t.throws(() => smp('V1Pod', live, { spec: { containers: [{ name: 'a', $patch: 'bogus' }] } }), { message: /^unknown patch type: bogus in map/ });
  t.throws(() => smp('V1Pod', live, { spec: { containers: [{ $patch: 'merge' }] } }), { message: 'merging lists cannot yet be specified in the patch' });
  t.throws(() => smp('V1Pod', live, { spec: { containers: [{ image: 'no-name' }] } }), { message: /does not contain declared merge key: name/ });
  t.throws(() => smp('V1Pod', live, { spec: { '$setElementOrder/containers': { name: 'a' } } }), { message: /invalid patch format of setElementOrder list/ });
  t.throws(() => smp('V1Pod', live, { spec: { $setElementOrder: [] } }), { message: /invalid patch format of setElementOrder list/ });
  t.throws(() => smp('V1Namespace', { metadata: { finalizers: ['a'] } }, { metadata: { finalizers: [1] } }), { message: /list element types are not identical/ });
  t.throws(() => smp('V1Namespace', { metadata: { finalizers: ['a'] } }, { metadata: { finalizers: [{ $patch: 'replace' }, 'b'] } }), { message: /list element types are not identical/ }, 'upstream has no replace directive for lists of scalars');
  t.throws(() => smp('V1Namespace', { metadata: { finalizers: ['a'] } }, { metadata: { finalizers: [['a']] } }), { message: /lists of lists are not supported/ });
  t.throws(() => smp('V1Pod', live, { spec: { containers: ['a'] } }), { message: /list element types are not identical/ });
  const err = (() => {
    try {
      smp('V1Pod', live, { spec: { $patch: 'x' } });
    } catch (e) {
      return e;
    }
    return undefined;
  })();
  t.ok(err instanceof StrategicPatchError && err instanceof Error);
});

t.test('PATCH_STRATEGIES names list fields of its models (and agrees with the upstream tags checked here)', async (t) => {
  const all = await loadSchemas(Object.keys(PATCH_STRATEGIES));
  for (const [model, fields] of Object.entries(PATCH_STRATEGIES)) {
    for (const [f, s] of Object.entries(fields)) {
      const type = all.get(model)?.fields.get(f)?.type;
      t.ok(type, `${model}.${f} exists`);
      if (s.merge) t.equal(type?.t, 'array', `${model}.${f} is a list`);
    }
  }
  // Upstream's tags (k8s.io/api core/v1, apps/v1; apimachinery meta/v1).
  t.strictSame(PATCH_STRATEGIES['V1ServiceSpec']?.['ports'], { merge: true, key: 'port' });
  t.strictSame(PATCH_STRATEGIES['V1Container']?.['ports'], { merge: true, key: 'containerPort' });
  t.strictSame(PATCH_STRATEGIES['V1Container']?.['env'], { merge: true, key: 'name' });
  t.strictSame(PATCH_STRATEGIES['V1PodSpec']?.['volumes'], { merge: true, retainKeys: true, key: 'name' });
  t.strictSame(PATCH_STRATEGIES['V1ObjectMeta']?.['finalizers'], { merge: true });
  t.strictSame(PATCH_STRATEGIES['V1DeploymentSpec']?.['strategy'], { retainKeys: true });
  t.strictSame(PATCH_STRATEGIES['V1PodStatus']?.['resourceClaimStatuses'], { merge: true, retainKeys: true, key: 'name' });
  t.equal(PATCH_STRATEGIES['V1PodSpec']?.['tolerations'], undefined, 'tolerations are atomic');
  t.equal(PATCH_STRATEGIES['V1PodStatus']?.['containerStatuses'], undefined, 'containerStatuses are atomic');
});
