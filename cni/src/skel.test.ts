import t from 'tap';
import { compareVersions, dispatch, formatError, interfaceNameProblem, SUPPORTED_VERSIONS, versionInfo, type CniEnv, type SkelOutcome } from './skel.js';

const conf = (extra: Record<string, unknown> = {}): string => JSON.stringify({ cniVersion: '1.1.0', name: 'nodenet', type: 'nodenet-cni', ...extra });
const envFor = (cmd: string, extra: Record<string, string | undefined> = {}): CniEnv => ({
  CNI_COMMAND: cmd,
  CNI_CONTAINERID: 'c0ffee01',
  CNI_NETNS: '/var/run/netns/nn-x',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
  CNI_ARGS: 'K8S_POD_NAME=web-0',
  ...extra,
});

function err(o: SkelOutcome): { cniVersion: string; code: number; msg: string; details: string } {
  if (o.kind !== 'error') throw new Error(`expected an error, got ${o.kind}`);
  return o.error;
}

t.test('VERSION answers without stdin or other variables', async (t) => {
  const o = dispatch({ CNI_COMMAND: 'VERSION' }, 'not json at all');
  t.equal(o.kind, 'version');
  if (o.kind === 'version') t.same(JSON.parse(o.output), { cniVersion: '1.1.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] });
  t.equal(versionInfo(), JSON.stringify({ cniVersion: '1.1.0', supportedVersions: SUPPORTED_VERSIONS }));
});

t.test('ADD, CHECK, DEL produce the call with the request mirrored', async (t) => {
  for (const cmd of ['ADD', 'CHECK', 'DEL'] as const) {
    const stdin = new TextEncoder().encode(conf({ ipam: { type: 'host-local' } }));
    const o = dispatch(envFor(cmd), stdin);
    if (o.kind !== 'call') {
      t.fail(`${cmd}: ${JSON.stringify(o)}`);
      continue;
    }
    t.equal(o.command, cmd);
    t.equal(o.cniVersion, '1.1.0');
    t.same(o.request, { containerId: 'c0ffee01', netns: '/var/run/netns/nn-x', ifName: 'eth0', args: 'K8S_POD_NAME=web-0', path: '/opt/cni/bin', config: stdin });
    t.equal(o.request.config, stdin, 'config bytes passed through, not re-encoded');
    t.same(o.config['ipam'], { type: 'host-local' });
  }
});

t.test('DEL needs no CNI_NETNS; STATUS and GC need only CNI_COMMAND and CNI_PATH', async (t) => {
  const del = dispatch(envFor('DEL', { CNI_NETNS: undefined }), conf());
  t.equal(del.kind, 'call');
  if (del.kind === 'call') t.equal(del.request.netns, '');
  for (const cmd of ['STATUS', 'GC']) {
    const o = dispatch({ CNI_COMMAND: cmd, CNI_PATH: '/opt/cni/bin' }, conf({ 'cni.dev/valid-attachments': [] }));
    t.equal(o.kind, 'call', cmd);
    if (o.kind === 'call') t.same([o.request.containerId, o.request.ifName, o.request.netns], ['', '', ''], cmd);
  }
});

t.test('stdin as a string is passed on as UTF-8 bytes', async (t) => {
  const o = dispatch(envFor('ADD'), conf({ name: 'nodenet', note: 'é' }));
  if (o.kind !== 'call') throw new Error('expected call');
  t.equal(new TextDecoder().decode(o.request.config), conf({ name: 'nodenet', note: 'é' }));
});

t.test('code 4: CNI_COMMAND missing or unknown, required variables missing', async (t) => {
  t.same(err(dispatch({}, conf())), { cniVersion: '1.1.0', code: 4, msg: 'required env variables [CNI_COMMAND] missing', details: '' });
  t.same(err(dispatch({ CNI_COMMAND: '' }, conf())).code, 4);
  t.same(err(dispatch({ CNI_COMMAND: 'FROB' }, 'garbage')), { cniVersion: '1.1.0', code: 4, msg: 'unknown CNI_COMMAND: FROB', details: '' });
  t.equal(err(dispatch({ CNI_COMMAND: 'add' }, conf())).code, 4, 'commands are case-sensitive');
  t.equal(
    err(dispatch({ CNI_COMMAND: 'ADD' }, conf())).msg,
    'required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME,CNI_PATH] missing',
  );
  t.equal(err(dispatch(envFor('CHECK', { CNI_NETNS: '' }), conf())).msg, 'required env variables [CNI_NETNS] missing');
  t.equal(err(dispatch(envFor('DEL', { CNI_IFNAME: undefined, CNI_PATH: undefined }), conf())).msg, 'required env variables [CNI_IFNAME,CNI_PATH] missing');
  t.equal(err(dispatch({ CNI_COMMAND: 'GC' }, conf())).msg, 'required env variables [CNI_PATH] missing');
  t.equal(err(dispatch({ CNI_COMMAND: 'STATUS' }, conf())).msg, 'required env variables [CNI_PATH] missing');
});

t.test('code 4: invalid container ID or interface name', async (t) => {
  for (const id of ['-leading-dash', '.hidden', 'has/slash', 'has space', 'ü']) {
    const e = err(dispatch(envFor('ADD', { CNI_CONTAINERID: id }), conf()));
    t.same([e.code, e.msg, e.details], [4, 'invalid characters in containerID', id], id);
  }
  for (const ok of ['a', 'A_b.c-d', '0123456789abcdef'.repeat(4)]) t.equal(dispatch(envFor('DEL', { CNI_CONTAINERID: ok }), conf()).kind, 'call', ok);
  for (const [name, msg] of [
    ['sixteen-chars-xx', 'interface name is longer than 15 bytes'],
    ['ééééééééé', 'interface name is longer than 15 bytes'],
    ['.', 'interface name is . or ..'],
    ['..', 'interface name is . or ..'],
    ['eth/0', 'interface name contains / or : or whitespace'],
    ['eth:0', 'interface name contains / or : or whitespace'],
    ['eth 0', 'interface name contains / or : or whitespace'],
    ['eth\t0', 'interface name contains / or : or whitespace'],
  ] as const) {
    const e = err(dispatch(envFor('CHECK', { CNI_IFNAME: name }), conf()));
    t.same([e.code, e.msg], [4, msg], JSON.stringify(name));
  }
  t.equal(dispatch(envFor('ADD', { CNI_IFNAME: 'fifteen-chars-x' }), conf()).kind, 'call');
  t.equal(interfaceNameProblem(''), 'interface name is empty');
  // GC and STATUS do not validate what they do not need.
  t.equal(dispatch({ CNI_COMMAND: 'GC', CNI_PATH: '/x', CNI_CONTAINERID: 'bad id' }, conf()).kind, 'call');
});

t.test('code 6: stdin that is not a JSON object', async (t) => {
  for (const [stdin, what] of [
    ['', 'empty'],
    ['{"name":', 'truncated'],
    ['[1,2]', 'array'],
    ['"str"', 'string'],
    ['null', 'null'],
    ['42', 'number'],
  ] as const) {
    const e = err(dispatch(envFor('ADD'), stdin));
    t.equal(e.code, 6, what);
    t.match(e.msg, /^error decoding network config/, what);
  }
  t.equal(err(dispatch(envFor('ADD'), new Uint8Array([0x7b, 0xc3, 0x28, 0x7d]))).code, 6, 'invalid UTF-8');
  t.equal(err(dispatch(envFor('ADD'), conf({ cniVersion: 1.1 }))).code, 6, 'cniVersion not a string');
  t.equal(err(dispatch(envFor('ADD'), conf({ name: 7 }))).code, 6, 'name not a string');
});

t.test('code 7: missing or invalid network name, reported before the version', async (t) => {
  t.same(err(dispatch(envFor('ADD'), JSON.stringify({ cniVersion: '0.4.0', type: 'x' }))), { cniVersion: '0.4.0', code: 7, msg: 'missing network name', details: '' });
  t.same(err(dispatch(envFor('ADD'), conf({ name: '' }))).code, 7);
  const e = err(dispatch(envFor('DEL'), conf({ name: 'my net' })));
  t.same([e.code, e.msg, e.details], [7, 'invalid characters found in network name', 'my net']);
  t.equal(err(dispatch(envFor('ADD'), JSON.stringify({ type: 'x' }))).code, 7, 'no name and no version: name first');
});

t.test('code 1: missing or unsupported cniVersion', async (t) => {
  const none = err(dispatch(envFor('ADD'), JSON.stringify({ name: 'n', type: 'x' })));
  t.same([none.code, none.msg, none.cniVersion], [1, 'incompatible CNI versions', '1.1.0']);
  t.match(none.details, /no cniVersion/);
  t.equal(err(dispatch(envFor('ADD'), conf({ cniVersion: '' }))).code, 1);
  for (const v of ['0.1.0', '0.2.0', '1.2.0', '2.0.0', 'banana']) {
    const e = err(dispatch(envFor('DEL'), conf({ cniVersion: v })));
    t.same([e.code, e.msg, e.cniVersion], [1, 'incompatible CNI versions', '1.1.0'], v);
    t.equal(e.details, `config is "${v}", plugin supports [0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0]`, v);
  }
});

t.test('version negotiation: every supported version is accepted for ADD and DEL and echoed', async (t) => {
  for (const v of SUPPORTED_VERSIONS) {
    for (const cmd of ['ADD', 'DEL']) {
      const o = dispatch(envFor(cmd), conf({ cniVersion: v }));
      t.equal(o.kind === 'call' && o.cniVersion, v, `${cmd} ${v}`);
    }
  }
});

t.test('CHECK needs >= 0.4.0; STATUS and GC need >= 1.1.0 (code 1, error in the config version)', async (t) => {
  for (const v of SUPPORTED_VERSIONS) {
    const check = dispatch(envFor('CHECK'), conf({ cniVersion: v }));
    const wantCheck = compareVersions(v, '0.4.0')! >= 0;
    t.equal(check.kind, wantCheck ? 'call' : 'error', `CHECK ${v}`);
    if (!wantCheck) t.same([err(check).code, err(check).msg, err(check).cniVersion], [1, 'config version does not allow CHECK', v]);
    for (const cmd of ['STATUS', 'GC']) {
      const o = dispatch({ CNI_COMMAND: cmd, CNI_PATH: '/opt/cni/bin' }, conf({ cniVersion: v }));
      const want = v === '1.1.0';
      t.equal(o.kind, want ? 'call' : 'error', `${cmd} ${v}`);
      if (!want) t.same([err(o).code, err(o).msg], [1, `config version does not allow ${cmd}`], `${cmd} ${v}`);
    }
  }
  t.equal(err(dispatch(envFor('CHECK'), conf({ cniVersion: '0.2.0' }))).msg, 'config version does not allow CHECK');
  t.equal(err(dispatch({ CNI_COMMAND: 'GC', CNI_PATH: '/p' }, conf({ cniVersion: '1.2.0' }))).msg, 'incompatible CNI versions', 'above the floor but unknown');
});

t.test('errors carry the config cniVersion when it is supported', async (t) => {
  t.equal(err(dispatch(envFor('ADD'), conf({ cniVersion: '0.3.1', name: 'bad name' }))).cniVersion, '0.3.1');
});

t.test('formatError prints the spec structure, details omitted when empty', async (t) => {
  t.same(JSON.parse(formatError({ cniVersion: '1.0.0', code: 7, msg: 'm', details: 'd' })), { cniVersion: '1.0.0', code: 7, msg: 'm', details: 'd' });
  t.same(JSON.parse(formatError({ cniVersion: '1.0.0', code: 11, msg: 'm', details: '' })), { cniVersion: '1.0.0', code: 11, msg: 'm' });
});

t.test('compareVersions', async (t) => {
  t.equal(compareVersions('0.4.0', '0.3.1'), 1);
  t.equal(compareVersions('0.10.0', '0.9.0'), 1);
  t.equal(compareVersions('1.1.0', '1.1.0'), 0);
  t.equal(compareVersions('0.3.0', '1.0.0'), -1);
  t.equal(compareVersions('1.0', '1.0.0'), undefined);
});
