/**
 * NftSets over nfnetlink without the kernel: the bytes NetlinkNftSets hands
 * its socket (netlink/socket.ts's NfnlSocket, faked here) are exactly the
 * bytes nft-sets.ts's own encoder wrote before it was replaced by
 * netlink/encode.ts (nft-sets-testdata.ts); the kernel's answers become
 * NftSetsErrors; and the NftFake as an NftSets. The real socket is tested
 * against the kernel in nft-sets.priv.test.ts.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { NodenetError, ErrorCode } from '../../../../lib/errors/errors.js';
import { encodeKey } from './netlink/encode.js';
import type { NetlinkAnswer } from './netlink/socket.js';
import { elementKey, NetlinkNftSets, NftSetsError, type ElementSocket, type NftElementOp } from './nft-sets.js';
import { BIG_ELEMENT_BATCH, ELEMENT_BATCH_GOLDEN } from './nft-sets-testdata.js';
import { NftFake } from './nft.fake.js';

/** The errno a rejected promise carries ('' when it resolved). */
const errnoOf = (p: Promise<unknown>): Promise<string> => p.then(() => '', (e: unknown) => (e instanceof NftSetsError ? e.errno : `not an NftSetsError: ${String(e)}`));

/** The seqs of the messages in a batch that ask for an ack (NLM_F_ACK). */
function ackedSeqs(batch: Buffer): number[] {
  const seqs: number[] = [];
  for (let off = 0; off + 16 <= batch.length; ) {
    const len = batch.readUInt32LE(off);
    if (batch.readUInt16LE(off + 6) & 0x4) seqs.push(batch.readUInt32LE(off + 8));
    off += (len + 3) & ~3;
  }
  return seqs;
}

/** A socket that keeps what is sent and answers as `answer` says (by default an ack, 0, for every acked message). */
class FakeSocket implements ElementSocket {
  readonly sent: Buffer[] = [];
  readonly log: string[] = [];
  closed = 0;
  answer: (seqs: number[]) => NetlinkAnswer[] = (seqs) => seqs.map((seq) => ({ seq, error: 0, message: null }));
  sendResult: string | null = null;
  private queued: NetlinkAnswer[] = [];
  /** Resolves the send in flight (null: sends resolve at once). */
  hold: Promise<void> | null = null;

  prepare(bytes: number): void {
    this.log.push(`prepare ${bytes}`);
  }
  async sendInBackground(batch: Buffer): Promise<string | null> {
    this.log.push('send');
    this.sent.push(Buffer.from(batch));
    if (this.hold) await this.hold;
    if (this.sendResult === null) this.queued.push(...this.answer(ackedSeqs(batch)));
    return this.sendResult;
  }
  collect(): NetlinkAnswer[] {
    this.log.push('collect');
    return this.queued.splice(0);
  }
  close(): void {
    this.closed++;
  }
}

t.test('keys: IPv4 parts in 4-byte slots; a prefix in an interval set gives the range\'s first and last key', async (t) => {
  const plain = elementKey('10.244.1.5', false);
  t.same([...encodeKey(plain.key)], [10, 244, 1, 5]);
  t.equal(plain.keyEnd, null);
  const k = elementKey('10.244.1.5 . 10.244.1.0/24', true);
  t.same([...encodeKey(k.key)], [10, 244, 1, 5, 10, 244, 1, 0]);
  t.same([...encodeKey(k.keyEnd!)], [10, 244, 1, 5, 10, 244, 1, 255]);
  t.same([...encodeKey(elementKey('10.244.1.5', true).keyEnd!)], [10, 244, 1, 5], 'a single address in an interval set is its own range');
  t.throws(() => elementKey('10.244.1.0/24', false), NftSetsError, 'a prefix needs an interval set');
  t.throws(() => elementKey('10.244.1.1/24', true), /host bits/);
  t.throws(() => elementKey('10.244.1', false));
});

t.test('the bytes sent are the old encoder\'s, byte for byte (netlink/encode.ts, one batch, one send)', async (t) => {
  for (const g of ELEMENT_BATCH_GOLDEN) {
    const sock = new FakeSocket();
    const sets = new NetlinkNftSets(undefined, { socket: sock, firstSeq: g.seq });
    await sets.applyElements(g.ops);
    t.equal(sock.sent.length, 1, `${g.name}: one batch`);
    t.equal(sock.sent[0]!.toString('hex'), g.hex, g.name);
    t.same(sock.log, [`prepare ${g.hex.length / 2}`, 'send', 'collect'], `${g.name}: prepared for the batch, answers read after the send`);
  }
  const sock = new FakeSocket();
  await new NetlinkNftSets(undefined, { socket: sock, firstSeq: BIG_ELEMENT_BATCH.seq }).applyElements(BIG_ELEMENT_BATCH.ops);
  t.equal(sock.sent[0]!.length, BIG_ELEMENT_BATCH.length, 'a reconcile-sized batch: messages longer than a proxy message');
  t.equal(createHash('sha256').update(sock.sent[0]!).digest('hex'), BIG_ELEMENT_BATCH.sha256);
});

t.test('seqs go on from batch to batch on one socket', async (t) => {
  const sock = new FakeSocket();
  const sets = new NetlinkNftSets(undefined, { socket: sock, firstSeq: 10 });
  const op: NftElementOp = { op: 'add', family: 'ip', table: 't', set: 's', interval: false, elements: ['1.2.3.4'] };
  await sets.applyElements([op, op]);
  await sets.applyElements([op]);
  t.same(sock.sent.map(ackedSeqs), [[11, 12], [15]]);
});

t.test('the kernel\'s answers: the first failed op is named with its errno; a failed commit; missing answers', async (t) => {
  const ops: NftElementOp[] = [
    { op: 'add', family: 'ip', table: 'nodenet-cni', set: 'masq-pods', interval: false, elements: ['10.244.1.5'] },
    { op: 'delete', family: 'ip', table: 'nodenet-cni', set: 'masq-exempt', interval: true, elements: ['10.244.1.5 . 10.244.1.0/24'] },
  ];
  const sock = new FakeSocket();
  const sets = new NetlinkNftSets(undefined, { socket: sock, firstSeq: 100 });
  sock.answer = (seqs) => seqs.map((seq) => ({ seq, error: seq === 102 ? -2 : 0, message: null }));
  const err = await sets.applyElements(ops).then(() => null, (e: unknown) => e);
  t.ok(err instanceof NftSetsError);
  t.equal((err as NftSetsError).errno, 'ENOENT');
  t.equal((err as NftSetsError).code, ErrorCode.Masquerade);
  t.match((err as NftSetsError).message, 'nft delete element ip nodenet-cni masq-exempt { 10.244.1.5 . 10.244.1.0/24 }: ENOENT');

  sock.answer = (seqs) => [...seqs.map((seq) => ({ seq, error: 0, message: null })), { seq: seqs[0]! - 1, error: -95, message: 'no such feature' }];
  const commit = await sets.applyElements(ops).then(() => null, (e: unknown) => e);
  t.equal((commit as NftSetsError).errno, 'EOPNOTSUPP', 'an error on BATCH_BEGIN: the commit failed');
  t.match((commit as NftSetsError).message, /did not commit: EOPNOTSUPP \(no such feature\)/);

  sock.answer = (seqs) => seqs.slice(1).map((seq) => ({ seq, error: 0, message: null }));
  const lost = await sets.applyElements(ops).then(() => null, (e: unknown) => e);
  t.equal((lost as NftSetsError).errno, 'EIO');
  t.match((lost as NftSetsError).message, /1 of 2 element messages unanswered; state unknown/);

  sock.answer = (seqs) => seqs.map((seq) => ({ seq, error: seq === seqs[0] ? -17 : 0, message: null }));
  t.equal(await errnoOf(sets.applyElements(ops)), 'EEXIST');
});

t.test('socket failures are NftSetsError EIO; an element the codec refuses and a closed socket send nothing', async (t) => {
  const sock = new FakeSocket();
  const sets = new NetlinkNftSets(undefined, { socket: sock, firstSeq: 1 });
  const op: NftElementOp = { op: 'add', family: 'ip', table: 't', set: 's', interval: false, elements: ['1.2.3.4'] };
  sock.sendResult = 'nf_tables netlink: sendto: EPERM';
  t.equal(await errnoOf(sets.applyElements([op])), 'EIO', 'a failed send');
  sock.sendResult = null;
  sock.prepare = () => {
    throw new NodenetError(ErrorCode.Netlink, 'nf_tables netlink: socket: EMFILE');
  };
  const e = await sets.applyElements([op]).then(() => null, (x: unknown) => x);
  t.equal((e as NftSetsError).errno, 'EIO', 'a socket that cannot be made');
  t.match((e as NftSetsError).message, /EMFILE/);
  t.equal(sock.sent.length, 1);

  const fresh = new FakeSocket();
  const s2 = new NetlinkNftSets(undefined, { socket: fresh, firstSeq: 1 });
  t.equal(await errnoOf(s2.applyElements([{ ...op, elements: ['10.0.0.0/8'] }])), 'EINVAL', 'a prefix in a plain set');
  const huge = Array.from({ length: 2000 }, (_, i) => `10.${i >> 8}.${i & 255}.1 . 10.${i >> 8}.${i & 255}.0/24`);
  t.equal(await errnoOf(s2.applyElements([{ ...op, interval: true, elements: huge }])), 'EMSGSIZE', 'more elements than one ELEMENTS attribute holds');
  t.equal(fresh.sent.length, 0);
  await s2.applyElements([op]);
  t.equal(fresh.sent.length, 1, 'the socket goes on after a refused batch');
  s2.close();
  t.equal(await errnoOf(s2.applyElements([op])), 'EBADF');
  await new Promise((r) => setImmediate(r));
  t.equal(fresh.closed, 1, 'the socket is closed');
  t.equal(fresh.sent.length, 1);
});

t.test('batches run one at a time; close() waits for the one in flight', async (t) => {
  const sock = new FakeSocket();
  let release!: () => void;
  sock.hold = new Promise((r) => (release = r));
  const sets = new NetlinkNftSets(undefined, { socket: sock, firstSeq: 1 });
  const op: NftElementOp = { op: 'add', family: 'ip', table: 't', set: 's', interval: false, elements: ['1.2.3.4'] };
  const a = sets.applyElements([op]);
  const b = sets.applyElements([op]);
  await new Promise((r) => setImmediate(r));
  t.equal(sock.sent.length, 1, 'the second batch waits for the first');
  sets.close();
  await new Promise((r) => setImmediate(r));
  t.equal(sock.closed, 0, 'not closed under the send in flight');
  release();
  await a;
  t.equal(await errnoOf(b), 'EBADF', 'the queued batch finds the socket closed');
  await new Promise((r) => setImmediate(r));
  t.equal(sock.closed, 1);
  t.equal(sock.sent.length, 1);
});

t.test('NftFake as NftSets: the elements land in the sets the scripts made, with the kernel\'s answers', async (t) => {
  const nft = new NftFake();
  await nft.apply('add table ip t\nadd set ip t pods { type ipv4_addr; }\nadd set ip t ex { type ipv4_addr . ipv4_addr; flags interval; }\n');
  await nft.applyElements([
    { op: 'add', family: 'ip', table: 't', set: 'pods', interval: false, elements: ['10.0.0.1'] },
    { op: 'add', family: 'ip', table: 't', set: 'ex', interval: true, elements: ['10.0.0.1 . 10.0.0.0/24'] },
  ]);
  t.same([...nft.table('ip', 't')!.sets.get('ex')!.elements.keys()], ['10.0.0.1 . 10.0.0.0/24']);
  await nft.applyElements([{ op: 'add', family: 'ip', table: 't', set: 'pods', interval: false, elements: ['10.0.0.1'] }]);
  t.pass('adding an element that exists is success (NLM_F_CREATE without EXCL)');
  t.equal(await errnoOf(nft.applyElements([{ op: 'delete', family: 'ip', table: 't', set: 'pods', interval: false, elements: ['10.0.0.9'] }])), 'ENOENT');
  t.equal(await errnoOf(nft.applyElements([{ op: 'add', family: 'ip', table: 't', set: 'nope', interval: false, elements: ['10.0.0.9'] }])), 'ENOENT');
  t.equal(await errnoOf(nft.applyElements([{ op: 'add', family: 'ip', table: 't', set: 'pods', interval: true, elements: ['10.0.0.9'] }])), 'EINVAL');
  const batch = nft.applyElements([
    { op: 'add', family: 'ip', table: 't', set: 'pods', interval: false, elements: ['10.0.0.2'] },
    { op: 'delete', family: 'ip', table: 't', set: 'pods', interval: false, elements: ['10.0.0.8'] },
  ]);
  t.equal(await errnoOf(batch), 'ENOENT');
  t.notOk(nft.table('ip', 't')!.sets.get('pods')!.elements.has('10.0.0.2'), 'one transaction: the failed batch added nothing');
});
