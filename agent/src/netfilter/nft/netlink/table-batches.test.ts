/**
 * TableBatches without a kernel (a fake sender): what goes in which batch, the seq ranges, the script lines
 * numbered across all batches, and one batch in flight at a time: the next table is sent only once the kernel
 * has answered the one before (a second sendto waiting for the nf_tables mutex spins on the render's CPU).
 */
import t from 'tap';
import type { NlCommand } from './commands.js';
import { TableBatches, type TableSender } from './apply.js';
import type { NetlinkAnswer } from './socket.js';

class FakeSender implements TableSender {
  readonly started: Buffer[] = [];
  /** Answers the kernel has queued (the test releases them). */
  queued: NetlinkAnswer[] = [];
  start(bytes: Buffer): Promise<string | null> {
    this.started.push(bytes);
    return Promise.resolve(null);
  }
  poll(): NetlinkAnswer[] {
    return this.queued.splice(0);
  }
}

const chain = (table: string, name: string): NlCommand => ({ line: 0, table, op: 'add-chain', chain: name });
/** The seq of a batch's BATCH_BEGIN (its first message's, less one). */
const firstSeqOf = (b: Buffer) => b.readUInt32LE(8);

t.test('spans make batches of their own, one in flight at a time', async (t) => {
  const s = new FakeSender();
  const tb = new TableBatches(1000, 1 << 16, s, 3);
  tb.text('add table ip main');
  tb.beginTable('s0');
  tb.command(chain('s0', 'a'));
  tb.command(chain('main', 'fw')); // the main table's, inside the span: the rest's
  tb.endTable('s0');
  t.equal(s.started.length, 1, 's0 is sent at its end');
  tb.beginTable('s1');
  tb.text('# a comment: a line, no command');
  tb.command(chain('s1', 'b'));
  tb.endTable('s1');
  t.equal(s.started.length, 1, 's1 waits: the kernel has not answered s0');
  tb.beginTable('s2');
  const s0 = firstSeqOf(s.started[0]!);
  s.queued.push({ seq: s0 + 1, error: 0, message: null }); // s0's last (only) command acked: done
  for (let i = 0; i < 2048; i++) tb.command(chain('s2', `c${i}`));
  t.equal(s.started.length, 2, 's1 went while s2 was being built, once s0 was answered');
  tb.endTable('s2');
  t.equal(s.started.length, 2, 's2 waits for s1');
  const queued = tb.takeQueued();
  t.same(queued.map((q) => q.table), ['s2'], 'what sendTables sends in turn');
  t.same([...tb.sent[0]!.batch.lines], [2], 's0: its command at script line 2');
  t.same([...tb.sent[1]!.batch.lines], [5], 's1: line 5 (the comment counts)');
  t.equal(queued[0]!.lines.length, 2048);
  const rest = tb.restBatch.finish();
  t.same([...rest.lines], [1, 3], 'the rest: the main table, wherever its lines came');
  const seqs = [1000, s0, firstSeqOf(s.started[1]!), queued[0]!.firstSeq];
  t.equal(new Set(seqs).size, 4, 'every batch has its own seq range');
  t.ok(seqs.slice(1).every((q, i) => q - seqs[i]! >= 1 << 22), 'ranges far apart');
  t.ok(tb.seqEnd > queued[0]!.firstSeq, 'the next transaction starts after all of them');
  t.equal(tb.answers.length, 1, 'the answers read are kept for the check');
});

t.test('without spans it is one batch; a line outside the shapes stops the sending', async (t) => {
  const s = new FakeSender();
  const one = new TableBatches(50, 1 << 16, s);
  one.text('add table ip kube-proxy');
  one.command(chain('kube-proxy', 'x'));
  t.equal(s.started.length, 0);
  t.equal(one.restBatch.finish().count, 2);
  const bad = new TableBatches(50, 1 << 16, s, 2);
  bad.beginTable('s0');
  bad.text('add rule ip s0 c tcp dport 22 counter accept');
  bad.endTable('s0');
  t.equal(s.started.length, 0, 'nothing sent');
  t.match(bad.unsupported, { line: 1 });
});
