import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { SnapshotTracker } from '../proxy/snapshot.js';
import { ep, svc } from '../proxy/test-fixtures.js';
import { spnKey, type EndpointInfo, type ServicePortInfo, type SpnKey } from '../proxy/types.js';
import { AppliedCache, describeApplied, formatProxyStatus, readProxyStatus, writeProxyStatus, type ProxyStatus } from './proxy-status.js';

const status = (applied: Record<string, string[]>): ProxyStatus => ({
  mode: 'nftables',
  syncs: 3,
  ready: true,
  lastSync: null,
  applied,
  rejected: [{ kind: 'Service', key: 'default/bad', field: 'spec.ports[0].port', message: 'must be between 1 and 65535, inclusive, got 0', servedFromLastGood: false }],
  ignored: [],
  manifestErrors: { 'x.yaml': 'unreadable' },
});

t.test('with the cache, the status text is JSON.stringify(status, null, 2) byte for byte, sync after sync', async (t) => {
  const services = new Map<SpnKey, ServicePortInfo>();
  const endpoints = new Map<SpnKey, readonly EndpointInfo[]>();
  const put = (info: ServicePortInfo, eps: EndpointInfo[]) => {
    services.set(spnKey(info.spn), info);
    if (eps.length) endpoints.set(spnKey(info.spn), eps);
  };
  put(svc('default', 'web', '10.96.0.10', { portName: 'http' }), [ep('10.244.1.3:8080'), ep('10.244.1.2:8080', { ready: false }), ep('10.244.2.2:8080', { ready: false, serving: true, terminating: true })]);
  put(svc('default', 'empty', '10.96.0.11', { portName: '' }), []);
  put(svc('kube-system', 'dns', '10.96.0.12', { portName: 'dns', protocol: 'UDP' }), [ep('10.244.1.9:53')]);
  const tracker = new SnapshotTracker();
  const cache = new AppliedCache();
  let snap = tracker.rebuild(services, endpoints);

  const check = (what: string) => {
    const st = status(describeApplied(snap, cache));
    t.same(st.applied, describeApplied(snap), `${what}: the cached description is the plain one`);
    t.equal(formatProxyStatus(st, { snapshot: snap, cache }), `${JSON.stringify(st, null, 2)}\n`, what);
  };
  check('first sync');
  t.same(describeApplied(snap).web, undefined);
  t.same(describeApplied(snap)['default/web:http'], ['10.244.1.2:8080 (not ready)', '10.244.1.3:8080', '10.244.2.2:8080 (terminating)']);
  t.same(describeApplied(snap)['default/empty'], []);

  endpoints.set('default/web:http/TCP', [ep('10.244.1.4:8080')]);
  snap = tracker.update(['default/web:http/TCP'], services, endpoints);
  check('an endpoint changed');
  services.delete('kube-system/dns:dns/UDP');
  endpoints.delete('kube-system/dns:dns/UDP');
  put(svc('a', 'first', '10.96.0.13', { portName: 'x' }), [ep('10.244.3.3')]);
  snap = tracker.update(['kube-system/dns:dns/UDP', 'a/first:x/TCP'], services, endpoints);
  check('a Service removed, one added');
  t.same(Object.keys(describeApplied(snap, cache)), ['a/first:x', 'default/empty', 'default/web:http']);

  snap = tracker.rebuild(new Map(), new Map());
  check('nothing applied');
  t.equal(formatProxyStatus(status({})), `${JSON.stringify(status({}), null, 2)}\n`, 'without the cache');
});

t.test('writeProxyStatus with the cache writes a file readProxyStatus reads back', async (t) => {
  const dir = mkdtempSync(`${tmpdir()}/nn-status-`);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const services = new Map<SpnKey, ServicePortInfo>();
  const info = svc('default', 'web', '10.96.0.10', { portName: 'http' });
  services.set(spnKey(info.spn), info);
  const snap = new SnapshotTracker().rebuild(services, new Map([[spnKey(info.spn), [ep('10.244.1.2:8080')]]]));
  const cache = new AppliedCache();
  const st = status(describeApplied(snap, cache));
  writeProxyStatus(`${dir}/s.json`, st, { snapshot: snap, cache });
  t.same(readProxyStatus(`${dir}/s.json`), st);
  t.equal(readFileSync(`${dir}/s.json`, 'utf8'), `${JSON.stringify(st, null, 2)}\n`);
});
