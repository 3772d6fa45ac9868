import t from 'tap';
import { diffObjects, isManifestFile, mergeFiles, parseManifestFile, ManifestError, type ManifestObject } from './manifest-diff.js';

const KINDS = new Set(['Service', 'EndpointSlice']);
const svc = (name: string, extra: Record<string, unknown> = {}) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default' }, spec: { clusterIP: '10.96.0.10', ...extra } });

t.test('one object, an array, and a List; other kinds skipped; namespace defaults to "default"', async (t) => {
  const one = parseManifestFile('a.json', JSON.stringify(svc('web')), KINDS);
  t.equal(one.objects.length, 1);
  t.match(one.objects[0], { kind: 'Service', namespace: 'default', name: 'web', file: 'a.json' });

  const arr = parseManifestFile('b.json', JSON.stringify([svc('a'), { kind: 'ConfigMap', metadata: { name: 'x' } }]), KINDS);
  t.same(arr.objects.map((o) => o.name), ['a']);
  t.equal(arr.skipped, 1);

  const list = parseManifestFile('c.json', JSON.stringify({ kind: 'List', items: [{ kind: 'EndpointSlice', metadata: { name: 'web-1' } }] }), KINDS);
  t.match(list.objects[0], { kind: 'EndpointSlice', namespace: 'default', name: 'web-1' });
  t.equal((list.objects[0]!.object['metadata'] as { namespace: string }).namespace, 'default', 'the object handed on carries the defaulted namespace');
});

t.test('malformed files name the file, the item and the field', async (t) => {
  t.throws(() => parseManifestFile('bad.json', '{"kind": "Service",', KINDS), { name: 'ManifestError', message: /^bad\.json: not valid JSON/ });
  t.throws(() => parseManifestFile('k.json', '{"metadata": {"name": "a"}}', KINDS), { message: 'k.json: kind: required' });
  t.throws(() => parseManifestFile('n.json', JSON.stringify([svc('a'), { kind: 'Service', metadata: {} }]), KINDS), { message: 'n.json: item 1: metadata.name: required' });
  t.throws(() => parseManifestFile('s.json', '[1]', KINDS), { message: 's.json: item 0: must be a JSON object' });
  t.throws(() => parseManifestFile('ns.json', JSON.stringify({ kind: 'Service', metadata: { name: 'a', namespace: '' } }), KINDS), ManifestError);
});

t.test('merge: the first file (by name) wins a duplicate, the other is reported', async (t) => {
  const a = parseManifestFile('a.json', JSON.stringify(svc('web')), KINDS).objects;
  const b = parseManifestFile('b.json', JSON.stringify([svc('web', { clusterIP: '10.96.0.11' }), svc('db')]), KINDS).objects;
  const { view, errors } = mergeFiles(new Map([['b.json', b], ['a.json', a]]));
  t.same([...view.keys()].sort(), ['Service/default/db', 'Service/default/web']);
  t.equal(view.get('Service/default/web')!.file, 'a.json');
  t.equal(errors.length, 1);
  t.match(errors[0]!.message, /^b\.json: Service default\/web is already defined in a\.json/);
});

t.test('diff: adds, updates only on a real change, deletes with the last known object', async (t) => {
  const parse = (...objs: Record<string, unknown>[]) => mergeFiles(new Map([['f.json', parseManifestFile('f.json', JSON.stringify(objs), KINDS).objects]])).view;
  const v1 = parse(svc('a'), svc('b'));
  const v2 = parse(svc('a'), svc('b', { clusterIP: '10.96.0.99' }), svc('c'));
  const v3 = parse(svc('b', { clusterIP: '10.96.0.99' }), svc('c'));
  t.same(diffObjects(new Map(), v1).map((e) => `${e.type} ${e.type === 'delete' ? e.prev.name : e.cur.name}`), ['add a', 'add b']);
  const d12 = diffObjects(v1, v2);
  t.same(d12.map((e) => e.type), ['update', 'add']);
  const up = d12[0] as Extract<(typeof d12)[number], { type: 'update' }>;
  t.equal((up.prev.object['spec'] as { clusterIP: string }).clusterIP, '10.96.0.10');
  t.equal((up.cur.object['spec'] as { clusterIP: string }).clusterIP, '10.96.0.99');
  const d23 = diffObjects(v2, v3);
  t.equal(d23.length, 1);
  t.match(d23[0], { type: 'delete', prev: { name: 'a' } as Partial<ManifestObject> });
  t.same(diffObjects(v3, v3), [], 'no change, no events');
});

t.test('YAML: several --- documents, a List among them, empty documents skipped; errors name the file', async (t) => {
  const text = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  clusterIP: 10.96.0.10
  ports:
  - port: 80
    targetPort: 8080
---
kind: List
items:
- kind: EndpointSlice
  metadata: {name: web-1, namespace: shop}
- kind: ConfigMap
  metadata: {name: ignored}
---
`;
  const r = parseManifestFile('web.yaml', text, KINDS);
  t.same(r.objects.map((o) => `${o.kind} ${o.namespace}/${o.name}`), ['Service default/web', 'EndpointSlice shop/web-1']);
  t.equal(r.skipped, 1);
  t.same((r.objects[0]!.object['spec'] as { ports: unknown[] }).ports, [{ port: 80, targetPort: 8080 }], 'numbers stay numbers');
  t.throws(() => parseManifestFile('bad.yml', 'kind: Service\nmetadata: {name: [unclosed\n', KINDS), { message: /^bad\.yml: not valid YAML/ });
  t.throws(() => parseManifestFile('two.yaml', 'kind: Service\nmetadata: {name: a}\n---\nkind: Service\nmetadata: {}\n', KINDS), { message: 'two.yaml: item 1: metadata.name: required' });
  t.equal(parseManifestFile('empty.yaml', '', KINDS).objects.length, 0);
});

t.test('isManifestFile: JSON and YAML, not hidden or temporary files', async (t) => {
  t.same(['a.json', 'b.yaml', 'c.yml', '.a.json.tmp', '.b.yaml', 'd.txt', 'e.json~'].filter(isManifestFile), ['a.json', 'b.yaml', 'c.yml']);
});
