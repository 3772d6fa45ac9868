import t from 'tap';
import { podPhase, podStatus, statusDiffers, type ContainerView, type PodView } from './pod-status.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const running = (name: string, ready: boolean): ContainerView => ({ name, image: 'nodenet/host', containerID: `nodenet://u/${name}/0`, state: { running: { startedAt: T0 } }, lastState: null, restartCount: 0, ready, started: true });
const exited = (name: string, exitCode: number): ContainerView => ({ name, image: 'nodenet/host', containerID: '', state: { terminated: { exitCode, reason: exitCode ? 'Error' : 'Completed', startedAt: T0, finishedAt: T0 + 1000 } }, lastState: null, restartCount: 0, ready: false, started: false });
const backoff = (name: string): ContainerView => ({ ...exited(name, 1), state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 10s' } }, lastState: { exitCode: 1, reason: 'Error', startedAt: T0, finishedAt: T0 + 1000 }, restartCount: 1 });
const view = (containers: ContainerView[], restartPolicy: PodView['restartPolicy'] = 'Always'): PodView => ({ restartPolicy, podIP: '10.244.1.5', hostIP: '192.168.77.11', startTime: T0, containers });

t.test('phase, as getPhase', async (t) => {
  t.equal(podPhase(view([running('a', true), { ...running('b', false), state: { waiting: { reason: 'ContainerCreating' } } }])), 'Pending');
  t.equal(podPhase(view([running('a', false), exited('b', 0)])), 'Running');
  t.equal(podPhase(view([backoff('a')])), 'Running', 'a crash loop runs on');
  t.equal(podPhase(view([exited('a', 0), exited('b', 0)], 'Never')), 'Succeeded');
  t.equal(podPhase(view([exited('a', 0), exited('b', 2)], 'Never')), 'Failed');
  t.equal(podPhase(view([exited('a', 0)], 'OnFailure')), 'Succeeded');
  t.equal(podPhase({ ...view([]), failed: { reason: 'UnsupportedPodSpec', message: 'x' } }), 'Failed');
});

t.test('the status: conditions keep their transition time while unchanged', async (t) => {
  const first = podStatus(view([running('a', false)]), { phase: 'Pending', qosClass: 'BestEffort', conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: '2025-12-31T23:59:00Z' }] }, T0);
  t.match(first, { phase: 'Running', podIP: '10.244.1.5', podIPs: [{ ip: '10.244.1.5' }], hostIP: '192.168.77.11', startTime: '2026-01-01T00:00:00Z', qosClass: 'BestEffort', reason: null });
  const cond = (s: Record<string, unknown>, type: string) => (s['conditions'] as Record<string, unknown>[]).find((c) => c['type'] === type)!;
  t.match(cond(first, 'Ready'), { status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [a]', lastTransitionTime: '2026-01-01T00:00:00Z' });
  t.match(cond(first, 'PodScheduled'), { status: 'True', lastTransitionTime: '2025-12-31T23:59:00Z' });
  t.match(first['containerStatuses'], [{ name: 'a', ready: false, started: true, restartCount: 0, state: { running: { startedAt: '2026-01-01T00:00:00Z' } }, lastState: {} }]);
  const later = podStatus(view([running('a', false)]), first, T0 + 60_000);
  t.equal(cond(later, 'Ready')['lastTransitionTime'], '2026-01-01T00:00:00Z', 'unchanged: the time stays');
  t.notOk(statusDiffers(later, first), 'nothing to write');
  const ready = podStatus(view([running('a', true)]), first, T0 + 60_000);
  t.match(cond(ready, 'Ready'), { status: 'True', lastTransitionTime: '2026-01-01T00:01:00Z' });
  t.ok(statusDiffers(ready, first), 'a change to write');
});

t.test('a crash-looping container: waiting, with its last termination', async (t) => {
  const s = podStatus(view([backoff('a')]), {}, T0);
  t.match(s['containerStatuses'], [{ state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 1, reason: 'Error' } }, restartCount: 1, ready: false }]);
});

t.test('statusDiffers: a null is an absent field, key order does not count', async (t) => {
  t.notOk(statusDiffers({ phase: 'Running', reason: null, podIP: '1.2.3.4' }, { podIP: '1.2.3.4', phase: 'Running' }));
  t.ok(statusDiffers({ phase: 'Running', reason: null }, { phase: 'Running', reason: 'Evicted' }));
});
