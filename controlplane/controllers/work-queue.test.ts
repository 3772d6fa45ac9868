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
