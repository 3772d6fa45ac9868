/**
 * Issue 24, with real packets, in iptables and nftables mode: an update of a
 * Service or an EndpointSlice that the agent cannot use does not take the
 * Service down. One virtual node whose agent follows a manifest directory
 * (the way to hand it an object the API server refuses), a backend pod
 * answering its name over TCP, a client pod.
 *
 * The Service has ClientIP affinity; then it gets the version `kubectl patch
 * svc web -p '{"spec":{"sessionAffinity":"None"}}'` made on a control plane
 * that stored it (the defaulted sessionAffinityConfig left behind): the
 * ClusterIP keeps answering, with its affinity rules, and the agent reports
 * the rejection with its last valid version still served. Then the slice
 * gets an address that is no IP: its endpoint stays. The fixed versions are
 * taken; removing the file takes the Service away. Root only.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type { Lab, VNode } from '../agent/src/lab/lab.js';
import { proxyStatusFile, readProxyStatus, type ProxyStatus } from '../agent/src/node/proxy-status.js';
import { makeEndpointSlice, makeService, withField, type JsonObject } from '../agent/src/testing/addresses.js';
import { newLab, shOk } from '../agent/src/testing/lab.js';
import { timeScale, waitFor } from '../agent/src/testing/wait.js';

const SCALE = timeScale();
const CLUSTER_IP = '10.96.0.10';

for (const mode of ['iptables', 'nftables'] as const) {
  t.test(`${mode}: an update the agent cannot use leaves the Service answering on its ClusterIP`, async (t) => {
    const lab: Lab = await newLab(mode === 'iptables' ? 'gi' : 'gn');
    t.teardown(() => lab.destroy());
    const manifests = `${lab.runRoot}/manifests`;
    mkdirSync(manifests, { recursive: true });
    const n1: VNode = await lab.addNode('n1', { podCIDR: '10.244.1.0/24', clusterCIDR: '10.244.0.0/16', config: { proxyMode: mode, manifestsDir: manifests, proxyMinSyncMs: 100, serviceCIDR: '10.96.0.0/16' } });
    await n1.startAgent();

    const pod = async (name: string) => {
      const ns = await lab.addNetns(name);
      const r = await n1.cni('ADD', { containerId: `ctr-${name}`, netns: ns.path, ifName: 'eth0' }, n1.cniConfig());
      if (r.exitCode !== 0) throw new Error(`CNI ADD ${name}: ${r.stdout}${r.stderr}`);
      return { ns: ns.name, ip: (r.json as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]! };
    };
    const backend = await pod('backend');
    const client = await pod('client');
    // Killed with its namespace by lab.destroy().
    spawn('ip', ['netns', 'exec', backend.ns, 'socat', '-t10', 'TCP4-LISTEN:8080,reuseaddr,fork', 'SYSTEM:echo backend'], { stdio: 'ignore', detached: true }).unref();
    const ask = async (ip: string, port: number): Promise<string> => {
      const r = await shOk(['ip', 'netns', 'exec', client.ns, 'socat', `-t${2 * SCALE}`, `-T${3 * SCALE}`, '-', `TCP4:${ip}:${port},connect-timeout=3`]);
      return (r.exitCode === 0 ? r.stdout : r.stderr).trim() || `(nothing: exit ${r.exitCode})`;
    };
    await waitFor(async () => (await ask(backend.ip, 8080)) === 'backend', 'the backend serving', { timeoutMs: 15_000 * SCALE, intervalMs: 50 });

    const status = (): ProxyStatus | null => readProxyStatus(proxyStatusFile(n1.runDir));
    const put = (file: string, objects: JsonObject[]) => {
      writeFileSync(`${manifests}/.${file}.tmp`, JSON.stringify(objects));
      renameSync(`${manifests}/.${file}.tmp`, `${manifests}/${file}`);
    };
    const rules = async () => (await n1.exec(mode === 'iptables' ? ['iptables-save'] : ['nft', 'list', 'ruleset', 'ip'], true)).stdout;
    const affinity = mode === 'iptables' ? /default\/web.*--rcheck --seconds 10800/ : /affinity-.*default\/web/;

    const v1 = makeService({ name: 'web', clusterIP: CLUSTER_IP, affinityTimeoutSeconds: 10800, ports: [{ port: 80, targetPort: 8080 }] });
    const slice = makeEndpointSlice({ service: 'web', ports: [{ port: 8080 }], endpoints: [{ ip: backend.ip, nodeName: 'n1' }] });
    put('web.json', [v1, slice]);
    await waitFor(() => JSON.stringify(status()?.applied['default/web']) === JSON.stringify([`${backend.ip}:8080`]), 'default/web applied');
    t.equal(await ask(CLUSTER_IP, 80), 'backend', 'the ClusterIP answers');
    t.match(await rules(), affinity, 'with ClientIP affinity');

    // What `kubectl patch svc web -p '{"spec":{"sessionAffinity":"None"}}'` stored: the defaulted config left behind.
    const v2 = withField(withField(v1, 'spec.sessionAffinity', 'None'), 'metadata.resourceVersion', '2');
    put('web.json', [v2, slice]);
    await waitFor(() => (status()?.rejected ?? []).some((r) => r.key === 'default/web'), 'the agent to reject the new version');
    t.match(status()?.rejected, [{ kind: 'Service', key: 'default/web', field: 'spec.sessionAffinityConfig', servedFromLastGood: true, lastGoodResourceVersion: '1' }]);
    t.same(status()?.applied['default/web'], [`${backend.ip}:8080`], 'still applied');
    for (let i = 0; i < 3; i++) t.equal(await ask(CLUSTER_IP, 80), 'backend', `the ClusterIP still answers (${i + 1})`);
    t.match(await rules(), affinity, 'the rules of the last valid version, affinity included');

    // The slice gets an address that is no IP: its endpoint stays.
    const badSlice = withField(withField(slice, 'endpoints[0].addresses[0]', '10.244.1.300'), 'metadata.resourceVersion', '2');
    put('web.json', [v2, badSlice]);
    await waitFor(() => (status()?.rejected ?? []).some((r) => r.kind === 'EndpointSlice'), 'the agent to reject the slice');
    t.match(status()?.rejected, [{ kind: 'EndpointSlice', key: 'default/web-abcde', servedFromLastGood: true }, { kind: 'Service', key: 'default/web' }]);
    t.equal(await ask(CLUSTER_IP, 80), 'backend', 'the ClusterIP still answers');

    // Fixed: the valid versions are taken (no affinity any more).
    const v3 = withField(withField(v2, 'spec.sessionAffinityConfig', undefined), 'metadata.resourceVersion', '3');
    put('web.json', [v3, slice]);
    await waitFor(() => (status()?.rejected ?? []).length === 0, 'no rejection left');
    await waitFor(async () => !affinity.test(await rules()), 'the affinity rules gone');
    t.equal(await ask(CLUSTER_IP, 80), 'backend');

    // Removed: the Service goes.
    rmSync(`${manifests}/web.json`);
    await waitFor(() => status()?.applied['default/web'] === undefined, 'default/web removed');
    t.not(await ask(CLUSTER_IP, 80), 'backend', 'the ClusterIP no longer answers');
  });
}
