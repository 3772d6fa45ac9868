import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { ProxyStatus } from '../node/proxy-status.js';
import { FlagError } from './flags.js';
import { formatProxyStatus, proxyCommand } from './proxy-cmd.js';

const STATUS: ProxyStatus = {
  mode: 'nftables',
  syncs: 3,
  ready: true,
  lastSync: { startedAt: 1, durationMs: 12, scope: 'partial', reason: 'partial', changedServices: 1, servicePorts: 2, endpoints: 2, ruleCount: 40, ok: true, error: null, conntrackActions: 0 },
  applied: { 'default/web:http': ['10.244.1.2:8080', '10.244.1.3:8080 (terminating)'], 'default/empty': [] },
  rejected: [{ kind: 'Service', key: 'default/bad', field: 'spec.ports[0].port', message: 'must be between 1 and 65535, inclusive, got 70000' }],
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

rejected objects (no rules until fixed):
  Service default/bad: spec.ports[0].port: must be between 1 and 65535, inclusive, got 70000

ignored objects:
  Service default/headless: headless (clusterIP None)

unreadable manifest files (their previous objects are kept):
  broken.json: broken.json: not valid JSON (Unexpected end of JSON input)
`,
  );
  t.match(formatProxyStatus({ ...STATUS, ready: false, syncs: 1, lastSync: { ...STATUS.lastSync!, ok: false, error: 'nft -f failed' } }), /^mode nftables, not synced yet, 1 sync\nlast sync: FAILED \(nft -f failed\)/);
});

t.test('status reads <run-dir>/proxy-status.json; --json prints it as is; a missing file is exit 1', async (t) => {
  const dir = mkdtempSync(`${tmpdir()}/nn-proxycmd-`);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const deps = { removeRules: async () => false, stdout: () => undefined };
  let out = '';
  await t.rejects(proxyCommand(['status', '--run-dir', dir], { ...deps, stdout: (s) => (out += s) }), { name: 'CommandError', message: /no .*proxy-status\.json: is the agent running/ });
  writeFileSync(`${dir}/proxy-status.json`, JSON.stringify(STATUS));
  t.equal(await proxyCommand(['status', '--run-dir', dir], { ...deps, stdout: (s) => (out += s) }), 0);
  t.match(out, /default\/web:http {3}10\.244\.1\.2:8080/);
  out = '';
  t.equal(await proxyCommand(['status', '--run-dir', dir, '--json'], { ...deps, stdout: (s) => (out += s) }), 0);
  t.same(JSON.parse(out), STATUS);
  out = '';
  t.equal(await proxyCommand(['status', '--run-dir', dir, '-o', 'yaml'], { ...deps, stdout: (s) => (out += s) }), 0);
  t.match(out, /^mode: nftables\nsyncs: 3\n/);
});

t.test('cleanup removes both modes with the prefix, in the named namespace', async (t) => {
  const calls: string[] = [];
  let out = '';
  const code = await proxyCommand(['cleanup', '--netns', '/proc/self/ns/net', '--prefix', 'NN'], {
    removeRules: async (o, mode) => {
      calls.push(`${mode} ${o.prefix} ${o.netns}`);
      return mode === 'nftables';
    },
    stdout: (s) => (out += s),
  });
  t.equal(code, 0);
  t.same(calls, ['iptables NN /proc/self/ns/net', 'nftables NN /proc/self/ns/net']);
  t.equal(out, 'iptables: nothing to remove (/proc/self/ns/net, prefix NN)\nnftables: rules removed (/proc/self/ns/net, prefix NN)\n');
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
