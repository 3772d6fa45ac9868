import t from 'tap';
import { NodenetError } from '../../../../../lib/errors/errors.js';
import { BigBatch, checkAnswers } from './apply.js';
import { COMMENT_MAX, parsePartialScript, type NlCommand } from './commands.js';
import { BatchEncoder, encodeBatch, encodeCommand, NLM_F } from './encode.js';
import { parseAnswers } from './socket.js';
import { NFT_GOLDEN } from './testdata.js';
import { NFT_GOLDEN_FULL } from './testdata-full.js';
import { renderNftables } from '../../../proxy/nftables/render.js';
import { ep, nodeConfig, snapshot, svc } from '../../../proxy/test-fixtures.js';
import { parseCidr } from '../../../../../lib/net/ip.js';

function commands(script: string): readonly NlCommand[] {
  const r = parsePartialScript(script);
  if (!r.ok) throw new Error(`line ${r.line} unsupported: ${r.reason}`);
  return r.commands;
}

/** Splits a batch into messages: [type, flags, seq, body hex]. */
function split(b: Buffer): { type: number; flags: number; seq: number; body: string }[] {
  const out = [];
  for (let off = 0; off < b.length; ) {
    const len = b.readUInt32LE(off);
    out.push({ type: b.readUInt16LE(off + 4), flags: b.readUInt16LE(off + 6), seq: b.readUInt32LE(off + 8), body: b.subarray(off + 16, off + len).toString('hex') });
    off += (len + 3) & ~3;
  }
  return out;
}

/** Drops top-level attribute `type` from a message body (nfgenmsg + attributes). */
function dropAttr(bodyHex: string, type: number): string {
  const b = Buffer.from(bodyHex, 'hex');
  const parts = [b.subarray(0, 4)];
  for (let off = 4; off < b.length; ) {
    const len = b.readUInt16LE(off);
    const padded = (len + 3) & ~3;
    if ((b.readUInt16LE(off + 2) & 0x3fff) !== type) parts.push(b.subarray(off, off + padded));
    off += padded;
  }
  return Buffer.concat(parts).toString('hex');
}

t.test('every message matches the bytes nft 1.0.6 sends for the same line', async (t) => {
  // The golden lines come from two scripts; set ids count from 1 per batch in both, so encode them as nft did.
  const split2 = NFT_GOLDEN.findIndex((g) => g.line.includes('10.240.0.0/12'));
  for (const group of [NFT_GOLDEN.slice(0, split2), NFT_GOLDEN.slice(split2)]) {
    const cmds = commands(group.map((g) => g.line).join('\n'));
    const msgs = split(encodeBatch(cmds, 100).bytes);
    t.equal(msgs.length, group.length + 2, 'BATCH_BEGIN, one message per line, BATCH_END');
    t.same(msgs[0], { type: 0x10, flags: NLM_F.REQUEST, seq: 100, body: '0000000a' }, 'BATCH_BEGIN: AF_UNSPEC, res_id NFNL_SUBSYS_NFTABLES (big endian)');
    t.same(msgs.at(-1), { type: 0x11, flags: NLM_F.REQUEST, seq: 101 + group.length, body: '0000000a' }, 'BATCH_END');
    group.forEach((g, i) => {
      const m = msgs[i + 1]!;
      t.equal(m.type, g.type, `type: ${g.line}`);
      t.equal(m.flags, g.flags | NLM_F.ACK, `flags (nft's, plus NLM_F_ACK): ${g.line}`);
      t.equal(m.seq, 101 + i, 'seq');
      // nft also names an existing set by its cache id (NFTA_SET_ELEM_LIST_SET_ID); the kernel finds it by name first.
      const want = g.type === 0xa0c ? dropAttr(g.body, 4) : g.body;
      t.equal(m.body, want, `body: ${g.line}`);
    });
  }
});

t.test('a NEWSETELEM with a goto verdict, checked by hand against nf_tables.h', async (t) => {
  const [c] = commands('add element ip kube-proxy service-nodeports { udp . 30000 comment "ns/svc:p" : goto reject-chain }');
  const hex = encodeCommand(c!, 7).toString('hex');
  const want = [
    // struct nlmsghdr: len 136 (16 + 4 + 16 + 24 + 76), type NFNL_SUBSYS_NFTABLES<<8 | NFT_MSG_NEWSETELEM (0x0a0c), flags REQUEST|ACK|CREATE (0x405), seq 7, portid 0
    '88000000', '0c0a', '0504', '07000000', '00000000',
    // struct nfgenmsg: NFPROTO_IPV4, NFNETLINK_V0, res_id 0
    '02', '00', '0000',
    // NFTA_SET_ELEM_LIST_TABLE (1) "kube-proxy\0": len 15, padded to 16
    '0f00', '0100', '6b7562652d70726f787900', '00',
    // NFTA_SET_ELEM_LIST_SET (2) "service-nodeports\0": len 22, padded to 24
    '1600', '0200', '736572766963652d6e6f6465706f72747300', '0000',
    // NFTA_SET_ELEM_LIST_ELEMENTS (3 | NLA_F_NESTED): len 76
    '4c00', '0380',
    //   NFTA_LIST_ELEM (1 | nested): len 72
    '4800', '0180',
    //     NFTA_SET_ELEM_KEY (1 | nested) > NFTA_DATA_VALUE (1): udp (17) in a 4-byte slot, port 30000 big endian in the next
    '1000', '0180', '0c00', '0100', '11000000', '75300000',
    //     NFTA_SET_ELEM_DATA (2 | nested) > NFTA_DATA_VERDICT (2 | nested) > CODE (1) NFT_GOTO (-4), CHAIN (2) "reject-chain\0"
    '2400', '0280', '2000', '0280', '0800', '0100', 'fffffffc', '1100', '0200', '72656a6563742d636861696e00', '000000',
    //     NFTA_SET_ELEM_USERDATA (6): libnftnl TLV type 0 (comment), len 9, "ns/svc:p\0"
    '0f00', '0600', '00', '09', '6e732f7376633a7000', '00',
  ].join('');
  t.equal(hex, want);
  t.equal(hex.length / 2, 136, 'nlmsg_len is the whole message');
});

t.test('a DELSETELEM and a flush (DELRULE without a handle) by hand', async (t) => {
  const [del, flush] = commands('delete element ip kube-proxy cluster-ips { 10.96.0.1 }\nflush chain ip kube-proxy x/y');
  t.equal(
    encodeCommand(del!, 1).toString('hex'),
    '48000000' + '0e0a' + '0500' + '01000000' + '00000000' + '02000000' +
      '0f0001006b7562652d70726f787900' + '00' + '10000200636c75737465722d69707300' +
      // ELEMENTS > LIST_ELEM > KEY > VALUE 10.96.0.1
      '1400' + '0380' + '1000' + '0180' + '0c00' + '0180' + '0800' + '0100' + '0a600001',
  );
  t.equal(encodeCommand(flush!, 2).toString('hex'), '2c000000' + '080a' + '0500' + '02000000' + '00000000' + '02000000' + '0f0001006b7562652d70726f787900' + '00' + '08000200' + '782f7900');
});

t.test('lines outside the known shapes make the script unsupported, naming the line', async (t) => {
  const base = 'add chain ip kube-proxy service-X/a\n';
  const cases: [string, RegExp][] = [
    ['add rule ip kube-proxy service-X/a counter goto endpoint-Y/b', /verdict counter/],
    ['add rule ip kube-proxy service-X/a ip saddr 0.0.0.0/0 return', /prefix/],
    ['add rule ip kube-proxy service-X/a ip saddr 10.0.0.1/8 return', /host bits/],
    ['add rule ip kube-proxy service-X/a th dport 80 drop', /verdict th/],
    ['add rule ip kube-proxy service-X/a dnat to 10.0.0.1:80', /statement dnat/],
    ['add rule ip kube-proxy service-X/a meta l4proto tcp drop', /l4proto without dnat/],
    [`add rule ip kube-proxy service-X/a drop comment "${'x'.repeat(COMMENT_MAX + 1)}"`, /comment too long/],
    ['add map ip kube-proxy m { type ipv4_addr : verdict ; }', /command/],
    ['add element ip kube-proxy service-ips { 10.0.0.1 . tcp . 80 : accept }', /verdict accept/],
    ['add element ip kube-proxy service-ips { 10.0.0.1 . icmp . 80 : drop }', /protocol icmp/],
    ['add table ip kube-proxy { flags dormant ; }', /command/],
    ['add chain ip kube-proxy x { type filter hook ingress priority 0 ; }', /command/],
    ['add chain ip kube-proxy x { type filter hook input priority 0 ; policy drop ; }', /command/],
    ['add map ip kube-proxy m { type ipv4_addr . inet_service : verdict ; comment "c" ; }', /command/],
    ['add rule ip kube-proxy x ip daddr . th dport vmap @m', /vmap key/],
    ['add rule ip kube-proxy x ip daddr 10.0.0.1 mark set mark or 0x4000', /mark-set after matches/],
    ['add rule ip kube-proxy x meta l4proto icmp accept', /verdict accept/],
    ['add rule ip kube-proxy x ct state established jump y', /verdict ct/],
    ['add rule ip kube-proxy x masquerade', /verdict masquerade/],
    ['add chain ip6 kube-proxy x', /command/],
  ];
  for (const [line, reason] of cases) {
    const r = parsePartialScript(base + line + '\n');
    t.equal(r.ok, false, line);
    if (!r.ok) {
      t.equal(r.line, 2, 'the line is named');
      t.match(r.reason, reason);
    }
  }
  const ok = parsePartialScript('# comment\n\nadd chain ip kube-proxy a/b\n');
  t.ok(ok.ok && ok.commands.length === 1 && ok.commands[0]!.line === 3, 'comments and blank lines are skipped; lines keep their numbers');
});

t.test('answers: acks and errors parsed; an error names its script line', async (t) => {
  // An NLMSG_ERROR for seq 12 with -ENOENT (capped: echoed header only) and an ack for seq 11.
  const msg = (seq: number, err: number) => {
    const b = Buffer.alloc(36);
    b.writeUInt32LE(36, 0);
    b.writeUInt16LE(2, 4);
    b.writeUInt16LE(0x100, 6);
    b.writeUInt32LE(seq, 8);
    b.writeInt32LE(err, 16);
    b.writeUInt32LE(seq, 28);
    return b;
  };
  const answers: ReturnType<typeof Array<{ seq: number; error: number; message: string | null }>> = [];
  parseAnswers(Buffer.concat([msg(11, 0), msg(12, -2)]), answers);
  t.same(answers, [{ seq: 11, error: 0, message: null }, { seq: 12, error: -2, message: null }]);

  const script = 'add chain ip kube-proxy a/b\ndelete element ip kube-proxy cluster-ips { 10.96.0.1 }\n';
  const cmds = commands(script);
  const err = (() => {
    try {
      checkAnswers(script, cmds, 10, answers);
    } catch (e) {
      return e;
    }
    return null;
  })();
  t.ok(err instanceof NodenetError);
  t.equal((err as NodenetError).code, 'NN_ERR_RULE_APPLY', 'the code the nft -f path uses');
  t.match((err as NodenetError).message, /at line 2 of 3: .*No such file or directory/);
  t.match((err as NodenetError).details, />\s+2 \| delete element/);
  t.doesNotThrow(() => checkAnswers(script, cmds, 10, [{ seq: 11, error: 0, message: null }, { seq: 12, error: 0, message: null }]));
  t.throws(() => checkAnswers(script, cmds, 10, [{ seq: 11, error: 0, message: null }]), /unanswered/);
  t.throws(() => checkAnswers(script, cmds, 10, [{ seq: 10, error: -22, message: 'loop' }, { seq: 11, error: 0, message: null }, { seq: 12, error: 0, message: null }]), /commit/);
});

t.test('a full sync: every message matches the bytes nft 1.0.6 sends for the same script', async (t) => {
  const cmds = commands(NFT_GOLDEN_FULL.map((g) => g.line).join('\n'));
  const msgs = split(encodeBatch(cmds, 100).bytes).slice(1, -1);
  t.equal(msgs.length, NFT_GOLDEN_FULL.length, 'one message per line');
  const isElem = (type: number) => type === 0xa0c;
  NFT_GOLDEN_FULL.forEach((g, i) => {
    const m = msgs[i]!;
    if (isElem(g.type)) return; // below: nft orders a set's elements its own way
    t.equal(m.type, g.type, `type: ${g.line}`);
    t.equal(m.flags, g.flags | NLM_F.ACK, `flags: ${g.line}`);
    t.equal(m.body, g.body, `body: ${g.line}`);
  });
  const want = NFT_GOLDEN_FULL.filter((g) => isElem(g.type)).map((g) => `${g.flags | NLM_F.ACK} ${dropAttr(g.body, 4)}`).sort();
  const got = msgs.filter((m) => isElem(m.type)).map((m) => `${m.flags} ${m.body}`).sort();
  t.ok(want.length > 15, `${want.length} elements`);
  t.same(got, want, 'the same element messages');
});

t.test('every line of full renders is one the encoder knows', async (t) => {
  const s = snapshot(
    [svc('ns1', 'np', '10.96.0.11', { nodePort: 30011, affinity: 60 }), [ep('10.244.2.1:80'), ep('10.244.1.2:80', { local: true })]],
    [svc('ns2', 'lb', '10.96.0.13', { lbVIPs: ['192.168.99.13'], sourceRanges: ['203.0.113.0/24'], nodePort: 30013, etp: 'Local' }), [ep('10.244.2.5:80')]],
    [svc('ns2', 'empty', '10.96.0.14', { nodePort: 30014, externalIPs: ['192.168.5.5'] }), []],
    [svc('ns2', 'dns', '10.96.0.10', { port: 53, protocol: 'UDP', portName: 'dns' }), [ep('10.244.2.6:53')]],
  );
  const cfgs = [
    nodeConfig(),
    nodeConfig({ serviceCIDRs: [parseCidr('10.96.0.0/16').cidr], nodePortAddresses: [parseCidr('192.168.0.0/24').cidr, parseCidr('10.0.0.0/8').cidr] }),
  ];
  for (const [i, cfg] of cfgs.entries()) {
    for (const ping of ['reject', 'drop'] as const) {
      const text = renderNftables(s, cfg, { full: true }, undefined, { clusterIPPing: ping }).text;
      const r = parsePartialScript(text);
      t.ok(r.ok, `config ${i}, ping ${ping}: ${r.ok ? `${r.commands.length} commands` : `line ${r.line}: ${r.reason}: ${r.text}`}`);
    }
  }
});

t.test('a big batch asks for one ack, on its last command; errors still name their line', async (t) => {
  const script = 'add chain ip kube-proxy a/b\nflush chain ip kube-proxy a/b\nadd rule ip kube-proxy a/b drop\n';
  const cmds = commands(script);
  const msgs = split(encodeBatch(cmds, 10, { acks: 'last' }).bytes);
  t.same(
    msgs.map((m) => (m.flags & NLM_F.ACK) !== 0),
    [false, false, false, true, false],
    'BATCH_BEGIN, two commands without, the last with NLM_F_ACK, BATCH_END',
  );
  const ok = (seq: number) => ({ seq, error: 0, message: null });
  t.doesNotThrow(() => checkAnswers(script, cmds, 10, [ok(13)], 'last'), 'the last ack alone: committed');
  t.throws(() => checkAnswers(script, cmds, 10, [], 'last'), /unanswered/, 'no last ack: state unknown');
  t.throws(() => checkAnswers(script, cmds, 10, [{ seq: 12, error: -2, message: null }], 'last'), /at line 2 of 4: .*No such file/, 'an error names its line');
  t.throws(() => checkAnswers(script, cmds, 10, [{ seq: 10, error: -22, message: null }], 'last'), /commit/, 'a failed commit');
});

t.test('the streaming parser and encoder write the same batch as the whole-script ones', async (t) => {
  const script = NFT_GOLDEN_FULL.map((g) => g.line).join('\n') + '\n# done\n';
  const all = new BatchEncoder(100, { acks: 'all' });
  for (const c of commands(script)) all.add(c);
  t.equal(all.finish().bytes.toString('hex'), encodeBatch(commands(script), 100, { acks: 'all' }).bytes.toString('hex'), 'acks all: the same bytes');
  // A full sync's BigBatch (acks 'last'), fed the script a line at a time.
  const big = new BigBatch(100, 1 << 16);
  for (const l of script.split('\n')) big.text(l);
  const f = big.finish();
  t.equal(f.count, NFT_GOLDEN_FULL.length);
  t.same([...f.lines], commands(script).map((c) => c.line), 'the same script lines');
  t.equal(f.bytes.toString('hex'), encodeBatch(commands(script), 100, { acks: 'last' }).bytes.toString('hex'), 'acks last: the same bytes');
  const bad = new BigBatch(1, 1 << 16);
  for (const l of ['add chain ip kube-proxy a', 'add rule ip kube-proxy a counter', 'add chain ip kube-proxy b']) bad.text(l);
  t.match(bad.unsupported, { line: 2 });
});
