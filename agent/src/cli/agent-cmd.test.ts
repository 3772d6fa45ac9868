import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { agentConfigFromArgs } from './agent-cmd.js';

t.test('flags override the config file, numbers are numbers, errors name the field', async (t) => {
  const dir = mkdtempSync(`${tmpdir()}/nn-agentcmd-`);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(`${dir}/agent.json`, JSON.stringify({ nodeName: 'from-file', podCIDR: '10.244.1.0/24', proxyMode: 'iptables' }));
  const c = agentConfigFromArgs([
    '--config', `${dir}/agent.json`,
    '--node-name', 'n1',
    '--proxy-mode', 'nftables',
    '--manifests', '/etc/nodenet/manifests',
    '--proxy-prefix', 'NN',
    '--cluster-ip-ping', 'drop',
    '--proxy-min-sync-ms', '250',
    '--mtu', '1450',
  ]);
  t.same(
    [c.nodeName, c.podCIDR, c.proxyMode, c.manifestsDir, c.proxyPrefix, c.clusterIPPing, c.proxyMinSyncMs, c.mtu],
    ['n1', '10.244.1.0/24', 'nftables', '/etc/nodenet/manifests', 'NN', 'drop', 250, 1450],
  );
  t.throws(() => agentConfigFromArgs(['--proxy-min-sync-ms', 'soon']), /config proxyMinSyncMs/);
  t.throws(() => agentConfigFromArgs(['--proxy-mode', 'userspace']), /config proxyMode/);
  t.throws(() => agentConfigFromArgs(['--no-such-flag', 'x']), /unknown flag --no-such-flag/);
  t.throws(() => agentConfigFromArgs(['--config', `${dir}/missing.json`]), /cannot read config/);
});

t.test('--node-lease-duration-seconds is a number flag', async (t) => {
  t.equal(agentConfigFromArgs(['--node-lease-duration-seconds', '20']).nodeLeaseDurationSeconds, 20);
});

t.test('--metrics-bind-address and --healthz-bind-address: strings ("0" turns one off), validated by the config', async (t) => {
  const c = agentConfigFromArgs(['--metrics-bind-address', '127.0.0.1:0', '--healthz-bind-address', '0']);
  t.same([c.metricsBindAddress, c.healthzBindAddress], ['127.0.0.1:0', null]);
  t.equal(agentConfigFromArgs(['--metrics-bind-address', '']).metricsBindAddress, null);
  t.throws(() => agentConfigFromArgs(['--healthz-bind-address', '10256']), /config healthzBindAddress: must be IP:PORT/);
});

t.test('--nodeport-addresses and --service-cluster-ip-range', async (t) => {
  const c = agentConfigFromArgs(['--nodeport-addresses', '192.168.77.0/24,127.0.0.1/32', '--service-cluster-ip-range', '10.96.0.0/12']);
  t.same([c.nodePortAddresses, c.serviceCIDR], [['192.168.77.0/24', '127.0.0.1/32'], '10.96.0.0/12']);
  t.same(agentConfigFromArgs(['--nodeport-addresses', 'primary']).nodePortAddresses, ['primary']);
  t.throws(() => agentConfigFromArgs(['--nodeport-addresses', 'eth0']), /config nodePortAddresses/);
});

t.test('--backend vxlan|host-gw|none, --overlay its older name (refused when they differ), --direct-routing', async (t) => {
  const api = ['--kubeconfig', '/k', '--cluster-cidr', '10.244.0.0/16'];
  t.equal(agentConfigFromArgs([...api, '--backend', 'host-gw']).backend, 'host-gw');
  t.equal(agentConfigFromArgs([...api, '--overlay', 'host-gw']).backend, 'host-gw');
  t.throws(() => agentConfigFromArgs([...api, '--backend', 'host-gw', '--overlay', 'vxlan']), /config backend: backend "host-gw" and overlay "vxlan" disagree/);
  const dir = mkdtempSync(`${tmpdir()}/nn-agentcmd-`);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(`${dir}/agent.json`, JSON.stringify({ overlay: 'vxlan' }));
  t.throws(() => agentConfigFromArgs(['--config', `${dir}/agent.json`, ...api, '--backend', 'host-gw']), /disagree/, 'a file\'s overlay and the flag\'s backend disagreeing: refused too');
  t.same(agentConfigFromArgs([...api, '--backend', 'vxlan', '--direct-routing', 'true']).directRouting, true);
});

t.test('--cluster-dns IP[,IP] and --cluster-domain, as the kubelet\'s; the file\'s clusterDNS list', async (t) => {
  const c = agentConfigFromArgs(['--cluster-dns', '10.96.0.10,fd00::a', '--cluster-domain', 'corp.example']);
  t.same([c.clusterDNS, c.clusterDomain], [['10.96.0.10', 'fd00::a'], 'corp.example']);
  t.same([agentConfigFromArgs([]).clusterDNS, agentConfigFromArgs([]).clusterDomain], [[], 'cluster.local']);
  t.throws(() => agentConfigFromArgs(['--cluster-dns', '10.96.0']), /config clusterDNS: "10\.96\.0" is not an IP address \(--cluster-dns/);
  t.throws(() => agentConfigFromArgs(['--cluster-domain', 'under_score.local']), /config clusterDomain: must be a DNS name/);
  const dir = mkdtempSync(`${tmpdir()}/nn-agentcmd-`);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(`${dir}/agent.json`, JSON.stringify({ clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local' }));
  t.same(agentConfigFromArgs(['--config', `${dir}/agent.json`]).clusterDNS, ['10.96.0.10']);
  t.same(agentConfigFromArgs(['--config', `${dir}/agent.json`, '--cluster-dns', '10.0.0.10']).clusterDNS, ['10.0.0.10'], 'the flag overrides the file');
});
