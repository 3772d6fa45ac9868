import t from 'tap';
import { NodenetError } from '../../../lib/errors/errors.js';
import { parseAgentConfig } from './config.js';

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
  const cfg = parseAgentConfig({ overlay: 'vxlan', kubeconfig: '/k', clusterCIDR: '10.244.0.0/16', underlayInterface: 'eth0' });
  t.match(cfg, { overlay: 'vxlan', clusterCIDR: '10.244.0.0/16', underlayInterface: 'eth0', mtu: null });
  t.equal(parseAgentConfig({}).overlay, 'none', 'off by default; no cluster CIDR needed then');
});
