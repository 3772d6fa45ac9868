import t from 'tap';
import { FlagError } from '../../agent/src/cli/flags.js';
import { benchArgs, benchFlags, int, ints, list } from './args.js';

t.test('int: a whole number in range, the flag named when not', async (t) => {
  t.equal(int('n', '42', 1, 100), 42);
  t.equal(int('n', '0', 0, 0), 0);
  t.throws(() => int('n', '4.5', 1, 100), /--n: "4.5" is not a whole number/);
  t.throws(() => int('n', '-1', 0, 100), FlagError);
  t.throws(() => int('n', '', 0, 100), FlagError);
  t.throws(() => int('n', '101', 1, 100), /--n: 101 is outside 1\.\.100/);
});

t.test('list and ints: distinct comma-separated values', async (t) => {
  t.same(list('m', 'a, b,c,'), ['a', 'b', 'c']);
  t.throws(() => list('m', ','), /--m needs at least one value/);
  t.throws(() => list('m', 'a,a'), /--m: a,a repeats a value/);
  t.same(ints('c', '1,16', 1, 256), [1, 16]);
  t.throws(() => ints('c', '1,300', 1, 256), /--c: 300 is outside/);
  t.throws(() => ints('c', '1,1', 1, 256), /repeats a value/);
});

t.test('benchFlags: --quick and the named flags, nothing positional, -h gives the usage', async (t) => {
  const a = benchFlags(['--quick', '--out', 'x.json'], ['out'], 'usage: x');
  t.equal(a.quick, true);
  t.equal(a.flags.get('out'), 'x.json');
  t.equal(benchFlags([], ['out'], 'usage: x').quick, false);
  t.throws(() => benchFlags(['extra'], ['out'], 'usage: x'), /unexpected argument "extra"/);
  t.throws(() => benchFlags(['--bogus', '1'], ['out'], 'usage: x'), /unknown flag --bogus/);
  t.throws(() => benchFlags(['-h'], ['out'], 'usage: x'), /^usage: x$/);
});

t.test('benchArgs: the parsed value, or 2 after printing a FlagError; anything else is thrown', async (t) => {
  t.equal(benchArgs((argv) => argv.length, ['a', 'b']), 2, 'a parse result of 2 is a value too');
  t.same(benchArgs((argv) => [...argv], ['x']), ['x']);
  const printed: unknown[] = [];
  const orig = console.error;
  console.error = (...a: unknown[]) => void printed.push(...a);
  try {
    t.equal(benchArgs(() => { throw new FlagError('--n: bad'); }, []), 2);
  } finally {
    console.error = orig;
  }
  t.same(printed, ['--n: bad']);
  t.throws(() => benchArgs(() => { throw new TypeError('bug'); }, []), TypeError);
});
