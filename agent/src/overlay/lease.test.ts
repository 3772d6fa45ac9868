import t from 'tap';
import { A_BACKEND_DATA, A_BACKEND_TYPE, A_PUBLIC_IP, A_PUBLIC_IP_OVERWRITE, A_SUBNET_MANAGER, annotationsHold, leaseAnnotations, leaseFromNode, vtepMacFor } from './lease.js';

const node = (name: string, podCIDR: string | undefined, annotations: Record<string, string>) => ({
  apiVersion: 'v1', kind: 'Node', metadata: { name, annotations }, spec: podCIDR === undefined ? {} : { podCIDR },
});
const MAC = vtepMacFor('n2');
const good = leaseAnnotations({ vtepMac: MAC, publicIP: '192.168.77.12' });

t.test('the VTEP MAC: derived from the node name, locally administered unicast, stable, distinct', async (t) => {
  t.equal(vtepMacFor('n2'), MAC, 'same name, same MAC');
  t.not(vtepMacFor('n3'), MAC);
  t.match(MAC, /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/);
  const first = parseInt(MAC.slice(0, 2), 16);
  t.equal(first & 0x03, 0x02, 'locally administered (bit 1) and unicast (bit 0 clear)');
});

t.test("the annotations are flannel's", async (t) => {
  t.same(good, {
    [A_BACKEND_TYPE]: 'vxlan',
    [A_BACKEND_DATA]: `{"VNI":1,"VtepMAC":"${MAC}"}`,
    [A_PUBLIC_IP]: '192.168.77.12',
    [A_SUBNET_MANAGER]: 'true',
  });
  t.equal(A_BACKEND_TYPE, 'flannel.alpha.coreos.com/backend-type');
  t.ok(annotationsHold({ ...good, other: 'x' }, good));
  t.notOk(annotationsHold({ ...good, [A_PUBLIC_IP]: '192.168.77.50' }, good));
  t.notOk(annotationsHold(undefined, good));
});

t.test('a Node with podCIDR and annotations is a lease', async (t) => {
  t.same(leaseFromNode(node('n2', '10.244.2.0/24', good)), { lease: { node: 'n2', podCIDR: '10.244.2.0/24', vtepMac: MAC, publicIP: '192.168.77.12' } });
  // flannel's own (Go) JSON, upper-case MAC: normalised.
  const goStyle = { ...good, [A_BACKEND_DATA]: `{"VNI":1,"VtepMAC":"${MAC.toUpperCase()}"}` };
  t.same(leaseFromNode(node('n2', '10.244.2.0/24', goStyle)), { lease: { node: 'n2', podCIDR: '10.244.2.0/24', vtepMac: MAC, publicIP: '192.168.77.12' } });
  t.same(leaseFromNode(node('n2', '10.244.2.0/24', { ...good, [A_PUBLIC_IP_OVERWRITE]: '192.168.77.50' })), { lease: { node: 'n2', podCIDR: '10.244.2.0/24', vtepMac: MAC, publicIP: '192.168.77.50' } }, 'public-ip-overwrite wins');
});

t.test('what is not a lease, and why', async (t) => {
  const skip = (o: unknown) => {
    const r = leaseFromNode(o);
    return 'skip' in r ? r.skip : 'a lease';
  };
  t.match(skip(node('n2', undefined, good)), /no spec.podCIDR/);
  t.match(skip(node('n2', '10.244.2.1/24', good)), /host bits/);
  t.match(skip(node('n2', 'nope', good)), /not an IPv4 CIDR/);
  t.match(skip(node('n2', '10.244.2.0/24', {})), /no flannel.alpha.coreos.com\/backend-type/);
  t.match(skip(node('n2', '10.244.2.0/24', { ...good, [A_BACKEND_TYPE]: 'host-gw' })), /backend "host-gw"/);
  t.match(skip(node('n2', '10.244.2.0/24', { ...good, [A_BACKEND_DATA]: '{' })), /not JSON/);
  t.match(skip(node('n2', '10.244.2.0/24', { ...good, [A_BACKEND_DATA]: '{"VNI":2,"VtepMAC":"02:00:00:00:00:01"}' })), /VNI 2/);
  t.match(skip(node('n2', '10.244.2.0/24', { ...good, [A_BACKEND_DATA]: '{"VNI":1,"VtepMAC":"zz"}' })), /no valid VtepMAC/);
  t.match(skip(node('n2', '10.244.2.0/24', { ...good, [A_PUBLIC_IP]: 'x' })), /no valid .*public-ip/);
  t.match(skip({ metadata: {} }), /no metadata.name/);
  t.match(skip(null), /no metadata.name/);
});
