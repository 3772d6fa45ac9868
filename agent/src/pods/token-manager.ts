/**
 * pods/token-manager: ServiceAccount tokens for the Pods' projected
 * volumes, as the kubelet's token manager (pkg/kubelet/token) keeps them.
 *
 * A token is asked through TokenRequest (serviceaccounts/<sa>/token, bound
 * to the Pod by name and uid) and cached by ServiceAccount, namespace,
 * audiences, expirationSeconds and bound object. The cached one is used
 * until it needs a refresh: once 80% of its lifetime has passed (less a
 * jitter of up to 10 s), once it is older than 24 h, or when the clock is
 * before its issue time (a leap). A refresh that fails keeps the old token
 * while it is still valid (logged); an expired one is an error. Entries go
 * with their Pod (forget) and once expired (sweep). refreshAt tells the
 * kubelet when to look again. Clock and randomness are injected.
 */

export interface TokenRequestSpec {
  readonly serviceAccount: string;
  readonly namespace: string;
  readonly audiences: readonly string[];
  readonly expirationSeconds: number;
  readonly pod: { readonly name: string; readonly uid: string };
}

export interface IssuedToken {
  readonly token: string;
  /** ms since the epoch. */
  readonly expiresAt: number;
  /** The lifetime the server granted (its spec.expirationSeconds), seconds. */
  readonly expirationSeconds: number;
}

/** Asks the API server for a token (kubelet-api.ts's requestToken). */
export type TokenFetcher = (req: TokenRequestSpec) => Promise<IssuedToken>;

const MAX_TTL_MS = 24 * 3600 * 1000;
const MAX_JITTER_S = 10;

export class TokenManager {
  private readonly cache = new Map<string, { req: TokenRequestSpec; tok: IssuedToken; jitterMs: number }>();

  constructor(private readonly o: { readonly fetch: TokenFetcher; readonly now: () => number; readonly random?: () => number; readonly onRefreshError?: (key: string, e: unknown) => void }) {}

  static key(r: TokenRequestSpec): string {
    return JSON.stringify([r.serviceAccount, r.namespace, r.audiences, r.expirationSeconds, r.pod.name, r.pod.uid]);
  }

  /** The token for `req`: cached, or fetched when there is none or it needs a refresh. @throws when none can be had */
  async get(req: TokenRequestSpec): Promise<string> {
    const key = TokenManager.key(req);
    const cur = this.cache.get(key);
    if (cur && !this.requiresRefresh(cur.tok, cur.jitterMs)) return cur.tok.token;
    let tok: IssuedToken;
    try {
      tok = await this.o.fetch(req);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      if (!cur) throw new Error(`failed to fetch token: ${msg}`);
      if (this.o.now() > cur.tok.expiresAt) throw new Error(`token ${key} expired and refresh failed: ${msg}`);
      this.o.onRefreshError?.(key, e);
      return cur.tok.token;
    }
    this.cache.set(key, { req, tok, jitterMs: Math.floor((this.o.random ?? Math.random)() * MAX_JITTER_S) * 1000 });
    return tok.token;
  }

  /** requiresRefresh: older than 24 h, within the last 20% of its lifetime, or issued in the future. Jitter in ms. */
  requiresRefresh(t: IssuedToken, jitterMs = 0): boolean {
    return this.o.now() >= TokenManager.refreshTime(t, jitterMs) || this.o.now() < t.expiresAt - t.expirationSeconds * 1000;
  }

  /** When a token needs its refresh (ms): 80% of its lifetime, at most 24 h, less the jitter. */
  static refreshTime(t: IssuedToken, jitterMs = 0): number {
    const iat = t.expiresAt - t.expirationSeconds * 1000;
    return Math.min(iat + MAX_TTL_MS - jitterMs, t.expiresAt - Math.floor((t.expirationSeconds * 20) / 100) * 1000 - jitterMs);
  }

  /** When the cached tokens of the Pod `uid` need a refresh (ms), or null when it has none. */
  refreshAt(uid: string): number | null {
    let at: number | null = null;
    for (const e of this.cache.values()) {
      if (e.req.pod.uid !== uid) continue;
      const t = TokenManager.refreshTime(e.tok, e.jitterMs);
      at = at === null ? t : Math.min(at, t);
    }
    return at;
  }

  /** Forgets the Pod's tokens (DeleteServiceAccountToken). */
  forget(uid: string): void {
    for (const [k, e] of this.cache) if (e.req.pod.uid === uid) this.cache.delete(k);
  }

  /** Drops expired tokens (the manager's cleanup). */
  sweep(): void {
    for (const [k, e] of this.cache) if (this.o.now() > e.tok.expiresAt) this.cache.delete(k);
  }

  get size(): number {
    return this.cache.size;
  }
}
