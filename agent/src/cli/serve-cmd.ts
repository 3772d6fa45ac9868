/**
 * `nodenet serve`: the built-in test server for demos and tests (agnhost's
 * netexec and serve-hostname). See pods/serve.ts for what it answers.
 * It prints where it listens, logs one line per request to stdout, and on
 * SIGTERM/SIGINT stops gracefully (after --term-delay-ms) and exits 0;
 * /exit?code=N exits N.
 */
import { hostname } from 'node:os';
import { createLogger, type Logger } from '../../../lib/log/log.js';
import { startServe, type ServeOptions } from '../pods/serve.js';
import { inClusterNamespace, startAppLeader, type AppLeader } from '../pods/serve-leader.js';
import { CommandError } from './errors.js';
import { FlagError, parseFlags, type FlagSpecs } from './flags.js';
import { processSignals } from './signals.js';

export const SERVE_USAGE = `usage: nodenet serve [--http PORT,...] [--tcp PORT,...] [--udp PORT,...] [--name NAME] [--bind ADDR] [--term-delay-ms MS]
                     [--leader-elect LEASE [--leader-elect-namespace NS] [--kubeconfig F]]
A small test server (agnhost's netexec/serve-hostname). Defaults: --http 8080 --tcp 9000 --udp 9001 (an empty list
turns one off; 0 picks a free port), --bind 0.0.0.0, --name $POD_NAME or the hostname.
  TCP   on connect writes "<name> <clientip>:<clientport>", then echoes what it receives until the client closes
  UDP   answers each datagram with "<name> <clientip>:<clientport>"
  HTTP  / and /hostname: the name; /clientip: ip:port; /echo?msg=X: X; /healthz: ok;
        /readyz: 200 or 503 (/readyz?set=fail|ok toggles it); /exit?code=N: exits N; /shutdown: a graceful stop;
        /leader: with --leader-elect, "leader <name>" or "follower <leader>"
  --leader-elect LEASE  run leader election on the Lease LEASE (client-go's 15/10/2 s) as an in-cluster client of the
        API (KUBERNETES_SERVICE_HOST and the Pod's projected ServiceAccount token), or with --kubeconfig; the namespace
        is --leader-elect-namespace, else $POD_NAMESPACE or the Pod's own. The Lease is released on SIGTERM.
One log line per request on stdout. SIGTERM: not ready, serve --term-delay-ms more (default 0), close, exit 0.`;

const SPECS: FlagSpecs = {
  http: { type: 'string' },
  tcp: { type: 'string' },
  udp: { type: 'string' },
  name: { type: 'string' },
  bind: { type: 'string' },
  'term-delay-ms': { type: 'string' },
  'leader-elect': { type: 'string' },
  'leader-elect-namespace': { type: 'string' },
  kubeconfig: { type: 'string' },
};

export const SERVE_DEFAULTS = { http: [8080], tcp: [9000], udp: [9001] } as const;

function ports(flag: string, v: string | undefined, dflt: readonly number[]): number[] {
  if (v === undefined) return [...dflt];
  if (v.trim() === '') return [];
  return v.split(',').map((w) => {
    const s = w.trim();
    if (!/^\d{1,5}$/.test(s) || Number(s) > 65535) throw new FlagError(`--${flag} ${JSON.stringify(v)}: expected ports 0..65535, comma-separated`);
    return Number(s);
  });
}

/** The server's options from the command line (pure): `env` for POD_NAME, `host` the hostname. */
export function serveOptionsFromArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>>, host: string): Omit<ServeOptions, 'log' | 'leader'> & { readonly help: boolean; readonly leaderElect?: { readonly lease: string; readonly namespace?: string; readonly kubeconfig?: string } } {
  const p = parseFlags(argv, SPECS);
  if (p.positional.length || p.rest.length) throw new FlagError(`unexpected argument ${JSON.stringify([...p.positional, ...p.rest][0])}`);
  const bind = p.flags.get('bind') ?? '0.0.0.0';
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(bind) || bind.split('.').some((o) => Number(o) > 255)) throw new FlagError(`--bind ${JSON.stringify(bind)}: expected an IPv4 address`);
  const delay = p.flags.get('term-delay-ms') ?? '0';
  if (!/^\d{1,7}$/.test(delay)) throw new FlagError(`--term-delay-ms ${JSON.stringify(delay)}: expected milliseconds (a whole number)`);
  const name = p.flags.get('name') || env['POD_NAME'] || host;
  if (/\s/.test(name) || !name) throw new FlagError(`--name ${JSON.stringify(name)}: a name without spaces`);
  const o = {
    name,
    bind,
    http: ports('http', p.flags.get('http'), SERVE_DEFAULTS.http),
    tcp: ports('tcp', p.flags.get('tcp'), SERVE_DEFAULTS.tcp),
    udp: ports('udp', p.flags.get('udp'), SERVE_DEFAULTS.udp),
    termDelayMs: Number(delay),
    help: p.help,
  };
  const lease = p.flags.get('leader-elect');
  if (lease !== undefined && !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(lease)) throw new FlagError(`--leader-elect ${JSON.stringify(lease)}: a Lease name (a lowercase RFC 1123 subdomain)`);
  if (lease === undefined && (p.flags.has('leader-elect-namespace') || p.flags.has('kubeconfig'))) throw new FlagError('--leader-elect-namespace and --kubeconfig go with --leader-elect');
  const ns = p.flags.get('leader-elect-namespace');
  const kc = p.flags.get('kubeconfig');
  const leaderElect = lease !== undefined ? { lease, ...(ns ? { namespace: ns } : {}), ...(kc ? { kubeconfig: kc } : {}) } : undefined;
  if (!p.help && !o.http.length && !o.tcp.length && !o.udp.length) throw new FlagError('nothing to serve: every port list is empty');
  if (leaderElect && !o.http.length) throw new FlagError('--leader-elect answers on /leader: it needs an --http port');
  return leaderElect ? { ...o, leaderElect } : o;
}

export interface ServeCmdDeps {
  readonly stdout: (s: string) => void;
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly hostname?: () => string;
  /** Where request lines go; default a logger on stdout. */
  readonly log?: Logger;
  /** Calls `fn` on SIGTERM/SIGINT; returns the unsubscribe. Default: the process's signals. */
  readonly onSignal?: (fn: () => void) => () => void;
}


export async function serveCommand(argv: readonly string[], deps: ServeCmdDeps): Promise<number> {
  const o = serveOptionsFromArgs(argv, deps.env ?? process.env, (deps.hostname ?? hostname)());
  if (o.help) {
    deps.stdout(`${SERVE_USAGE}\n`);
    return 0;
  }
  const log = deps.log ?? createLogger({ name: 'nodenet-serve', level: 'info', destination: 1 });
  const env = deps.env ?? process.env;
  let leader: AppLeader | undefined;
  if (o.leaderElect) {
    try {
      leader = startAppLeader({ lease: o.leaderElect.lease, namespace: o.leaderElect.namespace ?? inClusterNamespace(env), identity: o.name, kubeconfig: o.leaderElect.kubeconfig, log });
    } catch (e) {
      throw new CommandError(`--leader-elect: no API credentials (${(e as Error).message}): run it in a Pod with a ServiceAccount token, or give --kubeconfig`, { cause: e });
    }
  }
  let server;
  try {
    server = await startServe({ ...o, log, ...(leader ? { leader } : {}) });
  } catch (e) {
    await leader?.stop();
    throw new CommandError(`cannot listen: ${(e as Error).message}`, { cause: e });
  }
  const list = (proto: string, ps: readonly number[]) => (ps.length ? ` ${proto}=${ps.map((p) => `${o.bind}:${p}`).join(',')}` : '');
  deps.stdout(`serving as ${o.name}:${list('http', server.ports.http)}${list('tcp', server.ports.tcp)}${list('udp', server.ports.udp)}\n`);
  const off = (deps.onSignal ?? processSignals)(() => server.terminate());
  try {
    const code = (await server.done).code;
    await leader?.stop();
    return code;
  } finally {
    off();
  }
}
