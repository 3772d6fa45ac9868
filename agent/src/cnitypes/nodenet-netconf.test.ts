import t from 'tap';
import { DEFAULT_AGENT_SOCKET, parseBridgeNetConf } from './netconf.js';
import { nodenetNetConf } from './nodenet-netconf.js';

t.test('the default: cbr0 as the pods\' gateway and default route, hairpin, host-local; no socket, no ipMasq', async (t) => {
  t.same(nodenetNetConf(), {
    cniVersion: '1.1.0', name: 'nodenet', type: 'nodenet-cni', bridge: 'cbr0',
    isGateway: true, isDefaultGateway: true, hairpinMode: true, ipam: { type: 'host-local' },
  });
  t.notOk('agentSocket' in nodenetNetConf(), 'the shim\'s default socket is not written');
  t.notOk('ipMasq' in nodenetNetConf(), 'nor the plugin\'s default ipMasq');
});

t.test('the options: bridge, agent socket, ipMasq', async (t) => {
  const c = nodenetNetConf({ bridge: 'br-pods', agentSocket: '/run/nodenet/lab/x/n1/cni.sock', ipMasq: false });
  t.match(c, { bridge: 'br-pods', agentSocket: '/run/nodenet/lab/x/n1/cni.sock', ipMasq: false, type: 'nodenet-cni' });
  t.equal(nodenetNetConf({ ipMasq: true }).ipMasq, true);
  t.not(nodenetNetConf().ipam, nodenetNetConf().ipam, 'a fresh object each call (callers may add to a copy)');
});

t.test('what it writes is what the agent parses, with the same meaning', async (t) => {
  const d = parseBridgeNetConf(JSON.stringify(nodenetNetConf()));
  t.match(d, { cniVersion: '1.1.0', name: 'nodenet', type: 'nodenet-cni', bridge: 'cbr0', isGateway: true, isDefaultGateway: true, hairpinMode: true, ipMasq: false, agentSocket: DEFAULT_AGENT_SOCKET });
  t.same(d.ipam, { type: 'host-local' });
  const o = parseBridgeNetConf(JSON.stringify(nodenetNetConf({ bridge: 'br-pods', agentSocket: '/tmp/nn-x/cni.sock', ipMasq: true })));
  t.match(o, { bridge: 'br-pods', agentSocket: '/tmp/nn-x/cni.sock', ipMasq: true });
});
