import t from 'tap';
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

t.test('the query the kubelet gets', async (t) => {
  t.equal(String(kubeletLogQuery(new URLSearchParams('container=web&follow=true&tailLines=10&previous=false&insecureSkipTLSVerifyBackend=true'))), 'follow=true&tailLines=10');
  t.throws(() => kubeletLogQuery(new URLSearchParams('tailLines=-1')), { name: 'ApiError', httpStatus: 400 });
  t.throws(() => kubeletLogQuery(new URLSearchParams('follow=yes')), { name: 'ApiError', httpStatus: 400 });
});
