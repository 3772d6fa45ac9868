import t from 'tap';
import { TokenManager, type IssuedToken, type TokenRequestSpec } from './token-manager.js';

const T0 = Date.parse('2030-01-01T00:00:00Z');
const req = (uid = 'u1', exp = 3607): TokenRequestSpec => ({ serviceAccount: 'default', namespace: 'app', audiences: [], expirationSeconds: exp, pod: { name: 'p', uid } });

function setup(grant = (r: TokenRequestSpec) => r.expirationSeconds) {
  let now = T0;
  let n = 0;
  const fetched: number[] = [];
  let fail: Error | null = null;
  const errors: string[] = [];
  const m = new TokenManager({
    now: () => now,
    random: () => 0,
    onRefreshError: (_k, e) => errors.push(String(e)),
    fetch: async (r): Promise<IssuedToken> => {
      fetched.push(now);
      if (fail) throw fail;
      const s = grant(r);
      return { token: `tok-${++n}`, expiresAt: now + s * 1000, expirationSeconds: s };
    },
  });
  return { m, fetched, errors, at: (ms: number) => { now = T0 + ms; }, fail: (e: Error | null) => { fail = e; } };
}

t.test('a token is cached and refreshed once 80% of its lifetime has passed', async (t) => {
  const s = setup();
  t.equal(await s.m.get(req()), 'tok-1');
  t.equal(await s.m.get(req()), 'tok-1', 'cached');
  const refresh = TokenManager.refreshTime({ token: '', expiresAt: T0 + 3607_000, expirationSeconds: 3607 });
  t.equal(refresh, T0 + 3607_000 - 721_000, '80% of 3607 s: 20% is 721 s (integer seconds)');
  t.equal(s.m.refreshAt('u1'), refresh);
  s.at(refresh - T0 - 1);
  t.equal(await s.m.get(req()), 'tok-1', 'not before');
  s.at(refresh - T0);
  t.equal(await s.m.get(req()), 'tok-2', 'refreshed at 80%');
  t.same(s.fetched.length, 2);
  t.equal(await s.m.get(req('u2')), 'tok-3', 'another Pod: its own token');
  s.m.forget('u1');
  t.equal(s.m.refreshAt('u1'), null, 'forgotten with its Pod');
  t.equal(s.m.size, 1);
});

t.test('a long-lived token is refreshed after 24 h; a token issued in the future at once', async (t) => {
  const s = setup();
  await s.m.get(req('u1', 7 * 24 * 3600));
  t.equal(s.m.refreshAt('u1'), T0 + 24 * 3600_000, '24 h, not 80% of a week');
  const f = setup();
  await f.m.get(req());
  f.at(-10_000);
  t.equal(await f.m.get(req()), 'tok-2', 'the clock went back before its issue time');
});

t.test('a failed refresh keeps a valid token, and fails once it expired', async (t) => {
  const s = setup();
  await s.m.get(req());
  s.fail(new Error('503 unavailable'));
  s.at(3000_000);
  t.equal(await s.m.get(req()), 'tok-1', 'still valid: kept');
  t.equal(s.errors.length, 1, 'the failure reported');
  s.at(3608_000);
  await t.rejects(s.m.get(req()), /expired and refresh failed: 503 unavailable/);
  const none = setup();
  none.fail(new Error('403 forbidden'));
  await t.rejects(none.m.get(req()), /^failed to fetch token: 403 forbidden$/);
  s.m.sweep();
  t.equal(s.m.size, 0, 'expired tokens swept');
});
