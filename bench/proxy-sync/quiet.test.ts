import t from 'tap';
import { busyShare, cpuTimes } from './quiet.js';

t.test('cpu times from /proc/stat', async (t) => {
  const a = cpuTimes('cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\n');
  t.same(a, { busy: 150, total: 1000 });
  const b = cpuTimes('cpu  200 0 100 1500 100 0 0 0 0 0\n');
  t.equal(busyShare(a, b), 150 / 900, 'busy jiffies over all jiffies between the samples');
  t.equal(busyShare(a, a), 0, 'no time passed: not busy');
  t.throws(() => cpuTimes('intr 1 2 3'), /not a \/proc\/stat cpu line/);
});
