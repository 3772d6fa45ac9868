import t from 'tap';
import { stringify } from 'yaml';
import { parseKubeconfig } from './kubeconfig.js';

const CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

function kc(o: { server?: string; ca?: string | null; token?: string; current?: string } = {}): string {
  const cluster: Record<string, unknown> = { server: o.server ?? 'https://127.0.0.1:40000' };
  if (o.ca !== null) cluster['certificate-authority-data'] = Buffer.from(o.ca ?? CA).toString('base64');
  // The shape control-plane.ts writes.
  return stringify({
    apiVersion: 'v1', kind: 'Config',
    clusters: [{ name: 'other', cluster: { server: 'https://10.0.0.1' } }, { name: 'nodenet', cluster }],
    users: [{ name: 'admin', user: { token: o.token ?? 's3cret' } }],
    contexts: [{ name: 'nodenet', context: { cluster: 'nodenet', user: 'admin', namespace: 'default' } }],
    'current-context': o.current ?? 'nodenet',
  });
}

t.test('the current context\'s server, CA and token', async (t) => {
  const a = parseKubeconfig(kc());
  t.equal(a.server.origin, 'https://127.0.0.1:40000');
  t.equal(a.caPem, CA);
  t.equal(a.token, 's3cret');
  const plain = parseKubeconfig(kc({ server: 'http://127.0.0.1:8080', ca: null }));
  t.equal(plain.caPem, null, 'plain HTTP needs no CA');
});

t.test('what is missing is named', async (t) => {
  t.throws(() => parseKubeconfig('- a list'), /not a YAML mapping/);
  t.throws(() => parseKubeconfig(kc({ current: 'elsewhere' })), /no context named "elsewhere"/);
  t.throws(() => parseKubeconfig(kc({ token: '' })), /the user has no token/);
  t.throws(() => parseKubeconfig(kc({ ca: null })), /https server without certificate-authority-data/);
  t.throws(() => parseKubeconfig(kc({ server: 'not a url' })), TypeError);
  t.throws(() => parseKubeconfig('apiVersion: v1\n'), /no current-context/);
});
