/** The lab's fixed addresses that the agents are given: the cluster DNS at the service CIDR's tenth address. */
import t from 'tap';
import { CLUSTER_DNS_IP, CLUSTER_DOMAIN, clusterDNSIP, SERVICE_CIDR } from './plan.js';

t.test('the cluster DNS: the tenth address of the service CIDR, under cluster.local', async (t) => {
  t.equal(SERVICE_CIDR, '10.96.0.0/16');
  t.equal(CLUSTER_DNS_IP, '10.96.0.10');
  t.equal(clusterDNSIP('10.96.0.0/12'), '10.96.0.10', 'kubeadm\'s default service CIDR');
  t.equal(clusterDNSIP('172.20.0.0/16'), '172.20.0.10');
  t.equal(CLUSTER_DOMAIN, 'cluster.local');
});
