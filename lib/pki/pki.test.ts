import t from 'tap';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { createServer, connect } from 'node:tls';
import { issue } from './pki.js';

t.test('a CA and a serving certificate that node:crypto parses and verifies', async (t) => {
  const ca = issue({ commonName: 'nodenet-ca', isCA: true });
  const srv = issue({ commonName: 'nodenet-apiserver', hosts: ['localhost', '127.0.0.1', '192.168.77.11'], issuer: { ...ca, commonName: 'nodenet-ca' } });
  const caX = new X509Certificate(ca.certPem);
  const srvX = new X509Certificate(srv.certPem);
  t.ok(caX.ca, 'CA:true');
  t.notOk(srvX.ca);
  t.ok(caX.verify(caX.publicKey), 'the CA is self-signed');
  t.ok(srvX.verify(caX.publicKey), 'the serving cert is signed by the CA');
  t.ok(srvX.checkIssued(caX));
  t.equal(srvX.checkHost('localhost'), 'localhost');
  t.equal(srvX.checkIP('127.0.0.1'), '127.0.0.1');
  t.equal(srvX.checkIP('192.168.77.11'), '192.168.77.11');
  t.equal(srvX.checkIP('10.0.0.1'), undefined, 'an address it was not made for');
  t.match(srvX.subject, /CN=nodenet-apiserver/);
  t.match(srvX.keyUsage ?? [], ['1.3.6.1.5.5.7.3.1']);
  t.ok(new Date(srvX.validTo).getTime() > Date.now() + 3000 * 86_400_000);
  t.doesNotThrow(() => createPrivateKey(srv.keyPem));
});

t.test('TLS with it: a client that trusts only the CA connects to 127.0.0.1', async (t) => {
  const ca = issue({ commonName: 'ca', isCA: true });
  const srv = issue({ commonName: 'srv', hosts: ['127.0.0.1'], issuer: { ...ca, commonName: 'ca' } });
  const server = createServer({ cert: srv.certPem, key: srv.keyPem }, (s) => s.end('hello'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const port = (server.address() as { port: number }).port;
  const got = await new Promise<string>((resolve, reject) => {
    const c = connect({ host: '127.0.0.1', port, ca: ca.certPem }, () => undefined);
    let data = '';
    c.on('data', (d) => (data += d));
    c.on('end', () => resolve(data));
    c.on('error', reject);
  });
  t.equal(got, 'hello');
  const other = issue({ commonName: 'other', isCA: true });
  await t.rejects(
    new Promise((resolve, reject) => {
      const c = connect({ host: '127.0.0.1', port, ca: other.certPem }, () => resolve(undefined));
      c.on('error', reject);
    }),
    /self-signed|unable to verify|certificate/,
    'a client trusting another CA refuses it',
  );
});

t.test('a client certificate with several organizations: one O each, before the CN, and clientAuth', async (t) => {
  const ca = issue({ commonName: 'ca', isCA: true });
  const c = new X509Certificate(issue({ commonName: 'alice', organizations: ['system:masters', 'dev'], issuer: { certPem: ca.certPem, keyPem: ca.keyPem, commonName: 'ca' } }).certPem);
  t.equal(c.subject, 'O=system:masters\nO=dev\nCN=alice');
  t.same(c.keyUsage, ['1.3.6.1.5.5.7.3.2'], 'extended key usage: client authentication');
});
