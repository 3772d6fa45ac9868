/**
 * Log field names, in one place (Cilium's logfields). Modules log with these
 * keys only; user-controlled strings go in values, never in keys.
 */
export const F = {
  subsys: 'subsys',
  containerID: 'containerID',
  netns: 'netns',
  ifName: 'ifName',
  ip: 'ip',
  svc: 'svc',
  endpoint: 'endpoint',
  chain: 'chain',
  node: 'node',
  eventID: 'eventID',
  cmd: 'cmd',
  durationMs: 'durationMs',
  err: 'err',
  pod: 'pod',
  mode: 'mode',
  /** proxy: object kind (Service, EndpointSlice), rejected field, ignore reason, sync scope, a count. */
  kind: 'kind',
  field: 'field',
  reason: 'reason',
  scope: 'scope',
  count: 'count',
  /** controlplane: one line per API request. */
  verb: 'verb',
  resource: 'resource',
  namespace: 'namespace',
  name: 'name',
  user: 'user',
  code: 'code',
  path: 'path',
  rev: 'rev',
} as const;
