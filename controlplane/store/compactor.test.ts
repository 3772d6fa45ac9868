/**
 * The compactor on a fake clock over the in-memory backend: it keeps at
 * least historyMs of history, and never compacts what a watcher of the
 * last historyMs may resume from.
 */
import t from 'tap';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { Compactor } from './compactor.js';
import { MemoryStorage } from './memory-storage.js';

const svc = (name: string) => ({ kind: 'Service', metadata: { name, namespace: 'default' } });

t.test('compaction on the clock keeps at least historyMs of history', async (t) => {
  const clock = new FakeClock();
  const storage = new MemoryStorage();
  const told: number[] = [];
  const c = new Compactor({ storage, clock, historyMs: 300_000, everyMs: 60_000, onCompacted: (rev) => told.push(rev) });
  await c.start();
  t.teardown(() => c.stop());
  const early = (await storage.create('services/default/a', svc('a'))).rev;
  await clock.advance(60_000);
  const mid = (await storage.create('services/default/b', svc('b'))).rev;
  await clock.advance(240_000);
  t.ok((await storage.compactedRev()) < early, 'nothing older than 5 minutes yet');
  await clock.advance(60_000);
  await new Promise((r) => setImmediate(r));
  const at = await storage.compactedRev();
  t.ok(at >= early && at < mid, `compacted to ${at}: what was current 5 minutes ago`);
  t.equal(told[told.length - 1], at, 'the cache is told each revision compacted to');
  c.stop();
  await clock.advance(600_000);
  t.equal(await storage.compactedRev(), at, 'stopped: no more compaction');
});
