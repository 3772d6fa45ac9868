/**
 * bench/cni: CNI ADD and DEL through the real nodenet-cni shim and agent,
 * side by side, in one run, with Debian's reference `bridge` + `host-local`
 * plugins and two floors: `node -e 0`, the floor of a Node plugin, which
 * issue 24's targets are set against, and `/bin/true`, the floor of any
 * native plugin (the shim is C now).
 *
 *   npm run bench:cni -- [--pods 48] [--services 10000] [--iptables legacy|nft] [--out FILE]
 *
 * Cases, each at concurrency 1 and 16, N pods per batch:
 * - node -e 0: a bare Node process started the way a runtime starts a
 *   plugin (the floor for any Node plugin, and the targets' reference);
 * - /bin/true: a bare exec, the same way (what any plugin costs to start);
 * - nodenet, 0 Services: the shim → agent, ipMasq on;
 * - nodenet, N Services: the same with the agent's proxy in iptables mode
 *   holding N Services (2 endpoints each): ADD must not grow with them;
 * - reference bridge + host-local (ipMasq off: with it the reference plugin
 *   runs iptables per pod).
 * Every plugin runs inside the virtual node's namespace, as a runtime on
 * that node would run it: the executable itself (its shebang), with CNI_*
 * in a runtime's environment.
 *
 * Reported per case: ADD and DEL wall p50/p99 and per second, the agent's
 * own ADD and DEL time (the `durationMs` it logs for each call), and CPU per
 * ADD (the plugin processes, and the agent) to show where the time goes. The
 * kernel's veth deletion (over netlink, in the same namespace) is timed too:
 * an agent DEL cannot be faster than that. Then issue 24's targets against
 * the floor of the same run (report.ts): ADD p50 at concurrency 1 at most the
 * floor's + 8 ms, ADDs/s at concurrency 16 at least 0.8 × the floor's, with
 * the reference beside them; and the load average at the start and the end.
 *
 * The N-Service case loads its rules with the iptables backend named by
 * --iptables (legacy by default: its full load takes seconds, nf_tables'
 * takes minutes at 10,000 Services; what is measured, a CNI call, touches
 * neither).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { release } from 'node:os';
import { REPO, SHIM, type VNode } from '../../agent/src/lab/lab.js';
import { newLab } from '../../agent/src/testing/lab.js';
import { parseFlags } from '../../agent/src/cli/flags.js';
import { openNetlink } from '../../agent/src/netlink/netlink.js';
import { toNetnsPath } from '../../agent/src/netns/netns.js';
import { initialEndpoints, service, slice } from '../lib/services.js';
import { percentileOf as pct } from '../lib/stats.js';
import { checkTargets, table, targetsTable, type PluginKind, type Row } from './report.js';

const REF_DIR = '/usr/lib/cni';

interface Plugin {
  readonly name: string;
  readonly argv: readonly string[];
  readonly conf: (i: number) => unknown;
  /** The agent whose log and CPU are read, if any. */
  readonly node?: VNode;
  /** Container ID prefix (to find the agent's log lines). */
  readonly prefix: string;
  readonly kind: PluginKind;
}

const TICK_MS = 10; // USER_HZ 100
function childCpuMs(): number {
  const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[13]) + Number(f[14])) * TICK_MS;
}
function processCpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_MS;
}

/** Runs one plugin call inside the node namespace as a runtime would; resolves with the wall time. */
function call(nodeNs: string, argv: readonly string[], env: Record<string, string>, stdin: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const c = spawn('nsenter', [`--net=${nodeNs}`, '--', ...argv], { env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    c.stdout.on('data', (b: Buffer) => (out += b));
    c.stderr.on('data', (b: Buffer) => (out += b));
    c.on('error', reject);
    c.on('close', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${argv.join(' ')} ${env['CNI_COMMAND'] ?? ''} exited ${code}: ${out.slice(0, 500)}`))));
    c.stdin.on('error', () => {}); // /bin/true and `node -e 0` read no stdin and may be gone first
    c.stdin.end(stdin);
  });
}

async function pool<T>(items: readonly T[], conc: number, fn: (x: T) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(Array.from({ length: conc }, async () => {
    while (i < items.length) await fn(items[i++]!);
  }));
}

/** The agent's `durationMs` for each CNI call of this batch, from its JSON log. */
function agentDurations(node: VNode, cmd: 'ADD' | 'DEL', idPrefix: string): number[] {
  const out: number[] = [];
  for (const line of readFileSync(node.logFile, 'utf8').split('\n')) {
    if (!line.includes('"CNI call done"')) continue;
    const o = JSON.parse(line) as { cmd?: string; containerID?: string; durationMs?: number };
    if (o.cmd === cmd && o.containerID?.startsWith(idPrefix) && typeof o.durationMs === 'number') out.push(o.durationMs);
  }
  return out;
}

async function batch(plugin: Plugin, nodeNs: string, netns: readonly string[], conc: number): Promise<Row> {
  const tag = `${plugin.prefix}c${conc}x`;
  const ids = netns.map((p, i) => ({ id: `${tag}${i}`, p, i }));
  const envOf = (cmd: string, x: { id: string; p: string }) => ({ CNI_COMMAND: cmd, CNI_CONTAINERID: x.id, CNI_NETNS: x.p, CNI_IFNAME: 'eth0', CNI_PATH: REF_DIR });
  const add: number[] = [];
  const del: number[] = [];
  const cpu0 = childCpuMs();
  const agentPid = plugin.node?.agent?.pid;
  const agent0 = agentPid ? processCpuMs(agentPid) : 0;
  const t0 = performance.now();
  await pool(ids, conc, async (x) => void add.push(await call(nodeNs, plugin.argv, envOf('ADD', x), JSON.stringify(plugin.conf(x.i)))));
  const addWall = performance.now() - t0;
  const cpuAdd = childCpuMs() - cpu0;
  const agentCpuAdd = agentPid ? processCpuMs(agentPid) - agent0 : null;
  const t1 = performance.now();
  await pool(ids, conc, async (x) => void del.push(await call(nodeNs, plugin.argv, envOf('DEL', x), JSON.stringify(plugin.conf(x.i)))));
  const delWall = performance.now() - t1;
  const n = netns.length;
  const aAdd = plugin.node ? agentDurations(plugin.node, 'ADD', tag) : [];
  const aDel = plugin.node ? agentDurations(plugin.node, 'DEL', tag) : [];
  return {
    plugin: plugin.name,
    kind: plugin.kind,
    conc,
    add: { p50: pct(add, 50), p99: pct(add, 99), perSec: n / (addWall / 1000) },
    del: { p50: pct(del, 50), p99: pct(del, 99), perSec: n / (delWall / 1000) },
    agentAdd: aAdd.length ? { p50: pct(aAdd, 50), p99: pct(aAdd, 99) } : null,
    agentDel: aDel.length ? { p50: pct(aDel, 50), p99: pct(aDel, 99) } : null,
    cpuPerAdd: { plugin: cpuAdd / n, agent: agentCpuAdd === null ? null : agentCpuAdd / n },
  };
}

/**
 * The kernel's own cost of deleting a pod's veth pair as ADD leaves it (host end up on the bridge, the pod
 * end up with an address and a default route), over netlink in the node namespace: the floor of a DEL.
 */
async function vethDeleteMs(nodeNsPath: string, podNs: string, rounds: number): Promise<number[]> {
  const nl = openNetlink(toNetnsPath(nodeNsPath));
  const pod = openNetlink(toNetnsPath(podNs));
  const out: number[] = [];
  try {
    await nl.ensureBridge('cbr9', {});
    await nl.addAddress('cbr9', '10.251.0.1/24');
    for (let i = 0; i < rounds; i++) {
      await nl.createVeth({ name: 'vbenchdel', peerName: 'eth9', peerNetns: toNetnsPath(podNs), master: 'cbr9', up: true });
      await pod.setUp('eth9');
      await pod.addAddress('eth9', '10.251.0.2/24');
      await pod.addRoute({ dst: '10.252.0.0/16', gw: '10.251.0.1', dev: 'eth9' });
      const t0 = performance.now();
      await nl.deleteLink('vbenchdel');
      out.push(performance.now() - t0);
    }
    await nl.deleteLink('cbr9');
  } finally {
    nl.close();
    pod.close();
  }
  return out;
}

async function waitSynced(node: VNode, services: number): Promise<number> {
  const t0 = performance.now();
  const file = `${node.runDir}/proxy-status.json`;
  for (;;) {
    try {
      const st = JSON.parse(readFileSync(file, 'utf8')) as { ready?: boolean; applied?: Record<string, unknown> };
      if (st.ready && Object.keys(st.applied ?? {}).length >= services) return performance.now() - t0;
    } catch {
      /* not yet */
    }
    if (performance.now() - t0 > 15 * 60_000) throw new Error(`the agent did not apply ${services} Services in 15 minutes`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function main(): Promise<void> {
  const p = parseFlags(process.argv.slice(2), { pods: { type: 'string' }, services: { type: 'string' }, iptables: { type: 'string' }, out: { type: 'string' } });
  const pods = Number(p.flags.get('pods') ?? 48);
  const services = Number(p.flags.get('services') ?? 10_000);
  const backend = p.flags.get('iptables') ?? 'legacy';
  if (!Number.isInteger(pods) || pods < 1 || pods > 200) throw new Error('--pods: 1..200');
  if (!Number.isInteger(services) || services < 0 || services > 30_000) throw new Error('--services: 0..30000');
  if (backend !== 'legacy' && backend !== 'nft') throw new Error('--iptables: legacy or nft');
  if (!existsSync(SHIM)) throw new Error('run `npm run build` first');
  const haveRef = existsSync(`${REF_DIR}/bridge`) && existsSync(`${REF_DIR}/host-local`);
  // Other work on the machine moves every figure: the load average goes into the report.
  const load0 = loadavg();
  const lab = await newLab('bc');
  const work = mkdtempSync(join(tmpdir(), 'nn-bench-cni-'));
  const cleanup = async () => {
    await lab.destroy();
    rmSync(work, { recursive: true, force: true });
  };
  process.on('SIGINT', () => void cleanup().then(() => process.exit(130)));
  try {
    // Node 1: no Services. Node 2: N Services in iptables mode, with `iptables` on its PATH naming the chosen backend.
    const plain = await lab.addNode('n1', { podCIDR: '10.244.1.0/24', config: { logLevel: 'info' } });
    const bin = join(work, 'bin');
    mkdirSync(bin);
    symlinkSync(`/usr/sbin/iptables-${backend}`, join(bin, 'iptables'));
    const manifests = join(work, 'manifests');
    mkdirSync(manifests);
    const objs: unknown[] = [];
    for (let n = 1; n <= services; n++) objs.push(service(n), slice(n, initialEndpoints(n)));
    writeFileSync(join(manifests, 'services.json'), JSON.stringify(objs));
    const loaded = await lab.addNode('n2', {
      podCIDR: '10.244.2.0/24',
      clusterCIDR: '10.244.0.0/16',
      config: { logLevel: 'info', proxyMode: 'iptables', manifestsDir: manifests, proxyMinSyncMs: 1000 },
      agentEnv: { PATH: `${bin}:${process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin'}` },
    });
    await plain.startAgent();
    await loaded.startAgent();
    const loadMs = await waitSynced(loaded, services);
    const rules = (await loaded.exec([`iptables-${backend}-save`, '-t', 'nat'])).stdout.split('\n').filter((l) => l.startsWith('-A')).length;
    console.log(`node n2: ${services} Services in iptables mode (${backend} backend), ${rules} nat rules, loaded in ${(loadMs / 1000).toFixed(1)} s`);

    const netns: string[] = [];
    for (let i = 0; i < pods; i++) netns.push((await lab.addNetns(`p${i}`)).path);
    const floor: Plugin = { name: '`node -e 0` (the floor of a Node plugin)', argv: [process.execPath, '-e', '0'], conf: () => ({}), prefix: 'fl', kind: 'floor' };
    const exec: Plugin = { name: '`/bin/true` (the floor of a native plugin)', argv: ['/bin/true'], conf: () => ({}), prefix: 'ex', kind: 'exec-floor' };
    const plugins: Plugin[] = [
      floor,
      exec,
      { name: 'nodenet-cni, 0 Services, ipMasq', argv: [SHIM], conf: () => plain.cniConfig({ hairpinMode: false, ipMasq: true }), node: plain, prefix: 'nz', kind: 'nodenet' },
      { name: `nodenet-cni, ${services.toLocaleString('en')} Services (iptables), ipMasq`, argv: [SHIM], conf: () => loaded.cniConfig({ hairpinMode: false, ipMasq: true }), node: loaded, prefix: 'nk', kind: 'nodenet' },
    ];
    if (haveRef) {
      plugins.push({
        name: 'reference bridge + host-local',
        argv: [`${REF_DIR}/bridge`],
        conf: () => ({
          cniVersion: '1.0.0', name: 'refnet', type: 'bridge', bridge: 'cbr1', isGateway: true, isDefaultGateway: true,
          ipam: { type: 'host-local', ranges: [[{ subnet: '10.250.0.0/16' }]], dataDir: join(work, 'host-local') },
        }),
        prefix: 'rf',
        kind: 'reference',
      });
    }
    const rows: Row[] = [];
    for (const plugin of plugins) {
      const nodeNs = (plugin.node ?? plain).nsPath;
      for (const conc of [1, 16]) {
        rows.push(await batch(plugin, nodeNs, netns, conc));
        process.stderr.write(`  ${plugin.name}, concurrency ${conc}: done\n`);
      }
    }
    const veth = await vethDeleteMs(plain.nsPath, netns[0]!, 30);
    const targets = checkTargets(rows);
    const out = [
      `\nCNI ADD/DEL on one virtual node (${REPO}), ${cpus().length} cores, kernel ${release()}, Node ${process.version}, load average ${load0.map((x) => x.toFixed(2)).join(' ')} at the start, ${loadavg().map((x) => x.toFixed(2)).join(' ')} at the end\n`,
      table(rows, pods),
      targetsTable(targets),
      `kernel's deletion of a pod veth as ADD leaves it (netlink, ${veth.length} rounds): p50 ${pct(veth, 50).toFixed(1)} ms, p99 ${pct(veth, 99).toFixed(1)} ms`,
      haveRef ? '' : '(reference plugins not found in /usr/lib/cni: apt-get install containernetworking-plugins)',
    ].join('\n');
    console.log(out);
    const file = p.flags.get('out');
    if (file) writeFileSync(file, `${JSON.stringify({ date: new Date().toISOString(), pods, services, backend, cores: cpus().length, kernel: release(), node: process.version, rules, loadMs, loadAvg: { start: load0, end: loadavg() }, rows, targets, vethDelete: { p50: pct(veth, 50), p99: pct(veth, 99) } }, null, 2)}\n`);
  } finally {
    await cleanup();
  }
}

await main();
