/**
 * The nfnetlink element codec, byte for byte, and the NftFake as an NftSets
 * (the kernel's answers). The real socket is tested against the kernel in
 * nft-sets.priv.test.ts.
 */
import t from 'tap';
import { decodeAcks, elementKey, encodeBatch, NftSetsError } from './nft-sets.js';
import { NftFake } from './nft.fake.js';

/** The errno a rejected promise carries ('' when it resolved). */
const errnoOf = (p: Promise<unknown>): Promise<string> => p.then(() => '', (e: unknown) => (e instanceof NftSetsError ? e.errno : `not an NftSetsError: ${String(e)}`));

t.test('keys: IPv4 parts back to back; a prefix in an interval set gives the range\'s first and last key', async (t) => {
  t.same(elementKey('10.244.1.5', false), { key: Buffer.from([10, 244, 1, 5]), keyEnd: null });
  const k = elementKey('10.244.1.5 . 10.244.1.0/24', true);
  t.same([...k.key], [10, 244, 1, 5, 10, 244, 1, 0]);
  t.same([...k.keyEnd!], [10, 244, 1, 5, 10, 244, 1, 255]);
  t.same([...elementKey('10.244.1.5', true).keyEnd!], [10, 244, 1, 5], 'a single address in an interval set is its own range');
  t.throws(() => elementKey('10.244.1.0/24', false), NftSetsError, 'a prefix needs an interval set');
  t.throws(() => elementKey('10.244.1.1/24', true), /host bits/);
  t.throws(() => elementKey('10.244.1', false));
});

t.test('one batch: BEGIN, one message per op (ACK asked, CREATE on add), END; all in one buffer', async (t) => {
  const { bytes, seqs } = encodeBatch([{ op: 'add', family: 'ip', table: 'nodenet-cni', set: 'masq-pods', interval: false, elements: ['10.244.1.5'] }], 100);
  t.same(seqs, [101]);
  const msgs: { type: number; flags: number; seq: number; len: number; family: number; resId: number }[] = [];
  for (let off = 0; off < bytes.length; ) {
    const len = bytes.readUInt32LE(off);
    msgs.push({ len, type: bytes.readUInt16LE(off + 4), flags: bytes.readUInt16LE(off + 6), seq: bytes.readUInt32LE(off + 8), family: bytes.readUInt8(off + 16), resId: bytes.readUInt16BE(off + 18) });
    off += (len + 3) & ~3;
  }
  t.same(msgs.map((m) => [m.type, m.flags, m.seq]), [[0x10, 0x1, 100], [0x0a0c, 0x1 | 0x4 | 0x400, 101], [0x11, 0x1, 102]]);
  t.equal(msgs[0]!.resId, 10, 'batch begin names the nftables subsystem');
  t.equal(msgs[1]!.family, 2, 'AF_INET');
  const body = bytes.subarray(msgs[0]!.len + 20, msgs[0]!.len + msgs[1]!.len);
  // NFTA_SET_ELEM_LIST_TABLE "nodenet-cni\0", _SET "masq-pods\0", _ELEMENTS { LIST_ELEM { KEY { DATA_VALUE 10.244.1.5 } } }
  t.equal(body.toString('hex'),
    '1000' + '0100' + Buffer.from('nodenet-cni\0').toString('hex') +
    '0e00' + '0200' + Buffer.from('masq-pods\0').toString('hex') + '0000' +
    '1400' + '0380' + '1000' + '0180' + '0c00' + '0180' + '0800' + '0100' + '0af40105');
  const del = encodeBatch([{ op: 'delete', family: 'ip', table: 't', set: 's', interval: false, elements: ['1.2.3.4'] }], 7);
  t.equal(del.bytes.readUInt16LE(20 + 4), 0x0a0e, 'DELSETELEM');
  t.equal(del.bytes.readUInt16LE(20 + 6), 0x5, 'no CREATE on delete');
});

t.test('acks: NLMSG_ERROR answers by seq, 0 for success, the errno otherwise', async (t) => {
  const msg = (seq: number, err: number) => {
    const b = Buffer.alloc(36);
    b.writeUInt32LE(36, 0);
    b.writeUInt16LE(2, 4);
    b.writeUInt32LE(seq, 8);
    b.writeInt32LE(err, 16);
    return b;
  };
  t.same([...decodeAcks(Buffer.concat([msg(5, 0), msg(6, -2)]))], [[5, 0], [6, 2]]);
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
