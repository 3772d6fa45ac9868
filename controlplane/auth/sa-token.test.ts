/**
 * ServiceAccount tokens (pure but for the crypto): the claims upstream writes, and every reason a token is refused:
 * another audience, expired, not yet valid, forged (another key, an edited payload), its ServiceAccount gone or made
 * again (another uid), the object it is bound to gone, remade or deleted more than the leeway ago (not while in its grace period).
 */
import t from 'tap';
import { newSigningKey, ServiceAccountTokens, type Lookups } from './sa-token.js';

const key = newSigningKey();
let now = Date.parse('2026-12-05T12:00:00Z');
const sas = new Map<string, string>([['default/app', 'sa-uid-1']]);
const objects = new Map<string, { uid: string; deletionTimestampMs?: number }>([['Pod/default/p1', { uid: 'pod-uid-1' }]]);
const lookups: Lookups = {
  serviceAccountUid: (ns, name) => sas.get(`${ns}/${name}`),
  object: (kind, ns, name) => objects.get(`${kind}/${ns}/${name}`),
};
const tokens = new ServiceAccountTokens({ privateKeyPem: key.privateKeyPem, now: () => now, lookups });
const claims = (tok: string) => JSON.parse(Buffer.from(tok.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;

t.test('claims as upstream writes them; the user a token stands for', async (t) => {
  const { token, expiresAtMs } = tokens.issue({ namespace: 'default', name: 'app', uid: 'sa-uid-1', audiences: [], expirationSeconds: 3600, bound: { kind: 'Pod', name: 'p1', uid: 'pod-uid-1' }, node: { name: 'n1', uid: 'node-uid' } });
  t.equal(expiresAtMs, now + 3_600_000);
  const c = claims(token);
  t.same(c['aud'], ['https://kubernetes.default.svc.cluster.local'], 'the API server\'s own audience by default');
  t.equal(c['iss'], 'https://kubernetes.default.svc.cluster.local');
  t.equal(c['sub'], 'system:serviceaccount:default:app');
  t.same(c['kubernetes.io'], { namespace: 'default', serviceaccount: { name: 'app', uid: 'sa-uid-1' }, pod: { name: 'p1', uid: 'pod-uid-1' }, node: { name: 'n1', uid: 'node-uid' } });
  t.equal(c['exp'], c['iat'] as number + 3600);
  const header = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as Record<string, unknown>;
  t.equal(header['alg'], 'RS256');
  t.match(header['kid'], /^[A-Za-z0-9_-]{43}$/);
  const v = tokens.verify(token);
  if ('error' in v) throw new Error(v.error);
  t.same(v.user.name, 'system:serviceaccount:default:app');
  t.same(v.user.groups, ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated']);
  t.equal(v.user.uid, 'sa-uid-1');
  t.same(v.user.extra?.['authentication.kubernetes.io/pod-name'], ['p1']);
  t.same(v.user.extra?.['authentication.kubernetes.io/node-name'], ['n1']);
  t.match(v.user.extra?.['authentication.kubernetes.io/credential-id'], [/^JTI=/]);
});

t.test('refused: another audience, expired, not yet valid, forged', async (t) => {
  const start = now;
  const { token } = tokens.issue({ namespace: 'default', name: 'app', uid: 'sa-uid-1', audiences: ['vault'], expirationSeconds: 600 });
  t.match(tokens.verify(token), { error: 'token audiences is invalid' }, 'the API server does not take a vault token');
  t.notMatch(tokens.verify(token, ['vault']), { error: String }, 'a TokenReview for vault does');
  now = start + 600_000 + 59_000;
  t.notMatch(tokens.verify(token, ['vault']), { error: String }, 'within the leeway');
  now = start + 600_000 + 61_000;
  t.match(tokens.verify(token, ['vault']), { error: 'token has expired' });
  now = start - 120_000;
  t.match(tokens.verify(token, ['vault']), { error: 'token is not valid yet' });
  now = start;
  const other = new ServiceAccountTokens({ privateKeyPem: newSigningKey().privateKeyPem, now: () => now, lookups });
  t.match(tokens.verify(other.issue({ namespace: 'default', name: 'app', uid: 'sa-uid-1', audiences: [], expirationSeconds: 600 }).token), { error: 'invalid signature' }, 'another cluster\'s key');
  const [h, p, s] = tokens.issue({ namespace: 'default', name: 'app', uid: 'sa-uid-1', audiences: [], expirationSeconds: 600 }).token.split('.');
  const edited = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), sub: 'system:serviceaccount:kube-system:admin' })).toString('base64url');
  t.match(tokens.verify(`${h}.${edited}.${s}`), { error: 'invalid signature' }, 'an edited payload');
  t.match(tokens.verify(`${h}.${p}`), { error: 'not a JWT' });
  const none = Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url');
  t.match(tokens.verify(`${none}.${p}.${s}`), { error: /unsupported signing algorithm/ }, 'alg none');
});

t.test('refused when what it names is gone: the ServiceAccount, its uid, the bound Pod', async (t) => {
  const { token } = tokens.issue({ namespace: 'default', name: 'app', uid: 'sa-uid-1', audiences: [], expirationSeconds: 600, bound: { kind: 'Pod', name: 'p1', uid: 'pod-uid-1' } });
  // A graceful deletion: the deletionTimestamp is the end of the grace period. Its containers stop meanwhile (a leader
  // releasing its Lease on SIGTERM), with their token: upstream refuses it only once that is a leeway (60 s) past.
  objects.set('Pod/default/p1', { uid: 'pod-uid-1', deletionTimestampMs: now + 30_000 });
  t.notMatch(tokens.verify(token), { error: String }, 'taken during the Pod\'s grace period');
  objects.set('Pod/default/p1', { uid: 'pod-uid-1', deletionTimestampMs: now - 59_000 });
  t.notMatch(tokens.verify(token), { error: String }, 'and within the leeway after it');
  objects.set('Pod/default/p1', { uid: 'pod-uid-1', deletionTimestampMs: now - 61_000 });
  t.match(tokens.verify(token), { error: 'the Pod "p1" has been deleted' }, 'refused past the leeway');
  objects.set('Pod/default/p1', { uid: 'pod-uid-2' });
  t.match(tokens.verify(token), { error: /UID \(pod-uid-1\) does not match the one in record \(pod-uid-2\)/ }, 'a Pod of that name made again');
  objects.delete('Pod/default/p1');
  t.match(tokens.verify(token), { error: 'pods "p1" not found' });
  const unbound = tokens.issue({ namespace: 'default', name: 'app', uid: 'sa-uid-1', audiences: [], expirationSeconds: 600 }).token;
  sas.set('default/app', 'sa-uid-2');
  t.match(tokens.verify(unbound), { error: /ServiceAccount's UID \(sa-uid-1\) does not match/ });
  sas.delete('default/app');
  t.match(tokens.verify(unbound), { error: 'serviceaccounts "app" not found' });
});
