/**
 * Bad input to the embedded API server, over TLS with the admin token:
 * each gets a Kubernetes Status with the right code and reason, nothing
 * is stored, and the server keeps serving. No root needed.
 */
import t, { type Test } from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane, type ControlPlane } from '../controlplane/control-plane.js';

const dir = mkdtempSync(join(tmpdir(), 'nn-cp-bad-'));
let cp: ControlPlane;
let ca = '';
let token = '';

t.before(async () => {
  cp = await startControlPlane({ dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0, version: '0.1.0', nodes: ['n1'] });
  ca = readFileSync(join(dir, 'data', 'pki', 'ca.crt'), 'utf8');
  token = (JSON.parse(readFileSync(join(dir, 'data', 'tokens.json'), 'utf8')) as { admin: string }).admin;
});
t.teardown(async () => {
  await cp?.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Reply {
  code: number;
  type: string;
  body: string;
  json: Record<string, unknown>;
}

function call(method: string, path: string, body?: string | Buffer, headers: Record<string, string> = {}, auth: string | null = `Bearer ${token}`): Promise<Reply> {
  const u = new URL(path, cp.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, method, ca, headers: { ...(auth ? { Authorization: auth } : {}), ...(body !== undefined ? { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)) } : {}), ...headers } }, (res) => {
      let b = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (b += c));
      res.on('end', () => {
        let json: Record<string, unknown> = {};
        try {
          json = JSON.parse(b) as Record<string, unknown>;
        } catch {
          /* not JSON */
        }
        resolve({ code: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), body: b, json });
      });
    });
    req.on('error', (e: NodeJS.ErrnoException) => (e.code === 'EPIPE' || e.code === 'ECONNRESET' ? resolve({ code: -1, type: '', body: e.code, json: {} }) : reject(e)));
    req.end(body);
  });
}

const SVCS = '/api/v1/namespaces/default/services';
const PB = { 'Content-Type': 'application/vnd.kubernetes.protobuf' };
/** A length-delimited protobuf field (numbers under 16, payloads under 128 bytes), and a body: the magic, then a runtime.Unknown of a v1 kind. */
const pbLen = (num: number, b: Buffer) => Buffer.concat([Buffer.from([(num << 3) | 2, b.length]), b]);
const pb = (kind: string, raw: Buffer) => Buffer.concat([Buffer.from([0x6b, 0x38, 0x73, 0x00]), pbLen(1, Buffer.concat([pbLen(1, Buffer.from('v1')), pbLen(2, Buffer.from(kind))])), pbLen(2, raw)]);
/** A Service `pbx` with one port: metadata{name=1}=1, spec{ports=1{port=3}}=2. */
const pbSvc = (port: number) => Buffer.concat([pbLen(1, pbLen(1, Buffer.from('pbx'))), pbLen(2, pbLen(1, Buffer.from([3 << 3, port])))]);
const svc = (name: string, extra: Record<string, unknown> = {}) => JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { ports: [{ port: 80 }] }, ...extra });

function isStatus(t: Test, r: Reply, code: number, reason: string, message?: RegExp): void {
  t.equal(r.code, code, `HTTP ${code}`);
  t.match(r.type, /^application\/json/);
  t.match(r.json, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, code });
  if (message) t.match(String(r.json['message']), message);
}

async function stored(): Promise<string> {
  const r = await call('GET', SVCS);
  return (r.json['items'] as { metadata: { name: string } }[]).map((i) => i.metadata.name).join(',');
}

t.test('each bad request gets its Status and stores nothing', async (t) => {
  const before = await stored();
  const cases: [string, () => Promise<Reply>, number, string, RegExp?][] = [
    ['malformed JSON', () => call('POST', SVCS, '{"apiVersion": "v1", "kind": "Service", '), 400, 'BadRequest'],
    ['malformed YAML', () => call('POST', SVCS, 'apiVersion: v1\nkind: Service\nmetadata: {name: [', { 'Content-Type': 'application/yaml' }), 400, 'BadRequest'],
    ['a JSON array instead of an object', () => call('POST', SVCS, '[1,2]'), 400, 'BadRequest'],
    ['a Pod posted to services', () => call('POST', SVCS, JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [] } })), 400, 'BadRequest', /Pod/],
    ['a wrong apiVersion', () => call('POST', SVCS, JSON.stringify({ apiVersion: 'apps/v1', kind: 'Service', metadata: { name: 'x' } })), 400, 'BadRequest', /apps\/v1/],
    ['a resource that does not exist', () => call('GET', '/api/v1/namespaces/default/replicationcontrollers'), 404, 'NotFound', /the server could not find the requested resource/],
    ['a group that does not exist', () => call('GET', '/apis/batch/v1/jobs'), 404, 'NotFound'],
    ['an unknown field (Strict)', () => call('POST', `${SVCS}?fieldValidation=Strict`, svc('x', { spec: { ports: [{ port: 80 }], bogus: 1 } })), 400, 'BadRequest', /strict decoding error: unknown field "spec\.bogus"/],
    ['a field of the wrong type', () => call('POST', SVCS, svc('x', { spec: { ports: [{ port: 'eighty' }] } })), 400, 'BadRequest', /Service in version "v1" cannot be handled as a Service: json: cannot unmarshal string into Go struct field ServicePort\.spec\.ports\.port of type int32/],
    ['an invalid port', () => call('POST', SVCS, svc('x', { spec: { ports: [{ port: 0 }] } })), 422, 'Invalid', /spec\.ports\[0\]\.port: Invalid value: 0/],
    ['a bad label selector', () => call('GET', `${SVCS}?labelSelector=${encodeURIComponent('a in (b')}`), 400, 'BadRequest'],
    ['a bad field selector', () => call('GET', `${SVCS}?fieldSelector=${encodeURIComponent('spec.ports=1')}`), 400, 'BadRequest', /field label not supported: spec\.ports/],
    ['a path traversal in a name (GET)', () => call('GET', `${SVCS}/..%2F..%2Fnamespaces`), 404, 'NotFound'],
    ['a path traversal in a name (create)', () => call('POST', SVCS, svc('../../etc')), 422, 'Invalid', /metadata\.name: Invalid value: "\.\.\/\.\.\/etc"/],
    ['a name in the body unlike the path (PUT)', () => call('PUT', `${SVCS}/a`, svc('b')), 400, 'BadRequest', /does not match/],
    ['protobuf: not the magic', () => call('POST', SVCS, Buffer.from('{}'), PB), 400, 'BadRequest', /does not start with the magic/],
    ['protobuf: the magic alone', () => call('POST', SVCS, Buffer.from([0x6b, 0x38, 0x73, 0x00]), PB), 400, 'BadRequest', /names no kind/],
    ['protobuf: truncated', () => call('POST', SVCS, pb('Service', pbSvc(80)).subarray(0, 20), PB), 400, 'BadRequest', /past the end|truncated/],
    ['protobuf: a field nodenet does not know', () => call('POST', SVCS, pb('Service', Buffer.concat([pbSvc(80), pbLen(2, pbLen(6, Buffer.from('x')))])), PB), 400, 'BadRequest', /k8s\.io\.api\.core\.v1\.ServiceSpec has no field 6/],
    ['protobuf: a Pod posted to services', () => call('POST', SVCS, pb('Pod', pbLen(1, pbLen(1, Buffer.from('p')))), PB), 400, 'BadRequest', /Kind=Pod, but this URL takes v1, Kind=Service/],
    ['protobuf: an invalid port (the JSON path validates)', () => call('POST', SVCS, pb('Service', pbSvc(0)), PB), 422, 'Invalid', /spec\.ports\[0\]\.port: Invalid value: 0/],
    ['protobuf: a patch', () => call('PATCH', `${SVCS}/a`, pb('Service', pbSvc(80)), PB), 415, 'UnsupportedMediaType', /bodies are read for create, update and delete/],
    ['an unknown patch type', () => call('PATCH', `${SVCS}/a`, '{}', { 'Content-Type': 'text/plain' }), 415, 'UnsupportedMediaType'],
    ['a bad resourceVersion', () => call('GET', `${SVCS}?watch=1&resourceVersion=abc`), 400, 'BadRequest'],
    ['a limit that is not an int64', () => call('GET', `${SVCS}?limit=ten`), 400, 'BadRequest', /strconv.ParseInt: parsing "ten": invalid syntax/],
    ['a bad continue token', () => call('GET', `${SVCS}?limit=1&continue=garbage`), 400, 'BadRequest'],
    // No credentials at all: system:anonymous (kube-apiserver's --anonymous-auth default), whom RBAC allows nothing here.
    ['no token', () => call('GET', SVCS, undefined, {}, null), 403, 'Forbidden', /User "system:anonymous" cannot list resource "services"/],
    ['a wrong token', () => call('GET', SVCS, undefined, {}, 'Bearer nope'), 401, 'Unauthorized'],
  ];
  for (const [what, run, code, reason, msg] of cases) await t.test(what, async (t) => isStatus(t, await run(), code, reason, msg));
  t.equal(await stored(), before, 'nothing was stored');
});

t.test('a JSON patch that fails, and a merge patch that breaks validation, change nothing', async (t) => {
  t.equal((await call('POST', SVCS, svc('a'))).code, 201);
  const rv = (await call('GET', `${SVCS}/a`)).json['metadata'] as { resourceVersion: string };
  isStatus(t, await call('PATCH', `${SVCS}/a`, '[{"op":"test","path":"/spec/type","value":"NodePort"}]', { 'Content-Type': 'application/json-patch+json' }), 422, 'Invalid');
  isStatus(t, await call('PATCH', `${SVCS}/a`, '[{"op":"frobnicate"}]', { 'Content-Type': 'application/json-patch+json' }), 422, 'Invalid');
  isStatus(t, await call('PATCH', `${SVCS}/a`, '{"op":"add"}', { 'Content-Type': 'application/json-patch+json' }), 400, 'BadRequest');
  isStatus(t, await call('PATCH', `${SVCS}/a`, '{"spec":{"ports":[{"port":99999}]}}', { 'Content-Type': 'application/merge-patch+json' }), 422, 'Invalid', /spec\.ports\[0\]\.port/);
  isStatus(t, await call('PATCH', `${SVCS}/a`, '{"spec":{"ports":[{"$patch":"explode","port":80}]}}', { 'Content-Type': 'application/strategic-merge-patch+json' }), 400, 'BadRequest');
  t.equal(((await call('GET', `${SVCS}/a`)).json['metadata'] as { resourceVersion: string }).resourceVersion, rv.resourceVersion, 'the object is as it was');
});

t.test('a huge body is refused (413) and the server keeps serving', async (t) => {
  const big = svc('big', { metadata: { name: 'big', annotations: { a: 'x'.repeat(4 * 1024 * 1024) } } });
  const r = await call('POST', SVCS, big);
  if (r.code !== -1) isStatus(t, r, 413, 'RequestEntityTooLarge');
  else t.pass('the server cut the connection while the body was still coming');
  const after = await call('GET', `${SVCS}/big`);
  t.equal(after.code, 404, `not stored: ${after.body.slice(0, 200)}`);
  t.equal((await call('GET', '/readyz')).code, 200, 'still serving');
  t.equal((await call('POST', SVCS, svc('after'))).code, 201, 'and still writing');
});

t.test('a client holding 200 watches gets a 429 for the next, and its watches back once it closes some', async (t) => {
  const open: { destroy(): void }[] = [];
  const openWatch = () =>
    new Promise<number>((resolve, reject) => {
      const u = new URL(`${SVCS}?watch=1`, cp.url);
      const req = request({ host: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, ca, agent: false, headers: { Authorization: `Bearer ${token}` } }, (res) => {
        open.push(res);
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
  try {
    const codes = [];
    for (let i = 0; i < 200; i++) codes.push(await openWatch());
    t.ok(codes.every((c) => c === 200), '200 watches open');
    const over = await call('GET', `${SVCS}?watch=1`);
    isStatus(t, over, 429, 'TooManyRequests', /too many watches/);
    t.equal((await call('GET', '/readyz')).code, 200, 'plain requests still served');
    open.splice(0, 10).forEach((r) => r.destroy());
    let back = 0;
    for (let i = 0; i < 20 && back !== 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      back = await openWatch();
    }
    t.equal(back, 200, 'a closed watch frees its place');
  } finally {
    open.forEach((r) => r.destroy());
  }
});
