import t from 'tap';
import { bgpBackendData, bgpLeases } from './lease.js';

t.test("a peer's backend-data: the ASN and whether it reflects", async (t) => {
  const r = bgpLeases(64512);
  t.same(r.readData(bgpBackendData({ asn: 64512, routeReflector: true })), { data: { asn: 64512, routeReflector: true } });
  t.same(r.readData({ ASN: 64512 }), { data: { asn: 64512, routeReflector: false } }, 'RouteReflector absent: not one');
  t.match(r.readData({ ASN: 64513 }), { class: 'elsewhere', skip: /AS 64513, this node's is 64512/ });
  t.match(r.readData({}), { class: 'invalid', skip: /no valid ASN/ });
  t.match(r.readData({ ASN: '64512' }), { class: 'invalid' });
  t.match(r.readData({ ASN: 0 }), { class: 'invalid' });
  t.match(r.readData({ ASN: 64512, RouteReflector: 'yes' }), { class: 'invalid', skip: /RouteReflector/ });
  t.match(r.readData(null), { class: 'invalid' });
});
