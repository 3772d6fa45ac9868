import t from 'tap';
import { NodenetError } from '../../../lib/errors/errors.js';
import { parseNodePortAddresses, primaryNodeIP, resolveNodePortAddresses, type NodeNetwork } from './node-port-addresses.js';

// A lab node: lo, eth0 on the underlay with the default route, the pod bridge, the VXLAN device, a pod's veth.
const NODE: NodeNetwork = {
  links: [
    { index: 1, name: 'lo' },
    { index: 2, name: 'eth0', kind: 'veth' },
    { index: 3, name: 'cbr0', kind: 'bridge' },
    { index: 4, name: 'nodenet.1', kind: 'vxlan' },
    { index: 5, name: 'veth1a2b', kind: 'veth' },
  ],
  addresses: [
    { ifIndex: 1, address: '127.0.0.1/8' },
    { ifIndex: 3, address: '10.244.1.1/24' },
    { ifIndex: 4, address: '10.244.1.0/32' },
    { ifIndex: 2, address: '169.254.3.3/16' },
    { ifIndex: 2, address: '192.168.77.11/24' },
  ],
  routes: [
    { dst: '10.244.1.0/24', ifIndex: 3, src: '10.244.1.1' },
    { dst: 'default', ifIndex: 2 },
  ],
};

t.test('parse: CIDRs, primary, the zero CIDR, IPv6 left out, errors name the entry', async (t) => {
  t.same(parseNodePortAddresses(['primary']), { kind: 'primary' });
  t.same(parseNodePortAddresses(['192.168.77.0/24', ' 10.0.0.1/8 ', '192.168.77.0/24']), { kind: 'cidrs', cidrs: ['192.168.77.0/24', '10.0.0.0/8'] });
  t.same(parseNodePortAddresses(['192.168.77.0/24', '0.0.0.0/0']), { kind: 'cidrs', cidrs: null }, 'the zero CIDR is everything');
  t.same(parseNodePortAddresses(['fd00::/64']), { kind: 'cidrs', cidrs: null }, 'only IPv6: nothing for IPv4, so everything (kube-proxy)');
  t.same(parseNodePortAddresses([]), { kind: 'cidrs', cidrs: null });
  t.throws(() => parseNodePortAddresses(['primary', '10.0.0.0/8']), { name: 'NodenetError', message: /must be the only value/ });
  t.throws(() => parseNodePortAddresses(['10.0.0.0/33']), { message: /"10.0.0.0\/33" is not a CIDR/ });
  t.throws(() => parseNodePortAddresses(['eth0']), NodenetError);
});

t.test('primary: the default route\'s source, else its interface\'s address, else a non-bridge, non-VXLAN one', async (t) => {
  t.equal(primaryNodeIP(NODE, 'cbr0'), '192.168.77.11', 'eth0 holds the default route; link-local skipped');
  t.equal(primaryNodeIP({ ...NODE, routes: [{ dst: 'default', ifIndex: 2, src: '192.168.77.11' }] }, 'cbr0'), '192.168.77.11');
  t.equal(primaryNodeIP({ ...NODE, addresses: [...NODE.addresses, { ifIndex: 2, address: '192.168.77.50/24' }], routes: [{ dst: 'default', ifIndex: 2, src: '192.168.77.50' }] }, 'cbr0'), '192.168.77.50', 'prefsrc wins');
  const noDefault = { ...NODE, routes: [] };
  t.equal(primaryNodeIP(noDefault, 'cbr0'), '192.168.77.11', 'no default route: the first address not on lo, cbr0, VXLAN');
  t.equal(primaryNodeIP({ ...noDefault, links: NODE.links.filter((l) => l.name !== 'eth0') }, 'cbr0'), null, 'only the bridge and VXLAN have addresses: none');
  t.equal(primaryNodeIP({ links: [{ index: 7, name: 'br-pods' }], addresses: [{ ifIndex: 7, address: '10.1.0.1/24' }], routes: [] }, 'br-pods'), null, 'the configured bridge name counts even without a kind');
});

t.test('resolve: per-mode defaults, health check addresses, fallbacks', async (t) => {
  const nft = resolveNodePortAddresses(null, 'nftables', NODE, { bridge: 'cbr0' });
  t.same(nft.cidrs, ['192.168.77.11/32'], 'nftables default: primary');
  t.same(nft.healthCheckAddresses, ['192.168.77.11']);
  t.equal(nft.primaryIP, '192.168.77.11');
  t.match(nft.description, /primary IP 192\.168\.77\.11 only \(the nftables mode's default\)/);
  const ipt = resolveNodePortAddresses(null, 'iptables', NODE, { bridge: 'cbr0' });
  t.equal(ipt.cidrs, null, 'iptables default: every local address');
  t.same(ipt.healthCheckAddresses, ['0.0.0.0']);
  t.equal(ipt.primaryIP, '192.168.77.11', 'the primary IP is known for the firewall anyway');
  t.match(ipt.description, /127\.0\.0\.1 included/);
  const primaryIpt = resolveNodePortAddresses({ kind: 'primary' }, 'iptables', NODE, { bridge: 'cbr0' });
  t.same(primaryIpt.cidrs, ['192.168.77.11/32'], 'primary asked for in iptables mode');
  const wide = resolveNodePortAddresses(parseNodePortAddresses(['10.244.0.0/16', '127.0.0.0/8']), 'nftables', NODE, { bridge: 'cbr0' });
  t.same(wide.cidrs, ['10.244.0.0/16', '127.0.0.0/8']);
  t.same(wide.healthCheckAddresses, ['127.0.0.1', '10.244.1.1', '10.244.1.0'], 'the node addresses inside the CIDRs');
  t.match(wide.warnings, [/localhost/]);
  const lost = resolveNodePortAddresses(null, 'nftables', { links: [], addresses: [], routes: [] }, { bridge: 'cbr0' });
  t.equal(lost.cidrs, null, 'no primary IP: every address (kube-proxy with an empty list)');
  t.match(lost.warnings, [/no primary IP/]);
});
