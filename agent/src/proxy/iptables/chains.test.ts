import t from 'tap';
import { NodenetError } from '../../../../lib/errors/errors.js';
import { endpointChain, fixedChains, hash16, isOwnedChain, isServiceChain, servicePortChain, validatePrefix } from './chains.js';

t.test('chain names are kube-proxy’s (vectors from its proxier_test.go)', async (t) => {
  t.equal(servicePortChain('KUBE', 'SVC', 'ns1/svc1:p80', 'TCP'), 'KUBE-SVC-XPGD46QRK7WJZT7O');
  t.equal(servicePortChain('KUBE', 'EXT', 'ns2/svc2:p80', 'TCP'), 'KUBE-EXT-GNZBNJ2PO5MGZ6GT');
  t.equal(servicePortChain('KUBE', 'FW', 'ns5/svc5:p80', 'TCP'), 'KUBE-FW-NUKIZ6OKUXPJNT4C');
  t.equal(servicePortChain('KUBE', 'SVL', 'ns2/svc2:p80', 'TCP'), 'KUBE-SVL-GNZBNJ2PO5MGZ6GT', 'SVL shares the port hash');
  t.equal(endpointChain('KUBE', 'ns1/svc1:p80', 'TCP', '10.180.0.1:80'), 'KUBE-SEP-SXIVWICOYRO3J4NJ');
  t.equal(endpointChain('KUBE', 'ns4/svc4:p80', 'TCP', '10.180.0.5:80'), 'KUBE-SEP-C6EBXVWJJZMIWKLZ');
  t.equal(endpointChain('KUBE', 'ns5/svc5:p80', 'TCP', '10.180.0.3:80'), 'KUBE-SEP-I77PXRDZVX7PMWMN');
});

t.test('the hash input is spn + lowercase protocol (+ endpoint)', async (t) => {
  t.equal(servicePortChain('KUBE', 'SVC', 'ns/s:dns', 'UDP'), `KUBE-SVC-${hash16('ns/s:dnsudp')}`);
  t.not(servicePortChain('KUBE', 'SVC', 'ns/s:dns', 'UDP'), servicePortChain('KUBE', 'SVC', 'ns/s:dns', 'TCP'));
  t.equal(endpointChain('KUBE', 'ns/s', 'SCTP', '10.0.0.1:9'), `KUBE-SEP-${hash16('ns/ssctp10.0.0.1:9')}`);
  t.match(hash16('x'), /^[A-Z2-7]{16}$/);
});

t.test('the prefix is configurable and bounded so names stay within 28 chars', async (t) => {
  const c = servicePortChain('NODENET', 'SVC', 'ns1/svc1:p80', 'TCP');
  t.equal(c, 'NODENET-SVC-XPGD46QRK7WJZT7O');
  t.equal(c.length, 28);
  t.equal(fixedChains('NN').services, 'NN-SERVICES');
  t.equal(fixedChains('NN').canary, 'NN-PROXY-CANARY');
  t.equal(validatePrefix('K8S'), 'K8S');
  for (const bad of ['', 'kube', 'TOOLONGX', '1KUBE', 'KU-BE']) t.throws(() => fixedChains(bad), NodenetError, `prefix ${JSON.stringify(bad)} rejected`);
});

t.test('ownership predicates', async (t) => {
  t.ok(isServiceChain('KUBE', 'KUBE-SEP-SXIVWICOYRO3J4NJ'));
  t.ok(isServiceChain('KUBE', 'KUBE-FW-NUKIZ6OKUXPJNT4C'));
  t.notOk(isServiceChain('KUBE', 'KUBE-SERVICES'));
  t.notOk(isServiceChain('NN', 'KUBE-SVC-XPGD46QRK7WJZT7O'), 'another prefix is not ours');
  t.ok(isOwnedChain('KUBE', 'KUBE-MARK-MASQ'));
  t.ok(isOwnedChain('KUBE', 'KUBE-PROXY-CANARY'));
  t.notOk(isOwnedChain('KUBE', 'KUBE-KUBELET-CANARY'), 'kubelet chains are not ours');
  t.notOk(isOwnedChain('KUBE', 'DOCKER'));
});
