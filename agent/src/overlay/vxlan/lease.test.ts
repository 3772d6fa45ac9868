import t from 'tap';
import { A_BACKEND_DATA, A_BACKEND_TYPE, A_PUBLIC_IP, A_PUBLIC_IP_OVERWRITE, A_SUBNET_MANAGER, annotationsHold } from '../subnet.js';
import { leaseAnnotations, leaseFromNode, vtepMacFor } from './lease.js';

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

t.test('what is not a lease, why, and of which class: not written yet, another network, malformed', async (t) => {
  const skip = (o: unknown) => {
    const r = leaseFromNode(o);
    return 'skip' in r ? `${r.class} ${r.field}: ${r.skip}` : 'a lease';
  };
  const { [A_PUBLIC_IP]: _ip, ...noIP } = good;
  const { [A_BACKEND_DATA]: _data, ...noData } = good;
  t.match(skip(node('n2', undefined, good)), /^pending spec.podCIDR: no spec.podCIDR/);
  t.match(skip(node('n2', '10.244.2.1/24', good)), /^invalid spec.podCIDR: .*host bits/);
  t.match(skip(node('n2', 'nope', good)), /^invalid spec.podCIDR: .*not an IPv4 CIDR/);
  t.match(skip({ ...node('n2', undefined, good), spec: { podCIDR: 7 } }), /^invalid spec.podCIDR: .*not an IPv4 CIDR/);
  t.match(skip(node('n2', '10.244.2.0/24', {})), /^pending metadata.annotations\[flannel.alpha.coreos.com\/backend-type\]: no flannel.alpha.coreos.com\/backend-type/);
  t.match(skip(node('n2', '10.244.2.0/24', { ...good, [A_BACKEND_TYPE]: 'host-gw' })), /^elsewhere .*backend "host-gw"/);
  t.match(skip(node('n2', '10.244.2.0/24', noData)), /^pending .*backend-data/);
  t.match(skip(node('n2', '10.244.2.0/24', { ...good, [A_BACKEND_DATA]: '{' })), /^invalid .*not JSON/);
  t.match(skip(node('n2', '10.244.2.0/24', { ...good, [A_BACKEND_DATA]: '{"VNI":2,"VtepMAC":"02:00:00:00:00:01"}' })), /^elsewhere .*VNI 2/);
  t.match(skip(node('n2', '10.244.2.0/24', { ...good, [A_BACKEND_DATA]: '{"VNI":"x","VtepMAC":"02:00:00:00:00:01"}' })), /^invalid .*VNI that is not a number/);
  t.match(skip(node('n2', '10.244.2.0/24', { ...good, [A_BACKEND_DATA]: '{"VNI":1,"VtepMAC":"zz"}' })), /^invalid .*no valid VtepMAC/);
  t.match(skip(node('n2', '10.244.2.0/24', noIP)), /^pending metadata.annotations\[flannel.alpha.coreos.com\/public-ip\]: no .*public-ip/);
  t.match(skip(node('n2', '10.244.2.0/24', { ...good, [A_PUBLIC_IP]: 'x' })), /^invalid metadata.annotations\[flannel.alpha.coreos.com\/public-ip\]: .*"x" is not an IPv4 address/);
  t.match(skip(node('n2', '10.244.2.0/24', { ...good, [A_PUBLIC_IP_OVERWRITE]: '1.2.3' })), /^invalid metadata.annotations\[flannel.alpha.coreos.com\/public-ip-overwrite\]: /);
  t.match(skip({ metadata: {} }), /^invalid metadata.name: no metadata.name/);
  t.match(skip(null), /no metadata.name/);
});
