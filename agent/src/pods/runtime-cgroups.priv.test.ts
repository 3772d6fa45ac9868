/**
 * Limits enforced with the machine's cgroups (root): the process runtime
 * with PodCgroups, a pause holder per Pod, real processes. A container over
 * its 32Mi memory limit is OOM-killed by the kernel and its run ends
 * oomKilled (137); one with a 100m cpu limit runs with the kubelet's quota
 * in its cgroup and is throttled; every process of a run (nsenter, the
 * supervisor, the command) is in the container's cgroups; the cgroups go
 * with the Pod, and a crashed run's (a process left in them) with the sweep;
 * removeNodeCgroups finds a node's by its record. On v1 they are under this
 * test's own cgroup in each hierarchy (the sandbox that runs the tests keeps
 * accounting for them). On this project's VMs (cgroup v1 hybrid) this is the v1 layout;
 * cgroups.test.ts covers v2 on a fake cgroupfs.
 */
import t from 'tap';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { listSandboxes } from '../netns/pause-holder.js';
import { childPids, isAlive } from '../netns/proc.js';
import { waitFor } from '../testing/wait.js';
import { containerConfig, podConfig, type Resources } from './cgroup-config.js';
import { nodeDirName, placementRecord, PodCgroups, removeNodeCgroups } from './cgroups.js';
import { ProcessPodRuntime } from './runtime.js';

const tag = `nn-cg-${process.pid}`;
const runDir = mkdtempSync(`/tmp/${tag}-run-`);
const binDir = mkdtempSync(`/tmp/${tag}-bin-`);
const pauseBin = join(binDir, 'nodenet-pause');
execFileSync('cc', ['-O2', '-Wall', '-Werror', '-o', pauseBin, new URL('../netns/pause.c', import.meta.url).pathname]);

const cgroups = PodCgroups.detect({ node: tag, record: placementRecord(runDir) });
const runtime = new ProcessPodRuntime({ runDir, pauseBin, cgroups });
const read = (f: string) => readFileSync(f, 'utf8').trim();
/** A process's path in the v1 hierarchy of a controller (its /proc/PID/cgroup line). */
const cgroupOf = (pid: number | 'self', ctl: string) => {
  const line = read(`/proc/${pid}/cgroup`).split('\n').find((l) => l.split(':')[1]?.split(',').includes(ctl));
  return line?.slice(line.indexOf(':', line.indexOf(':') + 1) + 1) ?? null;
};
/** This test's own cgroup in each hierarchy: nodenet's subtree goes under it. */
const own = { cpu: cgroupOf('self', 'cpu') ?? '/', memory: cgroupOf('self', 'memory') ?? '/' };
const v1 = (ctl: 'cpu' | 'memory', ...rest: string[]) => join('/sys/fs/cgroup', ctl, own[ctl], 'nodenet', tag, ...rest);

t.teardown(async () => {
  for (const s of listSandboxes(runDir)) await s.stop({ graceMs: 200 });
  // Whatever a failed case left in this test's cgroups (only its own node directory).
  await cgroups.sweep(new Set());
  rmSync(runDir, { recursive: true, force: true });
  rmSync(binDir, { recursive: true, force: true });
});

const missing = Object.keys(cgroups.notEnforced);
if (missing.length) {
  t.fail(`cgroups not usable on this machine: ${JSON.stringify(cgroups.notEnforced)}`);
} else if (!existsSync('/sys/fs/cgroup/memory/memory.oom_control')) {
  t.comment('not the cgroup v1 layout these cases read; cgroups.test.ts covers v2');
  t.pass('skipped on cgroup v2');
} else {
  const start = (uid: string, container: string, argv: string[], res: Resources) => ({
    uid, container, run: 0, argv, env: { PATH: '/usr/bin:/bin' }, cwd: null, mounts: [], nowMs: Date.now(),
    resources: { pod: podConfig([res]), container: containerConfig(res) },
  });

  t.test('memory over its 32Mi limit: the kernel OOM-kills the container, its run ends 137 with oomKilled; the cgroups go with the Pod', async (t) => {
    const u = `${tag}-oom`;
    const { ref } = await runtime.startSandbox(u, 'oom');
    t.teardown(() => runtime.stopSandbox(u));
    const res = { requests: { memory: '32Mi' }, limits: { memory: '32Mi' } };
    // A string doubled until it no longer fits: every byte written, so charged. It stops by itself at 256 MiB
    // (exit 0, the case fails) should it ever run outside its cgroup, rather than eat the machine's memory.
    const run = await runtime.startContainer(ref, start(u, 'hog', ['/bin/sh', '-c', 'x=0123456789abcdef; while [ ${#x} -lt 268435456 ]; do x=$x$x; done'], res));
    t.equal(read(v1('memory', `pod${u}`, 'hog', 'memory.limit_in_bytes')), '33554432', 'the container\'s limit');
    t.equal(read(v1('memory', `pod${u}`, 'memory.limit_in_bytes')), '33554432', 'the Pod\'s (every container has one)');
    t.equal(run.oomKills, 0, 'no OOM kill counted at the start');
    await waitFor(() => !runtime.running(run), 'the run ended', { timeoutMs: 30_000 });
    t.same(runtime.exitOf(u, 'hog', run), { exitCode: 137, signal: 9, oomKilled: true });
    t.match(read(v1('memory', `pod${u}`, 'hog', 'memory.oom_control')), /^oom_kill [1-9]/m, 'the kernel counted it');
    await runtime.stopSandbox(u);
    t.notOk(existsSync(v1('memory', `pod${u}`)), 'the Pod\'s memory cgroup is gone');
    t.notOk(existsSync(v1('cpu', `pod${u}`)), 'and its cpu cgroup');
  });

  t.test('a run that ends on its own under a memory limit is not taken for an OOM kill, nor is a SIGKILL from outside', async (t) => {
    const u = `${tag}-ok`;
    const { ref } = await runtime.startSandbox(u, 'ok');
    t.teardown(() => runtime.stopSandbox(u));
    const res = { requests: {}, limits: { memory: '64Mi' } };
    const quick = await runtime.startContainer(ref, start(u, 'quick', ['/bin/sh', '-c', 'exit 3'], res));
    await waitFor(() => !runtime.running(quick), 'the run ended');
    t.same(runtime.exitOf(u, 'quick', quick), { exitCode: 3 });
    const slow = await runtime.startContainer(ref, start(u, 'slow', ['sleep', '100'], res));
    runtime.signal(slow, 'SIGKILL');
    await waitFor(() => !runtime.running(slow), 'the run ended');
    t.same(runtime.exitOf(u, 'slow', slow), { exitCode: 137, signal: 9 }, 'killed, not OOM-killed');
  });

  t.test('cpu limit 100m: the kubelet\'s quota, period and shares in the cgroups; every process of the run is in them from the start; it is throttled', async (t) => {
    const u = `${tag}-cpu`;
    const { ref } = await runtime.startSandbox(u, 'cpu');
    t.teardown(() => runtime.stopSandbox(u));
    const res = { requests: { cpu: '100m' }, limits: { cpu: '100m' } };
    const run = await runtime.startContainer(ref, start(u, 'spin', ['/bin/sh', '-c', 'while :; do :; done'], res));
    const dir = v1('cpu', `pod${u}`, 'spin');
    t.same([read(join(dir, 'cpu.cfs_quota_us')), read(join(dir, 'cpu.cfs_period_us')), read(join(dir, 'cpu.shares'))], ['10000', '100000', '102']);
    t.same([read(v1('cpu', `pod${u}`, 'cpu.cfs_quota_us')), read(v1('cpu', `pod${u}`, 'cpu.shares'))], ['10000', '102'], 'the Pod\'s');
    t.equal(read(v1('memory', `pod${u}`, 'spin', 'memory.limit_in_bytes')), read(v1('memory', `pod${u}`, 'memory.limit_in_bytes')), 'no memory limit: unlimited as the Pod');
    await waitFor(() => childPids(run.pid).length > 0, 'the command runs');
    const pids = [run.pgid, run.pid, ...childPids(run.pid)];
    for (const ctl of ['cpu', 'memory'] as const) {
      t.equal(cgroupOf(childPids(run.pid)[0]!, ctl), join(own[ctl], 'nodenet', tag, `pod${u}`, 'spin'), `the command's ${ctl} cgroup (/proc/PID/cgroup) is under this test's own (${own[ctl]})`);
    }
    t.ok(read(`/proc/${childPids(run.pid)[0]!}/cgroup`).split('\n').find((l) => l.split(':')[1] === 'memory')?.startsWith(`${read('/proc/self/cgroup').split('\n').find((l) => l.split(':')[1] === 'memory')}/nodenet/`), 'its memory line starts with this test\'s own memory cgroup\'s');
    for (const ctl of ['cpu', 'memory'] as const) {
      const procs = read(v1(ctl, `pod${u}`, 'spin', 'cgroup.procs')).split('\n').map(Number);
      t.same(pids.filter((p) => !procs.includes(p)), [], `nsenter, the supervisor and the command are in the ${ctl} cgroup`);
    }
    await waitFor(() => Number(/^nr_throttled (\d+)$/m.exec(read(join(dir, 'cpu.stat')))?.[1] ?? 0) > 0, 'the container throttled', { timeoutMs: 30_000 });
    t.pass('throttled (cpu.stat nr_throttled > 0)');
    await runtime.stopSandbox(u);
    t.notOk(isAlive(run.pid), 'the run ended with its sandbox');
    t.notOk(existsSync(v1('cpu', `pod${u}`)), 'the Pod\'s cgroups are gone');
    t.notOk(existsSync(v1('memory', `pod${u}`)));
  });

  t.test('the sweep at start: a crashed run\'s Pod cgroups (a process still in one) go, the kept Pod\'s stay', async (t) => {
    const kept = `${tag}-kept`;
    const { ref } = await runtime.startSandbox(kept, 'kept');
    t.teardown(() => runtime.stopSandbox(kept));
    const res = { requests: {}, limits: { cpu: '200m', memory: '64Mi' } };
    await runtime.startContainer(ref, start(kept, 'app', ['sleep', '100'], res));
    const lost = `${tag}-lost`;
    const { procs } = cgroups.prepare(lost, 'app', podConfig([res]), containerConfig(res));
    const orphan = spawn('/bin/sh', ['-c', `for f in ${procs.join(' ')}; do echo $$ > $f; done; exec sleep 100`], { stdio: 'ignore' });
    const ended = new Promise<string | null>((r) => orphan.on('exit', (_code, sig) => r(sig)));
    t.teardown(() => { try { orphan.kill('SIGKILL'); } catch { /* gone */ } });
    await waitFor(() => read(procs[0]!).split('\n').includes(String(orphan.pid)), 'the orphan is in the lost Pod\'s cgroup');
    await runtime.sweep(new Set([kept]));
    t.notOk(existsSync(v1('cpu', `pod${lost}`)), 'the lost Pod\'s cgroups are gone');
    t.notOk(existsSync(v1('memory', `pod${lost}`)));
    t.equal(await ended, 'SIGKILL', 'its process was killed (nodenet\'s own cgroup)');
    t.ok(existsSync(v1('memory', `pod${kept}`, 'app')), 'the kept Pod\'s stay');
    await runtime.stopSandbox(kept);
    t.notOk(existsSync(v1('memory')), 'the node\'s directory went with its last Pod');
    t.notOk(existsSync(v1('cpu')));
  });

  t.test('removeNodeCgroups finds a node\'s cgroups by the record in its run directory, removes them (a process left there killed) and the record', async (t) => {
    const nodeRun = mkdtempSync(`/tmp/${tag}-node-`);
    t.teardown(() => rmSync(nodeRun, { recursive: true, force: true }));
    const node = nodeDirName('lab-node', nodeRun);
    const agent = PodCgroups.detect({ node, record: placementRecord(nodeRun) });
    t.ok(existsSync(join(nodeRun, 'cgroups.json')), 'recorded');
    const res = { requests: {}, limits: { memory: '64Mi' } };
    const { procs } = agent.prepare('u1', 'app', podConfig([res]), containerConfig(res));
    const left = spawn('/bin/sh', ['-c', `for f in ${procs.join(' ')}; do echo $$ > $f; done; exec sleep 100`], { stdio: 'ignore' });
    const ended = new Promise<string | null>((r) => left.on('exit', (_code, sig) => r(sig)));
    t.teardown(() => { try { left.kill('SIGKILL'); } catch { /* gone */ } });
    await waitFor(() => read(procs[1]!).split('\n').includes(String(left.pid)), 'the process is in the node\'s memory cgroup');
    await removeNodeCgroups('lab-node', nodeRun);
    t.equal(await ended, 'SIGKILL', 'the process left there was killed');
    for (const ctl of ['cpu', 'memory'] as const) t.notOk(existsSync(join('/sys/fs/cgroup', ctl, own[ctl], 'nodenet', node)), `its ${ctl} cgroups are gone`);
    t.same(readdirSync(nodeRun), [], 'the record went with them');
  });
}
