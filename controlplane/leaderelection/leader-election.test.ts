/**
 * Leader election on a Lease (client-go's rules) with a fake clock and a
 * lock that keeps one record with compare-and-swap, as the API server does:
 * one leader of two, a clean release handed over at the next retry, a
 * partitioned leader stepping down within the renew deadline and a standby
 * leading after the lease duration, and a paused leader that wakes up
 * writing nothing.
 */
import t from 'tap';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { LeaderElector, type LeaderRecord, type LeaseLock } from './leader-election.js';

class Store {
  record: LeaderRecord | null = null;
  rv = 0;
  writes: string[] = [];
}

/** One replica's view of the Lease: its calls may fail (partition) or hang until resumed (a paused process). */
function lockFor(store: Store, who: string) {
  let gate: Promise<void> | null = null;
  let open: (() => void) | null = null;
  const state = { down: false };
  const wait = async () => {
    if (gate) await gate;
    if (state.down) throw new Error('connection refused');
  };
  const lock: LeaseLock = {
    describe: 'kube-system/kube-controller-manager',
    async get() {
      await wait();
      return store.record ? { record: { ...store.record }, resourceVersion: String(store.rv) } : null;
    },
    async create(record) {
      await wait();
      if (store.record) throw new Error('AlreadyExists');
      store.record = record;
      store.rv++;
      store.writes.push(`${who} create`);
    },
    async update(record, rv) {
      await wait();
      if (String(store.rv) !== rv) throw new Error('Conflict');
      store.record = record;
      store.rv++;
      store.writes.push(`${who} update ${record.holderIdentity || '(released)'}`);
    },
  };
  return {
    lock, state,
    pause() { gate = new Promise<void>((r) => (open = r)); },
    resume() { open?.(); gate = null; },
  };
}

function replica(store: Store, clock: FakeClock, id: string, log: string[]) {
  const l = lockFor(store, id);
  const e = new LeaderElector({
    lock: l.lock, identity: id, clock, random: () => 0,
    onStartedLeading: () => void log.push(`${id} leads`),
    onStoppedLeading: () => void log.push(`${id} stops`),
  });
  return { e, ...l };
}

/** Two replicas on one lock, a started (and leading), then b: the setup every two-replica case starts from. */
async function twoReplicas() {
  const clock = new FakeClock();
  const store = new Store();
  const log: string[] = [];
  const a = replica(store, clock, 'a', log);
  const b = replica(store, clock, 'b', log);
  a.e.start();
  await clock.advance(0);
  b.e.start();
  await clock.advance(0);
  return { clock, store, log, a, b };
}

t.test('two replicas: exactly one leads; a clean stop hands the lease over at the next retry, not after 15 s', async (t) => {
  const { clock, store, log, a, b } = await twoReplicas();
  t.same(log, ['a leads']);
  t.equal(b.e.leader, 'a', 'b sees a as the leader');
  await clock.advance(30_000);
  t.same(log, ['a leads'], 'a renews; b never takes it');
  t.equal(store.record!.holderIdentity, 'a');
  t.equal(store.record!.leaseDurationSeconds, 15);
  const t0 = clock.now();
  await a.e.stop();
  t.same(log, ['a leads', 'a stops']);
  t.equal(store.record!.holderIdentity, '', 'released');
  await clock.advance(2_000);
  t.same(log, ['a leads', 'a stops', 'b leads'], `b leads ${clock.now() - t0} ms after the release`);
  t.equal(store.record!.leaseTransitions, 1);
  await b.e.stop();
});

t.test('a leader cut off from the API steps down within the renew deadline; the standby leads within the lease duration plus a retry', async (t) => {
  const { clock, log, a, b } = await twoReplicas();
  const cut = clock.now();
  a.state.down = true;
  let stoppedAt = 0;
  let ledAt = 0;
  for (let i = 0; i < 400 && !(stoppedAt && ledAt); i++) {
    await clock.advance(100);
    if (!stoppedAt && log.includes('a stops')) stoppedAt = clock.now() - cut;
    if (!ledAt && log.includes('b leads')) ledAt = clock.now() - cut;
  }
  t.ok(stoppedAt > 0 && stoppedAt <= 10_000 + 2_000, `a stopped acting ${stoppedAt} ms after the cut (renew deadline 10 s)`);
  t.ok(ledAt > 0 && ledAt <= 15_000 + 2_400, `b leads ${ledAt} ms after the cut (about 17 s at most)`);
  t.ok(stoppedAt < ledAt, 'never two leaders: a stopped before b started');
  await a.e.stop();
  await b.e.stop();
});

t.test('a paused leader that wakes after losing the lease stops at once and writes nothing', async (t) => {
  const { clock, store, log, a, b } = await twoReplicas();
  a.pause();
  await clock.advance(20_000);
  t.ok(log.includes('b leads'), 'b took over while a was paused');
  const writes = store.writes.length;
  a.resume();
  await clock.advance(2_000);
  await clock.advance(2_000);
  t.ok(log.includes('a stops'), 'a stopped acting');
  t.same(store.writes.slice(writes).filter((w) => w.startsWith('a ')), [], 'a wrote nothing after it woke');
  t.equal(store.record!.holderIdentity, 'b');
  t.notOk(a.e.isLeader);
  await a.e.stop();
  await b.e.stop();
});

t.test('client-go\'s rule on the timings is enforced', async (t) => {
  const store = new Store();
  t.throws(() => new LeaderElector({ lock: lockFor(store, 'x').lock, identity: 'x', clock: new FakeClock(), leaseDurationMs: 10_000, renewDeadlineMs: 10_000, onStartedLeading: () => {}, onStoppedLeading: () => {} }), /leaseDuration must exceed renewDeadline/);
});
