/**
 * Tokens and the Node authorizer's rules (pure).
 */
import t from 'tap';
import { ADMIN_USER, authenticate, nodeAllows as authorize, privilegedGroupAuthorizer, type Attributes } from './authz.js';

const tokens = { admin: 'admin-token-0123456789', nodes: { n1: 'node1-token-abcdef', n2: 'node2-token-ghijkl' } };
const a = (verb: string, gr: string, over: Partial<Attributes> = {}): Attributes => ({ verb, gr, namespace: '', name: '', subresource: '', ...over });

t.test('authenticate: a bearer token names its user; anything else is nobody', async (t) => {
  t.equal(authenticate(tokens, 'Bearer admin-token-0123456789'), ADMIN_USER);
  t.same(authenticate(tokens, 'bearer node1-token-abcdef'), { name: 'system:node:n1', groups: ['system:nodes', 'system:authenticated'], node: 'n1' }, 'the scheme is case-insensitive');
  for (const h of [undefined, '', 'Bearer', 'Bearer wrong', 'Basic YWRtaW46YWRtaW4=', 'Bearer admin-token-012345678', 'Bearer admin-token-0123456789x', 'Bearer node1-token-abcdef extra']) {
    t.equal(authenticate(tokens, h), null, `no user for ${JSON.stringify(h)}`);
  }
});

t.test('the admin (system:masters) may do anything; nobody else is allowed by that authorizer', async (t) => {
  for (const v of ['get', 'create', 'delete', 'deletecollection', 'patch']) {
    t.equal(privilegedGroupAuthorizer.authorize({ user: ADMIN_USER, verb: v, resourceRequest: true, apiGroup: '', resource: 'services', namespace: 'default', name: 'x' }).decision, 'allow');
  }
  t.equal(privilegedGroupAuthorizer.authorize({ user: ADMIN_USER, verb: 'get', resourceRequest: false, path: '/metrics' }).decision, 'allow', 'non-resource paths too');
  t.equal(privilegedGroupAuthorizer.authorize({ user: { name: 'alice', groups: ['system:authenticated'] }, verb: 'get', resourceRequest: true, resource: 'pods' }).decision, 'noopinion');
  t.notOk(authorize(ADMIN_USER, a('get', 'services')), 'the Node authorizer allows the admin nothing of its own');
});

t.test('a node reads everything and writes only what a kubelet may', async (t) => {
  const n1 = authenticate(tokens, 'Bearer node1-token-abcdef')!;
  for (const gr of ['services', 'pods', 'nodes', 'endpointslices.discovery.k8s.io', 'deployments.apps', 'namespaces']) {
    for (const v of ['get', 'list', 'watch']) t.ok(authorize(n1, a(v, gr)), `${v} ${gr}`);
  }
  const allowed: [string, Attributes][] = [
    ['register its own Node', a('create', 'nodes', { name: 'n1' })],
    ['update its own Node', a('update', 'nodes', { name: 'n1' })],
    ['patch its own Node\'s status', a('patch', 'nodes', { name: 'n1', subresource: 'status' })],
    ['renew its own Lease', a('update', 'leases.coordination.k8s.io', { namespace: 'kube-node-lease', name: 'n1' })],
    ['create its own Lease', a('create', 'leases.coordination.k8s.io', { namespace: 'kube-node-lease', name: 'n1' })],
    ['create an Event', a('create', 'events', { namespace: 'default', name: 'x.1' })],
    ['patch an Event (a count)', a('patch', 'events', { namespace: 'default', name: 'x.1' })],
    ['update the status of a Pod bound to it', a('update', 'pods', { namespace: 'default', name: 'p', subresource: 'status', boundNode: 'n1' })],
    ['delete a Pod bound to it (the end of a graceful deletion)', a('delete', 'pods', { namespace: 'default', name: 'p', boundNode: 'n1' })],
  ];
  for (const [what, attrs] of allowed) t.ok(authorize(n1, attrs), what);
  const denied: [string, Attributes][] = [
    ['another node\'s Node', a('update', 'nodes', { name: 'n2' })],
    ['delete its own Node', a('delete', 'nodes', { name: 'n1' })],
    ['another node\'s Lease', a('update', 'leases.coordination.k8s.io', { namespace: 'kube-node-lease', name: 'n2' })],
    ['its Lease in another namespace', a('update', 'leases.coordination.k8s.io', { namespace: 'default', name: 'n1' })],
    ['delete an Event', a('delete', 'events', { namespace: 'default', name: 'x.1' })],
    ['the status of a Pod bound elsewhere', a('update', 'pods', { namespace: 'default', name: 'p', subresource: 'status', boundNode: 'n2' })],
    ['the status of an unbound Pod', a('update', 'pods', { namespace: 'default', name: 'p', subresource: 'status' })],
    ['a Pod\'s spec', a('update', 'pods', { namespace: 'default', name: 'p', boundNode: 'n1' })],
    ['create a Pod', a('create', 'pods', { namespace: 'default', name: 'p' })],
    ['bind a Pod (the scheduler\'s)', a('create', 'pods', { namespace: 'default', name: 'p', subresource: 'binding' })],
    ['bind a Pod already bound to it', a('create', 'pods', { namespace: 'default', name: 'p', subresource: 'binding', boundNode: 'n1' })],
    ['delete a Pod bound elsewhere', a('delete', 'pods', { namespace: 'default', name: 'p', boundNode: 'n2' })],
    ['write a Service', a('create', 'services', { namespace: 'default', name: 's' })],
    ['write an EndpointSlice', a('update', 'endpointslices.discovery.k8s.io', { namespace: 'default', name: 's-1' })],
    ['delete a Namespace', a('delete', 'namespaces', { name: 'default' })],
    ['delete every Lease', a('deletecollection', 'leases.coordination.k8s.io', { namespace: 'kube-node-lease' })],
  ];
  for (const [what, attrs] of denied) t.notOk(authorize(n1, attrs), `not: ${what}`);
});

t.test('the Node authorizer allows a user that is not a node nothing (RBAC decides)', async (t) => {
  t.notOk(authorize({ name: 'someone', groups: ['system:authenticated'] }, a('get', 'services')));
});
