import t from 'tap';
import { pino } from 'pino';
import { silentLogger } from '../log/log.js';
import { FakeClock } from './clock.fake.js';
import { ErrorCode, NodenetError } from '../errors/errors.js';
import { ApiEventRecorder, EventWriter, objectReference, type EventSink } from './event-recorder.js';

const T0 = Date.parse('2030-01-01T00:00:00Z');

/** A sink that keeps the calls; `missing` makes patches of those names answer 404, `down` makes every call fail. */
function sink() {
  const calls: { op: 'create' | 'patch'; namespace: string; name: string; body: Record<string, unknown> }[] = [];
  const state = { down: false, missing: new Set<string>() };
  const s: EventSink = {
    async createEvent(namespace, event) {
      if (state.down) throw new Error('connect ECONNREFUSED');
      calls.push({ op: 'create', namespace, name: String((event['metadata'] as { name: string }).name), body: event });
    },
    async patchEvent(namespace, name, patch) {
      if (state.down) throw new Error('connect ECONNREFUSED');
      if (state.missing.has(name)) throw Object.assign(new Error('404 not found'), { code: 404 });
      calls.push({ op: 'patch', namespace, name, body: patch });
    },
  };
  return { s, calls, state };
}

const SVC = { kind: 'Service', apiVersion: 'v1', namespace: 'default', name: 'web', uid: 'u1', resourceVersion: '8' };
const NODE = { kind: 'Node', apiVersion: 'v1', name: 'n2', uid: 'u2', resourceVersion: '3' };

t.test('an Event as upstream writes it: named after the object, in its namespace (default for a Node), from the component on this node', async (t) => {
  const clock = new FakeClock(T0);
  const { s, calls } = sink();
  const r = new ApiEventRecorder({ sink: s, component: 'nodenet-proxy', host: 'n1', clock, log: silentLogger() });
  r.event(SVC, 'Warning', 'InvalidObjectKeptLastGood', 'Cannot use this version');
  r.event(NODE, 'Warning', 'InvalidObjectSkipped', 'Cannot use this Node');
  await r.idle();
  t.equal(calls.length, 2);
  t.match(calls[0]!.name, /^web\.[0-9a-f]+$/);
  t.same(calls[0]!.body, {
    apiVersion: 'v1', kind: 'Event',
    metadata: { name: calls[0]!.name, namespace: 'default' },
    involvedObject: SVC,
    reason: 'InvalidObjectKeptLastGood', message: 'Cannot use this version', type: 'Warning',
    source: { component: 'nodenet-proxy', host: 'n1' }, reportingComponent: 'nodenet-proxy', reportingInstance: 'n1',
    firstTimestamp: '2030-01-01T00:00:00Z', lastTimestamp: '2030-01-01T00:00:00Z', count: 1,
  });
  t.equal(calls[1]!.namespace, 'default', 'a cluster-scoped object\'s Events go to default');
  t.same(calls[1]!.body['involvedObject'], NODE, 'no namespace in the reference');
  t.not(calls[0]!.name.slice(4), calls[1]!.name.slice(3), 'two Events in one millisecond: two names');
});

t.test('the same Event again counts on the first (a patch); after the window, or for another message, a new one; a deleted one is made again', async (t) => {
  const clock = new FakeClock(T0);
  const { s, calls, state } = sink();
  const r = new ApiEventRecorder({ sink: s, component: 'nodenet-proxy', host: 'n1', clock, log: silentLogger() });
  r.event(SVC, 'Warning', 'R', 'm');
  await clock.advance(60_000);
  r.event({ ...SVC, resourceVersion: '9' }, 'Warning', 'R', 'm');
  await r.idle();
  t.same(calls.map((c) => c.op), ['create', 'patch']);
  t.same(calls[1], { op: 'patch', namespace: 'default', name: calls[0]!.name, body: { count: 2, lastTimestamp: '2030-01-01T00:01:00Z' } });
  r.event(SVC, 'Warning', 'R', 'another message');
  await r.idle();
  t.equal(calls.at(-1)!.op, 'create', 'another message: another Event');

  // Expired on the server (its TTL): the patch answers 404, the Event is created again under its name with its count.
  state.missing.add(calls[0]!.name);
  await clock.advance(60_000);
  r.event(SVC, 'Warning', 'R', 'm');
  await r.idle();
  t.match(calls.at(-1), { op: 'create', name: calls[0]!.name, body: { count: 3, firstTimestamp: '2030-01-01T00:00:00Z', lastTimestamp: '2030-01-01T00:02:00Z' } });

  await clock.advance(11 * 60_000);
  r.event(SVC, 'Warning', 'R', 'm');
  await r.idle();
  t.match(calls.at(-1), { op: 'create', body: { count: 1 } }, 'after 10 minutes: a new Event');
  t.not(calls.at(-1)!.name, calls[0]!.name);
});

t.test('never throws: a failed write is logged; the spam filter drops past the burst per object, and refills', async (t) => {
  const clock = new FakeClock(T0);
  const { s, calls, state } = sink();
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'debug' }, { write: (x: string) => void lines.push(JSON.parse(x) as Record<string, unknown>) });
  const r = new ApiEventRecorder({ sink: s, component: 'nodenet-overlay', host: 'n1', clock, log, burst: 3, refillMs: 1000 });
  state.down = true;
  r.event(NODE, 'Warning', 'R', 'm0');
  await r.idle();
  t.match(lines, [{ level: 40, msg: 'events: could not record an event', reason: 'R', kind: 'Node', name: 'n2' }]);
  state.down = false;
  for (let i = 1; i <= 4; i++) r.event(NODE, 'Warning', 'R', `m${i}`);
  r.event(SVC, 'Warning', 'R', 'other object');
  await r.idle();
  t.same(calls.map((c) => c.body['message']), ['m1', 'm2', 'other object'], 'burst 3 per object (m0 took one): m3 and m4 dropped');
  t.ok(lines.some((l) => l['msg'] === 'events: too many about this object; event dropped'));
  await clock.advance(1000);
  r.event(NODE, 'Warning', 'R', 'm5');
  await r.idle();
  t.equal(calls.at(-1)!.body['message'], 'm5', 'a token back after refillMs');
  await r.stop();
  r.event(NODE, 'Warning', 'R', 'after stop');
  await r.idle();
  t.notOk(calls.some((c) => c.body['message'] === 'after stop'), 'stopped: nothing more');
});

t.test('one EventWriter for several sources (the control plane\'s use): the source and the fieldPath tell Events apart; no spam filter when off; a NotFound NodenetError is a missing Event', async (t) => {
  const clock = new FakeClock(T0);
  const calls: { op: 'create' | 'patch'; namespace: string; name: string; body: Record<string, unknown>; component: string | undefined }[] = [];
  const missing = new Set<string>();
  const w = new EventWriter({
    sink: {
      async createEvent(namespace, event, source) {
        calls.push({ op: 'create', namespace, name: String((event['metadata'] as { name: string }).name), body: event, component: source?.component });
      },
      async patchEvent(namespace, name, patch, source) {
        if (missing.has(name)) throw new NodenetError(ErrorCode.NotFound, `events "${name}" not found`);
        calls.push({ op: 'patch', namespace, name, body: patch, component: source?.component });
      },
    },
    clock, log: silentLogger(), spam: null,
  });
  const POD = { kind: 'Pod', apiVersion: 'v1', namespace: 'ns1', name: 'p', uid: 'u3' };
  const a = w.recorder({ component: 'kubelet', host: 'n1' });
  const b = w.recorder({ component: 'scheduler', host: '' });
  a.event({ ...POD, fieldPath: 'spec.containers{web}' }, 'Warning', 'BackOff', 'm');
  a.event({ ...POD, fieldPath: 'spec.containers{side}' }, 'Warning', 'BackOff', 'm');
  b.event(POD, 'Warning', 'BackOff', 'm');
  a.event({ ...POD, fieldPath: 'spec.containers{web}' }, 'Warning', 'BackOff', 'm');
  await w.idle();
  t.same(calls.map((c) => `${c.op} ${c.component}`), ['create kubelet', 'create kubelet', 'create scheduler', 'patch kubelet'], 'another container or another component: an Event of its own; the sink is told who records');
  t.match(calls[0]!.body, { metadata: { namespace: 'ns1' }, involvedObject: { ...POD, fieldPath: 'spec.containers{web}' }, source: { component: 'kubelet', host: 'n1' }, reportingInstance: 'n1' });
  t.same(calls[2]!.body['source'], { component: 'scheduler' }, 'no host: none in the source');
  t.equal(calls[3]!.name, calls[0]!.name, 'the repeat counts on the first');
  for (let i = 0; i < 40; i++) b.event(POD, 'Normal', 'R', `m${i}`);
  await w.idle();
  t.equal(calls.filter((c) => c.body['reason'] === 'R').length, 40, 'spam filter off: all 40 written');
  missing.add(calls[2]!.name);
  b.event(POD, 'Warning', 'BackOff', 'm');
  await w.idle();
  t.match(calls.at(-1), { op: 'create', name: calls[2]!.name, body: { count: 2 } }, 'NN_ERR_NOT_FOUND on the patch: made again');
});

t.test('objectReference: from a watched object; null without a name', async (t) => {
  t.same(objectReference({ metadata: { name: 'web', namespace: 'default', uid: 'u', resourceVersion: '5' } }, 'Service', 'v1'), { kind: 'Service', apiVersion: 'v1', name: 'web', namespace: 'default', uid: 'u', resourceVersion: '5' });
  t.same(objectReference({ metadata: { name: 'n2' } }, 'Node', 'v1'), { kind: 'Node', apiVersion: 'v1', name: 'n2' });
  t.equal(objectReference({ metadata: {} }, 'Node', 'v1'), null);
  t.equal(objectReference(null, 'Node', 'v1'), null);
});
