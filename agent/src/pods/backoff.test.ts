import t from 'tap';
import { afterRestart, restartAt, shouldRestart, type BackoffEntry } from './backoff.js';

t.test('first restart at once, then 10 s doubling to 300 s', async (t) => {
  let e: BackoffEntry | null = null;
  let now = 0;
  const delays: number[] = [];
  for (let i = 0; i < 8; i++) {
    const started = now;
    const finished = started + 1000; // a crash after 1 s
    const at = restartAt(e, started, finished);
    delays.push(at - finished);
    now = at;
    e = afterRestart(e, finished - started, now);
  }
  t.same(delays, [0, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
});

t.test('ten minutes of running resets the back-off', async (t) => {
  const e: BackoffEntry = { delayMs: 160_000, lastRestartMs: 0 };
  t.equal(restartAt(e, 0, 600_000), 600_000, 'restart at once');
  t.same(afterRestart(e, 600_000, 600_000), { delayMs: 10_000, lastRestartMs: 600_000 });
  t.equal(restartAt(e, 0, 599_000), 759_000, 'just short of it: the delay stands');
});

t.test('restart policies', async (t) => {
  t.same([shouldRestart('Always', 0), shouldRestart('Always', 1), shouldRestart('OnFailure', 0), shouldRestart('OnFailure', 137), shouldRestart('Never', 1)], [true, true, false, true, false]);
});
