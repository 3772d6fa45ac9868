/**
 * Cold start of the nodenet-cni shim: wall time and CPU time per invocation,
 * for `/bin/true` (the floor of any native plugin), `node -e 0` (the floor of
 * a Node plugin), VERSION, a call the skel rejects, and ADD/DEL against a
 * trivially fast agent (a real startCniServer whose handler answers at once).
 * Variants run interleaved (A B C D A B C D ...) so background load hits all
 * of them alike. Child CPU comes from this process's cutime+cstime
 * (/proc/self/stat, clock ticks of 10 ms), averaged over the runs.
 *
 *   node --import tsx bench/cni/cold-start.ts [runs=30] [--compare FILE]
 *
 * --compare adds VERSION and ADD rows for another build of the shim against
 * the same agent, interleaved: e.g. the TypeScript shim of the last commit
 * that had it (`mkdir /tmp/old && git archive 37d6bd0 | tar -x -C /tmp/old &&
 * cd /tmp/old && npm ci && npm run build`, then --compare
 * /tmp/old/dist/nodenet-cni.cjs; node is on the children's PATH for it).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { buildShim } from '../../scripts/cni-build.mjs';
import { silentLogger } from '../../lib/log/log.js';
import { startCniServer } from '../../agent/src/cniserver/server.js';
import { percentileOf } from '../lib/stats.js';

const argv = process.argv.slice(2);
const ci = argv.indexOf('--compare');
const compare = ci >= 0 ? argv.splice(ci, 2)[1] : undefined;
if (ci >= 0 && !compare) throw new Error('--compare FILE');
const runs = Number(argv[0] ?? 30);
const work = mkdtempSync(join(tmpdir(), 'nn-cni-bench-'));
const bin = join(work, 'nodenet-cni');
buildShim(bin); // as `npm run build` makes dist/nodenet-cni

const socket = join(work, 'agent', 'cni.sock');
const result = new TextEncoder().encode('{"cniVersion":"1.0.0","ips":[{"address":"10.244.1.5/24"}]}');
const server = await startCniServer({
  socketPath: socket,
  log: silentLogger(),
  handler: { add: async () => result, del: async () => {}, check: async () => {}, status: async () => {}, gc: async () => {} },
});

const conf = JSON.stringify({ cniVersion: '1.0.0', name: 'nodenet', type: 'nodenet-cni', agentSocket: socket });
const pod = { CNI_CONTAINERID: 'bench01', CNI_NETNS: '/var/run/netns/x', CNI_IFNAME: 'eth0', CNI_PATH: '/opt/cni/bin' };
const PATH = `${dirname(process.execPath)}:/usr/bin:/bin`;
const variants: { name: string; cmd: string; args: string[]; env: Record<string, string>; stdin: string; expect: number }[] = [
  { name: '/bin/true', cmd: '/bin/true', args: [], env: {}, stdin: '', expect: 0 },
  { name: 'node -e 0', cmd: process.execPath, args: ['-e', '0'], env: { PATH }, stdin: '', expect: 0 },
  { name: 'VERSION', cmd: bin, args: [], env: { PATH, CNI_COMMAND: 'VERSION' }, stdin: '', expect: 0 },
  { name: 'ADD, rejected by skel', cmd: bin, args: [], env: { PATH, CNI_COMMAND: 'ADD', ...pod }, stdin: '{', expect: 1 },
  { name: 'ADD via agent', cmd: bin, args: [], env: { PATH, CNI_COMMAND: 'ADD', ...pod }, stdin: conf, expect: 0 },
  { name: 'DEL via agent', cmd: bin, args: [], env: { PATH, CNI_COMMAND: 'DEL', ...pod }, stdin: conf, expect: 0 },
  ...(compare
    ? [
        { name: 'compared: VERSION', cmd: compare, args: [], env: { PATH, CNI_COMMAND: 'VERSION' }, stdin: '', expect: 0 },
        { name: 'compared: ADD via agent', cmd: compare, args: [], env: { PATH, CNI_COMMAND: 'ADD', ...pod }, stdin: conf, expect: 0 },
      ]
    : []),
];

function childTicks(): number {
  const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  return Number(f[13]) + Number(f[14]); // cutime, cstime (fields 16, 17)
}

// The agent runs in this process: spawnSync would block it, so run children asynchronously.
const { spawn } = await import('node:child_process');
function once(v: (typeof variants)[number]): Promise<{ ms: number; code: number | null }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const c = spawn(v.cmd, v.args, { env: v.env, stdio: ['pipe', 'ignore', 'ignore'] });
    c.on('error', reject);
    c.on('close', (code) => resolve({ ms: performance.now() - t0, code }));
    c.stdin.on('error', () => {}); // a child that reads no stdin (VERSION, /bin/true) may be gone before it is written
    c.stdin.end(v.stdin);
  });
}

spawnSync(process.execPath, ['-e', '0']); // warm the page cache
const wall = variants.map(() => [] as number[]);
const ticks = variants.map(() => 0);
for (let i = 0; i < runs; i++) {
  for (const [k, v] of variants.entries()) {
    const t0 = childTicks();
    const r = await once(v);
    ticks[k]! += childTicks() - t0;
    if (r.code !== v.expect) throw new Error(`${v.name}: exit ${r.code}, expected ${v.expect}`);
    wall[k]!.push(r.ms);
  }
}
await server.close();
rmSync(work, { recursive: true, force: true });

console.log(`runs per variant: ${runs}`);
console.log('variant                  wall median   wall p90   CPU/run (user+sys)');
for (const [k, v] of variants.entries()) {
  console.log(`${v.name.padEnd(24)} ${percentileOf(wall[k]!, 50).toFixed(1).padStart(8)} ms ${percentileOf(wall[k]!, 90).toFixed(1).padStart(8)} ms ${((ticks[k]! * 10) / runs).toFixed(0).padStart(8)} ms`);
}
