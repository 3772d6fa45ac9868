import { waitFor } from '../testing/wait.js';
import t from 'tap';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { NodenetError } from '../../../lib/errors/errors.js';
import { openNetlink } from '../netlink/netlink.js';
import { listSandboxes, joinCommand, startSandbox, stopSandbox, unrecordedHolders, type Sandbox } from './pause-holder.js';
import { childPids, isAlive, procStat } from './proc.js';
import { makeScratchNetns } from './scratch-netns.js';
import { netnsInode } from './netns.js';

const tag = `nn-nl-${process.pid}`;
const runDir = mkdtempSync(`/tmp/${tag}-run-`);
const binDir = mkdtempSync(`/tmp/${tag}-bin-`);
const pauseBin = join(binDir, 'nodenet-pause');
execFileSync('cc', ['-O2', '-Wall', '-Werror', '-o', pauseBin, new URL('./pause.c', import.meta.url).pathname]);

const started: Sandbox[] = [];
t.teardown(async () => {
  for (const s of started) await s.stop({ graceMs: 200 });
  rmSync(runDir, { recursive: true, force: true });
  rmSync(binDir, { recursive: true, force: true });
});

async function start(name: string, pidNamespace: boolean): Promise<Sandbox> {
  const sb = await startSandbox({ name: `${tag}-${name}`, runDir, pauseBin, pidNamespace });
  started.push(sb);
  return sb;
}

function run(argv: readonly string[]): { code: number; out: string } {
  const [cmd, ...args] = argv;
  try {
    return { code: 0, out: execFileSync(cmd ?? '', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }) };
  } catch (e) {
    const err = e as { status?: number | null; stdout?: string };
    return { code: err.status ?? -1, out: String(err.stdout ?? '') };
  }
}

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

t.test('pause exits 0 on SIGTERM and SIGINT, as PID 1 and not', async (t) => {
  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    // Not PID 1: the pause is the process we spawn.
    const plain = spawn(pauseBin, [], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise((r) => plain.stdout.once('data', r));
    plain.kill(sig);
    const [code, signal] = await new Promise<[number | null, string | null]>((r) => plain.once('exit', (c, s) => r([c, s])));
    t.same([code, signal], [0, null], `plain pause: ${sig} -> exit 0`);

    // PID 1 of a pid namespace: unshare --fork passes on the holder's exit status.
    const u = spawn('unshare', ['--pid', '--fork', '--mount-proc', pauseBin], { stdio: ['ignore', 'pipe', 'inherit'] });
    const ready = await new Promise<string>((r) => u.stdout.once('data', (d: Buffer) => r(d.toString())));
    t.match(ready, /^ready 1\n/, 'it is PID 1 inside');
    const kids = childPids(u.pid ?? -1);
    t.equal(kids.length, 1);
    process.kill(kids[0] ?? -1, sig);
    const [c2, s2] = await new Promise<[number | null, string | null]>((r) => u.once('exit', (c, s) => r([c, s])));
    t.same([c2, s2], [0, null], `PID 1 pause: ${sig} -> exit 0`);
  }
});

t.test('sandbox without a pid namespace: netns usable as CNI_NETNS, join, list, stop', async (t) => {
  const sb = await start('plain', false);
  t.ok(isAlive(sb.pid), 'holder runs');
  t.equal(sb.pidnsPath, undefined);
  t.equal(netnsInode(sb.netnsPath), netnsInode(`/proc/${sb.pid}/ns/net` as typeof sb.netnsPath), 'the bind mount is the holder netns');
  const links = run(['nsenter', `--net=${sb.netnsPath}`, 'ip', '-br', 'link']);
  t.equal(links.code, 0);
  t.match(links.out, /^lo\s/m, 'nsenter --net=PATH ip link works');
  t.notMatch(links.out, /eth0/);

  const inside = run(joinCommand(sb, ['sh', '-c', 'readlink /proc/self/ns/net /proc/self/ns/uts /proc/self/ns/ipc; hostname nnpod; hostname']));
  t.equal(inside.code, 0);
  const [net, uts, ipc, host] = inside.out.trim().split('\n');
  t.equal(net, readlinkSync(`/proc/${sb.pid}/ns/net`), 'joined the net namespace');
  t.equal(uts, readlinkSync(`/proc/${sb.pid}/ns/uts`), 'joined the uts namespace');
  t.equal(ipc, readlinkSync(`/proc/${sb.pid}/ns/ipc`), 'joined the ipc namespace');
  t.equal(host, 'nnpod');
  t.not(run(['hostname']).out.trim(), 'nnpod', 'the host name outside is untouched');

  const listed = listSandboxes(runDir).find((s) => s.name === sb.name);
  t.match(listed, { pid: sb.pid, alive: true, netnsPath: sb.netnsPath, pidNamespace: false });

  await t.rejects(startSandbox({ name: sb.name, runDir, pauseBin }), NodenetError, 'a live name cannot be started twice');

  const t0 = Date.now();
  await sb.stop({ graceMs: 3000 });
  t.ok(Date.now() - t0 < 1500, 'SIGTERM was enough (no wait for SIGKILL)');
  t.notOk(isAlive(sb.pid), 'holder gone');
  t.notOk(existsSync(sb.netnsPath), 'netns file gone');
  t.notOk(listSandboxes(runDir).some((s) => s.name === sb.name), 'state gone');
  await sb.stop();
  await stopSandbox(runDir, sb.name);
  t.pass('stop is idempotent');
});

t.test('pid namespace: PID 1 reaps orphans; the pod sees its own /proc', async (t) => {
  const sb = await start('pid', true);
  t.ok(sb.pidnsPath);
  t.equal(procStat(sb.pid)?.ppid !== undefined, true);
  const comm = run(joinCommand(sb, ['cat', '/proc/1/comm']));
  t.equal(comm.out.trim(), 'nodenet-pause', 'PID 1 inside is the pause');

  // sh backgrounds a sleep and exits at once: the sleep is orphaned and reparented to PID 1, the pause.
  const r = run(joinCommand(sb, ['sh', '-c', 'sleep 0.5 >/dev/null 2>&1 & echo started']));
  t.equal(r.code, 0);
  const orphans = childPids(sb.pid);
  t.equal(orphans.length, 1, 'the orphan was reparented to the pause');
  const orphan = orphans[0] ?? -1;
  t.equal(procStat(orphan)?.state !== 'Z', true, 'still sleeping');
  const reaped = await until(() => procStat(orphan) === null, 3000);
  t.ok(reaped, 'after it exits it is reaped, not left a zombie');
  t.same(childPids(sb.pid), [], 'no children left');
});

t.test('the netns outlives the app and the holder (bind mount), not stopSandbox', async (t) => {
  const nodeNs = makeScratchNetns(t, 'pnode');
  const sb = await start('life', true);
  const node = openNetlink(nodeNs.path);
  t.teardown(() => node.close());
  await node.createVeth({ name: 'vpod', peerName: 'eth0', peerNetns: sb.netnsPath });

  const app = spawn(joinCommand(sb, ['sleep', '100'])[0] ?? '', joinCommand(sb, ['sleep', '100']).slice(1), { detached: true, stdio: 'ignore' });
  // The app runs once a process of it is inside the pod's network namespace (nsenter forks into the pod's PID namespace).
  const podNetns = `net:[${statSync(sb.netnsPath).ino}]`;
  const inPod = (pid: number) => {
    try {
      return readlinkSync(`/proc/${pid}/ns/net`) === podNetns && readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'sleep';
    } catch {
      return false;
    }
  };
  await waitFor(() => [app.pid ?? 0, ...childPids(app.pid ?? 0)].some(inPod), 'the app to run in the pod');
  t.ok(app.pid && isAlive(app.pid));
  process.kill(-(app.pid ?? 0), 'SIGKILL');
  await new Promise((r) => app.once('exit', r));
  t.match(run(['nsenter', `--net=${sb.netnsPath}`, 'ip', '-br', 'link']).out, /eth0/, 'eth0 still there after the app died');

  // Kill the holder behind stopSandbox's back: the bind mount keeps the namespace.
  process.kill(sb.pid, 'SIGKILL');
  t.ok(await until(() => !isAlive(sb.pid), 2000));
  t.match(run(['nsenter', `--net=${sb.netnsPath}`, 'ip', '-br', 'link']).out, /eth0/, 'eth0 still there after the holder died');
  t.ok(await node.getLink('vpod'), 'host side still there');
  const dead = listSandboxes(runDir).find((s) => s.name === sb.name);
  t.equal(dead?.alive, false, 'listSandboxes reports it dead');

  await sb.stop();
  const gone = await (async () => {
    const deadline = Date.now() + 3000;
    while (Date.now() < deadline) {
      if (!(await node.getLink('vpod'))) return true;
      await sleep(20);
    }
    return false;
  })();
  t.ok(gone, 'after stopSandbox the namespace is destroyed and the veth with it');
});

t.test('a stale sandbox (holder dead, files left) is cleaned by the next start of that name', async (t) => {
  const sb = await start('stale', false);
  process.kill(sb.pid, 'SIGKILL');
  t.ok(await until(() => !isAlive(sb.pid), 2000));
  const again = await start('stale', false);
  t.not(again.pid, sb.pid);
  t.ok(isAlive(again.pid));
  t.equal(netnsInode(again.netnsPath), netnsInode(`/proc/${again.pid}/ns/net` as typeof again.netnsPath), 'the mount now points at the new holder');
  await again.stop();
});

t.test('bad inputs', async (t) => {
  await t.rejects(startSandbox({ name: '../x', runDir, pauseBin }), NodenetError);
  const bogus = join(binDir, 'not-a-binary');
  writeFileSync(bogus, 'nope');
  await t.rejects(startSandbox({ name: `${tag}-bogus`, runDir, pauseBin: bogus, readyTimeoutMs: 2000 }), /exited|ready/);
  t.notOk(existsSync(join(runDir, 'netns', `${tag}-bogus`)), 'nothing mounted');
});

t.test('a holder whose record was never written (its agent killed in between) is found by its log, and only it', async (t) => {
  const kept = await start('kept', true);
  const lost = await start('lost', true);
  rmSync(join(runDir, 'sandboxes', `${tag}-lost.json`));
  const pids = unrecordedHolders(runDir);
  t.ok(pids.includes(lost.pid), `the unrecorded holder ${lost.pid} is found: ${pids.join(',')}`);
  t.notOk(pids.includes(kept.pid), 'the recorded one is not');
  for (const p of pids) process.kill(p, 'SIGKILL');
  await waitFor(() => !isAlive(lost.pid, procStat(lost.pid)?.startTime ?? ''), 'the lost holder gone');
  t.ok(isAlive(kept.pid, procStat(kept.pid)!.startTime), 'the recorded one still runs');
  t.same(unrecordedHolders(runDir), [], 'nothing else');
});
