/**
 * The embedded kubelet without root, on validating fakes: the runtime
 * (runtime.fake.ts), the CNI handler (cniserver/handler.fake.ts), the API
 * server (kubelet-api.fake.ts, whose watch feeds the kubelet), a fake clock
 * and a fake prober; its Events through the shared recorder. Each step of
 * running and stopping a Pod fails in turn, by name first (what the kubelet
 * reports, retries and cleans up), then every call of a whole lifecycle
 * (nothing leaks, the Pod still runs and still goes).
 */
import t, { type Test } from 'tap';
import { pino } from 'pino';
import { FakeCniHandler } from '../cniserver/handler.fake.js';
import { FakeClock } from '../../../lib/reconcile/clock.fake.js';
import { ApiEventRecorder } from '../../../lib/reconcile/event-recorder.js';
import { obj } from '../../../lib/json/loose.js';
import { FakeKubeletApi } from './kubelet-api.fake.js';
import { Kubelet, type Prober } from './kubelet.js';
import type { PodRecord } from './pod-runtime.js';
import { FakePodRuntime } from './runtime.fake.js';

type O = Record<string, unknown>;
const T0 = Date.parse('2030-01-01T00:00:00Z');
const CNI_CONFIG = { cniVersion: '1.1.0', name: 'nodenet', type: 'nodenet-cni', bridge: 'cbr0', isGateway: true, isDefaultGateway: true, ipMasq: false, ipam: { type: 'host-local' } };

interface Setup {
  readonly clock: FakeClock;
  readonly runtime: FakePodRuntime;
  readonly cni: FakeCniHandler;
  readonly api: FakeKubeletApi;
  readonly kubelet: Kubelet;
  readonly logs: O[];
  /** Moves the clock (firing what is due) and waits for the Events recorded meanwhile to be written. */
  run(ms: number): Promise<void>;
  /** Probe results by container name (default: success). */
  readonly probes: Map<string, boolean>;
}

async function setup(t: Test, o: { records?: { record: PodRecord; live: boolean }[]; runtime?: FakePodRuntime; cni?: FakeCniHandler; api?: FakeKubeletApi; clusterDNS?: string[]; clusterDomain?: string } = {}): Promise<Setup> {
  const clock = new FakeClock(T0);
  const runtime = o.runtime ?? new FakePodRuntime();
  for (const r of o.records ?? []) runtime.seed(r.record, r.live);
  const cni = o.cni ?? new FakeCniHandler();
  const api = o.api ?? new FakeKubeletApi();
  const logs: O[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void logs.push(JSON.parse(s) as O) });
  const events = new ApiEventRecorder({ sink: api, component: 'kubelet', host: 'n1', clock, log });
  const probes = new Map<string, boolean>();
  const probe: Prober = async (action) => {
    const ok = probes.get(action.kind === 'exec' ? action.command.join(' ') : '') ?? true;
    return { ok, message: ok ? '' : 'injected probe failure' };
  };
  api.now = () => clock.now();
  const kubelet = new Kubelet({ nodeName: 'n1', hostIP: '192.168.50.11', runtime, cni, cniConfig: CNI_CONFIG, api, events, clock, log, probe, backoff: { initialMs: 10_000, maxMs: 300_000 }, objects: api, node: { cpu: '2', memory: '4Gi', 'ephemeral-storage': '100Gi' }, random: () => 0, clusterDNS: o.clusterDNS ?? ['10.96.0.10'], ...(o.clusterDomain ? { clusterDomain: o.clusterDomain } : {}) });
  api.watch(kubelet);
  await kubelet.start();
  t.teardown(async () => {
    kubelet.stop();
    await events.stop();
  });
  const run = async (ms: number) => {
    await clock.advance(ms);
    await events.idle();
  };
  return { clock, runtime, cni, api, kubelet, logs, run, probes };
}

const container = (name: string, extra: O = {}): O => ({ name, image: 'nodenet/host', command: ['sleep', '1000'], ...extra });
function pod(name: string, spec: O = {}): O {
  return { metadata: { name, namespace: 'default' }, spec: { nodeName: 'n1', terminationGracePeriodSeconds: 5, containers: [container('app')], ...spec } };
}

const meta = (p: O | undefined) => (p?.['metadata'] ?? {}) as O;
const statusOf = (s: Setup, name: string) => (s.api.pod('default', name)?.['status'] ?? {}) as O;
const cond = (s: Setup, name: string, type: string) => ((statusOf(s, name)['conditions'] as O[] | undefined) ?? []).find((c) => c['type'] === type)?.['status'];
const cstatus = (s: Setup, name: string, c: string) => ((statusOf(s, name)['containerStatuses'] as O[] | undefined) ?? []).find((x) => x['name'] === c) ?? {};
const reasons = (s: Setup, name: string) => s.api.events(name).map((e) => `${String(e['type'])} ${String(e['reason'])}${e['count'] !== 1 ? ` x${String(e['count'])}` : ''}`);
const leaks = (s: Setup) => ({ ...s.runtime.leaks(), attachments: [...s.cni.attachments.keys()] });
const NO_LEAKS = { sandboxes: [], processes: [], records: [], files: [], attachments: [] };

/** A Pod created and run to Running and Ready. */
async function running(s: Setup, name = 'web', spec: O = {}): Promise<string> {
  const uid = String(meta(s.api.createPod(pod(name, spec)))['uid']);
  await s.run(0);
  return uid;
}

t.test('a Pod runs and stops: sandbox with its hostname, CNI ADD, the container with its env, the record, the status; then SIGTERM, CNI DEL, the sandbox, the record and the Pod gone', async (t) => {
  const s = await setup(t);
  const uid = await running(s, 'web', { containers: [container('app', { env: [{ name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }] })] });
  t.equal(statusOf(s, 'web')['phase'], 'Running');
  t.equal(cond(s, 'web', 'Ready'), 'True');
  t.equal(statusOf(s, 'web')['podIP'], '10.244.1.2');
  t.equal(s.runtime.hostname(uid), 'web');
  t.equal(s.runtime.current(uid, 'app')?.env['IP'], '10.244.1.2', 'the env sees the Pod IP');
  t.same(s.runtime.record(uid)?.containers.map((c) => c.current?.run), [0], 'the record has the run');
  t.match(s.api.events('web'), [{ reason: 'Started', type: 'Normal', involvedObject: { kind: 'Pod', name: 'web', uid, fieldPath: 'spec.containers{app}' }, source: { component: 'kubelet', host: 'n1' } }]);
  const effects = () => s.runtime.calls.filter((c) => !c.startsWith('save'));
  t.same(effects(), [`startSandbox ${uid}`, `startContainer ${uid}/app#0`]);
  t.equal(s.runtime.calls[1], `save ${uid}`, 'the record written before any container starts');

  s.api.deleteGracefully('default', 'web');
  await s.run(0);
  t.equal(s.api.pod('default', 'web'), undefined, 'the final delete');
  t.same(effects().slice(2), [`signal ${uid}/app#0 SIGTERM`, `stopSandbox ${uid}`, `remove ${uid}`]);
  t.same(s.cni.calls.map((c) => c.cmd), ['add', 'del']);
  t.same(reasons(s, 'web'), ['Normal Started', 'Normal Killing']);
  t.same(leaks(s), NO_LEAKS);
  t.same(s.kubelet.podUids(), []);
});

t.test('the sandbox fails to start: FailedCreatePodSandBox, Pending with ContainerCreating, nothing held; retried after 5 s', async (t) => {
  const s = await setup(t);
  s.runtime.failNext('startSandbox');
  const uid = await running(s);
  t.equal(statusOf(s, 'web')['phase'], 'Pending');
  t.same(cstatus(s, 'web', 'app')['state'], { waiting: { reason: 'ContainerCreating' } });
  t.equal(cond(s, 'web', 'PodReadyToStartContainers'), 'False');
  t.equal(statusOf(s, 'web')['podIP'], undefined, 'no IP');
  t.match(s.api.events('web'), [{ type: 'Warning', reason: 'FailedCreatePodSandBox', message: /Failed to create pod sandbox: injected failure in startSandbox/ }]);
  t.same(leaks(s), NO_LEAKS, 'nothing held while it waits');
  await s.run(4_999);
  t.equal(s.runtime.calls.filter((c) => c.startsWith('startSandbox')).length, 1, 'not before 5 s');
  await s.run(1);
  t.equal(statusOf(s, 'web')['phase'], 'Running');
  t.ok(s.runtime.current(uid, 'app'));
});

t.test('CNI ADD fails: FailedCreatePodSandBox, the sandbox stopped again, no IP; retried', async (t) => {
  const s = await setup(t);
  s.cni.failNext('add', new Error('no IP left in 10.244.1.0/24'));
  const uid = await running(s);
  t.match(s.api.events('web'), [{ reason: 'FailedCreatePodSandBox', message: /no IP left/ }]);
  t.same(leaks(s), NO_LEAKS, 'the sandbox stopped, no attachment');
  t.same(s.cni.calls.map((c) => c.cmd), ['add', 'del'], 'a DEL after the failed ADD, as a runtime does');
  await s.run(5_000);
  t.equal(statusOf(s, 'web')['phase'], 'Running');
  t.equal(s.runtime.current(uid, 'app')?.run, 0);
});

t.test('the record cannot be written after CNI ADD: the sandbox and its IP released, FailedCreatePodSandBox, retried with a new sandbox', async (t) => {
  const s = await setup(t);
  s.runtime.failNext('save');
  const uid = await running(s);
  t.match(s.api.events('web'), [{ reason: 'FailedCreatePodSandBox', message: /injected failure in save/ }]);
  t.same(leaks(s), NO_LEAKS, 'no sandbox, no IP, no record');
  t.equal(statusOf(s, 'web')['podIP'], undefined, 'no IP reported');
  t.notOk(s.runtime.calls.some((c) => c.startsWith('startContainer')), 'no container started in the released sandbox');
  await s.run(5_000);
  t.equal(statusOf(s, 'web')['phase'], 'Running');
  t.equal(cond(s, 'web', 'Ready'), 'True');
  t.equal(s.runtime.current(uid, 'app')?.run, 0, 'run 0: the first run');
});

t.test('a failed sandbox whose undo fails too (CNI DEL after the record could not be written): undone again before the next attempt, which then succeeds', async (t) => {
  const s = await setup(t);
  s.runtime.failNext('save');
  s.cni.failNext('del', new Error('link busy'));
  const uid = await running(s);
  t.equal(s.cni.attachments.size, 1, 'the IP is still held');
  t.same(s.runtime.leaks().sandboxes, [`pod-${uid}`], 'and the sandbox runs (its stop came after the DEL)');
  t.ok(s.logs.some((l) => l['msg'] === 'undoing a failed sandbox failed; done again before the next'));
  await s.run(5_000);
  t.same(s.cni.calls.map((c) => c.cmd), ['add', 'del', 'del', 'add'], 'the DEL again, then the ADD');
  t.ok(s.runtime.calls.indexOf(`stopSandbox ${uid}`) < s.runtime.calls.lastIndexOf(`startSandbox ${uid}`), 'the old sandbox stopped before the new one');
  t.equal(statusOf(s, 'web')['phase'], 'Running');
  t.equal(s.cni.attachments.size, 1, 'one IP');
  s.api.deleteGracefully('default', 'web');
  await s.run(0);
  t.same(leaks(s), NO_LEAKS);
});

t.test('a container fails to start: Failed Event on its fieldPath, StartError, restarted at once, then after the back-off (CrashLoopBackOff); the other container runs on', async (t) => {
  const s = await setup(t);
  const api = s.api;
  s.runtime.failNext('startContainer', { match: 'uid-1/b', error: new Error('nsenter: cannot change directory to /nowhere'), times: 3 });
  const uid = await running(s, 'web', { containers: [container('a'), container('b')] });
  t.equal(uid, 'uid-1');
  t.ok(s.runtime.current(uid, 'a'), 'a runs');
  t.equal(statusOf(s, 'web')['phase'], 'Running');
  t.equal(cond(s, 'web', 'Ready'), 'False');
  t.match(api.events('web').find((e) => e['reason'] === 'Failed'), { type: 'Warning', message: 'Error: nsenter: cannot change directory to /nowhere', involvedObject: { fieldPath: 'spec.containers{b}' } });
  t.match(cstatus(s, 'web', 'b'), { restartCount: 1, state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 128, reason: 'StartError' } } }, 'the first restart is at once, and fails too');
  await s.run(9_999);
  t.equal(s.runtime.calls.filter((c) => c.startsWith('startContainer uid-1/b')).length, 2, 'then 10 s of back-off');
  await s.run(1);
  t.equal(s.runtime.calls.filter((c) => c.startsWith('startContainer uid-1/b')).length, 3);
  await s.run(19_999);
  t.equal(s.runtime.calls.filter((c) => c.startsWith('startContainer uid-1/b')).length, 3, 'then 20 s');
  await s.run(1);
  t.equal(s.runtime.current(uid, 'b')?.run, 3, 'the fourth start runs (restart count 3)');
  t.match(cstatus(s, 'web', 'b'), { restartCount: 3, ready: true, state: { running: {} } });
  t.equal(cond(s, 'web', 'Ready'), 'True');
  t.same(reasons(s, 'web').sort(), ['Normal Started', 'Normal Started', 'Warning BackOff x2', 'Warning Failed x3'].sort(), 'a repeat counts on its Event');
  t.equal(s.runtime.current(uid, 'a')?.run, 0, 'a was never restarted');
});

t.test('a container that fails to start is retried without the watch bringing the status back', async (t) => {
  const s = await setup(t);
  s.runtime.failNext('startContainer');
  const uid = String(meta(s.api.createPod(pod('web')))['uid']);
  s.api.watch({ onPod: () => undefined, onPodDeleted: () => undefined });
  await s.run(0);
  t.equal(s.runtime.calls.filter((c) => c.startsWith('startContainer')).length, 2, 'the first start failed, the second (the first restart, at once) came');
  t.equal(s.runtime.current(uid, 'app')?.run, 1, 'on the kubelet\'s own');
});

t.test('the record cannot be written at the end of a sync: logged, retried in 2 s; the status waits for it; nothing starts twice', async (t) => {
  const s = await setup(t);
  s.runtime.failNext('save', { skip: 1 });
  const uid = await running(s);
  t.ok(s.runtime.current(uid, 'app'), 'the container was started');
  t.equal(s.runtime.record(uid)?.containers[0]?.current, null, 'the record does not have its run yet');
  t.equal(statusOf(s, 'web')['phase'], 'Pending', 'no status before the record');
  t.ok(s.logs.some((l) => l['msg'] === 'pod sync failed; retrying' && /injected failure in save/.test(String(l['err']))), 'logged');
  await s.run(2_000);
  t.equal(s.runtime.record(uid)?.containers[0]?.current?.run, 0, 'the record catches up');
  t.equal(statusOf(s, 'web')['phase'], 'Running');
  t.equal(s.runtime.calls.filter((c) => c.startsWith('startContainer')).length, 1, 'one start');
});

t.test('the status cannot be written: retried in 2 s, nothing started twice', async (t) => {
  const s = await setup(t);
  s.api.failNext('patchPodStatus');
  const uid = await running(s);
  t.equal(statusOf(s, 'web')['phase'], 'Pending', 'not written yet');
  t.ok(s.runtime.current(uid, 'app'), 'the container runs');
  await s.run(2_000);
  t.equal(statusOf(s, 'web')['phase'], 'Running');
  t.equal(cond(s, 'web', 'Ready'), 'True');
  t.equal(s.runtime.calls.filter((c) => c.startsWith('startContainer')).length, 1);
  t.equal(s.runtime.calls.filter((c) => c.startsWith('startSandbox')).length, 1);
});

t.test('a container exits and its record cannot be written right then: the poll goes on, the container restarts', async (t) => {
  const s = await setup(t);
  const uid = await running(s);
  s.runtime.failNext('save');
  s.runtime.exit(uid, 'app', 3);
  await s.run(250);
  t.equal(s.runtime.current(uid, 'app')?.run, 1, 'restarted');
  t.match(cstatus(s, 'web', 'app'), { restartCount: 1, lastState: { terminated: { exitCode: 3, reason: 'Error' } } });
  s.runtime.exit(uid, 'app', 3);
  await s.run(250);
  t.match(cstatus(s, 'web', 'app'), { state: { waiting: { reason: 'CrashLoopBackOff' } } }, 'the poller still runs: the second exit is seen');
});

t.test('the sandbox dies under the Pod: SandboxChanged, its IP released, a new sandbox, the containers started again in it', async (t) => {
  const s = await setup(t);
  const uid = await running(s);
  const ip = statusOf(s, 'web')['podIP'];
  s.runtime.crashSandbox(uid);
  await s.run(250);
  t.match(s.api.events('web').find((e) => e['reason'] === 'SandboxChanged'), { type: 'Normal', message: 'Pod sandbox changed, it will be killed and re-created.' });
  t.equal(s.runtime.leaks().sandboxes.length, 1, 'a new sandbox');
  t.equal(s.runtime.current(uid, 'app')?.run, 1, 'the container runs again, restart count 1');
  t.equal(s.cni.attachments.size, 1, 'one IP held');
  t.not(statusOf(s, 'web')['podIP'], undefined);
  t.equal(s.cni.calls.filter((c) => c.cmd === 'del').length, 1, `the old IP (${String(ip)}) released`);
  t.equal(statusOf(s, 'web')['phase'], 'Running');
});

t.test('the sandbox dies under a Pod with restartPolicy Never: its containers are over (137), no new sandbox, Failed, its IP released', async (t) => {
  const s = await setup(t);
  const uid = await running(s, 'job', { restartPolicy: 'Never' });
  s.runtime.crashSandbox(uid);
  await s.run(250);
  t.equal(statusOf(s, 'job')['phase'], 'Failed');
  t.match(cstatus(s, 'job', 'app'), { state: { terminated: { exitCode: 137 } } });
  t.equal(s.runtime.calls.filter((c) => c.startsWith('startSandbox')).length, 1, 'no second sandbox');
  t.same(leaks(s).attachments, []);
  t.same(leaks(s).sandboxes, []);
});

t.test('graceful deletion: a container that ignores SIGTERM is killed after the grace period; one that does not even die of SIGKILL is left to the sandbox after 5 s more', async (t) => {
  const s = await setup(t);
  const uid = await running(s, 'web', { containers: [container('term'), container('stuck'), container('dead')] });
  s.runtime.onSignal(uid, 'term', 'ignore-term');
  s.runtime.onSignal(uid, 'stuck', 'unkillable');
  s.api.deleteGracefully('default', 'web', 7);
  await s.run(0);
  t.same(s.runtime.current(uid, 'term')?.signals, ['SIGTERM']);
  t.equal(s.runtime.current(uid, 'dead'), null, 'dead ended on SIGTERM');
  await s.run(6_900);
  t.same(s.runtime.current(uid, 'term')?.signals, ['SIGTERM'], 'no SIGKILL within the grace period');
  await s.run(100);
  t.equal(s.runtime.current(uid, 'term'), null, 'SIGKILLed at 7 s');
  t.same(s.runtime.current(uid, 'stuck')?.signals, ['SIGTERM', 'SIGKILL']);
  t.ok(s.api.pod('default', 'web'), 'still there while stuck runs');
  await s.run(5_000);
  t.equal(s.api.pod('default', 'web'), undefined, 'gone after 5 s more');
  t.same(leaks(s), NO_LEAKS, 'the sandbox took stuck along');
});

for (const [step, inject] of [
  ['CNI DEL', (s: Setup) => s.cni.failNext('del', new Error('link busy'))],
  ['the sandbox\'s stop', (s: Setup) => s.runtime.failNext('stopSandbox')],
  ['the record\'s removal', (s: Setup) => s.runtime.failNext('remove')],
  ['the final delete', (s: Setup) => s.api.failNext('deletePod')],
] as const) {
  t.test(`deletion: ${step} fails: logged, retried in 2 s; the Pod goes and nothing leaks`, async (t) => {
    const s = await setup(t);
    await running(s);
    inject(s);
    s.api.deleteGracefully('default', 'web');
    await s.run(0);
    t.ok(s.api.pod('default', 'web'), 'not deleted yet');
    t.ok(s.logs.some((l) => l['msg'] === 'pod sync failed; retrying'), 'logged');
    await s.run(2_000);
    t.equal(s.api.pod('default', 'web'), undefined, 'deleted after the retry');
    t.same(leaks(s), NO_LEAKS);
    t.same(s.kubelet.podUids(), []);
    t.equal(s.api.calls.filter((c) => c.startsWith('deletePod')).length, step === 'the final delete' ? 2 : 1);
  });
}

t.test('a Pod gone from the API at once (force delete): torn down with a short grace, no final delete', async (t) => {
  const s = await setup(t);
  const uid = await running(s);
  s.runtime.onSignal(uid, 'app', 'ignore-term');
  s.api.forceDelete('default', 'web');
  await s.run(0);
  t.ok(s.runtime.current(uid, 'app'));
  await s.run(2_000);
  t.same(leaks(s), NO_LEAKS, 'SIGKILLed after at most 2 s, all released');
  t.notOk(s.api.calls.some((c) => c.startsWith('deletePod')));
});

t.test('restartPolicy Never, exit 0: Succeeded, the IP and the sandbox released; a failed CNI DEL is retried', async (t) => {
  const s = await setup(t);
  const uid = await running(s, 'job', { restartPolicy: 'Never' });
  s.cni.failNext('del', new Error('netlink busy'));
  s.runtime.exit(uid, 'app', 0);
  await s.run(250);
  t.equal(s.cni.attachments.size, 1, 'the DEL failed: the IP is still held');
  await s.run(2_000);
  t.same(leaks(s).attachments, [], 'released by the retry');
  t.same(leaks(s).sandboxes, []);
  t.equal(statusOf(s, 'job')['phase'], 'Succeeded');
  t.match(cstatus(s, 'job', 'app'), { state: { terminated: { exitCode: 0, reason: 'Completed' } } });
  t.same(leaks(s).records, [uid], 'the record stays until the Pod is deleted');
  s.api.deleteGracefully('default', 'job');
  await s.run(0);
  t.same(leaks(s), NO_LEAKS);
});

t.test('restart: a record whose sandbox died is cleaned (CNI DEL, stop, removed), even when the DEL fails; a live one is adopted without a restart, and torn down once the watch has no Pod for it', async (t) => {
  const dead: PodRecord = { version: 1, uid: 'dead', namespace: 'default', name: 'old', sandbox: { name: 'pod-dead', pid: 5, startTime: '5', netns: '/fake/netns/pod-dead' }, podIP: '10.244.1.9', startedAt: T0, containers: [] };
  const dead2: PodRecord = { ...dead, uid: 'dead2', name: 'old2', sandbox: { ...dead.sandbox!, name: 'pod-dead2' } };
  const run0 = { run: 0, pgid: 77, pid: 77, procStart: '77', startedAt: T0 };
  const live: PodRecord = { version: 1, uid: 'live', namespace: 'default', name: 'kept', sandbox: { name: 'pod-live', pid: 70, startTime: '70', netns: '/fake/netns/pod-live' }, podIP: '10.244.1.7', startedAt: T0, containers: [{ name: 'app', current: run0, last: null, previous: null, restartCount: 0, backoff: null }] };
  const gone: PodRecord = { ...live, uid: 'gone', name: 'gone', sandbox: { ...live.sandbox!, name: 'pod-gone', pid: 80, startTime: '80' }, containers: [{ ...live.containers[0]!, current: { ...run0, pid: 88, pgid: 88, procStart: '88' } }] };
  const cni = new FakeCniHandler();
  cni.failNext('del', new Error('link busy'));
  const s = await setup(t, { cni, records: [{ record: dead, live: false }, { record: dead2, live: false }, { record: live, live: true }, { record: gone, live: true }] });
  t.same(s.runtime.leaks().records.sort(), ['gone', 'live'], 'the dead records are removed');
  t.same(cni.calls.map((c) => `${c.cmd} ${c.req.containerId}`), ['del dead', 'del dead2'], 'each DEL tried, the failed one too');
  t.ok(s.logs.some((l) => l['msg'] === 'CNI DEL of a dead sandbox failed'));
  s.api.createPod({ metadata: { name: 'kept', namespace: 'default', uid: 'live' }, spec: { nodeName: 'n1', containers: [container('app')] } });
  await s.run(0);
  s.kubelet.onSynced();
  await s.run(0);
  t.equal(s.runtime.current('live', 'app')?.run, 0, 'adopted: the same run');
  t.equal(statusOf(s, 'kept')['phase'], 'Running');
  t.equal(statusOf(s, 'kept')['podIP'], '10.244.1.7', 'its IP');
  t.notOk(s.runtime.calls.some((c) => c.startsWith('startContainer') || c.startsWith('startSandbox')), 'nothing started');
  t.same(s.runtime.leaks().sandboxes, ['pod-live'], 'the one the API has no Pod for is torn down');
  t.same(s.runtime.leaks().records, ['live']);
});

t.test('a uid the runtime refuses: FailedCreatePodSandBox, and its deletion still completes', async (t) => {
  const s = await setup(t);
  s.api.createPod({ metadata: { name: 'odd', namespace: 'default', uid: 'a/b' }, spec: { nodeName: 'n1', containers: [container('app')] } });
  await s.run(0);
  t.match(s.api.events('odd'), [{ reason: 'FailedCreatePodSandBox', message: /invalid pod uid/ }]);
  s.api.deleteGracefully('default', 'odd');
  await s.run(0);
  t.equal(s.api.pod('default', 'odd'), undefined);
  t.same(leaks(s), NO_LEAKS);
});

t.test('probes: readiness failing makes the Pod not Ready; liveness failing kills and restarts the container', async (t) => {
  const s = await setup(t);
  const probe = (cmd: string) => ({ exec: { command: ['check', cmd] }, periodSeconds: 1, failureThreshold: 1 });
  const uid = await running(s, 'web', { containers: [container('app', { readinessProbe: probe('ready'), livenessProbe: { ...probe('alive'), initialDelaySeconds: 2 } })] });
  await s.run(1_000);
  t.equal(cond(s, 'web', 'Ready'), 'True');
  s.probes.set('check ready', false);
  await s.run(1_000);
  t.equal(cond(s, 'web', 'Ready'), 'False', 'not Ready');
  t.equal(s.runtime.current(uid, 'app')?.run, 0, 'readiness restarts nothing');
  s.probes.set('check ready', true);
  s.probes.set('check alive', false);
  for (let i = 0; i < 20 && !s.api.events('web').some((e) => e['reason'] === 'Killing'); i++) await s.run(100);
  t.match(s.api.events('web').find((e) => e['reason'] === 'Killing'), { message: 'Container app failed liveness probe, will be restarted' });
  t.ok(s.api.events('web').some((e) => e['reason'] === 'Unhealthy' && /Liveness probe failed: injected probe failure/.test(String(e['message']))));
  s.probes.set('check alive', true);
  await s.run(250);
  t.equal(s.runtime.current(uid, 'app')?.run, 1, 'restarted');
  await s.run(1_000);
  t.equal(cond(s, 'web', 'Ready'), 'True');
});

/** Counts the calls that change something, across the runtime, the CNI handler and the API, and fails the n-th (0: none). */
class Failer {
  calls = 0;
  failAt = 0;
  readonly log: string[] = [];
  wrap<T extends object>(name: string, target: T, sync: readonly string[], async: readonly string[]): T {
    return new Proxy(target, {
      get: (obj, prop, recv) => {
        const v = Reflect.get(obj, prop, recv) as unknown;
        if (typeof v !== 'function') return v;
        const fn = (v as (...a: unknown[]) => unknown).bind(obj);
        const p = String(prop);
        if (!sync.includes(p) && !async.includes(p)) return fn;
        return (...args: unknown[]) => {
          this.calls++;
          this.log.push(`${name}.${p}`);
          if (this.calls === this.failAt) {
            const err = new Error(`injected failure in ${name}.${p}`);
            if (async.includes(p)) return Promise.reject(err);
            throw err;
          }
          return fn(...args);
        };
      },
    });
  }
}

async function lifecycle(t: Test, f: Failer) {
  const runtime = f.wrap('runtime', new FakePodRuntime(), ['save', 'remove'], ['startSandbox', 'stopSandbox', 'startContainer']);
  const cni = f.wrap('cni', new FakeCniHandler(), [], ['add', 'del']);
  const api = f.wrap('api', new FakeKubeletApi(), [], ['patchPodStatus', 'deletePod']);
  const s = await setup(t, { runtime, cni, api });
  const uid = String(meta(s.api.createPod(pod('web', { containers: [container('a'), container('b')] })))['uid']);
  await s.run(0);
  await s.run(30_000);
  const up = { phase: statusOf(s, 'web')['phase'], ready: cond(s, 'web', 'Ready'), runs: [s.runtime.current(uid, 'a') !== null, s.runtime.current(uid, 'b') !== null] };
  s.api.deleteGracefully('default', 'web');
  await s.run(0);
  await s.run(30_000);
  return { s, up };
}

t.test('every call of a whole lifecycle failing in turn: the Pod still comes up (Running, Ready, both containers), still goes, and nothing leaks', async (t) => {
  const ok = new Failer();
  const { s: s0, up: up0 } = await lifecycle(t, ok);
  t.same(up0, { phase: 'Running', ready: 'True', runs: [true, true] });
  t.same(leaks(s0), NO_LEAKS);
  const steps = ok.calls;
  t.ok(steps >= 12, `a Pod's life makes ${steps} changes: ${ok.log.join(', ')}`);
  for (let n = 1; n <= steps; n++) {
    const f = new Failer();
    f.failAt = n;
    const { s, up } = await lifecycle(t, f);
    const what = `step ${n} (${ok.log[n - 1]})`;
    t.same(up, { phase: 'Running', ready: 'True', runs: [true, true] }, `${what} fails: the Pod still comes up`);
    t.equal(s.api.pod('default', 'web'), undefined, `${what}: the Pod still goes`);
    t.same(leaks(s), NO_LEAKS, `${what}: nothing leaks`);
  }
});

// --- volumes, tokens and the environment ---------------------------------------------------------------------

const b64 = (s: string) => Buffer.from(s).toString('base64');
const KUBE_API_ACCESS = { name: 'kube-api-access-abcde', projected: { defaultMode: 420, sources: [
  { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
  { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
  { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
] } };
const SA_MOUNT = { name: 'kube-api-access-abcde', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true };
const volDir = (uid: string, plugin: string, name: string) => `/fake/kubelet/${uid}/.volumes/kubernetes.io~${plugin}/${name}`;

function seedCluster(s: Setup): void {
  s.api.setConfigMap('default', 'kube-root-ca.crt', { data: { 'ca.crt': 'CA-PEM' } });
  s.api.setConfigMap('default', 'app', { data: { 'app.conf': 'color=blue', 'bad=key': 'x', LEVEL: 'debug' } });
  s.api.setSecret('default', 'creds', { data: { password: b64('s3cret') } });
  s.api.setService('default', 'kubernetes', { clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443, protocol: 'TCP' }] });
  s.api.setService('default', 'db', { clusterIP: '10.96.0.9', ports: [{ port: 5432, protocol: 'TCP' }] });
}

const volumePod = (extra: O = {}) => ({
  serviceAccountName: 'default',
  volumes: [KUBE_API_ACCESS, { name: 'cfg', configMap: { name: 'app', items: [{ key: 'app.conf', path: 'app.conf' }] } }, { name: 'scratch', emptyDir: { medium: 'Memory', sizeLimit: '8Mi' } },
    { name: 'info', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } }],
  containers: [container('app', {
    volumeMounts: [SA_MOUNT, { name: 'cfg', mountPath: '/etc/app', readOnly: true }, { name: 'scratch', mountPath: '/scratch' }, { name: 'info', mountPath: '/etc/podinfo' }],
    envFrom: [{ prefix: 'CFG_', configMapRef: { name: 'app' } }],
    env: [{ name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } }, { name: 'API', value: 'https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)' }],
  })],
  ...extra,
});

t.test('volumes: set up before the sandbox, mounted in the container with its /etc/hosts and resolv.conf; env from the objects and the Services; only the referenced objects watched; the Pod\'s files go with it', async (t) => {
  const s = await setup(t);
  seedCluster(s);
  const uid = await running(s, 'web', volumePod());
  t.equal(statusOf(s, 'web')['phase'], 'Running', JSON.stringify(s.api.events('web')));
  t.same(s.api.watched(), ['configMap default/app', 'configMap default/kube-root-ca.crt', 'secret default/creds'], 'what the Pod refers to, nothing else');
  t.same(s.runtime.filesUnder(volDir(uid, 'projected', 'kube-api-access-abcde')), { token: 'tok-1', 'ca.crt': 'CA-PEM', namespace: 'default' }, 'the ServiceAccount volume');
  t.equal(s.runtime.fileMode(`${volDir(uid, 'projected', 'kube-api-access-abcde')}/token`), 420);
  t.same(s.api.tokens.map((x) => x.req), [{ serviceAccount: 'default', namespace: 'default', audiences: [], expirationSeconds: 3607, pod: { name: 'web', uid } }], 'a token bound to the Pod');
  t.same(s.runtime.filesUnder(volDir(uid, 'configmap', 'cfg')), { 'app.conf': 'color=blue' });
  t.same(s.runtime.filesUnder(volDir(uid, 'downward-api', 'info')), { labels: '' });
  t.ok(s.runtime.memoryMounted(uid, 'scratch'), 'the Memory emptyDir is a tmpfs in the sandbox');
  const c = s.runtime.current(uid, 'app')!;
  t.same(c.mounts.map((m) => `${m.target} <- ${m.volumeDir.replace(`/fake/kubelet/${uid}/`, '')}${m.readOnly ? ' (ro)' : ''}`), [
    '/var/run/secrets/kubernetes.io/serviceaccount <- .volumes/kubernetes.io~projected/kube-api-access-abcde (ro)',
    '/etc/app <- .volumes/kubernetes.io~configmap/cfg (ro)',
    '/scratch <- .volumes/kubernetes.io~empty-dir/scratch',
    '/etc/podinfo <- .volumes/kubernetes.io~downward-api/info',
    '/etc/hosts <- .etc-hosts',
    '/etc/resolv.conf <- .resolv.conf',
  ]);
  t.match(s.runtime.file(`/fake/kubelet/${uid}/.etc-hosts`), /^# Kubernetes-managed hosts file\.\n127\.0\.0\.1\tlocalhost\n[^]*\n10\.244\.1\.2\tweb\n$/, 'the Pod\'s /etc/hosts with its IP');
  t.equal(s.runtime.file(`/fake/kubelet/${uid}/.resolv.conf`), 'search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n', 'ClusterFirst: the cluster DNS');
  t.equal(c.env['PASSWORD'], 's3cret');
  t.equal(c.env['CFG_LEVEL'], 'debug');
  t.equal(c.env['API'], 'https://10.96.0.1:443');
  t.equal(c.env['DB_SERVICE_HOST'], '10.96.0.9', 'the namespace\'s Services');
  t.equal(c.env['KUBERNETES_PORT_443_TCP_ADDR'], '10.96.0.1');
  t.match(s.api.events('web'), [{ type: 'Warning', reason: 'InvalidEnvironmentVariableNames', message: 'Keys [CFG_bad=key] from the EnvFrom configMap default/app were skipped since they are considered invalid environment variable names.' }, { reason: 'Started' }]);

  s.api.deleteGracefully('default', 'web');
  await s.run(0);
  t.same(leaks(s), NO_LEAKS, 'volumes, /etc/hosts and resolv.conf removed with the Pod');
  t.same(s.api.watched(), [], 'no object watched any longer');
});

t.test('a ConfigMap that changes: its volume is updated in place, the container keeps running with the environment it started with', async (t) => {
  const s = await setup(t);
  seedCluster(s);
  const uid = await running(s, 'web', volumePod({ containers: [container('app', { volumeMounts: [{ name: 'cfg', mountPath: '/etc/app' }], env: [{ name: 'COLOR', valueFrom: { configMapKeyRef: { name: 'app', key: 'app.conf' } } }] })] }));
  t.equal(s.runtime.current(uid, 'app')?.env['COLOR'], 'color=blue');
  s.api.setConfigMap('default', 'app', { data: { 'app.conf': 'color=green' } });
  await s.run(0);
  t.same(s.runtime.filesUnder(volDir(uid, 'configmap', 'cfg')), { 'app.conf': 'color=green' }, 'the volume follows the ConfigMap');
  t.equal(s.runtime.current(uid, 'app')?.run, 0, 'no restart');
  t.equal(s.runtime.current(uid, 'app')?.env['COLOR'], 'color=blue', 'env never changes');
  s.api.setSecret('default', 'unrelated', { data: {} });
  const writes = s.runtime.calls.filter((c) => c.startsWith('writeVolume')).length;
  await s.run(0);
  t.equal(s.runtime.calls.filter((c) => c.startsWith('writeVolume')).length, writes, 'an object the Pod does not use changes nothing');
  const pod = s.api.pod('default', 'web')!;
  s.api.createPod({ ...pod, metadata: { ...meta(pod), labels: { tier: 'front' } } });
  await s.run(0);
  t.same(s.runtime.filesUnder(volDir(uid, 'downward-api', 'info')), { labels: 'tier="front"' }, 'a label change reaches the downwardAPI volume');
});

t.test('the ServiceAccount token is refreshed once 80% of its lifetime has passed, and written in place', async (t) => {
  const s = await setup(t);
  seedCluster(s);
  const uid = await running(s, 'web', { volumes: [KUBE_API_ACCESS], containers: [container('app', { volumeMounts: [SA_MOUNT] })] });
  const token = () => s.runtime.file(`${volDir(uid, 'projected', 'kube-api-access-abcde')}/token`);
  t.equal(token(), 'tok-1');
  await s.run((3607 - 722) * 1000);
  t.equal(token(), 'tok-1', 'not before 80% (3607 s: the last 721 s)');
  t.equal(s.api.tokens.length, 1, 'the periodic resync reused the cached token');
  await s.run(1000);
  t.equal(token(), 'tok-2', 'refreshed at 80%');
  t.equal(s.api.tokens.length, 2);
  t.equal(s.runtime.current(uid, 'app')?.run, 0, 'without touching the container');
  s.api.failNext('requestToken');
  await s.run((3607 - 721) * 1000);
  t.equal(token(), 'tok-2', 'a failed refresh keeps the valid token');
  await s.run(60_000);
  t.equal(token(), 'tok-3', 'and the next resync refreshes it');
});

t.test('a volume that cannot be set up: FailedMount, no sandbox, ContainerCreating; it starts once the object exists', async (t) => {
  const s = await setup(t);
  s.api.setService('default', 'kubernetes', { clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443 }] });
  const uid = await running(s, 'web', { volumes: [{ name: 'cfg', configMap: { name: 'later' } }], containers: [container('app', { volumeMounts: [{ name: 'cfg', mountPath: '/etc/app' }] })] });
  t.equal(statusOf(s, 'web')['phase'], 'Pending');
  t.same(cstatus(s, 'web', 'app')['state'], { waiting: { reason: 'ContainerCreating' } });
  t.match(s.api.events('web'), [{ type: 'Warning', reason: 'FailedMount', message: 'MountVolume.SetUp failed for volume "cfg" : configmap "later" not found' }]);
  t.same(s.runtime.calls.filter((c) => c.startsWith('startSandbox')), [], 'no sandbox before the volumes');
  await s.run(10_000);
  t.equal(s.api.events('web').length, 1, 'retried, one Event for one message');
  s.api.setConfigMap('default', 'later', { data: { k: 'v' } });
  await s.run(0);
  t.equal(statusOf(s, 'web')['phase'], 'Running', 'the watch brought it: started');
  t.same(s.runtime.filesUnder(volDir(uid, 'configmap', 'cfg')), { k: 'v' });
  t.notOk(s.runtime.memoryMounted(uid, 'cfg'));
});

t.test('a missing key: CreateContainerConfigError in the kubelet\'s words, retried, started once the Secret has it; the others run', async (t) => {
  const s = await setup(t);
  seedCluster(s);
  const uid = await running(s, 'web', { containers: [container('app', { env: [{ name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'creds', key: 'token' } } }] }), container('side')] });
  t.same(cstatus(s, 'web', 'app')['state'], { waiting: { reason: 'CreateContainerConfigError', message: "couldn't find key token in Secret default/creds" } });
  t.ok(s.runtime.current(uid, 'side'), 'the other container runs');
  t.equal(cstatus(s, 'web', 'app')['restartCount'], 0, 'no run, no restart');
  t.match(s.api.events('web').filter((e) => e['reason'] === 'Failed'), [{ type: 'Warning', message: "Error: couldn't find key token in Secret default/creds", involvedObject: { fieldPath: 'spec.containers{app}' } }]);
  await s.run(10_000);
  t.equal(s.api.events('web').find((e) => e['reason'] === 'Failed')?.['count'], 2, 'tried again after 10 s');
  s.api.setSecret('default', 'creds', { data: { token: b64('t0k') } });
  await s.run(0);
  t.equal(s.runtime.current(uid, 'app')?.env['TOKEN'], 't0k', 'started at once when the Secret changed');
  t.equal(cond(s, 'web', 'Ready'), 'True');
});

t.test('a token the API server refuses (a ServiceAccount that does not exist): FailedMount with its words', async (t) => {
  const s = await setup(t);
  seedCluster(s);
  await running(s, 'web', { serviceAccountName: 'other', volumes: [KUBE_API_ACCESS], containers: [container('app', { volumeMounts: [SA_MOUNT] })] });
  const p = s.api.pod('default', 'web')!;
  t.equal(obj(p['spec'])?.['serviceAccountName'], 'other');
  t.match(s.api.events('web'), [{ reason: 'FailedMount', message: 'MountVolume.SetUp failed for volume "kube-api-access-abcde" : failed to fetch token: POST serviceaccounts/other/token: 404 serviceaccounts "other" not found' }]);
  t.equal(statusOf(s, 'web')['phase'], 'Pending');
});

t.test('a new sandbox gets its Memory emptyDir again (empty: the old tmpfs went with the old sandbox)', async (t) => {
  const s = await setup(t);
  seedCluster(s);
  const uid = await running(s, 'web', { volumes: [{ name: 'scratch', emptyDir: { medium: 'Memory' } }], containers: [container('app', { volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] })] });
  t.ok(s.runtime.memoryMounted(uid, 'scratch'));
  s.runtime.crashSandbox(uid);
  t.notOk(s.runtime.memoryMounted(uid, 'scratch'), 'gone with the sandbox');
  await s.run(250);
  t.equal(s.runtime.current(uid, 'app')?.run, 1, 'running again');
  t.ok(s.runtime.memoryMounted(uid, 'scratch'), 'mounted in the new one');
  s.runtime.failNext('mountMemory');
  s.runtime.crashSandbox(uid);
  await s.run(250);
  t.match(s.api.events('web').filter((e) => e['reason'] === 'FailedCreatePodSandBox'), [{ message: /injected failure in mountMemory/ }], 'a tmpfs that cannot be mounted fails the sandbox');
  await s.run(5000);
  t.ok(s.runtime.memoryMounted(uid, 'scratch'), 'and the next attempt makes it');
});

t.test('an adopted Pod (agent restart) has its volumes set up again (a new token) without a restart', async (t) => {
  const run0 = { run: 0, pgid: 77, pid: 77, procStart: '77', startedAt: T0 };
  const rec: PodRecord = { version: 1, uid: 'live', namespace: 'default', name: 'kept', sandbox: { name: 'pod-live', pid: 70, startTime: '70', netns: '/fake/netns/pod-live' }, podIP: '10.244.1.7', startedAt: T0, containers: [{ name: 'app', current: run0, last: null, previous: null, restartCount: 0, backoff: null }] };
  const s = await setup(t, { records: [{ record: rec, live: true }] });
  seedCluster(s);
  s.api.createPod({ metadata: { name: 'kept', namespace: 'default', uid: 'live' }, spec: { nodeName: 'n1', volumes: [KUBE_API_ACCESS], containers: [container('app', { volumeMounts: [SA_MOUNT] })] } });
  await s.run(0);
  s.kubelet.onSynced();
  await s.run(0);
  t.same(s.runtime.filesUnder(volDir('live', 'projected', 'kube-api-access-abcde')), { token: 'tok-1', 'ca.crt': 'CA-PEM', namespace: 'default' });
  t.notOk(s.runtime.calls.some((c) => c.startsWith('startContainer') || c.startsWith('startSandbox')), 'nothing started');
  t.equal(statusOf(s, 'kept')['phase'], 'Running');
});

t.test('admission: a Pod whose requests do not fit what the admitted Pods leave of allocatable is rejected (OutOfcpu), never run; room again once one goes', async (t) => {
  const s = await setup(t);
  const req = (cpu: string) => ({ containers: [container('app', { resources: { requests: { cpu } } })] });
  await running(s, 'big', req('1500m'));
  t.equal(statusOf(s, 'big')['phase'], 'Running');
  const uid = String(meta(s.api.createPod(pod('late', req('600m'))))['uid']);
  await s.run(0);
  t.match(statusOf(s, 'late'), { phase: 'Failed', reason: 'OutOfcpu', message: "Pod was rejected: Node didn't have enough resource: cpu, requested: 600, used: 1500, capacity: 2000" });
  t.same(reasons(s, 'late'), ['Warning OutOfcpu']);
  t.notOk(s.runtime.calls.some((c) => c.includes(uid)), 'nothing started for it');
  await running(s, 'small', req('500m'));
  t.equal(statusOf(s, 'small')['phase'], 'Running', 'one that fits is admitted');
  t.match(statusOf(s, 'late'), { phase: 'Failed' }, 'a rejected Pod stays rejected (its controller makes another)');
});

t.test('limits: each run starts with its Pod\'s and its own cgroup values; one the kernel OOM-kills is terminated OOMKilled (137) and restarted as its policy says', async (t) => {
  const s = await setup(t);
  const limited = (name: string, cpu: string, memory: string) => container(name, { resources: { requests: { cpu, memory }, limits: { cpu, memory } } });
  const uid = await running(s, 'web', { containers: [limited('app', '100m', '32Mi'), container('side')] });
  t.same(s.runtime.current(uid, 'app')?.resources, {
    pod: { cpuShares: 102, cpuQuota: null, cpuPeriod: 100000, memoryLimit: null },
    container: { cpuShares: 102, cpuQuota: 10000, cpuPeriod: 100000, memoryLimit: 33554432n },
  }, 'the Pod is Burstable (side has no limits): no Pod-level quota or memory limit');
  t.same(s.runtime.current(uid, 'side')?.resources?.container, { cpuShares: 2, cpuQuota: null, cpuPeriod: 100000, memoryLimit: null }, 'no requests: the minimum shares');
  s.runtime.oom(uid, 'app');
  await s.run(250);
  t.match(cstatus(s, 'web', 'app'), { restartCount: 1, lastState: { terminated: { exitCode: 137, signal: 9, reason: 'OOMKilled' } } });
  t.equal(s.runtime.current(uid, 'app')?.run, 1, 'restarted (restartPolicy Always)');
  s.runtime.exit(uid, 'side', 137);
  await s.run(250);
  t.match(cstatus(s, 'web', 'side'), { lastState: { terminated: { exitCode: 137, reason: 'Error' } } }, 'a 137 without an OOM kill is an Error');
  t.notOk(s.api.events('web').some((e) => e['reason'] === 'LimitsNotEnforced'), 'enforced: no warning');
  t.notOk(s.logs.some((l) => l['code'] === 'NN_ERR_LIMITS_NOT_ENFORCED'));
});

t.test('limits the node cannot enforce: the Pod runs, one Warning LimitsNotEnforced names the containers and why; Pods without such limits get none; the agent logs it once with its code; start sweeps what no adopted Pod keeps', async (t) => {
  const runtime = new FakePodRuntime();
  runtime.notEnforced = { memory: 'no cgroup hierarchy with the memory controller is mounted' };
  const run0 = { run: 0, pgid: 77, pid: 77, procStart: '77', startedAt: T0 };
  const rec: PodRecord = { version: 1, uid: 'live', namespace: 'default', name: 'kept', sandbox: { name: 'pod-live', pid: 70, startTime: '70', netns: '/fake/netns/pod-live' }, podIP: '10.244.1.7', startedAt: T0, containers: [{ name: 'app', current: run0, last: null, previous: null, restartCount: 0, backoff: null }] };
  const s = await setup(t, { runtime, records: [{ record: rec, live: true }, { record: { ...rec, uid: 'dead', name: 'gone', sandbox: { ...rec.sandbox!, name: 'pod-dead', pid: 71 } }, live: false }] });
  t.same(s.runtime.sweeps, [['live']], 'one sweep at start, keeping the adopted Pod only');
  const warned = s.logs.filter((l) => l['code'] === 'NN_ERR_LIMITS_NOT_ENFORCED');
  t.equal(warned.length, 1, 'logged once');
  t.match(warned[0], { level: 40, reason: 'memory: no cgroup hierarchy with the memory controller is mounted' });
  const mem = (name: string) => container(name, { resources: { limits: { memory: '32Mi' } } });
  const uid = await running(s, 'web', { containers: [mem('a'), mem('b'), container('c', { resources: { limits: { cpu: '1' } } })] });
  t.equal(statusOf(s, 'web')['phase'], 'Running', 'it runs anyway');
  t.ok(s.runtime.current(uid, 'a'), 'its containers run');
  t.match(s.api.events('web').filter((e) => e['reason'] === 'LimitsNotEnforced'), [{ type: 'Warning', count: 1, message: 'Not enforced on node n1, the containers run without them: limits.memory of containers a, b (no cgroup hierarchy with the memory controller is mounted)' }]);
  s.runtime.exit(uid, 'a', 1);
  await s.run(20_000);
  t.equal(s.api.events('web').filter((e) => e['reason'] === 'LimitsNotEnforced').length, 1, 'not again when a container restarts');
  t.equal(s.api.events('web').find((e) => e['reason'] === 'LimitsNotEnforced')?.['count'], 1);
  await running(s, 'cpu-only', { containers: [container('c', { resources: { limits: { cpu: '1' } } })] });
  await running(s, 'plain');
  t.same(s.api.events('cpu-only').map((e) => e['reason']), ['Started'], 'a cpu limit is enforced here: no warning');
  t.same(s.api.events('plain').map((e) => e['reason']), ['Started']);
  t.equal(s.logs.filter((l) => l['code'] === 'NN_ERR_LIMITS_NOT_ENFORCED').length, 1, 'still logged once');
});

t.test('resolv.conf by dnsPolicy: ClusterFirst points at --cluster-dns with the namespace\'s search paths and the node\'s; Default and None; no cluster DNS: the node\'s and MissingClusterDNS once per Pod', async (t) => {
  const runtime = new FakePodRuntime();
  runtime.resolvConf = 'nameserver 192.0.2.53\nsearch lab.example\noptions timeout:2\n';
  const s = await setup(t, { runtime });
  const create = async (name: string, spec: O) => {
    const uid = String(meta(s.api.createPod({ metadata: { name, namespace: 'ns1' }, spec: { nodeName: 'n1', terminationGracePeriodSeconds: 5, containers: [container('app')], ...spec } }))['uid']);
    await s.run(0);
    return s.runtime.file(`/fake/kubelet/${uid}/.resolv.conf`);
  };
  t.equal(await create('cf', {}), 'search ns1.svc.cluster.local svc.cluster.local cluster.local lab.example\nnameserver 10.96.0.10\noptions ndots:5\n', 'ClusterFirst (the default)');
  t.equal(await create('df', { dnsPolicy: 'Default' }), 'search lab.example\nnameserver 192.0.2.53\noptions timeout:2\n', 'Default: the node\'s');
  t.equal(await create('none', { dnsPolicy: 'None', dnsConfig: { nameservers: ['1.2.3.4'], searches: ['my.example'], options: [{ name: 'ndots', value: '2' }] } }), 'search my.example\nnameserver 1.2.3.4\noptions ndots:2\n', 'None: dnsConfig alone');
  t.equal(await create('merged', { dnsConfig: { nameservers: ['1.2.3.4', '1.2.3.5', '1.2.3.6'], options: [{ name: 'edns0' }] } }), 'search ns1.svc.cluster.local svc.cluster.local cluster.local lab.example\nnameserver 10.96.0.10\nnameserver 1.2.3.4\nnameserver 1.2.3.5\noptions ndots:5 edns0\n');
  t.same(s.api.events('merged').filter((e) => e['type'] === 'Warning').map((e) => `${String(e['reason'])}: ${String(e['message'])}`), ['DNSConfigForming: Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.96.0.10 1.2.3.4 1.2.3.5']);
  t.same(s.api.events('cf').filter((e) => e['type'] === 'Warning'), [], 'no Warning with cluster DNS');

  const runtime2 = new FakePodRuntime();
  runtime2.resolvConf = runtime.resolvConf;
  const bare = await setup(t, { runtime: runtime2, clusterDNS: [] });
  const uid = String(meta(bare.api.createPod({ metadata: { name: 'nodns', namespace: 'ns1' }, spec: { nodeName: 'n1', terminationGracePeriodSeconds: 5, restartPolicy: 'Always', containers: [container('app', { command: ['false'] })] } }))['uid']);
  await bare.run(0);
  t.equal(bare.runtime.file(`/fake/kubelet/${uid}/.resolv.conf`), 'search lab.example\nnameserver 192.0.2.53\noptions timeout:2\n', 'the node\'s resolv.conf');
  bare.runtime.exit(uid, 'app', 1);
  await bare.run(0);
  await bare.run(10_000);
  t.ok(bare.runtime.calls.filter((c) => c.startsWith(`startContainer ${uid}/app`)).length >= 2, 'the container started again');
  const missing = bare.api.events('nodns').filter((e) => e['reason'] === 'MissingClusterDNS');
  t.match(missing, [{ type: 'Warning', count: 1, involvedObject: { kind: 'Pod', name: 'nodns', namespace: 'ns1', uid }, message: `pod: "nodns_ns1(${uid})". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.` }]);
  t.equal(missing.length, 1, 'once per Pod, not per container start');
});

t.test('--cluster-domain: the ClusterFirst search paths and the /etc/hosts FQDN of a Pod with a subdomain', async (t) => {
  const s = await setup(t, { clusterDomain: 'corp.example' });
  const uid = String(meta(s.api.createPod({ metadata: { name: 'web', namespace: 'ns1' }, spec: { nodeName: 'n1', terminationGracePeriodSeconds: 5, hostname: 'web-0', subdomain: 'sub', containers: [container('app')] } }))['uid']);
  await s.run(0);
  t.equal(s.runtime.file(`/fake/kubelet/${uid}/.resolv.conf`), 'search ns1.svc.corp.example svc.corp.example corp.example\nnameserver 10.96.0.10\noptions ndots:5\n');
  t.match(s.runtime.file(`/fake/kubelet/${uid}/.etc-hosts`), /\n10\.244\.1\.2\tweb-0\.sub\.ns1\.svc\.corp\.example\tweb-0\n$/);
});
