/**
 * proxy-host against a real scratch namespace (root): the node sysctls are
 * set in that namespace only, the status file reports what was applied, the
 * rules stay when the host stops, and starting in the other mode removes the
 * first mode's rules (both ways).
 */
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { SpawnRunner } from '../exec/runner.js';
import { silentLogger } from '../../../lib/log/log.js';
import { parseCidr } from '../../../lib/net/ip.js';
import { makeEndpointSlice, makeService } from '../testing/addresses.js';
import { removeProxyRules, startProxyHost } from './compose.js';
import type { ProxyHost } from './proxy-host.js';
import { readProxyStatus, type ProxyStatus } from './proxy-status.js';

const runner = new SpawnRunner();
const NS = `nn-phost-${process.pid}`;
const NSPATH = `/var/run/netns/${NS}`;
const dir = mkdtempSync(`${tmpdir()}/nn-phost-`);
const statusFile = `${dir}/status.json`;
const rootSysctl = async () => (await runner.run(['sysctl', '-n', 'net.ipv4.ip_forward', 'net.ipv4.conf.all.send_redirects'])).stdout;
const rootBefore = await rootSysctl();

t.teardown(async () => {
  await runner.run(['ip', 'netns', 'del', NS], { allowFailure: true });
  rmSync(dir, { recursive: true, force: true });
});
await runner.run(['ip', 'netns', 'add', NS]);
await runner.run(['ip', '-n', NS, 'link', 'add', 'br0', 'type', 'bridge']);
await runner.run(['ip', '-n', NS, 'addr', 'add', '10.244.1.1/24', 'dev', 'br0']);
writeFileSync(
  `${dir}/web.json`,
  JSON.stringify([
    makeService({ name: 'web', clusterIP: '10.96.0.10', ports: [{ port: 80, targetPort: 8080 }] }),
    makeEndpointSlice({ service: 'web', ports: [{ port: 8080 }], endpoints: [{ ip: '10.244.1.5', nodeName: 'n1' }] }),
  ]),
);

async function start(mode: 'iptables' | 'nftables'): Promise<ProxyHost> {
  rmSync(statusFile, { force: true }); // synced() must see this host's status, not the last one's
  return startProxyHost({
    mode,
    nodeName: 'n1',
    clusterCIDR: parseCidr('10.244.0.0/16').cidr,
    prefix: 'KUBE',
    clusterIPPing: 'reject',
    netns: NSPATH,
    runner,
    log: silentLogger(),
    manifestsDir: dir,
    statusFile,
    minSyncIntervalMs: 0,
  });
}
function status(): ProxyStatus {
  return readProxyStatus(statusFile) ?? ({ ready: false } as ProxyStatus);
}
async function synced(): Promise<void> {
  for (let i = 0; i < 200 && !status().ready; i++) await new Promise((r) => setTimeout(r, 25));
}
const iptablesNat = async () => (await runner.run(['iptables-save', '-t', 'nat'], { netns: NSPATH })).stdout;
const nftTable = async () => (await runner.run(['nft', 'list', 'tables'], { netns: NSPATH })).stdout;

t.test('sysctls in the node namespace only; status; rules outlive stop(); the other mode is cleaned at start', async (t) => {
  const a = await start('iptables');
  await synced();
  const sysctls = (await runner.run(['sysctl', '-n', 'net.ipv4.ip_forward', 'net.bridge.bridge-nf-call-iptables', 'net.ipv4.conf.all.route_localnet', 'net.ipv4.conf.all.send_redirects'], { netns: NSPATH })).stdout;
  t.same(sysctls.trim().split('\n'), ['1', '1', '1', '0']);
  t.equal(await rootSysctl(), rootBefore, 'root namespace sysctls untouched');
  t.match(status(), { mode: 'iptables', ready: true, applied: { 'default/web': ['10.244.1.5:8080'] }, lastSync: { ok: true, reason: 'first' } });
  await a.stop();
  t.match(await iptablesNat(), /-A KUBE-SERVICES .* -j KUBE-SVC-/, 'iptables rules stay after stop()');

  const b = await start('nftables');
  await synced();
  t.notMatch(await iptablesNat(), /KUBE-/, 'nftables mode removed the iptables-mode chains');
  t.match(await nftTable(), /table ip kube-proxy/);
  t.match(status(), { mode: 'nftables', ready: true, applied: { 'default/web': ['10.244.1.5:8080'] } });
  await b.stop();

  const c = await start('iptables');
  await synced();
  t.notMatch(await nftTable(), /kube-proxy/, 'iptables mode removed the nftables table');
  t.match(await iptablesNat(), /KUBE-SVC-/);
  await c.stop();
  const rm = (mode: 'iptables' | 'nftables') => removeProxyRules({ runner, log: silentLogger(), netns: NSPATH, prefix: 'KUBE' }, mode);
  t.equal(await rm('nftables'), false, 'no nftables rules to remove');
  t.equal(await rm('iptables'), true, 'removeProxyRules (nodenet proxy cleanup) removes the iptables rules');
  t.notMatch(await iptablesNat(), /KUBE-/);
  t.equal(await rm('iptables'), false, 'and is idempotent');

  const d = await start('nftables');
  await synced();
  await d.cleanup();
  await d.stop();
  t.notMatch(await nftTable(), /kube-proxy/, 'ProxyHost.cleanup() removes the mode\'s rules');
});
