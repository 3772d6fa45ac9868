/**
 * `nodenet trace` on a node in IPVS mode, without root and without IPVS:
 * the real IpvsBackend's output (sets, IPVS table, kube-ipvs0, iptables
 * rules) served from the fakes through a FakeRunner that answers only the
 * read-only commands trace runs, in the node's namespace
 * (testing/ipvs-node.ts).
 */
import t from 'tap';
import { NetnsNotFoundError } from '../../../lib/errors/errors.js';
import type { FakeRunner } from '../exec/runner.fake.js';
import { silentLogger } from '../../../lib/log/log.js';
import { FakeIptables } from '../netfilter/iptables/iptables.fake.js';
import { IptablesBackend } from '../proxy/iptables/proxier.js';
import { CFG, ep, EXTERNAL_CLIENT, NODE_IP, snapshot, svc } from '../proxy/test-fixtures.js';
import { ipvsNodeRunner, ipvsNodeState, type IpvsNodeState } from '../testing/ipvs-node.js';
import { traceCommand, type TraceReport } from './trace-cmd.js';

const NS = 'nn-trc-ipvs';
const NS_PATH = `/run/netns/${NS}`;
const POD = '10.180.0.9';
const SNAP = snapshot(
  [svc('ns1', 'web', '172.30.0.41', { nodePort: 3001 }), [ep('10.180.0.1'), ep('10.180.0.2'), ep('10.180.0.3', { ready: false, serving: true, terminating: true })]],
  [svc('ns1', 'sticky', '172.30.0.42', { affinity: 10800 }), [ep('10.180.0.4')]],
);
const STATE = await ipvsNodeState(SNAP, CFG);
const OFF = await ipvsNodeState(SNAP, CFG, { filter: false });

const checkNetns = (p: string): void => {
  if (p !== NS_PATH) throw new NetnsNotFoundError(p);
};

/** As netlink lists a node in IPVS mode: its own addresses and the VIPs on kube-ipvs0. */
function addressesOf(state: IpvsNodeState) {
  return async (netns?: string): Promise<string[]> => {
    if (netns !== NS_PATH) throw new Error(`no namespace ${netns}`);
    return ['127.0.0.1', NODE_IP, ...state.vips];
  };
}

async function run(runner: FakeRunner, argv: readonly string[], state = STATE): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await traceCommand(argv, { runner, localAddresses: addressesOf(state), checkNetns, stdout: (s) => (out += s), stderr: (s) => (err += s) });
  return { code, out, err };
}
const cmds = (r: FakeRunner): string[] => r.calls.map((c) => c.argv.join(' '));

t.test('auto-detection: IPVS mode\'s rules → ipvs; every command read-only and in the namespace', async (t) => {
  const runner = ipvsNodeRunner(STATE, NS_PATH);
  const r = await run(runner, ['--netns', NS, POD, 'tcp', '172.30.0.41', '80']);
  t.equal(r.code, 0, r.err);
  t.equal(r.err, '');
  t.match(r.out, `trace ${POD} -> 172.30.0.41:80 (tcp) in ${NS} (ipvs, iptables-nft-save, ipset save, ipvsadm -Ln)`);
  t.same(cmds(runner).sort(), ['ip -j addr show dev kube-ipvs0', 'ipset save', 'iptables -V', 'iptables-nft-save', 'ipvsadm -L -n', 'nft list table ip kube-proxy'].sort());
  t.ok(runner.calls.every((c) => c.opts.netns === NS_PATH));
});

t.test('--mode ipvs: the report with its IPVS section', async (t) => {
  const r = await run(ipvsNodeRunner(STATE, NS_PATH), ['--netns', NS, '--mode', 'ipvs', POD, 'tcp', '172.30.0.41', '80']);
  t.equal(r.code, 0, r.err);
  const l = r.out.trimEnd().split('\n');
  t.same(l.slice(l.indexOf('ipvs:')), [
    'ipvs:',
    '  route: 172.30.0.41 is local (on kube-ipvs0): INPUT',
    '  virtual service: TCP/172.30.0.41:80 (scheduler rr, not persistent) on LOCAL_IN',
    '  real servers:',
    '    10.180.0.1:80 weight 1',
    '    10.180.0.2:80 weight 1',
    '    10.180.0.3:80 weight 0 (draining: no new connections)',
    '  rr picks one of 2 real server(s) with weight > 0; 1 draining (weight 0) take no new connection',
    'destination: one of: 10.180.0.1:80, 10.180.0.2:80',
    'masquerade: no',
  ]);
  t.ok(l.includes('  ipvs/LOCAL_IN: TCP/172.30.0.41:80 rr'), 'the IPVS step among the chains');

  const sticky = await run(ipvsNodeRunner(STATE, NS_PATH), ['--netns', NS, '--mode', 'ipvs', POD, 'tcp', '172.30.0.42', '80']);
  t.match(sticky.out, /virtual service: TCP\/172\.30\.0\.42:80 \(scheduler rr, persistent 10800 s\)/);
  t.match(sticky.out, /destination: 10\.180\.0\.4:80\n/);

  const np = await run(ipvsNodeRunner(STATE, NS_PATH), ['--netns', NS, EXTERNAL_CLIENT, 'tcp', NODE_IP, '3001']);
  t.match(np.out, /destination: one of: 10\.180\.0\.1:80, 10\.180\.0\.2:80\nmasquerade: yes\n$/, 'NodePort from outside: masqueraded');
  t.match(np.out, /entry: prerouting/);

  const j = await run(ipvsNodeRunner(STATE, NS_PATH), ['--netns', NS, '-o', 'json', POD, 'tcp', '172.30.0.41', '80']);
  const rep = JSON.parse(j.out) as TraceReport;
  t.match(rep, {
    mode: 'ipvs', source: 'nft', destination: '10.180.0.1:80, 10.180.0.2:80', endpoints: ['10.180.0.1:80', '10.180.0.2:80'], masquerade: false, skippedRules: [],
    ipvs: { virtualService: 'TCP/172.30.0.41:80', scheduler: 'rr', persistentTimeout: 0, realServers: [{ address: '10.180.0.1', weight: 1 }, { address: '10.180.0.2', weight: 1 }, { address: '10.180.0.3', weight: 0, draining: true }] },
  });
  t.ok(rep.matched?.length, 'the matched rules too');
});

t.test('a ping to a ClusterIP: REJECT with the filter on, LOCAL with it off', async (t) => {
  const on = await run(ipvsNodeRunner(STATE, NS_PATH), ['--netns', NS, POD, 'icmp', '172.30.0.41']);
  t.equal(on.code, 0, on.err);
  t.match(on.out, /destination: REJECT \(refused: the sender gets an ICMP error at once\)\n/);
  const off = await run(ipvsNodeRunner(OFF, NS_PATH), ['--netns', NS, POD, 'icmp', '172.30.0.41'], OFF);
  t.equal(off.code, 0, off.err);
  t.match(off.out, /destination: LOCAL: answered by the node \(kube-ipvs0 holds the VIP\)\n/);
  const port = await run(ipvsNodeRunner(STATE, NS_PATH), ['--netns', NS, POD, 'tcp', '172.30.0.41', '8443']);
  t.match(port.out, /destination: REJECT/, 'a VIP port that is not a service port, filter on');
});

t.test('--mode ipvs on a node in iptables mode: exit 1, says so', async (t) => {
  const f = new FakeIptables();
  await new IptablesBackend({ iptables: f, nodeConfig: CFG, log: silentLogger() }).sync(SNAP, { full: true });
  const save = (await f.save('filter')) + (await f.save('nat'));
  const runner = ipvsNodeRunner(STATE, NS_PATH, { 'iptables-nft-save': { stdout: save, stderr: '', exitCode: 0 } });
  const r = await run(runner, ['--netns', NS, '--mode', 'ipvs', POD, 'tcp', '172.30.0.41', '80']);
  t.equal(r.code, 1);
  t.match(r.err, /no KUBE-IPVS-FILTER chain in the filter table in \/run\/netns\/nn-trc-ipvs: these are not IPVS mode's rules \(try --mode iptables\)/);
  t.notOk(cmds(runner).some((c) => c.startsWith('ipvsadm') || c.startsWith('ipset')), 'IPVS state not read');
  const auto = ipvsNodeRunner(STATE, NS_PATH, { 'iptables-nft-save': { stdout: save, stderr: '', exitCode: 0 } });
  const a = await run(auto, ['--netns', NS, POD, 'tcp', '172.30.0.41', '80']);
  t.match(a.out, /\(iptables, iptables-nft-save\)/, 'auto: iptables mode');
  t.notOk(cmds(auto).some((c) => c.startsWith('ipvsadm') || c.startsWith('ipset')));
});

t.test('IPVS state that cannot be read: exit 1 naming the tool; kube-ipvs0 missing: no VIP is local', async (t) => {
  const noIpvs = ipvsNodeRunner(STATE, NS_PATH, { 'ipvsadm -L -n': { stdout: '', stderr: "Can't initialize ipvs: Protocol not available\n", exitCode: 2 } });
  const r = await run(noIpvs, ['--netns', NS, POD, 'tcp', '172.30.0.41', '80']);
  t.equal(r.code, 1);
  t.match(r.err, /`ipvsadm -L -n` exited 2: Can't initialize ipvs: Protocol not available/);
  const noDev = ipvsNodeRunner(STATE, NS_PATH, { 'ip -j addr show dev kube-ipvs0': { stdout: '', stderr: 'Device "kube-ipvs0" does not exist.\n', exitCode: 1 } });
  const d = await run(noDev, ['--netns', NS, '-o', 'json', POD, 'tcp', '172.30.0.41', '80'], { ...STATE, vips: [] });
  t.equal(d.code, 0, d.err);
  t.match(JSON.parse(d.out), { destination: 'ACCEPT', ipvs: { virtualService: null, route: '172.30.0.41 is not local: FORWARD' } });
});
