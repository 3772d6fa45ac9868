/**
 * IPVS smoke test on Debian's kernel, with real packets between two VMs:
 * the target the IPVS proxy mode is built against. VM1 is the director: the
 * ip_vs and dummy modules, a `kube-ipvs0` dummy device holding the VIP as a
 * /32 (kube-proxy's layout), an `ipvsadm` NAT (masquerade) virtual server per
 * protocol with two real servers on VM2, and a client in a namespace behind
 * VM1 (a veth, as a pod). VM2 routes the client's subnet back through VM1,
 * so replies are un-NATed there and the source is kept. Checks: round robin
 * reaches both real servers over TCP, each sees the client's own address,
 * UDP is answered, the connection counters count, and a ping to the VIP is
 * answered by VM1 itself (the IPVS-mode ping behaviour KUBE-IPVS-FILTER is about).
 */
import type { GuestContext, VmSuite } from '../suite.js';
import { awaitShared, publish, sh, shOk } from '../guest/node.js';

const VIP = '10.96.0.10';
const CLIENT_NET = '10.250.0';

async function director(ctx: GuestContext): Promise<string> {
  for (const m of ['ip_vs', 'ip_vs_rr', 'dummy']) await sh(['modprobe', m]);
  const ver = (await sh(['cat', '/proc/net/ip_vs'])).stdout.split('\n')[0] ?? '';
  await sh(['ip', 'link', 'add', 'kube-ipvs0', 'type', 'dummy']);
  await sh(['ip', 'addr', 'add', `${VIP}/32`, 'dev', 'kube-ipvs0']);
  await sh(['ip', 'link', 'set', 'kube-ipvs0', 'up']);
  await sh(['ip', 'netns', 'add', 'client']);
  await sh(['ip', 'link', 'add', 'vcl0', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', 'client']);
  await sh(['ip', '-batch', '-'], `addr add ${CLIENT_NET}.1/24 dev vcl0\nlink set vcl0 up\n`);
  await sh(['ip', '-n', 'client', '-batch', '-'], `link set lo up\naddr add ${CLIENT_NET}.2/24 dev eth0\nlink set eth0 up\nroute add default via ${CLIENT_NET}.1\n`);
  await sh(['sysctl', '-q', '-w', 'net.ipv4.ip_forward=1', 'net.ipv4.vs.conntrack=1']);
  const rs = ctx.ip(2);
  await sh(['ipvsadm-restore'], [
    `-A -t ${VIP}:80 -s rr`, `-a -t ${VIP}:80 -r ${rs}:8080 -m -w 1`, `-a -t ${VIP}:80 -r ${rs}:8081 -m -w 1`,
    `-A -u ${VIP}:53 -s rr`, `-a -u ${VIP}:53 -r ${rs}:8053 -m -w 1`, '',
  ].join('\n'));
  await awaitShared(ctx, 'real-servers-ready', 240_000);
  const seen = new Map<string, number>();
  for (let i = 0; i < 6; i++) {
    const r = await shOk(['ip', 'netns', 'exec', 'client', 'socat', '-t2', '-T5', '-', `TCP4:${VIP}:80,connect-timeout=5`]);
    const m = /^(rs\d+) (\S+)$/.exec(r.stdout.trim());
    if (!m) throw new Error(`TCP ${VIP}:80 #${i + 1}: ${r.stdout}${r.stderr}`);
    if (m[2] !== `${CLIENT_NET}.2`) throw new Error(`${m[1]} saw the client as ${m[2]}, not ${CLIENT_NET}.2`);
    seen.set(m[1]!, (seen.get(m[1]!) ?? 0) + 1);
  }
  if (seen.size !== 2) throw new Error(`round robin reached only ${[...seen.keys()].join(', ')}`);
  const u = await shOk(['ip', 'netns', 'exec', 'client', 'bash', '-c', `echo hi | socat -t5 -T5 - UDP4:${VIP}:53`]);
  if (!/^udp8053 10\.250\.0\.2$/.test(u.stdout.trim())) throw new Error(`UDP ${VIP}:53: ${u.stdout}${u.stderr}`);
  const stats = (await sh(['ipvsadm', '-Ln', '--stats'])).stdout;
  ctx.log(`ipvsadm -Ln --stats:\n${stats}`);
  const conns = [...stats.matchAll(/-> \S+:808[01]\s+(\d+)/g)].map((m) => Number(m[1]));
  if (conns.length !== 2 || conns.reduce((a, b) => a + b, 0) < 6) throw new Error(`the real servers' connection counters: ${conns.join(', ')}`);
  const ping = await shOk(['ip', 'netns', 'exec', 'client', 'ping', '-c', '1', '-W', '5', VIP]);
  const pingAnswered = ping.exitCode === 0;
  if (!pingAnswered) throw new Error(`ping ${VIP} from the client was not answered (the VIP sits on kube-ipvs0): ${ping.stdout}`);
  publish(ctx, 'done', 'pass');
  return `${ver.trim()}; TCP rr over 2 real servers on vm2 ${JSON.stringify(Object.fromEntries(seen))} with the client's source kept; UDP answered; conns ${conns.join('+')}; ping to the VIP answered by the director`;
}

async function realServers(ctx: GuestContext): Promise<string> {
  await sh(['ip', 'route', 'add', `${CLIENT_NET}.0/24`, 'via', ctx.ip(1)]);
  const serve = (argv: string[]) => {
    void shOk(argv);
  };
  serve(['socat', 'TCP4-LISTEN:8080,fork,reuseaddr', 'SYSTEM:echo rs8080 $SOCAT_PEERADDR']);
  serve(['socat', 'TCP4-LISTEN:8081,fork,reuseaddr', 'SYSTEM:echo rs8081 $SOCAT_PEERADDR']);
  serve(['socat', 'UDP4-RECVFROM:8053,fork', 'SYSTEM:echo udp8053 $SOCAT_PEERADDR']);
  for (const port of [8080, 8081]) {
    for (let i = 0; ; i++) {
      if ((await shOk(['ss', '-Htln', `sport = :${port}`])).stdout.includes(`:${port}`)) break;
      if (i > 200) throw new Error(`socat on ${port} did not listen`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  publish(ctx, 'real-servers-ready', 'yes');
  const done = await awaitShared(ctx, 'done', 240_000);
  if (done !== 'pass') throw new Error('vm1 reported a failure');
  return 'real servers 8080, 8081 (TCP), 8053 (UDP) served the director';
}

export const suite: VmSuite = {
  name: 'ipvs-smoke', vms: 2, extra: true,
  timeoutSec: { kvm: 180, tcg: 420 },
  run: async (ctx) => {
    if (ctx.vm !== 1) return realServers(ctx);
    try {
      return await director(ctx);
    } catch (e) {
      publish(ctx, 'done', 'fail');
      throw e;
    }
  },
};
