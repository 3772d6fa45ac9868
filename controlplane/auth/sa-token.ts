/**
 * controlplane/auth/sa-token: ServiceAccount tokens, as kube-apiserver issues them for TokenRequest
 * (pkg/serviceaccount/claims.go, jwt.go) and verifies them (its service-account token authenticator).
 *
 * - A token is a JWT signed RS256 with the cluster's service-account key (`pki/sa.key`, kubeadm's name; every API
 *   server of a cluster holds the same one, so each verifies what another issued). The header's `kid` is the
 *   SHA-256 of the public key's DER, base64url, as upstream's.
 * - Claims: iss (--service-account-issuer, `https://kubernetes.default.svc.cluster.local` by default), sub
 *   `system:serviceaccount:<ns>:<name>`, aud (the request's audiences, else the API server's own: the issuer), iat,
 *   nbf, exp, jti, and `kubernetes.io` with the namespace, the ServiceAccount's name and uid, and the object the token
 *   is bound to (a Pod, with its node, a Secret or a Node).
 * - Verified: the signature, the issuer, exp and nbf (with upstream's 60 s of leeway for clocks), an audience in
 *   common with the ones wanted, the ServiceAccount still there with the same uid, and the bound object still there
 *   with the same uid and not deleted more than the leeway ago (claims.go's invalidIfDeletedBefore: a deletionTimestamp
 *   before now - 60 s). A Pod being deleted gracefully has its deletionTimestamp at the end of its grace period, so
 *   its containers' tokens still work while they stop (a leader releasing its Lease on SIGTERM); a token outliving
 *   its Pod is refused, as upstream's bound tokens are.
 * - The user: the sub, uid the ServiceAccount's, groups system:serviceaccounts, system:serviceaccounts:<ns> and
 *   system:authenticated; extra authentication.kubernetes.io/{pod-name,pod-uid,node-name,node-uid,credential-id}.
 *
 * Pure but for the crypto: the lookups and the clock are injected.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, sign, verify, type KeyObject } from 'node:crypto';
import type { User } from './authz.js';
import { SERVICE_ACCOUNT_PREFIX } from './rbac.js';

export const DEFAULT_ISSUER = 'https://kubernetes.default.svc.cluster.local';
/** TokenRequest's default and least expirationSeconds (upstream's defaults.go and validation). */
export const DEFAULT_EXPIRATION_SECONDS = 3600;
export const MIN_EXPIRATION_SECONDS = 600;
/** Upstream's leeway for iat/nbf/exp. */
const LEEWAY_S = 60;

export interface ObjectRef {
  readonly kind: 'Pod' | 'Secret' | 'Node';
  readonly name: string;
  readonly uid: string;
}

export interface IssueRequest {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly audiences: readonly string[];
  readonly expirationSeconds: number;
  readonly bound?: ObjectRef | undefined;
  /** For a Pod-bound token: the Pod's node, when it has one. */
  readonly node?: { readonly name: string; readonly uid: string } | undefined;
}

export interface Lookups {
  /** The uid of the ServiceAccount, or undefined when there is none. */
  serviceAccountUid(namespace: string, name: string): string | undefined;
  /** A bound object's uid and its deletionTimestamp (ms; absent when it is not being deleted), or undefined when there is none. */
  object(kind: ObjectRef['kind'], namespace: string, name: string): { readonly uid: string; readonly deletionTimestampMs?: number | undefined } | undefined;
}

export interface TokenIssuerOptions {
  readonly privateKeyPem: string;
  readonly issuer?: string;
  /** The API server's own audiences (--api-audiences): the issuer by default. */
  readonly apiAudiences?: readonly string[];
  readonly now: () => number;
  readonly lookups: Lookups;
}

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');

/** A new RSA key pair in PEM (PKCS#8 private, SPKI public), as kubeadm's sa.key and sa.pub. */
export function newSigningKey(): { privateKeyPem: string; publicKeyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}

type Claims = {
  iss?: unknown; sub?: unknown; aud?: unknown; exp?: unknown; nbf?: unknown; iat?: unknown; jti?: unknown;
  'kubernetes.io'?: { namespace?: unknown; serviceaccount?: { name?: unknown; uid?: unknown }; pod?: { name?: unknown; uid?: unknown }; secret?: { name?: unknown; uid?: unknown }; node?: { name?: unknown; uid?: unknown } };
};

export class ServiceAccountTokens {
  readonly issuer: string;
  readonly apiAudiences: readonly string[];
  private readonly key: KeyObject;
  private readonly pub: KeyObject;
  private readonly kid: string;

  constructor(private readonly o: TokenIssuerOptions) {
    this.issuer = o.issuer ?? DEFAULT_ISSUER;
    this.apiAudiences = o.apiAudiences?.length ? o.apiAudiences : [this.issuer];
    this.key = createPrivateKey(o.privateKeyPem);
    this.pub = createPublicKey(this.key);
    this.kid = b64url(createHash('sha256').update(this.pub.export({ type: 'spki', format: 'der' })).digest());
  }

  /** A signed token and when it expires (ms since the epoch). */
  issue(r: IssueRequest): { token: string; expiresAtMs: number } {
    const nowS = Math.floor(this.o.now() / 1000);
    const exp = nowS + r.expirationSeconds;
    const k8s: Record<string, unknown> = { namespace: r.namespace, serviceaccount: { name: r.name, uid: r.uid } };
    if (r.bound) k8s[r.bound.kind.toLowerCase()] = { name: r.bound.name, uid: r.bound.uid };
    if (r.node && r.bound?.kind === 'Pod') k8s['node'] = { name: r.node.name, uid: r.node.uid };
    const claims = {
      aud: r.audiences.length ? [...r.audiences] : [...this.apiAudiences], exp, iat: nowS, iss: this.issuer, jti: randomUUID(),
      'kubernetes.io': k8s, nbf: nowS, sub: `${SERVICE_ACCOUNT_PREFIX}${r.namespace}:${r.name}`,
    };
    const head = b64url(JSON.stringify({ alg: 'RS256', kid: this.kid }));
    const body = b64url(JSON.stringify(claims));
    const sig = sign('sha256', Buffer.from(`${head}.${body}`), this.key);
    return { token: `${head}.${body}.${b64url(sig)}`, expiresAtMs: exp * 1000 };
  }

  /** Whether a bearer token has the shape of a JWT (three base64url parts): this authenticator's to answer. */
  static looksLikeJWT(token: string): boolean {
    return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
  }

  /**
   * The user a token stands for and the audiences it was accepted for, or a reason it is refused. `wanted`: the
   * audiences the caller accepts (the API server's own when empty).
   */
  verify(token: string, wanted: readonly string[] = []): { user: User; audiences: string[] } | { error: string } {
    const parts = token.split('.');
    if (parts.length !== 3) return { error: 'not a JWT' };
    let header: { alg?: unknown };
    let c: Claims;
    try {
      header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString()) as { alg?: unknown };
      c = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString()) as Claims;
    } catch {
      return { error: 'the token does not decode' };
    }
    if (header.alg !== 'RS256') return { error: `unsupported signing algorithm ${JSON.stringify(header.alg)}` };
    if (!verify('sha256', Buffer.from(`${parts[0]}.${parts[1]}`), this.pub, Buffer.from(parts[2]!, 'base64url'))) return { error: 'invalid signature' };
    if (c.iss !== this.issuer) return { error: 'the token was issued by another issuer' };
    const nowS = this.o.now() / 1000;
    if (typeof c.exp !== 'number' || nowS > c.exp + LEEWAY_S) return { error: 'token has expired' };
    if (typeof c.nbf === 'number' && nowS < c.nbf - LEEWAY_S) return { error: 'token is not valid yet' };
    const aud = Array.isArray(c.aud) ? c.aud.filter((a): a is string => typeof a === 'string') : typeof c.aud === 'string' ? [c.aud] : [];
    const accept = wanted.length ? wanted : this.apiAudiences;
    const common = aud.filter((a) => accept.includes(a));
    if (!common.length) return { error: 'token audiences is invalid' };
    const k = c['kubernetes.io'];
    const ns = typeof k?.namespace === 'string' ? k.namespace : '';
    const saName = typeof k?.serviceaccount?.name === 'string' ? k.serviceaccount.name : '';
    const saUid = typeof k?.serviceaccount?.uid === 'string' ? k.serviceaccount.uid : '';
    if (!ns || !saName || c.sub !== `${SERVICE_ACCOUNT_PREFIX}${ns}:${saName}`) return { error: 'the token names no ServiceAccount' };
    const have = this.o.lookups.serviceAccountUid(ns, saName);
    if (have === undefined) return { error: `serviceaccounts "${saName}" not found` };
    if (have !== saUid) return { error: `the ServiceAccount's UID (${saUid}) does not match the one in record (${have})` };
    const extra: Record<string, string[]> = {};
    for (const kind of ['pod', 'secret', 'node'] as const) {
      const ref = k?.[kind];
      // A Pod-bound token names the Pod's node too: that is the Pod's, not a binding of its own.
      if (!ref || (kind === 'node' && k?.pod)) continue;
      const name = typeof ref.name === 'string' ? ref.name : '';
      const uid = typeof ref.uid === 'string' ? ref.uid : '';
      const kindName = kind === 'pod' ? 'Pod' : kind === 'secret' ? 'Secret' : 'Node';
      const o = this.o.lookups.object(kindName, kind === 'node' ? '' : ns, name);
      if (!o) return { error: `${kind}s "${name}" not found` };
      if (o.uid !== uid) return { error: `the ${kindName}'s UID (${uid}) does not match the one in record (${o.uid})` };
      // Upstream: deleted before now - leeway is invalid; a deletion still in its grace period (a future timestamp) is not.
      if (o.deletionTimestampMs !== undefined && o.deletionTimestampMs < nowS * 1000 - LEEWAY_S * 1000) return { error: `the ${kindName} "${name}" has been deleted` };
      if (kind === 'pod') {
        extra['authentication.kubernetes.io/pod-name'] = [name];
        extra['authentication.kubernetes.io/pod-uid'] = [uid];
      }
    }
    const node = k?.pod ? k.node : undefined;
    if (node && typeof node.name === 'string') {
      extra['authentication.kubernetes.io/node-name'] = [node.name];
      if (typeof node.uid === 'string') extra['authentication.kubernetes.io/node-uid'] = [node.uid];
    }
    if (typeof c.jti === 'string') extra['authentication.kubernetes.io/credential-id'] = [`JTI=${c.jti}`];
    return {
      user: { name: String(c.sub), uid: saUid, groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'], extra },
      audiences: common,
    };
  }
}
