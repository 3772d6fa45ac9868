import t, { type Test } from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { silentLogger } from '../../../lib/log/log.js';
import { startHealthServer, type HealthSource } from '../node/health-server.js';
import type { ProxyStatus } from '../node/proxy-status.js';
import { FlagError } from './flags.js';
import { formatProxyStatus, proxyCommand, PROXY_USAGE, statusUrl, type ProxyCmdDeps } from './proxy-cmd.js';

const STATUS: ProxyStatus = {
  mode: 'nftables',
  syncs: 3,
  ready: true,
  lastSync: { startedAt: 1, durationMs: 12, scope: 'partial', reason: 'partial', changedServices: 1, servicePorts: 2, endpoints: 2, ruleCount: 40, ok: true, error: null, conntrackActions: 0 },
  applied: { 'default/web:http': ['10.244.1.2:8080', '10.244.1.3:8080 (terminating)'], 'default/empty': [] },
  rejected: [
    { kind: 'Service', key: 'default/bad', field: 'spec.ports[0].port', message: 'must be between 1 and 65535, inclusive, got 70000', servedFromLastGood: false },
    { kind: 'Service', key: 'default/web', field: 'spec.sessionAffinityConfig', message: 'spec.sessionAffinityConfig: must not be set when sessionAffinity is None', servedFromLastGood: true, lastGoodResourceVersion: '41' },
  ],
  ignored: [{ kind: 'Service', key: 'default/headless', reason: 'headless (clusterIP None)' }],
  manifestErrors: { 'broken.json': 'broken.json: not valid JSON (Unexpected end of JSON input)' },
};

t.test('status output: mode, last sync, one line per Service port, problems', async (t) => {
  t.equal(
    formatProxyStatus(STATUS),
    `mode nftables, ready, 3 syncs
last sync: ok, partial (partial), 12 ms, 2 service ports, 2 endpoints, 40 rules written

SERVICE PORT       ENDPOINTS
default/empty      <none: refused>
default/web:http   10.244.1.2:8080, 10.244.1.3:8080 (terminating)

rejected objects:
  Service default/bad: spec.ports[0].port: must be between 1 and 65535, inclusive, got 70000 (no rules until fixed)
  Service default/web: spec.sessionAffinityConfig: must not be set when sessionAffinity is None (its last valid version, resourceVersion 41, is still served)

ignored objects:
  Service default/headless: headless (clusterIP None)

unreadable manifest files (their previous objects are kept):
  broken.json: broken.json: not valid JSON (Unexpected end of JSON input)
`,
  );
  t.match(formatProxyStatus({ ...STATUS, ready: false, syncs: 1, lastSync: { ...STATUS.lastSync!, ok: false, error: 'nft -f failed' } }), /^mode nftables, not synced yet, 1 sync\nlast sync: FAILED \(nft -f failed\)/);
});

/** An agent's health server whose /status is `status` (null: the agent runs without a proxy). */
async function agentAnswering(t: Test, status: ProxyStatus | null): Promise<string> {
  const source: HealthSource = {
    probe: () => ({ healthy: true, lastUpdated: 0, currentTime: 0 }),
    notReady: () => null,
    metrics: async () => ({ contentType: 'text/plain', text: '' }),
    status: () => status ?? 'none',
    proxyMode: () => status?.mode ?? 'none',
  };
  const srv = await startHealthServer({ metricsBindAddress: '127.0.0.1:0', healthzBindAddress: null, source, log: silentLogger() });
  t.teardown(() => srv.close());
  return srv.metricsAddress!;
}

/** An httpGet for which no agent answers. */
const agentDown: ProxyCmdDeps['httpGet'] = async () => {
  throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:10249'), { code: 'ECONNREFUSED' });
};

t.test('status asks the running agent: --agent URL, --metrics-bind-address, or the agent config\'s address', async (t) => {
  const addr = await agentAnswering(t, STATUS);
  const dir = mkdtempSync(`${tmpdir()}/nn-proxycmd-`);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(`${dir}/agent.json`, JSON.stringify({ runDir: dir, metricsBindAddress: addr }));
  for (const argv of [['--agent', `http://${addr}`], ['--agent', `http://${addr}/status`], ['--metrics-bind-address', addr], ['--config', `${dir}/agent.json`]]) {
    let out = '';
    let err = '';
    t.equal(await proxyCommand(['status', ...argv, '--run-dir', '/nonexistent-nodenet'], { removeRules: async () => false, stdout: (s) => (out += s), stderr: (s) => (err += s) }), 0, argv.join(' '));
    t.equal(out, formatProxyStatus(STATUS), 'the agent\'s answer, no file needed');
    t.equal(err, '', 'no note');
  }
  let out = '';
  t.equal(await proxyCommand(['status', '--agent', `http://${addr}`, '-o', 'json'], { removeRules: async () => false, stdout: (s) => (out += s) }), 0);
  t.same(JSON.parse(out), STATUS);
});

t.test('status: an agent without a proxy mode, or one that answers nonsense, is exit 1 saying so', async (t) => {
  const addr = await agentAnswering(t, null);
  const deps = { removeRules: async () => false, stdout: () => undefined };
  await t.rejects(proxyCommand(['status', '--agent', `http://${addr}`], deps), { name: 'CommandError', message: `the agent at http://${addr}/status answered 404: this agent runs without a proxy mode` });
  await t.rejects(proxyCommand(['status'], { ...deps, httpGet: async () => ({ status: 200, body: '{"mode": 1}' }) }), { name: 'CommandError', message: /answered something that is not a proxy status: .*mode/ });
});

t.test('status falls back to <run-dir>/proxy-status.json, with a note, only when no agent answers; --json prints it as is; no file either is exit 1', async (t) => {
  const dir = mkdtempSync(`${tmpdir()}/nn-proxycmd-`);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let err = '';
  const deps = { removeRules: async () => false, stdout: () => undefined, stderr: (s: string) => void (err += s), httpGet: agentDown };
  let out = '';
  await t.rejects(proxyCommand(['status', '--run-dir', dir], { ...deps, stdout: (s) => (out += s) }), {
    name: 'CommandError',
    message: /^no .*proxy-status\.json: is the agent running with a proxy mode \(and this --run-dir\)\? \(no agent answered at http:\/\/127\.0\.0\.1:10249\/status \(ECONNREFUSED\)\)$/,
  });
  writeFileSync(`${dir}/proxy-status.json`, JSON.stringify(STATUS));
  t.equal(await proxyCommand(['status', '--run-dir', dir], { ...deps, stdout: (s) => (out += s) }), 0);
  t.match(out, /default\/web:http {3}10\.244\.1\.2:8080/);
  t.equal(err, `note: no agent answered at http://127.0.0.1:10249/status (ECONNREFUSED); showing ${dir}/proxy-status.json, which the agent wrote after its last sync\n`);
  err = '';
  let asked = 0;
  t.equal(await proxyCommand(['status', '--run-dir', dir, '--metrics-bind-address', ''], { ...deps, httpGet: async () => { asked++; return { status: 500, body: '' }; } }), 0);
  t.equal(asked, 0, 'the metrics listener is off: nothing to ask');
  t.match(err, /^note: the agent serves no metrics address/);
  out = '';
  t.equal(await proxyCommand(['status', '--run-dir', dir, '--json'], { ...deps, stdout: (s) => (out += s) }), 0);
  t.same(JSON.parse(out), STATUS);
  out = '';
  t.equal(await proxyCommand(['status', '--run-dir', dir, '-o', 'yaml'], { ...deps, stdout: (s) => (out += s) }), 0);
  t.match(out, /^mode: nftables\nsyncs: 3\n/);
});

t.test('cleanup removes every mode (iptables, nftables, ipvs) with the prefix, in the named namespace', async (t) => {
  const calls: string[] = [];
  let out = '';
  const code = await proxyCommand(['cleanup', '--netns', '/proc/self/ns/net', '--prefix', 'NN'], {
    removeRules: async (o, mode) => {
      calls.push(`${mode} ${o.prefix} ${o.netns}`);
      return mode !== 'iptables';
    },
    stdout: (s) => (out += s),
  });
  t.equal(code, 0);
  t.same(calls, ['iptables NN /proc/self/ns/net', 'nftables NN /proc/self/ns/net', 'ipvs NN /proc/self/ns/net']);
  t.equal(out, 'iptables: nothing to remove (/proc/self/ns/net, prefix NN)\nnftables: rules removed (/proc/self/ns/net, prefix NN)\nipvs: rules removed (/proc/self/ns/net, prefix NN)\n');
  t.match(PROXY_USAGE, /cleanup: remove every proxy mode's rules .*IPVS mode's kube-ipvs0, ipsets, chains and virtual servers/s);
});

t.test('cleanup without --netns: this namespace, the default prefix, IPVS mode included', async (t) => {
  const calls: string[] = [];
  let out = '';
  t.equal(await proxyCommand(['cleanup'], { removeRules: async (o, mode) => (calls.push(`${mode} ${o.prefix} ${o.netns ?? '-'}`), false), stdout: (s) => (out += s) }), 0);
  t.same(calls, ['iptables KUBE -', 'nftables KUBE -', 'ipvs KUBE -']);
  t.match(out, /^ipvs: nothing to remove \(this network namespace, prefix KUBE\)$/m);
});

t.test('statusUrl: where the agent is asked', async (t) => {
  const f = (o: Record<string, string>) => new Map(Object.entries(o));
  t.equal(statusUrl(f({}), null), 'http://127.0.0.1:10249/status', 'kube-proxy\'s default metrics address');
  t.equal(statusUrl(f({ 'metrics-bind-address': '0.0.0.0:9000' }), null), 'http://127.0.0.1:9000/status', 'a wildcard is asked on loopback');
  t.equal(statusUrl(f({ 'metrics-bind-address': '[::]:9000' }), null), 'http://[::1]:9000/status');
  t.equal(statusUrl(f({ 'metrics-bind-address': '0' }), null), null);
  t.equal(statusUrl(f({ agent: 'http://10.0.0.1:10249/proxy/status' }), null), 'http://10.0.0.1:10249/proxy/status');
  t.throws(() => statusUrl(f({ agent: 'http://a:1', 'metrics-bind-address': '127.0.0.1:1' }), null), /--agent and --metrics-bind-address both/);
  t.throws(() => statusUrl(f({ agent: 'localhost:10249' }), null), /--agent "localhost:10249": the agent speaks http only/);
  t.throws(() => statusUrl(f({ agent: 'not a url' }), null), /--agent "not a url": expected a URL/);
  t.throws(() => statusUrl(f({ 'metrics-bind-address': '127.0.0.1:0' }), null), /expected the agent's IP:PORT/);
});

t.test('bad arguments are FlagErrors naming the argument', async (t) => {
  const deps = { removeRules: async () => false, stdout: () => undefined };
  t.equal(await proxyCommand([], deps), 2, 'no subcommand: the usage, exit 2');
  t.equal(await proxyCommand(['-h'], deps), 0);
  t.equal(await proxyCommand(['status', '--help'], deps), 0);
  await t.rejects(proxyCommand(['status', '--json=false'], deps), FlagError);
  await t.rejects(proxyCommand(['restart'], deps), /unknown proxy subcommand "restart"/);
  await t.rejects(proxyCommand(['cleanup', '--prefix', 'kube'], deps), /--prefix: proxy chain prefix "kube"/);
  await t.rejects(proxyCommand(['cleanup', '--netns', 'nn-does-not-exist-xyz'], deps), /--netns "nn-does-not-exist-xyz"/);
  await t.rejects(proxyCommand(['status', '--netns', 'x'], deps), /unknown flag --netns/);
  await t.rejects(proxyCommand(['status', 'extra'], deps), /unexpected argument "extra"/);
});
