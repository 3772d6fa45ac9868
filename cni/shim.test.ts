/**
 * The nodenet-cni executable, case by case, as a runtime runs it (no root):
 * what the skel accepts and rejects (code, message, cniVersion of the
 * error), how the config's agentSocket and agentTimeoutMs are read, what the
 * agent's answers and failures become (the gRPC status mapping, malformed
 * answers, our deadline, HTTP/2 and HPACK as node:http2 and raw servers send
 * them), the DEL queue record, and stdin/stdout the way runtimes hand them
 * over (non-blocking pipes, closed descriptors). These were the TypeScript
 * shim's unit tests (skel, run, agent-client, h2, out, stdin, unix-stream);
 * shim.e2e.test.ts runs it against the agent's real server.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer as createH2Server, type ServerHttp2Stream, type Settings } from 'node:http2';
import { createServer as createNetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CniRequest, CniResponse } from '../proto/cni/v1/cni_messages.js';
import { DEFAULT_AGENT_SOCKET, deletionQueueDir, deletionRecordName, SUPPORTED_VERSIONS, type DeletionRecord } from '../proto/cni/v1/contract.js';
import { buildTestShim, runShim, type ShimRun } from './shim-harness.js';

const work = mkdtempSync(join(tmpdir(), 'nn-cni-shim-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
const { bin } = buildTestShim(work);
let n = 0;
const sockPath = (): string => join(work, `s${n++}.sock`);

type Env = Record<string, string>;
type Teardown = { teardown(fn: () => unknown): void };
const podEnv = (cmd: string, extra: Env = {}): Env => ({
  CNI_COMMAND: cmd, CNI_CONTAINERID: 'c0ffee01', CNI_NETNS: '/var/run/netns/nn-x', CNI_IFNAME: 'eth0', CNI_PATH: '/opt/cni/bin', CNI_ARGS: 'K8S_POD_NAME=web-0', ...extra,
});
const netEnv = (cmd: string, extra: Env = {}): Env => ({ CNI_COMMAND: cmd, CNI_PATH: '/opt/cni/bin', ...extra });
const envFor = (cmd: string, extra: Env = {}): Env => (cmd === 'STATUS' || cmd === 'GC' ? netEnv(cmd, extra) : podEnv(cmd, extra));

const run = (env: Env, stdin: string | Buffer = '', wrapper: readonly string[] = []): Promise<ShimRun> => runShim(bin, env, stdin, wrapper);
/** The error JSON on stdout (exit 1), parsed. */
async function error(env: Env, stdin: string | Buffer): Promise<{ cniVersion: string; code: number; msg: string; details?: string }> {
  const r = await run(env, stdin);
  if (r.code !== 1) throw new Error(`expected exit 1, got ${r.code}: ${r.stdout} ${r.stderr}`);
  return JSON.parse(r.stdout) as never;
}

const framed = (msg: Uint8Array): Buffer => {
  const b = Buffer.alloc(5 + msg.length);
  b.writeUInt32BE(msg.length, 1);
  b.set(msg, 5);
  return b;
};
const resultMessage = (result: string | Buffer): Buffer => framed(CniResponse.encode({ outcome: { $case: 'result', result: Buffer.from(result) } }).finish());

interface Seen { headers: Record<string, unknown>; body: Buffer }
/** A node:http2 server on a unix socket (as the agent's) answering every stream with `answer`; what it got is in `seen`. */
async function h2Server(t: Teardown, answer: (stream: ServerHttp2Stream, body: Buffer) => void, settings?: Settings): Promise<{ path: string; seen: Seen[] }> {
  const path = sockPath();
  const seen: Seen[] = [];
  const srv = createH2Server(settings ? { settings } : {});
  srv.on('stream', (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on('error', () => {});
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ headers, body });
      answer(stream, body);
    });
  });
  srv.on('sessionError', () => {});
  await new Promise<void>((res) => srv.listen(path, res));
  t.teardown(() => new Promise<void>((res) => srv.close(() => res())));
  return { path, seen };
}
const answerResult = (result: string | Buffer) => (s: ServerHttp2Stream): void => {
  s.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
  s.on('wantTrailers', () => s.sendTrailers({ 'grpc-status': '0', 'grpc-message': 'OK' }));
  s.end(resultMessage(result));
};
const answerMessage = (message: Buffer, trailers: Record<string, string> = { 'grpc-status': '0' }, status = 200) => (s: ServerHttp2Stream): void => {
  s.respond({ ':status': status, 'content-type': 'application/grpc' }, { waitForTrailers: true });
  s.on('wantTrailers', () => s.sendTrailers(trailers));
  s.end(message);
};
const trailersOnly = (code: string, msg?: string) => (s: ServerHttp2Stream): void => {
  s.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': code, ...(msg === undefined ? {} : { 'grpc-message': msg }) }, { endStream: true });
};

/** A raw unix-socket server: once the client's first bytes arrive it writes `answer` (HTTP/2 frames made by hand) and, if asked, closes. */
async function rawServer(t: Teardown, answer: Buffer, close = true): Promise<{ path: string; got: () => Buffer }> {
  const path = sockPath();
  const got: Buffer[] = [];
  const srv = createNetServer((s: Socket) => {
    s.on('error', () => {});
    let answered = false;
    s.on('data', (d: Buffer) => {
      got.push(d);
      if (answered) return;
      answered = true;
      s.write(answer);
      if (close) setTimeout(() => s.end(), 50);
    });
  });
  await new Promise<void>((res) => srv.listen(path, res));
  t.teardown(() => new Promise<void>((res) => srv.close(() => res())));
  return { path, got: () => Buffer.concat(got) };
}
const frame = (type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer => {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream, 5);
  return Buffer.concat([h, payload]);
};
const DATA = 0, HEADERS = 1, RST_STREAM = 3, SETTINGS = 4, PING = 6, GOAWAY = 7, CONTINUATION = 9;
const END_STREAM = 0x1, ACK = 0x1, END_HEADERS = 0x4, PADDED = 0x8, PRIORITY = 0x20;
/** An HPACK literal without indexing, raw strings. */
const literal = (name: string, value: string, first = 0x00): Buffer => {
  const nb = Buffer.from(name), vb = Buffer.from(value);
  return Buffer.concat([Buffer.from([first, nb.length]), nb, Buffer.from([vb.length]), vb]);
};
const STATUS_200 = Buffer.from([0x88]); // static index 8

/** A socket file nobody serves: a listener that died without closing it. */
function staleSocket(): string {
  const p = sockPath();
  spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(p)}, () => process.kill(process.pid, 'SIGKILL'))`]);
  return p;
}

/** A test label with every non-ASCII character escaped (TAP output must not carry U+2028 and the like). */
const label = (s: string): string => s.replace(/[^\x20-\x7e]/gu, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);

const conf = (extra: Record<string, unknown> = {}): string => JSON.stringify({ cniVersion: '1.1.0', name: 'nodenet', type: 'nodenet-cni', ...extra });

t.test('VERSION: answered without stdin, an agent or a PATH', async (t) => {
  const r = await run({ CNI_COMMAND: 'VERSION' }, 'not json at all');
  t.equal(r.code, 0);
  t.equal(r.stdout, JSON.stringify({ cniVersion: '1.1.0', supportedVersions: SUPPORTED_VERSIONS }));
  t.equal(r.stderr, '');
});

t.test('code 4: CNI_COMMAND missing or unknown, required variables missing', async (t) => {
  const none = await run({}, conf());
  t.equal(none.code, 1);
  t.same(JSON.parse(none.stdout), { cniVersion: '1.1.0', code: 4, msg: 'required env variables [CNI_COMMAND] missing' });
  t.equal(none.stderr, 'nodenet-cni: CNI plugin of the nodenet agent; CNI protocol versions supported: 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0\n');
  const cases: [Env, Record<string, unknown>][] = [
    [{ CNI_COMMAND: '' }, { code: 4, msg: 'required env variables [CNI_COMMAND] missing' }],
    [{ CNI_COMMAND: 'FROB' }, { cniVersion: '1.1.0', code: 4, msg: 'unknown CNI_COMMAND: FROB' }],
    [{ CNI_COMMAND: 'add' }, { code: 4, msg: 'unknown CNI_COMMAND: add' }],
    [{ CNI_COMMAND: 'ADD' }, { code: 4, msg: 'required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME,CNI_PATH] missing' }],
    [podEnv('CHECK', { CNI_NETNS: '' }), { code: 4, msg: 'required env variables [CNI_NETNS] missing' }],
    [{ CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'a' }, { code: 4, msg: 'required env variables [CNI_IFNAME,CNI_PATH] missing' }],
    [{ CNI_COMMAND: 'GC' }, { code: 4, msg: 'required env variables [CNI_PATH] missing' }],
    [{ CNI_COMMAND: 'STATUS' }, { code: 4, msg: 'required env variables [CNI_PATH] missing' }],
  ];
  for (const [env, want] of cases) t.match(await error(env, env['CNI_COMMAND'] === 'FROB' ? 'garbage' : conf()), want, JSON.stringify(env));
});

t.test('code 4: invalid container ID or interface name (details: the value)', async (t) => {
  for (const id of ['-leading-dash', '.hidden', 'has/slash', 'has space', 'ü']) {
    t.same(await error(podEnv('ADD', { CNI_CONTAINERID: id }), conf()), { cniVersion: '1.1.0', code: 4, msg: 'invalid characters in containerID', details: id }, id);
  }
  for (const [name, msg] of [
    ['sixteen-chars-xx', 'interface name is longer than 15 bytes'],
    ['ééééééééé', 'interface name is longer than 15 bytes'],
    ['.', 'interface name is . or ..'],
    ['..', 'interface name is . or ..'],
    ['eth/0', 'interface name contains / or : or whitespace'],
    ['eth:0', 'interface name contains / or : or whitespace'],
    ['eth 0', 'interface name contains / or : or whitespace'],
    ['eth\t0', 'interface name contains / or : or whitespace'],
    ['eth\u00a00', 'interface name contains / or : or whitespace'],
    ['eth\u20280', 'interface name contains / or : or whitespace'],
    ['eth\ufeff', 'interface name contains / or : or whitespace'],
  ] as const) {
    t.match(await error(podEnv('CHECK', { CNI_IFNAME: name }), conf()), { code: 4, msg, details: name }, label(name));
  }
});

t.test('what the skel accepts reaches the agent, the request mirrored and the config byte for byte', async (t) => {
  const agent = await h2Server(t, answerResult('{"cniVersion":"1.1.0"}'));
  const accepted: [string, Env, string | Buffer][] = [
    ['ADD 15-byte ifname', podEnv('ADD', { CNI_IFNAME: 'fifteen-chars-x' }), conf({ agentSocket: agent.path })],
    ...['a', 'A_b.c-d', '0123456789abcdef'.repeat(4)].map((id): [string, Env, string] => [`DEL id ${id}`, podEnv('DEL', { CNI_CONTAINERID: id }), conf({ agentSocket: agent.path })]),
    ['DEL without CNI_NETNS', podEnv('DEL', { CNI_NETNS: '' }), conf({ agentSocket: agent.path })],
    ['GC ignores CNI_CONTAINERID', netEnv('GC', { CNI_CONTAINERID: 'bad id' }), conf({ agentSocket: agent.path })],
    ['STATUS', netEnv('STATUS'), conf({ agentSocket: agent.path, 'cni.dev/valid-attachments': [] })],
    ['a UTF-8 BOM before the JSON', podEnv('ADD'), Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(conf({ agentSocket: agent.path }))])],
    ['escapes in keys and values', podEnv('ADD'), `{"cniVersion":"1.1.0","na\\u006de":"node\\u006eet","agent\\u0053ocket":${JSON.stringify(agent.path)}}`],
    ['the last of repeated keys', podEnv('ADD'), `{"cniVersion":"9.9.9","name":"bad name","agentSocket":5,"cniVersion":"1.0.0","name":"ok","agentSocket":${JSON.stringify(agent.path)}}`],
    ['agentTimeoutMs null: the default', podEnv('ADD'), conf({ agentSocket: agent.path, agentTimeoutMs: null })],
    ...SUPPORTED_VERSIONS.flatMap((v) => ['ADD', 'DEL'].map((cmd): [string, Env, string] => [`${cmd} ${v}`, podEnv(cmd), conf({ cniVersion: v, agentSocket: agent.path })])),
  ];
  for (const [name, env, stdin] of accepted) {
    const before = agent.seen.length;
    const r = await run(env, stdin);
    t.equal(r.code, 0, `${name}: ${r.stdout}`);
    t.equal(agent.seen.length, before + 1, `${name}: one call`);
    const req = CniRequest.decode(agent.seen[agent.seen.length - 1]!.body.subarray(5));
    t.same([req.containerId, req.netns, req.ifName, req.args, req.path], [env['CNI_CONTAINERID'] ?? '', env['CNI_NETNS'] ?? '', env['CNI_IFNAME'] ?? '', env['CNI_ARGS'] ?? '', env['CNI_PATH']], name);
    t.ok(Buffer.from(req.config).equals(Buffer.from(stdin)), `${name}: config forwarded verbatim`);
    t.equal(r.stdout, env['CNI_COMMAND'] === 'ADD' ? '{"cniVersion":"1.1.0"}' : '', `${name}: stdout`);
  }
});

t.test('code 6: stdin that is not UTF-8 or not a JSON object', async (t) => {
  for (const [stdin, what] of [['', 'empty'], ['{"name":', 'truncated'], ['[1,2]', 'array'], ['"str"', 'string'], ['null', 'null'], ['42', 'number']] as const) {
    const e = await error(podEnv('ADD'), stdin);
    t.equal(e.code, 6, what);
    t.match(e.msg, /^error decoding network config: /, what);
  }
  t.same(await error(podEnv('ADD'), '[1,2]'), { cniVersion: '1.1.0', code: 6, msg: 'error decoding network config: not a JSON object' });
  t.same(await error(podEnv('ADD'), Buffer.from([0x7b, 0xc3, 0x28, 0x7d])), { cniVersion: '1.1.0', code: 6, msg: 'error decoding network config: stdin is not valid UTF-8' });
  t.equal((await error(podEnv('ADD'), Buffer.from([0x7b, 0xed, 0xa0, 0x80, 0x7d]))).msg, 'error decoding network config: stdin is not valid UTF-8', 'an encoded surrogate');
  t.same(await error(podEnv('ADD'), conf({ cniVersion: 1.1 })), { cniVersion: '1.1.0', code: 6, msg: 'error decoding network config: cniVersion is not a string' });
  t.same(await error(podEnv('ADD'), conf({ cniVersion: '0.4.0', name: 7 })), { cniVersion: '0.4.0', code: 6, msg: 'error decoding network config: name is not a string' });
  t.equal((await error(podEnv('ADD'), conf({ cniVersion: null }))).msg, 'error decoding network config: cniVersion is not a string', 'null is not absent');
});

t.test('code 6: the message is the one JSON.parse gives for the same text', async (t) => {
  const inputs = [
    '', ' ', '{', '[', '{nope', '{"a":1,}', '{"a" 1}', '{"a":1} x', '{"a":"\\x"}', '{"a":-}', '{"a":1.}', '{"a":1e}', '{"a":"', '{"a":tru}',
    '[1 2]', '{"a":01}', '{"a":"\\u12g4"}', 'nul', '{"a":"b\n"}', '{"a":1}}', '{"a":1,"b" 2}', '{"a":1,"b" "c"}', '{"a":1,"b"}', 'tr1', '"\\',
    'NaN', 'undefined', 'Infinity', '[object Object]', '\u000b{}', '\u00a0{}', '{"😀":x}', '{"a":"😀😀😀😀😀😀😀😀😀😀😀😀" x}',
    `{"cniVersion":"1.0.0","name":"nodenet","type":x,"ipam":{}}`, `${' '.repeat(30)}x`, `{"aaaaaaaaaaaaaaaaaaaaaaa":x, "bbbbbbbbbbbbbbbbbbbbbbbb":1}`,
    '{"a":[1,]}', '[[[[1]]]', '{"a":{"c":1,"b" 1}}', '"\\ud800" x', '{"é":é}',
  ];
  for (const input of inputs) {
    let want = '';
    try {
      JSON.parse(input);
    } catch (e) {
      want = (e as Error).message;
    }
    t.not(want, '', `${label(input)} does not parse`);
    const e = await error(podEnv('ADD'), input);
    t.same([e.code, e.msg], [6, `error decoding network config: ${want}`], label(input));
  }
});

t.test('code 7: missing or invalid network name, reported before the version, in the config version', async (t) => {
  t.same(await error(podEnv('ADD'), JSON.stringify({ cniVersion: '0.4.0', type: 'x' })), { cniVersion: '0.4.0', code: 7, msg: 'missing network name' });
  t.equal((await error(podEnv('ADD'), conf({ name: '' }))).code, 7);
  t.same(await error(podEnv('DEL'), conf({ cniVersion: '0.3.1', name: 'my net' })), { cniVersion: '0.3.1', code: 7, msg: 'invalid characters found in network name', details: 'my net' });
  t.same(await error(podEnv('DEL'), conf({ name: 'a\u0000\ud800' })), { cniVersion: '1.1.0', code: 7, msg: 'invalid characters found in network name', details: 'a\u0000\ud800' }, 'a NUL and a lone surrogate come back as JSON.stringify writes them');
  t.equal((await error(podEnv('ADD'), JSON.stringify({ type: 'x' }))).code, 7, 'no name and no version: name first');
});

t.test('code 1: missing or unsupported cniVersion; CHECK needs >= 0.4.0, STATUS and GC >= 1.1.0', async (t) => {
  const none = await error(podEnv('ADD'), JSON.stringify({ name: 'n', type: 'x' }));
  t.same(none, { cniVersion: '1.1.0', code: 1, msg: 'incompatible CNI versions', details: 'config has no cniVersion, plugin supports [0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0]' });
  t.equal((await error(podEnv('ADD'), conf({ cniVersion: '' }))).code, 1);
  for (const v of ['0.1.0', '0.2.0', '1.2.0', '2.0.0', 'banana', '1.0', '1.0.0 ']) {
    t.same(await error(podEnv('DEL'), conf({ cniVersion: v })), {
      cniVersion: '1.1.0', code: 1, msg: 'incompatible CNI versions', details: `config is "${v}", plugin supports [0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0]`,
    }, v);
  }
  const agent = await h2Server(t, answerResult('{}'));
  const older = (a: string, b: string) => a.split('.').map(Number).reduce((d, x, i) => d || Math.sign(x - Number(b.split('.')[i])), 0) < 0;
  for (const v of SUPPORTED_VERSIONS) {
    for (const [cmd, floor] of [['CHECK', '0.4.0'], ['STATUS', '1.1.0'], ['GC', '1.1.0']] as const) {
      const r = await run(envFor(cmd), conf({ cniVersion: v, agentSocket: agent.path }));
      if (older(v, floor)) {
        t.same([r.code, JSON.parse(r.stdout)], [1, { cniVersion: v, code: 1, msg: `config version does not allow ${cmd}`, details: `config is "${v}", ${cmd} needs >= ${floor}` }], `${cmd} ${v}`);
      } else {
        t.same([r.code, r.stdout], [0, ''], `${cmd} ${v}`);
      }
    }
  }
  t.equal((await error(podEnv('CHECK'), conf({ cniVersion: '0.2.0' }))).msg, 'config version does not allow CHECK', 'below the floor and unknown: the floor');
  t.equal((await error(netEnv('GC'), conf({ cniVersion: '1.2.0' }))).msg, 'incompatible CNI versions', 'above the floor but unknown');
  t.same(await error(podEnv('CHECK'), conf({ cniVersion: '00.3.9' })), { cniVersion: '1.1.0', code: 1, msg: 'config version does not allow CHECK', details: 'config is "00.3.9", CHECK needs >= 0.4.0' }, 'parts compare as numbers');
});

t.test('agentSocket and agentTimeoutMs: validated (code 7, in the config version), used, and sent as grpc-timeout', async (t) => {
  for (const [extra, msg] of [
    [{ agentSocket: 'rel.sock' }, 'agentSocket: must be an absolute path'],
    [{ agentSocket: 5 }, 'agentSocket: must be an absolute path'],
    [{ agentSocket: '' }, 'agentSocket: must be an absolute path'],
    [{ agentTimeoutMs: -1 }, 'agentTimeoutMs: must be a positive integer'],
    [{ agentTimeoutMs: 0 }, 'agentTimeoutMs: must be a positive integer'],
    [{ agentTimeoutMs: 1.5 }, 'agentTimeoutMs: must be a positive integer'],
    [{ agentTimeoutMs: '5s' }, 'agentTimeoutMs: must be a positive integer'],
    [{ agentTimeoutMs: true }, 'agentTimeoutMs: must be a positive integer'],
  ] as const) {
    t.same(await error(podEnv('ADD'), conf({ cniVersion: '1.0.0', ...extra })), { cniVersion: '1.0.0', code: 7, msg }, JSON.stringify(extra));
  }
  t.equal((await error(podEnv('ADD'), conf().replace('{', '{"agentTimeoutMs":1e400,'))).code, 7, 'a number past a double is Infinity, not an integer');

  const agent = await h2Server(t, answerResult('{}'));
  for (const [cmd, extra, want] of [
    ['ADD', {}, '30000m'], ['DEL', {}, '30000m'], ['CHECK', {}, '30000m'], ['STATUS', {}, '10000m'], ['GC', {}, '60000m'],
    ['CHECK', { agentTimeoutMs: 1234 }, '1234m'], ['ADD', { agentTimeoutMs: 1e3 }, '1000m'], ['ADD', { agentTimeoutMs: 123456789 }, '99999999m'],
  ] as const) {
    const r = await run(envFor(cmd), conf({ agentSocket: agent.path, ...extra }));
    t.equal(r.code, 0, r.stdout);
    const h = agent.seen[agent.seen.length - 1]!.headers;
    t.equal(h['grpc-timeout'], want, `${cmd} ${JSON.stringify(extra)}`);
    t.equal(h[':path'], `/nodenet.cni.v1.CniService/${cmd[0]}${cmd.slice(1).toLowerCase()}`);
  }
});

t.test('the default socket is /run/nodenet/cni.sock', { skip: existsSync(DEFAULT_AGENT_SOCKET) && 'an agent may listen there' }, async (t) => {
  const e = await error(netEnv('STATUS'), conf());
  t.same([e.code, e.msg, e.details], [50, 'the nodenet agent is not reachable at /run/nodenet/cni.sock', 'connect /run/nodenet/cni.sock: ENOENT']);
});

t.test('the request on the wire: method, path, headers, one framed CniRequest', async (t) => {
  const agent = await h2Server(t, answerResult('{"ok":1}'));
  const stdin = conf({ agentSocket: agent.path, agentTimeoutMs: 1234, note: 'é😀' });
  const r = await run(podEnv('CHECK', { CNI_ARGS: 'A=1;B=é' }), stdin);
  t.same([r.code, r.stdout], [0, '']);
  const { headers, body } = agent.seen[0]!;
  t.match(headers, { ':method': 'POST', ':scheme': 'http', ':path': '/nodenet.cni.v1.CniService/Check', ':authority': 'localhost', 'content-type': 'application/grpc', te: 'trailers', 'grpc-timeout': '1234m' });
  t.equal(body[0], 0, 'not compressed');
  t.equal(body.readUInt32BE(1), body.length - 5, 'one message');
  const req = CniRequest.decode(body.subarray(5));
  t.same({ ...req, config: Buffer.from(req.config).toString() }, { containerId: 'c0ffee01', netns: '/var/run/netns/nn-x', ifName: 'eth0', args: 'A=1;B=é', path: '/opt/cni/bin', config: stdin });
});

t.test('a config larger than the flow-control windows goes out whole, as WINDOW_UPDATEs allow', async (t) => {
  for (const settings of [undefined, { initialWindowSize: 1000, maxFrameSize: 16384 }]) {
    const agent = await h2Server(t, answerResult('{}'), settings);
    const stdin = conf({ agentSocket: agent.path, pad: 'p'.repeat(300_000) });
    const r = await run(podEnv('ADD'), stdin);
    t.equal(r.code, 0, r.stdout);
    t.equal(Buffer.from(CniRequest.decode(agent.seen[0]!.body.subarray(5)).config).toString(), stdin, JSON.stringify(settings));
  }
});

t.test('the agent answers: the ADD result printed byte for byte; an in-band CNI error printed in the config version', async (t) => {
  const result = Buffer.concat([Buffer.from('{"cniVersion":"1.0.0","x":"'), Buffer.from([0xc3, 0xa9, 0x01]), Buffer.from('"}')]);
  const ok = await h2Server(t, answerResult(result));
  const add = await run(podEnv('ADD'), conf({ cniVersion: '1.0.0', agentSocket: ok.path }));
  t.same([add.code, add.stderr], [0, '']);
  t.ok(add.stdoutBytes.equals(result), 'result bytes as is');
  for (const cmd of ['DEL', 'CHECK', 'STATUS', 'GC']) t.same(await run(envFor(cmd), conf({ agentSocket: ok.path })).then((r) => [r.code, r.stdout]), [0, ''], `${cmd} prints nothing`);

  const cniError = (code: number, msg: string, details: string) => answerMessage(framed(CniResponse.encode({ outcome: { $case: 'error', error: { code, msg, details } } }).finish()));
  const seven = await h2Server(t, cniError(7, 'mtu: must be an integer', 'mtu'));
  t.same(await error(podEnv('ADD'), conf({ cniVersion: '0.4.0', agentSocket: seven.path })), { cniVersion: '0.4.0', code: 7, msg: 'mtu: must be an integer', details: 'mtu' });
  const zero = await h2Server(t, cniError(0, 'x', ''));
  t.same(await error(podEnv('DEL'), conf({ agentSocket: zero.path })), { cniVersion: '1.1.0', code: 999, msg: 'x' }, 'code 0 becomes 999');
  const big = await h2Server(t, cniError(4294967295, 'm', ''));
  t.equal((await error(podEnv('ADD'), conf({ agentSocket: big.path }))).code, 4294967295, 'a uint32 code');
  const empty = await h2Server(t, answerResult(''));
  t.same(await error(podEnv('ADD'), conf({ agentSocket: empty.path })), { cniVersion: '1.1.0', code: 999, msg: 'the agent returned an empty ADD result' });
});

t.test('gRPC statuses: UNAVAILABLE is unreachable, DEADLINE_EXCEEDED a timeout, the rest 999; messages decoded', async (t) => {
  const cases: [string, string | undefined, Record<string, unknown>][] = [
    ['12', 'unknown method Frob', { code: 999, msg: 'call to the nodenet agent failed', details: 'grpc UNIMPLEMENTED: unknown method Frob' }],
    ['14', 'draining', { code: 11, details: 'grpc UNAVAILABLE: draining' }],
    ['4', 'deadline', { code: 11, msg: 'the nodenet agent did not answer within 30000 ms; try again later', details: 'grpc DEADLINE_EXCEEDED: deadline' }],
    ['13', '~~~~', { code: 999, details: 'grpc INTERNAL: ~~~~' }],
    ['13', encodeURIComponent('100% é €'), { details: 'grpc INTERNAL: 100% é €' }],
    ['13', '%E2%82 bad escape', { details: 'grpc INTERNAL: %E2%82 bad escape' }],
    ['13', undefined, { details: 'grpc INTERNAL: ' }],
    ['99', 'x', { code: 999, details: 'grpc 99: x' }],
    ['1x', 'x', { code: 999, details: 'grpc status unreadable: x' }],
  ];
  for (const [status, msg, want] of cases) {
    const agent = await h2Server(t, trailersOnly(status, msg));
    t.match(await error(podEnv('ADD'), conf({ agentSocket: agent.path })), { cniVersion: '1.1.0', ...want }, `${status} ${msg}`);
  }
  const unavailable = await h2Server(t, trailersOnly('14', 'draining'));
  const status = await error(netEnv('STATUS'), conf({ agentSocket: unavailable.path }));
  t.same([status.code, status.msg], [50, `the nodenet agent is not reachable at ${unavailable.path}`]);
});

t.test('malformed answers are 999 naming what is wrong', async (t) => {
  const ok = resultMessage('{}');
  const cases: [(s: ServerHttp2Stream) => void, string][] = [
    [(s) => s.respond({ ':status': 404 }, { endStream: true }), 'HTTP/2 status 404'],
    [answerMessage(ok, { 'x-other': '1' }), 'response without grpc-status'],
    [answerMessage(Buffer.from([0, 0])), 'response without a message'],
    [answerMessage(Buffer.concat([Buffer.from([1]), ok.subarray(1)])), 'compressed response message'],
    [answerMessage(ok.subarray(0, ok.length - 1)), `response message of ${ok.length - 6} bytes, framed as ${ok.length - 5}`],
    [answerMessage(framed(Buffer.from([0xff, 0xff, 0xff]))), 'undecodable response: premature EOF'],
    [answerMessage(framed(Buffer.from([0x0e, 0x01]))), 'undecodable response: cant skip wire type 6'],
    [answerMessage(framed(Buffer.from([0x1b, 0x23, 0x2c, 0x1c]))), 'undecodable response: invalid end group tag'],
  ];
  for (const [answer, details] of cases) {
    const agent = await h2Server(t, answer);
    t.same(await error(podEnv('ADD'), conf({ agentSocket: agent.path })), { cniVersion: '1.1.0', code: 999, msg: 'call to the nodenet agent failed', details }, details);
  }
  // What the generated decoder skips or takes: unknown fields and a closed group skipped, a zero tag ends it, the last outcome wins.
  for (const [bytes, want] of [
    [[0x18, 0x05, 0x21, 1, 2, 3, 4, 5, 6, 7, 8, 0x2d, 1, 2, 3, 4, 0x1b, 0x08, 0x01, 0x1c, 0x0a, 0x02, 0x7b, 0x7d], '{}'],
    [[0x0a, 0x02, 0x7b, 0x7d, 0x00, 0xff], '{}'],
    [[0x12, 0x02, 0x08, 0x07, 0x0a, 0x02, 0x7b, 0x7d], '{}'],
  ] as const) {
    const agent = await h2Server(t, answerMessage(framed(Buffer.from(bytes))));
    const r = await run(podEnv('ADD'), conf({ agentSocket: agent.path }));
    t.same([r.code, r.stdout], [0, want], Buffer.from(bytes).toString('hex'));
  }
  const badUtf8 = await h2Server(t, answerMessage(framed(Buffer.from([0x12, 0x0b, 0x08, 0x07, 0x12, 0x07, 0xef, 0xbb, 0xbf, 0x61, 0xff, 0xc3, 0x62]))));
  t.same(await error(podEnv('ADD'), conf({ agentSocket: badUtf8.path })), { cniVersion: '1.1.0', code: 7, msg: '\ufeffa\ufffd\ufffdb' }, 'strings decoded leniently, a BOM kept');
});

t.test('agent unreachable: ADD, CHECK, GC are 11; STATUS is 50; no socket, a stale one, a dropped connection', async (t) => {
  const missing = join(work, 'nope', 'cni.sock');
  for (const [cmd, code] of [['ADD', 11], ['CHECK', 11], ['GC', 11], ['STATUS', 50]] as const) {
    t.same(await error(envFor(cmd), conf({ agentSocket: missing })), {
      cniVersion: '1.1.0', code, msg: `the nodenet agent is not reachable at ${missing}${code === 11 ? '; try again later' : ''}`, details: `connect ${missing}: ENOENT`,
    }, cmd);
  }
  t.notOk(existsSync(join(work, 'nope')), 'nothing queued or created');
  const stale = staleSocket();
  t.match(await error(podEnv('ADD'), conf({ agentSocket: stale })), { code: 11, details: `connect ${stale}: ECONNREFUSED` });
  const dropping = await h2Server(t, (s) => s.session?.destroy());
  t.match(await error(podEnv('ADD'), conf({ agentSocket: dropping.path })), { code: 11, details: /^connection lost before an answer$|^connect .*: ECONNRESET$/ }, 'EOF, or a reset when our last write was unread');
  const unread = await rawServer(t, Buffer.alloc(0));
  t.match(await error(podEnv('ADD'), conf({ agentSocket: unread.path, pad: 'p'.repeat(1 << 20) })), { code: 11, msg: /is not reachable/ }, 'a peer that closes with a large request unread');
  const file = join(work, 'plain-file');
  writeFileSync(file, '');
  t.same(await error(podEnv('ADD'), conf({ agentSocket: `${file}/cni.sock` })), { cniVersion: '1.1.0', code: 999, msg: 'call to the nodenet agent failed', details: `connect ${file}/cni.sock: ENOTDIR` }, 'another connect error is 999');
});

t.test('our deadline: a silent agent is a timeout (11; STATUS 50), named in the message', async (t) => {
  const silent = await h2Server(t, () => {});
  const started = Date.now();
  t.same(await error(podEnv('ADD'), conf({ cniVersion: '1.0.0', agentSocket: silent.path, agentTimeoutMs: 250 })), {
    cniVersion: '1.0.0', code: 11, msg: 'the nodenet agent did not answer within 250 ms; try again later', details: 'no answer within 250 ms',
  });
  t.ok(Date.now() - started < 5000, 'and it does not hang');
  t.match(await error(netEnv('STATUS'), conf({ agentSocket: silent.path, agentTimeoutMs: 200 })), { code: 50, msg: 'the nodenet agent did not answer within 200 ms' });
});

t.test('DEL with the agent unreachable or too slow: queued next to the socket, as the agent replays it', async (t) => {
  const dir = join(work, 'q1', 'agent');
  const socket = join(dir, 'cni.sock');
  const stdin = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(conf({ agentSocket: socket, prevResult: { cniVersion: '1.1.0' }, note: '\u0001"\\é😀\u2028' }))]);
  const before = Date.now();
  const r = await run(podEnv('DEL', { CNI_ARGS: 'K8S_POD_NAME=p' }), stdin);
  t.same([r.code, r.stdout], [0, '']);
  const queue = deletionQueueDir(socket);
  t.equal(queue, join(dir, 'del-queue'));
  const file = join(queue, deletionRecordName('c0ffee01', 'eth0'));
  t.equal(r.stderr, `nodenet-cni: the agent is not reachable at ${socket} (connect ${socket}: ENOENT); DEL queued in ${file} for the agent to replay\n`);
  t.same(readdirSync(queue), ['c0ffee01-eth0.json'], 'one record, no temp file left');
  const text = readFileSync(file, 'utf8');
  const rec = JSON.parse(text);
  t.equal(text, `${JSON.stringify(rec)}\n`, 'one line of JSON as JSON.stringify writes it');
  const want: DeletionRecord = {
    version: 1, command: 'DEL', containerId: 'c0ffee01', netns: '/var/run/netns/nn-x', ifName: 'eth0', args: 'K8S_POD_NAME=p', path: '/opt/cni/bin',
    config: stdin.subarray(3).toString(), queuedAt: rec.queuedAt,
  };
  t.same(rec, want, 'the contract\'s record; config: stdin as text (a BOM dropped, as TextDecoder does)');
  t.same(Object.keys(rec), Object.keys(want), 'in the contract\'s order');
  t.match(rec.queuedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.ok(Math.abs(Date.parse(rec.queuedAt) - before) < 60_000, 'queuedAt is now');
  t.equal(statSync(file).mode & 0o777, 0o600, 'record 0600');
  t.equal(statSync(queue).mode & 0o777, 0o700 & ~process.umask(), 'queue directory 0700 when created');
  t.equal(statSync(dir).mode & 0o777, 0o700 & ~process.umask(), 'and its parents');

  const again = await run(podEnv('DEL', { CNI_NETNS: '' }), conf({ agentSocket: socket }));
  t.equal(again.code, 0);
  t.same(readdirSync(queue), ['c0ffee01-eth0.json'], 'a second DEL replaces the first');
  t.equal(JSON.parse(readFileSync(file, 'utf8')).netns, '');

  const slow = await h2Server(t, () => {});
  const late = await run(podEnv('DEL', { CNI_CONTAINERID: 'slow1' }), conf({ agentSocket: slow.path, agentTimeoutMs: 200 }));
  t.equal(late.code, 0);
  t.match(late.stderr, /^nodenet-cni: the agent did not answer within 200 ms \(no answer within 200 ms\); DEL queued in .*\/del-queue\/slow1-eth0\.json/);

  const odd = join(work, 'q2') + '//./x/../agent/cni.sock';
  const o = await run(podEnv('DEL', { CNI_CONTAINERID: 'odd1' }), conf({ agentSocket: odd }));
  t.match(o.stderr, `DEL queued in ${join(work, 'q2', 'agent', 'del-queue', 'odd1-eth0.json')} `, 'the path joined as path.join does');
});

t.test('DEL that cannot be queued either is 11, naming the queue and why', async (t) => {
  const dir = join(work, 'q3');
  mkdirSync(dir);
  writeFileSync(join(dir, 'del-queue'), 'not a directory');
  const socket = join(dir, 'cni.sock');
  t.same(await error(podEnv('DEL'), conf({ agentSocket: socket })), {
    cniVersion: '1.1.0', code: 11, msg: `the nodenet agent is not reachable at ${socket} and the DEL could not be queued; try again later`,
    details: `connect ${socket}: ENOENT; queue ${dir}/del-queue: EEXIST: file already exists, mkdir '${dir}/del-queue'`,
  });
});

t.test('HTTP/2 as servers may send it: SETTINGS and PING answered, padding, priority, CONTINUATION, other streams, HPACK\'s dynamic table', async (t) => {
  const trailers = (fields: Buffer[], flags = END_STREAM | END_HEADERS) => frame(HEADERS, flags, 1, Buffer.concat(fields));
  const ok = resultMessage('{"r":1}');
  const server = await rawServer(t, Buffer.concat([
    frame(SETTINGS, 0, 0, Buffer.from([0, 5, 0, 0, 0x40, 0])), // max frame 16384
    frame(PING, 0, 0, Buffer.from('12345678')),
    // :status 200, then content-type with incremental indexing (dynamic index 62), padded, with a priority block
    frame(HEADERS, PADDED | PRIORITY, 1, Buffer.concat([Buffer.from([2]), Buffer.from([0, 0, 0, 0, 16]), STATUS_200, literal('x-indexed', 'yes', 0x40), Buffer.from([0, 0])])),
    frame(CONTINUATION, END_HEADERS, 1, literal('content-type', 'application/grpc')),
    frame(DATA, 0, 3, Buffer.from('another stream')),
    frame(RST_STREAM, 0, 3, Buffer.from([0, 0, 0, 2])),
    frame(DATA, PADDED, 1, Buffer.concat([Buffer.from([3]), ok.subarray(0, 4), Buffer.from([0, 0, 0])])),
    frame(DATA, 0, 1, ok.subarray(4)),
    // trailers: a table size update (4096), a Huffman-coded name (nghttp2's grpc-status), the x-indexed entry by its index
    trailers([Buffer.from([0x3f, 0xe1, 0x1f, 0x00, 0x88]), Buffer.from('9acac8b21234da8f', 'hex'), Buffer.from([0x01, 0x30]), Buffer.from([0x80 | 62])]),
  ]));
  const r = await run(podEnv('ADD'), conf({ agentSocket: server.path }));
  t.same([r.code, r.stdout], [0, '{"r":1}'], r.stdout);
  const got = server.got();
  t.ok(got.includes(frame(SETTINGS, ACK, 0)), 'SETTINGS acknowledged');
  t.ok(got.includes(frame(PING, ACK, 0, Buffer.from('12345678'))), 'PING answered');

  const cases: [Buffer, Record<string, unknown>][] = [
    [Buffer.concat([frame(SETTINGS, 0, 0), frame(GOAWAY, 0, 0, Buffer.from([0, 0, 0, 0, 0, 0, 0, 2]))]), { code: 11, details: 'the agent is going away (GOAWAY 2)' }],
    [frame(RST_STREAM, 0, 1, Buffer.from([0, 0, 0, 7])), { code: 11, details: 'stream reset 7' }],
    [frame(RST_STREAM, 0, 1, Buffer.from([0, 0, 0, 8])), { code: 11, details: 'stream reset 8' }],
    [frame(RST_STREAM, 0, 1, Buffer.from([0, 0, 0, 2])), { code: 999, details: 'stream reset 2' }],
    [Buffer.concat([frame(HEADERS, 0, 1, STATUS_200), frame(DATA, 0, 1, ok)]), { code: 999, details: 'HTTP/2: a header block interrupted' }],
    [frame(CONTINUATION, END_HEADERS, 1, STATUS_200), { code: 999, details: 'HTTP/2: CONTINUATION without HEADERS' }],
    [trailers([Buffer.from([0x80])]), { code: 999, details: 'HPACK: index 0' }],
    [trailers([Buffer.from([0x80 | 62])]), { code: 999, details: /^HPACK: index 62 is past the dynamic table/ }],
    [trailers([Buffer.from([0x00, 0x05, 0x61])]), { code: 999, details: 'HPACK: string runs past the block' }],
    [trailers([Buffer.from([0x00, 0x81, 0xff, 0x01, 0x30])]), { code: 999, details: 'HPACK: invalid Huffman code' }],
    [trailers([literal(':status', ' 200 '), literal('grpc-status', '0')]), { code: 999, details: 'response without a message' }],
    [trailers([literal(':status', 'abc'), literal('grpc-status', '0')]), { code: 999, details: 'HTTP/2 status NaN' }],
    [trailers([literal('grpc-status', '0')]), { code: 999, details: 'HTTP/2 status 0' }],
  ];
  for (const [answer, want] of cases) {
    const s = await rawServer(t, answer);
    t.match(await error(podEnv('ADD'), conf({ agentSocket: s.path })), want, JSON.stringify(want));
  }
});

t.test('stdin and stdout as runtimes hand them over: non-blocking pipes, closed descriptors', async (t) => {
  // A wrapper that makes fd 0 or 1 non-blocking (O_NONBLOCK is on the open file, shared with the pipe's other users) and execs the shim.
  const nonblock = (fd: number) => ['/usr/bin/python3', '-c', `import fcntl, os, sys; fcntl.fcntl(${fd}, fcntl.F_SETFL, fcntl.fcntl(${fd}, fcntl.F_GETFL) | os.O_NONBLOCK); os.execv(sys.argv[1], sys.argv[1:])`];
  const python = existsSync('/usr/bin/python3');
  t.test('a non-blocking stdin written in two parts is read to its end', { skip: !python && 'no /usr/bin/python3' }, async (t) => {
    const { spawn } = await import('node:child_process');
    const [cmd, ...args] = [...nonblock(0), bin];
    const child = spawn(cmd!, args, { env: podEnv('ADD'), stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    const text = conf({ cniVersion: '9.9.9' });
    child.stdin.write(text.slice(0, 10));
    await new Promise((r) => setTimeout(r, 200));
    child.stdin.end(text.slice(10));
    const code = await new Promise((r) => child.on('close', r));
    t.equal(code, 1);
    t.match(JSON.parse(out), { code: 1, details: 'config is "9.9.9", plugin supports [0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0]' }, 'the whole config was parsed');
  });
  t.test('a large result through a non-blocking stdout arrives whole', { skip: !python && 'no /usr/bin/python3' }, async (t) => {
    const result = `{"big":"${'b'.repeat(1 << 20)}"}`;
    const agent = await h2Server(t, answerResult(result));
    const r = await run(podEnv('ADD'), conf({ agentSocket: agent.path }), nonblock(1));
    t.equal(r.code, 0, r.stdout.slice(0, 300) + r.stderr);
    t.equal(r.stdout.length, result.length);
    t.equal(r.stdout, result);
  });
  t.test('a reader gone from stdout (EPIPE) leaves the exit code as it was, no signal', { skip: !python && 'no /usr/bin/python3' }, async (t) => {
    const closedPipe = ['/usr/bin/python3', '-c', 'import os, sys; r, w = os.pipe(); os.close(r); os.dup2(w, 1); os.execv(sys.argv[1], sys.argv[1:])'];
    const r = await run(podEnv('ADD'), '{', closedPipe);
    t.same([r.code, r.signal], [1, null]);
  });
  t.test('closed fds 0 and 1 are /dev/null, as Node made them: empty stdin, output dropped', async (t) => {
    const r = await run(podEnv('ADD'), conf(), ['/bin/sh', '-c', 'exec 0<&- 1>&- "$0" "$@"']);
    t.same([r.code, r.signal], [1, null]);
    const e = await run(podEnv('ADD'), conf(), ['/bin/sh', '-c', 'exec 0<&- "$0" "$@"']);
    t.same(JSON.parse(e.stdout), { cniVersion: '1.1.0', code: 6, msg: 'error decoding network config: Unexpected end of JSON input' });
  });
  t.test('stdin that cannot be read is code 5 with the errno', async (t) => {
    const r = await run(podEnv('ADD'), '', ['/bin/sh', '-c', 'exec "$0" "$@" < /']);
    t.same([r.code, JSON.parse(r.stdout)], [1, { cniVersion: '1.1.0', code: 5, msg: 'error reading from stdin: EISDIR: illegal operation on a directory, read' }]);
  });
  t.test('invalid UTF-8 in the environment reads as U+FFFD, as process.env did', async (t) => {
    const r = await run(podEnv('ADD'), conf(), ['/bin/sh', '-c', 'CNI_CONTAINERID="$(printf \'a\\377b\')" exec "$0" "$@"']);
    t.same(JSON.parse(r.stdout), { cniVersion: '1.1.0', code: 4, msg: 'invalid characters in containerID', details: 'a\ufffdb' });
  });
});
