/**
 * The informer wrapper on a scripted ListWatch and a fake clock (no
 * server): previous objects kept for updates, last known ones for deletes,
 * synced once, restarts with capped jittered backoff after errors, held-back
 * re-watches when a server closes every watch at once, silent watches
 * restarted, its own aborts not taken for failures, stop means stop.
 */
import t from 'tap';
import type { KubernetesObject } from '@kubernetes/client-node';
import { silentLogger } from '../../../lib/log/log.js';
import { FakeClock, settle } from '../../../lib/reconcile/clock.fake.js';
import { backoffDelay, Informer, SyncGroup, type ListWatchLike } from './informer.js';

class ScriptedListWatch implements ListWatchLike {
  readonly cbs: Record<string, ((x: never) => void)[]> = { add: [], update: [], delete: [], error: [], connect: [] };
  starts = 0;
  stops = 0;
  rv = '';
  /** What start() does: by default connect (the list went fine and the watch opened). */
  onStart: (lw: ScriptedListWatch) => void = (lw) => lw.emit('connect', undefined);
  on(verb: string, cb: (x: never) => void): void {
    this.cbs[verb]!.push(cb);
  }
  emit(verb: string, x: unknown): void {
    for (const cb of this.cbs[verb]!) (cb as (x: unknown) => void)(x);
  }
  async start(): Promise<void> {
    this.starts++;
    this.onStart(this);
  }
  async stop(): Promise<void> {
    this.stops++;
  }
  latestResourceVersion(): string {
    return this.rv;
  }
}

const obj = (name: string, rv: string, extra: Record<string, unknown> = {}): KubernetesObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default', resourceVersion: rv }, ...extra });

function world(opts: { silenceMs?: number } = {}) {
  const clock = new FakeClock();
  const lw = new ScriptedListWatch();
  const events: string[] = [];
  const inf = new Informer({
    name: 'services',
    listWatch: lw,
    clock,
    log: silentLogger(),
    random: () => 0.5, // no jitter: delays are exact
    ...(opts.silenceMs ? { silenceMs: opts.silenceMs } : {}),
    handler: {
      add: (o) => events.push(`add ${o.metadata?.name}@${o.metadata?.resourceVersion}`),
      update: (p, c) => events.push(`update ${c.metadata?.name} ${p.metadata?.resourceVersion}->${c.metadata?.resourceVersion}`),
      delete: (o) => events.push(`delete ${o.metadata?.name}@${o.metadata?.resourceVersion}`),
      synced: () => events.push('synced'),
    },
  });
  return { clock, lw, inf, events };
}

t.test('backoffDelay: doubling from the initial delay, capped, jittered both ways', async (t) => {
  const o = { initialMs: 500, maxMs: 30_000, jitter: 0.2 };
  t.same([0, 1, 2, 3, 6, 7, 50].map((n) => backoffDelay(n, o, () => 0.5)), [500, 1000, 2000, 4000, 30_000, 30_000, 30_000]);
  t.equal(backoffDelay(0, o, () => 0), 400);
  t.equal(backoffDelay(0, o, () => 1), 600);
});

t.test('updates carry the previous object, deletes the last known one; synced once after the first list', async (t) => {
  const { lw, inf, events } = world();
  lw.onStart = (l) => {
    l.emit('connect', undefined);
    l.emit('add', obj('a', '1'));
  };
  await inf.start();
  t.same(events, ['add a@1', 'synced']);
  lw.emit('update', obj('a', '2'));
  // The watch's DELETED carries the deletion's version; the handler gets what the agent last knew.
  lw.emit('delete', obj('a', '3'));
  lw.emit('update', obj('b', '4')); // an update for an object never seen is an add
  t.same(events, ['add a@1', 'synced', 'update a 1->2', 'delete a@2', 'add b@4']);
  // After a 410, client-node lists again and reports known objects as added: an update here.
  lw.emit('add', obj('b', '5'));
  t.same(events.at(-1), 'update b 4->5');
  t.same(inf.list().map((o) => o.metadata?.name), ['b']);
  await inf.stop();
});

t.test('managedFields are dropped from what is delivered and kept (client-go TransformStripManagedFields)', async (t) => {
  const { lw, inf, events } = world();
  await inf.start();
  const withFields = (rv: string): KubernetesObject => {
    const o = obj('a', rv);
    (o.metadata as Record<string, unknown>)['managedFields'] = [{ manager: 'kubectl', operation: 'Update', fieldsV1: { 'f:spec': {} } }];
    (o.metadata as Record<string, unknown>)['labels'] = { app: 'web' };
    return o;
  };
  const sent = [withFields('1'), withFields('2')];
  lw.emit('add', sent[0]);
  lw.emit('update', sent[1]);
  t.same(events.slice(-2), ['add a@1', 'update a 1->2']);
  // The handlers get these very objects (client-node caches them too), and the informer keeps the last.
  for (const o of [...sent, ...inf.list()]) {
    t.notOk('managedFields' in (o.metadata ?? {}), `no managedFields at ${o.metadata?.resourceVersion}`);
    t.same(o.metadata?.labels, { app: 'web' }, 'the rest of the metadata is kept');
  }
  t.equal(inf.list()[0], sent[1]);
  await inf.stop();
});

t.test('an error restarts it after a backoff that doubles and resets once a start succeeds; synced still once', async (t) => {
  const { clock, lw, inf, events } = world();
  let failNext = 3;
  lw.onStart = (l) => {
    if (failNext-- > 0) l.emit('error', new Error('connect ECONNREFUSED 127.0.0.1:6443'));
    else l.emit('connect', undefined);
  };
  await inf.start();
  t.equal(lw.starts, 1);
  t.same(events, [], 'not synced: the list failed');
  await clock.advance(499);
  t.equal(lw.starts, 1, 'nothing before the first backoff (500 ms)');
  await clock.advance(1);
  t.equal(lw.starts, 2);
  await clock.advance(999);
  t.equal(lw.starts, 2, 'the second waits 1000 ms');
  await clock.advance(1);
  t.equal(lw.starts, 3);
  await clock.advance(2000);
  t.equal(lw.starts, 4, 'the third 2000 ms, and it succeeds');
  await settle();
  t.same(events, ['synced']);
  t.equal(inf.restarts.error, 3);
  // A failure mid-watch later starts again from the initial delay.
  lw.emit('error', new Error('socket hang up'));
  await clock.advance(500);
  t.equal(lw.starts, 5, 'the backoff was reset by the success');
  t.same(events, ['synced'], 'synced is reported once');
  await inf.stop();
});

t.test('a server that closes every watch at once is re-watched after a backoff, not in a loop', async (t) => {
  const { clock, lw, inf } = world();
  await inf.start();
  // client-node re-watches at once on a clean close. One quick re-watch is normal (a 410's relist) ...
  lw.emit('connect', undefined);
  t.equal(inf.restarts.fastClose, 0, 'one quick re-watch is normal');
  // ... a second one in the same second is a server closing every watch.
  lw.emit('connect', undefined);
  t.equal(inf.restarts.fastClose, 1);
  t.equal(lw.stops, 1, 'the ListWatch is stopped');
  const starts = lw.starts;
  await clock.advance(499);
  t.equal(lw.starts, starts);
  await clock.advance(1);
  t.equal(lw.starts, starts + 1, 'and started again after the backoff');
  await clock.advance(5000);
  lw.emit('connect', undefined); // normal re-watches, seconds apart
  await clock.advance(5000);
  lw.emit('connect', undefined);
  t.equal(inf.restarts.fastClose, 1, 're-watches seconds apart are normal');
  await inf.stop();
});

t.test('a silent watch is restarted from its resourceVersion; events keep it alive; its own abort is no failure', async (t) => {
  const { clock, lw, inf } = world({ silenceMs: 60_000 });
  await inf.start();
  await clock.advance(59_000);
  lw.emit('add', obj('a', '7'));
  await clock.advance(59_000);
  t.equal(inf.restarts.silence, 0, 'an event re-arms the timer');
  await clock.advance(1000);
  t.equal(inf.restarts.silence, 1);
  t.equal(lw.stops, 1);
  await settle();
  t.equal(lw.starts, 2, 'started again at once (it resumes from its resourceVersion)');
  lw.emit('error', Object.assign(new Error('The user aborted a request.'), { name: 'AbortError', type: 'aborted' }));
  t.equal(inf.restarts.error, 0, 'client-node reporting the abort of the stopped watch is not a failure');
  await inf.stop();
});

t.test('stop() stops everything: no restart after an error, no timers left', async (t) => {
  const { clock, lw, inf } = world();
  await inf.start();
  await inf.stop();
  lw.emit('error', new Error('late'));
  await clock.advance(60_000);
  t.equal(lw.starts, 1);
  t.equal(clock.pending, 0, 'no timer left');
});

t.test('SyncGroup: every handler hears synced once, after the last source listed', async (t) => {
  const g = new SyncGroup();
  const heard: string[] = [];
  const noop = { add() {}, update() {}, delete() {} };
  const a = g.join('services', noop, () => heard.push('services'));
  const b = g.join('endpointslices', noop, () => heard.push('endpointslices'));
  a.synced();
  t.same(heard, []);
  t.notOk(g.synced);
  b.synced();
  a.synced();
  t.same(heard, ['services', 'endpointslices']);
  t.ok(g.synced);
});

t.test('a list or watch that never answers (a SYN sent before the node\'s Service rules existed) is given up after 30 s and made again', async (t) => {
  const { clock, lw, inf, events } = world();
  let release: () => void = () => undefined;
  let first = true;
  lw.start = async function (this: ScriptedListWatch) {
    this.starts++;
    if (first) {
      first = false;
      await new Promise<void>((r) => { release = r; }); // hangs until stopped
      return;
    }
    this.emit('connect', undefined);
    this.emit('add', obj('a', '1'));
  };
  lw.stop = async function (this: ScriptedListWatch) {
    this.stops++;
    release();
  };
  void inf.start();
  await settle();
  await clock.advance(29_000);
  await settle();
  t.same([lw.starts, events], [1, []], 'still waiting before the timeout');
  await clock.advance(1_000);
  await settle();
  t.equal(lw.stops, 1, 'the stuck one abandoned');
  t.equal(lw.starts, 2, 'and made again');
  t.same(events, ['add a@1', 'synced']);
  t.equal(inf.restarts.stuck, 1);
  await inf.stop();
});
