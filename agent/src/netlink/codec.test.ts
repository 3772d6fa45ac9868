import t from 'tap';
import { ifla, rt } from 'netlink';
import { bufferToIp, bufferToMac, encodeLinkInfo, encodeVethPeer, ipToBuffer, macToBuffer, parseRouteDst } from './codec.js';
import { errnoOf, NetlinkError } from './netlink-error.js';

t.test('mac and ip buffers', async (t) => {
  t.equal(bufferToMac(macToBuffer('02:AB:cd:00:0f:10')), '02:ab:cd:00:0f:10');
  t.throws(() => macToBuffer('02:ab:cd:00:0f'), TypeError);
  t.equal(bufferToIp(ipToBuffer('10.244.1.7')), '10.244.1.7');
  t.same([...ipToBuffer('1.2.3.4')], [1, 2, 3, 4], 'network byte order');
  t.equal(bufferToIp(Buffer.from([1, 2, 3])), undefined);
  t.throws(() => ipToBuffer('1.2.3.256'), TypeError);
});

t.test('route destinations', async (t) => {
  t.same(parseRouteDst('default'), { ip: '0.0.0.0', len: 0 });
  t.same(parseRouteDst('10.244.0.0/16'), { ip: '10.244.0.0', len: 16 });
  t.throws(() => parseRouteDst('10.244.1.0/16'), /host bits/);
  t.throws(() => parseRouteDst('10.244.0.0'), TypeError);
});

t.test('veth peer nests an ifinfomsg and the peer attributes inside IFLA_LINKINFO', async (t) => {
  const buf = encodeLinkInfo({ kind: 'veth', data: encodeVethPeer({ ifname: 'eth0', mtu: 1450, netNsFd: 42 }) });
  const info = ifla.parseInfo(buf);
  t.equal(info.kind, 'veth');
  const data = info.data;
  t.ok(data);
  if (!data) return;
  // VETH_INFO_PEER header: len (u16), type (u16) = 1
  t.equal(data.readUInt16LE(2), 1, 'VETH_INFO_PEER');
  t.equal(data.readUInt16LE(0), data.length, 'one attribute spanning the data');
  const payload = data.subarray(4);
  const hdr = rt.parseLink(payload.subarray(0, 16));
  t.equal(hdr.index, 0);
  const attrs = ifla.parseLinkAttrs(payload.subarray(16));
  t.equal(attrs.ifname, 'eth0');
  t.equal(attrs.mtu, 1450);
  t.equal(attrs.netNsFd, 42);
});

t.test('errnoOf reads what netlink 0.3.0 throws', async (t) => {
  t.equal(errnoOf(new Error('Request rejected: EEXIST')), 'EEXIST');
  t.equal(errnoOf(new Error('Request rejected: ENOTSUP')), 'EOPNOTSUPP', 'ENOTSUP is normalised');
  t.equal(errnoOf(Object.assign(new Error('x'), { code: 'ENOBUFS' })), 'ENOBUFS');
  t.equal(errnoOf(new NetlinkError('op', 'ENETUNREACH')), 'ENETUNREACH');
  t.equal(errnoOf(new Error('Timeout has been reached')), undefined);
  t.equal(errnoOf('EEXIST'), undefined);
  const e = new NetlinkError('addRoute default via 1.2.3.4', 'ENETUNREACH');
  t.equal(e.code, 'NN_ERR_NETLINK');
  t.match(e.message, /addRoute default via 1.2.3.4: ENETUNREACH/);
});
