/**
 * The Lifecycle's order: start in order, stop in reverse, a failed start
 * stops what had started (and only that), a failing stop does not keep the
 * others from stopping. Pure.
 */
import t from 'tap';
import { Lifecycle } from './lifecycle.js';

function recorder() {
  const calls: string[] = [];
  const hook = (name: string, o: { failStart?: boolean; failStop?: boolean; asyncStart?: boolean } = {}) => ({
    name,
    start: async () => {
      if (o.asyncStart) await new Promise((r) => setImmediate(r));
      calls.push(`start ${name}`);
      if (o.failStart) throw new Error(`${name} failed`);
    },
    stop: () => {
      calls.push(`stop ${name}`);
      if (o.failStop) throw new Error(`${name} stop failed`);
    },
  });
  return { calls, hook };
}

t.test('start in order, stop in reverse; a second stop does nothing', async (t) => {
  const { calls, hook } = recorder();
  const lc = new Lifecycle();
  for (const n of ['storage', 'cache', 'server']) lc.append(hook(n, { asyncStart: n === 'cache' }));
  t.same(lc.names, ['storage', 'cache', 'server']);
  await lc.start();
  await lc.stop();
  await lc.stop();
  t.same(calls, ['start storage', 'start cache', 'start server', 'stop server', 'stop cache', 'stop storage']);
  t.throws(() => lc.append(hook('late')), /appended after start/);
});

t.test('a failed start stops what had started, in reverse, and throws the start\'s error', async (t) => {
  const { calls, hook } = recorder();
  const lc = new Lifecycle();
  lc.append(hook('a'));
  lc.append(hook('b'));
  lc.append(hook('c', { failStart: true }));
  lc.append(hook('d'));
  await t.rejects(lc.start(), { message: 'c failed' });
  t.same(calls, ['start a', 'start b', 'start c', 'stop b', 'stop a'], 'c never started and d was never tried');
  await lc.stop();
  t.equal(calls.length, 5, 'stop after a failed start does nothing more');
});

t.test('a stop that fails does not keep the others from stopping; stop() throws the first error', async (t) => {
  const { calls, hook } = recorder();
  const lc = new Lifecycle();
  lc.append(hook('a'));
  lc.append(hook('b', { failStop: true }));
  lc.append(hook('c'));
  await lc.start();
  await t.rejects(lc.stop(), { message: 'b stop failed' });
  t.same(calls.slice(3), ['stop c', 'stop b', 'stop a']);
});
