import t from 'tap';
import { formatReferences, mib, ms, ratio, table, thousands } from './report.js';

t.test('number formats', async (t) => {
  t.equal(thousands(1234567.4), '1,234,567');
  t.equal(thousands(999), '999');
  t.equal(thousands(-1234.4), '-1,234');
  t.equal(thousands(-0.2), '0', 'no "-0"');
  t.equal(ms(0.456), '0.46');
  t.equal(ms(-0.08), '-0.08');
  t.equal(ms(4.56), '4.6');
  t.equal(ms(-2.21), '-2.2');
  t.equal(ms(12345.6), '12,346');
  t.equal(ms(NaN), '–');
  t.equal(mib(6_291_456), '6.0');
});

t.test('ratio: reference over ours, "inside" or "over"', async (t) => {
  t.equal(ratio(1000, 3.24), '309× inside');
  t.equal(ratio(1000, 9.62), '104× inside');
  t.equal(ratio(1400, 1.62), '864× inside');
  t.equal(ratio(30_000, 13.3), '2,256× inside');
  t.equal(ratio(1000, 250), '4.0× inside');
  t.equal(ratio(1000, 2500), '2.5× over');
  t.equal(ratio(1000, 1000), '1.0× inside', 'at the limit is inside (≤)');
  t.equal(ratio(1000, NaN), '–');
  t.equal(ratio(1000, 0), '–', 'no zero division');
});

t.test('table: the first `left` columns left-aligned, the rest right-aligned', async (t) => {
  t.equal(table(['a', 'b', 'c'], [['x', '1', '2']]), '| a | b | c |\n|---|---:|---:|\n| x | 1 | 2 |');
  t.equal(table(['a', 'b', 'c'], [], 2), '| a | b | c |\n|---|---|---:|');
  t.equal(formatReferences([{ reference: 'SLO', theirs: '1 s', ours: '3 ms', ratio: ratio(1000, 3) }]),
    '| reference | theirs | nodenet | ratio |\n|---|---:|---:|---:|\n| SLO | 1 s | 3 ms | 333× inside |');
});
