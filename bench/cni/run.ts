/**
 * bench/cni: ADD+DEL latency through the real nodenet-cni shim and agent,
 * side by side with Debian's reference `bridge` + `host-local` plugins, in the
 * same run, on one virtual node.
 *
 *   npm run bench:cni -- [--pods 64] [--rounds 2]
 *
 * For each plugin and concurrency (1 and 16) it creates N pod namespaces up
 * front, then times ADD (and DEL) per pod, and pods per second for the whole
 * batch. The reference plugins run inside the node namespace, as a runtime on
 * that node would run them; nodenet's shim runs there too.
 */
import { existsSync } from 'node:fs';
import { REPO, SHIM } from '../../agent/src/lab/lab.js';
import { newLab } from '../../agent/src/testing/lab.js';
import { ExecaRunner } from '../../agent/src/exec/runner.js';
import { parseFlags } from '../../agent/src/cli/flags.js';

const REF_DIR = '/usr/lib/cni';
const runner = new ExecaRunner();

interface Plugin {
  name: string;
  argv: string[];
  conf: (i: number) => unknown;
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

async function call(nodeNs: string, plugin: Plugin, cmd: 'ADD' | 'DEL', id: string, netns: string, conf: unknown): Promise<number> {
  const t0 = performance.now();
  const r = await runner.run(['ip', 'netns', 'exec', nodeNs, ...plugin.argv], {
    input: JSON.stringify(conf),
    allowFailure: true,
    env: { CNI_COMMAND: cmd, CNI_CONTAINERID: id, CNI_NETNS: netns, CNI_IFNAME: 'eth0', CNI_PATH: REF_DIR },
  });
  const ms = performance.now() - t0;
  if (r.exitCode !== 0) throw new Error(`${plugin.name} ${cmd} ${id} failed: ${r.stdout} ${r.stderr}`);
  return ms;
}

async function pool<T>(items: T[], conc: number, fn: (x: T) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(Array.from({ length: conc }, async () => {
    while (i < items.length) await fn(items[i++]!);
  }));
}

async function main(): Promise<void> {
  const f = parseFlags(process.argv.slice(2), { pods: { type: 'string' } });
  const pods = Number(f.flags.get('pods') ?? 64);
  if (!existsSync(SHIM)) throw new Error('run `npm run build` first');
  const haveRef = existsSync(`${REF_DIR}/bridge`) && existsSync(`${REF_DIR}/host-local`);
  const lab = await newLab('bc');
  const cleanup = async () => { await lab.destroy(); };
  process.on('SIGINT', () => { void cleanup().then(() => process.exit(130)); });
  try {
    const node = await lab.addNode('n1', { podCIDR: '10.244.1.0/24', config: { logLevel: 'warn' } });
    await node.startAgent();
    const plugins: Plugin[] = [{
      name: 'nodenet-cni (shim → agent)',
      argv: [SHIM],
      conf: () => node.cniConfig({ hairpinMode: false }),
    }];
    if (haveRef) {
      plugins.push({
        name: 'reference bridge + host-local',
        argv: [`${REF_DIR}/bridge`],
        conf: () => ({
          cniVersion: '1.0.0', name: 'refnet', type: 'bridge', bridge: 'cbr1', isGateway: true, isDefaultGateway: true,
          ipam: { type: 'host-local', ranges: [[{ subnet: '10.250.0.0/16' }]], dataDir: `${lab.runRoot}/host-local` },
        }),
      });
    }
    const netns: string[] = [];
    for (let i = 0; i < pods; i++) netns.push((await lab.addNetns(`p${i}`)).path);

    const rows: string[][] = [];
    for (const plugin of plugins) {
      for (const conc of [1, 16]) {
        const add: number[] = [], del: number[] = [];
        const ids = netns.map((p, i) => ({ id: `bench${conc}x${i}`, p, i }));
        const t0 = performance.now();
        await pool(ids, conc, async (x) => { add.push(await call(node.ns, plugin, 'ADD', x.id, x.p, plugin.conf(x.i))); });
        const addWall = performance.now() - t0;
        const t1 = performance.now();
        await pool(ids, conc, async (x) => { del.push(await call(node.ns, plugin, 'DEL', x.id, x.p, plugin.conf(x.i))); });
        const delWall = performance.now() - t1;
        const both = add.map((a, i) => a + (del[i] ?? 0));
        rows.push([plugin.name, String(conc), pct(add, 50).toFixed(0), pct(add, 99).toFixed(0), pct(del, 50).toFixed(0), pct(del, 99).toFixed(0),
          pct(both, 50).toFixed(0), pct(both, 99).toFixed(0), (pods / (addWall / 1000)).toFixed(1), (pods / (delWall / 1000)).toFixed(1)]);
      }
    }
    const head = ['plugin', 'conc', 'ADD p50 ms', 'ADD p99 ms', 'DEL p50 ms', 'DEL p99 ms', 'ADD+DEL p50', 'ADD+DEL p99', 'ADDs/s', 'DELs/s'];
    console.log(`\nCNI ADD/DEL, ${pods} pods per batch, one virtual node (${REPO})\n`);
    console.log(`| ${head.join(' | ')} |\n|${head.map(() => '---').join('|')}|`);
    for (const r of rows) console.log(`| ${r.join(' | ')} |`);
    if (!haveRef) console.log('\n(reference plugins not found in /usr/lib/cni: apt-get install containernetworking-plugins)');
  } finally {
    await cleanup();
  }
}

await main();
