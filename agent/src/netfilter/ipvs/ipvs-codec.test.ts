import t from 'tap';
import { attr, decodeDest, decodeService, encodeDestReply, encodeOp, encodeServiceReply, IPVS_CMD, parseAttrs } from './ipvs-genl-codec.js';
import { parseIpvsadmList, renderIpvsadmRestore } from './ipvsadm-parse.js';
import { FakeIpvs } from './ipvs.fake.js';
import { parseIpsetSave, renderIpsetRestore } from '../iptables/ipset-parse.js';
import type { IpvsOp } from './ipvs-types.js';

const VS = { protocol: 'TCP' as const, address: '10.96.0.10', port: 80, scheduler: 'rr', persistentTimeout: 10800 };
const RS = { address: '10.244.1.2', port: 8080, weight: 1, forward: 'masq' as const };

t.test('genl: NEW_SERVICE carries the full entry, hand-checked bytes', async (t) => {
  const { cmd, data } = encodeOp({ op: 'add-service', vs: VS });
  t.equal(cmd, IPVS_CMD.NEW_SERVICE);
  const top = parseAttrs(data);
  t.equal(data.readUInt16LE(2), 0x8001, 'IPVS_CMD_ATTR_SERVICE, nested');
  const a = parseAttrs(top.get(1)!);
  t.same([...a.keys()], [1, 2, 3, 4, 6, 7, 8, 9], 'af, protocol, addr, port, sched, flags, timeout, netmask');
  t.same([...a.get(3)!], [10, 96, 0, 10]);
  t.same([...a.get(4)!], [0, 80], 'port in network order');
  t.equal(a.get(6)!.toString('latin1'), 'rr\0');
  t.same([...a.get(7)!], [1, 0, 0, 0, 255, 255, 255, 255], 'persistent flag, full mask');
  t.equal(a.get(8)!.readUInt32LE(0), 10800);
  t.same([...a.get(9)!], [255, 255, 255, 255]);
  t.equal(attr(1, Buffer.from([1])).length, 8, 'padded to 4');
});

t.test('genl: dest ops and kernel-style replies round-trip', async (t) => {
  const add = encodeOp({ op: 'add-dest', vs: VS, rs: RS });
  const d = parseAttrs(parseAttrs(add.data).get(2)!);
  t.same([...d.keys()], [1, 2, 3, 4, 5, 6, 11], 'addr, port, fwd, weight, thresholds, family');
  const del = encodeOp({ op: 'del-dest', vs: VS, rs: RS });
  t.same([...parseAttrs(parseAttrs(del.data).get(2)!).keys()], [1, 2], 'a delete carries the key only');
  t.same(decodeService(encodeServiceReply(VS)), VS);
  t.same(decodeDest(encodeDestReply({ ...RS, weight: 0, activeConns: 3, inactiveConns: 7 })), { ...RS, weight: 0, activeConns: 3, inactiveConns: 7 });
  t.throws(() => parseAttrs(Buffer.from([8, 0, 1, 0, 0])), /overruns/);
});

const OPS: IpvsOp[] = [
  { op: 'add-service', vs: VS },
  { op: 'add-dest', vs: VS, rs: RS },
  { op: 'edit-dest', vs: VS, rs: { ...RS, weight: 0 } },
  { op: 'add-service', vs: { protocol: 'UDP', address: '10.96.0.10', port: 53, scheduler: 'lc', persistentTimeout: 0 } },
  { op: 'del-dest', vs: { protocol: 'SCTP', address: '10.96.0.11', port: 9 }, rs: { address: '10.244.1.3', port: 9 } },
  { op: 'del-service', vs: { protocol: 'TCP', address: '10.96.0.12', port: 443 } },
];

t.test('ipvsadm -R batch, golden', async (t) => {
  t.equal(renderIpvsadmRestore(OPS), [
    '-A -t 10.96.0.10:80 -s rr -p 10800',
    '-a -t 10.96.0.10:80 -r 10.244.1.2:8080 -m -w 1',
    '-e -t 10.96.0.10:80 -r 10.244.1.2:8080 -m -w 0',
    '-A -u 10.96.0.10:53 -s lc',
    '-d --sctp-service 10.96.0.11:9 -r 10.244.1.3:9',
    '-D -t 10.96.0.12:443',
    '',
  ].join('\n'));
});

t.test('ipvsadm -Ln parses with counters; FWM and IPv6 skipped', async (t) => {
  const text = `IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  10.96.0.10:80 rr persistent 10800
  -> 10.244.1.2:8080              Masq    1      2          5
  -> 10.244.1.3:8080              Masq    0      1          0
FWM  7 rr
  -> 10.244.1.9:80                Route   1      0          0
TCP  [fd00::1]:80 rr
UDP  10.96.0.10:53 rr
`;
  t.same(parseIpvsadmList(text), [
    { ...VS, dests: [{ address: '10.244.1.2', port: 8080, forward: 'masq', weight: 1, activeConns: 2, inactiveConns: 5 }, { address: '10.244.1.3', port: 8080, forward: 'masq', weight: 0, activeConns: 1, inactiveConns: 0 }] },
    { protocol: 'UDP', address: '10.96.0.10', port: 53, scheduler: 'rr', persistentTimeout: 0, dests: [] },
  ]);
});

t.test('ipset restore text and save parsing', async (t) => {
  t.equal(renderIpsetRestore([{ op: 'create', name: 'KUBE-CLUSTER-IP', type: 'hash:ip,port' }, { op: 'add', name: 'KUBE-CLUSTER-IP', entry: '10.96.0.10,tcp:80' }, { op: 'create', name: 'KUBE-NODE-PORT-TCP', type: 'bitmap:port' }, { op: 'del', name: 'KUBE-NODE-PORT-TCP', entry: '30080' }]),
    'create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536\nadd KUBE-CLUSTER-IP 10.96.0.10,tcp:80\ncreate KUBE-NODE-PORT-TCP bitmap:port range 0-65535\ndel KUBE-NODE-PORT-TCP 30080\n');
  const sets = parseIpsetSave('create KUBE-LOAD-BALANCER-SOURCE-CIDR hash:ip,port,net family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x1\nadd KUBE-LOAD-BALANCER-SOURCE-CIDR 1.2.3.4,tcp:80,5.6.7.8/32\ncreate other hash:net family inet\nadd other 1.0.0.0/8\n', (n) => n.startsWith('KUBE-'));
  t.same([...sets.get('KUBE-LOAD-BALANCER-SOURCE-CIDR')!.entries], ['1.2.3.4,tcp:80,5.6.7.8'], 'a /32 net in canonical form');
  t.equal(sets.size, 1, 'other sets left out');
});

t.test('the fake refuses what the kernel refuses', async (t) => {
  const f = new FakeIpvs();
  await f.apply([{ op: 'add-service', vs: VS }]);
  await t.rejects(f.apply([{ op: 'add-service', vs: VS }]), { message: /EEXIST/, applied: 0 });
  await t.rejects(f.apply([{ op: 'add-service', vs: { ...VS, port: 81, scheduler: 'fastest' } }]), { message: /ENOENT/ });
  await t.rejects(f.apply([{ op: 'add-dest', vs: VS, rs: RS }, { op: 'add-dest', vs: VS, rs: RS }]), { message: /EEXIST/, applied: 1 }, 'stops at the first refusal; the first went in');
  await t.rejects(f.apply([{ op: 'edit-dest', vs: VS, rs: { ...RS, port: 1 } }]), { message: /ENOENT/ });
  await t.rejects(f.apply([{ op: 'del-service', vs: { ...VS, port: 99 } }]), { message: /ESRCH/ });
  await t.rejects(f.apply([{ op: 'add-dest', vs: VS, rs: { ...RS, port: 2, weight: 70000 } }]), { message: /ERANGE/ });
  t.equal(f.dump(), 'TCP/10.96.0.10:80 rr persistent 10800\n  -> 10.244.1.2:8080 masq w1');
});
