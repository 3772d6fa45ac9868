/**
 * `nodenet dns`: the cluster's DNS server, as CoreDNS is deployed by kubeadm and k3s: an ordinary workload
 * (the control plane's `coredns` Deployment in kube-system runs it, 2 replicas behind the `kube-dns`
 * Service) that is an in-cluster client of the API with its own ServiceAccount, list+watching Services,
 * EndpointSlices and Namespaces (dns/source.ts), answering the Kubernetes DNS specification for the cluster
 * domain (dns/records.ts) over UDP and TCP (dns/server.ts), forwarding every other name to the node's
 * upstream resolvers as CoreDNS's `forward . /etc/resolv.conf` with its `cache 30` (dns/forward.ts), and
 * serving CoreDNS's metrics (:9153 /metrics), health (:8080 /health) and readiness (:8181 /ready).
 *
 * SIGTERM: not ready at once, answering on for --lameduck (CoreDNS's `health { lameduck 5s }`: the
 * EndpointSlice drops it while it still answers), then closed; exit 0.
 */
import { isIP } from 'node:net';
import { F } from '../../../lib/log/fields.js';
import { createLogger, type Logger } from '../../../lib/log/log.js';
import { realClock } from '../../../lib/reconcile/clock.js';
import { Forwarder, localAddresses, upstreamsFromResolvConf } from '../dns/forward.js';
import { Readiness, startDnsHttp } from '../dns/http.js';
import { DnsMetrics } from '../dns/metrics.js';
import { startDnsServer } from '../dns/server.js';
import { DnsSource } from '../watch/dns-source.js';
import { loadKubeConfig } from '../watch/kube-source.js';
import { CommandError } from './errors.js';
import { FlagError, parseFlags, type FlagSpecs } from './flags.js';
import { processSignals } from './signals.js';

export const DNS_USAGE = `usage: nodenet dns [--kubeconfig FILE|in-cluster] [--listen ADDR:PORT] [--cluster-domain NAME]
                   [--upstream IP[:PORT],... | --resolv-conf FILE] [--ttl S] [--lameduck-ms MS]
                   [--metrics-port N] [--health-port N] [--ready-port N]
The cluster's DNS server (CoreDNS's job): Services, their endpoints and Pods under the cluster domain, from
list+watch of the API, as the Kubernetes DNS specification 1.1.0 says; other names forwarded upstream, cached.
  --kubeconfig      the API's credentials: a kubeconfig file, or in-cluster (default: the Pod's ServiceAccount)
  --listen          UDP and TCP (default 0.0.0.0:53)
  --cluster-domain  default cluster.local
  --upstream        resolvers for other names (default: the nameservers of --resolv-conf, /etc/resolv.conf);
                    with none, such names get SERVFAIL at once
  --ttl             of the cluster's records, seconds (default 5, CoreDNS's)
  --lameduck-ms     on SIGTERM, not ready but answering this long before closing (default 5000)
  --metrics-port    Prometheus metrics, CoreDNS's names (default 9153); --health-port /health (default 8080);
  --ready-port      /ready: 200 once the API's lists arrived (default 8181). 0 turns one off.
The HTTP ports listen on --listen's address.`;

const SPECS: FlagSpecs = {
  kubeconfig: { type: 'string' },
  listen: { type: 'string' },
  'cluster-domain': { type: 'string' },
  upstream: { type: 'string' },
  'resolv-conf': { type: 'string' },
  ttl: { type: 'string' },
  'lameduck-ms': { type: 'string' },
  'metrics-port': { type: 'string' },
  'health-port': { type: 'string' },
  'ready-port': { type: 'string' },
};

export interface HostPort { readonly host: string; readonly port: number }

export interface DnsCmdOptions {
  readonly help: boolean;
  readonly kubeconfig: string;
  readonly listen: HostPort;
  readonly domain: string;
  /** Explicit upstreams, or null: read resolvConf's nameservers. */
  readonly upstreams: readonly HostPort[] | null;
  readonly resolvConf: string;
  readonly ttl: number;
  readonly lameduckMs: number;
  readonly metricsPort: number;
  readonly healthPort: number;
  readonly readyPort: number;
}

const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/;

function whole(flag: string, v: string | undefined, dflt: number, min: number, max: number): number {
  if (v === undefined) return dflt;
  if (!/^\d{1,9}$/.test(v) || Number(v) < min || Number(v) > max) throw new FlagError(`--${flag} ${JSON.stringify(v)}: expected a whole number from ${min} to ${max}`);
  return Number(v);
}

/** `IP:PORT`, `[IPv6]:PORT`, or a bare IP with defaultPort. */
export function parseHostPort(flag: string, v: string, defaultPort: number | null): HostPort {
  const m = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(v) ?? (isIP(v) ? [v, v, undefined] : /^([^:]+):(\d{1,5})$/.exec(v));
  const host = m?.[1] ?? '';
  const port = m?.[2] !== undefined ? Number(m[2]) : defaultPort;
  if (!m || !isIP(host) || port === null || port > 65535) throw new FlagError(`--${flag} ${JSON.stringify(v)}: expected IP:PORT${defaultPort !== null ? ' or IP' : ''}`);
  return { host, port };
}

/** The command's options from its arguments (pure). */
export function dnsOptionsFromArgs(argv: readonly string[]): DnsCmdOptions {
  const p = parseFlags(argv, SPECS);
  if (p.positional.length || p.rest.length) throw new FlagError(`unexpected argument ${JSON.stringify([...p.positional, ...p.rest][0])}`);
  const domain = (p.flags.get('cluster-domain') ?? 'cluster.local').toLowerCase().replace(/\.$/, '');
  if (!DOMAIN.test(domain)) throw new FlagError(`--cluster-domain ${JSON.stringify(p.flags.get('cluster-domain'))}: expected a DNS name such as cluster.local`);
  const up = p.flags.get('upstream');
  if (up !== undefined && p.flags.has('resolv-conf')) throw new FlagError('--upstream and --resolv-conf: give one');
  const upstreams = up === undefined ? null : up.split(',').map((s) => s.trim()).filter(Boolean).map((s) => parseHostPort('upstream', s, 53));
  const kubeconfig = p.flags.get('kubeconfig') ?? 'in-cluster';
  if (kubeconfig === '') throw new FlagError('--kubeconfig: a file, or in-cluster');
  return {
    help: p.help,
    kubeconfig,
    listen: parseHostPort('listen', p.flags.get('listen') ?? '0.0.0.0:53', 53),
    domain,
    upstreams,
    resolvConf: p.flags.get('resolv-conf') ?? '/etc/resolv.conf',
    ttl: whole('ttl', p.flags.get('ttl'), 5, 0, 3600),
    lameduckMs: whole('lameduck-ms', p.flags.get('lameduck-ms'), 5000, 0, 600_000),
    metricsPort: whole('metrics-port', p.flags.get('metrics-port'), 9153, 0, 65535),
    healthPort: whole('health-port', p.flags.get('health-port'), 8080, 0, 65535),
    readyPort: whole('ready-port', p.flags.get('ready-port'), 8181, 0, 65535),
  };
}

export interface DnsCmdDeps {
  readonly stdout: (s: string) => void;
  /** Where the server logs; default pino JSON on stderr. */
  readonly log?: Logger;
  /** Calls `fn` on SIGTERM/SIGINT; returns the unsubscribe. Default: the process's signals. */
  readonly onSignal?: (fn: () => void) => () => void;
}


export async function dnsCommand(argv: readonly string[], deps: DnsCmdDeps): Promise<number> {
  const o = dnsOptionsFromArgs(argv);
  if (o.help) {
    deps.stdout(`${DNS_USAGE}\n`);
    return 0;
  }
  const log = deps.log ?? createLogger({ name: 'nodenet-dns', level: 'info', destination: 2 });
  const kubeconfig = loadKubeConfig(o.kubeconfig);
  const upstreams = o.upstreams ?? (await upstreamsFromResolvConf(o.resolvConf, o.listen, localAddresses()));
  if (upstreams.length === 0) log.warn({ resolvConf: o.upstreams ? null : o.resolvConf }, 'no upstream resolver: names outside the cluster domain get SERVFAIL');
  const metrics = new DnsMetrics();
  const readiness = new Readiness(['kubernetes']);
  const source = new DnsSource({
    kubeconfig, log, clock: realClock, domain: o.domain, ttl: o.ttl,
    onIndex: () => readiness.set('kubernetes', true),
  });
  const forwarder = upstreams.length ? new Forwarder({ upstreams, log: log.child({ [F.subsys]: 'dns/forward' }), clock: realClock, metrics }) : null;
  let server: Awaited<ReturnType<typeof startDnsServer>> | undefined;
  let web: Awaited<ReturnType<typeof startDnsHttp>> | undefined;
  try {
    server = await startDnsServer({ listen: o.listen, records: () => source.index(), forwarder, log, clock: realClock, metrics, domain: o.domain, ttl: o.ttl });
    const off = (p: number) => (p === 0 ? null : p);
    web = await startDnsHttp({ host: o.listen.host, metricsPort: off(o.metricsPort), healthPort: off(o.healthPort), readyPort: off(o.readyPort), metrics, readiness, log });
  } catch (e) {
    await server?.close();
    throw new CommandError(`cannot listen: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  await source.start();
  const at = (p: number | null) => (p === null ? 'off' : `${o.listen.host}:${p}`);
  deps.stdout(`serving DNS for ${o.domain} on udp=${o.listen.host}:${server.udpPort} tcp=${o.listen.host}:${server.tcpPort}; metrics=${at(web.metricsPort)} health=${at(web.healthPort)} ready=${at(web.readyPort)}; upstream=${upstreams.map((u) => `${u.host}:${u.port}`).join(',') || 'none'}\n`);
  await new Promise<void>((resolve) => {
    const off = (deps.onSignal ?? processSignals)(() => {
      off();
      // CoreDNS's lameduck: /ready turns 503 so the kube-dns EndpointSlice drops this replica, while it answers on.
      readiness.shutdown();
      log.info({ lameduckMs: o.lameduckMs }, 'terminating: not ready, answering during the lameduck');
      setTimeout(resolve, o.lameduckMs);
    });
  });
  source.stop();
  await web.close();
  await server.close();
  return 0;
}
