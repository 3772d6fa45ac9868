/**
 * JSON Patch (RFC 6902, with its Appendix A examples) and JSON Merge Patch
 * (RFC 7386, with its Appendix A examples): every operation, pointers and
 * their escapes, the failures (PatchError), and that the inputs stay as
 * they were.
 */
import t from 'tap';
import { applyJsonPatch, applyMergePatch, PatchError } from './patch.js';

type Asserts = Pick<typeof t, 'throws'>;
/** applyJsonPatch(target, ops) throws a PatchError (whose message matches). */
const fails = (t: Asserts, what: string, target: unknown, ops: unknown, message?: RegExp) =>
  t.throws(() => applyJsonPatch(target, ops), message ? { name: 'PatchError', message } : PatchError, what);

t.test('RFC 6902 Appendix A examples', async (t) => {
  // A.1 Adding an Object Member
  t.strictSame(applyJsonPatch({ foo: 'bar' }, [{ op: 'add', path: '/baz', value: 'qux' }]), { foo: 'bar', baz: 'qux' });
  // A.2 Adding an Array Element
  t.strictSame(applyJsonPatch({ foo: ['bar', 'baz'] }, [{ op: 'add', path: '/foo/1', value: 'qux' }]), { foo: ['bar', 'qux', 'baz'] });
  // A.3 Removing an Object Member
  t.strictSame(applyJsonPatch({ baz: 'qux', foo: 'bar' }, [{ op: 'remove', path: '/baz' }]), { foo: 'bar' });
  // A.4 Removing an Array Element
  t.strictSame(applyJsonPatch({ foo: ['bar', 'qux', 'baz'] }, [{ op: 'remove', path: '/foo/1' }]), { foo: ['bar', 'baz'] });
  // A.5 Replacing a Value
  t.strictSame(applyJsonPatch({ baz: 'qux', foo: 'bar' }, [{ op: 'replace', path: '/baz', value: 'boo' }]), { baz: 'boo', foo: 'bar' });
  // A.6 Moving a Value
  t.strictSame(
    applyJsonPatch({ foo: { bar: 'baz', waldo: 'fred' }, qux: { corge: 'grault' } }, [{ op: 'move', from: '/foo/waldo', path: '/qux/thud' }]),
    { foo: { bar: 'baz' }, qux: { corge: 'grault', thud: 'fred' } },
  );
  // A.7 Moving an Array Element
  t.strictSame(applyJsonPatch({ foo: ['all', 'grass', 'cows', 'eat'] }, [{ op: 'move', from: '/foo/1', path: '/foo/3' }]), { foo: ['all', 'cows', 'eat', 'grass'] });
  // A.8 Testing a Value: Success
  const doc = { baz: 'qux', foo: ['a', 2, 'c'] };
  t.strictSame(applyJsonPatch(doc, [{ op: 'test', path: '/baz', value: 'qux' }, { op: 'test', path: '/foo/1', value: 2 }]), doc);
  // A.9 Testing a Value: Error
  t.throws(() => applyJsonPatch({ baz: 'qux' }, [{ op: 'test', path: '/baz', value: 'bar' }]), { name: 'PatchError', message: 'testing value /baz failed' });
  // A.10 Adding a Nested Member Object
  t.strictSame(applyJsonPatch({ foo: 'bar' }, [{ op: 'add', path: '/child', value: { grandchild: {} } }]), { foo: 'bar', child: { grandchild: {} } });
  // A.11 Ignoring Unrecognized Elements
  t.strictSame(applyJsonPatch({ foo: 'bar' }, [{ op: 'add', path: '/baz', value: 'qux', xyz: 123 }]), { foo: 'bar', baz: 'qux' });
  // A.12 Adding to a Nonexistent Target
  t.throws(() => applyJsonPatch({ foo: 'bar' }, [{ op: 'add', path: '/baz/bat', value: 'qux' }]), { name: 'PatchError', message: /missing path "\/baz\/bat"/ });
  // A.14 ~ Escape Ordering
  t.strictSame(applyJsonPatch({ '/': 9, '~1': 10 }, [{ op: 'test', path: '/~01', value: 10 }]), { '/': 9, '~1': 10 });
  t.strictSame(applyJsonPatch({ '/': 9, '~1': 10 }, [{ op: 'test', path: '/~1', value: 9 }]), { '/': 9, '~1': 10 });
  // A.15 Comparing Strings and Numbers
  t.throws(() => applyJsonPatch({ '/': 9, '~1': 10 }, [{ op: 'test', path: '/~01', value: '10' }]), { message: 'testing value /~01 failed' });
  // A.16 Adding an Array Value
  t.strictSame(applyJsonPatch({ foo: ['bar'] }, [{ op: 'add', path: '/foo/-', value: ['abc', 'def'] }]), { foo: ['bar', ['abc', 'def']] });
});

t.test('the Kubernetes shapes: replicas, an annotation key with "/", a label removed', async (t) => {
  const dep = { metadata: { name: 'd', labels: { app: 'd', old: 'x' }, annotations: {} }, spec: { replicas: 1 } };
  const out = applyJsonPatch(dep, [
    { op: 'replace', path: '/spec/replicas', value: 3 },
    { op: 'add', path: '/metadata/annotations/example.com~1owner', value: 'me' },
    { op: 'remove', path: '/metadata/labels/old' },
    { op: 'test', path: '/metadata/labels', value: { app: 'd' } },
  ]);
  t.strictSame(out, { metadata: { name: 'd', labels: { app: 'd' }, annotations: { 'example.com/owner': 'me' } }, spec: { replicas: 3 } });
});

t.test('add: object members replace, array indexes insert, "-" appends, the root is replaced', async (t) => {
  t.strictSame(applyJsonPatch({ a: 1 }, [{ op: 'add', path: '/a', value: 2 }]), { a: 2 }, 'add over an existing member replaces it');
  t.strictSame(applyJsonPatch([1, 2], [{ op: 'add', path: '/2', value: 3 }]), [1, 2, 3], 'index == length appends');
  t.strictSame(applyJsonPatch([1, 2], [{ op: 'add', path: '/0', value: 0 }]), [0, 1, 2]);
  t.strictSame(applyJsonPatch([1], [{ op: 'add', path: '/-', value: 2 }]), [1, 2]);
  t.strictSame(applyJsonPatch({ a: 1 }, [{ op: 'add', path: '/-', value: 2 }]), { a: 1, '-': 2 }, '"-" is an ordinary member name in an object');
  t.strictSame(applyJsonPatch({ a: 1 }, [{ op: 'add', path: '', value: [1] }]), [1]);
  t.strictSame(applyJsonPatch({ a: 1 }, [{ op: 'add', path: '/', value: 'empty key' }]), { a: 1, '': 'empty key' }, '"/" names the "" member');
  t.strictSame(applyJsonPatch({ a: null }, [{ op: 'add', path: '/a', value: null }]), { a: null }, 'null is a value');
  fails(t, 'past the end', [1, 2], [{ op: 'add', path: '/3', value: 9 }], /array index 3 out of bounds/);
  fails(t, 'into a scalar', { a: 1 }, [{ op: 'add', path: '/a/b', value: 9 }], /the parent is not an object or array/);
  fails(t, 'without a value', {}, [{ op: 'add', path: '/a' }], /missing "value"/);
});

t.test('remove and replace need the target to exist', async (t) => {
  t.strictSame(applyJsonPatch({ a: { b: 1, c: 2 } }, [{ op: 'remove', path: '/a/b' }]), { a: { c: 2 } });
  t.strictSame(applyJsonPatch({ a: [1, 2, 3] }, [{ op: 'replace', path: '/a/1', value: 'x' }]), { a: [1, 'x', 3] });
  t.strictSame(applyJsonPatch({ a: 1 }, [{ op: 'replace', path: '', value: { b: 2 } }]), { b: 2 }, 'replace the root');
  fails(t, 'remove a missing member', { a: 1 }, [{ op: 'remove', path: '/b' }], /does not exist/);
  fails(t, 'replace a missing member', { a: 1 }, [{ op: 'replace', path: '/b', value: 1 }], /missing path "\/b"/);
  fails(t, 'remove past the end', [1], [{ op: 'remove', path: '/1' }], /out of bounds/);
  fails(t, 'remove "-"', [1], [{ op: 'remove', path: '/-' }], /invalid array index "-"/);
  fails(t, 'replace "-"', [1], [{ op: 'replace', path: '/-', value: 2 }], /invalid array index "-"/);
  fails(t, 'remove the root', { a: 1 }, [{ op: 'remove', path: '' }], /the root cannot be the target/);
  fails(t, 'replace without a value', { a: 1 }, [{ op: 'replace', path: '/a' }], /missing "value"/);
});

t.test('move and copy', async (t) => {
  t.strictSame(applyJsonPatch({ a: { x: 1 }, b: {} }, [{ op: 'copy', from: '/a', path: '/b/y' }]), { a: { x: 1 }, b: { y: { x: 1 } } });
  const copied = applyJsonPatch({ a: { x: 1 } }, [{ op: 'copy', from: '/a', path: '/b' }, { op: 'replace', path: '/b/x', value: 2 }]) as { a: { x: number }; b: { x: number } };
  t.equal(copied.a.x, 1, 'a copy is a copy, not a reference');
  t.strictSame(applyJsonPatch({ a: [1, 2] }, [{ op: 'copy', from: '/a/0', path: '/a/-' }]), { a: [1, 2, 1] });
  t.strictSame(applyJsonPatch({ a: 1 }, [{ op: 'move', from: '/a', path: '/a' }]), { a: 1 }, 'moving onto itself changes nothing');
  t.strictSame(applyJsonPatch({ a: { b: 1 } }, [{ op: 'move', from: '/a', path: '/ab' }]), { ab: { b: 1 } }, '"/ab" is not a child of "/a"');
  fails(t, 'move into its own child', { a: { b: 1 } }, [{ op: 'move', from: '/a', path: '/a/b/c' }], /cannot move \/a into its own child/);
  fails(t, 'move from nowhere', { a: 1 }, [{ op: 'move', from: '/x', path: '/y' }], /missing path "\/x"/);
  fails(t, 'copy without from', { a: 1 }, [{ op: 'copy', path: '/y' }], /missing "from"/);
  fails(t, 'from that is not a string', { a: 1 }, [{ op: 'copy', from: 1, path: '/y' }], /"from" must be a string/);
});

t.test('test compares JSON values: object members in any order, arrays in order', async (t) => {
  const doc = { o: { a: 1, b: [1, { c: 2 }] }, n: null };
  t.strictSame(applyJsonPatch(doc, [{ op: 'test', path: '/o', value: { b: [1, { c: 2 }], a: 1 } }]), doc);
  t.strictSame(applyJsonPatch(doc, [{ op: 'test', path: '/n', value: null }]), doc);
  t.strictSame(applyJsonPatch(doc, [{ op: 'test', path: '', value: { n: null, o: { a: 1, b: [1, { c: 2 }] } } }]), doc, 'the whole document');
  fails(t, 'array order matters', doc, [{ op: 'test', path: '/o/b', value: [{ c: 2 }, 1] }], /testing value \/o\/b failed/);
  fails(t, 'a missing member fails', doc, [{ op: 'test', path: '/nope', value: null }], /missing path/);
  fails(t, 'a failing test aborts the whole patch', doc, [{ op: 'add', path: '/x', value: 1 }, { op: 'test', path: '/n', value: 0 }]);
});

t.test('pointers: escapes, bad syntax, indexes, and only own members', async (t) => {
  t.strictSame(applyJsonPatch({ 'a/b': { 'c~d': 1 } }, [{ op: 'replace', path: '/a~1b/c~0d', value: 2 }]), { 'a/b': { 'c~d': 2 } });
  t.strictSame(applyJsonPatch({ '~01': 1 }, [{ op: 'remove', path: '/~001' }]), {}, '"~001" is "~01": ~0 is decoded after ~1');
  t.strictSame(applyJsonPatch({ 0: 'x' }, [{ op: 'replace', path: '/0', value: 'y' }]), { 0: 'y' }, 'a number-like member of an object');
  fails(t, 'no leading slash', { a: 1 }, [{ op: 'add', path: 'a', value: 1 }], /must start with "\/"/);
  fails(t, 'a leading zero', [1, 2], [{ op: 'replace', path: '/01', value: 1 }], /invalid array index "01"/);
  fails(t, 'a negative index', [1, 2], [{ op: 'replace', path: '/-1', value: 1 }], /invalid array index "-1"/);
  fails(t, '"-" in the middle', { a: [[1]] }, [{ op: 'add', path: '/a/-/0', value: 1 }], /invalid array index "-"/);
  fails(t, 'inherited members are not members', {}, [{ op: 'test', path: '/constructor', value: null }], /missing path/);
  fails(t, 'nor parents', {}, [{ op: 'add', path: '/toString/x', value: 1 }], /missing path/);
  fails(t, 'nor removable', {}, [{ op: 'remove', path: '/hasOwnProperty' }], /does not exist/);
  const proto = applyJsonPatch({}, [{ op: 'add', path: '/__proto__', value: { polluted: true } }]) as Record<string, unknown>;
  t.ok(Object.prototype.hasOwnProperty.call(proto, '__proto__'), '"__proto__" becomes an own member');
  t.equal(Object.getPrototypeOf(proto), Object.prototype, 'and not the prototype');
  t.equal((proto as { polluted?: boolean }).polluted, undefined);
});

t.test('malformed patches are PatchErrors', async (t) => {
  fails(t, 'not an array', {}, { op: 'add', path: '/a', value: 1 }, /must be an array of operations/);
  fails(t, 'an operation that is not an object', {}, ['add'], /operation 0: needs "op" and "path"/);
  fails(t, 'no path', {}, [{ op: 'add', value: 1 }], /needs "op" and "path"/);
  fails(t, 'a path that is not a string', {}, [{ op: 'add', path: 1, value: 1 }], /needs "op" and "path"/);
  fails(t, 'an unknown op', {}, [{ op: 'merge', path: '/a', value: 1 }], /operation 0: unknown op "merge"/);
  fails(t, 'the index of the failing operation is named', { a: 1 }, [{ op: 'test', path: '/a', value: 1 }, { op: 'bogus', path: '/a' }], /^operation 1: /);
  t.strictSame(applyJsonPatch({ a: 1 }, []), { a: 1 }, 'an empty patch is the identity');
});

t.test('applyJsonPatch modifies neither the target nor the patch', async (t) => {
  const target = { a: { b: [1, 2] }, c: 'x' };
  const ops = [
    { op: 'add', path: '/a/b/-', value: { deep: [1] } },
    { op: 'move', from: '/c', path: '/d' },
    { op: 'remove', path: '/a/b/0' },
  ];
  const before = structuredClone(target);
  const opsBefore = structuredClone(ops);
  const out = applyJsonPatch(target, ops) as { a: { b: Array<number | { deep: number[] }> }; d: string };
  t.strictSame(out, { a: { b: [2, { deep: [1] }] }, d: 'x' });
  t.strictSame(target, before);
  (out.a.b[1] as { deep: number[] }).deep.push(2);
  t.strictSame(ops, opsBefore, 'the result does not share the patch values');
  t.throws(() => applyJsonPatch(target, [{ op: 'remove', path: '/c' }, { op: 'test', path: '/c', value: 'x' }]));
  t.strictSame(target, before, 'nor does a failed patch');
});

t.test('RFC 7386 Appendix A examples', async (t) => {
  const cases: Array<[unknown, unknown, unknown]> = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [['a', 'b'], ['c', 'd'], ['c', 'd']],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  for (const [target, patch, want] of cases) t.strictSame(applyMergePatch(target, patch), want, `${JSON.stringify(target)} + ${JSON.stringify(patch)}`);
});

t.test('merge patch: nulls delete, arrays (Service ports) are replaced whole, nested objects merge', async (t) => {
  const svc = { metadata: { name: 's', labels: { a: '1', b: '2' } }, spec: { ports: [{ port: 80 }, { port: 443 }], type: 'ClusterIP' } };
  const out = applyMergePatch(svc, { metadata: { labels: { b: null, c: '3' } }, spec: { ports: [{ port: 8080 }] } });
  t.strictSame(out, { metadata: { name: 's', labels: { a: '1', c: '3' } }, spec: { ports: [{ port: 8080 }], type: 'ClusterIP' } });
  t.strictSame(applyMergePatch(svc, {}), svc, 'an empty patch changes nothing');
  t.strictSame(applyMergePatch(undefined, { a: 1 }), { a: 1 });
  t.strictSame(applyMergePatch({ a: 1 }, { b: { c: null, d: [null] } }), { a: 1, b: { d: [null] } }, 'null inside an array is a value');
});

t.test('merge patch: the inputs are not modified; "__proto__" is data', async (t) => {
  const target = { a: { b: 1 }, l: [1] };
  const patch = { a: { c: { d: 1 } }, l: [2] };
  const before = structuredClone(target);
  const patchBefore = structuredClone(patch);
  const out = applyMergePatch(target, patch) as { a: { c: { d: number } }; l: number[] };
  out.a.c.d = 9;
  out.l.push(3);
  t.strictSame(target, before);
  t.strictSame(patch, patchBefore);
  const proto = applyMergePatch({}, JSON.parse('{"__proto__":{"x":1}}')) as Record<string, unknown>;
  t.ok(Object.prototype.hasOwnProperty.call(proto, '__proto__'));
  t.equal(Object.getPrototypeOf(proto), Object.prototype);
  t.strictSame(JSON.parse(JSON.stringify(proto)), JSON.parse('{"__proto__":{"x":1}}'));
});
