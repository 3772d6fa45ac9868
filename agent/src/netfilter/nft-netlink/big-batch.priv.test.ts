/**
 * Root test: a full sync streamed into a BigBatch (the nftables render's
 * sink) on a real kernel: text lines and built commands mixed apply as one
 * batch; a command the kernel refuses fails the whole batch, and the error
 * names the line it had in the script, whose text is asked for only then;
 * a line outside the encoder's shapes sends nothing.
 */
import t from 'tap';
import { SpawnRunner } from '../../exec/runner.js';
import { Lab, uniqueTag } from '../../lab/lab.js';
import { NftExecutor } from '../nft.js';
import { NodenetError } from '../../errors/errors.js';

const runner = new SpawnRunner();
const lab = await Lab.create(uniqueTag('nb'), { runner });
t.teardown(() => lab.destroy());
const ns = await lab.addNetns('a');
const nft = new NftExecutor({ runner, netns: ns.path });

t.test('text lines and commands, one batch', async (t) => {
  const b = nft.netlinkFullSync!();
  b.sink.text('add table ip t');
  b.sink.command({ line: 0, table: 't', op: 'add-chain', chain: 'c' });
  b.sink.text('# a comment line counts as a line');
  b.sink.command({ line: 0, table: 't', op: 'add-rule', chain: 'c', rule: { matches: [{ kind: 'ip', field: 'saddr', neq: false, addr: Uint8Array.of(10, 0, 0, 1), prefix: 32 }], stmt: { kind: 'verdict', verdict: { kind: 'drop' } }, comment: null } });
  let asked = 0;
  const r = await b.send(() => (asked++, ''));
  t.match(r, { applied: true, commands: 3 });
  t.equal(asked, 0, 'the script text was not asked for');
  t.match((await nft.listTableText('ip', 't')) ?? '', /chain c \{\n\s+ip saddr 10\.0\.0\.1 drop/);
});

t.test('a refused command fails the batch; the error names its line', async (t) => {
  const b = nft.netlinkFullSync!();
  b.sink.text('add chain ip t d');
  b.sink.text('# two lines before the bad one');
  b.sink.command({ line: 0, table: 't', op: 'add-rule', chain: 'no-such-chain', rule: { matches: [], stmt: { kind: 'verdict', verdict: { kind: 'drop' } }, comment: null } });
  const script = 'add chain ip t d\n# two lines before the bad one\nadd rule ip t no-such-chain drop\n';
  const err = await b.send(() => script).catch((e: unknown) => e);
  t.ok(err instanceof NodenetError, 'a NodenetError');
  t.match((err as NodenetError).message, /at line 3 of/, 'naming line 3');
  t.match((err as NodenetError).details ?? '', /no-such-chain/, 'with the script around it');
  t.notMatch((await nft.listTableText('ip', 't')) ?? '', /chain d/, 'nothing of it applied');
});

t.test('a line outside the shapes: nothing is sent', async (t) => {
  const b = nft.netlinkFullSync!();
  b.sink.text('add chain ip t e');
  b.sink.text('add rule ip t e tcp dport 22 counter accept');
  const r = await b.send(() => '');
  t.match(r, { applied: false, line: 2 });
  t.notMatch((await nft.listTableText('ip', 't')) ?? '', /chain e/);
});
