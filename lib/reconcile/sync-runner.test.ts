import t from 'tap';
import { FakeClock } from './clock.fake.js';
import { BoundedFrequencyRunner } from './sync-runner.js';

function setup(minIntervalMs = 1000, maxIntervalMs = 60_000) {
  const clock = new FakeClock(0);
  const runs: number[] = [];
  let hook: (() => Promise<void> | void) | null = null;
  const runner = new BoundedFrequencyRunner({
    clock,
    minIntervalMs,
    maxIntervalMs,
    fn: async () => {
      runs.push(clock.now());
      if (hook) await hook();
    },
  });
  return { clock, runs, runner, setHook: (h: typeof hook) => (hook = h) };
}

/** A promise the test resolves by hand: a run that lasts until the test says so. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

t.test('nothing runs before start(); a request made before start runs at start', async (t) => {
  const { clock, runs, runner } = setup();
  runner.request();
  await clock.advance(5000);
  t.same(runs, []);
  runner.start();
  await clock.advance(0);
  t.same(runs, [5000]);
});

t.test('requests in one tick coalesce into one run', async (t) => {
  const { clock, runs, runner } = setup();
  runner.start();
  for (let i = 0; i < 5; i++) runner.request();
  await clock.advance(0);
  t.same(runs, [0]);
  await clock.advance(500);
  t.same(runs, [0], 'no extra run');
});

t.test('min interval: a request soon after a run waits until lastEnd + min', async (t) => {
  const { clock, runs, runner } = setup(1000);
  runner.start();
  runner.request();
  await clock.advance(0);
  await clock.advance(100);
  runner.request();
  runner.request();
  t.equal(runner.nextRunAt, 1000);
  await clock.advance(899);
  t.same(runs, [0], 'not before the min interval');
  await clock.advance(1);
  t.same(runs, [0, 1000], 'exactly at it, once');
  await clock.advance(5000);
  runner.request();
  await clock.advance(0);
  t.same(runs, [0, 1000, 6000], 'after a quiet period a request runs at once');
});

t.test('requests during a run give exactly one more run, min interval after the run ended', async (t) => {
  const { clock, runs, runner, setHook } = setup(1000);
  const d = deferred();
  setHook(() => d.promise);
  runner.start();
  runner.request();
  await clock.advance(0);
  t.equal(runner.isRunning, true);
  await clock.advance(300);
  runner.request();
  runner.request();
  runner.request();
  t.equal(runner.nextRunAt, null, 'nothing armed while running');
  setHook(null);
  d.resolve();
  await clock.advance(0);
  t.equal(runner.isRunning, false);
  t.equal(runner.nextRunAt, 1300, 'min interval from the end of the run (300)');
  await clock.advance(5000);
  t.same(runs, [0, 1300]);
  t.equal(runner.runs, 2);
});

t.test('max interval: periodic runs without requests', async (t) => {
  const { clock, runs, runner } = setup(1000, 10_000);
  runner.start();
  await clock.advance(9_999);
  t.same(runs, []);
  await clock.advance(1);
  t.same(runs, [10_000]);
  await clock.advance(3000);
  runner.request();
  await clock.advance(0);
  t.same(runs, [10_000, 13_000]);
  await clock.advance(9_999);
  t.same(runs, [10_000, 13_000], 'the period restarts after every run');
  await clock.advance(1);
  t.same(runs, [10_000, 13_000, 23_000]);
});

t.test('retryAfter: earliest wins, bounded by the min interval, satisfied by any later run', async (t) => {
  const { clock, runs, runner, setHook } = setup(1000, 60_000);
  let n = 0;
  setHook(() => {
    n++;
    if (n === 1) {
      runner.retryAfter(5000);
      runner.retryAfter(3000);
      runner.retryAfter(4000);
    }
    if (n === 2) runner.retryAfter(10); // shorter than the min interval
  });
  runner.start();
  runner.request();
  await clock.advance(0);
  t.equal(runner.nextRunAt, 3000);
  await clock.advance(3000);
  t.same(runs, [0, 3000]);
  t.equal(runner.nextRunAt, 4000, 'a 10 ms retry still waits the min interval');
  await clock.advance(1000);
  t.same(runs, [0, 3000, 4000]);
  t.equal(runner.nextRunAt, 64_000, 'back to the periodic schedule');

  // A retry asked for from outside is satisfied by a request-driven run before it.
  runner.retryAfter(20_000);
  await clock.advance(2000);
  runner.request();
  await clock.advance(0);
  t.same(runs, [0, 3000, 4000, 6000]);
  t.equal(runner.nextRunAt, 66_000, 'the retry was consumed');
});

t.test('a throwing function is logged and does not stop the runner', async (t) => {
  const clock = new FakeClock(0);
  let calls = 0;
  const errors: unknown[] = [];
  const log = { error: (o: unknown) => errors.push(o) } as unknown as import('../log/log.js').Logger;
  const runner = new BoundedFrequencyRunner({
    clock,
    minIntervalMs: 10,
    maxIntervalMs: 100,
    log,
    fn: async () => {
      calls++;
      throw new Error('boom');
    },
  });
  runner.start();
  runner.request();
  await clock.advance(0);
  await clock.advance(100);
  t.equal(calls, 2);
  t.equal(errors.length, 2);
});

t.test('stop: no run after it', async (t) => {
  const { clock, runs, runner } = setup(1000, 5000);
  runner.start();
  runner.request();
  await clock.advance(0);
  runner.stop();
  runner.request();
  await clock.advance(60_000);
  t.same(runs, [0]);
  t.equal(clock.pending, 0, 'no timer left behind');
});

t.test('bad intervals are refused', async (t) => {
  const clock = new FakeClock();
  const fn = async (): Promise<void> => {};
  t.throws(() => new BoundedFrequencyRunner({ clock, fn, minIntervalMs: 10, maxIntervalMs: 5 }), RangeError);
  t.throws(() => new BoundedFrequencyRunner({ clock, fn, minIntervalMs: -1, maxIntervalMs: 5 }), RangeError);
});

t.test('FakeClock validates like a careful timer', async (t) => {
  const c = new FakeClock(0);
  t.throws(() => c.setTimeout(() => {}, -1), RangeError);
  t.throws(() => c.clearTimeout(42), TypeError);
  const order: string[] = [];
  c.setTimeout(() => order.push('b'), 20);
  const h = c.setTimeout(() => order.push('x'), 10);
  c.setTimeout(() => order.push('a'), 10);
  c.clearTimeout(h);
  await c.advance(15);
  t.same(order, ['a']);
  t.equal(c.now(), 15);
  await c.advance(5);
  t.same(order, ['a', 'b']);
});
