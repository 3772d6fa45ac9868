/**
 * `nodenet demo` (what `npm start` runs): one virtual node, built from network
 * namespaces, with its own agent; two pods wired through the real CNI shim;
 * traffic between them over cbr0; an app process killed and restarted while
 * its pod keeps its IP. Then Services: the agent's proxy (iptables mode by
 * default, --proxy-mode nftables) follows a manifest directory; a ClusterIP
 * Service over two web pods takes TCP connections and spreads them, a ping
 * to it is never answered, and `nodenet trace` shows the packet's way
 * through the live rules. Everything is removed on exit, also on Ctrl-C.
 * Later issues grow this into the multi-node demo.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { makeEndpointSlice, makeService } from '../testing/addresses.js';
import { traceCommand } from './trace-cmd.js';
import { proxyStatusFile, readProxyStatus } from '../proxy-host.js';
import { ExecaRunner } from '../exec/runner.js';
import { Lab, uniqueTag } from '../lab/lab.js';
import { parseFlags, only, FlagError } from './flags.js';
import { localPods } from './pod-cmd.js';

const SERVER = `require('http').createServer((q,r)=>r.end('hello from '+require('os').hostname()+' (pid '+process.pid+')\\n')).listen(8080)`;
const CLIENT = (url: string) => `fetch(${JSON.stringify(url)}).then(r=>r.text()).then(t=>process.stdout.write(t),e=>{console.error(String(e.cause??e));process.exit(1)})`;

const say = (s: string) => process.stdout.write(`${s}\n`);

async function retry<T>(fn: () => Promise<T>, tries = 40): Promise<T> {
  for (let i = 1; ; i++) {
    try { return await fn(); } catch (e) { if (i >= tries) throw e; await sleep(100); }
  }
}

export async function demoCommand(argv: readonly string[]): Promise<number> {
  const p = parseFlags(argv, ['keep']);
  only(p, ['keep', 'proxy-mode']);
  const mode = p.flags.get('proxy-mode') ?? 'iptables';
  if (mode !== 'iptables' && mode !== 'nftables') throw new FlagError(`--proxy-mode must be iptables or nftables, got ${JSON.stringify(mode)}`);
  const runner = new ExecaRunner();
  const lab = await Lab.create(uniqueTag('demo'));
  let cleaned = false;
  const cleanup = async () => {
    if (cleaned) return;
    cleaned = true;
    say('\ncleaning up: pods, agent, namespaces');
    await lab.destroy();
  };
  const onSignal = () => { void cleanup().then(() => process.exit(130)); };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    say('nodenet demo: pods and a Service on one virtual node\n');
    const manifests = `${lab.runRoot}/manifests`;
    mkdirSync(manifests, { recursive: true });
    const node = await lab.addNode('node1', {
      podCIDR: '10.244.1.0/24',
      clusterCIDR: '10.244.0.0/16',
      config: { proxyMode: mode, manifestsDir: manifests, proxyMinSyncMs: 100, logLevel: 'info' },
    });
    await node.startAgent();
    say(`node   ${node.name}: network namespace ${node.ns}, pod CIDR 10.244.1.0/24`);
    say(`agent  pid ${node.agent?.pid}, CNI socket ${node.socket}`);
    const pods = localPods(runner, node.runDir);
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
    const objects = [
      makeService({ name: 'web', clusterIP: '10.96.0.10', ports: [{ port: 80, targetPort: 8080 }] }),
      makeEndpointSlice({ service: 'web', ports: [{ port: 8080 }], endpoints: [again.ip, web2.ip].map((ip) => ({ ip, nodeName: node.name })) }),
    ];
    writeFileSync(`${manifests}/.web.json`, JSON.stringify(objects, null, 2));
    renameSync(`${manifests}/.web.json`, `${manifests}/web.json`);
    say(`wrote ${manifests}/web.json (a Service and its EndpointSlice); the agent follows that directory`);
    await retry(async () => {
      const st = readProxyStatus(proxyStatusFile(node.runDir));
      if ((st?.applied['default/web']?.length ?? 0) !== 2) throw new Error('not applied yet');
    }, 100);
    const viaService = async () => (await pods.exec('client', [process.execPath, '-e', CLIENT('http://10.96.0.10/')])).stdout.trim();
    for (let i = 0; i < 4; i++) say(`client → 10.96.0.10:80  ${await retry(viaService)}`);
    const t0 = performance.now();
    const ping2 = await pods.exec('client', ['ping', '-n', '-c', '1', '-W', '2', '10.96.0.10'], { allowFailure: true });
    const ms = Math.round(performance.now() - t0);
    const icmpErr = /Destination \w+ Unreachable/.exec(ping2.stdout)?.[0];
    say(
      `client → ping 10.96.0.10: ${ping2.exitCode === 0 ? 'reply (unexpected!)' : icmpErr ? `no reply: ${icmpErr} after ${ms} ms (nftables rejects what no Service port claims)` : `no reply after ${ms} ms (the rules DNAT TCP/UDP/SCTP only; nobody owns the ClusterIP)`}`,
    );
    say(`\nnodenet trace --netns ${node.ns} ${client.ip} tcp 10.96.0.10 80`);
    await traceCommand(['--netns', node.ns, client.ip, 'tcp', '10.96.0.10', '80'], { runner, stdout: (s) => process.stdout.write(`${s.trimEnd().replace(/^/gm, '  ')}\n`) });

    if (p.flags.has('keep')) {
      say(`\nkept running. Try:\n  ip netns exec ${node.ns} ip -br link\n  ip netns exec ${node.ns} ${mode === 'iptables' ? 'iptables-save -t nat' : 'nft list table ip kube-proxy'}\n  node bin/nodenet.js trace --netns ${node.ns} ${client.ip} icmp 10.96.0.10\n  node bin/nodenet.js proxy status --run-dir ${node.runDir}\n  nodenet pod ls --run-dir ${node.runDir}\n  nodenet pod exec client --run-dir ${node.runDir} -- ip addr\nCtrl-C to clean up.`);
      await new Promise(() => undefined);
    }
    return 0;
  } finally {
    await cleanup();
  }
}
