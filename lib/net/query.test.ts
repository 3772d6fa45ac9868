/**
 * net/query against apimachinery's conversions (runtime/conversion.go):
 * booleans as Convert_Slice_string_To_bool reads them, integers as
 * strconv.ParseInt, first values, lists, and "absent" kept apart.
 */
import t from 'tap';
import { Query } from './query.js';

const q = (s: string) => new Query(new URLSearchParams(s));

t.test('bool: only absent, false and 0 (any case) are false; every other value is true, the empty string too', async (t) => {
  for (const [s, want] of [
    ['', false], ['watch=false', false], ['watch=0', false], ['watch=FALSE', false], ['watch=False', false],
    ['watch=true', true], ['watch=True', true], ['watch=1', true], ['watch=', true], ['watch', true], ['watch=yes', true], ['watch=no', true], ['watch=00', true],
  ] as const) t.equal(q(s).bool('watch'), want, JSON.stringify(s));
  t.equal(q('watch=false&watch=true').bool('watch'), false, 'the first value counts');
  t.equal(q('').optionalBool('orphanDependents'), undefined, '*bool: absent stays absent');
  t.equal(q('orphanDependents=False').optionalBool('orphanDependents'), false);
  t.equal(q('orphanDependents=True').optionalBool('orphanDependents'), true);
});

t.test('int64: strconv.ParseInt(s, 10, 64), in its words', async (t) => {
  t.equal(q('').int64('limit'), undefined);
  t.equal(q('limit=500').int64('limit'), 500);
  t.equal(q('limit=-3').int64('limit'), -3);
  t.equal(q('limit=%2B3').int64('limit'), 3, 'a leading + is allowed');
  t.equal(q('limit=007').int64('limit'), 7);
  t.equal(q('limit=1&limit=x').int64('limit'), 1, 'the first value counts');
  for (const bad of ['', 'x', '1.5', '1e3', ' 1', '0x10', '--1']) {
    t.throws(() => q(`limit=${encodeURIComponent(bad)}`).int64('limit'), { code: 'NN_ERR_BAD_REQUEST', httpStatus: 400, message: `strconv.ParseInt: parsing ${JSON.stringify(bad)}: invalid syntax` }, JSON.stringify(bad));
  }
  t.throws(() => q('limit=9223372036854775808').int64('limit'), { httpStatus: 400, message: 'strconv.ParseInt: parsing "9223372036854775808": value out of range' });
  t.throws(() => q('limit=9223372036854775807').int64('limit'), { httpStatus: 400, message: /limit: Invalid value: 9223372036854775807: beyond what nodenet can count/ }, 'an int64 nodenet cannot hold exactly is refused, not rounded');
});

t.test('strings: the first value; lists: every value', async (t) => {
  t.equal(q('').string('fieldManager'), undefined);
  t.equal(q('fieldManager=').string('fieldManager'), '');
  t.equal(q('fieldManager=a&fieldManager=b').string('fieldManager'), 'a');
  t.same(q('dryRun=All&dryRun=x').strings('dryRun'), ['All', 'x']);
  t.same(q('').strings('dryRun'), []);
  t.ok(q('pretty').has('pretty'));
});
