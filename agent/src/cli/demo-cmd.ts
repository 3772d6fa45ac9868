/**
 * `nodenet demo` (what `npm start` runs): one virtual node, built from network
 * namespaces, with its own agent; two pods wired through the real CNI shim;
 * traffic between them over cbr0; an app process killed and restarted while
 * its pod keeps its IP. Then Services: the agent's proxy (iptables mode by
 * default, --proxy-mode nftables) follows a manifest directory; a ClusterIP
 * Service over two web pods takes TCP connections and spreads them over
 * both, a ping to it is never answered, and `nodenet trace` shows the
 * packet's way through the live rules. Everything is removed on exit, also
 * on Ctrl-C. Later issues grow this into the multi-node demo.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Runner } from '../exec/runner.js';
import type { Lab } from '../lab/lab.js';
import { proxyStatusFile, readProxyStatus } from '../node/proxy-status.js';
import { writeFileDurable } from '../state/durable.js';
import { FlagError, parseFlags } from './flags.js';
import { localPods } from './pod-cmd.js';
import { traceCommand, type TraceDeps } from './trace-cmd.js';

export const DEMO_USAGE = `usage: nodenet demo [--keep] [--proxy-mode iptables|nftables]
A virtual node with pods on cbr0 (traffic, an app restart that keeps its IP) and a ClusterIP Service that
takes TCP connections but never answers a ping. --keep leaves it running until Ctrl-C.`;

export interface DemoDeps {
  readonly runner: Runner;
  readonly createLab: (prefix: string) => Promise<Lab>;
  readonly localAddresses: TraceDeps['localAddresses'];
  readonly stdout: (s: string) => void;
}

const SERVER = `require('http').createServer((q,r)=>r.end('hello from '+require('os').hostname()+' (pid '+process.pid+')\\n')).listen(8080)`;
const CLIENT = (url: string) => `fetch(${JSON.stringify(url)}).then(r=>r.text()).then(t=>process.stdout.write(t),e=>{console.error(String(e.cause??e));process.exit(1)})`;

/** The Service and its EndpointSlice, as a user would write them for the agent's manifest directory. */
export function webManifest(clusterIP: string, endpoints: readonly { ip: string; node: string }[]): string {
  return `apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  type: ClusterIP
  clusterIP: ${clusterIP}
  selector: {app: web}
  ports: [{name: http, protocol: TCP, port: 80, targetPort: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-1
  namespace: default
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
ports: [{name: http, protocol: TCP, port: 8080}]
endpoints:
${endpoints.map((e) => `- addresses: [${e.ip}]\n  conditions: {ready: true}\n  nodeName: ${e.node}`).join('\n')}
`;
}

async function retry<T>(fn: () => Promise<T>, tries = 40, ms = 100): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (i >= tries) throw e;
      await sleep(ms);
    }
  }
}

export async function demoCommand(argv: readonly string[], deps: DemoDeps): Promise<number> {
  const p = parseFlags(argv, { keep: { type: 'boolean' }, 'proxy-mode': { type: 'string' } });
  const say = (s: string) => deps.stdout(`${s}\n`);
  if (p.help) {
    say(DEMO_USAGE);
    return 0;
  }
  if (p.positional.length || p.rest.length) throw new FlagError(`unexpected argument ${JSON.stringify([...p.positional, ...p.rest][0])}`);
  const mode = p.flags.get('proxy-mode') ?? 'iptables';
  if (mode !== 'iptables' && mode !== 'nftables') throw new FlagError(`--proxy-mode must be iptables or nftables, got ${JSON.stringify(mode)}`);
  const lab = await deps.createLab('demo');
  let cleaned = false;
  const cleanup = async () => {
    if (cleaned) return;
    cleaned = true;
    say('\ncleaning up: pods, agent, namespaces');
    await lab.destroy();
  };
  const onSignal = () => {
    void cleanup().then(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    say('nodenet demo: pods and a Service on one virtual node\n');
    const manifests = `${lab.runRoot}/manifests`;
    const node = await lab.addNode('node1', {
      podCIDR: '10.244.1.0/24',
      clusterCIDR: '10.244.0.0/16',
      config: { proxyMode: mode, manifestsDir: manifests, proxyMinSyncMs: 100, logLevel: 'info' },
    });
    await node.startAgent();
    say(`node   ${node.name}: network namespace ${node.ns}, pod CIDR 10.244.1.0/24`);
    say(`agent  pid ${node.agent?.pid}, CNI socket ${node.socket}`);
    const pods = localPods(deps.runner, node.runDir);
    const conf = node.cniConfig();
    const web = await pods.create('web', conf);
    const app = pods.startApp('web', [process.execPath, '-e', SERVER]);
    const client = await pods.create('client', conf);
    say(`pod    web     ${web.ip.padEnd(12)} pause pid ${web.sandbox.pid}, app pid ${app.pid} (an HTTP server on :8080)`);
    say(`pod    client  ${client.ip.padEnd(12)} pause pid ${client.sandbox.pid}`);
    say(`        (each pod: a pause process holding its netns; eth0 in the pod, its veth peer on cbr0 in ${node.ns})\n`);

    const get = async () => (await pods.exec('client', [process.execPath, '-e', CLIENT(`http://${web.ip}:8080/`)])).stdout.trim();
    say(`client → web   http://${web.ip}:8080/  ${await retry(get)}`);
    const ping = await pods.exec('client', ['ping', '-c', '1', '-W', '1', '10.244.1.1'], { allowFailure: true });
    say(`client → cbr0  ping 10.244.1.1 (the gateway): ${ping.exitCode === 0 ? 'reply' : 'no reply'}`);

    say(`\nkilling web's app (pid ${app.pid}); pause still holds the pod's network namespace`);
    pods.stopApp('web', app.pid, 'SIGKILL');
    const down = await pods.exec('client', [process.execPath, '-e', CLIENT(`http://${web.ip}:8080/`)], { allowFailure: true });
    say(`client → web   while the app is down: ${down.exitCode === 0 ? down.stdout.trim() : (down.stderr.trim().split('\n').pop() ?? 'failed')}`);
    const app2 = pods.startApp('web', [process.execPath, '-e', SERVER]);
    const again = pods.get('web');
    say(`restarted web's app: pid ${app2.pid}, pod IP still ${again.ip}`);
    say(`client → web   http://${again.ip}:8080/  ${await retry(get)}`);

    // ---- Services ----
    say(`\nServices (${mode} mode): a second web pod, and a ClusterIP Service 10.96.0.10:80 → both pods' :8080`);
    const web2 = await pods.create('web2', conf);
    pods.startApp('web2', [process.execPath, '-e', SERVER]);
    say(`pod    web2    ${web2.ip.padEnd(12)} pause pid ${web2.sandbox.pid}`);
    const manifest = webManifest('10.96.0.10', [again.ip, web2.ip].map((ip) => ({ ip, node: node.name })));
    writeFileDurable(`${manifests}/web.yaml`, manifest, { mode: 0o644 });
    say(`wrote ${manifests}/web.yaml (a Service and its EndpointSlice); the agent follows that directory`);
    await retry(async () => {
      if ((readProxyStatus(proxyStatusFile(node.runDir))?.applied['default/web:http']?.length ?? 0) !== 2) throw new Error('not applied yet');
    }, 100);
    const viaService = async () => (await pods.exec('client', [process.execPath, '-e', CLIENT('http://10.96.0.10/')])).stdout.trim();
    // New connections until both backends answered (each picks an endpoint at random), at most 30.
    const seen = new Map<string, number>();
    for (let i = 0; i < 30 && (seen.size < 2 || i < 4); i++) {
      const answer = await retry(viaService);
      say(`client → 10.96.0.10:80  ${answer}`);
      const who = /hello from (\S+)/.exec(answer)?.[1] ?? answer;
      seen.set(who, (seen.get(who) ?? 0) + 1);
    }
    say(`        ${[...seen].map(([w, n]) => `${w} ×${n}`).join(', ')}: the kernel spread new connections over both endpoints`);
    const t0 = performance.now();
    const ping2 = await pods.exec('client', ['ping', '-n', '-c', '1', '-W', '2', '10.96.0.10'], { allowFailure: true });
    const ms = Math.round(performance.now() - t0);
    const icmpErr = /Destination \w+ Unreachable/.exec(ping2.stdout)?.[0];
    say(
      `client → ping 10.96.0.10: ${ping2.exitCode === 0 ? 'reply (unexpected!)' : icmpErr ? `no reply: ${icmpErr} after ${ms} ms (nftables rejects what no Service port claims)` : `no reply after ${ms} ms (the rules DNAT TCP/UDP/SCTP only; nobody owns the ClusterIP)`}`,
    );
    say(`\nnodenet trace --netns ${node.ns} ${client.ip} tcp 10.96.0.10 80`);
    await traceCommand(['--netns', node.ns, client.ip, 'tcp', '10.96.0.10', '80'], {
      runner: deps.runner,
      localAddresses: deps.localAddresses,
      stdout: (s) => deps.stdout(`${s.trimEnd().replace(/^/gm, '  ')}\n`),
    });

    if (p.flags.has('keep')) {
      say(`\nkept running. Try:\n  ip netns exec ${node.ns} ip -br link\n  ip netns exec ${node.ns} ${mode === 'iptables' ? 'iptables-save -t nat' : 'nft list table ip kube-proxy'}\n  node bin/nodenet.js trace --netns ${node.ns} ${client.ip} icmp 10.96.0.10\n  node bin/nodenet.js proxy status --run-dir ${node.runDir}\n  node bin/nodenet.js pod ls --run-dir ${node.runDir}\n  node bin/nodenet.js pod exec client --run-dir ${node.runDir} -- ip addr\nCtrl-C to clean up.`);
      await new Promise(() => undefined);
    }
    return 0;
  } finally {
    await cleanup();
  }
}
