/**
 * RBAC (pure): rule matching as upstream's rbac.go and its helpers, the rule resolver's bindings and subjects, the
 * escalation check's coverage, the reviews, impersonation, the aggregation rule and the bootstrap reconciliation.
 */
import t from 'tap';
import { RESOURCES } from '../api/resources.js';
import { ApiError } from '../api/errors.js';
import { AuthorizerChain, compactRule, RbacAuthorizer, ruleAllows, uncovered, type Binding, type PolicyRule, type PolicySource, type RequestAttributes, type UserInfo } from './rbac.js';
import { escalationCheck } from './escalation.js';
import { impersonate } from './impersonation.js';
import { answerReview } from './reviews.js';
import { privilegedGroupAuthorizer, NodeAuthorizer, type User } from './authz.js';
import { aggregatedRules } from '../controllers/clusterrole-aggregation.js';
import { bootstrapObjects, reconciled, AUTOUPDATE } from './bootstrap.js';
import { podReferences } from './node-graph.js';

const alice: UserInfo = { name: 'alice', groups: ['dev', 'system:authenticated'] };
const res = (verb: string, resource: string, o: Partial<RequestAttributes> = {}): RequestAttributes => ({ user: alice, verb, resourceRequest: true, apiGroup: '', resource, namespace: 'default', name: '', ...o });
const path = (verb: string, p: string, user: UserInfo = alice): RequestAttributes => ({ user, verb, resourceRequest: false, path: p });

class Policy implements PolicySource {
  crbs: Binding[] = [];
  rbs: Binding[] = [];
  clusterRoles = new Map<string, PolicyRule[]>();
  roles = new Map<string, PolicyRule[]>();
  clusterRoleBindings() { return this.crbs; }
  roleBindings(ns: string) { return this.rbs.filter((b) => b.namespace === ns); }
  clusterRole(name: string) { return this.clusterRoles.get(name); }
  role(ns: string, name: string) { return this.roles.get(`${ns}/${name}`); }
}
const ref = (kind: 'Role' | 'ClusterRole', name: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind, name });

t.test('a rule: verbs, groups, resources with subresources, names, non-resource URLs', async (t) => {
  const r: PolicyRule = { verbs: ['get', 'list'], apiGroups: ['', 'apps'], resources: ['pods', 'deployments', 'pods/log'], resourceNames: [] };
  t.ok(ruleAllows(res('get', 'pods'), r));
  t.ok(ruleAllows(res('list', 'deployments', { apiGroup: 'apps' }), r));
  t.notOk(ruleAllows(res('delete', 'pods'), r), 'another verb');
  t.notOk(ruleAllows(res('get', 'pods', { apiGroup: 'batch' }), r), 'another group');
  t.notOk(ruleAllows(res('get', 'pods', { subresource: 'status' }), r), 'pods does not cover pods/status');
  t.ok(ruleAllows(res('get', 'pods', { subresource: 'log' }), r), 'pods/log named');
  t.ok(ruleAllows(res('update', 'deployments', { apiGroup: 'apps', subresource: 'status' }), { verbs: ['update'], apiGroups: ['apps'], resources: ['*/status'] }), '*/status');
  t.notOk(ruleAllows(res('update', 'deployments', { apiGroup: 'apps' }), { verbs: ['update'], apiGroups: ['apps'], resources: ['*/status'] }), '*/status is not the main resource');
  t.ok(ruleAllows(res('get', 'pods', { subresource: 'status' }), { verbs: ['*'], apiGroups: ['*'], resources: ['*'] }), '* covers subresources too');
  const named: PolicyRule = { verbs: ['get'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['a'] };
  t.ok(ruleAllows(res('get', 'configmaps', { name: 'a' }), named));
  t.notOk(ruleAllows(res('get', 'configmaps', { name: 'b' }), named));
  t.notOk(ruleAllows(res('get', 'configmaps'), named), 'a name-limited rule allows no unnamed request');
  const urls: PolicyRule = { verbs: ['get'], nonResourceURLs: ['/healthz', '/logs/*'] };
  t.ok(ruleAllows(path('get', '/healthz'), urls));
  t.ok(ruleAllows(path('get', '/logs/kube.log'), urls));
  t.notOk(ruleAllows(path('get', '/healthz/etcd'), urls), 'exact unless it ends in *');
  t.notOk(ruleAllows(path('post', '/healthz'), urls));
  t.notOk(ruleAllows(res('get', 'healthz'), urls), 'a URL rule allows no resource');
  t.notOk(ruleAllows(path('get', '/api'), { verbs: ['get'], apiGroups: ['*'], resources: ['*'] }), 'a resource rule allows no URL');
});

t.test('bindings: users, groups, ServiceAccounts; RoleBindings only in their namespace; a missing role grants nothing and says so', async (t) => {
  const p = new Policy();
  const z = new RbacAuthorizer(p);
  p.clusterRoles.set('view', [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] }]);
  p.roles.set('team/editor', [{ verbs: ['create'], apiGroups: [''], resources: ['configmaps'] }]);
  t.equal(z.authorize(res('list', 'pods')).decision, 'noopinion', 'nothing bound: no opinion');
  p.rbs.push({ name: 'v', namespace: 'team', roleRef: ref('ClusterRole', 'view'), subjects: [{ kind: 'User', name: 'alice' }] });
  t.equal(z.authorize(res('list', 'pods', { namespace: 'team' })).decision, 'allow', 'a RoleBinding to a ClusterRole: in its namespace');
  t.equal(z.authorize(res('list', 'pods')).decision, 'noopinion', 'not in another');
  t.equal(z.authorize(res('list', 'pods', { namespace: '' })).decision, 'noopinion', 'not cluster-wide');
  t.match(z.authorize(res('list', 'pods', { namespace: 'team' })).reason, /RBAC: allowed by RoleBinding "team\/v" of ClusterRole "view" to User "alice"/);
  p.rbs.push({ name: 'e', namespace: 'team', roleRef: ref('Role', 'editor'), subjects: [{ kind: 'Group', name: 'dev' }] });
  t.equal(z.authorize(res('create', 'configmaps', { namespace: 'team' })).decision, 'allow', 'by group');
  p.rbs.push({ name: 'sa', namespace: 'team', roleRef: ref('Role', 'editor'), subjects: [{ kind: 'ServiceAccount', name: 'bot' }] });
  const bot: UserInfo = { name: 'system:serviceaccount:team:bot', groups: ['system:serviceaccounts', 'system:authenticated'] };
  t.equal(z.authorize(res('create', 'configmaps', { namespace: 'team', user: bot })).decision, 'allow', 'a ServiceAccount subject takes the binding\'s namespace');
  t.equal(z.authorize(res('create', 'configmaps', { namespace: 'team', user: { name: 'system:serviceaccount:other:bot', groups: [] } })).decision, 'noopinion', 'not the same name in another namespace');
  p.crbs.push({ name: 'ghost', namespace: '', roleRef: ref('ClusterRole', 'nope'), subjects: [{ kind: 'User', name: 'alice' }] });
  const d = z.authorize(res('delete', 'pods'));
  t.equal(d.decision, 'noopinion');
  t.match(d.reason, /clusterrole.rbac.authorization.k8s.io "nope" not found/);
  p.clusterRoles.set('nope', [{ verbs: ['delete'], apiGroups: [''], resources: ['pods'] }]);
  t.equal(z.authorize(res('delete', 'pods')).decision, 'allow', 'the role appears: allowed (no cache of decisions)');
  const rules = z.rulesFor(alice, 'team').rules;
  t.equal(rules.length, 3, 'rulesFor: the cluster binding\'s and the namespace\'s (view, editor, nope)');
});

t.test('the chain: system:masters first, then the Node authorizer, then RBAC; no opinion everywhere is a denial', async (t) => {
  const p = new Policy();
  const graph = { boundNode: () => 'n1', referenced: (_n: string, _gr: string, _ns: string, name: string) => name === 'used' };
  const chain = new AuthorizerChain([privilegedGroupAuthorizer, new NodeAuthorizer(graph), new RbacAuthorizer(p)]);
  t.equal(chain.authorize(res('delete', 'nodes', { user: { name: 'root', groups: ['system:masters'] } })).decision, 'allow');
  const node: User = { name: 'system:node:n1', groups: ['system:nodes', 'system:authenticated'], node: 'n1' };
  t.equal(chain.authorize(res('get', 'services', { user: node })).decision, 'allow', 'a node reads Services');
  t.equal(chain.authorize(res('get', 'secrets', { user: node, name: 'used' })).decision, 'allow', 'a Secret a Pod bound to it uses');
  t.equal(chain.authorize(res('get', 'secrets', { user: node, name: 'other' })).decision, 'noopinion', 'not another Secret');
  t.equal(chain.authorize(res('list', 'secrets', { user: node })).decision, 'noopinion', 'nor the list of them');
  t.equal(chain.authorize(res('create', 'nodes', { user: node, namespace: '', createName: 'n1' })).decision, 'allow', 'registers its own Node by the create\'s name');
  t.equal(chain.authorize(res('create', 'nodes', { user: node, namespace: '', createName: 'n2' })).decision, 'noopinion', 'not another');
  p.clusterRoles.set('x', [{ verbs: ['create'], apiGroups: [''], resources: ['nodes'] }]);
  p.crbs.push({ name: 'x', namespace: '', roleRef: ref('ClusterRole', 'x'), subjects: [{ kind: 'Group', name: 'system:nodes' }] });
  t.equal(chain.authorize(res('create', 'nodes', { user: node, namespace: '', createName: 'n2' })).decision, 'allow', 'what the Node authorizer does not allow, RBAC may');
  const rr = chain.rulesFor(alice, 'default');
  t.equal(rr.incomplete, true, 'the Node and privileged authorizers cannot list rules: incomplete');
});

t.test('coverage (the escalation check): broken down per verb, group, resource and name', async (t) => {
  const own: PolicyRule[] = [
    { verbs: ['get', 'list'], apiGroups: [''], resources: ['pods', 'services'] },
    { verbs: ['update'], apiGroups: ['apps'], resources: ['*/scale'] },
    { verbs: ['get'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['a', 'b'] },
    { verbs: ['get'], nonResourceURLs: ['/logs/*'] },
  ];
  t.same(uncovered(own, [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }]), []);
  t.same(uncovered(own, [{ verbs: ['get', 'delete'], apiGroups: [''], resources: ['pods'] }]), [{ verbs: ['delete'], apiGroups: [''], resources: ['pods'] }]);
  t.same(uncovered(own, [{ verbs: ['update'], apiGroups: ['apps'], resources: ['deployments/scale'] }]), [], '*/scale covers deployments/scale');
  t.equal(uncovered(own, [{ verbs: ['update'], apiGroups: ['apps'], resources: ['deployments'] }]).length, 1);
  t.same(uncovered(own, [{ verbs: ['get'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['a'] }]), [], 'a name held');
  t.equal(uncovered(own, [{ verbs: ['get'], apiGroups: [''], resources: ['configmaps'] }]).length, 1, 'all names are not held with two');
  t.same(uncovered(own, [{ verbs: ['get'], nonResourceURLs: ['/logs/a', '/logs/*'] }]), []);
  t.equal(uncovered(own, [{ verbs: ['get'], nonResourceURLs: ['/metrics'] }]).length, 1);
  t.same(uncovered([{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }], [{ verbs: ['escalate'], apiGroups: ['x'], resources: ['y/z'] }]), [], 'a wildcard holds everything');
  t.equal(compactRule({ verbs: ['get'], apiGroups: [''], resources: ['pods'] }), '{APIGroups:[""], Resources:["pods"], Verbs:["get"]}');
});

t.test('the escalation check on roles and bindings, as upstream words it', async (t) => {
  const p = new Policy();
  const chain = new AuthorizerChain([privilegedGroupAuthorizer, new RbacAuthorizer(p)]);
  const deps = { authorizer: chain, policy: p };
  const R = (resource: string) => RESOURCES.find((r) => r.resource === resource)!;
  p.clusterRoles.set('pod-reader', [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] }]);
  p.clusterRoles.set('secret-reader', [{ verbs: ['get'], apiGroups: [''], resources: ['secrets'] }]);
  p.rbs.push({ name: 'a', namespace: 'default', roleRef: ref('ClusterRole', 'pod-reader'), subjects: [{ kind: 'User', name: 'alice' }] });
  const roleCheck = escalationCheck(deps, alice, R('roles'), 'default')!;
  const role = (rules: PolicyRule[]) => ({ metadata: { name: 'r' }, rules });
  t.doesNotThrow(() => roleCheck(role([{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }]), null), 'what she holds');
  t.throws(() => roleCheck(role([{ verbs: ['get'], apiGroups: [''], resources: ['secrets'] }]), null),
    new RegExp('roles.rbac.authorization.k8s.io "r" is forbidden: user "alice" \\(groups=\\["dev" "system:authenticated"\\]\\) is attempting to grant RBAC permissions not currently held:\\n\\{APIGroups:\\[""\\], Resources:\\["secrets"\\], Verbs:\\["get"\\]\\}'));
  const old = role([{ verbs: ['get'], apiGroups: [''], resources: ['secrets'] }]);
  t.doesNotThrow(() => roleCheck({ ...old, metadata: { name: 'r', labels: { a: 'b' } } }, old), 'an update that keeps the rules is not checked again');
  const bindCheck = escalationCheck(deps, alice, R('rolebindings'), 'default')!;
  const rb = (role: string) => ({ metadata: { name: 'b', namespace: 'default' }, roleRef: ref('ClusterRole', role), subjects: [{ kind: 'User', name: 'bob' }] });
  t.doesNotThrow(() => bindCheck(rb('pod-reader'), null), 'binding a role she holds');
  t.throws(() => bindCheck(rb('secret-reader'), null), /rolebindings.rbac.authorization.k8s.io "b" is forbidden: user "alice".*not currently held/s);
  t.throws(() => bindCheck(rb('missing'), null), /clusterroles.rbac.authorization.k8s.io "missing" not found/);
  p.clusterRoles.set('binder', [{ verbs: ['bind'], apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], resourceNames: ['secret-reader'] }]);
  p.rbs.push({ name: 'binder', namespace: 'default', roleRef: ref('ClusterRole', 'binder'), subjects: [{ kind: 'User', name: 'alice' }] });
  t.doesNotThrow(() => bindCheck(rb('secret-reader'), null), 'the bind verb on that role lets her bind it');
  const crCheck = escalationCheck(deps, alice, R('clusterroles'), '')!;
  t.throws(() => crCheck({ metadata: { name: 'agg' }, aggregationRule: { clusterRoleSelectors: [] } }, null), /must have cluster-admin privileges to use an aggregationRule/);
  t.equal(escalationCheck(deps, { name: 'root', groups: ['system:masters'] }, R('roles'), 'default'), undefined, 'system:masters are not checked');
  t.equal(escalationCheck(deps, alice, R('pods'), 'default'), undefined, 'other kinds are not checked');
  try {
    roleCheck(role([{ verbs: ['delete'], apiGroups: [''], resources: ['pods'] }]), null);
    t.fail('refused');
  } catch (e) {
    t.ok(e instanceof ApiError && e.httpStatus === 403, 'a 403');
  }
});

t.test('reviews: can-i, the rules, who am I, a review for another user, validation', async (t) => {
  const p = new Policy();
  p.clusterRoles.set('view', [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] }, { verbs: ['get'], nonResourceURLs: ['/healthz'] }]);
  p.crbs.push({ name: 'v', namespace: '', roleRef: ref('ClusterRole', 'view'), subjects: [{ kind: 'Group', name: 'dev' }] });
  const deps = { authorizer: new AuthorizerChain([privilegedGroupAuthorizer, new RbacAuthorizer(p)]) };
  const R = (resource: string) => RESOURCES.find((r) => r.resource === resource)!;
  const ssar = (ra: Record<string, unknown>) => answerReview(deps, R('selfsubjectaccessreviews'), { spec: { resourceAttributes: ra } }, alice, '');
  t.same(ssar({ verb: 'list', resource: 'pods', namespace: 'default' })['status'], { allowed: true, reason: 'RBAC: allowed by ClusterRoleBinding "v" of ClusterRole "view" to Group "dev"' });
  t.same(ssar({ verb: 'delete', resource: 'pods', namespace: 'default' })['status'], { allowed: false });
  const na = answerReview(deps, R('selfsubjectaccessreviews'), { spec: { nonResourceAttributes: { verb: 'get', path: '/healthz' } } }, alice, '');
  t.equal((na['status'] as { allowed: boolean }).allowed, true);
  t.throws(() => answerReview(deps, R('selfsubjectaccessreviews'), { spec: {} }, alice, ''), /exactly one of nonResourceAttributes or resourceAttributes must be specified/);
  const rules = answerReview(deps, R('selfsubjectrulesreviews'), { spec: { namespace: 'default' } }, alice, '')['status'] as Record<string, unknown>;
  t.same(rules['resourceRules'], [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] }]);
  t.same(rules['nonResourceRules'], [{ verbs: ['get'], nonResourceURLs: ['/healthz'] }]);
  t.equal(rules['incomplete'], true, 'the privileged authorizer lists no rules');
  t.same(answerReview(deps, R('selfsubjectreviews'), {}, alice, '')['status'], { userInfo: { username: 'alice', groups: ['dev', 'system:authenticated'] } });
  const sar = answerReview(deps, R('subjectaccessreviews'), { spec: { user: 'bob', groups: ['dev'], resourceAttributes: { verb: 'get', resource: 'pods', namespace: 'x' } } }, alice, '');
  t.equal((sar['status'] as { allowed: boolean }).allowed, true, 'bob in dev may');
  t.throws(() => answerReview(deps, R('subjectaccessreviews'), { spec: { resourceAttributes: { verb: 'get' } } }, alice, ''), /at least one of user or group must be specified/);
  t.throws(() => answerReview(deps, R('localsubjectaccessreviews'), { spec: { user: 'bob', resourceAttributes: { verb: 'get', resource: 'pods', namespace: 'other' } } }, alice, 'default'), /must match metadata.namespace/);
});

t.test('impersonation: each header authorized with the impersonate verb; the user it yields', async (t) => {
  const p = new Policy();
  const chain = new AuthorizerChain([privilegedGroupAuthorizer, new RbacAuthorizer(p)]);
  const admin: User = { name: 'root', groups: ['system:masters', 'system:authenticated'] };
  t.same(impersonate({ 'impersonate-user': ['bob'] }, admin, chain), { name: 'bob', groups: ['system:authenticated'] });
  t.same(impersonate({ 'impersonate-user': ['bob'], 'impersonate-group': ['g1', 'g2'] }, admin, chain), { name: 'bob', groups: ['g1', 'g2', 'system:authenticated'] });
  t.same(impersonate({ 'impersonate-user': ['system:serviceaccount:ns1:sa'] }, admin, chain), { name: 'system:serviceaccount:ns1:sa', groups: ['system:serviceaccounts', 'system:serviceaccounts:ns1', 'system:authenticated'] });
  t.same(impersonate({ 'impersonate-user': ['system:anonymous'] }, admin, chain).groups, ['system:unauthenticated']);
  t.same(impersonate({ 'impersonate-user': ['system:node:n1'], 'impersonate-group': ['system:nodes'] }, admin, chain), { name: 'system:node:n1', groups: ['system:nodes', 'system:authenticated'], node: 'n1' });
  t.same(impersonate({ 'impersonate-user': ['bob'], 'impersonate-extra-scopes%2Fa': ['x', 'y'] }, admin, chain).extra, { 'scopes/a': ['x', 'y'] });
  t.throws(() => impersonate({ 'impersonate-user': ['bob'] }, alice, chain), /users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope/);
  p.clusterRoles.set('imp', [{ verbs: ['impersonate'], apiGroups: [''], resources: ['users'], resourceNames: ['bob'] }]);
  p.crbs.push({ name: 'imp', namespace: '', roleRef: ref('ClusterRole', 'imp'), subjects: [{ kind: 'User', name: 'alice' }] });
  t.same(impersonate({ 'impersonate-user': ['bob'] }, alice, chain).name, 'bob', 'allowed by name');
  t.throws(() => impersonate({ 'impersonate-user': ['carol'] }, alice, chain), /users "carol" is forbidden/);
  t.throws(() => impersonate({ 'impersonate-user': ['bob'], 'impersonate-group': ['system:masters'] }, alice, chain), /groups "system:masters" is forbidden: User "alice" cannot impersonate resource "groups"/, 'a group needs its own grant');
  t.throws(() => impersonate({ 'impersonate-user': ['system:serviceaccount:kube-system:x'] }, alice, chain), /serviceaccounts "x" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "kube-system"/);
  t.throws(() => impersonate({ 'impersonate-group': ['g'] }, admin, chain), /without impersonating a user/);
});

t.test('aggregation: the rules of the matching ClusterRoles, by name, each once', async (t) => {
  const cr = (name: string, labels: Record<string, string>, rules: unknown[]) => ({ metadata: { name, labels }, rules });
  const agg = { metadata: { name: 'view' }, aggregationRule: { clusterRoleSelectors: [{ matchLabels: { 'aggregate-to-view': 'true' } }] } };
  const r1 = { verbs: ['get'], apiGroups: [''], resources: ['pods'] };
  const r2 = { verbs: ['list'], apiGroups: ['x.io'], resources: ['widgets'] };
  const all = [agg, cr('b', { 'aggregate-to-view': 'true' }, [r2, r1]), cr('a', { 'aggregate-to-view': 'true' }, [r1]), cr('c', {}, [{ verbs: ['*'] }])];
  t.same(aggregatedRules(agg, all), [r1, r2], 'a first, then b, each rule once; c not selected');
  const bad: string[] = [];
  t.same(aggregatedRules({ metadata: { name: 'v' }, aggregationRule: { clusterRoleSelectors: [{ matchExpressions: [{ key: 'k', operator: 'Near' }] }] } }, all, (w) => bad.push(w)), []);
  t.equal(bad.length, 1, 'a selector that does not parse is reported');
});

t.test('the bootstrap policy: upstream names; reconciliation adds what is missing and never removes', async (t) => {
  const { roles, bindings } = bootstrapObjects();
  const names = roles.map((r) => (r['metadata'] as { name: string }).name);
  for (const n of ['cluster-admin', 'admin', 'edit', 'view', 'system:basic-user', 'system:discovery', 'system:public-info-viewer', 'system:kube-scheduler', 'system:kube-controller-manager', 'system:node-proxier', 'system:controller:deployment-controller']) t.ok(names.includes(n), n);
  t.ok(bindings.some((b) => (b['metadata'] as { name: string }).name === 'cluster-admin' && JSON.stringify(b['subjects']).includes('system:masters')));
  const view = roles.find((r) => (r['metadata'] as { name: string }).name === 'system:basic-user')!;
  const cur = { ...view, rules: [{ verbs: ['get'], apiGroups: ['x'], resources: ['y'] }], metadata: { ...(view['metadata'] as object), labels: { mine: '1' } } };
  const next = reconciled(cur, view)!;
  t.equal((next['rules'] as unknown[]).length, 3, 'the user\'s rule kept, both bootstrap rules added back');
  t.same((next['metadata'] as { labels: Record<string, string> }).labels, { mine: '1', 'kubernetes.io/bootstrapping': 'rbac-defaults' });
  t.equal(reconciled(next, view), null, 'nothing more to add');
  t.equal(reconciled({ ...cur, metadata: { name: 'system:basic-user', annotations: { [AUTOUPDATE]: 'false' } } }, view), null, 'autoupdate "false": left alone');
});

t.test('what a Pod refers to (the Node authorizer\'s graph)', async (t) => {
  const refs = podReferences({
    imagePullSecrets: [{ name: 'pull' }],
    volumes: [{ secret: { secretName: 's1' } }, { configMap: { name: 'c1' } }, { projected: { sources: [{ secret: { name: 's2' } }, { configMap: { name: 'c2' } }] } }],
    containers: [{ env: [{ valueFrom: { secretKeyRef: { name: 's3' } } }, { valueFrom: { configMapKeyRef: { name: 'c3' } } }], envFrom: [{ secretRef: { name: 's4' } }, { configMapRef: { name: 'c4' } }] }],
  });
  t.same([...refs.secrets].sort(), ['pull', 's1', 's2', 's3', 's4']);
  t.same([...refs.configmaps].sort(), ['c1', 'c2', 'c3', 'c4']);
});

t.test('validation of the RBAC kinds, in upstream\'s words', async (t) => {
  const { STRATEGIES } = await import('../kinds/kinds.js');
  const S = (gr: string) => STRATEGIES[`${gr}.rbac.authorization.k8s.io`]!;
  const msgs = (errs: { field: string; message: string }[]) => errs.map((e) => `${e.field}: ${e.message}`);
  t.same(msgs(S('roles').validate({ rules: [{ verbs: [] , apiGroups: [''], resources: ['pods'] }, { verbs: ['get'], nonResourceURLs: ['/x'] }, { verbs: ['get'] }] }, null)), [
    'rules[0].verbs: Required value: verbs must contain at least one value',
    'rules[1].nonResourceURLs: Invalid value: ["/x"]: namespaced rules cannot apply to non-resource URLs',
    'rules[2].apiGroups: Required value: resource rules must supply at least one api group',
    'rules[2].resources: Required value: resource rules must supply at least one resource',
  ]);
  t.same(msgs(S('clusterroles').validate({ rules: [{ verbs: ['get'], nonResourceURLs: ['/x'], resources: ['pods'] }], aggregationRule: { clusterRoleSelectors: [] } }, null)), [
    'rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs',
    'aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil',
  ]);
  const rb = { roleRef: { kind: 'Role', name: 'r' }, subjects: [{ kind: 'User', name: 'bob' }, { kind: 'ServiceAccount', name: 'default' }] };
  S('rolebindings').defaults(rb);
  t.same(rb, { roleRef: { kind: 'Role', name: 'r', apiGroup: 'rbac.authorization.k8s.io' }, subjects: [{ kind: 'User', name: 'bob', apiGroup: 'rbac.authorization.k8s.io' }, { kind: 'ServiceAccount', name: 'default' }] }, 'defaults: roleRef and User/Group apiGroup');
  t.same(msgs(S('rolebindings').validate(rb, null)), []);
  t.same(msgs(S('clusterrolebindings').validate(rb, null)), [
    'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"',
    'subjects[1].namespace: Required value',
  ]);
  t.same(msgs(S('rolebindings').validate({ ...rb, roleRef: { ...rb.roleRef, name: 'other' } }, rb)), ['roleRef: Invalid value: {"kind":"Role","name":"other","apiGroup":"rbac.authorization.k8s.io"}: cannot change roleRef']);
  t.same(msgs(S('rolebindings').validate({ roleRef: { apiGroup: 'x', kind: 'Thing', name: '' }, subjects: [{ kind: 'Robot', name: 'r2' }, { kind: 'Group', name: 'g', apiGroup: 'other' }] }, null)), [
    'roleRef.apiGroup: Unsupported value: "x": supported values: "rbac.authorization.k8s.io"',
    'roleRef.kind: Unsupported value: "Thing": supported values: "Role", "ClusterRole"',
    'roleRef.name: Required value',
    'subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"',
    'subjects[1].apiGroup: Unsupported value: "other": supported values: "rbac.authorization.k8s.io"',
  ]);
});
