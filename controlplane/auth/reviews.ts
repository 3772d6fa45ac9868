/**
 * controlplane/auth/reviews: the create-only review kinds, answered from the request and never stored, as
 * kube-apiserver's authorization.k8s.io and authentication.k8s.io registries do (pkg/registry/authorization/*,
 * pkg/registry/authentication/*). Pure: the body and the requester in, the answered object out.
 *
 * - SelfSubjectAccessReview (`kubectl auth can-i`): may the requester do this?
 * - SelfSubjectRulesReview (`kubectl auth can-i --list`): what may the requester do in a namespace? `incomplete`
 *   when an authorizer in the chain cannot list its rules (the Node authorizer).
 * - SubjectAccessReview / LocalSubjectAccessReview (for admins and delegating servers): may that user do this?
 *   A LocalSubjectAccessReview's namespace is the request's.
 * - SelfSubjectReview (`kubectl auth whoami`): who am I, as the server sees me (after impersonation).
 * - TokenReview: who does this token stand for (through the server's token authenticators).
 *
 * Validation is upstream's: exactly one of resourceAttributes and nonResourceAttributes, a user or a group for a
 * SubjectAccessReview, a token for a TokenReview; each failure a 422 in upstream's words.
 */
import { apiErrors, fieldErr, type FieldError } from '../api/errors.js';
import type { Resource } from '../api/resources.js';
import { arr, obj, str } from '../../lib/json/loose.js';
import type { Authorizer, PolicyRule, RequestAttributes, UserInfo } from './rbac.js';

type O = Record<string, unknown>;

export interface ReviewDeps {
  readonly authorizer: Authorizer;
  /** The token authenticators (bearer tokens, ServiceAccount tokens), for TokenReview. */
  authenticateToken?(token: string, audiences: readonly string[]): { user: UserInfo; audiences: readonly string[] } | null;
}

function userInfoJSON(u: UserInfo): O {
  const out: O = { username: u.name, groups: [...u.groups] };
  if (u.uid) out['uid'] = u.uid;
  if (u.extra && Object.keys(u.extra).length) out['extra'] = Object.fromEntries(Object.entries(u.extra).map(([k, v]) => [k, [...v]]));
  return out;
}

function attributesOf(r: Resource, spec: O, user: UserInfo, requestNamespace: string | null): RequestAttributes {
  const ra = obj(spec['resourceAttributes']);
  const na = obj(spec['nonResourceAttributes']);
  const errs: FieldError[] = [];
  if ((ra ? 1 : 0) + (na ? 1 : 0) !== 1) errs.push(fieldErr.invalid('spec.resourceAttributes', ra ?? null, 'exactly one of nonResourceAttributes or resourceAttributes must be specified'));
  if (requestNamespace !== null && ra && (str(ra['namespace']) ?? '') !== requestNamespace) {
    errs.push(fieldErr.invalid('spec.resourceAttributes.namespace', str(ra['namespace']) ?? '', 'must match metadata.namespace'));
  }
  if (errs.length) throw apiErrors.invalid(r, '', errs);
  if (ra) {
    return {
      user, verb: str(ra['verb']) ?? '', resourceRequest: true,
      apiGroup: str(ra['group']) ?? '', resource: str(ra['resource']) ?? '', subresource: str(ra['subresource']) ?? '',
      namespace: str(ra['namespace']) ?? '', name: str(ra['name']) ?? '',
    };
  }
  return { user, verb: str(na!['verb']) ?? '', resourceRequest: false, path: str(na!['path']) ?? '' };
}

function accessStatus(authorizer: Authorizer, a: RequestAttributes): O {
  const d = authorizer.authorize(a);
  const status: O = { allowed: d.decision === 'allow' };
  if (d.decision === 'deny') status['denied'] = true;
  if (d.reason) status['reason'] = d.reason;
  return status;
}

function answered(body: O, status: O): O {
  const meta = { ...(obj(body['metadata']) ?? {}) };
  return { ...body, metadata: meta, status };
}

function rulesStatus(rules: readonly PolicyRule[], incomplete: boolean, errors: readonly string[]): O {
  const resourceRules: O[] = [];
  const nonResourceRules: O[] = [];
  for (const r of rules) {
    if ((r.resources ?? []).length) {
      const x: O = { verbs: [...r.verbs], apiGroups: [...(r.apiGroups ?? [])], resources: [...r.resources!] };
      if ((r.resourceNames ?? []).length) x['resourceNames'] = [...r.resourceNames!];
      resourceRules.push(x);
    }
    if ((r.nonResourceURLs ?? []).length) nonResourceRules.push({ verbs: [...r.verbs], nonResourceURLs: [...r.nonResourceURLs!] });
  }
  const s: O = { resourceRules, nonResourceRules, incomplete };
  if (errors.length) s['evaluationError'] = errors.join(', ');
  return s;
}

/** The answered review for a create of `r` (a review kind) by `requester`. `namespace`: the request's ('' if none). */
export function answerReview(deps: ReviewDeps, r: Resource, body: unknown, requester: UserInfo, namespace: string): O {
  const b = obj(body);
  if (!b) throw apiErrors.badRequest(`the body of a ${r.kind} must be an object`);
  const spec = obj(b['spec']) ?? {};
  switch (r.resource) {
    case 'selfsubjectaccessreviews':
      return answered(b, accessStatus(deps.authorizer, attributesOf(r, spec, requester, null)));
    case 'localsubjectaccessreviews':
    case 'subjectaccessreviews': {
      const user = str(spec['user']) ?? '';
      const groups = arr(spec['groups']).filter((g): g is string => typeof g === 'string');
      if (!user && !groups.length) throw apiErrors.invalid(r, '', [fieldErr.invalid('spec.user', user, 'at least one of user or group must be specified')]);
      const extra: Record<string, string[]> = {};
      for (const [k, v] of Object.entries(obj(spec['extra']) ?? {})) extra[k] = arr(v).filter((x): x is string => typeof x === 'string');
      const subject: UserInfo = { name: user, groups, ...(str(spec['uid']) ? { uid: str(spec['uid']) } : {}), extra };
      return answered(b, accessStatus(deps.authorizer, attributesOf(r, spec, subject, r.resource === 'localsubjectaccessreviews' ? namespace : null)));
    }
    case 'selfsubjectrulesreviews': {
      const ns = str(spec['namespace']) ?? '';
      const rf = deps.authorizer.rulesFor?.(requester, ns) ?? { rules: [], incomplete: true, errors: [] };
      return answered(b, rulesStatus(rf.rules, rf.incomplete, rf.errors));
    }
    case 'selfsubjectreviews':
      return answered(b, { userInfo: userInfoJSON(requester) });
    case 'tokenreviews': {
      const token = str(spec['token']) ?? '';
      if (!token) throw apiErrors.invalid(r, '', [fieldErr.required('spec.token', 'token must be specified')]);
      const audiences = arr(spec['audiences']).filter((a): a is string => typeof a === 'string');
      const who = deps.authenticateToken?.(token, audiences) ?? null;
      if (!who) return answered(b, { authenticated: false, user: {}, error: '[invalid bearer token, token lookup failed]' });
      return answered(b, { authenticated: true, user: userInfoJSON(who.user), audiences: [...who.audiences] });
    }
  }
  throw apiErrors.methodNotAllowed();
}
