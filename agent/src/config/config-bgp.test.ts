import t from 'tap';
import { FLAG_KEYS, parseAgentConfig } from './config.js';

const API = { kubeconfig: '/k', clusterCIDR: '10.244.0.0/16' };

t.test('backend bgp: ASN 64512 and no reflector by default; --bgp-asn and --bgp-route-reflector', async (t) => {
  t.match(parseAgentConfig({ backend: 'bgp', ...API }), { backend: 'bgp', bgpAsn: 64512, bgpRouteReflector: false });
  t.match(parseAgentConfig({ backend: 'bgp', ...API, bgpAsn: 65001, bgpRouteReflector: 'true' }), { bgpAsn: 65001, bgpRouteReflector: true }, 'the flag\'s string for the boolean');
  t.equal(FLAG_KEYS['bgp-asn'], 'bgpAsn');
  t.equal(FLAG_KEYS['bgp-route-reflector'], 'bgpRouteReflector');
  t.throws(() => parseAgentConfig({ backend: 'bgp', ...API, bgpAsn: 0 }), /config bgpAsn/);
  t.throws(() => parseAgentConfig({ backend: 'vxlan', ...API, bgpRouteReflector: true }), /config bgpRouteReflector: is the bgp backend's, not vxlan's/);
  t.throws(() => parseAgentConfig({ backend: 'bgp', clusterCIDR: '10.244.0.0/16' }), /kubeconfig/);
});
