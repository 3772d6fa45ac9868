import t from 'tap';
import { FlagError, OUTPUT_FLAGS, outputFormat, parseFlags } from './flags.js';
import { formatTable } from './table.js';

const SPEC = { socket: { type: 'string' }, json: { type: 'boolean' }, mtu: { type: 'string' } } as const;

t.test('flags, booleans, positionals and rest', async (t) => {
  const p = parseFlags(['run', 'web', '--socket', '/s', '--json', '--mtu=1450', '--', 'sleep', '--x'], SPEC);
  t.same([...p.flags], [['socket', '/s'], ['json', 'true'], ['mtu', '1450']]);
  t.same(p.positional, ['run', 'web']);
  t.same(p.rest, ['sleep', '--x']);
  t.equal(p.help, false);
});

t.test('strict: unknown flags, values on booleans and missing values are errors naming the flag', async (t) => {
  t.throws(() => parseFlags(['--socket'], SPEC), { name: 'FlagError', message: /flag --socket needs a value/ });
  t.throws(() => parseFlags(['--nope', '1'], SPEC), { message: /unknown flag --nope \(this command takes --socket, --json, --mtu, -h\)/ });
  t.throws(() => parseFlags(['--json=false'], SPEC), { message: /flag --json takes no value/ }, '--json=false does not turn JSON on');
  t.throws(() => parseFlags(['-x'], {}), { message: /unknown flag -x \(this command takes no flags but -h\)/ });
});

t.test('-h and --help on any spec', async (t) => {
  t.equal(parseFlags(['-h'], {}).help, true);
  t.equal(parseFlags(['ls', '--help'], SPEC).help, true);
});

t.test('-o json|yaml|wide, with --json as an alias', async (t) => {
  const fmt = (argv: string[]) => outputFormat(parseFlags(argv, OUTPUT_FLAGS), ['table', 'wide', 'json', 'yaml'] as const, 'table');
  t.equal(fmt([]), 'table');
  t.equal(fmt(['-o', 'wide']), 'wide');
  t.equal(fmt(['--output=yaml']), 'yaml');
  t.equal(fmt(['--json']), 'json');
  t.throws(() => fmt(['-o', 'xml']), FlagError);
  t.throws(() => fmt(['--json', '-o', 'yaml']), /disagree/);
});

t.test('tables: columns as wide as their content, three spaces apart', async (t) => {
  t.equal(formatTable(['NAME', 'IP'], [['web', '10.244.1.2'], ['client-long', '10.244.1.3']]), 'NAME          IP\nweb           10.244.1.2\nclient-long   10.244.1.3\n');
  t.equal(formatTable(['NAME', 'IP'], []), 'NAME   IP\n');
});

t.test('a `multiple` string flag given several times: its values joined by commas; any other keeps the last', async (t) => {
  const specs = { disable: { type: 'string', multiple: true }, name: { type: 'string' } } as const;
  t.equal(parseFlags(['--disable', 'a', '--disable', 'b,c'], specs).flags.get('disable'), 'a,b,c');
  t.equal(parseFlags(['--disable=a'], specs).flags.get('disable'), 'a');
  t.equal(parseFlags(['--name', 'x', '--name', 'y'], specs).flags.get('name'), 'y');
  t.notOk(parseFlags([], specs).flags.has('disable'));
});
