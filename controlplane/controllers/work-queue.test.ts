/**
 * The controllers' work queue on a fake clock: keys de-duplicated while
 * they wait, one at a time, a Conflict retried at once and another failure
 * after the delay, idle() and stop().
 */
import t from 'tap';
import { NodenetError, ErrorCode } from '../../lib/errors/errors.js';
import { silentLogger } from '../../lib/log/log.js';
import { FakeClock, settle } from '../../lib/reconcile/clock.fake.js';
import { WorkQueue } from './work-queue.js';

t.test('de-duplicated, one at a time, retried: at once after a Conflict, after the delay otherwise', async (t) => {
  const clock = new FakeClock();
  const seen: string[] = [];
  let busy = 0;
  let maxBusy = 0;
  let fail: Record<string, Error[]> = {};
  const q = new WorkQueue({
    name: 'test', clock, log: silentLogger(), retryMs: 1000,
    process: async (k) => {
      busy++;
      maxBusy = Math.max(maxBusy, busy);
      await settle();
      busy--;
      seen.push(k);
      const e = fail[k]?.shift();
      if (e) throw e;
    },
  });
  q.add('a'); // taken at once
  q.add('b');
  q.add('b');
  q.add('a'); // added again while it is worked on: it changed since, so it is done again
  await q.idle();
  t.same(seen, ['a', 'b', 'a'], 'a waiting key is not queued twice; one being worked on is queued again');
  t.equal(maxBusy, 1, 'one at a time');
  seen.length = 0;
  fail = { c: [new NodenetError(ErrorCode.Conflict, 'stale')], d: [new Error('boom')] };
  q.add('c');
  q.add('d');
  await q.idle();
  await clock.advance(0);
  await q.idle();
  t.same(seen, ['c', 'd', 'c'], 'the Conflict again at once; the other waits');
  await clock.advance(999);
  t.same(seen, ['c', 'd', 'c']);
  await clock.advance(1);
  await q.idle();
  t.same(seen, ['c', 'd', 'c', 'd'], 'after the delay');
  q.addAfter('e', 500);
  q.stop();
  await clock.advance(1000);
  q.add('f');
  await q.idle();
  t.same(seen, ['c', 'd', 'c', 'd'], 'nothing after stop');
  t.equal(clock.pending, 0, 'no timer left');
});

t.test('with a priority: the higher first, equals in arrival order (the scheduler queue\'s PrioritySort)', async (t) => {
  const clock = new FakeClock();
  const seen: string[] = [];
  const prio: Record<string, number> = { low1: 0, low2: 0, high: 1000, mid: 10, low3: 0 };
  let gate: (() => void) | null = null;
  const q = new WorkQueue({
    name: 'test', clock, log: silentLogger(), priority: (k) => prio[k] ?? 0,
    process: async (k) => {
      if (k === 'first') await new Promise<void>((r) => (gate = r));
      seen.push(k);
    },
  });
  q.add('first');
  await settle(); // taken; the others wait behind it
  for (const k of ['low1', 'low2', 'high', 'mid', 'low3', 'low1']) q.add(k);
  t.equal(q.length, 5, 'a waiting key is not queued twice');
  await settle();
  gate!();
  await q.idle();
  t.same(seen, ['first', 'high', 'mid', 'low1', 'low2', 'low3']);
  // Many keys: drained in order.
  seen.length = 0;
  const many = Array.from({ length: 200 }, (_, i) => `k${i}`);
  for (const k of many) prio[k] = (i => (i * 37) % 11)(Number(k.slice(1)));
  q.add('first');
  await settle();
  for (const k of many) q.add(k);
  await settle();
  gate!();
  await q.idle();
  const want = [...many].sort((a, b) => prio[b]! - prio[a]! || Number(a.slice(1)) - Number(b.slice(1)));
  t.same(seen, ['first', ...want]);
  q.stop();
});
