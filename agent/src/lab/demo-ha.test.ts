/** The HA demo's pure part: the write stream as a timeline, and the longest pause in it. */
import t from 'tap';
import { writeTimeline } from './demo-ha.js';

t.test('writeTimeline: a bar of half seconds with writes, and the longest pause between two', async (t) => {
  const tl = writeTimeline([100, 300, 700, 2600, 2700], 0, 3000);
  t.equal(tl.bar, '##...#');
  t.equal(tl.longestGapMs, 1900);
  t.same(writeTimeline([], 0, 1000), { bar: '..', longestGapMs: 0 });
  t.equal(writeTimeline([5000], 0, 1000).bar, '.#', 'a late write counts in the last bucket');
});
