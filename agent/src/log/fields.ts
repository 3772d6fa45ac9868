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
} as const;
