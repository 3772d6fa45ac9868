/**
 * `nodenet lab`'s flags (pure): up's defaults and checks, exec's target and
 * command, usage errors naming the flag.
 */
import t from 'tap';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode } from '../../../lib/errors/errors.js';
import { FakeRunner } from '../exec/runner.fake.js';
import { SpawnRunner, type Runner } from '../exec/runner.js';
import { IPVS_PROC_FILE } from '../netfilter/ipvs/ipvs-probe.js';
import { NO_IPVS_MESSAGE } from '../netfilter/ipvs/ipvs-types.js';
import { parseFlags } from './flags.js';
import { writeOwner } from '../lab/owner.js';
import { nodeConfig, overlayWarnings } from '../lab/up.js';
import { labAddNodeArgs, labCommand, labExecArgs, labName, labUpArgs, LAB_USAGE, type LabCmdDeps } from './lab-cmd.js';

const UP = { name: { type: 'string' }, nodes: { type: 'string' }, 'proxy-mode': { type: 'string' }, backend: { type: 'string' }, overlay: { type: 'string' }, 'run-pods': { type: 'string' }, 'bgp-route-reflectors': { type: 'string' }, 'etcd-members': { type: 'string' }, 'api-servers': { type: 'string' } } as const;

t.test('lab up --etcd-members N --api-servers M: the HA control plane; an even etcd refused with the seeds\' reason', async (t) => {
  t.same(labUpArgs(parseFlags(['--etcd-members', '3'], UP)).ha, { etcdMembers: 3, apiServers: 2 }, 'two API servers by default');
  t.same(labUpArgs(parseFlags(['--etcd-members', '5', '--api-servers', '3'], UP)).ha, { etcdMembers: 5, apiServers: 3 });
  t.same(labUpArgs(parseFlags(['--etcd-members', '1', '--api-servers', '1'], UP)).ha, { etcdMembers: 1, apiServers: 1 }, '1 member: etcd without HA');
  t.equal(labUpArgs(parseFlags([], UP)).ha, undefined, 'none: SQLite');
  t.throws(() => labUpArgs(parseFlags(['--etcd-members', '2'], UP)), { name: 'FlagError', message: /--etcd-members 2: an etcd cluster has an odd number of members .*two are worse than one/ });
  t.throws(() => labUpArgs(parseFlags(['--etcd-members', '4'], UP)), { message: /4 members need 3 for a quorum, so they survive no more failures than 3 do/ });
  t.throws(() => labUpArgs(parseFlags(['--etcd-members', '9'], UP)), { message: /--etcd-members must be 1, 3, 5 or 7, got 9/ });
  t.throws(() => labUpArgs(parseFlags(['--api-servers', '2'], UP)), { message: /--api-servers: several API servers share etcd; give --etcd-members too/ });
  t.throws(() => labUpArgs(parseFlags(['--etcd-members', '3', '--api-servers', '0'], UP)), { message: /--api-servers must be 1..9, got 0/ });
  t.throws(() => labUpArgs(parseFlags(['--etcd-members', 'three'], UP)), { message: /--etcd-members "three": a number/ });
});

t.test('lab up: the full cluster by default', async (t) => {
  t.same(labUpArgs(parseFlags([], UP)), { name: 'default', nodes: 2, proxyMode: 'iptables', overlay: 'vxlan', runPods: true });
  t.same(labUpArgs(parseFlags(['--name', 'b2', '--nodes', '3', '--proxy-mode', 'nftables', '--overlay', 'none', '--run-pods', 'false'], UP)), { name: 'b2', nodes: 3, proxyMode: 'nftables', overlay: 'none', runPods: false });
  t.same(labUpArgs(parseFlags(['--proxy-mode', 'ipvs'], UP)), { name: 'default', nodes: 2, proxyMode: 'ipvs', overlay: 'vxlan', runPods: true }, 'ipvs is a mode like the others');
  t.same(labUpArgs(parseFlags(['--backend', 'host-gw'], UP)).overlay, 'host-gw', '--backend host-gw');
  t.same(labUpArgs(parseFlags(['--backend', 'host-gw', '--overlay', 'host-gw'], UP)).overlay, 'host-gw', 'both, agreeing');
  t.same(labUpArgs(parseFlags(['--backend', 'bgp'], UP)), { name: 'default', nodes: 2, proxyMode: 'iptables', overlay: 'bgp', runPods: true }, '--backend bgp: a full mesh');
  t.same(labUpArgs(parseFlags(['--backend', 'bgp', '--bgp-route-reflectors', 'n1,n20,n1'], UP)).bgpRouteReflectors, ['n1', 'n20'], 'route reflectors, each once');
});

t.test('lab nodes\' agent config: the lab\'s, with --bgp-route-reflector on the reflectors only', async (t) => {
  const rec = { proxyMode: 'iptables', overlay: 'bgp', runPods: true, bgpRouteReflectors: ['n1'] };
  t.same(nodeConfig(rec, 'n1'), { proxyMode: 'iptables', backend: 'bgp', runPods: true, bgpRouteReflector: true });
  t.same(nodeConfig(rec, 'n2'), { proxyMode: 'iptables', backend: 'bgp', runPods: true });
  t.same(nodeConfig({ ...rec, overlay: 'host-gw', bgpRouteReflectors: [] }, 'n1'), { proxyMode: 'iptables', backend: 'host-gw', runPods: true });
});

t.test('lab up: bad flags are usage errors', async (t) => {
  const bad: [string[], RegExp][] = [
    [['--nodes', '0'], /--nodes "0"/],
    [['--nodes', 'two'], /--nodes "two"/],
    [['--nodes', '21'], /1\.\.20/],
    [['--proxy-mode', 'userspace'], /^--proxy-mode must be iptables, nftables or ipvs, got "userspace"$/],
    [['--proxy-mode', 'IPVS'], /--proxy-mode must be iptables, nftables or ipvs/],
    [['--overlay', 'geneve'], /^--overlay must be vxlan, host-gw, (bgp )?or none, got "geneve"$/],
    [['--backend', 'udp'], /^--backend must be vxlan, host-gw, (bgp )?or none, got "udp"$/],
    [['--backend', 'host-gw', '--overlay', 'vxlan'], /^--backend host-gw and --overlay vxlan disagree: --overlay is the older name of --backend; give one$/],
    [['--run-pods', 'yes'], /--run-pods must be true or false/],
    [['--bgp-route-reflectors', 'n1'], /^--bgp-route-reflectors is for --backend bgp, not vxlan$/],
    [['--backend', 'bgp', '--bgp-route-reflectors', 'n1,node2'], /^--bgp-route-reflectors: "node2" is not a lab node name \(n1\.\.n20, comma-separated\)$/],
    [['--backend', 'bgp', '--bgp-route-reflectors', 'n21'], /"n21" is not a lab node name/],
    [['--name', 'My-Lab'], /--name: lab name "My-Lab"/],
    [['extra'], /unexpected argument "extra"/],
  ];
  for (const [argv, msg] of bad) t.throws(() => labUpArgs(parseFlags(argv, UP)), { name: 'FlagError', message: msg }, argv.join(' '));
});

t.test('lab exec: one target, then the command after --', async (t) => {
  const spec = { name: { type: 'string' } } as const;
  t.same(labExecArgs(parseFlags(['--name', 'x', 'n1', '--', 'ip', '-br', 'addr'], spec)), { name: 'x', target: 'n1', cmd: ['ip', '-br', 'addr'] });
  t.same(labExecArgs(parseFlags(['default/web', '--', 'hostname'], spec)).name, 'default');
  t.throws(() => labExecArgs(parseFlags(['n1'], spec)), /a command after --/);
  t.throws(() => labExecArgs(parseFlags(['--', 'ls'], spec)), /needs a target/);
  t.throws(() => labExecArgs(parseFlags(['n1', 'ls', '--', 'x'], spec)), /one target, got "n1" "ls" \(is the -- missing\?\)/);
  t.equal(labName(parseFlags([], spec)), 'default');
});

/** labCommand's deps with this runner; cleanupLabs must not be reached. */
function deps(runner: Runner, out: string[], ipvsExists?: (p: string) => boolean): LabCmdDeps {
  return {
    runner,
    cleanupLabs: async () => {
      throw new Error('cleanupLabs is not lab up\'s');
    },
    stdout: (s) => void out.push(s),
    ...(ipvsExists ? { ipvsExists } : {}),
  };
}

t.test('lab up --proxy-mode ipvs on a kernel without IPVS: refused before anything is made', async (t) => {
  // Only modprobe has a handler: any other command (ip netns, nsenter, the control plane...) would fail the test.
  const runner = new FakeRunner().on((argv) => (argv.join(' ') === 'modprobe ip_vs' ? { stdout: '', stderr: 'modprobe: FATAL: Module ip_vs not found in directory /lib/modules/6.18.0\n', exitCode: 1 } : undefined));
  const out: string[] = [];
  await t.rejects(labCommand(['up', '--proxy-mode', 'ipvs', '--name', 'zz'], deps(runner, out, () => false)), {
    name: 'NodenetError',
    code: ErrorCode.NotAvailable,
    message: `lab up --proxy-mode ipvs: ${NO_IPVS_MESSAGE}; no /proc/net/ip_vs, and modprobe ip_vs exited 1: modprobe: FATAL: Module ip_vs not found in directory /lib/modules/6.18.0`,
  });
  t.same(runner.calls.map((c) => c.argv.join(' ')), ['modprobe ip_vs'], 'the probe ran, nothing else');
  t.same(out, [], 'no progress line: nothing was started');
});

t.test('lab up in the other modes does not look for IPVS', async (t) => {
  for (const mode of ['iptables', 'nftables']) {
    const runner = new FakeRunner(); // no handler at all: the first command lab up runs fails, and it must not be modprobe
    let looked = false;
    await t.rejects(labCommand(['up', '--proxy-mode', mode, '--name', 'zz'], deps(runner, [], () => (looked = true))), /FakeRunner: no handler for ip netns list/, mode);
    t.equal(looked, false, `${mode}: no IPVS probe`);
    t.notOk(runner.calls.some((c) => c.argv[0] === 'modprobe'), `${mode}: no modprobe`);
  }
});

const HAS_IPVS = existsSync(IPVS_PROC_FILE) && `this kernel has IPVS (${IPVS_PROC_FILE} exists): the refusal cannot be checked here`;

t.test('lab up --proxy-mode ipvs on this host, for real: refused (this kernel has no IPVS)', { skip: HAS_IPVS }, async (t) => {
  // The real modprobe and /proc; anything else lab up would run is refused, so nothing can be made even if the probe said yes.
  const real = new SpawnRunner();
  const ran: string[] = [];
  const runner: Runner = {
    run: async (argv, opts) => {
      ran.push(argv.join(' '));
      if (argv[0] !== 'modprobe') throw new Error(`lab up went on to ${argv.join(' ')}`);
      return real.run(argv, opts);
    },
  };
  const out: string[] = [];
  await t.rejects(labCommand(['up', '--proxy-mode', 'ipvs', '--name', 'zz'], deps(runner, out)), { code: ErrorCode.NotAvailable, message: /^lab up --proxy-mode ipvs: this kernel has no IPVS/ });
  t.same(ran, ['modprobe ip_vs']);
  t.same(out, []);
});

t.test('the usage lists ipvs and says it needs IPVS', async (t) => {
  t.match(LAB_USAGE, /--proxy-mode iptables\|nftables\|ipvs/);
  t.match(LAB_USAGE, /ipvs needs a kernel with IPVS/);
});

t.test('lab add-node: at most one NODE; the usage has it', async (t) => {
  const spec = { name: { type: 'string' } } as const;
  t.same(labAddNodeArgs(parseFlags([], spec)), { name: 'default' });
  t.same(labAddNodeArgs(parseFlags(['--name', 'x', 'n3'], spec)), { name: 'x', node: 'n3' });
  t.throws(() => labAddNodeArgs(parseFlags(['n3', 'n4'], spec)), { name: 'FlagError', message: 'add-node takes at most one NODE, got "n3" "n4"' });
  t.throws(() => labAddNodeArgs(parseFlags(['--name', 'Bad'], spec)), { name: 'FlagError', message: /--name: lab name "Bad"/ });
  t.match(LAB_USAGE, /nodenet lab add-node \[--name NAME\] \[NODE\]/);
  t.match(LAB_USAGE, /add-node: one more node in a running lab, configured as the others/);
});

t.test('lab add-node refuses, before it makes anything, a lab it cannot add to', async (t) => {
  // A lab directory as `lab up` leaves it, in a root of this test's own; no command may run (no runner handler).
  const root = mkdtempSync(join(tmpdir(), 'nn-labcmd-'));
  const saved = process.env['NODENET_LAB_ROOT'];
  process.env['NODENET_LAB_ROOT'] = root;
  t.teardown(() => {
    if (saved === undefined) delete process.env['NODENET_LAB_ROOT'];
    else process.env['NODENET_LAB_ROOT'] = saved;
    rmSync(root, { recursive: true, force: true });
  });
  const dir = `${root}/zz`;
  const runner = new FakeRunner();
  const out: string[] = [];
  const add = (...args: string[]) => labCommand(['add-node', '--name', 'zz', ...args], deps(runner, out));
  await t.rejects(add(), { code: ErrorCode.NotFound, message: `no lab zz made by nodenet lab up (no ${dir}/lab.json)` });
  mkdirSync(`${dir}/control-plane/nodes`, { recursive: true });
  writeFileSync(`${dir}/lab.json`, JSON.stringify({ name: 'zz', nodes: ['n1', 'n2'], port: 40000, kubeconfig: `${dir}/kubeconfig`, proxyMode: 'iptables', overlay: 'vxlan', runPods: true, ha: null, createdAt: '2026-12-05T00:00:00Z' }));
  // This pid with another start time: a recycled pid, so the control plane that owned the lab is gone.
  writeFileSync(`${dir}/owner.json`, JSON.stringify({ pid: process.pid, startTime: '1', tag: 'zz', namespacePrefix: 'nn-zz-', createdAt: '2026-12-05T00:00:00Z' }));
  await t.rejects(add(), { code: ErrorCode.NotAvailable, message: `lab zz is not running (its owner (pid ${process.pid}) is gone): nodenet lab up --name zz makes it again` });
  writeOwner(dir, { tag: 'zz', namespacePrefix: 'nn-zz-' }); // this process: running
  await t.rejects(add('n2'), { code: ErrorCode.InvalidConfig, message: 'lab zz: the lab has a node n2 already (n1, n2)' });
  await t.rejects(add('web'), { code: ErrorCode.InvalidConfig, message: 'lab zz: node "web": a lab\'s nodes are n1..n20' });
  await t.rejects(add(), { code: ErrorCode.NotAvailable, message: /^lab zz's control plane has no credentials for n3 \(no .*\/control-plane\/nodes\/n3\.kubeconfig: a lab made before add-node/ });
  writeFileSync(`${dir}/control-plane/nodes/n3.kubeconfig`, '');
  mkdirSync(`${dir}/n3`);
  await t.rejects(add('n3'), { code: ErrorCode.AlreadyExists, message: /^lab zz: .*\/n3 exists \(another add-node of n3 runs, or one crashed/ });
  t.same(runner.calls, [], 'no command ran');
  t.same(out, [], 'nothing printed');
  t.same(readdirSync(dir).sort(), ['control-plane', 'lab.json', 'n3', 'owner.json'], 'nothing made');
});

t.test('lab status: the overlay\'s Warning Events on the Nodes, newest last; other Events left out', async (t) => {
  const ev = (reason: string, node: string, last: string, extra: Record<string, unknown> = {}) => ({
    type: 'Warning', reason, message: `${reason} about ${node}`, count: 2, lastTimestamp: last, source: { component: 'nodenet-overlay', host: 'n1' },
    involvedObject: { kind: 'Node', name: node }, ...extra,
  });
  const rows = overlayWarnings({ items: [
    ev('OverlayPeerNotDirect', 'n3', '2026-12-05T10:00:02Z'),
    ev('OverlayBackendMismatch', 'n2', '2026-12-05T10:00:01Z'),
    ev('InvalidObjectSkipped', 'n4', '2026-12-05T10:00:00Z'),
    ev('OverlayPeerNotDirect', 'p', '2026-12-05T10:00:00Z', { involvedObject: { kind: 'Pod', name: 'p' } }),
    { ...ev('OverlayPeerNotDirect', 'n5', '2026-12-05T10:00:00Z'), type: 'Normal' },
  ] });
  t.same(rows, [
    { node: 'n2', from: 'n1', reason: 'OverlayBackendMismatch', count: 2, last: '2026-12-05T10:00:01Z', message: 'OverlayBackendMismatch about n2' },
    { node: 'n3', from: 'n1', reason: 'OverlayPeerNotDirect', count: 2, last: '2026-12-05T10:00:02Z', message: 'OverlayPeerNotDirect about n3' },
  ]);
  t.same(overlayWarnings({}), [], 'no items');
});
