import t from 'tap';
import { parseFlags, only, FlagError } from './flags.js';

t.test('flags, booleans, positionals and rest', async (t) => {
  const p = parseFlags(['run', 'web', '--socket', '/s', '--json', '--mtu=1450', '--', 'sleep', '--x'], ['json']);
  t.same([...p.flags], [['socket', '/s'], ['json', 'true'], ['mtu', '1450']]);
  t.same(p.positional, ['run', 'web']);
  t.same(p.rest, ['sleep', '--x']);
  t.throws(() => parseFlags(['--socket']), FlagError);
  t.throws(() => only(parseFlags(['--nope', '1']), ['socket']), /unknown flag --nope/);
});
