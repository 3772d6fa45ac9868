/**
 * controlplane/registry/serviceaccount-token: the `token` subresource of a ServiceAccount (POST
 * .../serviceaccounts/<name>/token, TokenRequest; `kubectl create token`), as kube-apiserver's
 * pkg/registry/core/serviceaccount/storage/token.go. Nothing is stored: the answer carries the token.
 *
 * - spec.audiences: the API server's own when empty; spec.expirationSeconds: 3600 by default, at least 600
 *   (upstream's "may not specify a duration less than 10 minutes"), and no more than
 *   --service-account-max-token-expiration when that is set.
 * - spec.boundObjectRef: a Pod, Secret or Node (in apiVersion v1) that exists; a uid given must be its uid. The token
 *   then dies with that object. A Pod-bound token also names the Pod's node.
 * - A missing ServiceAccount is a 404; a bad request a 422 in upstream's words on TokenRequest.
 */
import { arr, obj, str } from '../../lib/json/loose.js';
import { apiErrors, fieldErr, type FieldError } from '../api/errors.js';
import { rfc3339 } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import type { WatchCache } from '../store/watch-cache.js';
import type { User } from '../auth/authz.js';
import { DEFAULT_EXPIRATION_SECONDS, MIN_EXPIRATION_SECONDS, type ObjectRef, type ServiceAccountTokens } from '../auth/sa-token.js';

const SA = RESOURCES.find((r) => r.resource === 'serviceaccounts')!;
const TOKEN_REQUEST = { resource: 'serviceaccounts/token', group: 'authentication.k8s.io', kind: 'TokenRequest' } as const;

export interface TokenRequestDeps {
  readonly cache: WatchCache;
  readonly tokens: ServiceAccountTokens;
  /** --service-account-max-token-expiration, seconds; undefined: no cap. */
  readonly maxExpirationSeconds?: number | undefined;
}

const keyOf = (kind: ObjectRef['kind'], namespace: string, name: string) =>
  kind === 'Pod' ? `pods/${namespace}/${name}` : kind === 'Secret' ? `secrets/${namespace}/${name}` : `nodes//${name}`;

/** The answered TokenRequest (code 201). */
export async function requestToken(deps: TokenRequestDeps, namespace: string, name: string, body: unknown, user?: User): Promise<Record<string, unknown>> {
  const b = obj(body) ?? {};
  if (b['kind'] !== undefined && b['kind'] !== 'TokenRequest') throw apiErrors.badRequest(`the kind in the data (${String(b['kind'])}) does not match the expected kind (TokenRequest)`);
  await deps.cache.fresh();
  const sa = deps.cache.get(`serviceaccounts/${namespace}/${name}`);
  if (!sa) throw apiErrors.notFound(SA, name);
  const spec = obj(b['spec']) ?? {};
  const errs: FieldError[] = [];
  const audiences = arr(spec['audiences']).filter((a): a is string => typeof a === 'string');
  let seconds = spec['expirationSeconds'] === undefined || spec['expirationSeconds'] === null ? DEFAULT_EXPIRATION_SECONDS : Number(spec['expirationSeconds']);
  if (!Number.isInteger(seconds)) errs.push(fieldErr.invalid('spec.expirationSeconds', spec['expirationSeconds'], 'must be an integer'));
  else if (seconds < MIN_EXPIRATION_SECONDS) errs.push(fieldErr.invalid('spec.expirationSeconds', seconds, 'may not specify a duration less than 10 minutes'));
  else if (seconds > 2 ** 32) errs.push(fieldErr.tooLong('spec.expirationSeconds', 2 ** 32));
  const ref = obj(spec['boundObjectRef']);
  let bound: ObjectRef | undefined;
  let node: { name: string; uid: string } | undefined;
  if (ref) {
    const kind = str(ref['kind']) ?? '';
    const refName = str(ref['name']) ?? '';
    const apiVersion = str(ref['apiVersion']) ?? 'v1';
    if (kind !== 'Pod' && kind !== 'Secret' && kind !== 'Node') errs.push(fieldErr.notSupported('spec.boundObjectRef.kind', kind, ['Pod', 'Node', 'Secret']));
    else if (apiVersion !== 'v1') errs.push(fieldErr.invalid('spec.boundObjectRef.apiVersion', apiVersion, 'must be v1'));
    else if (!refName) errs.push(fieldErr.required('spec.boundObjectRef.name'));
    else {
      const o = deps.cache.get(keyOf(kind, namespace, refName));
      if (!o) throw apiErrors.notFound({ resource: `${kind.toLowerCase()}s`, group: '', kind }, refName);
      const uid = String(o.object.metadata?.['uid'] ?? '');
      const asked = str(ref['uid']);
      if (asked && asked !== uid) throw apiErrors.conflict(TOKEN_REQUEST, name, `the UID in the bound object reference (${asked}) does not match the UID in record. The object might have been deleted and then recreated`);
      bound = { kind, name: refName, uid };
      if (kind === 'Pod') {
        const nodeName = str(obj(o.object['spec'])?.['nodeName']);
        const n = nodeName ? deps.cache.get(`nodes//${nodeName}`) : undefined;
        if (n) node = { name: nodeName!, uid: String(n.object.metadata?.['uid'] ?? '') };
      }
    }
  }
  if (errs.length) throw apiErrors.invalid(TOKEN_REQUEST, name, errs);
  // NodeRestriction's part: a node asks only for a token bound to a Pod on itself that runs as this ServiceAccount.
  if (user?.node) {
    if (bound?.kind !== 'Pod') throw apiErrors.forbiddenWhy(TOKEN_REQUEST, name, 'node requested token not bound to a pod');
    const pod = deps.cache.get(`pods/${namespace}/${bound.name}`)!;
    const spec = obj(pod.object['spec']) ?? {};
    if (str(spec['nodeName']) !== user.node) throw apiErrors.forbiddenWhy(TOKEN_REQUEST, name, 'node requested token bound to a pod scheduled on a different node');
    if ((str(spec['serviceAccountName']) || 'default') !== name) throw apiErrors.forbiddenWhy(TOKEN_REQUEST, name, `node requested token for a service account the pod does not use`);
  }
  if (deps.maxExpirationSeconds !== undefined && seconds > deps.maxExpirationSeconds) seconds = deps.maxExpirationSeconds;
  const t = deps.tokens.issue({ namespace, name, uid: String(sa.object.metadata?.['uid'] ?? ''), audiences, expirationSeconds: seconds, bound, node });
  const outSpec: Record<string, unknown> = { audiences: audiences.length ? audiences : [...deps.tokens.apiAudiences], expirationSeconds: seconds };
  if (ref) outSpec['boundObjectRef'] = ref;
  return {
    kind: 'TokenRequest', apiVersion: 'authentication.k8s.io/v1',
    metadata: { name, namespace, creationTimestamp: null },
    spec: outSpec,
    status: { token: t.token, expirationTimestamp: rfc3339(t.expiresAtMs) },
  };
}
