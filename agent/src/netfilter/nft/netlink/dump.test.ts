import t from 'tap';
import { chainNames, dumpChainsRequest, dumpSetsRequest, firstError, getObjectRequest, getTableRequest, NFPROTO, NLMSG_DONE, NLMSG_ERROR, objectFound, setNames, splitMessages, tableFound, type NlMessage } from './dump.js';

/** An nf_tables answer message as the kernel writes it: nlmsghdr, nfgenmsg, attributes. */
function answer(msg: number, seq: number, attrs: [number, Buffer][]): Buffer {
  const body = Buffer.concat(
    attrs.map(([type, v]) => {
      const a = Buffer.alloc((4 + v.length + 3) & ~3);
      a.writeUInt16LE(4 + v.length, 0);
      a.writeUInt16LE(type, 2);
      v.copy(a, 4);
      return a;
    }),
  );
  const h = Buffer.alloc(20);
  h.writeUInt32LE(20 + body.length, 0);
  h.writeUInt16LE((10 << 8) | msg, 4);
  h.writeUInt32LE(seq, 8);
  h[16] = 2;
  return Buffer.concat([h, body]);
}
const z = (s: string) => Buffer.from(`${s}\0`);
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const u64 = (n: number) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
};
function control(type: number, seq: number, errno: number): Buffer {
  const b = Buffer.alloc(16 + 4 + 16);
  b.writeUInt32LE(b.length, 0);
  b.writeUInt16LE(type, 4);
  b.writeUInt32LE(seq, 8);
  b.writeInt32LE(errno, 16);
  return b;
}
function parse(...bufs: Buffer[]): NlMessage[] {
  const out: NlMessage[] = [];
  splitMessages(Buffer.concat(bufs), out);
  return out;
}

t.test('requests: headers, flags and attributes as nf_tables expects them', async (t) => {
  const g = getTableRequest(7, NFPROTO.ip, 'kube-proxy');
  t.equal(g.readUInt32LE(0), g.length, 'nlmsg_len is the whole message');
  t.equal(g.readUInt16LE(4), (10 << 8) | 1, 'NFT_MSG_GETTABLE');
  t.equal(g.readUInt16LE(6), 0x1 | 0x4, 'NLM_F_REQUEST | NLM_F_ACK');
  t.equal(g.readUInt32LE(8), 7, 'seq');
  t.equal(g[16], 2, 'NFPROTO_IPV4');
  t.equal(g.subarray(20).toString('hex'), '0f000100' + Buffer.from('kube-proxy\0').toString('hex') + '00', 'NFTA_TABLE_NAME, NUL-terminated, padded');
  const c = dumpChainsRequest(8, NFPROTO.inet);
  t.equal(c.readUInt16LE(4), (10 << 8) | 4, 'NFT_MSG_GETCHAIN');
  t.equal(c.readUInt16LE(6), 0x301, 'NLM_F_REQUEST | NLM_F_DUMP');
  t.equal(c[16], 1, 'NFPROTO_INET');
  t.equal(c.length, 20, 'no attributes: the dump is filtered here');
  const s = dumpSetsRequest(9, NFPROTO.ip6, 't');
  t.equal(s.readUInt16LE(4), (10 << 8) | 10, 'NFT_MSG_GETSET');
  t.equal(s.readUInt16LE(6), 0x301);
  t.equal(s[16], 10, 'NFPROTO_IPV6');
  t.equal(s.subarray(20).toString('hex'), '0600010074000000', 'NFTA_SET_TABLE "t", padded');
});

t.test('a table: found, missing (ENOENT), other errors thrown', async (t) => {
  t.equal(tableFound(parse(answer(0, 1, [[1, z('kube-proxy')]]), control(NLMSG_ERROR, 1, 0))), true);
  t.equal(tableFound(parse(control(NLMSG_ERROR, 1, -2))), false);
  t.throws(() => tableFound(parse(control(NLMSG_ERROR, 1, -1))), /errno 1/);
});

t.test('chain and set names of one table from dumps; maps, anonymous sets and other tables left out', async (t) => {
  const chains = parse(
    answer(3, 5, [[1, z('kube-proxy')], [3, z('services')]]),
    answer(3, 5, [[1, z('other')], [3, z('x')]]),
    answer(3, 5, [[1, z('kube-proxy')], [3, z('endpoint-ABC-ns/s/tcp/p__10.0.0.1/80')]]),
    control(NLMSG_DONE, 5, 0),
  );
  t.same(chainNames(chains, 'kube-proxy'), ['services', 'endpoint-ABC-ns/s/tcp/p__10.0.0.1/80']);
  const sets = parse(
    answer(9, 6, [[1, z('kube-proxy')], [2, z('cluster-ips')], [3, u32(0)]]),
    answer(9, 6, [[1, z('kube-proxy')], [2, z('service-ips')], [3, u32(0x8)]]),
    answer(9, 6, [[1, z('kube-proxy')], [2, z('__set0')], [3, u32(0x3)]]),
    answer(9, 6, [[1, z('kube-proxy')], [2, z('affinity-X')], [3, u32(0x30)], [11, u64(10_800_000)]]),
    answer(9, 6, [[1, z('kube-proxy')], [2, z('ranges')], [3, u32(0x6)]]),
    answer(9, 6, [[1, z('other')], [2, z('s')], [3, u32(0)]]),
    control(NLMSG_DONE, 6, 0),
  );
  t.same(setNames(sets, 'kube-proxy'), [
    { name: 'cluster-ips', flags: [], timeout: null },
    { name: 'affinity-X', flags: ['timeout'], timeout: 10800 },
    { name: 'ranges', flags: ['constant', 'interval'], timeout: null },
  ]);
  t.equal(firstError(sets), 0);
  t.equal(firstError(parse(control(NLMSG_ERROR, 6, -2))), -2);
});

t.test('one object by name: the request names table and object; a set is not a map', async (t) => {
  const c = getObjectRequest(3, NFPROTO.ip, 't', 'chain', 'c');
  t.equal(c.readUInt16LE(4), (10 << 8) | 4, 'GETCHAIN');
  t.equal(c.readUInt16LE(6), 0x5, 'NLM_F_REQUEST | NLM_F_ACK, no dump');
  t.equal(c.subarray(20).toString('hex'), '0600010074000000' + '0600030063000000', 'NFTA_CHAIN_TABLE, NFTA_CHAIN_NAME');
  const s = getObjectRequest(4, NFPROTO.ip, 't', 'map', 'm');
  t.equal(s.readUInt16LE(4), (10 << 8) | 10, 'GETSET');
  t.equal(s.subarray(20).toString('hex'), '0600010074000000' + '060002006d000000', 'NFTA_SET_TABLE, NFTA_SET_NAME');
  const map = parse(answer(9, 4, [[1, z('t')], [2, z('m')], [3, u32(0x8)]]), control(NLMSG_ERROR, 4, 0));
  const set = parse(answer(9, 4, [[1, z('t')], [2, z('m')], [3, u32(0)]]), control(NLMSG_ERROR, 4, 0));
  t.equal(objectFound(map, 'map'), true);
  t.equal(objectFound(map, 'set'), false);
  t.equal(objectFound(set, 'set'), true);
  t.equal(objectFound(set, 'map'), false);
  t.equal(objectFound(parse(answer(3, 3, [[1, z('t')], [3, z('c')]]), control(NLMSG_ERROR, 3, 0)), 'chain'), true);
  t.equal(objectFound(parse(control(NLMSG_ERROR, 3, -2)), 'chain'), false, 'ENOENT');
  t.throws(() => objectFound(parse(control(NLMSG_ERROR, 3, -13)), 'chain'), /errno 13/);
});

t.test('splitMessages drops a truncated tail', async (t) => {
  const a = answer(3, 1, [[1, z('t')], [3, z('c')]]);
  t.equal(parse(a, a.subarray(0, 10)).length, 1);
});
