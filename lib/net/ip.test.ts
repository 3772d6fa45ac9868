import t from 'tap';
import { parseCidr, cidrContains, broadcast, nthIp, ipToInt, intToIp, isIPv4, parseIPNet } from './ip.js';

t.test('parse and arithmetic', async (t) => {
  t.same(parseCidr('10.244.1.7/24'), { ip: '10.244.1.0', prefix: 24, cidr: '10.244.1.0/24' });
  t.equal(broadcast('10.244.1.0/24'), '10.244.1.255');
  t.equal(nthIp('10.244.1.0/24', 1), '10.244.1.1');
  t.equal(intToIp(ipToInt('255.255.255.255')), '255.255.255.255');
  t.ok(cidrContains('10.244.0.0/16', '10.244.200.3'));
  t.notOk(cidrContains('10.244.0.0/16', '10.245.0.1'));
  t.ok(cidrContains('0.0.0.0/0', '1.2.3.4'));
  t.same(parseIPNet('10.1.2.3/24').ip, '10.1.2.3');
  t.notOk(isIPv4('256.1.1.1'));
  t.notOk(isIPv4('01.1.1.1'));
  t.throws(() => parseCidr('10.0.0.0/33'));
  t.throws(() => parseCidr('10.0.0.0'));
});
