/**
 * Root test: a full sync streamed into a BigBatch (the nftables render's
 * sink) on a real kernel: text lines and built commands mixed apply as one
 * batch; a command the kernel refuses fails the whole batch, and the error
 * names the line it had in the script, whose text is asked for only then;
 * a line outside the encoder's shapes sends nothing.
 */
import t from 'tap';
import { SpawnRunner } from '../../../exec/runner.js';
import { Lab, uniqueTag } from '../../../lab/lab.js';
import { NftExecutor } from '../nft.js';
import { NodenetError } from '../../../../../lib/errors/errors.js';

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

// Table by table (the sharded layout's full sync): each table between beginTable and endTable is a batch of its
// own, sent while the caller goes on; the rest is one batch, sent last.
const drop = (chain: string, table: string, ip: number) =>
  ({ line: 0, table, op: 'add-rule', chain, rule: { matches: [{ kind: 'ip', field: 'saddr', neq: false, addr: Uint8Array.of(10, 0, 0, ip), prefix: 32 }], stmt: { kind: 'verdict', verdict: { kind: 'drop' } }, comment: null } }) as const;

t.test('table by table: every table committed, the rest last', async (t) => {
  const b = nft.netlinkFullSync!(1 << 20, 3);
  b.sink.text('add table ip main');
  b.sink.text('add chain ip main fw');
  for (const tb of ['s0', 's1']) {
    b.sink.beginTable!(tb);
    b.sink.text(`add table ip ${tb}`);
    // Many chains, so that the batch in flight is looked at while the next is built.
    for (let i = 0; i < 3000; i++) {
      b.sink.command({ line: 0, table: tb, op: 'add-chain', chain: `c${i}` });
      b.sink.command(drop(`c${i}`, tb, i % 250));
    }
    b.sink.command(drop('fw', 'main', 9)); // another table's command inside the span goes to the rest
    b.sink.endTable!(tb);
  }
  const r = await b.send(() => '');
  t.match(r, { applied: true, commands: 2 + 2 * (1 + 6000 + 1) });
  for (const tb of ['s0', 's1']) t.match((await nft.listTableText('ip', tb)) ?? '', /chain c2999 \{\n\s+ip saddr 10\.0\.0\.249 drop/, `${tb} committed`);
  t.match((await nft.listTableText('ip', 'main')) ?? '', /chain fw \{\n\s+ip saddr 10\.0\.0\.9 drop\n\s+ip saddr 10\.0\.0\.9 drop/, 'the rest committed, with what the spans held of it');
});

t.test('table by table: a table the kernel refuses is unchanged and named by its line; the others commit', async (t) => {
  const b = nft.netlinkFullSync!(1 << 20, 3);
  const lines: string[] = [];
  const text = (l: string) => (lines.push(l), b.sink.text(l));
  const cmd = (c: Parameters<typeof b.sink.command>[0], l: string) => (lines.push(l), b.sink.command(c));
  b.sink.beginTable!('s0');
  text('add table ip s0');
  cmd({ line: 0, table: 's0', op: 'add-chain', chain: 'ok0' }, 'add chain ip s0 ok0');
  b.sink.endTable!('s0');
  b.sink.beginTable!('s1');
  cmd({ line: 0, table: 's1', op: 'add-chain', chain: 'new1' }, 'add chain ip s1 new1');
  cmd(drop('missing', 's1', 1), 'add rule ip s1 missing ip saddr 10.0.0.1 drop');
  b.sink.endTable!('s1');
  text('add chain ip main after');
  const err = await b.send(() => lines.join('\n') + '\n').catch((e: unknown) => e);
  t.ok(err instanceof NodenetError, 'a NodenetError');
  t.match((err as NodenetError).message, /at line 4 of/, 'naming the refused line, numbered across all tables');
  t.match((await nft.listTableText('ip', 's0')) ?? '', /chain ok0/, 's0 committed before');
  t.notMatch((await nft.listTableText('ip', 's1')) ?? '', /chain new1/, 'nothing of s1 applied');
  t.notMatch((await nft.listTableText('ip', 'main')) ?? '', /chain after/, 'the rest is not sent after a failed table');
});
