import t from 'tap';
import { NodenetError } from '../../../lib/errors/errors.js';
import { FLAG_KEYS, parseAgentConfig } from './config.js';

const API = { kubeconfig: '/k', clusterCIDR: '10.244.0.0/16' };

t.test('overlay vxlan needs a kubeconfig and the cluster CIDR, each error naming its field', async (t) => {
  t.throws(() => parseAgentConfig({ overlay: 'vxlan', clusterCIDR: '10.244.0.0/16' }), { message: /^config overlay: .*kubeconfig/ });
  const e = (() => {
    try {
      parseAgentConfig({ overlay: 'vxlan', kubeconfig: '/k' });
    } catch (err) {
      return err;
    }
    return null;
  })();
  t.ok(e instanceof NodenetError);
  t.match((e as Error).message, /^config clusterCIDR: overlay vxlan needs the cluster CIDR/);
  const cfg = parseAgentConfig({ overlay: 'vxlan', ...API, underlayInterface: 'eth0' });
  t.match(cfg, { backend: 'vxlan', directRouting: false, clusterCIDR: '10.244.0.0/16', underlayInterface: 'eth0', mtu: null });
  t.equal(parseAgentConfig({}).backend, 'none', 'off by default; no cluster CIDR needed then');
});

t.test('backend: vxlan, host-gw or none; overlay is its older spelling, and both must agree', async (t) => {
  t.equal(parseAgentConfig({ backend: 'host-gw', ...API }).backend, 'host-gw');
  t.equal(parseAgentConfig({ overlay: 'host-gw', ...API }).backend, 'host-gw', 'the older key says the same');
  t.equal(parseAgentConfig({ backend: 'vxlan', overlay: 'vxlan', ...API }).backend, 'vxlan', 'both, agreeing');
  t.throws(() => parseAgentConfig({ backend: 'host-gw', overlay: 'vxlan', ...API }), { message: /^config backend: backend "host-gw" and overlay "vxlan" disagree: overlay is the older name of backend; give one$/ });
  t.throws(() => parseAgentConfig({ backend: 'udp', ...API }), { message: /^config backend: must be vxlan, host-gw, bgp or none, got "udp"$/ });
  t.throws(() => parseAgentConfig({ overlay: 'udp', ...API }), { message: /^config overlay: must be vxlan, host-gw, bgp or none/ });
  t.throws(() => parseAgentConfig({ backend: 'host-gw', clusterCIDR: '10.244.0.0/16' }), { message: /^config backend: host-gw follows the Node objects of an API server: it needs kubeconfig$/ });
  t.throws(() => parseAgentConfig({ backend: 'host-gw', kubeconfig: '/k' }), { message: /^config clusterCIDR: overlay host-gw needs the cluster CIDR/ });
  t.equal(FLAG_KEYS['backend'], 'backend');
  t.equal(FLAG_KEYS['overlay'], 'overlay', '--overlay kept');
});

t.test('directRouting is vxlan\'s', async (t) => {
  t.equal(parseAgentConfig({ backend: 'vxlan', directRouting: 'true', ...API }).directRouting, true, 'the flag\'s string');
  t.equal(parseAgentConfig({ backend: 'vxlan', directRouting: true, ...API }).directRouting, true);
  t.throws(() => parseAgentConfig({ backend: 'host-gw', directRouting: true, ...API }), { message: /^config directRouting: is vxlan's .*not host-gw's: host-gw routes every Node directly already$/ });
  t.throws(() => parseAgentConfig({ directRouting: true }), { message: /^config directRouting: is vxlan's .*not none's$/ });
  t.throws(() => parseAgentConfig({ backend: 'vxlan', directRouting: 'yes', ...API }), { message: /^config directRouting: must be true or false/ });
  t.equal(FLAG_KEYS['direct-routing'], 'directRouting');
});
