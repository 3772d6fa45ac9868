import t from 'tap';
import { parseAgentConfig } from './config.js';

t.test('defaults and derived socket path', async (t) => {
  const c = parseAgentConfig({ nodeName: 'n1', podCIDR: '10.244.1.9/24', runDir: '/run/x' });
  t.equal(c.podCIDR, '10.244.1.0/24');
  t.equal(c.cniSocket, '/run/x/cni.sock');
  t.equal(c.bridge, 'cbr0');
  t.equal(c.proxyMode, 'none');
});

t.test('errors name the field', async (t) => {
  t.throws(() => parseAgentConfig({ podCIDR: '10.0.0.0/40' }), /config podCIDR/);
  t.throws(() => parseAgentConfig({ mtu: 10 }), /config mtu/);
  t.throws(() => parseAgentConfig({ proxyMode: 'userspace' }), /config proxyMode/);
  t.throws(() => parseAgentConfig({ nodename: 'x' }), /config nodename: unknown field/);
  t.throws(() => parseAgentConfig({ bridge: 'a-very-long-bridge-name' }), /config bridge/);
  t.throws(() => parseAgentConfig([]), /config \(root\)/);
});
