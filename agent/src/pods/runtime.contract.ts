/**
 * The PodRuntime contract (pod-runtime.ts), one suite for every runtime:
 * runtime.fake.test.ts runs it on the fake, runtime.priv.test.ts on the
 * process runtime (root: pause holders, nsenter). What the fake refuses, the
 * process runtime refuses too, and the runs end the same way.
 */
import type { Test } from 'tap';
import { ErrorCode } from '../../../lib/errors/errors.js';
import type { MountRequest, PodRecord, PodRuntime, RunRecord } from './pod-runtime.js';

export interface ContractTarget {
  /** A fresh runtime; `cleanup` stops what the suite left (it stops its sandboxes itself). */
  readonly runtime: PodRuntime;
  /** Waits until the run no longer runs (the process runtime polls /proc; the fake is at once). */
  gone(r: RunRecord): Promise<void>;
  /** Waits until the run's command itself runs (`sleep` here; the process runtime: exec'd by the supervisor's child). */
  commandRuns(r: RunRecord): Promise<void>;
  /** A uid unique to this run of the suite. */
  readonly uid: (n: string) => string;
}

/** What a NodenetError(Pod) matches. */
const isPodError = { name: 'NodenetError', code: ErrorCode.Pod };
const start = (uid: string, container: string, run = 0, argv: readonly string[] = ['sleep', '100'], mounts: readonly MountRequest[] = []) => ({ uid, container, run, argv, env: { PATH: '/usr/bin:/bin' }, cwd: null, mounts, nowMs: 1000 });

export function runtimeContract(t: Test, make: () => ContractTarget): void {
  t.test('bad names are refused before any effect; stopping or removing under one is a no-op', async (t) => {
    const { runtime: rt, uid } = make();
    await t.rejects(rt.startSandbox('../x', 'h'), isPodError, 'a uid with a slash');
    await t.rejects(rt.startSandbox('', 'h'), isPodError, 'an empty uid');
    t.throws(() => rt.save({ version: 1, uid: 'a/b', namespace: 'ns', name: 'n', sandbox: null, podIP: null, startedAt: 0, containers: [] }), isPodError, 'a record under a bad uid');
    await rt.stopSandbox('../x');
    rt.remove('../x');
    const u = uid('names');
    const { ref } = await rt.startSandbox(u, 'names');
    t.teardown(() => rt.stopSandbox(u));
    await t.rejects(rt.startContainer(ref, start(u, 'Web_1')), isPodError, 'a container name that is no DNS label');
    await t.rejects(rt.startContainer(ref, start(u, '../../etc')), isPodError, 'a container name that is a path');
  });

  t.test('one live sandbox per uid; stopping is idempotent and ends every run in it (137, no status written)', async (t) => {
    const { runtime: rt, uid, gone } = make();
    const u = uid('one');
    const { ref, startTime } = await rt.startSandbox(u, 'one');
    t.teardown(() => rt.stopSandbox(u));
    t.equal(ref.name, rt.sandboxName(u));
    t.ok(rt.sandboxRunning(ref, startTime), 'it runs');
    t.notOk(rt.sandboxRunning(ref, `${startTime}0`), 'not under another start time');
    await t.rejects(rt.startSandbox(u, 'one'), isPodError, 'a second sandbox for the uid while the first runs');
    const run = await rt.startContainer(ref, start(u, 'app'));
    t.ok(rt.running(run), 'the run runs');
    t.ok(rt.exists(rt.logPath(u, 'app', 0)), 'its log exists');
    await rt.stopSandbox(u);
    await rt.stopSandbox(u);
    await gone(run);
    t.notOk(rt.running(run), 'the run ended with its sandbox');
    t.notOk(rt.sandboxRunning(ref, startTime), 'the sandbox no longer runs');
    t.same(rt.exitOf(u, 'app', run), { exitCode: 137, signal: 9 }, 'killed with the pod: 137');
    await t.rejects(rt.startContainer(ref, start(u, 'app', 1)), isPodError, 'no run in a stopped sandbox');
    const again = await rt.startSandbox(u, 'one');
    t.not(again.ref.pid, ref.pid, 'a new sandbox after the stop');
    await t.rejects(rt.startContainer(ref, start(u, 'app', 1)), isPodError, 'not in the old sandbox\'s ref either');
  });

  t.test('a container in another Pod\'s sandbox is refused', async (t) => {
    const { runtime: rt, uid } = make();
    const [a, b] = [uid('a'), uid('b')];
    const sa = await rt.startSandbox(a, 'a');
    t.teardown(() => rt.stopSandbox(a));
    await t.rejects(rt.startContainer(sa.ref, start(b, 'app')), isPodError);
  });

  // A SIGTERM in the instant between the supervisor's fork and the command's exec finds the child still
  // trapping it (runtime.ts): the run then ends at the kubelet's SIGKILL. Hence the wait for the command.
  t.test('SIGTERM ends a run with 143; signalling a run that is gone is nothing', async (t) => {
    const target = make();
    const { runtime: rt, uid, gone } = target;
    const u = uid('term');
    const { ref } = await rt.startSandbox(u, 'term');
    t.teardown(() => rt.stopSandbox(u));
    const run = await rt.startContainer(ref, start(u, 'app'));
    await target.commandRuns(run);
    rt.signal(run, 'SIGTERM');
    await gone(run);
    t.same(rt.exitOf(u, 'app', run), { exitCode: 143, signal: 15 });
    t.doesNotThrow(() => rt.signal(run, 'SIGKILL'));
  });

  t.test('records: saved, listed, adopted while their sandbox runs, removed idempotently', async (t) => {
    const { runtime: rt, uid } = make();
    const u = uid('rec');
    const { ref, startTime } = await rt.startSandbox(u, 'rec');
    t.teardown(() => rt.stopSandbox(u));
    const r: PodRecord = { version: 1, uid: u, namespace: 'ns', name: 'rec', sandbox: { name: ref.name, pid: ref.pid, startTime, netns: ref.netnsPath }, podIP: '10.244.1.2', startedAt: 5, containers: [] };
    rt.save(r);
    t.same(rt.records().filter((x) => x.uid === u), [r]);
    t.equal(rt.adoptSandbox(r)?.pid, ref.pid, 'adopted while it runs');
    t.equal(rt.adoptSandbox({ ...r, sandbox: { ...r.sandbox!, startTime: `${startTime}0` } }), null, 'not another process under its pid');
    await rt.stopSandbox(u);
    t.equal(rt.adoptSandbox(r), null, 'not once stopped');
    rt.remove(u);
    rt.remove(u);
    t.same(rt.records().filter((x) => x.uid === u), []);
  });

  t.test('volumes: projected under the Pod\'s directory, mounted only from there, removed with the Pod', async (t) => {
    const { runtime: rt, uid } = make();
    const u = uid('vol');
    t.throws(() => rt.volumeDir(u, 'kubernetes.io~configmap', 'Bad_Name'), isPodError, 'a volume name that is no DNS label');
    const dir = rt.volumeDir(u, 'kubernetes.io~configmap', 'cfg');
    const payload = (v: string) => new Map([['key', { data: Buffer.from(v), mode: 0o644 }]]);
    t.ok(rt.writeVolume(u, 'kubernetes.io~configmap', 'cfg', payload('one')), 'written');
    t.notOk(rt.writeVolume(u, 'kubernetes.io~configmap', 'cfg', payload('one')), 'the same: not written again');
    t.ok(rt.writeVolume(u, 'kubernetes.io~configmap', 'cfg', payload('two')), 'changed: written');
    t.ok(rt.exists(`${dir}/key`), 'the key is in the volume');
    const empty = rt.makeEmptyDir(u, 'scratch');
    const hosts = rt.writePodFile(u, 'etc-hosts', '127.0.0.1\tlocalhost\n');
    const { ref } = await rt.startSandbox(u, 'vol');
    t.teardown(() => rt.stopSandbox(u));
    await rt.mountMemory(ref, u, 'mem', 1n << 20n);
    await rt.mountMemory(ref, u, 'mem', 1n << 20n);
    const target = `/tmp/nn-contract-${u}`;
    const run = await rt.startContainer(ref, start(u, 'app', 0, ['sleep', '100'], [
      { volumeDir: dir, subPath: '', target, readOnly: true },
      { volumeDir: empty, subPath: 'sub', target: `${target}-scratch`, readOnly: false },
      { volumeDir: hosts, subPath: '', target: '/etc/hosts', readOnly: false },
    ]));
    t.ok(rt.running(run), 'a run with its mounts');
    await t.rejects(rt.startContainer(ref, start(u, 'other', 0, ['sleep', '1'], [{ volumeDir: '/etc', subPath: '', target: '/x', readOnly: false }])), isPodError, 'a source outside the Pod');
    await t.rejects(rt.startContainer(ref, start(u, 'other', 0, ['sleep', '1'], [{ volumeDir: dir, subPath: '../../..', target: '/x', readOnly: false }])), isPodError, 'a subPath that leaves its volume');
    await t.rejects(rt.startContainer(ref, start(u, 'other', 0, ['sleep', '1'], [{ volumeDir: dir, subPath: '', target: 'relative', readOnly: false }])), isPodError, 'a relative target');
    await rt.stopSandbox(u);
    rt.remove(u);
    t.notOk(rt.exists(`${dir}/key`), 'the volume went with the Pod');
    t.notOk(rt.exists(hosts), 'and its /etc/hosts');
  });
}
