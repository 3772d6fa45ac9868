/**
 * The HA lab's plan (pure): addresses, every part's arguments, HAProxy's
 * configuration, targets, and reading who leads.
 */
import t from 'tap';
import { apiServerArgs, etcdArgs, etcdEndpoints, etcdLeaderFromStatus, haproxyConfig, parseHaTarget, serverOfIdentity } from './ha-plan.js';

t.test('etcd members and API servers: addresses, arguments, one cluster', async (t) => {
  t.equal(etcdEndpoints(3), 'http://192.168.77.231:2379,http://192.168.77.232:2379,http://192.168.77.233:2379');
  const a = etcdArgs('lab1', 2, 3, '/run/x/etcd2', 'new');
  const at = (f: string) => a[a.indexOf(f) + 1];
  t.equal(at('--name'), 'etcd2');
  t.equal(at('--listen-client-urls'), 'http://192.168.77.232:2379');
  t.equal(at('--initial-cluster'), 'etcd1=http://192.168.77.231:2380,etcd2=http://192.168.77.232:2380,etcd3=http://192.168.77.233:2380');
  t.equal(at('--initial-cluster-state'), 'new');
  t.equal(etcdArgs('lab1', 2, 3, '/d', 'existing')[etcdArgs('lab1', 2, 3, '/d', 'existing').indexOf('--initial-cluster-state') + 1], 'existing', 'a restarted member rejoins');
  const s = apiServerArgs(2, 3, '/run/x/api2', ['n1', 'n2'], '/run/x/api2.log');
  const sat = (f: string) => s[s.indexOf(f) + 1];
  t.equal(s[0], 'control-plane');
  t.equal(sat('--storage'), `etcd:${etcdEndpoints(3)}`);
  t.equal(sat('--listen'), '192.168.77.242:6443');
  t.equal(sat('--advertise-address'), '192.168.77.242');
  t.equal(sat('--control-plane-endpoint'), '192.168.77.1:6443', 'the kubeconfigs name the balancer');
  t.equal(sat('--shutdown-delay-duration'), '3s');
  t.equal(sat('--node'), 'n1,n2');
});

t.test('HAProxy: TCP, /readyz checks every second, sessions cut when a server is marked down', async (t) => {
  const c = haproxyConfig(3);
  t.match(c, /mode tcp/);
  t.match(c, /bind 192\.168\.77\.1:6443/);
  t.match(c, /option httpchk GET \/readyz/);
  t.match(c, /default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions/);
  t.match(c, /retries 3\n {4}option redispatch/, 'a refused connection goes to another server');
  t.equal(c.match(/^ {4}server api\d 192\.168\.77\.24\d:6443 check check-ssl verify none$/gm)?.length, 3);
});

t.test('targets: parts and leaders; out of range and unknown words refused', async (t) => {
  const shape = { etcdMembers: 3, apiServers: 2 };
  t.same(parseHaTarget('etcd:3', shape), { kind: 'etcd', index: 3 });
  t.same(parseHaTarget('api-server:1', shape), { kind: 'api-server', index: 1 });
  t.same(parseHaTarget('leader:controller-manager', shape), { kind: 'leader', of: 'controller-manager' });
  t.match(parseHaTarget('etcd:4', shape), /this lab has etcd members 1..3/);
  t.match(parseHaTarget('api-server:0', shape), /API servers 1..2/);
  t.match(parseHaTarget('kubelet', shape), /a target is etcd:N, api-server:N/);
});

t.test('who leads: etcdctl endpoint status, with uint64 member ids kept whole', async (t) => {
  // Two ids that a double cannot tell apart: only the second endpoint leads.
  const json = '[{"Endpoint":"http://192.168.77.231:2379","Status":{"header":{"cluster_id":1,"member_id":12345678901234567890},"leader":12345678901234567891}},{"Endpoint":"http://192.168.77.232:2379","Status":{"header":{"cluster_id":1,"member_id":12345678901234567891},"leader":12345678901234567891}}]';
  t.equal(etcdLeaderFromStatus(json), 2);
  t.equal(etcdLeaderFromStatus('not json'), 0);
  t.equal(etcdLeaderFromStatus('[]'), 0);
  t.equal(serverOfIdentity('vm_b', new Map([[1, 'vm_a'], [2, 'vm_b']])), 2);
  t.equal(serverOfIdentity('', new Map([[1, 'vm_a']])), 0);
});
