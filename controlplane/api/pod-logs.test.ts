import t from 'tap';
import { Query } from '../../lib/net/query.js';
import { kubeletLogQuery, logLocation } from './pod-logs.js';

const pod = (containers: string[], nodeName = 'n1') => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'default' }, spec: { nodeName, containers: containers.map((name) => ({ name })) } });
const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, status: { addresses: [{ type: 'Hostname', address: 'n1' }, { type: 'InternalIP', address: '192.168.77.11' }], daemonEndpoints: { kubeletEndpoint: { Port: 10251 } } } };

t.test('where a container\'s logs are', async (t) => {
  t.same(logLocation(pod(['web']), node, null), { node: 'n1', host: '192.168.77.11', port: 10251, container: 'web' }, 'the only container by default');
  t.same(logLocation(pod(['a', 'b']), { ...node, status: { addresses: node.status.addresses } }, 'b'), { node: 'n1', host: '192.168.77.11', port: 10250, container: 'b' }, 'the kubelet port defaults to 10250');
  t.throws(() => logLocation(pod(['a', 'b']), node, null), { message: 'a container name must be specified for pod web, choose one of: [a b]', httpStatus: 400 });
  t.throws(() => logLocation(pod(['a']), node, 'x'), { message: 'container x is not valid for pod web', httpStatus: 400 });
  t.throws(() => logLocation(pod(['a'], ''), node, null), { message: 'pod web does not have a host assigned', httpStatus: 400 });
  t.throws(() => logLocation(pod(['a']), undefined, null), { name: 'NodenetError', httpStatus: 503 });
});

t.test('the query the kubelet gets: PodLogOptions read as kube-apiserver converts them, and checked as it checks them', async (t) => {
  const q = (s: string) => kubeletLogQuery(new Query(new URLSearchParams(s)), 'web');
  t.equal(String(q('container=web&follow=true&tailLines=10&previous=false&insecureSkipTLSVerifyBackend=true')), 'follow=true&tailLines=10');
  t.equal(String(q('follow=True&previous=1&timestamps=FALSE')), 'follow=true&previous=true', 'any value but false and 0 is true (Python sends True)');
  t.equal(String(q('follow&tailLines=0&limitBytes=1&sinceSeconds=5')), 'follow=true&tailLines=0&limitBytes=1&sinceSeconds=5', 'a bare flag is true');
  t.equal(String(q('tailLines=%2B7')), 'tailLines=7', 'a sign is allowed, as strconv.ParseInt allows it');
  t.throws(() => q('tailLines=-1'), { name: 'ApiError', httpStatus: 422, message: 'PodLogOptions "web" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0' });
  t.throws(() => q('limitBytes=0'), { httpStatus: 422, message: /limitBytes: Invalid value: 0: must be greater than 0/ });
  t.throws(() => q('sinceSeconds=0'), { httpStatus: 422, message: /sinceSeconds: Invalid value: 0: must be greater than 0/ });
  t.throws(() => q('sinceSeconds=5&sinceTime=2026-12-04T00:00:00Z'), { httpStatus: 422, message: /at most one of `sinceTime` or `sinceSeconds` may be specified/ });
  t.throws(() => q('tailLines=ten'), { httpStatus: 400, message: 'strconv.ParseInt: parsing "ten": invalid syntax' });
});
