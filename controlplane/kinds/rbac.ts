/**
 * controlplane/kinds/rbac: Roles, ClusterRoles, RoleBindings and ClusterRoleBindings (rbac.authorization.k8s.io/v1),
 * as pkg/apis/rbac/validation and pkg/apis/rbac/v1/defaults.go. Pure.
 *
 * Kept: names are path segments (ValidateRBACName); a rule needs verbs; a resource rule needs apiGroups and
 * resources; a non-resource rule has no apiGroups or resources and is refused in a (namespaced) Role; an
 * aggregationRule needs a selector, each a valid label selector; roleRef's apiGroup (defaulted to
 * rbac.authorization.k8s.io), its kind (Role or ClusterRole; ClusterRole only in a ClusterRoleBinding) and name;
 * roleRef cannot change; subjects: User and Group in rbac.authorization.k8s.io (defaulted), ServiceAccount in ""
 * with a valid name and, in a ClusterRoleBinding, a namespace.
 * Left out: nothing a client can reach.
 */
import { deepEqual } from '../../lib/reconcile/deep-equal.js';
import { fieldErr, type FieldError } from '../api/errors.js';
import { labelSelectorRequirements, SelectorError } from '../api/selectors.js';
import { arr, nameProblems, obj, str, type O } from './common.js';
import { plain, type Strategy } from './strategy.js';

const GROUP = 'rbac.authorization.k8s.io';

function validateRule(v: unknown, path: string, namespaced: boolean): FieldError[] {
  const r = obj(v) ?? {};
  const errs: FieldError[] = [];
  const len = (k: string) => arr(r[k]).length;
  if (len('verbs') === 0) errs.push(fieldErr.required(`${path}.verbs`, 'verbs must contain at least one value'));
  if (len('nonResourceURLs') > 0) {
    if (namespaced) errs.push(fieldErr.invalid(`${path}.nonResourceURLs`, r['nonResourceURLs'], 'namespaced rules cannot apply to non-resource URLs'));
    if (len('apiGroups') > 0 || len('resources') > 0) errs.push(fieldErr.invalid(`${path}.nonResourceURLs`, r['nonResourceURLs'], 'rules cannot apply to both regular resources and non-resource URLs'));
    return errs;
  }
  if (len('apiGroups') === 0) errs.push(fieldErr.required(`${path}.apiGroups`, 'resource rules must supply at least one api group'));
  if (len('resources') === 0) errs.push(fieldErr.required(`${path}.resources`, 'resource rules must supply at least one resource'));
  return errs;
}

const validateRules = (o: O, namespaced: boolean): FieldError[] => arr(o['rules']).flatMap((r, i) => validateRule(r, `rules[${i}]`, namespaced));

function validateSubject(v: unknown, path: string, namespaced: boolean): FieldError[] {
  const s = obj(v) ?? {};
  const errs: FieldError[] = [];
  const name = str(s['name']) ?? '';
  const group = str(s['apiGroup']) ?? '';
  if (!name) errs.push(fieldErr.required(`${path}.name`));
  switch (s['kind']) {
    case 'ServiceAccount':
      if (name) for (const p of nameProblems('subdomain', name)) errs.push(fieldErr.invalid(`${path}.name`, name, p));
      if (group) errs.push(fieldErr.notSupported(`${path}.apiGroup`, group, ['']));
      if (!namespaced && !str(s['namespace'])) errs.push(fieldErr.required(`${path}.namespace`));
      break;
    case 'User':
    case 'Group':
      if (group !== GROUP) errs.push(fieldErr.notSupported(`${path}.apiGroup`, group, [GROUP]));
      break;
    default:
      errs.push(fieldErr.notSupported(`${path}.kind`, s['kind'] ?? '', ['ServiceAccount', 'User', 'Group']));
  }
  return errs;
}

function defaultBinding(o: O): void {
  const ref = obj(o['roleRef']);
  if (ref && !str(ref['apiGroup'])) ref['apiGroup'] = GROUP;
  for (const s of arr(o['subjects'])) {
    const sub = obj(s);
    if (sub && !str(sub['apiGroup']) && (sub['kind'] === 'User' || sub['kind'] === 'Group')) sub['apiGroup'] = GROUP;
  }
}

function validateBinding(o: O, old: O | null, cluster: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const ref = obj(o['roleRef']) ?? {};
  const group = str(ref['apiGroup']) ?? '';
  if (group !== GROUP) errs.push(fieldErr.notSupported('roleRef.apiGroup', group, [GROUP]));
  const kinds = cluster ? ['ClusterRole'] : ['Role', 'ClusterRole'];
  if (!kinds.includes(String(ref['kind'] ?? ''))) errs.push(fieldErr.notSupported('roleRef.kind', ref['kind'] ?? '', kinds));
  const name = str(ref['name']) ?? '';
  if (!name) errs.push(fieldErr.required('roleRef.name'));
  else for (const p of nameProblems('path', name)) errs.push(fieldErr.invalid('roleRef.name', name, p));
  arr(o['subjects']).forEach((s, i) => errs.push(...validateSubject(s, `subjects[${i}]`, !cluster)));
  if (old && !deepEqual(o['roleRef'], old['roleRef'])) errs.push(fieldErr.invalid('roleRef', o['roleRef'], 'cannot change roleRef'));
  return errs;
}

export const roleStrategy: Strategy = { ...plain('path'), validate: (o) => validateRules(o, true) };

export const clusterRoleStrategy: Strategy = {
  ...plain('path'),
  validate(o) {
    const errs = validateRules(o, false);
    const agg = o['aggregationRule'];
    if (agg !== undefined && agg !== null) {
      const sels = arr(obj(agg)?.['clusterRoleSelectors']);
      if (!sels.length) errs.push(fieldErr.required('aggregationRule.clusterRoleSelectors', 'at least one clusterRoleSelector required if aggregationRule is non-nil'));
      sels.forEach((s, i) => {
        try {
          labelSelectorRequirements((obj(s) ?? {}) as Parameters<typeof labelSelectorRequirements>[0]);
        } catch (e) {
          if (!(e instanceof SelectorError)) throw e;
          errs.push(fieldErr.invalid(`aggregationRule.clusterRoleSelectors[${i}]`, s, e.message));
        }
      });
    }
    return errs;
  },
};

export const roleBindingStrategy: Strategy = { ...plain('path'), defaults: defaultBinding, validate: (o, old) => validateBinding(o, old, false) };
export const clusterRoleBindingStrategy: Strategy = { ...plain('path'), defaults: defaultBinding, validate: (o, old) => validateBinding(o, old, true) };
