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

t.test('proxy fields: defaults, values and errors naming the field', async (t) => {
  const d = parseAgentConfig({});
  t.same([d.proxyPrefix, d.manifestsDir, d.clusterIPPing, d.proxyMinSyncMs], ['KUBE', null, 'reject', 1000]);
  const c = parseAgentConfig({ proxyMode: 'nftables', proxyPrefix: 'NN', manifestsDir: '/etc/nodenet/manifests', clusterIPPing: 'drop', proxyMinSyncMs: 0 });
  t.same([c.proxyMode, c.proxyPrefix, c.manifestsDir, c.clusterIPPing, c.proxyMinSyncMs], ['nftables', 'NN', '/etc/nodenet/manifests', 'drop', 0]);
  t.throws(() => parseAgentConfig({ proxyPrefix: 'kube' }), /config proxyPrefix/);
  t.throws(() => parseAgentConfig({ proxyPrefix: 'TOOLONGX' }), /config proxyPrefix/);
  t.throws(() => parseAgentConfig({ clusterIPPing: 'answer' }), /config clusterIPPing: must be reject or drop/);
  t.equal(d.nftablesShards, 8, 'nftables: 8 shard tables by default');
  t.equal(parseAgentConfig({ nftablesShards: 1 }).nftablesShards, 1, "1: kube-proxy's one table");
  t.throws(() => parseAgentConfig({ nftablesShards: 65 }), /nftablesShards/, 'more shards than the backend looks for: refused');
  t.throws(() => parseAgentConfig({ nftablesShards: 0 }), /nftablesShards/);
  t.throws(() => parseAgentConfig({ nftablesShards: 2.5 }), /nftablesShards/);
  t.throws(() => parseAgentConfig({ proxyMinSyncMs: -1 }), /config proxyMinSyncMs/);
  t.throws(() => parseAgentConfig({ proxyMinSyncMs: '5' }), /config proxyMinSyncMs/);
});

t.test('kubeconfig: a file or in-cluster; one source only', async (t) => {
  t.equal(parseAgentConfig({}).kubeconfig, null);
  t.equal(parseAgentConfig({ kubeconfig: '/d/nodes/n1.kubeconfig', proxyMode: 'nftables' }).kubeconfig, '/d/nodes/n1.kubeconfig');
  t.equal(parseAgentConfig({ kubeconfig: 'in-cluster' }).kubeconfig, 'in-cluster');
  t.throws(() => parseAgentConfig({ kubeconfig: '' }), /config kubeconfig: must not be empty/);
  t.throws(() => parseAgentConfig({ kubeconfig: '/k', manifestsDir: '/m' }), /config kubeconfig: the proxy follows one source/);
});

t.test('nodeLeaseDurationSeconds: 40 by default (renewed every 10 s), bounded', async (t) => {
  t.equal(parseAgentConfig({}).nodeLeaseDurationSeconds, 40);
  t.equal(parseAgentConfig({ nodeLeaseDurationSeconds: 20 }).nodeLeaseDurationSeconds, 20);
  t.throws(() => parseAgentConfig({ nodeLeaseDurationSeconds: 1 }), /config nodeLeaseDurationSeconds/);
  t.throws(() => parseAgentConfig({ nodeLeaseDurationSeconds: 'long' }), /config nodeLeaseDurationSeconds/);
});

t.test('metricsBindAddress / healthzBindAddress: kube-proxy\'s defaults, "" or 0 turns off, errors name the field', async (t) => {
  const d = parseAgentConfig({});
  t.same([d.metricsBindAddress, d.healthzBindAddress], ['127.0.0.1:10249', '127.0.0.1:10256']);
  const c = parseAgentConfig({ metricsBindAddress: '0.0.0.0:0', healthzBindAddress: '[::1]:10256' });
  t.same([c.metricsBindAddress, c.healthzBindAddress], ['0.0.0.0:0', '[::1]:10256']);
  for (const off of ['', '0', 0]) t.equal(parseAgentConfig({ metricsBindAddress: off }).metricsBindAddress, null, JSON.stringify(off));
  t.equal(parseAgentConfig({ healthzBindAddress: '' }).healthzBindAddress, null);
  for (const bad of ['10249', 'localhost:10249', '127.0.0.1', '127.0.0.1:70000', '300.0.0.1:80', '[1.2.3.4]:80', '::1:80', 10249]) {
    t.throws(() => parseAgentConfig({ metricsBindAddress: bad }), /^config metricsBindAddress: must be IP:PORT such as 127\.0\.0\.1:10249/, JSON.stringify(bad));
  }
  t.throws(() => parseAgentConfig({ healthzBindAddress: 'x' }), /^config healthzBindAddress: must be IP:PORT such as 127\.0\.0\.1:10256 .*, got "x"$/);
});

t.test('nodePortAddresses and serviceCIDR: defaults, the flag forms, errors naming the field', async (t) => {
  const d = parseAgentConfig({});
  t.same([d.nodePortAddresses, d.serviceCIDR], [null, null], 'null: the proxy mode picks the default');
  t.same(parseAgentConfig({ nodePortAddresses: ['primary'] }).nodePortAddresses, ['primary']);
  t.same(parseAgentConfig({ nodePortAddresses: '192.168.77.0/24, 127.0.0.0/8' }).nodePortAddresses, ['192.168.77.0/24', '127.0.0.0/8'], 'the flag: comma-separated');
  t.same(parseAgentConfig({ nodePortAddresses: '' }).nodePortAddresses, null);
  t.throws(() => parseAgentConfig({ nodePortAddresses: ['primary', '10.0.0.0/8'] }), /config nodePortAddresses: "primary" must be the only value/);
  t.throws(() => parseAgentConfig({ nodePortAddresses: 'eth0' }), /config nodePortAddresses: "eth0" is not a CIDR/);
  t.throws(() => parseAgentConfig({ nodePortAddresses: [8] }), /config nodePortAddresses: must be a list/);
  t.equal(parseAgentConfig({ serviceCIDR: '10.96.0.1/12' }).serviceCIDR, '10.96.0.0/12');
  t.equal(parseAgentConfig({ serviceCIDR: '10.96.0.0/12,fd00::/108' }).serviceCIDR, '10.96.0.0/12', 'dual-stack form: the IPv4 one');
  t.throws(() => parseAgentConfig({ serviceCIDR: 'fd00::/108' }), /config serviceCIDR: must be one IPv4 CIDR/);
  t.throws(() => parseAgentConfig({ serviceCIDR: '10.96.0.0/40' }), /config serviceCIDR: must be an IPv4 CIDR/);
});

t.test('capacity, kubeReserved, systemReserved: name=quantity lists (flags) or objects (file); bad ones refused', async (t) => {
  const c = parseAgentConfig({ capacity: 'cpu=2,memory=4Gi,pods=30', kubeReserved: { cpu: '100m', memory: '256Mi' } });
  t.same(c.capacity, { cpu: '2', memory: '4Gi', pods: '30' });
  t.same(c.kubeReserved, { cpu: '100m', memory: '256Mi' });
  t.equal(c.systemReserved, null);
  t.throws(() => parseAgentConfig({ capacity: 'cpu=two' }), /config capacity: --capacity: cpu="two" is not a non-negative quantity/);
  t.throws(() => parseAgentConfig({ systemReserved: 'gpus=1' }), /config systemReserved: --system-reserved: "gpus" is not a resource nodenet reports/);
  t.throws(() => parseAgentConfig({ kubeReserved: [1] }), /must be name=quantity/);
});

t.test('clusterDNS and clusterDomain (KubeletConfiguration\'s names): defaults, the list and the flag\'s comma form, errors naming the field', async (t) => {
  const d = parseAgentConfig({});
  t.same([d.clusterDNS, d.clusterDomain], [[], 'cluster.local'], 'no cluster DNS: ClusterFirst Pods fall back to the node\'s resolv.conf');
  t.same(parseAgentConfig({ clusterDNS: ['10.96.0.10', 'fd00::a'] }).clusterDNS, ['10.96.0.10', 'fd00::a'], 'IPv4 and IPv6');
  t.same(parseAgentConfig({ clusterDNS: '10.96.0.10, 10.96.0.11' }).clusterDNS, ['10.96.0.10', '10.96.0.11'], 'the flag: comma-separated');
  t.same(parseAgentConfig({ clusterDNS: '' }).clusterDNS, []);
  t.throws(() => parseAgentConfig({ clusterDNS: ['10.96.0.300'] }), { code: 'NN_ERR_INVALID_CONFIG', message: /config clusterDNS: "10\.96\.0\.300" is not an IP address/ });
  t.throws(() => parseAgentConfig({ clusterDNS: 'kube-dns' }), /config clusterDNS: "kube-dns" is not an IP address/);
  t.throws(() => parseAgentConfig({ clusterDNS: [10] }), /config clusterDNS: must be a list of IP addresses/);
  t.equal(parseAgentConfig({ clusterDomain: 'corp.example' }).clusterDomain, 'corp.example');
  t.equal(parseAgentConfig({ clusterDomain: 'cluster.local.' }).clusterDomain, 'cluster.local', 'a trailing dot dropped');
  t.throws(() => parseAgentConfig({ clusterDomain: 'Cluster_Local' }), /config clusterDomain: must be a DNS name/);
  t.throws(() => parseAgentConfig({ clusterDomain: '' }), /config clusterDomain: must not be empty/);
  t.throws(() => parseAgentConfig({ clusterDomain: 'a..b' }), /config clusterDomain: must be a DNS name/);
});

t.test('resolvConf (the kubelet\'s --resolv-conf): /etc/resolv.conf by default, "" for none, else an absolute path', async (t) => {
  t.equal(parseAgentConfig({}).resolvConf, '/etc/resolv.conf');
  t.equal(parseAgentConfig({ resolvConf: '' }).resolvConf, '', 'none: Default Pods get no nameserver');
  t.equal(parseAgentConfig({ resolvConf: '/run/lab/resolv.conf' }).resolvConf, '/run/lab/resolv.conf');
  t.throws(() => parseAgentConfig({ resolvConf: 'resolv.conf' }), { code: 'NN_ERR_INVALID_CONFIG', message: /config resolvConf: must be an absolute path/ });
  t.throws(() => parseAgentConfig({ resolvConf: 5 }), /config resolvConf: must be a path/);
});
