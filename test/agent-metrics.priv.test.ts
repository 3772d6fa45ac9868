/**
 * A running agent's HTTP endpoints, for real: the agent process in a virtual
 * node namespace with its default bind addresses (that namespace's own
 * loopback, 127.0.0.1:10249 and :10256), a pod added through the bundled
 * shim, a Service from a manifest applied in nftables mode. /metrics counts
 * the CNI calls and the proxy's syncs, /healthz and /readyz answer, and
 * `nodenet proxy status` asks the agent, and reads the file only once the
 * agent is gone. Root only.
 */
import t from 'tap';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import type { Lab, VNode } from '../agent/src/lab/lab.js';
import { REPO } from '../agent/src/lab/lab.js';
import { newLab } from '../agent/src/testing/lab.js';
import { waitFor } from '../agent/src/testing/wait.js';
import { makeEndpointSlice, makeService } from '../agent/src/testing/addresses.js';

let lab: Lab;
let node: VNode;
let manifests: string;

t.before(async () => {
  lab = await newLab('am');
  manifests = `${lab.runRoot}/manifests`;
  mkdirSync(manifests, { recursive: true });
  node = await lab.addNode('n1', { podCIDR: '10.244.1.0/24', clusterCIDR: '10.244.0.0/16', config: { proxyMode: 'nftables', manifestsDir: manifests, proxyMinSyncMs: 50 } });
  await node.startAgent();
});
t.teardown(async () => { await lab.destroy(); });

/** GET inside the node's namespace, where the agent listens. */
async function get(url: string): Promise<{ code: number; body: string }> {
  const r = await node.exec(['curl', '-s', '--max-time', '5', '-w', '\n%{http_code}', url], true);
  const i = r.stdout.lastIndexOf('\n');
  return { code: Number(r.stdout.slice(i + 1)), body: r.stdout.slice(0, i) };
}

function sample(text: string, line: RegExp): number | undefined {
  const m = text.split('\n').map((l) => line.exec(l)).find((x) => x);
  return m ? Number(m[1]) : undefined;
}

const metrics = async () => (await get('http://127.0.0.1:10249/metrics')).body;
const cniAdds = (m: string, result: string) => sample(m, new RegExp(`^nodenet_cni_requests_total\\{command="ADD",result="${result}"\\} (\\S+)$`)) ?? 0;

t.test('/metrics counts a real CNI ADD through the shim, and a failed one', async (t) => {
  const before = await metrics();
  t.match(before, /# TYPE nodenet_cni_requests_total counter/);
  t.equal(cniAdds(before, 'success'), 0);
  const pod = await lab.addNetns('p1');
  const ok = await node.cni('ADD', { containerId: 'ctr-m1', netns: pod.path, ifName: 'eth0' }, node.cniConfig());
  t.equal(ok.exitCode, 0, ok.stdout + ok.stderr);
  const bad = await node.cni('ADD', { containerId: 'ctr-m2', netns: '/var/run/netns/nn-does-not-exist', ifName: 'eth0' }, node.cniConfig());
  t.not(bad.exitCode, 0);
  const after = await metrics();
  t.equal(cniAdds(after, 'success'), 1);
  t.equal(cniAdds(after, 'error'), 1);
  t.equal(sample(after, /^nodenet_cni_request_duration_seconds_count\{command="ADD"\} (\S+)$/), 2);
  t.equal((await node.cni('DEL', { containerId: 'ctr-m1', netns: pod.path, ifName: 'eth0' }, node.cniConfig())).exitCode, 0);
  t.equal(sample(await metrics(), /^nodenet_cni_requests_total\{command="DEL",result="success"\} (\S+)$/), 1);
});

t.test('a Service applied: kube-proxy\'s sync metrics, /healthz, /readyz, and `nodenet proxy status` from the agent', async (t) => {
  t.match(await get('http://127.0.0.1:10256/readyz'), { code: 200, body: 'ok' });
  const objects = [
    makeService({ name: 'web', clusterIP: '10.96.0.10', ports: [{ name: 'http', port: 80, targetPort: 8080 }] }),
    makeEndpointSlice({ service: 'web', ports: [{ name: 'http', port: 8080 }], endpoints: [{ ip: '10.244.1.9', nodeName: 'n1' }] }),
  ];
  writeFileSync(`${manifests}/.web.json.tmp`, JSON.stringify(objects));
  renameSync(`${manifests}/.web.json.tmp`, `${manifests}/web.json`);
  await waitFor(async () => (await get('http://127.0.0.1:10249/status')).body.includes('10.244.1.9:8080'), 'default/web:http applied, per /status');
  const m = await metrics();
  t.ok(sample(m, /^kubeproxy_sync_proxy_rules_last_timestamp_seconds (\S+)$/)! > Date.now() / 1000 - 60, 'a recent successful sync');
  t.ok(sample(m, /^kubeproxy_sync_proxy_rules_duration_seconds_count (\S+)$/)! >= 2, 'the first sync and the one for web');
  t.ok(sample(m, /^kubeproxy_network_programming_duration_seconds_count (\S+)$/)! >= 1, 'the slice written after the start was measured');
  t.ok(sample(m, /^kubeproxy_sync_proxy_rules_endpoint_changes_total (\S+)$/)! >= 1);
  t.ok(sample(m, /^nodenet_sync_proxy_rules_last_written\{mode="nftables"\} (\S+)$/)! > 0, 'nftables counts what it wrote');
  const h = await get('http://127.0.0.1:10256/healthz');
  t.equal(h.code, 200);
  t.match(JSON.parse(h.body), { lastUpdated: /^\d{4}-/, currentTime: /^\d{4}-/ });

  // The CLI in the node's namespace asks the agent: a run dir with no status file in it does not matter.
  const cli = await node.exec([process.execPath, `${REPO}bin/nodenet.js`, 'proxy', 'status', '--run-dir', '/nonexistent-nodenet'], true);
  t.equal(cli.exitCode, 0, cli.stderr);
  t.match(cli.stdout, /^mode nftables, ready/);
  t.match(cli.stdout, /default\/web:http +10\.244\.1\.9:8080/);
  t.equal(cli.stderr, '');

  // With the agent gone, it reads the file the agent left, and says so.
  await node.stopAgent('SIGTERM');
  const down = await node.exec([process.execPath, `${REPO}bin/nodenet.js`, 'proxy', 'status', '--run-dir', node.runDir], true);
  t.equal(down.exitCode, 0, down.stderr);
  t.match(down.stdout, /default\/web:http +10\.244\.1\.9:8080/);
  t.match(down.stderr, /^note: no agent answered at http:\/\/127\.0\.0\.1:10249\/status \(ECONNREFUSED\); showing .*proxy-status\.json/);
});
