/**
 * The fake PodRuntime: the contract suite (runtime.contract.ts, which the
 * process runtime passes in runtime.priv.test.ts), and what the fake adds
 * for the kubelet's tests: refusals of what would be kubelet bugs, signal
 * behaviours, a sandbox that crashes, injected failures, the call log.
 */
import t from 'tap';
import { ErrorCode } from '../../../lib/errors/errors.js';
import { runtimeContract } from './runtime.contract.js';
import { FakePodRuntime } from './runtime.fake.js';

runtimeContract(t, () => ({ runtime: new FakePodRuntime(), gone: async () => undefined, commandRuns: async () => undefined, uid: (n) => `u-${n}` }));

const start = (uid: string, container: string, run = 0) => ({ uid, container, run, argv: ['sleep', '100'], env: {}, cwd: null, mounts: [], nowMs: 1000 });

t.test('what would be a kubelet bug is refused: a second live run, a run number going back, an empty command, the exit of a live run', async (t) => {
  const rt = new FakePodRuntime();
  const { ref } = await rt.startSandbox('u1', 'p');
  const r0 = await rt.startContainer(ref, start('u1', 'app', 0));
  await t.rejects(rt.startContainer(ref, start('u1', 'app', 1)), /already runs/);
  t.throws(() => rt.exitOf('u1', 'app', r0), /still runs/);
  t.throws(() => rt.exitOf('u1', 'other', r0), /not one of its runs/);
  rt.exit('u1', 'app', 2);
  t.same(rt.exitOf('u1', 'app', r0), { exitCode: 2 });
  await rt.startContainer(ref, start('u1', 'app', 3));
  rt.exit('u1', 'app', 130);
  t.same(rt.exitOf('u1', 'app', { ...r0, pid: r0.pid + 1, procStart: String(r0.pid + 1) }), { exitCode: 130, signal: 2 }, '128+n: signal n');
  await t.rejects(rt.startContainer(ref, start('u1', 'app', 2)), /run 2 after run 3/);
  await t.rejects(rt.startContainer(ref, { ...start('u1', 'app', 4), argv: [] }), /empty command/);
  await t.rejects(rt.startSandbox('u2', '-bad-'), { code: ErrorCode.Pod }, 'an invalid hostname: `hostname` fails');
  t.equal(rt.hostname('u1'), 'p');
});

t.test('signals: a run may ignore SIGTERM, or not even die of SIGKILL; a crashed sandbox takes its runs along', async (t) => {
  const rt = new FakePodRuntime();
  const { ref } = await rt.startSandbox('u1', 'p');
  rt.onSignal('u1', 'a', 'ignore-term');
  rt.onSignal('u1', 'b', 'unkillable');
  const a = await rt.startContainer(ref, start('u1', 'a'));
  const b = await rt.startContainer(ref, start('u1', 'b'));
  rt.signal(a, 'SIGTERM');
  rt.signal(b, 'SIGTERM');
  rt.signal(b, 'SIGKILL');
  t.ok(rt.running(a) && rt.running(b));
  t.same(rt.current('u1', 'b')?.signals, ['SIGTERM', 'SIGKILL']);
  rt.signal(a, 'SIGKILL');
  t.notOk(rt.running(a));
  t.same(rt.exitOf('u1', 'a', a), { exitCode: 137, signal: 9 });
  rt.crashSandbox('u1');
  t.notOk(rt.running(b), 'gone with its sandbox');
  t.same(rt.leaks(), { sandboxes: [], processes: [], records: [], files: [] });
  t.throws(() => rt.crashSandbox('u1'), /no live sandbox/);
  await rt.startSandbox('u1', 'p');
  t.same(rt.leaks().sandboxes, ['pod-u1'], 'a crashed sandbox is replaced, as a stale one');
});

t.test('failNext: the next call of a step (for one uid or container) throws, then the step works again; every call is logged', async (t) => {
  const rt = new FakePodRuntime();
  rt.failNext('startSandbox');
  await t.rejects(rt.startSandbox('u1', 'p'), /injected failure in startSandbox/);
  t.same(rt.leaks().sandboxes, [], 'a failed start leaves nothing');
  const { ref } = await rt.startSandbox('u1', 'p');
  rt.failNext('startContainer', { match: 'u1/b', error: new Error('boom'), times: 2 });
  await rt.startContainer(ref, start('u1', 'a'));
  await t.rejects(rt.startContainer(ref, start('u1', 'b')), /boom/);
  await t.rejects(rt.startContainer(ref, start('u1', 'b')), /boom/);
  await rt.startContainer(ref, start('u1', 'b'));
  rt.failNext('save');
  t.throws(() => rt.save({ version: 1, uid: 'u1', namespace: 'ns', name: 'p', sandbox: null, podIP: null, startedAt: 0, containers: [] }), /injected/);
  t.equal(rt.record('u1'), null);
  t.same(rt.calls, ['startSandbox u1', 'startSandbox u1', 'startContainer u1/a#0', 'startContainer u1/b#0', 'startContainer u1/b#0', 'startContainer u1/b#0', 'save u1']);
});
