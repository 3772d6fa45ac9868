/**
 * ConfigMaps and Secrets: the v1 decoding of their byte fields (Go's base64), stringData and the Secret type's
 * default, ValidateConfigMap / ValidateSecret and their update rules in kube-apiserver's field-error words, one case
 * per rule (pure); then the REST path: upstream's 400 for a bad base64 value, its 422 for the rest, nothing stored.
 */
import t from 'tap';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import type { FieldError } from '../api/errors.js';
import { RESOURCES } from '../api/resources.js';
import { Rest } from '../api/rest.js';
import { loadSchemas } from '../api/schema.js';
import { failure } from '../testing/control-plane.js';
import { openTestStore } from '../testing/store.js';
import { configKeyProblems, decodeGoBase64, goJsonObjectError } from './configmap.js';
import { STRATEGIES } from './kinds.js';

type O = Record<string, unknown>;
const CM = STRATEGIES['configmaps']!;
const SECRET = STRATEGIES['secrets']!;
const text = (errs: readonly FieldError[]) => errs.map((e) => `${e.field}: ${e.message}`);
const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
const cm = (fields: O): O => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg', namespace: 'default' }, ...fields });
const secret = (fields: O, meta: O = {}): O => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'default', ...meta }, ...fields });
/** Defaults, then validation (create, or update from `old` as it would be stored). */
const check = (S: typeof CM, o: O, old: O | null = null) => {
  const c = structuredClone(o);
  S.defaults(c);
  let was = old;
  if (old) {
    was = structuredClone(old);
    S.defaults(was);
  }
  return text(S.validate(c, was));
};
const KEY_REGEX = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

t.test('IsConfigMapKey: length, characters, . and ..', async (t) => {
  for (const k of ['a', 'key.name', 'KEY_NAME', 'key-name', '.dockercfg', 'a..b', '_', 'x'.repeat(253)]) t.same(configKeyProblems(k), [], k);
  t.same(configKeyProblems('x'.repeat(254)), ['must be no more than 253 characters']);
  t.same(configKeyProblems('a/b'), [KEY_REGEX]);
  t.same(configKeyProblems(''), [KEY_REGEX]);
  t.same(configKeyProblems('.'), ["must not be '.'"]);
  t.same(configKeyProblems('..'), ["must not be '..'"]);
  t.same(configKeyProblems('..data'), ["must not start with '..'"]);
  t.same(configKeyProblems('../etc'), [KEY_REGEX, "must not start with '..'"]);
});

t.test("base64 as Go's StdEncoding decodes it: the bytes, or the offset of its CorruptInputError", async (t) => {
  const ok = (s: string) => {
    const d = decodeGoBase64(s);
    return 'bytes' in d ? d.bytes.toString('latin1') : `bad at ${d.badAt}`;
  };
  t.equal(ok(''), '');
  t.equal(ok('YWJj'), 'abc');
  t.equal(ok('YWI='), 'ab');
  t.equal(ok('YQ=='), 'a');
  t.equal(ok('YW\nJj\r\n'), 'abc', 'CR and LF are skipped');
  t.equal(ok('YQ=\n='), 'a', 'newlines between the padding');
  t.equal(ok('YWJ'), 'bad at 0', 'a short quantum: padding is required');
  t.equal(ok('YWJjZ'), 'bad at 4');
  t.equal(ok('YW*j'), 'bad at 2', 'a byte outside the alphabet');
  t.equal(ok('Y==='), 'bad at 1', 'padding after one symbol');
  t.equal(ok('YQ='), 'bad at 3', 'one = where two are needed');
  t.equal(ok('YQ=x'), 'bad at 2', "Go's offset for a wrong second pad byte");
  t.equal(ok('YWI=YWJj'), 'bad at 4', 'data after the padding');
  t.equal(ok('YWJj YWJj'), 'bad at 4', 'a space is not skipped');
  t.equal(ok('YWJ-'), 'bad at 3', 'URL-safe base64 is not StdEncoding');
});

t.test("goJsonObjectError: json.Unmarshal into a map, in encoding/json's words", async (t) => {
  const e = (s: string) => goJsonObjectError(Buffer.from(s));
  for (const s of ['{}', ' {"auths":{"r.io":{"auth":"eA=="}}} ', 'null', '{"a":[1,-2.5e+3,true,false,null,"\\u00e9\\n"]}']) t.equal(e(s), null, s);
  t.equal(e(''), 'unexpected end of JSON input');
  t.equal(e('{"a":1'), 'unexpected end of JSON input');
  t.equal(e('{"a" 1}'), "invalid character '1' after object key");
  t.equal(e('{"a":1 "b":2}'), "invalid character '\"' after object key:value pair");
  t.equal(e('{a:1}'), "invalid character 'a' looking for beginning of object key string");
  t.equal(e('{"a":}'), "invalid character '}' looking for beginning of value");
  t.equal(e('[1 2]'), "invalid character '2' after array element");
  t.equal(e('{} x'), "invalid character 'x' after top-level value");
  t.equal(e('01'), "invalid character '1' after top-level value");
  t.equal(e('1.'), "invalid character ' ' after decimal point in numeric literal", 'the end is a space fed in, as Go does');
  t.equal(e('-x'), "invalid character 'x' in numeric literal");
  t.equal(e('1e+'), "invalid character ' ' in exponent of numeric literal");
  t.equal(e('tru'), "invalid character ' ' in literal true (expecting 'e')");
  t.equal(e('nul!'), "invalid character '!' in literal null (expecting 'l')");
  t.equal(e('"a\nb"'), "invalid character '\\n' in string literal");
  t.equal(e('"\\x"'), "invalid character 'x' in string escape code");
  t.equal(e('"\\u12g4"'), "invalid character 'g' in \\u hexadecimal character escape");
  t.equal(e("'a'"), "invalid character '\\'' looking for beginning of value");
  t.equal(e('[]'), 'json: cannot unmarshal array into Go value of type map[string]interface {}');
  t.equal(e('"x"'), 'json: cannot unmarshal string into Go value of type map[string]interface {}');
  t.equal(e('12'), 'json: cannot unmarshal number into Go value of type map[string]interface {}');
  t.equal(e('true'), 'json: cannot unmarshal bool into Go value of type map[string]interface {}');
});

t.test('ConfigMap: valid data and binaryData', async (t) => {
  t.same(check(CM, cm({ data: { 'app.properties': 'a=1\n', KEY_NAME: 'é' }, binaryData: { 'logo.png': b64(Buffer.from([0, 255, 1])) } })), []);
  t.same(check(CM, cm({})), [], 'no data at all');
});

t.test('ConfigMap: keys, a key in both maps, the 1 MiB limit at []', async (t) => {
  t.same(check(CM, cm({ data: { 'a/b': 'x', '..x': 'y' } })), [`data[..x]: Invalid value: "..x": must not start with '..'`, `data[a/b]: Invalid value: "a/b": ${KEY_REGEX}`]);
  t.same(check(CM, cm({ binaryData: { '.': b64('x') } })), [`binaryData[.]: Invalid value: ".": must not be '.'`]);
  t.same(check(CM, cm({ data: { k: 'x' }, binaryData: { k: b64('y') } })), ['data[k]: Invalid value: "k": duplicate of key present in binaryData']);
  const half = 'x'.repeat(512 * 1024);
  t.same(check(CM, cm({ data: { a: half }, binaryData: { b: b64(half) } })), [], 'exactly 1 MiB across both maps');
  t.same(check(CM, cm({ data: { a: half, c: 'y' }, binaryData: { b: b64(half) } })), ['[]: Too long: may not be more than 1048576 bytes'], 'one byte more');
  t.same(check(CM, cm({ data: { a: 'é'.repeat(512 * 1024 + 1) } })), ['[]: Too long: may not be more than 1048576 bytes'], 'data counted in UTF-8 bytes');
});

t.test('ConfigMap update: immutable keeps the flag, data and binaryData', async (t) => {
  const old = cm({ data: { a: '1' }, binaryData: { b: b64('2') }, immutable: true });
  t.same(check(CM, { ...old, metadata: { name: 'cfg', namespace: 'default', labels: { x: 'y' } } }, old), [], 'metadata may change');
  t.same(check(CM, { ...old, data: { a: '2' } }, old), ['data: Forbidden: field is immutable when `immutable` is set']);
  t.same(check(CM, { ...old, binaryData: {} }, old), ['binaryData: Forbidden: field is immutable when `immutable` is set']);
  t.same(check(CM, { ...old, immutable: false }, old), ['immutable: Forbidden: field is immutable when `immutable` is set']);
  const noFlag = { ...old };
  delete noFlag['immutable'];
  t.same(check(CM, { ...noFlag, data: { a: '3' } }, old), ['immutable: Forbidden: field is immutable when `immutable` is set', 'data: Forbidden: field is immutable when `immutable` is set']);
  const mutable = cm({ data: { a: '1' } });
  t.same(check(CM, { ...mutable, data: { a: '2' }, immutable: true }, mutable), [], 'a mutable one may change and become immutable in one update');
  t.same(check(CM, { ...mutable, data: { a: '2' }, immutable: false }, { ...mutable, immutable: false }), [], 'immutable: false is mutable');
});

t.test('Secret: stringData merged into data (overwriting) and dropped; type defaulted to Opaque; data canonical', async (t) => {
  const o = secret({ data: { a: 'YWFh', b: 'Y\nmJi' }, stringData: { b: 'over', c: 'é' } });
  SECRET.defaults(o);
  t.same(o, secret({ data: { a: 'YWFh', b: b64('over'), c: b64('é') }, type: 'Opaque' }));
  const n = secret({ stringData: { x: 'y' }, type: 'kubernetes.io/basic-auth' });
  SECRET.defaults(n);
  t.same(n, secret({ data: { x: b64('y') }, type: 'kubernetes.io/basic-auth' }), 'data made when missing; a type kept');
  const c = secret({ data: { a: 'YW\r\nFh' } });
  SECRET.defaults(c);
  t.same(c['data'], { a: 'YWFh' }, 'stored as Go writes []byte back');
});

t.test('Secret: keys and the 1 MiB limit at data', async (t) => {
  t.same(check(SECRET, secret({ data: { 'a b': b64('x') } })), [`data[a b]: Invalid value: "a b": ${KEY_REGEX}`]);
  t.same(check(SECRET, secret({ stringData: { '..a': 'x' } })), [`data[..a]: Invalid value: "..a": must not start with '..'`], 'stringData keys are data keys');
  t.same(check(SECRET, secret({ data: { a: b64(Buffer.alloc(MiB())) } })), [], 'exactly 1 MiB (decoded)');
  t.same(check(SECRET, secret({ data: { a: b64(Buffer.alloc(MiB())), b: b64('x') } })), ['data: Too long: may not be more than 1048576 bytes']);
});
const MiB = () => 1024 * 1024;

t.test('Secret types: what each requires', async (t) => {
  const typed = (type: string, data: O, meta: O = {}) => check(SECRET, secret({ type, data }, meta));
  t.same(typed('kubernetes.io/service-account-token', {}), ['metadata.annotations[kubernetes.io/service-account.name]: Required value']);
  t.same(typed('kubernetes.io/service-account-token', {}, { annotations: { 'kubernetes.io/service-account.name': 'default' } }), []);
  t.same(typed('kubernetes.io/dockercfg', {}), ['data[.dockercfg]: Required value']);
  t.same(typed('kubernetes.io/dockercfg', { '.dockercfg': b64('{"r.io":{"auth":"eA=="}}') }), []);
  t.same(typed('kubernetes.io/dockercfg', { '.dockercfg': b64('{"r.io":') }), ['data[.dockercfg]: Invalid value: "<secret contents redacted>": unexpected end of JSON input']);
  t.same(typed('kubernetes.io/dockerconfigjson', { '.dockercfg': b64('{}') }), ['data[.dockerconfigjson]: Required value']);
  t.same(typed('kubernetes.io/dockerconfigjson', { '.dockerconfigjson': b64('{"auths":{}}') }), []);
  t.same(typed('kubernetes.io/dockerconfigjson', { '.dockerconfigjson': b64('[]') }), ['data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": json: cannot unmarshal array into Go value of type map[string]interface {}']);
  t.same(typed('kubernetes.io/basic-auth', {}), ['data[username]: Required value', 'data[password]: Required value']);
  t.same(typed('kubernetes.io/basic-auth', { password: '' }), [], 'either may be there, even empty');
  t.same(typed('kubernetes.io/ssh-auth', { 'ssh-privatekey': '' }), ['data[ssh-privatekey]: Required value'], 'must not be empty');
  t.same(typed('kubernetes.io/ssh-auth', { 'ssh-privatekey': b64('k') }), []);
  t.same(typed('kubernetes.io/tls', {}), ['data[tls.crt]: Required value', 'data[tls.key]: Required value']);
  t.same(typed('kubernetes.io/tls', { 'tls.crt': '', 'tls.key': '' }), [], 'present is enough: upstream does not parse them');
  t.same(typed('bootstrap.kubernetes.io/token', { 'token-id': b64('abcdef') }), [], 'no rule upstream');
  t.same(typed('example.com/custom', {}), [], 'any other type');
});

t.test('Secret update: the type may not change; immutable keeps the flag and data', async (t) => {
  const old = secret({ type: 'kubernetes.io/tls', data: { 'tls.crt': b64('c'), 'tls.key': b64('k') } });
  t.same(check(SECRET, { ...old, type: 'Opaque' }, old), ['type: Invalid value: "Opaque": field is immutable']);
  const untyped = { ...old };
  delete untyped['type'];
  t.same(check(SECRET, untyped, old), ['type: Invalid value: "Opaque": field is immutable'], 'an update without a type is defaulted to Opaque first');
  const legacy = secret({ data: { a: b64('1') } });
  t.same(text(SECRET.validate(structuredClone({ ...legacy, type: 'Opaque' }), legacy)), [], 'a Secret stored without a type reads as Opaque');
  const frozen = secret({ data: { a: b64('1') }, immutable: true });
  t.same(check(SECRET, { ...frozen, data: { a: b64('2') } }, frozen), ['data: Forbidden: field is immutable when `immutable` is set']);
  t.same(check(SECRET, { ...frozen, stringData: { a: '2' } }, frozen), ['data: Forbidden: field is immutable when `immutable` is set'], 'stringData is data');
  t.same(check(SECRET, { ...frozen, stringData: { a: '1' } }, frozen), [], 'the same value through stringData');
  t.same(check(SECRET, { ...frozen, immutable: false }, frozen), ['immutable: Forbidden: field is immutable when `immutable` is set']);
});

t.test("through the REST layer: a bad base64 value is upstream's 400, invalid objects its 422; nothing stored", async (t) => {
  const clock = new FakeClock();
  const ts = openTestStore({ clock });
  t.teardown(() => ts.close());
  const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
  const rest = new Rest({ storage: ts.storage, cache: ts.cache, schemas, clock });
  const R = (name: string) => RESOURCES.find((r) => r.resource === name)!;
  await rest.create(R('namespaces'), '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });

  let st = await failure(() => rest.create(R('secrets'), 'default', secret({ data: { a: 'not base64!' } })));
  t.equal(st.code, 400);
  t.equal(st.message, 'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3');
  st = await failure(() => rest.create(R('configmaps'), 'default', cm({ binaryData: { a: 'YWJ' } })));
  t.equal(st.code, 400);
  t.equal(st.message, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: illegal base64 data at input byte 0');
  st = await failure(() => rest.create(R('secrets'), 'default', secret({ type: 'kubernetes.io/tls', data: { 'tls.crt': b64('c') } })));
  t.equal(st.code, 422);
  t.equal(st.message, 'Secret "s" is invalid: data[tls.key]: Required value');
  t.notOk(ts.cache.get('secrets/default/s'), 'not stored');

  const made = await rest.create(R('secrets'), 'default', secret({ stringData: { password: 'hunter2' } }));
  t.same(made.object['data'], { password: b64('hunter2') });
  t.equal(made.object['type'], 'Opaque');
  t.notOk('stringData' in made.object, 'stringData is never stored');

  await rest.create(R('configmaps'), 'default', cm({ data: { a: '1' }, immutable: true }));
  st = await failure(() => rest.patch(R('configmaps'), 'default', 'cfg', 'merge', { data: { a: '2' } }));
  t.equal(st.code, 422);
  t.equal(st.message, 'ConfigMap "cfg" is invalid: data: Forbidden: field is immutable when `immutable` is set');
  const big = await failure(() => rest.create(R('configmaps'), 'default', { ...cm({ data: { a: 'x'.repeat(MiB() + 1) } }), metadata: { name: 'big' } }));
  t.equal(big.message, 'ConfigMap "big" is invalid: []: Too long: may not be more than 1048576 bytes');
});
