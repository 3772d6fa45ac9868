/**
 * The agent's HTTP endpoints on loopback (port 0), with the whole agent on
 * the validating fakes and a FakeClock: /healthz and /livez with
 * kube-proxy's meaning, /readyz, /metrics with kube-proxy's names and
 * nodenet's CNI counters, /status as the status file has it. No root.
 */
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callAgent } from '../testing/cni-client.js';
import type { CniCommand } from '../../../proto/cni/v1/contract.js';
import { startCniServer } from '../cniserver/server.js';
import { parseAgentConfig } from '../config/config.js';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { Ipam } from '../ipam/ipam.js';
import { FakeStore } from '../ipam/store.fake.js';
import { silentLogger } from '../../../lib/log/log.js';
import { FakeConntrack } from '../netfilter/conntrack/conntrack.fake.js';
import { NftFake } from '../netfilter/nft/nft.fake.js';
import { FakeNetlinkKernel } from '../netlink/netlink.fake.js';
import { FakeSysctl } from '../netns/sysctl.fake.js';
import { FakeBackend } from '../proxy/backend.fake.js';
import type { EndpointSliceHandler, ServiceHandler } from '../proxy/handlers.js';
import { LAST_CHANGE_TRIGGER_TIME } from '../proxy/proxier.js';
import type { ProxyBackend } from '../proxy/types.js';
import { FakeClock } from '../../../lib/reconcile/clock.fake.js';
import type { RejectionCount } from '../../../lib/reconcile/last-good.js';
import { IpamAdapter } from '../sandbox/ipam-adapter.js';
import { NftMasquerade } from '../sandbox/masquerade.js';
import { MemoryAttachmentStore } from '../sandbox/record-store.js';
import { makeEndpointSlice, makeService, withField, type JsonObject } from '../testing/addresses.js';
import { Agent } from './agent.js';
import { ProxyHealth } from './agent-metrics.js';
import { bridgeMacFor } from './compose.js';
import { healthBody, startHealthServer, type HealthSource } from './health-server.js';
import { readProxyStatus, type ProxyStatus } from './proxy-status.js';
import { overlayHealth, parseOverlayStatus, type OverlayStatus } from '../overlay/status.js';

const T0 = Date.parse('2030-01-01T00:00:00Z');
const CONF = { cniVersion: '1.1.0', name: 'nodenet', type: 'nodenet-cni', bridge: 'cbr0', isGateway: true, isDefaultGateway: true, ipam: { type: 'host-local' } };
const SYNC_PERIOD = 30_000;

interface World {
  agent: Agent;
  clock: FakeClock;
  kernel: FakeNetlinkKernel;
  fake: FakeBackend;
  /** Every backend sync fails while set. */
  broken: { on: boolean };
  /** The proxy's handlers, as a watch source would drive them (null without a proxy). */
  services: ServiceHandler;
  slices: EndpointSliceHandler;
  dir: string;
  metricsUrl: string;
  healthzUrl: string;
  call(cmd: CniCommand, r: { containerId: string; netns: string; ifName: string }): ReturnType<typeof callAgent>;
}

async function world(t: Test, opts: { proxy?: boolean; config?: Record<string, unknown>; overlayRejections?: () => readonly RejectionCount[]; overlayForeign?: () => readonly { backendType: string }[] } = {}): Promise<World> {
  const proxy = opts.proxy ?? true;
  const dir = mkdtempSync(join(tmpdir(), 'nn-health-'));
  const config = parseAgentConfig({
    nodeName: 'node1', podCIDR: '10.244.1.0/24', stateDir: `${dir}/state`, runDir: `${dir}/run`,
    proxyMode: proxy ? 'iptables' : 'none', proxyMinSyncMs: 0, metricsBindAddress: '127.0.0.1:0', healthzBindAddress: '127.0.0.1:0', ...opts.config,
  });
  const kernel = new FakeNetlinkKernel();
  const nft = new NftFake();
  const sysctl = new FakeSysctl();
  const clock = new FakeClock(T0);
  const log = silentLogger();
  const fake = new FakeBackend('iptables');
  const broken = { on: false };
  const backend: ProxyBackend = {
    mode: 'iptables',
    sync: (s, scope) => (broken.on ? Promise.reject(new NodenetError(ErrorCode.RuleApply, 'iptables-restore: line 7 failed')) : fake.sync(s, scope)),
    canaryMissing: () => fake.canaryMissing(),
    cleanup: () => fake.cleanup(),
    lastSyncRuleCount: () => fake.lastSyncRuleCount(),
  };
  const nodeConfig = { nodeName: 'node1', nodeIPs: ['192.168.77.11' as never], clusterCIDR: null, prefix: 'KUBE', masqueradeBit: 14 };
  const masquerade = new NftMasquerade({ nft, sets: nft, log });
  let handlers: { services: ServiceHandler; slices: EndpointSliceHandler } | null = null;
  const agent = new Agent({
    config,
    log,
    clock,
    sandbox: {
      node: kernel.open(),
      openPod: (p) => kernel.open(p),
      resolveNetns: (p) => kernel.netnsPath(p),
      ipam: new IpamAdapter(new Ipam({ storeFor: () => new FakeStore(), networks: () => ['nodenet'] }), config.podCIDR),
      masq: masquerade,
      sysctl,
      records: new MemoryAttachmentStore(),
      bridgeMac: (b) => bridgeMacFor('node1', b),
    },
    masquerade,
    serveCni: startCniServer,
    serveHealth: startHealthServer,
    watchQueue: () => ({ close() {} }),
    ...(opts.overlayRejections
      ? { overlay: () => ({ start: async () => {}, stop: async () => {}, mtu: 1450, rejectionCounts: opts.overlayRejections!, foreignNodes: opts.overlayForeign ?? (() => []) }) }
      : {}),
    proxy: proxy
      ? {
          mode: 'iptables', nodeConfig, backend, conntrack: new FakeConntrack(), sysctl, removeOtherMode: async () => false,
          startSource: async (h) => {
            handlers = { services: h.services, slices: h.slices };
            return { errors: () => [], stop() {} };
          },
          statusFile: `${dir}/run/proxy-status.json`,
          minSyncIntervalMs: 0,
          maxSyncIntervalMs: SYNC_PERIOD,
        }
      : null,
  });
  try {
    await agent.start();
  } catch (e) {
    await agent.stop();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  t.teardown(async () => {
    await agent.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const none = { onServiceAdd() {}, onServiceUpdate() {}, onServiceDelete() {}, onServicesSynced() {}, onEndpointSliceAdd() {}, onEndpointSliceUpdate() {}, onEndpointSliceDelete() {}, onEndpointSlicesSynced() {} };
  const h = handlers as { services: ServiceHandler; slices: EndpointSliceHandler } | null;
  return {
    agent, clock, kernel, fake, broken, dir,
    services: h?.services ?? none,
    slices: h?.slices ?? none,
    metricsUrl: `http://${agent.health?.metricsAddress}`,
    healthzUrl: `http://${agent.health?.healthzAddress}`,
    call: (cmd, r) => callAgent(config.cniSocket, cmd, { ...r, args: '', path: '/opt/cni/bin', config: new TextEncoder().encode(JSON.stringify(CONF)) }, 5000),
  };
}

async function get(url: string, init?: RequestInit): Promise<{ status: number; type: string; body: string }> {
  const r = await fetch(url, init);
  return { status: r.status, type: r.headers.get('content-type') ?? '', body: await r.text() };
}

/** One sample's value from Prometheus text: `name` with exactly these labels (none: no labels). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`).sort().join(',');
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    if ((m[2] ?? '').split(',').filter(Boolean).sort().join(',') === want) return Number(m[3]);
  }
  return undefined;
}

const web = (): JsonObject => makeService({ name: 'web', clusterIP: '10.96.0.10', ports: [{ name: 'http', port: 80, targetPort: 8080 }] });
const webSlice = (ips: string[], triggeredAt?: number): JsonObject => {
  const s = makeEndpointSlice({ service: 'web', ports: [{ name: 'http', port: 8080 }], endpoints: ips.map((ip) => ({ ip, nodeName: 'node1' })) });
  return triggeredAt === undefined ? s : withField(s, 'metadata.annotations', { [LAST_CHANGE_TRIGGER_TIME]: new Date(triggeredAt).toISOString() });
};

/** Both lists delivered and the first sync done. */
async function listed(w: World): Promise<void> {
  w.services.onServiceAdd(web());
  w.slices.onEndpointSliceAdd(webSlice(['10.244.1.5']));
  w.services.onServicesSynced();
  w.slices.onEndpointSlicesSynced();
  await w.clock.advance(0);
}

t.test('the bound addresses are real ports on loopback; each listener serves its paths', async (t) => {
  const w = await world(t);
  t.match(w.agent.health!.metricsAddress, /^127\.0\.0\.1:[1-9]\d*$/);
  t.match(w.agent.health!.healthzAddress, /^127\.0\.0\.1:[1-9]\d*$/);
  t.not(w.agent.health!.metricsAddress, w.agent.health!.healthzAddress);
  t.equal((await get(`${w.healthzUrl}/metrics`)).status, 404, 'the healthz listener has no /metrics');
  t.equal((await get(`${w.healthzUrl}/status`)).status, 404);
  for (const p of ['/metrics', '/status', '/healthz', '/livez', '/readyz', '/proxyMode']) t.not((await get(`${w.metricsUrl}${p}`)).status, 404, `metrics listener: ${p}`);
  t.match(await get(`${w.metricsUrl}/nope`), { status: 404, body: /404 page not found \(try \/healthz/ });
  t.match(await get(`${w.metricsUrl}/healthz`, { method: 'POST' }), { status: 405 });
  t.match(await get(`${w.metricsUrl}/proxyMode`), { status: 200, body: 'iptables\n' });
});

t.test('/readyz: 503 until the proxy synced with its source, then 200; /healthz 200 meanwhile (nothing queued yet)', async (t) => {
  const w = await world(t);
  t.match(await get(`${w.healthzUrl}/readyz`), { status: 503, body: /not ready: the proxy has not synced/ });
  const h = await get(`${w.healthzUrl}/healthz`);
  t.equal(h.status, 200);
  t.equal(h.type, 'application/json');
  t.same(JSON.parse(h.body), { lastUpdated: new Date(T0).toISOString(), currentTime: new Date(T0).toISOString() }, 'healthy: lastUpdated is now, as kube-proxy');
  t.match(await get(`${w.metricsUrl}/status`), { status: 200, body: /"ready": false/ });
  await listed(w);
  t.match(await get(`${w.healthzUrl}/readyz`), { status: 200, body: 'ok\n' });
  t.equal((await get(`${w.healthzUrl}/healthz`)).status, 200);
});

t.test('/healthz and /livez turn 503 when a queued change waits 2× the sync period without a successful sync, and recover', async (t) => {
  const w = await world(t);
  await listed(w);
  const syncedAt = w.clock.now();
  w.broken.on = true;
  await w.clock.advance(1000);
  w.slices.onEndpointSliceUpdate(webSlice(['10.244.1.5']), webSlice(['10.244.1.6']));
  await w.clock.advance(2 * SYNC_PERIOD - 1);
  t.equal((await get(`${w.healthzUrl}/healthz`)).status, 200, 'late, but not 2× the sync period late yet');
  await w.clock.advance(1);
  const h = await get(`${w.healthzUrl}/healthz`);
  t.equal(h.status, 503);
  t.same(JSON.parse(h.body), { lastUpdated: new Date(syncedAt).toISOString(), currentTime: new Date(w.clock.now()).toISOString() }, 'unhealthy: lastUpdated is the last successful sync');
  t.equal((await get(`${w.metricsUrl}/livez`)).status, 503, '/livez says the same');
  t.equal((await get(`${w.healthzUrl}/readyz`)).status, 200, 'still ready: it synced once');
  const m = (await get(`${w.metricsUrl}/metrics`)).body;
  t.equal(sample(m, 'kubeproxy_proxy_healthz_total', { code: '503' }), 1);
  t.equal(sample(m, 'kubeproxy_proxy_healthz_total', { code: '200' }), 1);
  t.equal(sample(m, 'kubeproxy_proxy_livez_total', { code: '503' }), 1);
  t.ok(sample(m, 'kubeproxy_sync_proxy_rules_iptables_restore_failures_total')! >= 3, 'the failed retries are counted');
  t.equal(sample(m, 'kubeproxy_sync_proxy_rules_last_timestamp_seconds'), syncedAt / 1000, 'the last successful sync');
  t.equal(sample(m, 'kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds'), (syncedAt + 1000) / 1000);
  w.broken.on = false;
  await w.clock.advance(SYNC_PERIOD);
  t.equal((await get(`${w.healthzUrl}/healthz`)).status, 200, 'the retry succeeded: healthy again');
});

t.test('/metrics: kube-proxy\'s names with the values of real syncs; network programming latency from the annotation or receipt', async (t) => {
  const w = await world(t);
  w.services.onServiceAdd(web());
  w.slices.onEndpointSliceAdd(webSlice(['10.244.1.5']));
  let m = (await get(`${w.metricsUrl}/metrics`)).body;
  t.equal(sample(m, 'kubeproxy_sync_proxy_rules_service_changes_pending'), 1, 'waiting for the initial lists');
  t.equal(sample(m, 'kubeproxy_sync_proxy_rules_endpoint_changes_pending'), 1);
  t.equal(sample(m, 'kubeproxy_sync_proxy_rules_duration_seconds_count'), 0);
  w.services.onServicesSynced();
  w.slices.onEndpointSlicesSynced();
  await w.clock.advance(0);

  // One change the controller stamped 5 s ago, one without a stamp (measured from its receipt, 2 s before the sync).
  await w.clock.advance(10_000);
  w.slices.onEndpointSliceUpdate(webSlice(['10.244.1.5']), webSlice(['10.244.1.6'], w.clock.now() - 5000));
  await w.clock.advance(0);
  w.slices.onEndpointSliceUpdate(webSlice(['10.244.1.6']), webSlice(['10.244.1.7']));
  w.broken.on = true;
  await w.clock.advance(0); // this sync fails: the change waits
  w.broken.on = false;
  await w.clock.advance(2000); // the retry, 1 s later, succeeds; then the clock runs on
  m = (await get(`${w.metricsUrl}/metrics`)).body;
  t.equal(sample(m, 'kubeproxy_sync_proxy_rules_duration_seconds_count'), 4, 'every sync attempt: first, the stamped change, the failure, the retry');
  t.equal(sample(m, 'kubeproxy_sync_full_proxy_rules_duration_seconds_count'), 2, 'the first, and the retry (full after a failure)');
  t.equal(sample(m, 'kubeproxy_sync_partial_proxy_rules_duration_seconds_count'), 2, 'the stamped change, and the failed one');
  t.ok(m.includes('kubeproxy_sync_proxy_rules_duration_seconds_bucket{le="0.001"}'), 'kube-proxy\'s buckets');
  t.equal(sample(m, 'kubeproxy_sync_proxy_rules_last_timestamp_seconds'), (T0 + 11_000) / 1000);
  t.equal(sample(m, 'kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds'), (T0 + 10_000) / 1000);
  t.equal(sample(m, 'kubeproxy_sync_proxy_rules_service_changes_total'), 1);
  t.equal(sample(m, 'kubeproxy_sync_proxy_rules_endpoint_changes_total'), 3);
  t.equal(sample(m, 'kubeproxy_sync_proxy_rules_service_changes_pending'), 0);
  t.equal(sample(m, 'kubeproxy_sync_proxy_rules_endpoint_changes_pending'), 0);
  t.equal(sample(m, 'kubeproxy_sync_proxy_rules_iptables_restore_failures_total'), 1);
  t.equal(sample(m, 'kubeproxy_network_programming_duration_seconds_count'), 2);
  t.equal(sample(m, 'kubeproxy_network_programming_duration_seconds_sum'), 5 + 1, 'stamped: 5 s before its sync; unstamped: received 1 s before the retry applied it');
  t.equal(sample(m, 'kubeproxy_network_programming_duration_seconds_bucket', { le: '0.25' }), 0);
  t.equal(sample(m, 'kubeproxy_network_programming_duration_seconds_bucket', { le: '1' }), 1);
  t.equal(sample(m, 'kubeproxy_network_programming_duration_seconds_bucket', { le: '5' }), 2);
  t.equal(sample(m, 'nodenet_sync_proxy_rules_last_written', { mode: 'iptables' }), w.fake.lastSyncRuleCount());
  t.ok(sample(m, 'process_cpu_user_seconds_total') !== undefined, 'process metrics');
});

t.test('/metrics: the objects the proxy and the overlay could not use, and those served from their last valid version', async (t) => {
  let overlay: RejectionCount = { kind: 'Node', rejected: 0, servedFromLastGood: 0 };
  let foreign: { backendType: string }[] = [];
  const w = await world(t, { overlayRejections: () => [overlay], overlayForeign: () => foreign });
  await listed(w);
  let m = (await get(`${w.metricsUrl}/metrics`)).body;
  for (const kind of ['Service', 'EndpointSlice']) {
    t.equal(sample(m, 'nodenet_proxy_objects_rejected_total', { kind }), 0, `${kind}: none yet, the series is there`);
    t.equal(sample(m, 'nodenet_proxy_objects_served_from_last_good', { kind }), 0);
  }
  t.equal(sample(m, 'nodenet_overlay_objects_rejected_total', { kind: 'Node' }), 0);

  // The case: a valid update first (affinity on), then the patch the agent cannot use.
  const withAffinity = withField(withField(web(), 'spec.sessionAffinity', 'ClientIP'), 'spec.sessionAffinityConfig', { clientIP: { timeoutSeconds: 10800 } });
  w.services.onServiceUpdate(web(), withAffinity);
  const bad = withField(withAffinity, 'spec.sessionAffinity', 'None');
  w.services.onServiceUpdate(withAffinity, bad);
  w.services.onServiceUpdate(bad, bad);
  overlay = { kind: 'Node', rejected: 2, servedFromLastGood: 1 };
  await w.clock.advance(1000);
  m = (await get(`${w.metricsUrl}/metrics`)).body;
  t.equal(sample(m, 'nodenet_proxy_objects_rejected_total', { kind: 'Service' }), 1, 'counted once');
  t.equal(sample(m, 'nodenet_proxy_objects_served_from_last_good', { kind: 'Service' }), 1);
  t.equal(sample(m, 'nodenet_proxy_objects_rejected_total', { kind: 'EndpointSlice' }), 0);
  t.equal(sample(m, 'nodenet_overlay_objects_rejected_total', { kind: 'Node' }), 2);
  t.equal(sample(m, 'nodenet_overlay_objects_served_from_last_good', { kind: 'Node' }), 1);
  t.equal(sample(m, 'nodenet_overlay_foreign_nodes', { backend_type: 'host-gw' }), undefined, 'no Node on another backend: no series');
  foreign = [{ backendType: 'host-gw' }, { backendType: 'host-gw' }, { backendType: 'wireguard' }];
  m = (await get(`${w.metricsUrl}/metrics`)).body;
  t.equal(sample(m, 'nodenet_overlay_foreign_nodes', { backend_type: 'host-gw' }), 2, 'Nodes on another backend, by type');
  t.equal(sample(m, 'nodenet_overlay_foreign_nodes', { backend_type: 'wireguard' }), 1);
  t.match(m, /# TYPE nodenet_proxy_objects_rejected_total counter/);
  t.match(m, /# TYPE nodenet_proxy_objects_served_from_last_good gauge/);
  t.match(JSON.parse((await get(`${w.metricsUrl}/status`)).body), {
    applied: { 'default/web:http': ['10.244.1.5:8080'] },
    rejected: [{ kind: 'Service', key: 'default/web', field: 'spec.sessionAffinityConfig', servedFromLastGood: true }],
  }, '/status: rejected, and still applied');

  w.services.onServiceUpdate(bad, web());
  m = (await get(`${w.metricsUrl}/metrics`)).body;
  t.equal(sample(m, 'nodenet_proxy_objects_rejected_total', { kind: 'Service' }), 1, 'a counter');
  t.equal(sample(m, 'nodenet_proxy_objects_served_from_last_good', { kind: 'Service' }), 0, 'the valid version taken');
  t.match(JSON.parse((await get(`${w.metricsUrl}/status`)).body), { rejected: [] });
});

t.test('/metrics counts CNI calls by command and result, with their durations', async (t) => {
  const w = await world(t, { proxy: false });
  const ns = w.kernel.createNetns('pod1');
  t.equal((await w.call('ADD', { containerId: 'c1', netns: ns, ifName: 'eth0' })).kind, 'ok');
  t.equal((await w.call('ADD', { containerId: 'c2', netns: '/var/run/netns/nn-missing', ifName: 'eth0' })).kind, 'cni-error');
  t.equal((await w.call('DEL', { containerId: 'c1', netns: ns, ifName: 'eth0' })).kind, 'ok');
  const m = (await get(`${w.metricsUrl}/metrics`)).body;
  t.equal(sample(m, 'nodenet_cni_requests_total', { command: 'ADD', result: 'success' }), 1);
  t.equal(sample(m, 'nodenet_cni_requests_total', { command: 'ADD', result: 'error' }), 1);
  t.equal(sample(m, 'nodenet_cni_requests_total', { command: 'DEL', result: 'success' }), 1);
  t.equal(sample(m, 'nodenet_cni_request_duration_seconds_count', { command: 'ADD' }), 2);
  t.ok(sample(m, 'nodenet_cni_request_duration_seconds_sum', { command: 'ADD' })! > 0);
  t.notOk(m.includes('kubeproxy_'), 'no proxy mode: no kube-proxy metrics');
  t.notOk(m.includes('nodenet_proxy_objects_'), 'nor the proxy\'s rejections');
  t.notOk(m.includes('nodenet_overlay_objects_'), 'no overlay: none of its');
  t.match(await get(`${w.metricsUrl}/status`), { status: 404, body: /without a proxy mode/ });
  t.match(await get(`${w.healthzUrl}/readyz`), { status: 200 });
  t.match(await get(`${w.healthzUrl}/healthz`), { status: 200 });
});

t.test('/status answers what the status file holds', async (t) => {
  const w = await world(t);
  await listed(w);
  const r = await get(`${w.metricsUrl}/status`);
  t.equal(r.status, 200);
  t.equal(r.type, 'application/json');
  const live = JSON.parse(r.body) as unknown;
  t.same(live, readProxyStatus(`${w.dir}/run/proxy-status.json`));
  t.same((live as { applied: unknown }).applied, { 'default/web:http': ['10.244.1.5:8080'] });
  t.same(JSON.parse((await get(`${w.metricsUrl}/proxy/status`)).body), live);
});

t.test('bind addresses: off when null, one listener for one address, a taken port fails naming the field', async (t) => {
  const src: HealthSource = {
    probe: () => ({ healthy: true, lastUpdated: 0, currentTime: 0 }),
    notReady: () => null,
    metrics: async () => ({ contentType: 'text/plain', text: '' }),
    status: () => 'none',
    proxyMode: () => 'none',
  };
  const log = silentLogger();
  const off = await startHealthServer({ metricsBindAddress: null, healthzBindAddress: null, source: src, log });
  t.same([off.metricsAddress, off.healthzAddress], [null, null]);
  await off.close();

  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  t.teardown(() => void taken.close());
  const port = (taken.address() as { port: number }).port;
  await t.rejects(startHealthServer({ metricsBindAddress: '127.0.0.1:0', healthzBindAddress: `127.0.0.1:${port}`, source: src, log }), {
    code: 'NN_ERR_INVALID_CONFIG',
    message: new RegExp(`^config healthzBindAddress: cannot listen on 127\\.0\\.0\\.1:${port}: EADDRINUSE`),
  });
  taken.close();
  await new Promise((r) => setTimeout(r, 10));
  const one = await startHealthServer({ metricsBindAddress: `127.0.0.1:${port}`, healthzBindAddress: `127.0.0.1:${port}`, source: src, log });
  t.teardown(() => one.close());
  t.same([one.metricsAddress, one.healthzAddress], [`127.0.0.1:${port}`, `127.0.0.1:${port}`], 'one listener for both');
  t.equal((await get(`http://127.0.0.1:${port}/metrics`)).status, 200);
  await one.close();
  await one.close();
  await t.rejects(fetch(`http://127.0.0.1:${port}/healthz`), 'closed');
});

t.test('an agent with both listeners turned off ("" and 0) starts no server; one off leaves the other', async (t) => {
  const off = await world(t, { proxy: false, config: { metricsBindAddress: '', healthzBindAddress: '0' } });
  t.equal(off.agent.health, null);
  const half = await world(t, { proxy: false, config: { metricsBindAddress: '' } });
  t.equal(half.agent.health?.metricsAddress, null);
  t.match(await get(`${half.healthzUrl}/healthz`), { status: 200 });
});

t.test('ProxyHealth: kube-proxy\'s verdict; healthBody prints Go\'s zero time for never', async (t) => {
  const clock = new FakeClock(T0);
  const h = new ProxyHealth(clock, 60_000);
  t.match(h.check(), { healthy: true, lastUpdated: T0 });
  h.queued();
  await clock.advance(30_000);
  h.queued(); // the oldest counts
  await clock.advance(30_000);
  t.same(h.check(), { healthy: false, lastUpdated: null, currentTime: T0 + 60_000 });
  t.equal(healthBody(h.check()), `{"lastUpdated":"0001-01-01T00:00:00Z","currentTime":"${new Date(T0 + 60_000).toISOString()}"}\n`);
  h.updated();
  t.match(h.check(), { healthy: true });
});

t.test('/overlay/status and /status\'s overlay: the backend, its peers, those not routed, BGP\'s sessions', async (t) => {
  const ov: OverlayStatus = {
    backend: 'bgp', peers: ['n2', 'n3'], unreachable: [],
    bgp: { sessions: [{ node: 'n2', peerIP: '192.168.77.12', protocol: 'peer_192_168_77_12', state: 'Established', established: true, since: '2026-12-05 21:04:49', detail: '' }] },
  };
  let current: OverlayStatus | null = null;
  const st = { mode: 'iptables', syncs: 1, ready: true, lastSync: null, applied: {}, rejected: [], ignored: [], manifestErrors: {} } as unknown as ProxyStatus;
  const base: HealthSource = {
    probe: () => ({ healthy: true, lastUpdated: 0, currentTime: 0 }),
    notReady: () => null,
    metrics: async () => ({ contentType: 'text/plain', text: '' }),
    status: () => st,
    proxyMode: () => 'iptables',
  };
  const log = silentLogger();
  const with_ = await startHealthServer({ metricsBindAddress: '127.0.0.1:0', healthzBindAddress: null, source: { ...base, overlayStatus: async () => current }, log });
  t.teardown(() => with_.close());
  const u = `http://${with_.metricsAddress!}`;
  t.equal((await get(`${u}/overlay/status`)).status, 503, 'before the overlay started');
  t.same(JSON.parse((await get(`${u}/status`)).body), st, 'no overlay key before it started');
  current = ov;
  const r = await get(`${u}/overlay/status`);
  t.equal(r.status, 200);
  t.same(parseOverlayStatus('/overlay/status', r.body), ov, 'what the reader of lab status reads back');
  t.same(JSON.parse((await get(`${u}/status`)).body), { ...st, overlay: ov }, '/status: the proxy\'s and the overlay\'s');
  const without = await startHealthServer({ metricsBindAddress: '127.0.0.1:0', healthzBindAddress: null, source: base, log });
  t.teardown(() => without.close());
  t.equal((await get(`http://${without.metricsAddress!}/overlay/status`)).status, 404, 'no overlay: 404');
  t.same(JSON.parse((await get(`http://${without.metricsAddress!}/status`)).body), st, 'and /status as before');
});

t.test('/healthz and /livez: kube-proxy\'s body, then the overlay\'s BGP sessions when the agent has them; the verdict is the proxy\'s', async (t) => {
  const ov: OverlayStatus = {
    backend: 'bgp', peers: ['n2', 'n3'], unreachable: [],
    bgp: { sessions: [
      { node: 'n2', peerIP: '192.168.77.12', protocol: 'peer_192_168_77_12', state: 'Established', established: true, since: '', detail: '' },
      { node: null, peerIP: '192.168.77.13', protocol: 'peer_192_168_77_13', state: 'Active', established: false, since: '', detail: 'Socket: Connection refused' },
    ] },
  };
  let healthy = true;
  const src: HealthSource = {
    probe: () => ({ healthy, lastUpdated: 0, currentTime: 0 }),
    notReady: () => null,
    metrics: async () => ({ contentType: 'text/plain', text: '' }),
    status: () => 'none',
    proxyMode: () => 'none',
    healthDetail: async () => overlayHealth(ov),
  };
  const s = await startHealthServer({ metricsBindAddress: null, healthzBindAddress: '127.0.0.1:0', source: src, log: silentLogger() });
  t.teardown(() => s.close());
  const h = await get(`http://${s.healthzAddress!}/healthz`);
  t.equal(h.status, 200, 'a session not Established does not make the agent unhealthy');
  t.equal(h.body, '{"lastUpdated":"1970-01-01T00:00:00.000Z","currentTime":"1970-01-01T00:00:00.000Z","overlay":{"backend":"bgp","bgp":{"n2":"Established","192.168.77.13":"Active"}}}\n');
  healthy = false;
  t.equal((await get(`http://${s.healthzAddress!}/livez`)).status, 503, 'the verdict stays the proxy\'s');
  t.same(overlayHealth({ backend: 'vxlan', peers: ['n2'], unreachable: [] }), null, 'vxlan with every peer routed: nothing added');
  t.same(overlayHealth({ backend: 'host-gw', peers: ['far'], unreachable: [{ node: 'far', publicIP: '10.1.2.3', reason: 'gateway' }] }), { overlay: { backend: 'host-gw', notRouted: ['far'] } });
  t.same(overlayHealth({ backend: 'bgp', peers: [], unreachable: [], bgp: { error: 'birdc: Unable to connect' } }), { overlay: { backend: 'bgp', bgp: { error: 'birdc: Unable to connect' } } });
  t.equal(healthBody({ healthy: true, lastUpdated: 0, currentTime: 0 }, { lastUpdated: 'x', overlay: {} }), '{"lastUpdated":"1970-01-01T00:00:00.000Z","currentTime":"1970-01-01T00:00:00.000Z","overlay":{}}\n', 'kube-proxy\'s fields are never overwritten');
});
